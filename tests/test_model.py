"""Instance validation: each class of bad input is rejected with its JSON path and reason."""

from __future__ import annotations

import json

import pytest

from planner.model import (DEFAULT_CPU, DEFAULT_MAX_HEAP_MB, DEFAULT_OFFHEAP_MB, DEFAULT_ONHEAP_MB, InstanceError,
                           instance_schema, load_instance, parse_instance)
from tests.helpers import tiny


def reject(data) -> InstanceError:
    with pytest.raises(InstanceError) as ei:
        parse_instance(data)
    return ei.value


def test_valid_instance_gets_storm_defaults():
    d = tiny()
    del d["topologies"][0]["components"][1]["cpu"]
    del d["topologies"][0]["components"][1]["memory_onheap_mb"]
    inst = parse_instance(d)
    c = inst.topologies[0].component("split")
    assert (c.cpu, c.memory_onheap_mb, c.memory_offheap_mb) == (DEFAULT_CPU, DEFAULT_ONHEAP_MB, DEFAULT_OFFHEAP_MB)
    assert inst.topologies[0].max_heap_mb == DEFAULT_MAX_HEAP_MB
    assert inst.cluster.nodes[0].slots == [6700, 6701]  # "slots": 2 means two ports from 6700
    assert inst.size == {"topologies": 1, "components": 3, "executors": 5, "racks": 2, "nodes": 4, "slots": 8}


@pytest.mark.parametrize("mutate, path, words", [
    (lambda d: d["topologies"][0]["streams"].append({"source": "spout", "target": "nope"}),
     "topologies[0].streams[2].target", "unknown component"),
    (lambda d: d["topologies"][0]["streams"].append({"source": "count", "target": "split"}),
     "topologies[0].streams", "cycle"),
    (lambda d: d["topologies"][0]["streams"].append({"source": "count", "target": "count"}),
     "topologies[0].streams[2]", "cycle"),
    (lambda d: d["cluster"]["racks"][0]["nodes"][0].update(cpu=-5),
     "cluster.racks[0].nodes[0].cpu", "greater than or equal to 0"),
    (lambda d: d["cluster"]["racks"][1]["nodes"][0].update(id="n1"),
     "cluster.racks[1].nodes[0].id", "duplicate node id"),
    (lambda d: d["topologies"][0]["components"][2].update(id="split"),
     "topologies[0].components[2].id", "duplicate component id"),
    (lambda d: d["topologies"][0]["components"][1].update(parallelism=0),
     "topologies[0].components[1].parallelism", "greater than or equal to 1"),
    (lambda d: d["topologies"][0]["components"][1].update(colour="red"),
     "topologies[0].components[1].colour", "unknown field"),
    (lambda d: d["topologies"][0]["streams"][0].update(grouping="sideways"),
     "topologies[0].streams[0].grouping", "Input should be"),
    (lambda d: d["topologies"][0]["streams"].append({"source": "split", "target": "spout"}),
     "topologies[0].streams[2].target", "spout"),
    (lambda d: d["topologies"][0]["components"][1].update(site="mars"),
     "topologies[0].components[1].site", "no node has site"),
    (lambda d: d["topologies"][0]["components"][1].update(nodes=["n9"]),
     "topologies[0].components[1].nodes[0]", "unknown node"),
    (lambda d: d["topologies"][0]["components"][1].update(incompatible=["ghost"]),
     "topologies[0].components[1].incompatible[0]", "unknown component"),
    (lambda d: d["topologies"][0].update(traffic=[{"source": "split", "source_index": 5, "target": "count", "target_index": 0, "rate": 1}]),
     "topologies[0].traffic[0].source_index", "out of range"),
    (lambda d: d.update(cluster={"racks": []}), "cluster.racks", "at least 1"),
    (lambda d: d["topologies"][0].update(components=[]), "topologies[0].components", "at least 1"),
    (lambda d: d["cluster"]["racks"][0]["nodes"][0].update(slots=[6700, 6700]),
     "cluster.racks[0].nodes[0].slots", "duplicate ports"),
    (lambda d: d["topologies"][0]["components"][0].update(resources={"gpu": -1}),
     "topologies[0].components[0].resources", "gpu"),
    (lambda d: d.update(perf_models=[{"name": "m", "points": [{"threads": 1, "cpu": 1, "memory": 1}, {"threads": 1, "cpu": 2, "memory": 2}]}]),
     "perf_models[0].points", "duplicate thread counts"),
    (lambda d: d["topologies"][0].update(owner="nobody") or d.update(users=[{"id": "alice"}]),
     "topologies[0].owner", "unknown user"),
    # sizes past any Storm cluster: refused before anything is expanded (a slot count of 10^15
    # was a list of 10^15 ports, and took the machine's memory; found by fuzzing, session 26)
    (lambda d: d["cluster"]["racks"][0]["nodes"][0].update(slots=10 ** 15),
     "cluster.racks[0].nodes[0].slots", "more than the ports 6700-65535"),
    (lambda d: d["topologies"][0]["components"][0].update(parallelism=10 ** 15),
     "topologies[0].components[0].parallelism", "less than or equal to 1000000"),
    (lambda d: [c.update(parallelism=400_000) for c in d["topologies"][0]["components"]],
     "topologies", "1,200,000 executors; the planner takes at most 1,000,000"),
    (lambda d: d["cluster"]["racks"].extend({"id": f"x{i}", "nodes": [{"id": f"x{i}", "slots": 58836}]} for i in range(17)),
     "cluster.racks", "1,000,220 worker slots; the planner takes at most 1,000,000"),
])
def test_bad_input_names_path_and_reason(mutate, path, words):
    d = tiny()
    mutate(d)
    e = reject(d)
    paths = [p for p, _ in e.problems]
    assert path in paths, e.problems
    reason = dict(e.problems)[path]
    assert words.lower() in reason.lower(), e.problems


def test_not_an_object_and_bad_file(tmp_path):
    assert reject([1, 2]).path == "$"
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(InstanceError, match="not valid JSON"):
        load_instance(p)
    with pytest.raises(InstanceError, match="cannot read"):
        load_instance(tmp_path / "missing.json")


def test_error_dict_shape():
    d = tiny()
    d["cluster"]["racks"][0]["nodes"][0]["cpu"] = -1
    err = reject(d).to_dict()
    assert err["error"] == "invalid_input" and err["path"] == "cluster.racks[0].nodes[0].cpu"
    assert err["problems"][0]["reason"]


def test_schema_file_is_current():
    from pathlib import Path

    on_disk = json.loads((Path(__file__).resolve().parent.parent / "docs" / "instance.schema.json").read_text())
    assert on_disk == json.loads(json.dumps(instance_schema())), "run: planner schema --out docs/instance.schema.json"


def test_deeply_nested_file_is_bad_input(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(InstanceError, match="too deeply"):
        load_instance(p)
