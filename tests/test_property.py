"""Property-based tests: random valid instances never crash a method; random invalid ones
are rejected cleanly with a path."""

from __future__ import annotations

import copy
import json
import random

from hypothesis import HealthCheck, given, settings, strategies as st

from planner import solve
from planner.model import InstanceError, parse_instance
from planner.plan import Status
from planner.registry import list_methods
from tests.helpers import random_instance

FAST_PROBLEMS = ["network", "traffic", "feasibility", "admission"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), problem=st.sampled_from(FAST_PROBLEMS))
def test_no_method_crashes_on_valid_instances(seed, problem):
    inst = parse_instance(random_instance(random.Random(seed), max_exec=6, max_nodes=3))
    for m in list_methods():
        if problem not in m.problems:
            continue
        r = solve(inst, problem, m.name, time_limit=5)
        assert r.status != Status.ERROR, f"{m.name}: {r.message}"
        if r.ok:
            assert r.metrics["feasible"]
        else:
            assert r.message


def _mutations():
    def drop_key(d, rng):
        t = d["topologies"][0]
        t["components"][rng.randrange(len(t["components"]))].pop("id")

    def negative(d, rng):
        n = d["cluster"]["racks"][0]["nodes"][0]
        n[rng.choice(["cpu", "memory_mb"])] = -rng.randint(1, 100)

    def wrong_type(d, rng):
        d["topologies"][0]["components"][0]["parallelism"] = rng.choice(["many", 1.5, None, [], {}])

    def dangling(d, rng):
        d["topologies"][0]["streams"].append({"source": "c0", "target": f"zz{rng.randint(0, 9)}"})

    def dup_node(d, rng):
        nodes = d["cluster"]["racks"][0]["nodes"]
        nodes.append(copy.deepcopy(nodes[0]))

    def zero_par(d, rng):
        d["topologies"][0]["components"][-1]["parallelism"] = rng.choice([0, -1])

    def cycle(d, rng):
        t = d["topologies"][0]
        bolt_streams = [x for x in t["streams"] if x["source"] != "c0"]
        if bolt_streams:  # reverse a bolt -> bolt stream
            x = rng.choice(bolt_streams)
            t["streams"].append({"source": x["target"], "target": x["source"]})
        else:  # a bolt feeding itself
            t["streams"].append({"source": "c1", "target": "c1"})

    def junk_field(d, rng):
        d["cluster"]["racks"][0][rng.choice(["colour", "speed"])] = 1

    return [drop_key, negative, wrong_type, dangling, dup_node, zero_par, cycle, junk_field]


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), which=st.integers(0, len(_mutations()) - 1))
def test_invalid_instances_rejected_with_path(seed, which):
    rng = random.Random(seed)
    d = random_instance(rng, max_exec=6, max_nodes=3)
    _mutations()[which](d, rng)
    try:
        parse_instance(json.loads(json.dumps(d)))
    except InstanceError as e:
        assert e.problems and all(p and r for p, r in e.problems)
        return
    raise AssertionError(f"mutation {_mutations()[which].__name__} was accepted: {d}")
