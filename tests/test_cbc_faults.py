"""CBC processes that die (a real process killed by SIGSEGV, as CBC 2.10's binary does when its
time limit falls while it reads a start solution; docs/formulations.md, "CBC faults"). The fault
is injected by a wrapper script that kills itself on a chosen argument and otherwise runs the
real CBC, so PuLP, the process and our recovery are the real ones."""

import pytest

import planner
from formulations._gen import layered
from planner.evaluate import evaluate
from planner.model import parse_instance

pulp = pytest.importorskip("pulp")


@pytest.fixture
def dying_cbc(tmp_path, monkeypatch):
    """Install a CBC that dies by SIGSEGV when given ``arg`` (the fixture's value is a setter)."""
    real = pulp.PULP_CBC_CMD().path

    def install(arg: str) -> None:
        script = tmp_path / "cbc"
        script.write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = "{arg}" ] && kill -SEGV $$; done\nexec "{real}" "$@"\n')
        script.chmod(0o755)
        monkeypatch.setattr(pulp, "PULP_CBC_CMD", lambda **kw: pulp.COIN_CMD(path=str(script), **kw))

    return install


def test_a_run_that_dies_with_its_start_solution_is_run_again_without_it(dying_cbc):
    """The compact model with a start solution (``hint``) by CBC: the run given the start
    (-mips) dies; the run again without it proves the optimum, the same as CP-SAT's."""
    dying_cbc("-mips")
    # 8 executors on 2 nodes: the compact model proven by CBC in about 2 s (12 on 3: 6 s; session 20)
    inst = parse_instance(layered(8, 4, 2, 0))
    r = planner.solve(inst, "network", "exact.milp-cbc", time_limit=60, hint="storm.ras", model="compact")
    ref = planner.solve(inst, "network", "exact.cpsat", time_limit=60, model="compact")
    assert r.status.value == ref.status.value == "optimal", (r.message, r.details)
    assert r.details.get("cbc_died") == "again without the start solution"
    assert r.objective == pytest.approx(ref.objective, abs=1e-6)
    assert evaluate(inst, r.plan, "network")["feasible"]


def test_a_dead_cbc_is_reported(dying_cbc):
    """Every CBC run dies. The compact model alone: status unknown, and the message says the CBC
    process died (not a time limit)."""
    dying_cbc("-solve")
    small = parse_instance(layered(12, 5, 3, 0))
    r = planner.solve(small, "network", "exact.milp-cbc", time_limit=30, model="compact")
    assert r.status.value == "unknown" and r.plan is None
    assert "CBC process died" in r.message and r.details.get("cbc_died")


@pytest.mark.slow
def test_a_dead_cbc_leaves_the_configuration_plan_kept(dying_cbc):
    """Every CBC run dies. With the configuration model first (100 executors, 10 and 12
    components, 6 s, where it does not finish its proof), its plan (traffic: tstorm's, when the
    configuration model found none in the time) is returned as feasible and passes the
    evaluator, for network and traffic; where the compact model ran (whether it is
    affordable in the time left depends on the clock), the message says its CBC died, and it
    ran in at least one of the four solves (in all of them in every trial run). Slow tier: four
    solves to the limit (about 17 s)."""
    dying_cbc("-solve")
    died = 0
    for comps in (10, 12):
        inst = parse_instance(layered(100, comps, 10, 0))
        for problem in ("network", "traffic"):
            r = planner.solve(inst, problem, "exact.milp-cbc", time_limit=6.0)
            assert r.status.value == "feasible", (problem, r.message)
            assert evaluate(inst, r.plan, problem)["feasible"]
            if r.details.get("cbc_died"):
                died += 1
                assert "CBC process died" in r.message
    assert died >= 1


