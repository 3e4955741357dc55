"""Exact models for network, traffic, feasibility and admission against exhaustive search.

Tolerance: objectives agree to 1e-6 relative (absolute below 1). The default run checks
``N_FAST`` seeded instances per problem with all four methods; the slow tier checks ``N_SLOW``.
"""

from __future__ import annotations

import json
import math
import time

import pytest

import planner
from formulations._gen import layered, small_random
from formulations._rasmodel import Run
from helpers import REPO
from planner.model import InstanceError, TrafficEntry, parse_instance

EXACT = ["exact.cpsat", "exact.milp-cbc", "exact.milp-highs"]
PROBLEMS = ["network", "traffic", "feasibility", "admission"]
N_FAST = 45  # 60 until session 22 (the default suite took 598 s); the slow tier adds 400
N_SLOW = 400
TOL = 1e-6


def _agree(problem: str, seed: int) -> str:
    """Solve one instance with brute force and the three models; return its status."""
    inst = parse_instance(small_random(problem, seed))
    ref = planner.solve(inst, problem, "exact.bruteforce")
    assert ref.status.value in ("optimal", "infeasible"), (seed, ref.message)
    # feasibility and admission: the model itself (model="compact"), not the certificate that a
    # start plan placing everything already is (session 24; test_start_plan_certifies_feasibility)
    opts = {"model": "compact"} if problem in ("feasibility", "admission") else {}
    for meth in EXACT:
        r = planner.solve(inst, problem, meth, **opts)
        assert r.status == ref.status, (problem, seed, meth, r.status, ref.status, r.message)
        if ref.status.value == "optimal":
            assert r.metrics["feasible"], (problem, seed, meth, r.metrics["violations"])
            assert abs(r.objective - ref.objective) <= TOL * max(1.0, abs(ref.objective)), (problem, seed, meth, r.objective, ref.objective)
            # the model's own bound is the evaluator's objective when proven optimal
            assert abs(r.bound - r.objective) <= TOL * max(1.0, abs(r.objective)), (problem, seed, meth, r.bound, r.objective)
        else:
            assert "proven infeasible" in r.message
    return ref.status.value


@pytest.mark.parametrize("problem", PROBLEMS)
def test_models_agree_with_bruteforce(problem):
    statuses = [_agree(problem, seed) for seed in range(N_FAST)]
    if problem != "admission":  # admission always has the empty plan
        assert "optimal" in statuses and "infeasible" in statuses  # both kinds were exercised
    assert statuses.count("optimal") >= N_FAST // 3


@pytest.mark.slow
@pytest.mark.parametrize("problem", PROBLEMS)
def test_models_agree_with_bruteforce_many(problem):
    for seed in range(N_FAST, N_FAST + N_SLOW):
        _agree(problem, seed)


def _chain(par=(2, 3, 2), nodes=2, slots=2, cpu=400.0):
    comps = [{"id": f"c{i}", "kind": "spout" if i == 0 else "bolt", "parallelism": p} for i, p in enumerate(par)]
    streams = [{"source": f"c{i}", "target": f"c{i + 1}"} for i in range(len(par) - 1)]
    return {"topologies": [{"id": "t", "components": comps, "streams": streams}],
            "cluster": {"racks": [{"id": "r", "nodes": [{"id": f"n{i}", "slots": slots, "cpu": cpu} for i in range(nodes)]}]}}


# exact.milp-highs in the slow tier since session 38 (the default suite took 619 s in a clean clone on its machine)
@pytest.mark.parametrize("method", EXACT[:2] + [pytest.param(EXACT[2], marks=pytest.mark.slow)])
def test_time_limit_returns_feasible_plan_with_bound(method):
    # not proven within seconds by any back end (11-12 s at best; 46x8x4, used here until
    # session 12, is now proven within 3 s by some)
    inst = parse_instance(layered(100, 9, 10, 0))
    r = planner.solve(inst, "network", method, time_limit=3.0)
    assert r.seconds < 15
    assert r.status.value == "feasible", (r.status, r.message)
    assert r.metrics["feasible"]
    assert r.bound is not None and r.bound <= r.objective + 1e-9
    assert r.gap is not None and r.gap > 0
    assert "time limit" in r.message


@pytest.mark.parametrize("method", EXACT)
def test_a_very_short_limit_still_reports_a_bound(method):
    # at 0.3 s on 100 executors neither the configuration model nor the compact model reaches a
    # bound of its own (this machine, 2026-11-28; the 3 s test above met this case now and then
    # under load): the plan comes with the metric's floor 0 as its bound, said in bound_from
    inst = parse_instance(layered(100, 9, 10, 0))
    r = planner.solve(inst, "network", method, time_limit=0.3)
    assert r.status.value == "feasible", (r.status, r.message)
    assert r.metrics["feasible"] and r.objective > 0
    assert r.bound is not None and 0.0 <= r.bound <= r.objective + 1e-9
    assert r.gap is not None and r.gap > 0
    if r.bound == 0.0:
        assert "floor" in r.details["bound_from"] and r.gap == pytest.approx(1.0)


@pytest.mark.parametrize("method", EXACT)
def test_infeasible_is_explained(method):
    d = _chain(cpu=30.0)  # 7 executors x 10 points > 2 nodes x 30
    for problem in ("network", "feasibility", "traffic"):
        r = planner.solve(d, problem, method)
        assert r.status.value == "infeasible"
        assert "proven infeasible" in r.message and "total CPU demand 70 > capacity 60" in r.message


@pytest.mark.parametrize("method", EXACT)
def test_start_plan_certifies_feasibility(method):
    """A start plan that places everything (feasibility) or admits every topology (admission)
    is proven optimal by itself: no model is built; with model="compact" the model is solved
    and agrees."""
    seen = 0
    for seed in range(12):
        inst = parse_instance(small_random("feasibility", seed))
        ref = planner.solve(inst, "feasibility", "exact.bruteforce")
        for problem in ("feasibility", "admission"):
            r = planner.solve(inst, problem, method)
            if ref.status.value == "infeasible" and problem == "feasibility":
                assert r.status.value == "infeasible" and "proven infeasible" in r.message
                continue
            if r.details.get("plan_from") != "storm.ras":
                continue
            seen += 1
            assert r.status.value == "optimal" and r.metrics["feasible"], (seed, problem, r.message)
            assert r.metrics["executors_placed"] == sum(t.executor_count for t in inst.topologies)
            assert "variables" not in r.details  # no model was built
            full = planner.solve(inst, problem, method, model="compact")
            assert full.status.value == "optimal" and "plan_from" not in full.details
            assert full.objective == pytest.approx(r.objective)
    assert seen >= 4


def test_model_compact_that_cannot_finish_still_has_the_start_plans_proof(monkeypatch):
    """model="compact" asks for the model even when the start plan proves the answer. When that
    model is too large to build, or stops without a plan, the start plan is still the proof:
    optimal, not unknown with "storm.ras gave no plan to start from" (which it had given;
    largeCluster03 at 60 s, session 26)."""
    from formulations import _rasmodel
    from formulations._linmodel import Solution

    for seed in range(12):
        inst = parse_instance(small_random("feasibility", seed))
        if planner.solve(inst, "feasibility", "exact.cpsat").details.get("plan_from") == "storm.ras":
            break
    else:
        pytest.fail("no instance whose storm.ras plan certifies feasibility")
    with monkeypatch.context() as mp:
        mp.setattr(_rasmodel.Run, "compact_affordable", lambda self, pm, streams: False)
        r = planner.solve(inst, "feasibility", "exact.cpsat", model="compact")
    assert r.status.value == "optimal" and r.metrics["feasible"] and r.details["plan_from"] == "storm.ras"
    assert r.message.startswith("the model is too large to build in the time left; the start plan of storm.ras")
    with monkeypatch.context() as mp:
        mp.setattr(_rasmodel.Run, "solve", lambda self, pm: Solution("unknown", message="time limit reached while building the model"))
        r = planner.solve(inst, "feasibility", "exact.milp-cbc", model="compact")
    assert r.status.value == "optimal" and r.metrics["feasible"] and r.details["plan_from"] == "storm.ras"
    assert "time limit reached while building the model" in r.message


def test_count_bound_never_exceeds_the_optimum():
    """network.count_bound (the bound a stopped solve reports when no model reached one) is at
    most the proven optimum on random instances with heap, pins and incompatibilities, and
    above 0 on some of them (so the check has teeth)."""
    from formulations.network import count_bound
    from helpers import proven_small_network

    positive = 0
    for seed, inst, ref, pm in proven_small_network(60):
        b = count_bound(pm)
        assert 0.0 <= b <= ref.objective + 1e-9, (seed, b, ref.objective)
        positive += b > 1e-9
    assert positive >= 5, positive


def test_counting_proof_names_the_limit_before_any_model():
    d = _chain()
    d["topologies"][0]["components"][1]["resources"] = {"gpu.count": 1.0}
    for problem in ("network", "feasibility"):
        r = planner.solve(d, problem, "exact.cpsat")
        assert r.status.value == "infeasible" and r.details["proof"] == "counting"
        assert "no node can hold one executor of t/c1" in r.message
        assert "'gpu.count' 1 > the most any node has, 0" in r.message
    r = planner.solve(d, "admission", "exact.cpsat")  # admission: admitting no topology is a plan
    assert r.status.value == "optimal" and r.metrics["feasible"]


def test_traffic_counting_proof_a_topology_on_too_few_workers():
    """traffic: a topology asking one worker runs on one node, so its 70 CPU points cannot fit
    nodes of 60, though the cluster holds 120 in total. Every exact method says infeasible by
    counting at once, and brute force, which tries every plan, agrees; with two workers asked
    every method finds a plan the evaluator passes."""
    d = _chain(cpu=60.0)
    d["topologies"][0]["workers"] = 1
    for method in EXACT:
        r = planner.solve(d, "traffic", method)
        assert r.status.value == "infeasible" and r.details["proof"] == "counting", (method, r.message)
        assert "topology t runs on exactly min(W, E) = 1 worker(s), so on at most 1 node(s), whose CPU is at most 60; " \
               "its executors ask 70" in r.message, r.message
    assert planner.solve(d, "traffic", "exact.bruteforce").status.value == "infeasible"
    d["topologies"][0]["workers"] = 2
    for method in EXACT + ["exact.bruteforce"]:
        r = planner.solve(d, "traffic", method)
        assert r.status.value == "optimal" and r.metrics["feasible"], (method, r.message)


def _memory_pairs():
    """Three executors of 60 MB on two nodes of 100 MB: each node holds one, so no plan exists,
    though every count holds (total 180 <= 200 MB; each group fits on some node): counting
    proves nothing, the configuration model's LP does (three one-executor nodes needed)."""
    d = _chain(par=(2, 1), nodes=2, slots=2)
    for c in d["topologies"][0]["components"]:
        c["memory_onheap_mb"], c["memory_offheap_mb"] = 60.0, 0.0
    for n in d["cluster"]["racks"][0]["nodes"]:
        n["memory_mb"] = 100.0
    return d


@pytest.mark.parametrize("method", EXACT)
def test_configuration_lp_proves_infeasibility_without_the_compact_model(method, monkeypatch):
    d = _memory_pairs()
    r = planner.solve(d, "network", method)  # the compact model explains it
    assert r.status.value == "infeasible" and "node memory" in r.message, r.message
    assert r.details["configuration"]["model"] == "configuration"
    # no time to build the compact model: the configuration LP's proof stands alone
    monkeypatch.setattr(Run, "compact_affordable", lambda self, pm, streams: False)
    r = planner.solve(d, "network", method)
    assert r.status.value == "infeasible", r.message
    assert "proven infeasible by the configuration model's LP" in r.message
    assert "proof" not in r.details  # not the counting proof
    assert r.details["model"] == "configuration"


def test_infeasible_family_explanation():
    d = _chain(par=(3, 1), nodes=2, slots=2)
    d["topologies"][0]["components"][0]["incompatible"] = ["c0"]
    d["topologies"][0]["components"][0]["nodes"] = ["n0"]  # 3 executors, one per worker, 2 workers on n0
    r = planner.solve(d, "feasibility", "exact.cpsat")
    assert r.status.value == "infeasible"
    assert "t/c0" in r.message and "at most 2" in r.message


@pytest.mark.parametrize("method", EXACT)
def test_hint_seeds_the_model(method):
    inst = parse_instance(small_random("network", 3))
    ref = planner.solve(inst, "network", "exact.bruteforce")
    r = planner.solve(inst, "network", method, hint="exact.bruteforce")
    assert r.status == ref.status
    assert "hint from exact.bruteforce" in r.message
    if ref.status.value == "optimal":
        assert abs(r.objective - ref.objective) <= TOL * max(1, ref.objective)


@pytest.mark.slow  # slow tier since session 38 (2.5 s; the default suite took 619 s in a clean clone on its machine)
def test_hint_on_big_instance_gives_at_least_the_hint(monkeypatch):
    # compared with the hint's own result, the one the solve ran (with half its time), not with
    # a separate run of the hint method: one of 2 s gave 9.67 where the hint's 1.5 s run inside
    # the solve gave 9.83, and the solve returned that 9.83 (session 20's CI, a loaded machine)
    import planner.api

    inst = parse_instance(layered(30, 6, 4, 1))
    real, hints = planner.api.solve, []

    def spy(instance, problem, method, **kw):
        res = real(instance, problem, method, **kw)
        if method == "exact.milp-highs":
            hints.append(res)
        return res

    monkeypatch.setattr(planner.api, "solve", spy)
    r = real(inst, "network", "exact.cpsat", time_limit=3.0, hint="exact.milp-highs")
    assert len(hints) == 1 and hints[0].ok
    assert "hint from exact.milp-highs" in r.message
    assert r.ok and r.objective <= hints[0].objective + 1e-9


def test_symmetry_breaking_keeps_the_optimum():
    for seed in range(10):
        inst = parse_instance(small_random("traffic", seed))
        a = planner.solve(inst, "traffic", "exact.cpsat")
        b = planner.solve(inst, "traffic", "exact.cpsat", symmetry=False)
        assert a.status == b.status
        if a.ok:
            assert abs(a.objective - b.objective) <= TOL * max(1, a.objective)


def test_traffic_tie_breaker_is_inter_worker():
    # 2 nodes with 2 slots each, 4 workers required: inter-node traffic cannot tell which
    # node-level split is best at worker level; the tie-breaker must minimise inter-worker
    d = _chain(par=(2, 2), nodes=2, slots=2)
    d["topologies"][0]["workers"] = 2
    r = planner.solve(d, "traffic", "exact.cpsat")
    b = planner.solve(d, "traffic", "exact.bruteforce")
    assert r.status.value == "optimal"
    assert r.objective == pytest.approx(b.objective)
    assert r.metrics["inter_worker_traffic"] == pytest.approx(b.metrics["inter_worker_traffic"])


