"""MILP back ends: statuses and bounds say what the solver proved (CBC past its clock, maximisation bounds)."""
import random

import pulp
import pytest

from formulations import gap
from formulations._linmodel import LinModel, solve_model


def test_log_line_or_clock_decides():
    assert gap.cbc_infeasible_is_proof("Result - Problem proven infeasible\n", 0.2, 5.0)
    assert gap.cbc_infeasible_is_proof("", 0.2, None)
    assert not gap.cbc_infeasible_is_proof("Result - Stopped on time limit\n", 0.2, 5.0)
    assert not gap.cbc_infeasible_is_proof("", 5.3, 5.0)


def test_proven_infeasible_stays_infeasible():
    p = pulp.LpProblem("odd", pulp.LpMinimize)
    x = pulp.LpVariable("x", 0, 10, cat="Integer")
    p += x
    p += 2 * x == 3
    assert gap.run_pulp(p, "cbc", 5.0).status == "infeasible"


def _odd_partition(n: int = 60):
    """Even weights that must sum to an odd number: infeasible, and hard for branch and bound."""
    rng = random.Random(1)
    w = [2 * rng.randint(10**5, 10**6) for _ in range(n)]
    return w, sum(w) // 2 + 1


def test_unproven_infeasible_is_not_claimed():
    w, target = _odd_partition()
    p = pulp.LpProblem("hard", pulp.LpMinimize)
    xs = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(len(w))]
    p += pulp.lpSum(xs)
    p += pulp.lpSum(a * b for a, b in zip(w, xs)) == target
    out = gap.run_pulp(p, "cbc", 0.5)
    assert out.status == "unknown"
    m = LinModel("min")
    v = [m.var(f"x{i}", 0, 1) for i in range(len(w))]
    m.add({k: a for k, a in zip(v, w)}, lo=target, hi=target, family="odd")
    m.objective = {k: 1 for k in v}
    assert solve_model(m, "cbc", time_limit=0.5).status == "unknown"


def test_stopped_maximisation_reports_an_upper_bound():
    """A maximisation stopped by its limit: the bound is above every plan any back end found,
    in the model's sense (pulp.HiGHS solves the negated objective: its dual bound came back
    negated)."""
    w, cap = _odd_partition()  # odd cap, even weights: the proof is hard, so the solvers stop early
    out = {}
    for backend in ("cbc", "highs", "cpsat"):
        m = LinModel("max")
        v = [m.var(f"x{i}", 0, 1) for i in range(len(w))]
        m.add({k: a for k, a in zip(v, w)}, hi=cap, family="cap")
        m.objective = {k: a for k, a in zip(v, w)}
        out[backend] = solve_model(m, backend, time_limit=1.0)
        assert out[backend].status in ("feasible", "optimal"), (backend, out[backend].status)
        assert out[backend].objective <= cap - 1
    best = max(s.objective for s in out.values())
    for backend, s in out.items():
        if s.bound is not None:
            assert s.bound >= best - 1e-6, (backend, s.status, s.objective, s.bound, best)


def test_cbc_answer_after_preprocessing_emptied_the_model_is_checked():
    """Admission instance ``small_random("admission", 80)``: CBC 2.10.3's preprocessing removes
    the whole model and it then reported 1 as optimal; brute force, CP-SAT and HiGHS give 3.
    ``gap.run_cbc`` solves such a model again without preprocessing."""
    import planner
    from formulations._gen import small_random
    from planner.model import parse_instance

    inst = parse_instance(small_random("admission", 80))
    ref = planner.solve(inst, "admission", "exact.bruteforce")
    assert ref.status.value == "optimal" and ref.objective == 3
    r = planner.solve(inst, "admission", "exact.milp-cbc")
    assert r.status.value == "optimal" and r.objective == 3 and r.bound == 3, (r.status, r.objective, r.bound)
    assert r.metrics["feasible"]


def _knapsack(seed: int, n: int = 25):
    rng = random.Random(seed)
    w = [rng.randint(5, 40) for _ in range(n)]
    v = [rng.randint(1, 60) for _ in range(n)]
    cap = sum(w) // 3
    p = pulp.LpProblem(f"ks{seed}", pulp.LpMaximize)
    xs = [pulp.LpVariable(f"x{i}", 0, rng.randint(1, 3), cat="Integer") for i in range(n)]
    p += pulp.lpSum(a * x for a, x in zip(v, xs))
    p += pulp.lpSum(a * x for a, x in zip(w, xs)) <= cap
    return p, xs, w, v, cap


def _greedy_start(xs, w, v, cap) -> float:
    """Set a feasible start (by value per weight) as the variables' initial values; its value."""
    left, value = cap, 0
    for i in sorted(range(len(xs)), key=lambda i: -v[i] / w[i]):
        k = min(int(xs[i].upBound), left // w[i])
        xs[i].setInitialValue(k)
        left -= k * w[i]
        value += k * v[i]
    return value


def test_highs_with_a_start_agrees_with_scipys_highs():
    """``run_pulp(..., "highs", warm=True)`` (highspy in this process, the start handed over)
    proves the same optima as SciPy's HiGHS, which takes no start; an infeasible start is only
    ignored."""
    for seed in range(12):
        p, xs, w, v, cap = _knapsack(seed)
        plain = gap.run_pulp(p, "highs", 10.0)
        start = _greedy_start(xs, w, v, cap)
        if seed % 3 == 0:  # over capacity: HiGHS must reject it
            for x in xs:
                x.setInitialValue(x.upBound)
        warm = gap.run_pulp(p, "highs", 10.0, warm=True)
        assert plain.status == warm.status == "optimal", seed
        assert warm.objective == pytest.approx(plain.objective, abs=1e-6) and warm.objective >= start - 1e-6, seed
        got = [round(x.varValue) for x in xs]
        assert sum(a * k for a, k in zip(w, got)) <= cap
        assert sum(a * k for a, k in zip(v, got)) == pytest.approx(warm.objective, abs=1e-6)


def test_highs_stopped_at_once_keeps_the_start():
    """Stopped before its search, HiGHS with a start returns that start (or better) as a feasible
    plan, and a bound above it when it has one yet (the odd partition: its proof is hard)."""
    w, cap = _odd_partition()
    p = pulp.LpProblem("hard_max", pulp.LpMaximize)
    xs = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(len(w))]
    p += pulp.lpSum(a * x for a, x in zip(w, xs))
    p += pulp.lpSum(a * x for a, x in zip(w, xs)) <= cap
    start = _greedy_start(xs, w, [a for a in w], cap)
    out = gap.run_pulp(p, "highs", 1e-3, warm=True)
    assert out.status == "feasible"
    assert out.objective >= start
    assert out.bound is None or out.bound >= out.objective