def test_a_dead_cbc_after_a_configuration_model_without_a_plan_keeps_tstorm(dying_cbc, monkeypatch):
    """Traffic when the configuration model ends without a plan (as a 6 s solve of 100
    executors did on a slow machine: its seeding search and branch and price stopped by the
    clock; here both are made to return nothing) and every CBC run dies: the compact model was
    started from tstorm's plan, which is returned as feasible, passes the evaluator, and the
    message says so. With the real CBC the same run proves the optimum CP-SAT proves."""
    import formulations.traffic as traffic

    inst = parse_instance(layered(12, 5, 3, 0))
    ref = planner.solve(inst, "traffic", "exact.cpsat", time_limit=60)
    assert ref.status.value == "optimal" and ref.details.get("model") == "configuration", ref.message
    monkeypatch.setattr(traffic, "_branch_and_price", lambda run, base, pairs: None)
    monkeypatch.setattr(traffic.patterns, "run_patterns", lambda *a, **k: {
        "status": "unknown", "value": None, "bound": None, "chosen": None, "stats": {}})
    real_cbc = pulp.PULP_CBC_CMD
    dying_cbc("-solve")
    r = planner.solve(inst, "traffic", "exact.milp-cbc", time_limit=30)
    assert r.status.value == "feasible", r.message
    assert r.details.get("cbc_died") and "CBC process died" in r.message
    assert "tstorm" in r.message
    ev = evaluate(inst, r.plan, "traffic")
    assert ev["feasible"] and ev["objective"] == pytest.approx(r.objective, abs=1e-6)
    assert r.objective >= ref.objective - 1e-6
    monkeypatch.setattr(pulp, "PULP_CBC_CMD", real_cbc)
    r = planner.solve(inst, "traffic", "exact.milp-cbc", time_limit=60)
    assert r.status.value == "optimal", r.message
    assert "tstorm" in r.message and r.objective == pytest.approx(ref.objective, abs=1e-6)


def test_a_dead_cbc_keeps_the_hint_plan(dying_cbc):
    """The compact traffic model started from a hint (``--hint storm.even``) whose every CBC run
    dies returns the hint's plan as feasible (it passed the evaluator before it was used),
    instead of no plan."""
    dying_cbc("-solve")
    inst = parse_instance(layered(12, 5, 3, 0))
    r = planner.solve(inst, "traffic", "exact.milp-cbc", time_limit=30, model="compact", hint="storm.even")
    assert r.status.value == "feasible", r.message
    assert "hint's plan (storm.even) is kept" in r.message and r.details.get("cbc_died")
    even = planner.solve(inst, "traffic", "storm.even")
    assert r.objective == pytest.approx(even.objective, abs=1e-6)
    assert evaluate(inst, r.plan, "traffic")["feasible"]


def test_throughput_and_slots_say_when_cbc_died(dying_cbc, monkeypatch):
    """Throughput and slots run CBC through ``gap.run_pulp``. With every CBC run dying, a
    throughput solve that CBC must prove (the count-vector search off) keeps its start placement
    as feasible, and both problems say in the message that the CBC process died, not that the
    time limit was reached (the limit is 60 s; these stop in seconds). Without the fault the same
    instances are proven, so the fault is what stopped them."""
    from test_exact_slots import tiny as slots_tiny
    from test_exact_throughput import tiny as tp_tiny

    tp = parse_instance(tp_tiny(0, "even", 4, 3, per_node=3))
    slots = parse_instance(slots_tiny(1))
    real_cbc = pulp.PULP_CBC_CMD
    dying_cbc("-solve")
    r = planner.solve(tp, "throughput", "exact.milp-cbc", time_limit=60, count_search=False)
    assert r.status.value == "feasible", r.message
    assert r.details["cbc_died"] == 2  # the run with the start solution, then the one without
    assert r.message.startswith("stopped: the CBC process died (2 runs)") and "time limit" not in r.message
    assert evaluate(tp, r.plan, "throughput")["feasible"]
    assert r.bound >= r.objective
    s = planner.solve(slots, "slots", "exact.milp-cbc", time_limit=60)
    assert s.status.value == "unknown" and s.plan is None
    assert s.details["cbc_died"] >= 1
    assert s.message.startswith("the CBC process died") and "time limit" not in s.message
    monkeypatch.setattr(pulp, "PULP_CBC_CMD", real_cbc)
    r = planner.solve(tp, "throughput", "exact.milp-cbc", time_limit=60, count_search=False)
    assert r.status.value == "optimal" and "cbc_died" not in r.details, r.message
    s = planner.solve(slots, "slots", "exact.milp-cbc", time_limit=60)
    assert s.status.value == "optimal" and "cbc_died" not in s.details, s.message


