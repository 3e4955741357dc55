"""Storm's schedulers (issue 4, methods part): the RAS document's worked examples, Storm's
multi-tenant tests as data, the constraint solver, site-aware, and every method on every
shipped instance and on seeded random instances, judged by the evaluator."""

from __future__ import annotations

import random

import pytest

from heuristics import storm as S
from heuristics.common import guarantee_satisfaction, user_order
from planner.api import evaluate, load_instance, solve
from planner.instances import shipped
from planner.model import InstanceError, parse_instance
from planner.registry import get_method

RAS_FAMILY = ["storm.ras", "storm.ras-old", "storm.ras-roundrobin", "storm.ras-rr-doc", "storm.constraint-solver", "rstorm"]
ALL_METHODS = RAS_FAMILY + ["site-aware"]
DOC_RACKS = ["rack-0", "rack-1", "rack-4", "rack-3", "rack-2"]


def check(r):
    """A result is either a plan the evaluator accepts, or infeasible/unknown with a reason."""
    if r.ok:
        assert r.metrics["feasible"], r.metrics["violations"][:3]
        return True
    assert r.status.value in ("infeasible", "unknown"), (r.status, r.message)
    assert r.message
    return False


# --- the RAS document's worked examples ----------------------------------------------------------

def test_five_rack_order_document_keys():
    inst = load_instance("ras-doc-five-racks")
    for slots in (True, False):
        assert S.sort_racks(inst, "wordcount", variant="old", include_slots=slots) == DOC_RACKS
    sc = S.rack_scores(inst, "wordcount", include_slots=True)
    # the document's "effective resources" (subordinate share) of each rack
    doc = {"rack-3": 0.00819672131147541, "rack-2": 0.0, "rack-4": 0.024390243902439025,
           "rack-1": 0.0975609756097561, "rack-0": 0.1951219512195122}
    for r, v in doc.items():
        assert sc[r]["subordinate"] == pytest.approx(v, abs=1e-12)
    # storm.ras-old takes its first node from rack-0
    r = solve(inst, "network", "storm.ras-old", include_slots=True)
    assert check(r)
    assert {p.node.split("-n")[0] for p in r.plan.placements} == {"rack-0"}


def test_five_rack_order_current_keys():
    inst = load_instance("ras-doc-five-racks")
    # derive the COMMON order independently: average of CPU and memory shares, then minimum
    tot = {rk.id: (sum(n.cpu for n in rk.nodes), sum(n.memory_mb for n in rk.nodes)) for rk in inst.cluster.racks}
    C = sum(c for c, _ in tot.values())
    M = sum(m for _, m in tot.values())
    key = {r: ((c / C + m / M) / 2, min(c / C, m / M)) for r, (c, m) in tot.items()}
    expected = sorted(tot, key=lambda r: (-key[r][0], -key[r][1], r))
    assert expected == ["rack-4", "rack-0", "rack-3", "rack-1", "rack-2"]
    assert S.sort_racks(inst, "wordcount") == expected
    assert S.sort_racks(inst, "wordcount", include_slots=True) == expected  # slots are 20 % everywhere
    r = solve(inst, "network", "storm.ras")
    assert check(r)
    assert {p.node.split("-n")[0] for p in r.plan.placements} == {"rack-4"}


def test_existing_executors_come_first():
    """Key (1): racks and nodes holding this topology's executors are tried first."""
    from planner.plan import Placement

    inst = load_instance("ras-doc-five-racks")
    a = [Placement(topology="wordcount", component="spout", executor=0, node="rack-1-n7", slot=6700)]
    assert S.sort_racks(inst, "wordcount", assigned=a)[0] == "rack-1"
    assert S.sort_racks(inst, "wordcount", assigned=a, variant="old") == DOC_RACKS[1:2] + ["rack-0", "rack-4", "rack-3", "rack-2"]
    assert S.sort_nodes(inst, "wordcount", "rack-1", assigned=a)[0] == "rack-1-n7"
    # among equal nodes the id decides
    assert S.sort_nodes(inst, "wordcount", "rack-0") == [f"rack-0-n{k}" for k in range(10)]
    with pytest.raises(InstanceError):
        S.sort_nodes(inst, "wordcount", "no-such-rack")