def test_measured_traffic_uses_per_executor_groups():
    d = _chain(par=(2, 2), nodes=2, slots=1)
    d["topologies"][0]["traffic"] = [
        {"source": "c0", "source_index": 0, "target": "c1", "target_index": 1, "rate": 5.0},
        {"source": "c0", "source_index": 1, "target": "c1", "target_index": 0, "rate": 1.0},
    ]
    d["topologies"][0]["workers"] = 2
    for m in EXACT + ["exact.bruteforce"]:
        r = planner.solve(d, "traffic", m)
        assert r.status.value == "optimal" and r.objective == pytest.approx(0.0), m


def test_bad_option_is_instance_error():
    with pytest.raises(InstanceError) as e:
        planner.solve(_chain(), "network", "exact.cpsat", foo=1)
    assert e.value.path == "options.foo"


# --- the configuration (column) models --------------------------------------------------------

def test_configuration_model_is_what_the_agreement_tests_exercise():
    # over the agreement tests' own seeds (the first 20 until session 31, at least 8 each; the
    # network node cut proves more of them before any model: 7 of those 20, 13 of the 45)
    for problem in ("network", "traffic"):
        used = 0
        for seed in range(N_FAST):
            inst = parse_instance(small_random(problem, seed))
            r = planner.solve(inst, problem, "exact.cpsat")
            if r.status.value == "optimal":
                used += r.details.get("model") == "configuration"
        assert used >= 10, (problem, used)


@pytest.mark.parametrize("problem,size", [("network", (8, 5, 2)), ("traffic", (12, 5, 3))])
def test_configuration_and_compact_models_agree(problem, size):
    inst = parse_instance(layered(*size, 0, problem=problem))
    a = planner.solve(inst, problem, "exact.cpsat", time_limit=60)
    b = planner.solve(inst, problem, "exact.cpsat", time_limit=60, model="compact")
    assert a.details.get("model") == "configuration" and "model" not in b.details
    assert a.status.value == b.status.value == "optimal"
    assert a.objective == pytest.approx(b.objective, rel=TOL, abs=TOL)


# exact.milp-highs in the slow tier since session 38 (the default suite took 619 s in a clean clone on its machine)
@pytest.mark.parametrize("method", ["exact.cpsat", pytest.param("exact.milp-highs", marks=pytest.mark.slow)])
def test_network_20_executors_4_nodes_proven(method):
    # the compact model leaves a gap here after minutes with every backend
    inst = parse_instance(layered(20, 5, 4, 0))
    r = planner.solve(inst, "network", method, time_limit=90)
    assert r.status.value == "optimal", r.message
    assert r.metrics["feasible"] and abs(r.bound - r.objective) <= TOL
    heur = planner.solve(inst, "network", "storm.ras")
    assert r.objective <= heur.objective + TOL
    short = planner.solve(inst, "network", "exact.cpsat", time_limit=2, model="compact")
    assert short.ok and short.bound <= r.objective + TOL <= short.objective + 2 * TOL


def test_traffic_46_executors_proven():
    inst = parse_instance(layered(46, 8, 4, 0, problem="traffic"))
    r = planner.solve(inst, "traffic", "exact.cpsat", time_limit=10)
    assert r.status.value == "optimal", r.message
    assert r.details["phase1_seconds"] < 10 and r.metrics["feasible"]
    assert r.bound == pytest.approx(r.objective)
    other = planner.solve(inst, "traffic", "exact.cpsat", time_limit=3, model="compact")
    assert other.ok and other.objective >= r.objective - TOL  # nothing beats a proven optimum


def test_cpsat_returns_within_its_time_limit_on_a_big_instance():
    import time

    inst = parse_instance(layered(150, 10, 32, 0))
    t = time.perf_counter()
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=1.0)
    dt = time.perf_counter() - t
    # The behaviour checked is that the limit is honoured at all (with 8 s this instance is
    # still far from proven: 43.65 against a bound of 7.91). The slack covers model building on
    # a loaded 2-core machine, where 1.5 s was exceeded (2.2 s at load 8) with no code change.
    assert dt < 3.0, dt
    assert r.status.value in ("feasible", "unknown", "optimal")
    if r.ok:
        assert r.metrics["feasible"]


def test_model_option_is_checked():
    with pytest.raises(InstanceError) as e:
        planner.solve(_chain(), "network", "exact.cpsat", model="pattern")
    assert e.value.path == "options.model"


# --- exact pricing by table (formulations/_nodetable.py) ----------------------------------------

def _network_pm(inst):
    from formulations._rasmodel import PlacementModel, component_groups

    groups = [g for ti, t in enumerate(inst.topologies) for g in component_groups(ti, t)]
    return PlacementModel(inst, "network", groups, sense="min", symmetry=True, build=False)


def _best_split(y, pats, co, slots):
    """Best worker-level co-location of count vector y split into <= slots worker contents
    (plain recursion over contents in non-increasing order: an independent reference)."""
    import functools

    pv = [tuple(p) for p in pats]

    @functools.lru_cache(maxsize=None)
    def rec(rest, left, start):
        if not any(rest):
            return 0.0
        best = float("-inf")
        if left == 0:
            return best
        for i in range(start, len(pv)):
            if all(q <= r for q, r in zip(pv[i], rest)):
                nxt = tuple(r - q for q, r in zip(pv[i], rest))
                best = max(best, co(pv[i]) + rec(nxt, left - 1, i))
        return best

    return rec(tuple(y), slots, 0)


def test_node_table_best_split_matches_recursion():
    import numpy as np

    from formulations import _patterns as P
    from formulations._nodetable import NodeTable

    inst = parse_instance(layered(16, 5, 4, 0))
    pm = _network_pm(inst)
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    edges, K = info["edges"], len(pm.groups)
    table = NodeTable(pm, 0, edges)
    assert table.ok
    pats = []
    for pat in P.worker_patterns(pm, 0, 0):
        v = [0] * K
        for k, q in pat:
            v[k] = q
        pats.append(v)

    def co(v):
        return sum(w * v[a] * v[b] for (a, b), w in edges.items())

    rng = np.random.default_rng(0)
    rows = list(rng.choice(len(table.Y), size=min(60, len(table.Y)), replace=False)) + [int(np.argmax(table.value))]
    for i in rows:
        y = [int(q) for q in table.Y[i]]
        ref = _best_split(y, pats, co, len(pm.nodes[0].slots))
        if ref == float("-inf"):
            assert not table.sel[i]
            continue
        assert table.sel[i]
        assert table.value[i] == pytest.approx(co(y) + ref, abs=1e-9)
        split = table.split(int(i))  # a real split: contents sum to y, each is a worker content
        assert len(split) <= len(pm.nodes[0].slots)
        tot = [0] * K
        for w in split:
            for k, q in w:
                tot[k] += q
        assert tot == y and sum(co([dict(w).get(k, 0) for k in range(K)]) for w in split) == pytest.approx(ref)


def test_table_pricing_matches_cpsat_pricer():
    """Max reduced cost of a node and a rack family under random duals: table == CP-SAT."""
    import numpy as np

    from formulations import _patterns as P

    inst = parse_instance(layered(12, 5, 4, 0))
    pm = _network_pm(inst)
    with_t, _, _ = P.build_network(pm, None, 1, tables=True)
    pm2 = _network_pm(inst)
    without, _, _ = P.build_network(pm2, None, 1, tables=False)
    assert all(f.table is not None for f in with_t.families)
    assert all(f.table is None for f in without.families)
    rng = np.random.default_rng(1)
    for _ in range(4):
        duals = {r: float(rng.uniform(-0.3, 0.6)) for r in with_t.rows}
        for fi in range(len(with_t.families)):
            a, cols, ok = with_t.price(fi, duals)
            b, cp_cols, ok2 = without.price(fi, duals, quick=30.0)
            assert ok and ok2
            # CP-SAT's bound adds its worst coefficient-rounding error; its best column is exact
            assert max(without.rc(c, duals) for c in cp_cols) <= a + 1e-9 <= b + 2e-9
            assert b - a <= 1e-4
            # the columns returned carry their true value and reduced cost
            assert with_t.rc(cols[0], duals) == pytest.approx(a, abs=1e-9)


@pytest.mark.slow
def test_network_30_executors_6_components_proven():
    inst = parse_instance(layered(30, 6, 4, 0))
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=120)
    assert r.status.value == "optimal", r.message
    assert r.metrics["feasible"] and abs(r.bound - r.objective) <= TOL
    heur = planner.solve(inst, "network", "storm.ras")
    assert r.objective <= heur.objective + TOL


# --- sparse node table, vectorised rack table, two-rack search (branch net-table) ----------------

@pytest.mark.parametrize("size", [(20, 5, 4), (30, 6, 4)])
def test_sparse_node_table_matches_dense(size):
    """W over the feasible vectors only (default) == W on the dense box (the first DP)."""
    import numpy as np

    from formulations import _patterns as P
    from formulations._nodetable import NodeTable

    pm = _network_pm(parse_instance(layered(*size, 0)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    sparse = NodeTable(pm, 0, info["edges"])
    dense = NodeTable(pm, 0, info["edges"], dense=True)
    assert sparse.ok and dense.ok and not sparse.dense and dense.dense
    assert (sparse.Y == dense.Y).all() and (sparse.sel == dense.sel).all()
    assert np.allclose(sparse.value[sparse.sel], dense.value[dense.sel], atol=1e-9)
    # the split read back from the sparse levels has the table's value
    K = len(pm.groups)
    A = np.zeros((K, K))
    for (a, b), w in info["edges"].items():
        A[a, b] += w
        A[b, a] += w
    for i in np.random.default_rng(2).choice(len(sparse.Y), 40, replace=False):
        split = sparse.split(int(i))
        ws = [np.array([dict(w).get(k, 0) for k in range(K)], dtype=float) for w in split]
        y = sparse.Y[i].astype(float)
        assert np.allclose(sum(ws), y)
        assert 0.5 * y @ A @ y + sum(0.5 * w @ A @ w for w in ws) == pytest.approx(sparse.value[i], abs=1e-9)


def test_rack_table_is_every_rack_content():
    """The vectorised rack table == every z <= min(s, rack caps) within the rack's CPU and
    memory, found by a plain product loop, with value co(z)."""
    import itertools

    from formulations._nodetable import RackTable

    pm = _network_pm(parse_instance(layered(12, 5, 4, 0)))
    G = pm.groups
    edges = {(0, 1): 0.5, (1, 3): 0.25, (2, 4): 1.0}
    rt = RackTable(pm, 0, edges, 0, ("conv", "rack", 0))
    assert rt.ok
    nodes = [ni for ni in range(len(pm.nodes)) if pm.node_rack[ni] == 0]
    caps = [min(g.size, sum(pm.node_cap(g, ni) for ni in nodes)) for g in G]
    cpu = sum(pm.nodes[ni].cpu for ni in nodes)
    mem = sum(pm.nodes[ni].memory_mb for ni in nodes)
    want = {}
    for z in itertools.product(*(range(c + 1) for c in caps)):
        if sum(q * g.comp.cpu for q, g in zip(z, G)) <= cpu + 1e-9 and sum(q * g.comp.memory_mb for q, g in zip(z, G)) <= mem + 1e-9:
            want[z] = sum(w * z[a] * z[b] for (a, b), w in edges.items())
    got = {tuple(int(q) for q in z): float(v) for z, v in zip(rt.Z, rt.val)}
    assert got.keys() == want.keys() and all(got[z] == pytest.approx(want[z]) for z in want)
    assert (rt.rows(rt.Z[::7]) == list(range(0, len(rt.Z), 7))).all()


def _two_rack_vs_enumeration(size, monkeypatch):
    from formulations import _patterns as P

    inst = parse_instance(layered(*size, 0))
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=60)
    assert "two_rack_splits" in r.details  # the search ran
    with monkeypatch.context() as m:
        m.setattr(P, "_two_rack_search", lambda *a, **k: None)  # the rack-content enumeration instead
        old = planner.solve(inst, "network", "exact.cpsat", time_limit=60)
    assert "two_rack_splits" not in old.details
    assert r.status.value == old.status.value == "optimal"
    assert r.objective == pytest.approx(old.objective, abs=TOL) and r.metrics["feasible"]
    assert r.bound == pytest.approx(r.objective, abs=TOL)


@pytest.mark.parametrize("chunk", [1 << 20, 1, 7, 60])
def test_rack_table_chunks_agree(chunk, monkeypatch):
    """The rack table built in chunks of the last axes (prefix constant per chunk, value from
    inner, cross and prefix terms) == the one built in one piece, whatever the chunk size."""
    import numpy as np

    import formulations._nodetable as NT

    pm = _network_pm(parse_instance(layered(20, 5, 4, 0)))
    edges = {(0, 1): 0.5, (1, 3): 0.25, (2, 4): 1.0, (0, 4): 0.125, (3, 4): 2.0}
    G = pm.groups
    nodes = [ni for ni in range(len(pm.nodes)) if pm.node_rack[ni] == 0]
    caps = [min(g.size, sum(pm.node_cap(g, ni) for ni in nodes)) for g in G]
    cpu = int(sum(pm.nodes[ni].cpu for ni in nodes) * 1000)
    mem = int(sum(pm.nodes[ni].memory_mb for ni in nodes) * 1000)
    ref = NT.RackTable._contents(pm, caps, cpu, mem, edges, 10**7)
    monkeypatch.setattr(NT, "RACK_CHUNK", chunk)
    got = NT.RackTable._contents(pm, caps, cpu, mem, edges, 10**7)
    assert len(ref[0]) > 100 and (got[0] == ref[0]).all() and (got[2] == ref[2]).all()
    assert np.allclose(got[1], ref[1], atol=1e-9)
    want = sum(w * ref[0][:, a].astype(float) * ref[0][:, b] for (a, b), w in edges.items())
    assert np.allclose(ref[1], want, atol=1e-9)


# (20, 5, 4) in the slow tier since session 38 (2.6-2.8 s each; the default suite took 778-788 s on its machine)
@pytest.mark.parametrize("size", [(16, 5, 4), pytest.param((20, 5, 4), marks=pytest.mark.slow)])
def test_two_rack_search_agrees_with_enumeration(size, monkeypatch):
    _two_rack_vs_enumeration(size, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("size", [(24, 6, 4), (30, 6, 4)])
def test_two_rack_search_agrees_with_enumeration_bigger(size, monkeypatch):
    _two_rack_vs_enumeration(size, monkeypatch)


def test_rack_dual_term_bounds_every_rack_content():
    """mu . z + rack_dual_term(mu) >= the proven node + worker co-location of a rack holding z,
    for random multipliers and for the single-rack LP's own duals (where it is the LP bound)."""
    import numpy as np

    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(16, 5, 4, 0)))
    pat, info, _ = P.build_network(pm, None, 1)
    K = len(pm.groups)
    rt = next(f.table for f in pat.families if f.name.startswith("rack"))
    rng = np.random.default_rng(3)
    tight = 0
    for r in rng.choice(len(rt.Z), 12, replace=False):
        z = {k: int(q) for k, q in enumerate(rt.Z[r]) if q}
        sub = P._rack_sub(pm, 0, z, info["edges"], None, None)
        lp, duals, _ = sub.generate()
        o = P.run_patterns(P._rack_sub(pm, 0, z, info["edges"], None, None), "cpsat", 1)
        if o["status"] == "infeasible":
            continue
        assert o["status"] == "optimal"
        zv = rt.Z[r].astype(float)
        mus = [rng.uniform(-1, 1, K) for _ in range(3)] + [np.array([duals.get(("cover", k), 0.0) for k in range(K)])]
        bounds = [float(mu @ zv) + P.rack_dual_term(pm, 0, mu) for mu in mus]
        assert min(bounds) >= o["value"] - 1e-7
        assert bounds[-1] >= lp - 1e-7  # a relaxation of that LP (y <= z dropped)
        # absent groups priced out: then the LP's duals give its bound
        mu = mus[-1] + np.where(zv == 0, 1e3, 0.0)
        tight += float(mu @ zv) + P.rack_dual_term(pm, 0, mu) <= lp + 1e-6
    assert tight >= 6


