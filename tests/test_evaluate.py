"""The evaluator on small hand-computed cases.

Instance `tiny`: spout(1) -shuffle-> split(2) -fields, selectivity 2-> count(2), input 100 t/s.
Rates: spout 100; each split 50 (emits 100); each count 100. Executor traffic: spout->split_i 50
(2 pairs), split_i->count_j 50 (4 pairs): 300 t/s in all.
"""

from __future__ import annotations

import math

import pytest

from planner import evaluate, rates
from planner.model import parse_instance
from planner.plan import Placement, Plan
from tests.helpers import tiny


def plan_of(*rows, **kw) -> Plan:
    return Plan(placements=[Placement(topology="wc", component=c, executor=i, node=n, slot=s) for c, i, n, s in rows], **kw)


PLAN_A = plan_of(("spout", 0, "n1", 6700), ("split", 0, "n1", 6700), ("split", 1, "n1", 6700),
                 ("count", 0, "n3", 6700), ("count", 1, "n3", 6700))
PLAN_B = plan_of(("spout", 0, "n1", 6700), ("split", 0, "n1", 6701), ("split", 1, "n2", 6700),
                 ("count", 0, "n2", 6700), ("count", 1, "n3", 6700))


def test_rates_and_traffic_by_hand():
    t = parse_instance(tiny()).topologies[0]
    assert rates.component_rates(t) == {"spout": 100, "split": 100, "count": 200}
    ex = rates.executor_rates(t)
    assert ex[("split", 1)] == 50 and ex[("count", 0)] == 100
    tr = rates.executor_traffic(t)
    assert len(tr) == 6 and sum(tr.values()) == 300
    assert tr[(("split", 0), ("count", 1))] == 50


def test_network_metric_plan_a():
    # spout->split: 2 pairs in the same worker (0); split->count: 4 pairs across racks (3 each) = 12; /5 executors
    m = evaluate(tiny(), PLAN_A, "network")
    assert m["feasible"], m["violations"]
    assert m["network_metric"] == pytest.approx(12 / 5)
    assert m["objective"] == pytest.approx(2.4)
    assert (m["inter_node_traffic"], m["inter_worker_traffic"], m["inter_rack_traffic"]) == (200, 200, 200)
    assert (m["workers_used"], m["nodes_used"], m["racks_used"]) == (2, 2, 2)
    assert m["node_utilisation"]["n1"]["cpu"] == pytest.approx(150 / 200)


def test_network_metric_plan_b():
    # spout->split0 same node (1), spout->split1 same rack (2); split0->count0 same rack (2),
    # split0->count1 other rack (3), split1->count0 same worker (0), split1->count1 other rack (3): 11/5
    m = evaluate(tiny(), PLAN_B, "network")
    assert m["network_metric"] == pytest.approx(11 / 5)
    assert m["inter_node_traffic"] == pytest.approx(200)  # spout->split1 + split0->count0/1 + split1->count1
    assert m["inter_worker_traffic"] == pytest.approx(250)  # + spout->split0
    assert m["inter_rack_traffic"] == pytest.approx(100)


def test_traffic_problem_constraints():
    # traffic: exactly min(W=2, E=5) = 2 workers; alpha = 1 -> M = ceil(5/2) + ceil(1*(4 - 3)) = 4 per worker
    m = evaluate(tiny(), PLAN_A, "traffic")
    assert m["feasible"] and m["objective"] == 200
    m = evaluate(tiny(), PLAN_B, "traffic")  # 4 workers used
    assert not m["feasible"]
    assert [v["constraint"] for v in m["violations"]] == ["worker_count"]
    d = tiny(params={"alpha": 0})  # M = ceil(5/2) = 3 < the 3 in PLAN_A's first worker? 3 <= 3 is fine
    assert evaluate(d, PLAN_A, "traffic")["feasible"]
    assert rates.max_per_worker(5, 2, 0) == 3 and rates.max_per_worker(5, 2, 1) == 4