def test_sixteen_and_a_half_gigabytes():
    inst = load_instance("ras-doc-16gb")
    t = inst.topologies[0]
    total = sum(c.parallelism * (c.memory_onheap_mb + c.memory_offheap_mb) for c in t.components)
    assert total / 1024 == 16.5
    for m in RAS_FAMILY:
        r = solve(inst, "network", m)
        assert check(r), (m, r.message)
        placed = sum(t.component(p.component).memory_mb for p in r.plan.placements)
        assert placed == total


def test_guarantee_satisfaction_document_example():
    a = guarantee_satisfaction(2, 40, 10, 50)
    b = guarantee_satisfaction(15, 10, 20, 25)
    assert a == pytest.approx(0.5)
    assert b == pytest.approx(0.575)
    inst = parse_instance({
        "users": [{"id": "B", "cpu": 20, "memory_mb": 25}, {"id": "A", "cpu": 10, "memory_mb": 50}],
        "topologies": [{"id": "t", "components": [{"id": "s", "kind": "spout"}]}],
        "cluster": {"racks": [{"id": "r", "nodes": [{"id": "n"}]}]},
    })
    order = user_order(inst, {"A": (2, 40), "B": (15, 10)})
    assert [u for u, _ in order] == ["A", "B"]
    assert [s for _, s in order] == pytest.approx([0.5, 0.575])


# --- executor order ---------------------------------------------------------------------------------

def test_connection_count_order():
    inst = parse_instance({
        "topologies": [{"id": "t", "components": [
            {"id": "s", "kind": "spout", "parallelism": 2}, {"id": "a", "parallelism": 3}, {"id": "b", "parallelism": 1}],
            "streams": [{"source": "s", "target": "a"}, {"source": "s", "target": "b"}]}],
        "cluster": {"racks": [{"id": "r", "nodes": [{"id": "n"}]}]},
    })
    # scores: s = 2*3 + 2*1 = 8, a = 6, b = 2; neighbours of s by product ascending: b (2), a (6)
    assert S.connection_count_order(inst.topologies[0]) == [
        ("s", 0), ("b", 0), ("a", 0), ("s", 1), ("a", 1), ("a", 2)]


# --- multi-tenancy ----------------------------------------------------------------------------------

def test_eviction_as_in_storm_test():
    """TestDefaultEvictionStrategy.testEviction: topo-1..4 fill the cluster; jerry submits topo-6;
    bobby is above his guarantee, so bobby's least important topology topo-3 is evicted."""
    inst = load_instance("ras-multitenant")
    first = inst.model_copy(update={"topologies": [t for t in inst.topologies if t.id != "topo-6"]})
    r1 = solve(first, "feasibility", "storm.ras")
    assert check(r1)
    assert sorted(r1.details["scheduled"]) == ["topo-1", "topo-2", "topo-3", "topo-4"]
    r2 = solve(inst, "admission", "storm.ras", running=r1.plan.model_dump())
    assert check(r2)
    assert sorted(r2.metrics["scheduled_topologies"]) == ["topo-1", "topo-2", "topo-4", "topo-6"]
    assert [e["topology"] for e in r2.details["evicted"]] == ["topo-3"]
    assert "bobby" in r2.details["evicted"][0]["reason"]
    assert [u["topology"] for u in r2.details["unscheduled"]] == ["topo-3"]
    r3 = solve(inst, "feasibility", "storm.ras", running=r1.plan)
    assert r3.status.value == "infeasible" and "topo-3" in r3.message
    with pytest.raises(InstanceError) as e:
        solve(inst, "admission", "storm.ras", running={"placements": r1.plan.model_dump()["placements"][:0] + [
            {"topology": "topo-1", "component": "spout-0", "executor": 0, "node": "sup-0", "slot": 1}]})
    assert e.value.path == "options.running"