# --- exact single-rack solve by max-plus convolution of node tables (branch net-rack) -----------

def _rack_contents(size, n, seed):
    import numpy as np

    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(*size, 0)))
    pat, info, _ = P.build_network(pm, None, 1)
    rt = next(f.table for f in pat.families if f.name.startswith("rack"))
    rows = np.random.default_rng(seed).choice(len(rt.Z), n, replace=False)
    return pm, info, [{k: int(q) for k, q in enumerate(rt.Z[r]) if q} for r in rows]


@pytest.mark.parametrize("size,seed", [((16, 5, 4), 0), ((30, 6, 4), 2), ((40, 6, 6), 1)])
def test_rack_convolution_agrees_with_configuration_model(size, seed):
    """rack_by_convolution == the single-rack configuration model (run_patterns, proven) on
    random rack contents; its columns sum to z, fit the rack's nodes and carry their value."""
    from formulations import _patterns as P
    from formulations._nodetable import rack_by_convolution

    pm, info, zs = _rack_contents(size, 12, seed)
    solved = 0
    for z in zs:
        sub = P._rack_sub(pm, 0, z, info["edges"], None, None)
        ub, duals, maxrc = sub.generate()
        ref = P.run_patterns(P._rack_sub(pm, 0, z, info["edges"], None, None), "cpsat", 1)
        if ub == float("-inf") or ref["status"] == "infeasible":
            assert ref["status"] == "infeasible" and (ub == float("-inf") or
                                                      rack_by_convolution(sub, ub, duals, maxrc, z) is None)
            continue
        assert ref["status"] == "optimal"
        got = rack_by_convolution(sub, ub, duals, maxrc, z)
        assert got not in (None, "incomplete")
        value, chosen = got
        assert value == pytest.approx(ref["value"], abs=1e-9)
        tot, nodes, val = {}, 0, 0.0
        for name, col, cnt in chosen:
            nodes += cnt
            val += cnt * col.value
            for r, x in col.coefs.items():
                if r[0] == "cover":
                    tot[r[1]] = tot.get(r[1], 0) + cnt * int(x)
        assert {k: q for k, q in tot.items() if q} == z
        assert nodes == sum(f.count for f in sub.families) and val == pytest.approx(value)
        solved += 1
    assert solved >= 8


def test_rack_convolution_matches_brute_force_over_table_rows():
    """On a 2-rack 12x5x4 instance (2 nodes per rack): the best pair of node-table rows summing
    to z, by a plain double loop, == rack_by_convolution, for every rack content."""
    import itertools

    from formulations import _patterns as P
    from formulations._nodetable import rack_by_convolution

    pm = _network_pm(parse_instance(layered(12, 5, 4, 0)))
    pat, info, _ = P.build_network(pm, None, 1)
    rt = next(f.table for f in pat.families if f.name.startswith("rack"))
    t = next(f.table for f in pat.families if f.name.startswith("node")).t
    rows = [(tuple(int(q) for q in t.Y[i]), float(t.value[i])) for i in range(len(t.Y)) if t.sel[i]]
    best = {}
    for (a, va), (b, vb) in itertools.product(rows, rows):
        s = tuple(x + y for x, y in zip(a, b))
        best[s] = max(best.get(s, float("-inf")), va + vb)
    checked = 0
    for zr in rt.Z:
        z = {k: int(q) for k, q in enumerate(zr) if q}
        sub = P._rack_sub(pm, 0, z, info["edges"], None, None)
        assert [f.count for f in sub.families] == [2]
        ub, duals, maxrc = sub.generate()
        key = tuple(int(q) for q in zr)
        if ub == float("-inf"):
            assert key not in best
            continue
        got = rack_by_convolution(sub, ub, duals, maxrc, z)
        if key not in best:
            assert got is None
        else:
            assert got[0] == pytest.approx(best[key], abs=1e-9)
        checked += 1
    assert checked >= 100


def test_splits_above_is_every_split_above_the_threshold():
    """_splits_above == a plain loop over the box: every z with lo <= z <= hi, both racks within
    their CPU and memory, and const + lin . z + sum_e w (z_a z_b + (s_a - z_a)(s_b - z_b)) > thr."""
    import itertools

    import numpy as np

    from formulations import _patterns as P

    rng = np.random.default_rng(5)
    s = np.array([3, 4, 2, 5, 3])
    lo, hi = np.array([0, 1, 0, 0, 1]), np.array([3, 4, 2, 4, 3])
    edges = {(0, 1): 0.5, (1, 2): 0.25, (2, 3): 1.0, (0, 4): 0.75, (3, 4): 0.125}
    dem = np.array([[100, 250, 300, 50, 120], [10, 20, 5, 40, 30]])
    cap1, cap2 = [1500, 220], [1400, 200]
    for trial in range(4):
        lin = rng.uniform(-2, 2, 5)
        vals = {}
        for z in itertools.product(*(range(a, b + 1) for a, b in zip(lo, hi))):
            z = np.array(z)
            if (dem @ z <= cap1).all() and (dem @ (s - z) <= cap2).all():
                vals[tuple(z)] = 1.5 + lin @ z + sum(w * (z[a] * z[b] + (s[a] - z[a]) * (s[b] - z[b])) for (a, b), w in edges.items())
        thr = float(np.quantile(list(vals.values()), [0.5, 0.8, 0.95, 0.0][trial])) - (1e-9 if trial == 3 else 0)
        Z, F = P._splits_above(s, lo, hi, lin, edges, 1.5, thr, dem, cap1, cap2)
        got = {tuple(int(q) for q in z): f for z, f in zip(Z, F)}
        want = {z: v for z, v in vals.items() if v > thr}
        assert got.keys() == want.keys() and len(want) > 0
        assert all(abs(got[z] - want[z]) <= 1e-9 for z in want)


# slow tier since session 38 (the default suite took 619 s in a clean clone on its machine);
# test_two_rack_search_agrees_with_enumeration[size0] stays in the default tier
@pytest.mark.slow
@pytest.mark.parametrize("size", [(16, 5, 4), (20, 5, 4)])
def test_two_rack_search_without_rack_table_agrees(size, monkeypatch):
    """The two-rack search fed by _splits_above (as for rack boxes over TWO_RACK_TABLE_LIMIT)
    proves the same optimum as the one scanning the rack table and as the enumeration."""
    from formulations import _patterns as P

    inst = parse_instance(layered(*size, 0))
    ref = planner.solve(inst, "network", "exact.cpsat", time_limit=60)
    monkeypatch.setattr(P, "TWO_RACK_TABLE_LIMIT", 0)
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=60)
    assert r.details.get("two_rack_setup") == "splits above the incumbent"
    assert ref.details.get("two_rack_setup") == "rack table"
    assert r.status.value == ref.status.value == "optimal" and r.metrics["feasible"]
    assert r.objective == pytest.approx(ref.objective, abs=TOL) and r.bound == pytest.approx(r.objective, abs=TOL)


@pytest.mark.slow
def test_network_100_executors_8_components_10_nodes_proven():
    """Two racks of 5 nodes, rack box 8.8e8: splits generated above the incumbent, racks
    solved by convolution; proven, the plan passes the evaluator, no worse than storm.ras."""
    inst = parse_instance(layered(100, 8, 10, 0))
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=120)
    assert r.status.value == "optimal", (r.message, r.details)
    assert r.details.get("two_rack_setup") == "splits above the incumbent"
    assert r.details.get("rack_convolutions", 0) >= 1
    assert r.metrics["feasible"] and abs(r.bound - r.objective) <= TOL
    heur = planner.solve(inst, "network", "storm.ras")
    assert r.objective <= heur.objective + TOL


def test_rack_convolution_with_two_node_classes_and_its_cap():
    """A rack of two different nodes (two tables, one node each): the convolution agrees with
    the single-rack configuration model; over its cap of partial sums it says "incomplete"."""
    import numpy as np

    from formulations import _patterns as P
    from formulations._nodetable import rack_by_convolution

    d = layered(20, 5, 6, 0)
    for rack in d["cluster"]["racks"]:
        rack["nodes"][0]["cpu"] = rack["nodes"][0]["cpu"] * 1.5
        rack["nodes"][0]["memory_mb"] = rack["nodes"][0]["memory_mb"] * 1.5
    pm = _network_pm(parse_instance(d))
    pat, info, _ = P.build_network(pm, None, 1)
    rt = next(f.table for f in pat.families if f.name.startswith("rack"))
    solved = incomplete = 0
    for r in np.random.default_rng(4).choice(len(rt.Z), 10, replace=False):
        z = {k: int(q) for k, q in enumerate(rt.Z[r]) if q}
        sub = P._rack_sub(pm, 0, z, info["edges"], None, None)
        assert len(sub.families) == 2 and all(f.table is not None for f in sub.families)
        ub, duals, maxrc = sub.generate()
        ref = P.run_patterns(P._rack_sub(pm, 0, z, info["edges"], None, None), "cpsat", 1)
        if ub == float("-inf") or ref["status"] == "infeasible":
            assert ref["status"] == "infeasible"
            continue
        got = rack_by_convolution(sub, ub, duals, maxrc, z)
        assert ref["status"] == "optimal" and got[0] == pytest.approx(ref["value"], abs=1e-9)
        solved += 1
        if sum(f.count for f in sub.families) >= 3:
            incomplete += rack_by_convolution(sub, ub, duals, maxrc, z, cap=0, delta0=10 * ub) == "incomplete"
    assert solved >= 6 and incomplete >= 1


# --- branch net-ls: local search, exact rack pricing, cut-off convolution, table by gathers ----

def _edges_const(pm):
    from formulations import _patterns as P

    _, info, const = P.build_network(pm, None, 1, tables=False)
    return info["edges"], const


def test_worker_search_gains_are_exact():
    """The move and swap gains of WorkerSearch (S[w2,g] - S[w1,g], and the swap formula with
    -2 A[g,h] d(w1,w2)) equal the change of the co-location value, on random moves."""
    import random

    import numpy as np

    from formulations._networkls import WorkerSearch

    pm = _network_pm(parse_instance(layered(30, 6, 4, 0)))
    edges, _ = _edges_const(pm)
    ws = WorkerSearch(pm, edges)
    X = ws.greedy()
    assert X is not None and ws.feasible(X)
    rng = random.Random(1)
    dl = ws._diff_levels(np.arange(ws.Wn))  # every worker: dl[w1, w2]
    checked = 0
    for _ in range(400):
        Y = ws.node_sums(X)
        S = ws._scores(X, Y)
        w1, w2 = rng.randrange(ws.Wn), rng.randrange(ws.Wn)
        gs = np.flatnonzero(X[w1] > 0)
        hs = np.flatnonzero(X[w2] > 0)
        if w1 == w2 or not len(gs):
            continue
        g = int(gs[rng.randrange(len(gs))])
        Xm = X.copy()
        Xm[w1, g] -= 1
        Xm[w2, g] += 1
        assert ws.value(Xm) - ws.value(X) == pytest.approx(S[w2, g] - S[w1, g], abs=1e-9)
        hs = [int(h) for h in hs if h != g]
        if hs:
            h = hs[rng.randrange(len(hs))]
            Xs = Xm.copy()
            Xs[w2, h] -= 1
            Xs[w1, h] += 1
            want = S[w2, g] - S[w1, g] + S[w1, h] - S[w2, h] - 2 * ws.A[g, h] * dl[w1, w2]
            assert ws.value(Xs) - ws.value(X) == pytest.approx(want, abs=1e-9)
        checked += 1
        if ws.feasible(Xm):
            X = Xm
    assert checked > 100


# (30, 6, 4) in the slow tier since session 38 (2.3 s)
@pytest.mark.parametrize("size", [(20, 5, 4)] + [pytest.param(s, marks=pytest.mark.slow) for s in ((30, 6, 4), (40, 6, 6))])
def test_worker_search_plans_pass_the_evaluator(size):
    """The local search's plan is feasible for the evaluator, its metric is what the search
    computed, no better than the proven optimum and no worse than the storm.ras start."""
    from formulations._networkls import search_network

    inst = parse_instance(layered(*size, 0))
    pm = _network_pm(inst)
    edges, const = _edges_const(pm)
    ras = planner.solve(inst, "network", "storm.ras")
    value, plan = search_network(pm, edges, [ras.plan], 1.0)
    m = planner.evaluate(inst, plan, "network")
    assert m["feasible"], m["violations"]
    assert m["network_metric"] == pytest.approx(const - value, abs=1e-9)
    assert m["network_metric"] <= ras.objective + TOL
    opt = planner.solve(inst, "network", "exact.cpsat", time_limit=60)
    assert opt.status.value == "optimal" and m["network_metric"] >= opt.objective - TOL


@pytest.mark.parametrize("seed", range(8))
def test_worker_search_respects_every_limit(seed):
    """On small random instances (pins, max_per_node, incompatible pairs, several
    topologies, tight heap), every plan the search returns passes the evaluator."""
    from formulations import _patterns as P
    from formulations._networkls import search_network

    inst = parse_instance(small_random("network", 1000 + seed))
    pm = _network_pm(inst)
    if P.applicable(pm, "network") is not None:
        pytest.skip("configuration model not applicable")
    edges, const = _edges_const(pm)
    found = search_network(pm, edges, [], 0.2, seed=seed)
    ref = planner.solve(inst, "network", "exact.bruteforce")
    if found is None:  # only where no plan exists (the greedy fills must find one otherwise)
        assert ref.status.value == "infeasible", (seed, ref.status)
        return
    m = planner.evaluate(inst, found[1], "network")
    assert m["feasible"], m["violations"]
    assert m["network_metric"] == pytest.approx(const - found[0], abs=1e-9)
    assert ref.status.value == "optimal" and m["network_metric"] >= ref.objective - TOL


