"""Traffic phase 1 at scale: the node-level local search that seeds the configuration model,
and the lexicographic status rule (docs/formulations.md, "Traffic (phase 1)")."""

from __future__ import annotations

import random

import pytest

import planner
from formulations import _patterns as patterns
from formulations._gen import layered, small_random
from formulations._rasmodel import PlacementModel, Run
from formulations._trafficls import NodeSearch
from formulations.traffic import traffic_pairs
from planner.evaluate import evaluate
from planner.model import parse_instance

TOL = 1e-6


def _setup(inst):
    run = Run(inst, "traffic", "exact.cpsat", None, None, None, True, 0)
    groups, pairs = traffic_pairs(run)
    base = PlacementModel(inst, "traffic", groups, sense="min", build=False)
    return base, pairs


def test_local_search_plans_pass_the_evaluator_and_never_beat_brute_force():
    checked = 0
    for seed in range(30):
        inst = parse_instance(small_random("traffic", seed))
        base, pairs = _setup(inst)
        if not pairs or patterns.applicable(base, "traffic") is not None:
            continue
        ref = planner.solve(inst, "traffic", "exact.bruteforce")
        if ref.status.value != "optimal":
            continue
        model, const = patterns.build_traffic(base, pairs, None, 1)
        ns = NodeSearch(base, pairs)
        starts = [y for y in (ns.greedy(None), ns.greedy(random.Random(seed))) if y is not None]
        if not starts:
            continue
        value, Y = ns.run(starts, 0.2, seed, patience=200)
        cols = ns.columns(model, Y)
        assert cols is not None
        plan = patterns.traffic_plan(base, model, cols)
        m = evaluate(inst, plan, "traffic")
        assert m["feasible"], (seed, m["violations"])
        assert m["inter_node_traffic"] == pytest.approx(const - value, rel=TOL, abs=TOL)  # its own value is exact
        assert m["inter_node_traffic"] >= ref.objective - TOL * max(1.0, ref.objective), seed
        checked += 1
    assert checked >= 5, checked


def test_local_search_reaches_the_proven_optimum_on_46_executors():
    inst = parse_instance(layered(46, 8, 4, 0, problem="traffic"))
    base, pairs = _setup(inst)
    model, const = patterns.build_traffic(base, pairs, None, 1)
    ns = NodeSearch(base, pairs)
    value, Y = ns.run([ns.greedy(None)], 1.0, 0)
    assert const - value == pytest.approx(746.6666666666667, rel=1e-9)  # proven by the configuration model (below)


def test_traffic_proof_returns_early_with_both_levels_proven():
    inst = parse_instance(layered(46, 8, 4, 0, problem="traffic"))
    limit = 40.0
    r = planner.solve(inst, "traffic", "exact.milp-highs", time_limit=limit)
    assert r.status.value == "optimal", r.message
    assert r.details["phase2"].startswith("optimal") and r.details["phase1"] == "optimal"
    assert r.metrics["inter_worker_traffic"] == pytest.approx(r.metrics["inter_node_traffic"])
    # the configuration model has 3/4 of the limit; proven runs do not wait for the limit
    assert r.seconds < 0.75 * limit, r.seconds


@pytest.mark.slow
def test_unproven_traffic_reports_a_bound_no_better_than_a_plan():
    inst = parse_instance(layered(60, 8, 6, 0, problem="traffic"))
    r = planner.solve(inst, "traffic", "exact.cpsat", time_limit=8)
    assert r.ok and r.metrics["feasible"]
    assert r.bound is not None and r.bound <= r.objective + TOL
    if r.status.value == "feasible":
        assert "not proven" in r.message


