"""The Python front door: solve(), evaluate(), compare(), load_instance()."""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

from .evaluate import evaluate as _evaluate
from .model import Instance, InstanceError, load_instance as _load_file, parse_instance
from .plan import Plan, Result, Status, gap_to_optimal, relative_gap
from .problems import PROBLEMS, get_problem
from .registry import get_method, option_error

__all__ = ["solve", "evaluate", "compare", "load_instance"]


def load_instance(source: str | Path | dict | Instance) -> Instance:
    """An Instance from a path, a JSON-like dict, or the name of a shipped instance."""
    if isinstance(source, Instance):
        return source
    if isinstance(source, dict):
        return parse_instance(source)
    p = Path(source)
    if not p.exists():
        from .instances import shipped_path

        shipped = shipped_path(str(source))
        if shipped is not None:
            p = shipped
    return _load_file(p)


def evaluate(instance: Instance | dict | str | Path, plan: Plan | dict, problem: str | None = None) -> dict[str, Any]:
    """Violations and metrics of ``plan`` (see planner.evaluate.evaluate)."""
    inst = load_instance(instance)
    if isinstance(plan, dict):
        plan = parse_plan(plan)
    if problem is not None and problem not in PROBLEMS:
        raise InstanceError("problem", f"unknown problem {problem!r}; known: {', '.join(PROBLEMS)}")
    return _evaluate(inst, plan, problem)


def parse_plan(data: Any) -> Plan:
    from pydantic import ValidationError

    from .model import _loc_to_path

    if isinstance(data, dict) and "plan" in data and "placements" not in data:
        data = data["plan"]  # a whole Result
    if not isinstance(data, dict):
        raise InstanceError("plan", "a plan must be a JSON object with 'placements'")
    try:
        return Plan.model_validate(data)
    except ValidationError as e:
        raise InstanceError([("plan." + _loc_to_path(err["loc"]), err["msg"]) for err in e.errors()]) from None


def solve(instance: Instance | dict | str | Path, problem: str, method: str, time_limit: float | None = None,
          seed: int = 0, **options: Any) -> Result:
    """Solve ``instance`` for ``problem`` with ``method``; the plan is judged by the evaluator.

    Bad input (instance, problem, method, options) raises InstanceError. A method that fails
    or finds no plan returns a Result with that status and a message; nothing else escapes.
    """
    inst = load_instance(instance)
    if problem not in PROBLEMS:
        raise InstanceError("problem", f"unknown problem {problem!r}; known: {', '.join(PROBLEMS)}")
    info = get_method(method)
    if problem not in info.problems:
        raise InstanceError("method", f"method {method!r} does not solve {problem!r}; it solves {', '.join(info.problems)}")
    bad = option_error(info, options)
    if bad:
        raise InstanceError(f"options.{bad[0]}", bad[1])
    if time_limit is not None and time_limit <= 0:
        raise InstanceError("time_limit", f"must be > 0, got {time_limit}")
    t0 = time.perf_counter()
    try:
        res = info.func(inst, problem, time_limit=time_limit, seed=seed, **options)
    except InstanceError:
        raise
    except Exception as e:  # a method's failure is a result, not a crash
        return Result(problem=problem, method=method, status=Status.ERROR, seconds=time.perf_counter() - t0,
                      message=f"{type(e).__name__}: {e}", details={"traceback": traceback.format_exc(limit=8)})
    res.seconds = time.perf_counter() - t0
    res.problem = problem
    res.method = method
    return judge(inst, res, info.kind)


def judge(inst: Instance, res: Result, kind: str = "heuristic") -> Result:
    """Evaluate the plan independently; the evaluator's objective is the one reported."""
    if res.plan is None:
        if res.status in (Status.OPTIMAL, Status.FEASIBLE):
            res.status = Status.ERROR
            res.message = (res.message + "; " if res.message else "") + "the method reported success without a plan"
        return res
    m = _evaluate(inst, res.plan, res.problem)
    res.metrics = m
    res.objective = m.get("objective")
    if res.status in (Status.OPTIMAL, Status.FEASIBLE) and not m["feasible"]:
        first = "; ".join(f"{v['constraint']} at {v['where']}: {v['detail']}" for v in m["violations"][:3])
        more = f" (+{len(m['violations']) - 3} more)" if len(m["violations"]) > 3 else ""
        if kind == "exact":
            res.status = Status.ERROR
            res.message = f"exact method returned a plan the evaluator rejects: {first}{more}"
        else:
            res.status = Status.INFEASIBLE
            res.message = (res.message + "; " if res.message else "") + f"plan violates {first}{more}"
    if res.status == Status.OPTIMAL and res.bound is None:
        res.bound = res.objective
    if res.ok:
        res.gap = relative_gap(res.objective, res.bound) if res.bound is not None else None
    return res


def compare(instance: Instance | dict | str | Path, problem: str, methods: list[str], time_limit: float | None = None,
            seed: int = 0) -> list[Result]:
    """Solve with several methods; each Result's ``details['gap_to_best']`` is filled when a
    proven optimum is among them."""
    inst = load_instance(instance)
    results = [solve(inst, problem, m, time_limit=time_limit, seed=seed) for m in methods]
    sense = get_problem(problem).sense
    proven = [r.objective for r in results if r.status == Status.OPTIMAL and r.objective is not None]
    if proven:
        best = min(proven) if sense == "min" else max(proven)
        for r in results:
            if r.ok and r.objective is not None:
                r.details["gap_to_optimal"] = gap_to_optimal(r.objective, best)
    return results