@pytest.mark.slow  # slow tier since session 38 (6 s; the default suite took 778-788 s on its machine)
def test_worker_search_fills_stop_at_the_deadline_and_big_clusters_are_not_searched(monkeypatch):
    """A greedy fill past its deadline gives up (Storm's largeCluster01, 24,403 executors on
    65,600 workers, spent minutes in one under a 60 s limit); the search is not run past
    SEARCH_WORK_MAX workers x groups^2, and the network solve says so and keeps its plan."""
    import time

    from formulations import _networkls as NL
    from formulations._trafficls import NodeSearch

    inst = parse_instance(layered(30, 6, 4, 0))
    pm = _network_pm(inst)
    edges, _ = _edges_const(pm)
    ws = NL.WorkerSearch(pm, edges)
    assert ws.greedy(deadline=time.monotonic() - 1.0) is None
    X = ws.greedy(deadline=time.monotonic() + 60.0)
    assert X is not None and ws.feasible(X)
    pairs = {(a, b): w for (a, b), w in edges.items()}
    ns = NodeSearch(pm, pairs)
    assert ns.greedy(deadline=time.monotonic() - 1.0) is None and ns.greedy() is not None

    size = len(pm.workers) * len(pm.groups) ** 2
    monkeypatch.setattr(NL, "SEARCH_WORK_MAX", size - 1)
    assert NL.too_large(pm) and NL.search_network(pm, edges, [], 5.0) is None
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=30)
    assert r.ok and r.metrics["feasible"], r.message
    det = r.details.get("configuration", r.details)  # the configuration model's details
    assert det["local_search"].startswith("not run: "), r.details
    monkeypatch.setattr(NL, "SEARCH_WORK_MAX", size)
    assert not NL.too_large(pm) and NL.search_network(pm, edges, [], 5.0) is not None


def test_worker_search_budget_of_kicks_does_not_depend_on_the_clock(monkeypatch):
    """With a budget of kicks, the search is the same on a slower machine: every descent slowed
    down by 20 ms gives the same plan as the search at full speed, after exactly that many kicks
    (the seconds budget, 60 s here, is a cap that neither reaches)."""
    from formulations import _networkls as NL

    inst = parse_instance(layered(30, 6, 4, 0))
    pm = _network_pm(inst)
    edges, _ = _edges_const(pm)
    ras = planner.solve(inst, "network", "storm.ras")
    made = []
    kick = NL.WorkerSearch.kick
    monkeypatch.setattr(NL.WorkerSearch, "kick", lambda self, *a: made.append(1) or kick(self, *a))
    fast = NL.search_network(pm, edges, [ras.plan], 60.0, seed=3, kicks=25)
    assert len(made) == 25
    descend = NL.WorkerSearch.descend

    def slow(self, X, deadline):
        time.sleep(0.02)
        return descend(self, X, deadline)

    monkeypatch.setattr(NL.WorkerSearch, "descend", slow)
    made.clear()
    slowed = NL.search_network(pm, edges, [ras.plan], 60.0, seed=3, kicks=25)
    assert len(made) == 25
    assert slowed[0] == fast[0]
    key = lambda plan: sorted((p.component, p.executor, p.node, p.slot) for p in plan.placements)  # noqa: E731
    assert key(slowed[1]) == key(fast[1])


def test_network_local_search_budget_is_kicks(monkeypatch):
    """exact.* network hands the local search a budget of kicks (LS_KICKS_PER x executors x
    nodes within the bounds) and a seconds cap of at most a tenth of the time limit."""
    from formulations import _networkls as NL
    from formulations import network as nw

    seen = {}
    real = NL.search_network
    monkeypatch.setattr(NL, "search_network", lambda *a, **k: seen.update(budget=a[3], kicks=k["kicks"]) or real(*a, **k))
    inst = parse_instance(layered(30, 6, 4, 0))
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=2)
    assert r.metrics["feasible"]
    nodes = sum(len(rk.nodes) for rk in inst.cluster.racks)
    want = min(nw.LS_KICKS_MAX, max(nw.LS_KICKS_MIN, round(nw.LS_KICKS_PER * 30 * nodes)))
    assert seen["kicks"] == want == r.details.get("configuration", r.details)["local_search_kick_budget"]
    assert 0 < seen["budget"] <= 0.2


@pytest.mark.slow  # slow tier since session 38 (14-17 s; the default suite took 778-788 s on its machine)
def test_network_local_search_runs_two_searches_and_keeps_the_better(monkeypatch):
    """Generator seed 1's 100x9x10: the search with seed 0 ends at 33.37, where the two-rack
    split search gives up and the solve ended feasible at 60 s (sessions 22-27); with seed 1
    it ends at 32.01. exact.cpsat runs nw.LS_RESTARTS = 2 searches (seeds 0 and 1), keeps the
    better, and proves the optimum 31.88 (in 6-8 s here, session 28)."""
    from formulations import _networkls as NL
    from formulations import network as nw

    seeds = []
    real = NL.search_network
    monkeypatch.setattr(NL, "search_network", lambda *a, **k: seeds.append(k["seed"]) or real(*a, **k))
    inst = parse_instance(layered(100, 9, 10, 1))
    # the searches' seconds are a cap only, 1/10 of the limit: at 60 s (6 s) a clean-clone CI run
    # on a slow machine (the suite 1.8 times its usual time) cut seed 1's search short at 32.09;
    # at 100 s the cap is LS_CAP_PER's 10 s and the kicks decide, as the test means
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=100)
    assert seeds == list(range(nw.LS_RESTARTS)) == [0, 1]
    det = r.details.get("configuration", r.details)
    assert det["local_search_objective"] == pytest.approx(32.01, abs=1e-9), det  # seed 0 alone: 33.37
    assert r.status.value == "optimal" and r.objective == pytest.approx(31.88, abs=5e-3), (r.status, r.message)


def test_local_search_alone_is_never_optimal(monkeypatch):
    """With no bound (column generation stubbed out) and no compact model, the method returns
    the local search's plan (or one the worker cut's grouping made better) as feasible, never
    optimal: no optimality claim from the searches."""
    from formulations import _patterns as P
    from formulations import _rasmodel

    inst = parse_instance(layered(30, 6, 4, 0))
    monkeypatch.setattr(P.PatternModel, "generate", lambda self: (None, None, None))
    monkeypatch.setattr(_rasmodel.Run, "compact_affordable", lambda self, pm, streams: False)
    # with the compact model too large, the worker cut not proven goes on to 90 % of the limit: 5 s
    # (10 s until session 38, the same plan, 7.57, at both on its machine)
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=5)
    assert r.status.value == "feasible" and r.metrics["feasible"]
    assert r.objective <= r.details["local_search_objective"] + 1e-9
    assert r.objective <= planner.solve(inst, "network", "storm.ras").objective + TOL


@pytest.mark.parametrize("size", [(16, 5, 4), (20, 5, 4)])
def test_rack_exact_pricing_matches_a_loop_over_the_box(size):
    """RackHeuristic.exact (no solver) == the best reduced cost over every rack content within
    the rack's caps, CPU and memory (a loop over the box), for random duals."""
    import itertools

    import numpy as np

    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(*size, 0)))
    pat, info, _ = P.build_network(pm, None, 1, tables=False)
    fi = next(i for i, f in enumerate(pat.families) if f.name.startswith("rack"))
    rh = P.RackHeuristic(pm, info["racks"][0], info["edges"], fi, pat.families[fi].conv_row)
    K = len(pm.groups)
    box = [z for z in itertools.product(*(range(c + 1) for c in rh.cap))
           if (rh.dem @ np.array(z) <= rh.lim).all()]
    Z = np.array(box, dtype=float)
    rng = np.random.default_rng(7)
    for _ in range(6):
        duals = {("cover", k): rng.uniform(0, 1.5) for k in range(K)}
        duals.update({("link", rh.ri, k): rng.uniform(-0.5, 0.5) for k in range(K)})
        duals[rh.conv] = rng.uniform(-2, 2)
        pi = np.array([duals[("cover", k)] - duals[("link", rh.ri, k)] for k in range(K)])
        rc = 0.5 * np.einsum("sk,kl,sl->s", Z, rh.A, Z) - Z @ pi - duals[rh.conv]
        for order in (0, 1):  # the group order first, and the cap order first
            rh.order = order
            got = rh.exact(duals)
            assert got is not None
            assert got[0] == pytest.approx(rc.max(), abs=1e-7) and got[0] >= rc.max()
            assert max(pat.rc(c, duals) for c in got[1]) == pytest.approx(rc.max(), abs=1e-7)


def test_splits_above_one_rack_is_every_content_above_the_threshold():
    """_splits_above(both=False) == a plain loop: every z in [lo, hi] within cap1 with
    const + lin . z + sum_e w z_a z_b > thr (the exact rack pricing's search)."""
    import itertools

    import numpy as np

    from formulations import _patterns as P

    rng = np.random.default_rng(11)
    s = np.array([3, 4, 2, 5, 3, 2])
    lo, hi = np.zeros(6, dtype=int), s
    edges = {(0, 1): 0.5, (1, 2): 0.25, (2, 3): 1.0, (0, 4): 0.75, (3, 4): 0.125, (4, 5): 0.3}
    dem = np.array([[100, 250, 300, 50, 120, 80], [10, 20, 5, 40, 30, 15]])
    cap1 = [1200, 150]
    for trial in range(4):
        lin = rng.uniform(-3, 1, 6)
        vals = {}
        for z in itertools.product(*(range(a, b + 1) for a, b in zip(lo, hi))):
            z = np.array(z)
            if (dem @ z <= cap1).all():
                vals[tuple(z)] = 0.5 + lin @ z + sum(w * z[a] * z[b] for (a, b), w in edges.items())
        thr = float(np.quantile(list(vals.values()), [0.5, 0.9, 0.99, 0.0][trial])) - (1e-9 if trial == 3 else 0)
        want = {z: v for z, v in vals.items() if v > thr}
        for search in (P._splits_above, P._splits_above_ordered):  # group order, range order
            Z, F = search(s, lo, hi, lin, edges, 0.5, thr, dem, cap1, None, both=False)
            got = {tuple(int(q) for q in z): f for z, f in zip(Z, F)}
            assert got.keys() == want.keys() and len(want) > 0
            assert all(abs(got[z] - want[z]) <= 1e-9 for z in want)


@pytest.mark.parametrize("size,seed", [((16, 5, 4), 0), ((30, 6, 4), 2)])
def test_rack_convolution_cutoff(size, seed):
    """rack_by_convolution with ``need``: above the optimum it answers ("below", b) with
    optimum <= b <= need, every plan worth less than need (or the optimum itself, when its first margin already holds it); at or
    below the optimum it returns the optimum itself."""
    from formulations import _patterns as P
    from formulations._nodetable import rack_by_convolution

    pm, info, zs = _rack_contents(size, 10, seed)
    done = below = 0
    for z in zs:
        def fresh():
            sub = P._rack_sub(pm, 0, z, info["edges"], None, None)
            return (sub, *sub.generate())

        sub, ub, duals, maxrc = fresh()
        if ub is None or ub == float("-inf"):
            continue
        exact = rack_by_convolution(sub, ub, duals, maxrc, z)
        if exact in (None, "incomplete"):
            continue
        for need in (exact[0] + 0.05, exact[0] + 1e-3):
            sub, ub, duals, maxrc = fresh()
            got = rack_by_convolution(sub, ub, duals, maxrc, z, need=need)
            if isinstance(got[0], str):
                assert got[0] == "below" and exact[0] - 1e-9 <= got[1] <= need + 1e-9
                below += 1
            else:
                assert got[0] == pytest.approx(exact[0], abs=1e-9)
        for need in (exact[0], exact[0] - 0.5):
            sub, ub, duals, maxrc = fresh()
            got = rack_by_convolution(sub, ub, duals, maxrc, z, need=need)
            assert got[0] == pytest.approx(exact[0], abs=1e-9)
        done += 1
    assert done >= 5 and below >= 3


@pytest.mark.parametrize("size", [(20, 5, 4), pytest.param((46, 8, 4), marks=pytest.mark.slow)])
def test_node_table_by_gathers_matches_look_up_table(size):
    """The sparse DP with y - p found by per-axis decrement gathers (no look-up table, as for
    boxes over 4 x box_limit codes) == the one with the look-up table."""
    import numpy as np

    from formulations._nodetable import NodeTable

    pm = _network_pm(parse_instance(layered(*size, 0)))
    edges, _ = _edges_const(pm)
    ref = NodeTable(pm, 0, edges)
    got = NodeTable(pm, 0, edges, box_limit=0)
    assert ref.ok and got.ok and ref._lut is not None and got._lut is None
    assert (got.sel == ref.sel).all() and np.allclose(got.value, ref.value, atol=1e-9)
    for i in np.random.default_rng(0).choice(len(ref.Y), 20, replace=False):
        assert got.split(int(i)) == ref.split(int(i))


@pytest.mark.parametrize("size,seed,filtered,stops", [((36, 7, 4), 0, 3, None), ((16, 5, 4), 0, None, 3)])
def test_node_table_levels_from_the_rows_the_level_before_raised(size, seed, filtered, stops):
    """From level 3 on, the sparse DP reads only the pairs whose source the level before raised
    (when at most FIN_SHARE of the rows are), and a level that raises no row ends the DP (the
    later levels are that level): every level still equals the dense DP's, which scans every
    pair at every level, bit for bit. 36x7x4: level 3 reads the 45 % of rows level 2 raised;
    16x5x4: level 2 raises none, so levels 3 and 4 are level 2."""
    import numpy as np

    from formulations import _nodetable as NT
    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(*size, seed)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    sparse = NT.NodeTable(pm, 0, info["edges"])
    dense = NT.NodeTable(pm, 0, info["edges"], dense=True)
    assert sparse.ok and dense.ok and len(sparse.levels) == len(dense.levels) == 5
    L = sparse.levels
    raised = [int(np.count_nonzero(L[m] > L[m - 1])) for m in range(1, 5)]
    if filtered is not None:  # the rule acts: some rows raised, at most FIN_SHARE of them
        assert 0 < raised[filtered - 2] <= NT.FIN_SHARE * len(L[0])
    if stops is not None:
        assert raised[stops - 2] == 0 and all(L[m] is L[stops - 1] for m in range(stops, 5))
    else:
        assert all(L[m] is not L[m - 1] for m in range(1, 5))
    for m in range(5):
        assert np.array_equal(dense.levels[m][sparse.codes], L[m]), m