@pytest.mark.parametrize("change, constraint", [
    (lambda d: d["cluster"]["racks"][0]["nodes"][0].update(cpu=100), "node_cpu"),
    (lambda d: d["cluster"]["racks"][0]["nodes"][0].update(memory_mb=700), "node_memory"),
    (lambda d: d["topologies"][0].update(max_heap_mb=700), "worker_heap"),
    (lambda d: d["topologies"][0]["components"][1].update(max_per_node=1), "placement"),
    (lambda d: d["topologies"][0]["components"][1].update(incompatible=["spout"]), "placement"),
    (lambda d: d["topologies"][0]["components"][1].update(incompatible=["split"]), "placement"),
    (lambda d: d["topologies"][0]["components"][2].update(nodes=["n4"]), "placement"),
    (lambda d: d["topologies"][0]["components"][0].update(resources={"gpu": 1}), "generic_resources"),
])
def test_each_hard_limit_is_caught(change, constraint):
    d = tiny()
    change(d)
    m = evaluate(d, PLAN_A, "network")
    assert not m["feasible"]
    assert constraint in {v["constraint"] for v in m["violations"]}, m["violations"]


def test_structural_violations():
    bad = plan_of(("spout", 0, "n1", 6700), ("split", 0, "n1", 6700), ("split", 0, "n1", 6701),
                  ("count", 0, "n9", 6700), ("count", 1, "n3", 9999), ("ghost", 0, "n1", 6700))
    m = evaluate(tiny(), bad, "network")
    kinds = [v["detail"] for v in m["violations"]]
    assert any("placed twice" in k for k in kinds)
    assert any("unknown node" in k for k in kinds)
    assert any("no port 9999" in k for k in kinds)
    assert any("unknown component" in k for k in kinds)
    assert any("not placed" in k for k in kinds)
    # two topologies in one worker
    d = tiny()
    t2 = dict(d["topologies"][0], id="other")
    d["topologies"].append(t2)
    rows = [Placement(topology=p.topology, component=p.component, executor=p.executor, node=p.node, slot=p.slot) for p in PLAN_A.placements]
    rows += [Placement(topology="other", component=p.component, executor=p.executor, node=p.node, slot=p.slot) for p in PLAN_A.placements]
    m = evaluate(d, Plan(placements=rows), "network")
    assert "one_topology_per_worker" in {v["constraint"] for v in m["violations"]}
    m = evaluate(d, PLAN_A, "admission")  # 'other' absent entirely: fine for admission
    assert m["feasible"] and m["scheduled_topologies"] == ["wc"] and m["objective"] == 1


def hetero(routing="even") -> dict:
    return {
        "topologies": [{"id": "t", "routing": routing, "components": [
            {"id": "s", "kind": "spout"}, {"id": "b", "parallelism": 2}],
            "streams": [{"source": "s", "target": "b"}]}],
        "cluster": {"racks": [{"id": "r", "nodes": [
            {"id": "A", "slots": 1, "cpu": 100, "type": "fast"}, {"id": "B", "slots": 1, "cpu": 100, "type": "slow"}]}]},
        "machine_profiles": [
            {"profile": "s", "machine_type": "fast", "exec_ms": 0.1, "overhead": 5},
            {"profile": "b", "machine_type": "fast", "exec_ms": 1, "overhead": 10},
            {"profile": "b", "machine_type": "slow", "exec_ms": 2, "overhead": 10},
        ],
    }


HPLAN = [("s", 0, "A", 6700), ("b", 0, "A", 6700), ("b", 1, "B", 6700)]


def test_throughput_even_and_weighted_by_hand():
    # even: A = R (1 x 0.1/10 + 0.5 x 1/10) + 15 <= 100 -> R <= 1416.67; B = 0.5 R x 2/10 + 10 <= 100 -> R <= 900
    # weighted: B takes x_B <= 450; A: 0.01 R + 0.1 x_A <= 85 with R = x_A + 450 -> x_A = 80.5/0.11
    p = Plan(placements=[Placement(topology="t", component=c, executor=i, node=n, slot=s) for c, i, n, s in HPLAN],
             parallelism={"t": {"s": 1, "b": 2}}, input_rate=900)
    m = evaluate(hetero(), p, "throughput")
    assert m["feasible"], m["violations"]
    assert m["sustainable_rate_even"] == pytest.approx(900)
    assert m["sustainable_rate_weighted"] == pytest.approx(450 + 80.5 / 0.11)
    assert m["objective"] == pytest.approx(900)
    m = evaluate(hetero("weighted"), p, "throughput")
    assert m["objective"] == pytest.approx(1181.8181818)
    p.input_rate = 1000  # claims more than even routing sustains
    m = evaluate(hetero(), p, "throughput")
    assert not m["feasible"] and m["violations"][0]["constraint"] == "throughput_capacity"
    # a missing profile is a violation
    d = hetero()
    d["machine_profiles"].pop()
    p.input_rate = None
    m = evaluate(d, p, "throughput")
    assert any("no machine profile" in v["detail"] for v in m["violations"])
    # two workers of one topology on one node is not allowed in throughput
    d = hetero()
    d["cluster"]["racks"][0]["nodes"][0]["slots"] = 2
    p2 = Plan(placements=[Placement(topology="t", component="s", executor=0, node="A", slot=6700),
                          Placement(topology="t", component="b", executor=0, node="A", slot=6701),
                          Placement(topology="t", component="b", executor=1, node="B", slot=6700)],
              parallelism={"t": {"s": 1, "b": 2}})
    m = evaluate(d, p2, "throughput")
    assert "one_worker_per_node" in {v["constraint"] for v in m["violations"]}


