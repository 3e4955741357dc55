"""Exact slots models (CP-SAT, CBC, HiGHS) against brute force and the evaluator.
The objective (slots used) is an integer: agreement is exact; VM cost agrees to 1e-9."""

from __future__ import annotations

import random

import pytest

import planner
from formulations.slots import shukla_micro_dag
from planner.model import InstanceError
from planner.plan import Status

EXACT = ["exact.cpsat", "exact.milp-cbc", "exact.milp-highs"]


def tiny(seed: int, comps: int = 3, nodes: int = 2, spn: int = 2) -> dict:
    rnd = random.Random(seed)
    cs = [{"id": "s", "kind": "spout"}] + [{"id": f"b{i}"} for i in range(1, comps)]
    streams = [{"source": cs[i - 1]["id"], "target": cs[i]["id"], "selectivity": rnd.choice([0.5, 1, 2])} for i in range(1, comps)]
    models = []
    for c in cs:
        rate, cpu, mem, pts = rnd.uniform(5, 20), rnd.uniform(10, 50), rnd.uniform(5, 40), []
        for q in range(1, rnd.choice([1, 2, 3]) + 1):
            pts.append({"threads": q, "rate": round(rate, 2), "cpu": round(cpu, 2), "memory": round(mem, 2)})
            rate *= rnd.uniform(1.1, 1.8)
            cpu *= rnd.uniform(1.0, 1.6)
            mem *= rnd.uniform(1.0, 1.3)
        models.append({"name": c["id"], "points": pts, "interpolate": rnd.random() < 0.3})
    ns = [{"id": f"n{j}", "slots": spn, "price": rnd.choice([1, 2, 3])} for j in range(nodes)]
    return {"topologies": [{"id": "t", "input_rate": rnd.choice([10, 20, 30]), "components": cs, "streams": streams}],
            "cluster": {"racks": [{"id": "r", "nodes": ns}]}, "perf_models": models}


def agree(inst: dict) -> None:
    ref = planner.solve(inst, "slots", "exact.bruteforce")
    assert ref.status in (Status.OPTIMAL, Status.INFEASIBLE), ref.message
    for m in EXACT:
        r = planner.solve(inst, "slots", m)
        assert r.status == ref.status, (m, r.message)
        if ref.status == Status.OPTIMAL:
            assert r.metrics["feasible"], (m, r.metrics["violations"])
            assert r.objective == ref.objective, m
            assert r.metrics["vm_cost"] == pytest.approx(ref.metrics["vm_cost"], abs=1e-9), m


@pytest.mark.parametrize("seed", range(10))
def test_small_random_agree(seed):
    agree(tiny(seed))


@pytest.mark.slow
def test_hundreds_random_agree():
    for seed in range(100, 300):
        rnd = random.Random(seed)
        agree(tiny(seed, comps=rnd.choice([2, 3]), nodes=rnd.choice([1, 2]), spn=rnd.choice([1, 2])))


def test_rate_usage_mode_is_feasible_not_claimed_optimal():
    for seed in range(4):
        inst = tiny(seed, comps=2)
        inst["params"] = {"slot_usage": "rate"}
        bf = planner.solve(inst, "slots", "exact.bruteforce")
        r = planner.solve(inst, "slots", "exact.cpsat")
        assert r.status != Status.OPTIMAL and r.status != Status.INFEASIBLE
        if r.status == Status.FEASIBLE:
            assert r.metrics["feasible"] and bf.status == Status.OPTIMAL
            assert r.objective >= bf.objective


def test_shukla_linear_small_rate_proven():
    """The Linear micro-DAG at 10 tuples/s on 2 VMs x 4 slots: CP-SAT and HiGHS agree."""
    inst = shukla_micro_dag("linear", 10, nodes=2)
    a = planner.solve(inst, "slots", "exact.cpsat", time_limit=60)
    b = planner.solve(inst, "slots", "exact.milp-highs", time_limit=60)
    assert a.metrics["feasible"] and b.metrics["feasible"]
    assert a.status == Status.OPTIMAL and b.status == Status.OPTIMAL
    assert a.objective == b.objective


def test_hint_and_bad_input():
    inst = tiny(3)
    ref = planner.solve(inst, "slots", "exact.cpsat")
    for m in EXACT:
        r = planner.solve(inst, "slots", m, hint="exact.bruteforce")
        assert r.details["hint"]["used"]
        assert r.status == Status.OPTIMAL and r.objective == ref.objective and r.metrics["feasible"]
    no_rate = tiny(3)
    del no_rate["topologies"][0]["input_rate"]
    with pytest.raises(InstanceError) as e:
        planner.solve(no_rate, "slots", "exact.cpsat")
    assert e.value.path == "topologies[0].input_rate"
    no_model = tiny(3)
    no_model["perf_models"] = no_model["perf_models"][1:]
    with pytest.raises(InstanceError) as e:
        planner.solve(no_model, "slots", "exact.milp-cbc")
    assert e.value.path == "topologies[0].components[0].perf_model"


def test_time_limit_feasible_with_bound():
    r = planner.solve(shukla_micro_dag("diamond", 100, nodes=6), "slots", "exact.cpsat", time_limit=3)
    assert r.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert r.metrics["feasible"]
    assert r.bound is not None and r.bound <= r.objective