# 46x8x4 slow since session 15 (8 s; the default suite's 10-minute budget)
@pytest.mark.parametrize("size,box_limit", [((30, 6, 4), 4_000_000), pytest.param((46, 8, 4), 0, marks=pytest.mark.slow)])
def test_node_table_threads_give_the_same_levels(size, box_limit):
    """The DP over two row ranges in two threads (and with a pair budget so small that most
    contents' pairs are found again at every level, in both ranges) forms exactly the levels of
    the one-thread DP; the splits read back agree with the plain contents test."""
    import numpy as np

    from formulations._nodetable import NodeTable

    pm = _network_pm(parse_instance(layered(*size, 0)))
    edges, _ = _edges_const(pm)
    ref = NodeTable(pm, 0, edges, box_limit=box_limit)
    assert ref.ok
    for kw in (dict(threads=2), dict(threads=2, pair_limit=2_000)):
        got = NodeTable(pm, 0, edges, box_limit=box_limit, **kw)
        assert got.ok and len(got.levels) == len(ref.levels)
        for a, b in zip(got.levels, ref.levels):
            assert np.array_equal(a, b)
    rows = np.random.default_rng(3).choice(len(ref.Y), 30, replace=False)
    fast = [ref.split(int(i)) for i in rows]
    ref._pack, ref._splits = None, {}  # the contents within y by a plain comparison
    assert fast == [ref.split(int(i)) for i in rows]


@pytest.mark.slow
def test_network_100_executors_10_components_10_nodes_proven():
    """Two racks of 5 nodes, 10 components: the local search's incumbent, the exact rack
    pricing and the cut-off convolutions prove the optimum; the plan passes the evaluator."""
    inst = parse_instance(layered(100, 10, 10, 0))
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=120)
    assert r.status.value == "optimal", (r.message, r.details)
    assert r.metrics["feasible"] and abs(r.bound - r.objective) <= TOL
    assert r.objective <= planner.solve(inst, "network", "storm.ras").objective + TOL


def _with_incompatible(inst_dict):
    """The layered instance with its first two components kept out of one worker."""
    comps = inst_dict["topologies"][0]["components"]
    comps[0]["incompatible"] = [comps[1]["id"]]
    return inst_dict



def _worker_contents_by_recursion(pm, ni: int, ti: int) -> list:
    """The worker contents by a plain recursion over the groups (the reference the numpy
    enumeration is checked against): counts within the worker caps, heap <= max_heap, the
    node's CPU and memory, no incompatible pair."""
    G = pm.groups
    t = dict(pm.topos)[ti]
    n = pm.nodes[ni]
    ks = [k for k, g in enumerate(G) if g.ti == ti and pm.worker_cap(g, ni) > 0]
    out: list = []

    def clash(c: str, d: str) -> bool:
        return d in t.component(c).incompatible or c in t.component(d).incompatible

    def rec(i: int, cur: list, heap: float, cpu: float, mem: float, comps: list) -> None:
        if i == len(ks):
            if cur:
                out.append(tuple(cur))
            return
        k = ks[i]
        c = G[k].comp
        rec(i + 1, cur, heap, cpu, mem, comps)
        if any(clash(c.id, d) for d in comps if d != c.id):
            return
        for q in range(1, pm.worker_cap(G[k], ni) + 1):
            h, cp, mm = heap + q * c.memory_onheap_mb, cpu + q * c.cpu, mem + q * c.memory_mb
            if h > t.max_heap_mb + 1e-9 or cp > n.cpu + 1e-9 or mm > n.memory_mb + 1e-9:
                break
            rec(i + 1, cur + [(k, q)], h, cp, mm, comps + [c.id])

    rec(0, [], 0.0, 0.0, 0.0, [])
    return out

@pytest.mark.parametrize("size,incompatible", [((20, 5, 4), False), ((46, 8, 4), False), ((60, 8, 6), False),
                                               ((30, 6, 4), True)])
def test_worker_contents_are_the_worker_patterns(size, incompatible):
    """The numpy enumeration of worker contents (the node table's, and through
    worker_patterns the CP-SAT pricer's) == a plain recursion over the groups, as sets."""
    from formulations import _patterns as P
    from formulations._nodetable import worker_contents

    d = layered(*size, 0)
    pm = _network_pm(parse_instance(_with_incompatible(d) if incompatible else d))
    ref = _worker_contents_by_recursion(pm, 0, 0)
    assert set(P.worker_patterns(pm, 0, 0, cap=10**6)) == set(ref)
    got = worker_contents(pm, 0, 0, cap=10**6)
    as_tuples = {tuple((k, int(q)) for k, q in enumerate(row) if q) for row in got}
    assert len(as_tuples) == len(got) == len(ref) and as_tuples == set(ref)
    assert worker_contents(pm, 0, 0, cap=len(ref) - 1) is None  # over the cap: None
    assert worker_contents(pm, 0, 0, cap=len(ref)) is not None  # the cap counts contents, incompatible pairs out


@pytest.mark.parametrize("size,incompatible", [((30, 6, 4), False), ((40, 6, 6), False),
                                               pytest.param((46, 8, 4), False, marks=pytest.mark.slow),
                                               ((30, 6, 4), True)])
def test_merge_free_node_table_matches_the_full_dp(size, incompatible):
    """The table's DP over merge-free splits only (pairs used at the levels their heaps allow)
    gives the same rows, covers and values as the DP over every split; with incompatible
    components the filter is off (merging is not always allowed)."""
    import numpy as np

    from formulations._nodetable import NodeTable

    d = layered(*size, 0)
    pm = _network_pm(parse_instance(_with_incompatible(d) if incompatible else d))
    edges, _ = _edges_const(pm)
    full = NodeTable(pm, 0, edges)  # the default: every split
    got = NodeTable(pm, 0, edges, merge_free=True)
    assert full.ok and got.ok and full.merge is None
    assert (got.merge is None) == incompatible
    assert (got.Y == full.Y).all() and (got.sel == full.sel).all()
    assert np.allclose(got.value, full.value, atol=1e-9)
    for i in np.random.default_rng(1).choice(len(got.Y), 20, replace=False):
        split = got.split(int(i))
        assert sum(np.array([dict(w).get(k, 0) for k in range(len(pm.groups))]) for w in split).tolist() == got.Y[i].tolist() or not got.sel[i]


def test_merge_free_node_table_with_a_small_heap_skips_levels():
    """A max heap that lets no merge-free split use all 4 slots: the levels past it are the
    level before (no pairs), and the table still equals the full DP and the recursion."""
    import numpy as np

    from formulations import _patterns as P
    from formulations._nodetable import NodeTable

    d = layered(16, 5, 4, 0)
    d["topologies"][0]["max_heap_mb"] = 384
    pm = _network_pm(parse_instance(d))
    edges, _ = _edges_const(pm)
    full = NodeTable(pm, 0, edges)
    got = NodeTable(pm, 0, edges, merge_free=True)
    assert full.ok and got.ok and got.merge is not None
    heaps = got.Y @ np.array([g.comp.memory_onheap_mb for g in pm.groups])
    assert heaps.max() <= 2 * 384 and got.levels[4] is got.levels[3]  # 4 workers need H(y) > 2 h
    # (the full DP stops there too, for another reason: its level 3 raised no row,
    # test_node_table_levels_from_the_rows_the_level_before_raised)
    assert (got.sel == full.sel).all() and np.allclose(got.value, full.value, atol=1e-9)
    K = len(pm.groups)
    pats = [[dict(p).get(k, 0) for k in range(K)] for p in P.worker_patterns(pm, 0, 0)]

    def co(v):
        return sum(w * v[a] * v[b] for (a, b), w in edges.items())

    for i in np.random.default_rng(0).choice(len(got.Y), 40, replace=False):
        y = [int(q) for q in got.Y[i]]
        ref = _best_split(y, pats, co, len(pm.nodes[0].slots))
        assert got.sel[i] == (ref != float("-inf"))
        if got.sel[i]:
            assert got.value[i] == pytest.approx(co(y) + ref, abs=1e-9)


@pytest.mark.slow
def test_network_100_executors_9_components_10_nodes_proven():
    """9 components: 46,029 worker contents per node (over worker_patterns' 20,000), so only
    the table's own enumeration gives it a node table; the exact rack pricer's two group orders
    close column generation. Proven; the plan passes the evaluator."""
    inst = parse_instance(layered(100, 9, 10, 0))
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=120)
    assert r.status.value == "optimal", (r.message, r.details)
    assert r.metrics["feasible"] and abs(r.bound - r.objective) <= TOL
    assert r.objective <= planner.solve(inst, "network", "storm.ras").objective + TOL


# --- branch net-twelve ------------------------------------------------------------------------

@pytest.mark.parametrize("size,seed", [((40, 6, 6), 3), ((30, 6, 6), 5)])
def test_rack_convolution_ordered_losses_agree(size, seed):
    """The ordered convolution (the nodes of one class read with non-decreasing losses) gives
    what the unordered one gives: the optimum, None, or with ``need`` a "below" answer (then
    both say the rack cannot reach need), on racks of three identical nodes."""
    from formulations import _patterns as P
    from formulations._nodetable import rack_by_convolution

    pm, info, zs = _rack_contents(size, 14, seed)
    compared = 0
    for z in zs:
        sub = P._rack_sub(pm, 0, z, info["edges"], None, None)
        assert [f.count for f in sub.families] == [3]
        ub, duals, maxrc = sub.generate()
        if ub is None or ub == float("-inf"):
            continue
        plain = rack_by_convolution(sub, ub, duals, maxrc, z, ordered=False)
        got = rack_by_convolution(sub, ub, duals, maxrc, z)
        assert (got is None) == (plain is None) and "incomplete" not in (got, plain)
        if plain is None:
            continue
        assert got[0] == pytest.approx(plain[0], abs=1e-9)
        for need in (plain[0] + 0.02, plain[0]):
            a = rack_by_convolution(sub, ub, duals, maxrc, z, need=need, ordered=False)
            b = rack_by_convolution(sub, ub, duals, maxrc, z, need=need)
            for r in (a, b):  # "below" only when need is above the optimum, else the optimum
                if isinstance(r[0], str):
                    assert need > plain[0] and plain[0] - 1e-9 <= r[1] <= need + 1e-9
                else:
                    assert r[0] == pytest.approx(plain[0], abs=1e-9)
        compared += 1
    assert compared >= 8


def test_rack_exact_round_shrinks_after_give_ups(monkeypatch):
    """RackHeuristic.exact in exact rounds (more than 2 s): each give-up in a row halves the
    next exact round's seconds (at least 2 s); a success restores them."""
    import time

    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(20, 5, 4, 0)))
    pat, info, _ = P.build_network(pm, None, 1, tables=False)
    fi = next(i for i, f in enumerate(pat.families) if f.name.startswith("rack"))
    rh = P.RackHeuristic(pm, info["racks"][0], info["edges"], fi, pat.families[fi].conv_row)
    duals = {("cover", k): 0.5 for k in range(len(pm.groups))}
    given: list[float] = []
    real, real_ordered = P._splits_above, P._splits_above_ordered

    def gives_up(*a, deadline=None, **k):
        given.append(deadline - time.monotonic())
        return "state cap"

    monkeypatch.setattr(P, "_splits_above", gives_up)
    monkeypatch.setattr(P, "_splits_above_ordered", gives_up)
    firsts = []
    for _ in range(4):
        given.clear()
        assert rh.exact(duals, state_cap=6_000_000, seconds=16.0) is None
        firsts.append(given[0] * 4)  # the first order gets a quarter of the round's seconds
    assert [round(x) for x in firsts] == [16, 8, 4, 2] and rh.exact_fails == 4  # every give-up counts
    monkeypatch.setattr(P, "_splits_above", real)
    monkeypatch.setattr(P, "_splits_above_ordered", real_ordered)
    assert rh.exact(duals, state_cap=6_000_000, seconds=16.0) is not None and rh.exact_fails == 0


@pytest.mark.slow
def test_network_100_executors_11_components_10_nodes_proven():
    """11 components: the node table's 1.22e8 pairs are kept (PAIR_BYTES), so it passes the
    gate; the ordered convolution solves the racks the unordered one gave up on. Proven (bound
    = plan), the plan passes the evaluator and is no worse than storm.ras. (The limit is 120 s
    so the test holds on a loaded machine; the 60 s figures are docs/benchmarks.md's.)"""
    inst = parse_instance(layered(100, 11, 10, 0))
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=120)
    assert r.status.value == "optimal", (r.message, r.details)
    # the proof went through the node table and the racks' convolutions (cut or solved)
    assert r.details.get("rack_convolutions", 0) + r.details.get("rack_cutoffs", 0) >= 1, r.details
    assert r.metrics["feasible"] and abs(r.bound - r.objective) <= TOL
    assert r.objective <= planner.solve(inst, "network", "storm.ras").objective + TOL


@pytest.mark.slow
def test_network_100_executors_12_components_10_nodes_proven_at_240_s():
    """12 components: 2.9 million count vectors (over the fixed 2 million rows the table had
    before branch net-twelve-2, so no limit proved it) and 4.1e8 pairs, stored within
    PAIR_BYTES; the two-rack search proves the optimum, 14.2 (87-113 s at a 120 s limit on the
    development machine; 240 s here so it holds under load). The plan passes the evaluator and
    is no worse than storm.ras. Peak memory about 4.2 GB."""
    inst = parse_instance(layered(100, 12, 10, 0))
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=240)
    assert r.status.value == "optimal", (r.message, r.details)
    assert r.details.get("two_rack_splits", 0) > 0, r.details  # the two-rack search over the table ran
    assert r.metrics["feasible"] and abs(r.bound - r.objective) <= TOL
    assert abs(r.objective - 14.2) <= TOL
    assert r.objective <= planner.solve(inst, "network", "storm.ras").objective + TOL


@pytest.mark.parametrize("size", [(30, 6, 4), pytest.param((46, 8, 4), marks=pytest.mark.slow)])
def test_table_max_minus_is_the_float64_scan(size):
    """NodeTable.max_minus (a float32 scan, then the rows near its maximum in float64) == the
    float64 max of T(y) - mu . y over every row (to float64 rounding), for multipliers of both signs and several
    scales, the zero one, and multipliers that make many rows tie (mu = the values' slope)."""
    import numpy as np

    from formulations import _nodetable as NT
    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(*size, 0)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    t = NT.NodeTable(pm, 0, info["edges"])
    assert t.ok
    _, Y, v = t.floats()
    rng = np.random.default_rng(7)
    scale = float(np.abs(v).max()) / max(1.0, float(Y.sum(axis=1).max()))
    mus = [np.zeros(t.K)] + [rng.normal(0, s, t.K) for s in (1e-3 * scale, 0.1 * scale, scale, 30 * scale) for _ in range(5)]
    mus.append(np.linalg.lstsq(Y, v, rcond=None)[0])  # T - mu . y nearly flat: many rows close
    for mu in mus:
        # equal up to float64 rounding (a product over a subset may sum in another order)
        assert t.max_minus(mu) == pytest.approx(float(np.max(v - Y @ mu)), rel=1e-13, abs=1e-13)