def slots_inst(interpolate=False) -> dict:
    return {
        "topologies": [{"id": "t", "input_rate": 30, "components": [
            {"id": "src", "kind": "spout"}, {"id": "w", "parallelism": 4}],
            "streams": [{"source": "src", "target": "w"}]}],
        "cluster": {"racks": [{"id": "r", "nodes": [{"id": "vm1", "slots": 2, "price": 2}, {"id": "vm2", "slots": 2, "price": 2}]}]},
        "perf_models": [
            {"name": "src", "points": [{"threads": 1, "rate": None, "cpu": 10, "memory": 15}]},
            {"name": "w", "interpolate": interpolate, "points": [
                {"threads": 1, "rate": 10, "cpu": 20, "memory": 5},
                {"threads": 2, "rate": 15, "cpu": 30, "memory": 6},
                {"threads": 4, "rate": 20, "cpu": 50, "memory": 10}]},
        ],
    }


def test_slots_supported_rate_by_hand():
    rows = [("src", 0, "vm1", 6700), ("w", 0, "vm1", 6700), ("w", 1, "vm1", 6700), ("w", 2, "vm2", 6700), ("w", 3, "vm2", 6700)]
    p = Plan(placements=[Placement(topology="t", component=c, executor=i, node=n, slot=s) for c, i, n, s in rows],
             parallelism={"t": {"src": 1, "w": 4}})
    m = evaluate(slots_inst(), p, "slots")
    # each slot's 2 threads take 30/4 x 2 = 15 t/s = the model's peak at 2 threads: supported 30
    assert m["feasible"], m["violations"]
    assert m["supported_rate"] == pytest.approx(30)
    assert m["slot_usage"]["vm1:6700"] == {"cpu": 40, "memory": 21}
    assert m["objective"] == 2 and m["vm_cost"] == 4
    # 3 threads in one slot: no modelled row; conservative: the rate of 2 threads (15) < 22.5 needed
    rows[3] = ("w", 2, "vm1", 6700)
    p = Plan(placements=[Placement(topology="t", component=c, executor=i, node=n, slot=s) for c, i, n, s in rows],
             parallelism={"t": {"src": 1, "w": 4}})
    m = evaluate(slots_inst(), p, "slots")
    assert not m["feasible"] and m["supported_rate"] == pytest.approx(15 / 0.75)
    # with interpolation: 3 threads -> rate 17.5: supported min(17.5/0.75, 10/0.25) = 23.33
    m = evaluate(slots_inst(True), p, "slots")
    assert m["supported_rate"] == pytest.approx(17.5 / 0.75)
    assert m["slot_usage"]["vm1:6700"]["cpu"] == pytest.approx(10 + 40)


def test_perf_lookup_rules():
    from planner.model import PerfModel

    m = PerfModel.model_validate(slots_inst()["perf_models"][1])
    assert rates.perf_at(m, 4).rate == 20
    assert rates.perf_at(m, 5) is None  # beyond the model
    p3 = rates.perf_at(m, 3)
    assert (p3.rate, p3.cpu) == (15, 50)  # conservative: rate below, resources above
    assert rates.threads_for_rate(m, 12) == 2 and rates.threads_for_rate(m, 25) is None