def test_multitenant_batch_order():
    """All five submitted together: users furthest from their guarantee first; topo-3 (bobby,
    already at his guarantee, nothing to evict) is left out whole."""
    inst = load_instance("ras-multitenant")
    r = solve(inst, "admission", "storm.ras")
    assert check(r)
    assert r.details["order"] == ["topo-4", "topo-1", "topo-2", "topo-6", "topo-3"]
    assert [u["topology"] for u in r.details["unscheduled"]] == ["topo-3"]
    assert r.details["evicted"] == []
    f = solve(inst, "feasibility", "storm.ras")
    assert f.status.value == "infeasible" and "topo-3" in f.message and f.details["unscheduled"]


def test_eviction_of_user_far_above_guarantee():
    """Second branch of the eviction rule: the submitter is at its guarantee, another user is
    further above its own than the submitter would be."""
    one = {"id": "s", "kind": "spout", "cpu": 100, "memory_onheap_mb": 500, "memory_offheap_mb": 500}
    inst = parse_instance({
        "users": [{"id": "u", "cpu": 100, "memory_mb": 1000}, {"id": "v", "cpu": 100, "memory_mb": 1000}],
        "topologies": [
            {"id": "u1", "owner": "u", "components": [one]},
            {"id": "v1", "owner": "v", "priority": 1, "components": [dict(one, parallelism=2)]},
            {"id": "u2", "owner": "u", "priority": 1, "components": [dict(one, cpu=50, memory_onheap_mb=250, memory_offheap_mb=250)]},
        ],
        "cluster": {"racks": [{"id": "r", "nodes": [{"id": f"n{k}", "cpu": 100, "memory_mb": 1000} for k in range(3)]}]},
    })
    r = solve(inst, "admission", "storm.ras")
    assert check(r)
    # u1 then v1 (v at 0 < u at 1), v goes to 3.0; u2 does not fit; v is 2.0 above > 0.5 -> evict v1
    assert r.details["order"][:3] == ["u1", "v1", "u2"]
    assert [e["topology"] for e in r.details["evicted"]] == ["v1"]
    assert "u2" in r.metrics["scheduled_topologies"] and "v1" not in r.metrics["scheduled_topologies"]


# --- the search ----------------------------------------------------------------------------------------

def test_search_limits_and_options():
    inst = load_instance("tiny-linear")
    r = solve(inst, "network", "storm.ras", max_states=3)
    assert r.status.value == "infeasible" and "search limit" in r.message
    assert check(solve(inst, "network", "storm.ras", max_states=5))
    with pytest.raises(InstanceError) as e:
        solve(inst, "network", "storm.ras", max_states=0)
    assert e.value.path == "options.max_states"
    with pytest.raises(InstanceError):
        solve(inst, "network", "storm.ras", bogus=1)
    assert get_method("storm.ras").options["max_states"] == 10_000


