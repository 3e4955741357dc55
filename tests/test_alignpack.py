"""The alignment packing (formulations/_alignpack.py): the RAS problems' start plan when Storm's
RAS places nothing or only part."""

from __future__ import annotations

import random

import pytest

from formulations._alignpack import alignment_pack
from planner.api import solve
from planner.evaluate import evaluate
from planner.model import parse_instance


def _two_tenants() -> dict:
    """storm.ras puts t0's two 40-point executors on n0 (priority 0 goes first); t1's 60-point
    executors then find 40 points on n1 and 20 on n0: one is left over. Packing the 60s first
    places all four."""
    return {
        "name": "two-tenants",
        "topologies": [
            {"id": "t0", "priority": 0, "max_heap_mb": 1200, "streams": [],
             "components": [{"id": "c0", "parallelism": 2, "cpu": 40, "memory_onheap_mb": 100}]},
            {"id": "t1", "priority": 1, "max_heap_mb": 2000, "streams": [],
             "components": [{"id": "c0", "parallelism": 2, "cpu": 60, "memory_onheap_mb": 400}]},
        ],
        "cluster": {"racks": [{"id": "r", "nodes": [
            {"id": "n0", "slots": 3, "cpu": 100, "memory_mb": 2000},
            {"id": "n1", "slots": 2, "cpu": 100, "memory_mb": 2000},
        ]}]},
    }


def test_packing_places_what_storm_ras_leaves_out():
    inst = parse_instance(_two_tenants())
    assert not solve(inst, "feasibility", "storm.ras").ok
    plan, why = alignment_pack(inst)
    assert why == "" and plan is not None
    assert evaluate(inst, plan, "feasibility")["feasible"]
    where = {(p.topology, p.executor): p.node for p in plan.placements}
    assert where[("t1", 0)] != where[("t1", 1)]  # the two 60s on different nodes


@pytest.mark.parametrize("method", ["exact.cpsat", "exact.milp-highs"])
def test_exact_feasibility_and_admission_start_from_the_packing(method):
    inst = parse_instance(_two_tenants())
    for problem in ("feasibility", "admission"):
        r = solve(inst, problem, method, time_limit=20)
        assert r.status.value == "optimal", r.message
        assert r.details["plan_from"] == "alignment packing"
        assert "storm.ras placed" in r.message
        assert evaluate(inst, r.plan, problem)["feasible"]
    r = solve(inst, "network", method, time_limit=20)
    assert r.status.value == "optimal" and evaluate(inst, r.plan, "network")["feasible"]


def _constrained(rng: random.Random) -> dict:
    """1-3 topologies on 1-5 nodes with every RAS limit in play: worker heap, slots, generic
    resources, site and node pins, max per node, incompatible components."""
    nodes = []
    for i in range(rng.randint(1, 5)):
        n = {"id": f"n{i}", "slots": rng.randint(1, 4), "cpu": rng.choice([100, 200]),
             "memory_mb": rng.choice([1000, 2000, 4000]), "site": rng.choice(["a", "b"])}
        if rng.random() < 0.5:
            n["resources"] = {"gpu": rng.choice([1, 2])}
        nodes.append(n)
    topos = []
    for ti in range(rng.randint(1, 3)):
        comps = []
        for ci in range(rng.randint(1, 3)):
            c = {"id": f"c{ci}", "parallelism": rng.randint(1, 4), "cpu": rng.choice([10, 20, 40, 60]),
                 "memory_onheap_mb": rng.choice([100, 200, 400]), "memory_offheap_mb": rng.choice([0, 0, 100])}
            u = rng.random()
            if u < 0.1:
                c["site"] = rng.choice(sorted({n["site"] for n in nodes}))
            elif u < 0.2:
                c["nodes"] = rng.sample([n["id"] for n in nodes], rng.randint(1, len(nodes)))
            if rng.random() < 0.2:
                c["max_per_node"] = rng.randint(1, 2)
            if rng.random() < 0.1:
                c["resources"] = {"gpu": 1}
            comps.append(c)
        if len(comps) > 1 and rng.random() < 0.4:
            comps[1]["incompatible"] = [comps[0]["id"]]
        if rng.random() < 0.15:
            comps[0].setdefault("incompatible", []).append(comps[0]["id"])
        topos.append({"id": f"t{ti}", "max_heap_mb": rng.choice([400, 800, 2000]), "components": comps, "streams": []})
    return {"name": "c", "topologies": topos, "cluster": {"racks": [{"id": "r", "nodes": nodes}]}}


def test_every_packing_passes_the_evaluator_and_none_where_brute_force_finds_none():
    packed = refused = infeasible = 0
    for seed in range(300):
        inst = parse_instance(_constrained(random.Random(seed)))
        plan, why = alignment_pack(inst, locality=seed % 2 == 0)
        if plan is None:
            assert why, seed
            refused += 1
            if sum(c.parallelism for t in inst.topologies for c in t.components) <= 6:
                infeasible += solve(inst, "feasibility", "exact.bruteforce", time_limit=20).status.value == "infeasible"
            continue
        ev = evaluate(inst, plan, "feasibility")
        assert ev["feasible"], (seed, ev["violations"][:3])
        packed += 1
    # both outcomes occur, and some refusals are instances with no plan at all
    assert packed > 100 and refused > 30 and infeasible > 5, (packed, refused, infeasible)


def test_the_second_pass_without_locality_is_tried():
    """Seed 23 of the family above: with the locality rule, t1's workers fill up so that the
    site-pinned c2 finds no room; without it the packing places all 10 executors; storm.ras
    places only part. The exact feasibility solve must take the second pass's plan."""
    inst = parse_instance(_constrained(random.Random(23)))
    assert alignment_pack(inst, locality=True)[0] is None
    plan, _ = alignment_pack(inst, locality=False)
    assert plan is not None and evaluate(inst, plan, "feasibility")["feasible"]
    assert not solve(inst, "feasibility", "storm.ras").ok
    r = solve(inst, "feasibility", "exact.cpsat", time_limit=20)
    assert r.status.value == "optimal" and r.details["plan_from"] == "alignment packing", r.message
    assert r.plan.assignment() == plan.assignment()


def test_locality_puts_a_topology_in_fewer_workers():
    """Without a worker to join, both rules agree; with one, the first prefers it: on the
    family above the first pass's plans use no more workers in total than the second's."""
    fewer = more = 0
    for seed in range(200):
        inst = parse_instance(_constrained(random.Random(seed)))
        a, _ = alignment_pack(inst, locality=True)
        b, _ = alignment_pack(inst, locality=False)
        if a is None or b is None:
            continue
        wa = len({(p.node, p.slot) for p in a.placements})
        wb = len({(p.node, p.slot) for p in b.placements})
        fewer += wa < wb
        more += wa > wb
    assert fewer > 20 and fewer > 5 * more, (fewer, more)


def test_packing_respects_its_deadline():
    inst = parse_instance(_two_tenants())
    plan, why = alignment_pack(inst, deadline=0.0)
    assert plan is None and "time limit" in why