def test_measured_traffic_wins():
    d = tiny()
    d["topologies"][0]["traffic"] = [{"source": "split", "source_index": 0, "target": "count", "target_index": 1, "rate": 7}]
    m = evaluate(d, PLAN_A, "traffic")
    assert m["total_traffic"] == 7 and m["inter_node_traffic"] == 7


def test_all_and_global_groupings():
    d = tiny()
    d["topologies"][0]["streams"][1]["grouping"] = "all"
    t = parse_instance(d).topologies[0]
    # all: every count executor receives each split's full 100 t/s
    assert rates.executor_rates(t)[("count", 0)] == 200
    assert sum(rates.executor_traffic(t).values()) == 100 + 400
    m = evaluate(d, PLAN_A, "network")
    assert m["inter_node_traffic"] == 400
    d["topologies"][0]["streams"][1]["grouping"] = "global"
    t = parse_instance(d).topologies[0]
    ex = rates.executor_rates(t)
    assert (ex[("count", 0)], ex[("count", 1)]) == (200, 0)
    assert evaluate(d, PLAN_A, "network")["inter_node_traffic"] == 200


def test_traffic_aggregation_matches_pairwise_sum():
    """The evaluator's aggregated traffic equals the plain sum over executor pairs."""
    import random

    from tests.helpers import random_instance
    from planner.evaluate import evaluate as ev

    rng = random.Random(7)
    for _ in range(40):
        inst = parse_instance(random_instance(rng, max_exec=7, max_nodes=3))
        slots = [(n.id, p) for n in inst.cluster.nodes for p in n.slots]
        t = inst.topologies[0]
        pl = [Placement(topology=t.id, component=c, executor=i, node=(s := rng.choice(slots))[0], slot=s[1]) for c, i in t.executors()]
        where = {(p.component, p.executor): (p.node, p.slot) for p in pl}
        want = sum(r for (a, b), r in rates.executor_traffic(t).items() if where[a][0] != where[b][0])
        want_w = sum(r for (a, b), r in rates.executor_traffic(t).items() if where[a] != where[b])
        m = ev(inst, Plan(placements=pl))
        assert m["inter_node_traffic"] == pytest.approx(want) and m["inter_worker_traffic"] == pytest.approx(want_w)
        assert math.isfinite(m["network_metric"])


def test_slot_usage_rate_scales_with_load():
    # 'rate': each group's row scaled by load / peak. Target 20: each slot's 2 threads take 10 of a 15 peak.
    rows = [("src", 0, "vm1", 6700), ("w", 0, "vm1", 6700), ("w", 1, "vm1", 6700), ("w", 2, "vm2", 6700), ("w", 3, "vm2", 6700)]
    p = Plan(placements=[Placement(topology="t", component=c, executor=i, node=n, slot=s) for c, i, n, s in rows],
             parallelism={"t": {"src": 1, "w": 4}})
    d = slots_inst()
    d["topologies"][0]["input_rate"] = 20
    assert evaluate(d, p, "slots")["slot_usage"]["vm1:6700"]["cpu"] == pytest.approx(10 + 30)
    d["params"] = {"slot_usage": "rate"}
    u = evaluate(d, p, "slots")["slot_usage"]["vm1:6700"]
    assert u["cpu"] == pytest.approx(10 + 30 * 10 / 15)  # the unbounded source keeps its row
    assert u["memory"] == pytest.approx(15 + 6 * 10 / 15)


def test_weighted_lp_and_cpsat_share_a_process():
    """highspy and OR-Tools cannot live in one process; the evaluator must not load highspy."""
    import subprocess
    import sys

    code = (
        "from tests.test_evaluate import hetero, HPLAN\n"
        "from planner import evaluate, solve\n"
        "from planner.plan import Plan, Placement\n"
        "p = Plan(placements=[Placement(topology='t', component=c, executor=i, node=n, slot=s) for c, i, n, s in HPLAN],"
        " parallelism={'t': {'s': 1, 'b': 2}})\n"
        "assert evaluate(hetero('weighted'), p, 'throughput')['feasible']\n"
        "r = solve('tiny-linear', 'network', 'exact.cpsat')\n"
        "assert r.status.value == 'optimal', r.message\n"
        "import sys; assert 'highspy' not in sys.modules\n"
    )
    from pathlib import Path

    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