def random_instance(seed: int, constraints: bool = False, topologies: int = 1) -> dict:
    """Small random instances after the RAS document's random protocol (racks 1..3, a few
    supervisors with random ports/CPU/memory, components alternating spout/bolt, each spout
    feeding a random bolt and each bolt a random later bolt)."""
    rng = random.Random(seed)
    racks = []
    k = 0
    for r in range(rng.randint(1, 3)):
        nodes = []
        for _ in range(rng.randint(1, 3)):
            nodes.append({"id": f"n{k}", "slots": rng.randint(1, 3), "cpu": rng.choice([50, 100, 200, 400]),
                          "memory_mb": rng.choice([256, 512, 1024, 2048])})
            k += 1
        racks.append({"id": f"r{r}", "nodes": nodes})
    topos = []
    for ti in range(topologies):
        n = rng.randint(2, 4)
        comps = []
        for ci in range(n):
            c = {"id": f"c{ci}", "kind": "spout" if ci % 2 == 0 and ci < n - 1 else "bolt", "parallelism": rng.randint(1, 3),
                 "cpu": rng.choice([10, 25, 50]), "memory_onheap_mb": rng.choice([64, 128, 256])}
            if constraints:
                if rng.random() < 0.4:
                    c["max_per_node"] = rng.randint(1, 2)
                if rng.random() < 0.3:
                    c["incompatible"] = [f"c{rng.randrange(n)}"]
            comps.append(c)
        bolts = [c["id"] for c in comps if c["kind"] == "bolt"]
        streams = []
        for ci, c in enumerate(comps):
            later = [b for b in bolts if int(b[1:]) > ci]
            if later:
                streams.append({"source": c["id"], "target": rng.choice(later)})
        topos.append({"id": f"t{ti}", "components": comps, "streams": streams, "priority": rng.randint(0, 2),
                      "max_heap_mb": rng.choice([256, 512, 768])})
    return {"name": f"random-{seed}", "topologies": topos, "cluster": {"racks": racks}}


def test_ras_search_is_complete_on_tiny_instances():
    """With no state limit the backtracking search is exhaustive: it finds a plan exactly when
    brute force does."""
    agree = {True: 0, False: 0}
    for seed in range(80):
        inst = parse_instance(random_instance(seed))
        if inst.size["executors"] > 6 or inst.size["slots"] > 6:
            continue
        bf = solve(inst, "feasibility", "exact.bruteforce", time_limit=10)
        if bf.status.value == "unknown":
            continue
        r = solve(inst, "feasibility", "storm.ras", max_states=10**7)
        check(r)
        assert r.ok == bf.ok, (seed, r.message, bf.message)
        agree[r.ok] += 1
    assert agree[True] >= 5 and agree[False] >= 2


@pytest.mark.parametrize("method", ALL_METHODS)
def test_every_method_on_random_instances(method):
    feasible = 0
    info = get_method(method)
    for seed in range(15):
        inst = parse_instance(random_instance(100 + seed, constraints=seed % 3 == 0, topologies=1 + seed % 3))
        for problem in info.problems:
            r = solve(inst, problem, method)
            feasible += check(r)
            if method in RAS_FAMILY and r.ok and problem == "admission":
                assert sorted(r.metrics["scheduled_topologies"]) == sorted(r.details["scheduled"])
    assert feasible > 0


def test_every_method_on_every_shipped_instance():
    names = [s["name"] for s in shipped()]
    for name in ("ras-doc-five-racks", "ras-doc-16gb", "site-aware-example", "ras-multitenant"):
        assert name in names
    for s in shipped():
        inst = load_instance(s["path"])
        for m in ALL_METHODS:
            for problem in get_method(m).problems:
                check(solve(inst, problem, m))


# --- constraint solver -------------------------------------------------------------------------------

def test_constraint_solver_never_breaks_a_constraint():
    seen_feasible = seen_constrained = 0
    for seed in range(30):
        inst = parse_instance(random_instance(500 + seed, constraints=True))
        seen_constrained += any(c.max_per_node or c.incompatible for t in inst.topologies for c in t.components)
        for sev in ("stated", "storm"):
            r = solve(inst, "feasibility", "storm.constraint-solver", severity=sev)
            if check(r):
                seen_feasible += 1
                m = evaluate(inst, r.plan, "feasibility")
                assert not [v for v in m["violations"] if v["constraint"] == "placement"]
    assert seen_feasible >= 5 and seen_constrained >= 10


