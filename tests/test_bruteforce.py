"""exact.bruteforce against a second, independent enumeration.

The second enumeration tries every executor-to-slot map (no symmetry reduction, no pruning)
and judges each with the evaluator; bruteforce prunes, breaks symmetry and computes the
objective with its own code. They must agree on feasibility and the optimum.
"""

from __future__ import annotations

import itertools
import random

import pytest

from planner import solve
from planner.evaluate import evaluate
from planner.model import parse_instance
from planner.plan import Placement, Plan, Status
from tests.helpers import random_instance


def plain_enumeration(inst, problem):
    slots = [(n.id, p) for n in inst.cluster.nodes for p in n.slots]
    t = inst.topologies[0]
    execs = t.executors()
    best = None
    for combo in itertools.product(range(len(slots)), repeat=len(execs)):
        plan = Plan(placements=[Placement(topology=t.id, component=c, executor=i, node=slots[s][0], slot=slots[s][1])
                                for (c, i), s in zip(execs, combo)])
        m = evaluate(inst, plan, problem)
        if m["feasible"] and (best is None or m["objective"] < best - 1e-9):
            best = m["objective"]
    return best


def small_cases(seed: int, n: int):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        d = random_instance(rng, max_exec=5, max_nodes=2)
        inst = parse_instance(d)
        slots = sum(len(x.slots) for x in inst.cluster.nodes)
        if slots ** inst.topologies[0].executor_count <= 1100:
            out.append(inst)
    return out


@pytest.mark.parametrize("problem", ["network", "traffic"])
def test_bruteforce_matches_plain_enumeration(problem):
    agreed = infeasible = 0
    for inst in small_cases(11 if problem == "network" else 12, 14):
        want = plain_enumeration(inst, problem)
        r = solve(inst, problem, "exact.bruteforce")
        if want is None:
            assert r.status == Status.INFEASIBLE, r.message
            infeasible += 1
        else:
            assert r.status == Status.OPTIMAL, r.message
            assert r.metrics["feasible"]
            assert r.objective == pytest.approx(want, abs=1e-9)
            assert r.bound == pytest.approx(want, abs=1e-9)  # its own objective code agrees with the evaluator's
            agreed += 1
    assert agreed >= 5  # the sample must exercise real optima, not only infeasible cases


def test_bruteforce_refuses_large_and_honours_time_limit():
    d = random_instance(random.Random(3), max_exec=6, max_nodes=3)
    d["topologies"][0]["components"][0]["parallelism"] = 40
    d["cluster"]["racks"][0]["nodes"] = [{"id": f"x{i}", "slots": 4, "cpu": 10000, "memory_mb": 100000} for i in range(6)]
    r = solve(d, "network", "exact.bruteforce")
    assert r.status == Status.UNKNOWN and "too large" in r.message


def test_feasibility_and_admission():
    from tests.helpers import tiny

    d = tiny()
    r = solve(d, "feasibility", "exact.bruteforce")
    assert r.status == Status.OPTIMAL and r.metrics["feasible"]
    # a second topology that cannot fit anywhere: admission keeps the first only
    d["topologies"].append({"id": "big", "priority": 1, "components": [{"id": "s", "kind": "spout", "cpu": 500}]})
    r = solve(d, "admission", "exact.bruteforce")
    assert r.status == Status.OPTIMAL and r.metrics["scheduled_topologies"] == ["wc"]
    assert r.objective == 2  # weight of priority 0 with max priority 1
    r = solve(d, "feasibility", "exact.bruteforce")
    assert r.status == Status.INFEASIBLE