def test_phase2_on_columns_matches_brute_force_tie_breaker():
    # several workers per node: the configuration model's phase 2 (splits of node contents)
    # must find brute force's least inter-worker traffic among the inter-node optima
    used = 0
    for seed in range(40):
        d = small_random("traffic", seed)
        for t in d["topologies"]:
            t["workers"] = 4  # more workers than nodes: some node splits its executors
        inst = parse_instance(d)
        ref = planner.solve(inst, "traffic", "exact.bruteforce")
        if ref.status.value != "optimal":
            continue
        r = planner.solve(inst, "traffic", "exact.cpsat")
        assert r.status.value == "optimal", (seed, r.message)
        assert r.objective == pytest.approx(ref.objective, rel=TOL, abs=TOL), seed
        assert r.metrics["inter_worker_traffic"] == pytest.approx(ref.metrics["inter_worker_traffic"], rel=TOL, abs=TOL), seed
        # phase 2 on the configuration columns, or (branch traffic-bp) on every phase-1 optimum
        # enumerated by branch and price: either way a split-aware phase 2, not the free case
        used += any(k in str(r.details.get("phase2", "")) for k in ("configuration columns", "enumerated by branch and price"))
    assert used >= 3, used


@pytest.mark.parametrize("size", [(16, 6, 3, 3), (12, 6, 2, 2), (14, 6, 3, 1)])
def test_phase2_by_the_phase1_plans_best_splits_matches_the_compact_model(size, monkeypatch):
    # one worker more than nodes: a node splits its executors. When the phase-1 plan's best
    # splits keep all intra-node traffic (split_plan; taken on 16x6x3 seed 3 from the B&P
    # tree's plan: the root convolution ends on another optimum there, so that route is also
    # checked with it off), phase 2 is proven at once; every route must give the compact
    # model's least inter-worker traffic
    import formulations._trafficbp as tb

    e, c, n, seed = size
    d = layered(e, c, n, seed, problem="traffic")
    for t in d["topologies"]:
        t["workers"] = n + 1
    inst = parse_instance(d)
    ref = planner.solve(inst, "traffic", "exact.cpsat", model="compact", time_limit=60)
    for conv in ((True, False) if size == (16, 6, 3, 3) else (True,)):
        monkeypatch.setattr(tb, "CONVOLVE", conv)
        r = planner.solve(inst, "traffic", "exact.cpsat", time_limit=60)
        assert r.status.value == "optimal" and ref.status.value == "optimal", (r.message, ref.message)
        assert r.metrics["feasible"]
        assert r.objective == pytest.approx(ref.objective, rel=TOL, abs=TOL)
        assert r.metrics["inter_worker_traffic"] == pytest.approx(ref.metrics["inter_worker_traffic"], rel=TOL, abs=TOL)
        if not conv:
            assert "best splits" in r.details["phase2"]
            assert r.metrics["inter_worker_traffic"] == pytest.approx(r.objective, rel=1e-9, abs=TOL)


@pytest.mark.slow
@pytest.mark.parametrize("size,seed,limit", [((100, 9, 10), 0, 60.0), ((100, 10, 10), 1, 120.0),
                                             ((100, 12, 10), 0, 120.0), ((100, 5, 10), 0, 120.0)])
def test_100_executors_on_10_nodes_proven_at_both_levels(size, seed, limit):
    """100x9x10 (0.03 % before the screened branching), 100x10x10 with solver seed 1 (phase
    1 not proven in 60 s before) and 100x12x10 (6.3 million count vectors a node: no B&P table
    before branch traffic-wide, 2.8 % gap) and 100x5x10 (not proven in 60 s on sessions 15-17's
    machine, whose seeding search ends in a poorer basin; proven since session 18: the tree's
    improved incumbent polished by the local search, the root convolution tried again): both
    levels proven, the plan passes the evaluator and its inter-node traffic is the objective.
    The limit has a margin for a loaded machine (the benchmark's figures: 4 s, 16-20 s, 30-36 s
    at load 4-5, and 16-18 s for 100x5x10 at load 1, docs/benchmarks.md)."""
    inst = parse_instance(layered(*size, 0, problem="traffic"))
    r = planner.solve(inst, "traffic", "exact.cpsat", time_limit=limit, seed=seed)
    assert r.status.value == "optimal", r.message
    assert r.details["phase1"] == "optimal" and r.details["phase2"].startswith("optimal")
    m = evaluate(inst, r.plan, "traffic")
    assert m["feasible"]
    assert m["inter_node_traffic"] == pytest.approx(r.objective, rel=TOL)
    assert r.bound == pytest.approx(r.objective, rel=TOL)