def test_constraint_solver_fail_fast():
    inst = parse_instance({
        "topologies": [{"id": "t", "components": [{"id": "s", "kind": "spout", "parallelism": 5, "max_per_node": 2}]}],
        "cluster": {"racks": [{"id": "r", "nodes": [{"id": "a"}, {"id": "b"}]}]},
    })
    r = solve(inst, "feasibility", "storm.constraint-solver")
    assert r.status.value == "infeasible"
    assert "fail fast" in r.message and "5 executors > 2 nodes x max_per_node 2" in r.message
    # incompatible with itself: one executor per worker, spread over the 8 slots
    inst2 = parse_instance({
        "topologies": [{"id": "t", "components": [{"id": "s", "kind": "spout", "parallelism": 4, "incompatible": ["s"], "max_per_node": 2},
                                                  {"id": "b", "parallelism": 2, "incompatible": ["s"]}],
                        "streams": [{"source": "s", "target": "b"}]}],
        "cluster": {"racks": [{"id": "r", "nodes": [{"id": "a"}, {"id": "b"}]}]},
    })
    r2 = solve(inst2, "feasibility", "storm.constraint-solver")
    assert check(r2)
    workers = [(p.node, p.slot) for p in r2.plan.placements if p.component == "s"]
    assert len(set(workers)) == 4
    assert S.constraint_order(inst2.topologies[0]) == ["s", "b"]


# --- site-aware -----------------------------------------------------------------------------------------

def test_site_aware_example():
    inst = load_instance("site-aware-example")
    r = solve(inst, "network", "site-aware")
    assert check(r)
    site = {n.id: n.site for n in inst.cluster.nodes}
    t = inst.topology("example-topology")
    pl = [p for p in r.plan.placements if p.topology == t.id]
    assert len(pl) == t.executor_count
    for p in pl:
        assert site[p.node] == t.component(p.component).site
    # bolt_1's two executors are spread over two slots of tamu, apart from spout_1's slot
    b1 = {(p.node, p.slot) for p in pl if p.component == "bolt_1"}
    sp = {(p.node, p.slot) for p in pl if p.component == "spout_1"}
    assert len(b1) == 2 and not (b1 & sp)
    # the untagged topology went to the EvenScheduler on the untagged supervisor, 2 workers
    u = [p for p in r.plan.placements if p.topology == "untagged-topology"]
    assert {p.node for p in u} == {"plain-1"} and len({p.slot for p in u}) == 2
    assert r.details["not_honoured"] == []
    assert r.details["even_fallback"][0]["topology"] == "untagged-topology"


def test_site_aware_overflow_is_reported():
    data = load_instance("site-aware-example").model_dump()
    data["topologies"][0]["components"][2]["parallelism"] = 6  # bolt_2 at uh: 6 executors, 4 slots
    data["cluster"]["racks"][1]["nodes"][0]["slots"] = [6700]  # uh keeps one port
    data["topologies"][0]["components"][3]["site"] = "uh"  # bolt_3 now wants uh too, which is full
    inst = parse_instance(data)
    r = solve(inst, "network", "site-aware")
    nh = r.details["not_honoured"]
    assert [(d["component"], d["site"]) for d in nh] == [("bolt_3", "uh")]
    # bolt_3 ended off its site, so the evaluator rejects the plan for its placement constraint
    assert r.status.value == "infeasible" and "placement" in r.message


def test_pruned_node_orders_give_the_same_plans():
    """Dropping nodes that cannot fit from each order is a speed-up only: same plans, same
    failures, including instances that need backtracking (small worker heaps)."""
    from heuristics.common import schedule_topologies

    backtracked = 0
    for seed in range(40):
        data = random_instance(900 + seed, constraints=seed % 2 == 0, topologies=1 + seed % 2)
        if seed % 3 == 0:
            for t in data["topologies"]:
                t["max_heap_mb"] = 256
        inst = parse_instance(data)
        out = []
        for prune in (True, False):
            r = schedule_topologies(inst, "admission", "storm.ras", S.ras_place_fn(prune=prune))
            out.append(([p.model_dump() for p in r.plan.placements], r.details["unscheduled"]))
        assert out[0] == out[1], seed
        backtracked += any("backtracking" in u["reason"] for u in out[0][1])
    assert backtracked >= 1