def test_table_max_minus_lower_is_a_lower_bound_tight_at_seen_multipliers():
    """NodeTable.max_minus_lower (the two-rack search's screen before a whole-table scan):
    -inf before any scan, never above max_minus for any multiplier, equal to it at every
    multiplier already scanned (its maximum's row is kept, in the index space of ``floats``:
    the table here has vectors no split covers, so that space is not the table's), also for
    multipliers outside float32's range (the float64 scan)."""
    import numpy as np

    from formulations import _nodetable as NT
    from formulations import _patterns as P

    # one slot a node: vectors over one worker's heap are not covered (sel False)
    pm = _network_pm(parse_instance(layered(30, 6, 4, 0, slots=1)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    t = NT.NodeTable(pm, 0, info["edges"])
    assert t.ok and not t.sel.all() and t.sel.any()
    _, Y, v = t.floats()
    rng = np.random.default_rng(11)
    scale = float(np.abs(v).max()) / max(1.0, float(Y.sum(axis=1).max()))
    mus = [rng.normal(0, s, t.K) for s in (0.1 * scale, scale, 10 * scale) for _ in range(6)]
    mus.append(np.array([2e30] + [0.0] * (t.K - 1)))  # the float64 fall-back scan
    assert t.max_minus_lower(mus[0]) == -math.inf
    seen = []
    below = 0
    for mu in mus:
        lo = t.max_minus_lower(mu)
        exact = float(np.max(v - Y @ mu))
        assert lo <= exact + 1e-12 * max(1.0, abs(exact))
        below += lo < exact - 1e-9
        assert t.max_minus(mu) == pytest.approx(exact, rel=1e-13, abs=1e-13)
        seen.append(mu)
        for old in seen:  # every scanned multiplier's maximum is kept: the bound is exact there
            assert t.max_minus_lower(old) == pytest.approx(t.max_minus(old), rel=1e-13, abs=1e-13)
    assert below >= 1  # the screen is a bound, not the maximum itself, for new multipliers


@pytest.mark.parametrize("size", [(30, 6, 4), pytest.param((46, 8, 4), marks=pytest.mark.slow)])  # 46x8x4 slow (16 s)
def test_node_table_pairs_over_the_limit_give_the_same_levels(size):
    """The DP's pairs past ``pair_limit``: the contents whose pairs fit stay stored and the rest
    are found again at every level (none stored, some, all): the same W levels, bit for bit."""
    import numpy as np

    from formulations import _nodetable as NT
    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(*size, 0)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    ref = NT.NodeTable(pm, 0, info["edges"])
    assert ref.ok
    tables = [NT.NodeTable(pm, 0, info["edges"], pair_limit=lim) for lim in (0, 1000, 200_000)]
    for t in tables:
        assert t.ok and len(t.levels) == len(ref.levels)
        assert all(np.array_equal(a, b) for a, b in zip(t.levels, ref.levels))
        assert np.array_equal(t.value, ref.value) and np.array_equal(t.sel, ref.sel)


def test_node_table_refusals_say_why():
    """A node table that is not built says why (``NodeTable.refused``, reported by the solve's
    details): over its time budget by its estimate, past its deadline; a built one has no
    reason, its estimate and its DP's time."""
    from formulations import _nodetable as NT
    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(30, 6, 4, 0)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    built = NT.NodeTable(pm, 0, info["edges"], budget=1e6, deadline=time.monotonic() + 1e6)
    assert built.ok and built.refused is None
    assert built.est_seconds > 0 and built.dp_s >= 0
    over = NT.NodeTable(pm, 0, info["edges"], budget=built.est_seconds / 2, deadline=time.monotonic() + 1e6)
    assert not over.ok and "over its budget" in over.refused
    assert over.est_seconds == pytest.approx(built.est_seconds)
    late = NT.NodeTable(pm, 0, info["edges"], deadline=time.monotonic() - 1.0)
    assert not late.ok and "deadline" in late.refused


def test_network_details_name_the_node_tables():
    """The network solve's details list each node table it built or refused (node, seconds,
    estimate, rows or the reason): seed 1's 100x11x10 went unproven for want of its table, and
    nothing in the result said so."""
    inst = parse_instance(layered(30, 6, 4, 0, problem="network"))
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=30)
    assert r.status.value == "optimal"
    tables = r.details["node_tables"]
    assert [t["node"] for t in tables] == [0] and tables[0]["built"] and tables[0]["rows"] > 0
    assert "refused" not in tables[0] and tables[0]["estimated_s"] > 0 and tables[0]["dp_s"] >= 0


def test_node_tables_share_one_row_budget():
    """The rows of a solve's node tables (one per class of nodes with distinct limits) share
    TABLE_BYTES: with a budget that holds the first class's table and not both, the second class
    gets none (priced by CP-SAT then); with the default budget both have one."""
    from formulations import _nodetable as NT
    from formulations import _patterns as P

    d = layered(20, 5, 4, 0)
    for n in d["cluster"]["racks"][1]["nodes"]:  # a second class of nodes: more CPU
        n["cpu"] += 20
    inst = parse_instance(d)
    pm = _network_pm(inst)
    model, _, _ = P.build_network(pm, None, 1, tables=True)
    tables = {id(f.table.t): f.table.t for f in model.families if f.table is not None and hasattr(f.table, "t")}
    assert len(tables) == 2
    first, second = sorted(tables.values(), key=lambda t: list(pm._node_tables.values()).index(t))
    need = first.row_bytes()
    old = NT.TABLE_BYTES
    try:
        NT.TABLE_BYTES = need + second.row_bytes() // 2
        pm2 = _network_pm(inst)
        model2, _, _ = P.build_network(pm2, None, 1, tables=True)
    finally:
        NT.TABLE_BYTES = old
    built = [t for t in pm2._node_tables.values()]
    assert built[0] is not None and len(built[0].Y) == len(first.Y)
    assert built[1] is None
    notes = pm2._node_table_notes
    assert notes[0]["built"] and not notes[1]["built"] and "more than" in notes[1]["refused"]
    assert "memory budget" in notes[1]["refused"]
    assert sum(f.table is not None and hasattr(f.table, "t") for f in model2.families) < \
        sum(f.table is not None and hasattr(f.table, "t") for f in model.families)


def test_table_columns_are_the_counts_by_group():
    """NodeTable.columns: the counts group by group, contiguous, uint8 only where they fit."""
    import numpy as np

    from formulations import _nodetable as NT
    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(30, 6, 4, 0)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    t = NT.NodeTable(pm, 0, info["edges"])
    assert (t.columns() == t.Y.T).all() and t.columns().flags["C_CONTIGUOUS"] and t.columns().dtype == np.uint8
    big = np.array([[0, 300], [1, 2]], dtype=np.int16)  # counts past 255 (no real table has them): not uint8
    assert NT.column_major(big).dtype != np.uint8 and (NT.column_major(big) == big.T).all()


def test_fold_multiplier_keeps_the_exact_minimum_on_live_splits():
    """_two_rack_search's screen (_fold_multiplier): over a sequence of multipliers, each split's
    bound part stays >= min over the multipliers of (Z @ mu + max_minus(mu)) (valid: nothing is
    ever lowered below it), equals it on the live splits (a skip never loses a tightening there),
    and most multipliers are skipped once the pool has a few."""
    import numpy as np

    from formulations import _nodetable as NT
    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(30, 6, 4, 0)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    t = NT.NodeTable(pm, 0, info["edges"])
    _, Y, v = t.floats()
    rng = np.random.default_rng(9)
    Z = Y[rng.choice(len(Y), 400, replace=False)] * 2  # rack contents of two nodes' worth
    live = rng.random(len(Z)) < 0.7
    part = np.full(len(Z), np.inf)
    best = np.full(len(Z), np.inf)
    base = np.linalg.lstsq(Y, v, rcond=None)[0]
    skipped = 0
    for _ in range(40):
        mu = base + rng.normal(0, 0.05 * float(np.abs(base).max()), t.K)
        h = float(np.max(v - Y @ mu))
        best = np.minimum(best, Z @ mu + h)
        before = part.copy()
        got = P._fold_multiplier(part, Z @ mu, live, t.max_minus_lower(mu), lambda: t.max_minus(mu))
        if got is None:  # skipped: nothing changes, dead splits included
            skipped += 1
            assert np.array_equal(part, before)
        else:
            assert got == pytest.approx(h, rel=1e-13, abs=1e-13)
    assert (part >= best - 1e-9).all()
    assert np.allclose(part[live], best[live], rtol=0, atol=1e-9)
    assert skipped >= 10


def test_seed_pool_fits_as_the_loop_over_columns():
    """_SeedPool.fitting (one array comparison) picks the same columns, in the same order and
    with the same coefficients, as the loop over every column it replaced (convexity row among
    the rack's classes, counts <= z with absent groups at 0), with columns appended between
    queries (the two-rack search shares new columns as it goes) and a class no column has."""
    import numpy as np

    from formulations._patterns import Column, _SeedPool

    rng = np.random.default_rng(4)
    K = 5
    convs = [("conv", "node", i) for i in range(5)]  # the last one: no column has it

    def ref_fitting(cols, want, z):
        out = []
        for i, c in enumerate(cols):
            conv = next(r for r in c.coefs if r[0] == "conv")
            if conv in want:
                coefs = {("cover", r[2]) if r[0] == "link" else r: x for r, x in c.coefs.items()}
                if all(x <= z.get(r[1], 0) for r, x in coefs.items() if r[0] == "cover"):
                    out.append((i, coefs))
        return out

    pool = _SeedPool(K)
    cols = []
    hits = 0
    for j in range(400):
        y = rng.integers(0, 4, K)
        ri = int(rng.integers(0, 2))
        coefs = {("link", ri, k) if rng.random() < 0.5 else ("cover", k): float(q) for k, q in enumerate(y) if q}
        coefs[convs[int(rng.integers(0, 4))]] = 1.0
        cols.append(Column(-1, float(j), coefs, None, j))
        pool.append(cols[-1])
        if j % 20 == 19:  # queries between appends
            for _ in range(3):
                z = {k: int(q) for k, q in enumerate(rng.integers(0, 5, K)) if q and rng.random() < 0.8}
                want = [convs[i] for i in sorted(rng.choice(5, 2, replace=False))]
                ref = ref_fitting(cols, want, z)
                got = pool.fitting(want, z)
                assert [i for i, _ in ref] == list(got)
                assert all(pool.sub_coefs[i] == coefs for i, coefs in ref)
                hits += len(ref)
    assert 0 < hits


def test_lex_at_least_is_the_code_order_and_needs_no_codes():
    # the two-rack search keeps z >= s - z for interchangeable racks; it compared mixed-radix
    # codes, which wrap past a box of 2^63: the lexicographic test must agree with the codes where
    # they fit and hold past that (rows whose codes would collide)
    import numpy as np
    from formulations._patterns import _lex_at_least

    rng = np.random.default_rng(5)
    for K in (1, 3, 7):
        s = rng.integers(0, 9, size=K)
        Z1 = rng.integers(0, s + 1, size=(300, K))
        Z2 = s - Z1
        mult = np.ones(K, dtype=np.int64)
        for k in range(K - 2, -1, -1):
            mult[k] = mult[k + 1] * (s[k + 1] + 1)
        assert np.array_equal(_lex_at_least(Z1, Z2), Z1 @ mult >= Z2 @ mult)
    # 30 axes of 0..7: a box of 8^30 = 2^90; rows differing only in a low axis still compare
    a = np.zeros((2, 30), dtype=np.int64)
    b = a.copy()
    a[0, 29], b[1, 29] = 1, 1
    assert _lex_at_least(a, b).tolist() == [True, False]
    assert _lex_at_least(a[:1], a[:1]).tolist() == [True] and len(_lex_at_least(a[:0], b[:0])) == 0


def _stub_pricer(Y, val, fi):
    """A TablePricer over given rows and values (no node table behind it): what
    rack_by_convolution reads of a pricer (rows, values, rc, split) and nothing else."""
    from types import SimpleNamespace

    import numpy as np

    from formulations import _nodetable as NT

    p = object.__new__(NT.TablePricer)
    p.t = SimpleNamespace(Y=Y, K=Y.shape[1], value=val, split=lambda i: (),
                          sub_rc=lambda pi, rows, v, conv, phase1, codes:
                          (np.zeros(len(rows)) if phase1 else v) - Y[rows].astype(np.float64) @ pi - conv)
    p.fi, p.conv, p.rowkey = fi, ("conv", fi), (lambda k: ("cover", k))
    p.idx, p.val, p.Yf, p.whole, p.codes = np.arange(len(Y)), val, None, False, None
    return p


def test_rack_convolution_matches_brute_force_on_random_tables():
    """The single-rack convolution (ordered, the default, and unordered) against every assignment
    of table rows to the rack's nodes, on random tables (values with several nodes of positive
    loss, which the layered instances' racks seldom have): the optimum, None when no assignment
    sums to z, and with ``need`` the optimum or a "below" bound that is really below need."""
    import itertools
    import math
    from types import SimpleNamespace

    import numpy as np

    from formulations._nodetable import rack_by_convolution

    rng = np.random.default_rng(1)
    checked = several = 0
    for _ in range(160):
        K = 2
        counts = [int(rng.integers(2, 4))] + ([1] if rng.random() < 0.5 else [])
        zv = rng.integers(0, 3 * sum(counts) // 2 + 1, size=K)
        fams, tabs = [], []
        for fi, c in enumerate(counts):
            Y = np.array(list(itertools.product(range(4), repeat=K)), dtype=np.int64)
            keep = rng.random(len(Y)) < 0.7
            keep[0] = True
            Y = Y[keep & (Y <= zv).all(axis=1)]
            val = np.round(rng.random(len(Y)) * 3, 2)
            val[0] = 0.0
            fams.append(SimpleNamespace(table=_stub_pricer(Y, val, fi), count=c, name=f"f{fi}"))
            tabs += [(Y, val)] * c
        sub = SimpleNamespace(families=fams)
        pi = rng.normal(0, 0.5, K)
        duals = {("cover", k): float(pi[k]) for k in range(K)}
        maxrc = [float(np.max(f.table.rc(duals))) for f in fams]
        ub = sum(f.count * m for f, m in zip(fams, maxrc)) + float(pi @ zv)
        best, losses = -math.inf, None
        for combo in itertools.product(*[range(len(Y)) for Y, _ in tabs]):
            if (sum(tabs[i][0][r] for i, r in enumerate(combo)) == zv).all():
                v = sum(tabs[i][1][r] for i, r in enumerate(combo))
                if v > best:
                    best, losses = v, combo
        z = {k: int(q) for k, q in enumerate(zv) if q}
        for ordered in (True, False):
            r = rack_by_convolution(sub, ub, duals, maxrc, z, ordered=ordered)
            if best == -math.inf:
                assert r is None
            else:
                assert not isinstance(r, str) and r is not None and r[0] == pytest.approx(best, abs=1e-9)
        if best > -math.inf:
            for need in (best, best + 0.05):
                r = rack_by_convolution(sub, ub, duals, maxrc, z, need=need)
                if isinstance(r[0], str):
                    assert need > best + 1e-12 and best - 1e-9 <= r[1] <= need + 1e-9
                else:
                    assert r[0] == pytest.approx(best, abs=1e-9)
            # how many nodes of the best assignment lose something (what the ordering prunes on)
            node_fam = [fi for fi, c in enumerate(counts) for _ in range(c)]
            rc = [fams[f].table.rc(duals) for f in range(len(fams))]
            several += sum(maxrc[f] - rc[f][row] > 1e-9 for f, row in zip(node_fam, losses)) >= 2
        checked += 1
    assert checked == 160 and several >= 40


def test_table_max_minus_finds_the_maximum_the_float32_scan_misorders():
    """A near-tie table where the float32 scan's best row is not the float64 best: max_minus must
    still return the float64 maximum (its margin keeps the true best among the rows it rescans)."""
    import numpy as np

    from formulations import _nodetable as NT

    rng = np.random.default_rng(3)
    trapped = 0
    for _ in range(20):
        K = 6
        Y = rng.integers(0, 9, size=(4000, K)).astype(np.float64)
        mu = rng.normal(0, 1e3, K)
        v = 1e6 + Y @ mu + rng.random(4000) * 1e-3  # T - mu . y within 1e-3 of 1e6 on every row
        t = object.__new__(NT.NodeTable)
        t.K, t._top = K, Y.max(axis=0).astype(np.int64)
        t._floats = (np.arange(len(v)), Y, v)
        exact = float(np.max(v - Y @ mu))
        a32 = v.astype(np.float32) - Y.astype(np.float32) @ mu.astype(np.float32)
        trapped += float((v - Y @ mu)[int(np.argmax(a32))]) < exact
        assert t.max_minus(mu) == pytest.approx(exact, rel=1e-15, abs=1e-9)
    assert trapped >= 10  # the float32 argmax alone would be wrong on most of these tables


def test_only_the_whole_table_pricer_holds_float_rows():
    """The whole-table pricer prices from the table's shared float copy; a restricted pricer
    (a rack subproblem, which the two-rack search may keep by the hundred) holds none and prices
    from the part codes, and its reduced costs are the whole pricer's on the same rows."""
    import numpy as np

    from formulations import _nodetable as NT
    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(30, 6, 4, 0)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    t = NT.NodeTable(pm, 0, info["edges"])
    assert t.ok
    duals = {("cover", k): 0.3 * (k + 1) for k in range(t.K)}
    whole = NT.TablePricer(t, 0, ("conv", 0), lambda k: ("cover", k))
    part = NT.TablePricer(t, 0, ("conv", 0), lambda k: ("cover", k),
                          ybound={k: int(q) for k, q in enumerate(t.top() // 2)})
    assert whole.whole and not part.whole and 0 < len(part.idx) < len(whole.idx)
    assert whole.Yf is t.floats()[1] and part.Yf is None
    at = {int(i): r for i, r in zip(whole.idx, whole.rc(duals))}
    assert np.allclose(part.rc(duals), [at[int(i)] for i in part.idx], rtol=1e-12, atol=1e-9)


def _dot_by_parts(t, pi, rows):
    """Y[rows] pi by the part codes in numpy (session 15's ``NodeTable.dot``, the reference of
    the compiled ``sub_rc``): each part's sums over its radix box tabulated, the rows looked up."""
    import numpy as np

    out = None
    for g, rad, h in t.part_codes():
        sums = np.zeros(1)
        for k, r in zip(reversed(g), reversed(rad)):  # index y_g0 + r_g0 (y_g1 + r_g1 (...))
            sums = np.add.outer(sums, pi[k] * np.arange(r)).ravel()
        got = sums[h[rows]]
        out = got if out is None else out + got
    return out


def test_table_dot_by_part_codes_is_the_float_product():
    """NodeTable.dot (a rack subproblem's pricing, by the part codes' tabulated sums) equals
    Y[rows] pi in float64 on random multipliers and rows, the part codes give back every
    row's counts, and a restricted pricer's reduced costs are the direct formula's."""
    import numpy as np

    from formulations import _nodetable as NT
    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(30, 6, 4, 0)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    t = NT.NodeTable(pm, 0, info["edges"])
    assert t.ok
    parts = t.part_codes()
    assert parts is not None and sorted(k for g, _, _ in parts for k in g) == list(range(t.K))
    for g, rad, h in parts:  # decoding each part's numbers gives the counts back
        assert math.prod(rad) <= 1 << 16
        rest = h.astype(np.int64)
        for k, r in zip(g, rad):
            assert np.array_equal(rest % r, t.Y[:, k])
            rest //= r
        assert not rest.any()
    rng = np.random.default_rng(5)
    for _ in range(20):
        pi = rng.normal(scale=rng.choice([1e-3, 1.0, 1e3]), size=t.K)
        rows = np.sort(rng.choice(len(t.Y), size=min(len(t.Y), 500), replace=False))
        want = t.Y[rows].astype(np.float64) @ pi
        assert np.allclose(_dot_by_parts(t, pi, rows), want, rtol=1e-12, atol=1e-9 * np.abs(pi).max())
        # the compiled pass (sub_rc) is bit for bit the numpy one over the same part codes
        val = t.value[rows]
        for phase1 in (False, True):
            base = np.zeros(len(rows)) if phase1 else val
            assert np.array_equal(t.sub_rc(pi, rows, val, 0.7, phase1), base - _dot_by_parts(t, pi, rows) - 0.7)
    duals = {("cover", k): 0.3 * (k + 1) for k in range(t.K)}
    duals[("conv", 0)] = 1.5
    part = NT.TablePricer(t, 0, ("conv", 0), lambda k: ("cover", k),
                          ybound={k: int(q) for k, q in enumerate(t.top() // 2)})
    pi = np.array([duals[("cover", k)] for k in range(t.K)])
    assert np.allclose(part.rc(duals), t.value[part.idx] - t.Y[part.idx].astype(np.float64) @ pi - 1.5, atol=1e-9)


def test_restricted_pricer_keeps_exactly_the_rows_within_the_bound():
    """A rack subproblem's TablePricer (ybound = z) keeps exactly the covered rows y <= z, as a
    plain comparison over the whole table finds them, for bounds below, at and above the
    table's largest count on the code order's most significant axis (where only a prefix of
    the rows is scanned) and with groups bounded at 0 (where only the rows of the zero patterns
    holding those groups are scanned); and ``best`` gives the same maximum reduced cost as a plain argmax,
    with the columns a caller would add (the short answer when none improves)."""
    import numpy as np

    from formulations import _nodetable as NT
    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(30, 6, 4, 0)))
    _, info, _ = P.build_network(pm, None, 1, tables=False)
    t = NT.NodeTable(pm, 0, info["edges"])
    assert t.ok
    top = t.top()
    g0 = int(t.perm[0])
    assert t._pack is not None  # the zero path's packed test (counts fit 62 bits)
    rng = np.random.default_rng(11)
    seen_prefix = seen_zero = 0
    for trial in range(80):
        if trial == 40:  # the zero path's test on the plain counts (past 62 bits of fields)
            t.__dict__.pop("_zidx")
            t.__dict__.pop("_zrows")
            t._pack = None
        z = {k: int(rng.integers(0, int(top[k]) + 2)) for k in range(t.K)}
        if trial < 3:
            z[g0] = [0, int(top[g0]) - 1, int(top[g0])][trial]
        if trial % 4 == 3:  # whole groups left to the other rack: the zero-pattern scan
            for k in rng.choice(t.K, size=3, replace=False):
                z[int(k)] = 0
        elif trial % 4 == 1:  # no group at 0: the prefix scan
            z = {k: max(1, v) for k, v in z.items()}
        pr = NT.TablePricer(t, 0, ("conv", 0), lambda k: ("cover", k), ybound=z)
        zz = np.array([z[k] for k in range(t.K)])
        want = np.flatnonzero(t.sel & (t.Y <= zz).all(axis=1))
        assert np.array_equal(pr.idx, want)
        # the values and part codes read from the zero index's order are the rows' own
        assert np.array_equal(pr.val, t.value[want])
        assert np.array_equal(pr.codes, np.stack([h[want] for _, _, h in t.part_codes()], axis=1))
        assert np.array_equal(pr.counts(), t.Y[want].astype(np.int64))  # decoded from the codes
        seen_prefix += z[g0] < top[g0] and pr.scan == "prefix"
        seen_zero += pr.scan == "zero pattern"
        for scale in (0.0, 0.5, 5.0):
            duals = {("cover", k): scale * float(rng.random()) for k in range(t.K)}
            duals[("conv", 0)] = scale * float(rng.random())
            if not len(want):
                continue
            rc = t.value[want] - t.Y[want].astype(np.float64) @ np.array([duals[("cover", k)] for k in range(t.K)]) \
                - duals[("conv", 0)]
            best, cols = pr.best(duals, 8)
            assert best == pytest.approx(float(rc.max()), abs=1e-9)
            good = [c for c in cols if pr.t.value is not None and
                    c.value - sum(duals.get(r, 0.0) * x for r, x in c.coefs.items()) > 1e-7]
            assert len(good) == min(8, int((rc > 1e-7).sum()))
    assert seen_prefix >= 10 and seen_zero >= 20 and len(t._zidx[2]) == 0 and len(t._zidx[3])


def test_splits_above_give_up_bound_is_an_upper_bound():
    """When _splits_above gives up (state cap), the bound it appends to ``bound_out`` is at
    least const + f(z) for every z within the limits (a plain loop over the box), one rack
    (with and without ``last_ends``) and two racks; a search that finishes appends nothing."""
    import itertools

    import numpy as np

    from formulations import _patterns as P

    rng = np.random.default_rng(5)
    s = np.array([3, 4, 2, 5, 3, 2])
    lo, hi = np.zeros(6, dtype=int), s
    edges = {(0, 1): 0.5, (1, 2): 0.25, (2, 3): 1.0, (0, 4): 0.75, (3, 4): 0.125, (4, 5): 0.3}
    dem = np.array([[100, 250, 300, 50, 120, 80], [10, 20, 5, 40, 30, 15]])
    cap1, cap2 = [1200, 150], [1600, 320]
    gave = 0
    for trial in range(6):
        lin = rng.uniform(-3, 1, 6)
        for both, ends in ((False, False), (False, True), (True, False)):
            vals = []
            for z in itertools.product(*(range(a, b + 1) for a, b in zip(lo, hi))):
                z = np.array(z)
                if (dem @ z <= cap1).all() and (not both or (dem @ (s - z) <= cap2).all()):
                    f = lin @ z + sum(w * (z[a] * z[b] + (both and (s[a] - z[a]) * (s[b] - z[b])))
                                      for (a, b), w in edges.items())
                    vals.append(0.5 + f)
            top = max(vals)
            thr = float(np.quantile(vals, 0.5))
            for cap in (5, 30, 200, 2000):
                out: list = []
                got = P._splits_above(s, lo, hi, lin, edges, 0.5, thr, dem, cap1, cap2, state_cap=cap,
                                      both=both, last_ends=ends, bound_out=out)
                if isinstance(got, str):
                    gave += 1
                    assert len(out) == 1 and out[0] >= top - 1e-9, (trial, both, ends, cap, out, top)
                else:
                    assert out == [] and got[1].max() == pytest.approx(top, abs=1e-9)
    assert gave >= 20  # the small caps did make it give up, at several levels


@pytest.mark.parametrize("size", [(20, 5, 4), (30, 6, 4)])
def test_rack_heuristic_pair_ascent_and_give_up_bound(size):
    """RackHeuristic with pair moves: every content it returns is within the rack's caps and
    limits, its best reduced cost is at most the box maximum and at least coordinate ascent's;
    pair ascent keeps rows within the limits, never lowers one, improves some, and ends
    pair-optimal (no move of two groups improves a row: a loop over their box). exact() that gives up (tiny prefix cap) leaves a bound
    ``gave_up`` at least the box maximum (a loop over the box), for random duals."""
    import itertools

    import numpy as np

    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(*size, 0)))
    pat, info, _ = P.build_network(pm, None, 1, tables=False)
    fi = next(i for i, f in enumerate(pat.families) if f.name.startswith("rack"))
    rh = P.RackHeuristic(pm, info["racks"][0], info["edges"], fi, pat.families[fi].conv_row)
    K = len(pm.groups)
    Z = np.array([z for z in itertools.product(*(range(c + 1) for c in rh.cap))
                  if (rh.dem @ np.array(z) <= rh.lim).all()], dtype=float)
    rng = np.random.default_rng(3)
    finite = improved = 0
    for t in range(12):
        # duals of the stream weights' scale (many contents near the maximum: the search's
        # prefixes then exceed small caps), and large ones
        big = 1.5 if t >= 8 else 0.1 * (t % 4 + 1)
        duals = {("cover", k): rng.uniform(0, big) for k in range(K)}
        duals.update({("link", rh.ri, k): rng.uniform(-big / 3, big / 3) for k in range(K)})
        duals[rh.conv] = rng.uniform(-0.5, 0.5)
        pi = np.array([duals[("cover", k)] - duals[("link", rh.ri, k)] for k in range(K)])
        box = (0.5 * np.einsum("sk,kl,sl->s", Z, rh.A, Z) - Z @ pi - duals[rh.conv]).max()
        best = {}
        for pairs in (0, 32):
            rh.pairs = pairs
            cols = rh(duals)
            for c in cols:
                z = np.zeros(K, dtype=np.int64)
                for k, q in c.key:
                    z[k] = q
                assert (z >= 0).all() and (z <= rh.cap).all() and (rh.dem @ z <= rh.lim).all()
            best[pairs] = max(pat.rc(c, duals) for c in cols)
        assert best[0] <= best[32] + 1e-12 and best[32] <= box + 1e-9
        start = rh.starts[:16].copy()
        rc0 = 0.5 * np.einsum("sk,kl,sl->s", start, rh.A, start) - start @ pi
        after = rh._pair_ascent(start.copy(), pi)
        rc1 = 0.5 * np.einsum("sk,kl,sl->s", after, rh.A, after) - after @ pi
        fit = (rh.dem @ start.T <= rh.lim[:, None]).all(axis=0)
        assert fit.any()
        assert (rh.dem @ after[fit].T <= rh.lim[:, None]).all()  # rows within the limits stay so
        assert (after >= 0).all() and (after <= rh.cap).all()
        assert (rc1[fit] >= rc0[fit] - 1e-9).all()
        # pair-optimal: no move of two groups (every point of their box within the limits) improves
        # a row that was within the limits
        for r in np.flatnonzero(fit):
            for a in range(K):
                for b in range(a + 1, K):
                    for xa in range(rh.cap[a] + 1):
                        for xb in range(rh.cap[b] + 1):
                            z = after[r].copy()
                            z[a], z[b] = xa, xb
                            if (rh.dem @ z <= rh.lim).all():
                                v = 0.5 * z @ rh.A @ z - z @ pi
                                assert v <= rc1[r] + 1e-9 * max(1.0, abs(rc1[r])), (r, a, b, xa, xb)
        improved += (rc1[fit] > rc0[fit] + 1e-9).any()
        for pairs in (0, 32):
            rh.pairs = pairs
            for cap in (8, 16, 40):
                rh.fails = rh.skip = 0
                got = rh.exact(duals, state_cap=cap, seconds=1.0)
                if got is None:
                    assert rh.gave_up >= box - 1e-9
                    finite += math.isfinite(rh.gave_up)
                else:
                    assert got[0] == pytest.approx(box, abs=1e-7) and got[0] >= box
    assert finite >= 3 and improved >= 3  # the give-up bounds are finite, the pair moves do improve


def _giving_up(P, monkeypatch):
    """RackHeuristic.exact giving up at every call (a quick round's give-up leaves the family
    to CP-SAT, so the exact round prices it again): with a prefix cap of 8 (its own bound then),
    and where it still succeeds, as a give-up with its maximum + 0.25 as the bound (valid,
    loose: these small racks' searches seldom exceed any cap)."""
    real = P.RackHeuristic.exact

    def exact(self, duals, state_cap=1_000_000, seconds=2.0):
        got = real(self, duals, state_cap=8, seconds=seconds)
        if got is not None:
            self.gave_up = got[0] + 0.25
        return None

    price = P.PatternModel.price

    def unproven_quick(self, fi, duals, want=8, quick=None, phase1=False):
        # a quick round's CP-SAT proof of a small rack is not kept, so the exact round runs
        r = price(self, fi, duals, want, quick, phase1)
        rack = self.families[fi].exact is not None
        return (r[0], r[1], False) if rack and quick is not None and quick <= 2.0 else r

    monkeypatch.setattr(P.RackHeuristic, "exact", exact)
    monkeypatch.setattr(P.PatternModel, "price", unproven_quick)


# slow tier since session 22 (the default suite took 598-619 s on that machine; 8 s; the settled two-rack search tests after it stay)
@pytest.mark.slow
def test_column_generation_bound_from_unproven_pricing_is_valid(monkeypatch):
    """Column generation whose rack pricing gives up in its exact rounds and settles for the
    search's bound returns a Lagrangian bound that is at least the converged LP optimum
    (any valid bound is), and marks it unproven."""
    from formulations import _patterns as P

    pm = _network_pm(parse_instance(layered(20, 5, 4, 0)))
    ref, _, _ = P.build_network(pm, None, 1, tables=False)
    ub_ref, _, _ = ref.generate()
    _giving_up(P, monkeypatch)  # before the build, which binds RackHeuristic.exact
    pm = _network_pm(parse_instance(layered(20, 5, 4, 0)))
    pat, _, _ = P.build_network(pm, None, 1, tables=False)
    pat.settle = True
    ub, duals, maxrc = pat.generate()
    assert pat.stats.get("settled", 0) >= 1 and pat.stats["bound_pricing"] == "unproven"
    assert ub is not None and ub >= ub_ref - 1e-7 * max(1.0, abs(ub_ref))


# slow tier since session 38 (the default suite took 619 s in a clean clone on its machine);
# test_two_rack_search_agrees_with_enumeration[size0] stays in the default tier
@pytest.mark.slow
@pytest.mark.parametrize("size", [(16, 5, 4), (20, 5, 4)])
def test_two_rack_search_after_settled_column_generation_agrees(size, monkeypatch):
    """No rack table (as at 100x9x10) and the exact rack pricing giving up in every exact round:
    column generation settles for the search's bound, the two-rack search still proves the
    optimum of the normal route, and the plan passes the evaluator."""
    from formulations import _patterns as P

    inst = parse_instance(layered(*size, 0))
    ref = planner.solve(inst, "network", "exact.cpsat", time_limit=60)
    monkeypatch.setattr(P, "_rack_box", lambda pm, ri: 10**12)  # no rack table: the heuristic and exact()
    _giving_up(P, monkeypatch)
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=60)
    assert r.details.get("settled", 0) >= 1 and "two_rack_splits" in r.details, r.details
    assert r.status.value == ref.status.value == "optimal" and r.metrics["feasible"]
    assert r.objective == pytest.approx(ref.objective, abs=TOL) and r.bound == pytest.approx(r.objective, abs=TOL)


@pytest.mark.slow
@pytest.mark.parametrize("comps,optimum", [(9, 31.88), (10, 21.08), (11, 19.09)])
def test_network_100_executors_10_nodes_seed_1_proven(comps, optimum):
    """The generator's seed 1 at 100x9x10, 100x10x10 (branch net-seeds) and 100x11x10 (session
    12): at 9 components the rack heuristic's pair ascent finds the improving rack columns
    coordinate ascent missed, so column generation converges; at 10 and 11 the node table
    (about 2.35e8 and 5.2e8 pairs) passes the gate (``TABLE_SHARE``); then the two-rack search
    proves the plan. Proven (bound = plan), the
    plan passes the evaluator, is no worse than storm.ras, and is the optimum all three back
    ends proved (docs/benchmarks.md), so a search that pruned wrongly and called a worse plan
    optimal fails here. (120 s so the test holds on a loaded machine; the 60 s figures are
    docs/benchmarks.md's.)"""
    inst = parse_instance(layered(100, comps, 10, 1))
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=120)
    assert r.status.value == "optimal", (r.message, r.details)
    assert "two_rack_splits" in r.details, r.details
    assert r.metrics["feasible"] and abs(r.bound - r.objective) <= TOL
    assert r.objective <= planner.solve(inst, "network", "storm.ras").objective + TOL
    assert r.objective == pytest.approx(optimum, abs=0.005)


@pytest.mark.parametrize("size", [(16, 5, 4), (30, 6, 4)])
def test_node_vectors_are_the_box_points_within_the_limits_in_code_order(size):
    """_node_vectors (built axis by axis by a compiled pass) gives exactly the count vectors of
    the node's box within its CPU and memory limits, in mixed-radix code order with the last
    group most significant, their uses (demand . y), in the dtype asked for; None past the row
    limit and the rows themselves at it."""
    import itertools

    import numpy as np

    from formulations import _nodetable as NT

    pm = _network_pm(parse_instance(layered(*size, 0)))
    G, n = pm.groups, pm.nodes[0]
    caps = [pm.node_cap(g, 0) for g in G]
    dem = np.array([[int(round(g.comp.cpu * 1000)) for g in G], [int(round(g.comp.memory_mb * 1000)) for g in G]])
    lim = np.array([int(math.floor(n.cpu * 1000 + 1e-6)), int(math.floor(n.memory_mb * 1000 + 1e-6))])
    assert pm.ras and not any(g.comp.resources for g in G)
    # itertools.product varies its last factor fastest: give it the groups last-first
    box = [y[::-1] for y in itertools.product(*[range(c + 1) for c in reversed(caps)])]
    want = np.array([y for y in box if (dem @ np.array(y) <= lim).all()])
    assert 0 < len(want) < len(box)  # the limits cut the box
    for dt in (np.int16, np.uint8):
        Y, use, got_lim = NT._node_vectors(pm, 0, 10_000_000, dtype=dt)
        assert Y.dtype == dt and np.array_equal(Y, want)
        assert np.array_equal(use, want @ dem.T) and np.array_equal(got_lim, lim)
    assert NT._node_vectors(pm, 0, len(want) - 1) is None
    assert len(NT._node_vectors(pm, 0, len(want))[0]) == len(want)


def test_quad_is_the_einsum_of_the_counts():
    """_kernels.quad (a node table's co-location y A y without a float copy of the counts)
    equals numpy's einsum over the float counts, for int16 and uint8 counts and a non-symmetric
    A with fractional entries (to float64 rounding; identical on the tables measured)."""
    import numpy as np

    from formulations import _kernels as K_

    rng = np.random.default_rng(4)
    for dt in (np.int16, np.uint8):
        Y = rng.integers(0, 13, size=(5000, 9)).astype(dt)
        A = np.round(rng.random((9, 9)) * 3, 3) * (rng.random((9, 9)) < 0.4)
        want = np.einsum("ik,kl,il->i", Y.astype(np.float64), A, Y.astype(np.float64))
        got = K_.quad(Y, A)
        assert got.dtype == np.float64 and np.allclose(got, want, rtol=1e-14, atol=0.0)
        assert np.array_equal(K_.quad(Y[:1], np.zeros((9, 9))), [0.0])


def _four_racks(seed: int) -> dict:
    """A small topology on four racks, one of nodes without CPU (a rack whose only content is
    empty, as rack-2 of ras-doc-five-racks): the rack-content enumeration of more than two racks."""
    import random

    rng = random.Random(seed)
    comps = [{"id": "s", "kind": "spout", "parallelism": 2, "cpu": 20, "memory_onheap_mb": 128},
             {"id": "a", "parallelism": rng.randint(1, 3), "cpu": 20, "memory_onheap_mb": 128},
             {"id": "b", "parallelism": rng.randint(1, 3), "cpu": 20, "memory_onheap_mb": 128}]
    streams = [{"source": "s", "target": "a"}, {"source": "a", "target": "b", "grouping": "fields"}]
    racks = [{"id": f"r{r}", "nodes": [{"id": f"r{r}n{i}", "slots": 2, "cpu": cpu, "memory_mb": 4000} for i in range(nn)]}
             for r, (nn, cpu) in enumerate([(1, 60), (2, 40), (1, 0), (1, rng.choice([60, 100]))])]
    return {"topologies": [{"id": "t", "components": comps, "streams": streams, "max_heap_mb": 384}],
            "cluster": {"racks": racks}}


def test_rack_enumeration_over_four_racks_agrees_with_bruteforce(monkeypatch):
    """More than two racks: the rack contents within the margin are enumerated rack by rack
    (vectorised, with the remainder looked up among the last rack's contents). Without the
    local search's incumbent (nor the worker cuts' plans) the tuples must be solved, and the optimum must be brute force's."""
    import formulations.network as N

    monkeypatch.setattr(N, "_local_search", lambda run, base, pat, info, seed, start, det: start)
    monkeypatch.setattr(N, "_cut_plans", lambda run, plan, m, found, det: None)  # no worker-cut plans either
    solved = 0
    for seed in range(5):
        d = _four_racks(seed)
        ref = planner.solve(d, "network", "exact.bruteforce", time_limit=60)
        assert ref.status.value == "optimal", seed
        for method in ("exact.cpsat", "exact.milp-highs"):
            r = planner.solve(d, "network", method, time_limit=60)
            assert r.status.value == "optimal", (seed, method, r.message)
            assert r.objective == pytest.approx(ref.objective, abs=1e-9), (seed, method)
            assert "margin" in r.details and "two_rack_splits" not in r.details
            m = planner.evaluate(d, r.plan, "network")
            assert m["feasible"] and m["network_metric"] == pytest.approx(r.objective, abs=1e-9)
            solved += r.details["rack_tuples"] > 0
    assert solved >= 5, solved


def test_worker_search_moves_on_a_big_cluster_are_the_feasible_ones():
    """On a cluster of mostly empty workers (ras-doc-five-racks, 200 slots) the search looks at
    occupied sources and, per node, the first empty worker: the move mask over those equals the
    feasibility of each move (worker_ok, node_ok), and every other empty worker of a node has
    the same mask and scores as that node's first one (so nothing the full scan would pick is
    lost)."""
    import random

    import numpy as np

    from formulations._networkls import WorkerSearch

    d = json.loads((REPO / "instances" / "ras-doc-five-racks.json").read_text())
    d["topologies"] = [layered(12, 4, 4, 0)["topologies"][0]]
    pm = _network_pm(parse_instance(d))
    edges, _ = _edges_const(pm)
    ws = WorkerSearch(pm, edges)
    X = ws.greedy()
    assert X is not None and ws.feasible(X)
    rng = random.Random(3)
    allw = np.arange(ws.Wn)
    for _ in range(6):
        X = ws.kick(X, rng, 4)
        Y = ws.node_sums(X)
        occ, act = ws._active(X)
        assert list(occ) == [w for w in range(ws.Wn) if X[w].any()]
        full = ws._move_mask(X, Y, occ, allw)
        S = ws._scores(X, Y)
        for i, w1 in enumerate(occ):
            for w2 in range(ws.Wn):
                for g in range(ws.K):
                    Xm = X.copy()
                    Xm[w1, g] -= 1
                    Xm[w2, g] += 1
                    n2 = ws.wnode[w2]
                    want = bool(w1 != w2 and X[w1, g] > 0 and ws.worker_ok(Xm[w2], w2)
                                and (ws.wnode[w1] == n2 or ws.node_ok(ws.node_sums(Xm)[n2], n2)))
                    assert bool(full[i, w2, g]) == want, (w1, w2, g)
        for w2 in range(ws.Wn):  # an empty worker behaves as its node's first empty worker
            if X[w2].any():
                continue
            first = next(w for w in act if ws.wnode[w] == ws.wnode[w2] and not X[w].any())
            assert (full[:, w2, :] == full[:, first, :]).all() and (S[w2] == S[first]).all()
        assert ws.feasible(X)


@pytest.mark.parametrize("seed", range(40))
def test_traffic_groups_from_two_executors_equal_those_from_every_pair(seed):
    """traffic_groups reads derived traffic between executors 0 and 1 of each component only
    (``executor_traffic(first=2)``; every pair of Storm's largeCluster01 took 32 s). The groups
    and the per-pair rates equal those from every executor pair, the same traffic given as a
    measured matrix (which reads every pair), on random traffic instances with global, all,
    fields and shuffle streams and parallelism up to 6."""
    import random

    from formulations._rasmodel import traffic_groups
    from planner import rates

    d = small_random("traffic", 7000 + seed)
    rng = random.Random(seed)
    for t in d["topologies"]:
        t.pop("traffic", None)  # derived traffic here; a measured matrix is the reference below
        for c in t["components"]:
            c["parallelism"] = rng.randint(1, 6)
    inst = parse_instance(d)
    for ti, t in enumerate(inst.topologies):
        full = rates.executor_traffic(t)
        measured = t.model_copy(update={"traffic": [
            TrafficEntry(source=a[0], source_index=a[1], target=b[0], target_index=b[1], rate=r)
            for (a, b), r in full.items()]})
        fast_groups, fast_pairs = traffic_groups(ti, t)
        ref_groups, ref_pairs = traffic_groups(ti, measured)
        assert [(g.comp.id, g.members) for g in fast_groups] == [(g.comp.id, g.members) for g in ref_groups]
        assert list(fast_pairs) == list(ref_pairs)  # the same pairs, in the same order
        assert fast_pairs == pytest.approx(ref_pairs, rel=1e-12)