def test_gap_says_when_cbc_died(dying_cbc, monkeypatch):
    """The GAP reader's solve (``formulations.gap.solve_gap``) with every CBC run dying: status
    unknown, and a message that says the CBC process died, not the time limit; with the real CBC
    the same instance is proven and its message is empty."""
    from formulations.gap import parse_orlib, solve_gap

    # 2 agents, 4 jobs: costs, weights, capacities (OR-Library layout)
    d = parse_orlib("2 4\n3 1 4 1\n5 9 2 6\n2 3 2 4\n3 2 4 1\n6 6\n")
    real_cbc = pulp.PULP_CBC_CMD
    dying_cbc("-solve")
    r = solve_gap(d, "min", "cbc", time_limit=60)
    assert r.status == "unknown" and r.assign is None
    assert r.message.startswith("the CBC process died") and "time limit" not in r.message
    monkeypatch.setattr(pulp, "PULP_CBC_CMD", real_cbc)
    ok = solve_gap(d, "min", "cbc", time_limit=60)
    ref = solve_gap(d, "min", "cpsat", time_limit=60)
    assert ok.status == ref.status == "optimal" and ok.message == ""
    assert ok.value == ref.value and d.feasible(ok.assign)


def test_no_start_solution_for_cbc_under_a_short_limit(dying_cbc):
    """CBC 2.10 can die when its limit falls while it reads a start solution, and under a short
    limit there is no time to run it again: below ``gap.CBC_WARM_MIN_S`` it gets none. With a
    CBC that dies whenever it is given a start (-mips), a compact solve with a hint under a 1 s
    limit does not die (its plan, if any, passes the evaluator), while the same solve under a
    30 s limit is given the start, dies, and runs again without it."""
    from formulations import gap

    assert gap.CBC_WARM_MIN_S > 1.0
    dying_cbc("-mips")
    # 8 executors on 2 nodes: the compact model proven by CBC in about 2 s (12 on 3: 6 s; session 20)
    inst = parse_instance(layered(8, 4, 2, 0))
    short = planner.solve(inst, "network", "exact.milp-cbc", time_limit=1.0, hint="storm.ras", model="compact")
    assert "cbc_died" not in short.details, short.message
    assert short.status.value in ("optimal", "feasible"), short.message
    assert evaluate(inst, short.plan, "network")["feasible"]
    long = planner.solve(inst, "network", "exact.milp-cbc", time_limit=30, hint="storm.ras", model="compact")
    assert long.details.get("cbc_died") == "again without the start solution"
    assert long.objective <= short.objective + 1e-9


def test_a_cold_cbc_that_finds_nothing_keeps_a_whole_start_solution(dying_cbc):
    """Under a short limit CBC runs without the start solution; when it then gives nothing (here:
    it dies), the start solution is returned as feasible when it assigns every variable and holds
    every row, with the message saying CBC died; a start solution that breaks a row is not."""
    from formulations._linmodel import LinModel, solve_model

    dying_cbc("-solve")
    m = LinModel(sense="max")
    x = m.var("x", 0, 5, hint=2)
    y = m.var("y", 0, 5, hint=1)
    m.add({x: 1, y: 1}, hi=4)
    m.objective = {x: 2.0, y: 1.0}
    sol = solve_model(m, "cbc", time_limit=1.0)
    assert sol.status == "feasible" and sol.values == [2, 1] and sol.objective == 5.0
    assert "CBC process died" in sol.message and sol.details.get("cbc_start")
    m.hint[y] = 3  # 2 + 3 > 4: not a plan
    sol = solve_model(m, "cbc", time_limit=1.0)
    assert sol.status == "unknown" and sol.values is None
    m.hint[y] = 1
    assert solve_model(m, "cbc", time_limit=5.0).status == "unknown"  # given the start: no fallback


def test_one_thread_runs_cbcs_serial_code():
    """threads=1 runs CBC's serial code, not its threaded code with one thread: CBC 2.10.3 then
    now and then waited 10 s for its worker thread to start (10-15 of 575 runs of tiny slots
    models, session 20; formulations.gap.run_cbc). More threads are passed on as asked."""
    from formulations.gap import run_cbc

    def knapsack():
        prob = pulp.LpProblem("k", pulp.LpMaximize)
        x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(12)]
        prob += pulp.lpSum((i % 5 + 3) * v for i, v in enumerate(x))
        prob += pulp.lpSum((i % 7 + 2) * v for i, v in enumerate(x)) <= 23
        return prob

    for threads, said in ((1, None), (2, "threads was changed from 0 to 2")):
        prob = knapsack()
        text, _ = run_cbc(prob, None, threads=threads)
        assert prob.sol_status == pulp.LpSolutionOptimal
        if said is None:
            assert "threads was changed" not in text and "Thread 0 used" not in text, text[-800:]
        else:
            assert said in text, text[-800:]
        assert pulp.value(prob.objective) == pytest.approx(36)  # by enumeration of the 4,096 choices
