"""Every registered method on every shipped instance: the plan passes the evaluator, or the
result says infeasible/unknown with a reason. Nothing crashes."""

from __future__ import annotations

import pytest

from planner import solve
from planner.instances import shipped
from planner.plan import Status
from planner.registry import list_methods

# methods too slow to run on every shipped instance in the default suite get a time limit (a
# short one: about ten cases run to it, and stopped early must still give a plan or a reason)
TIME_LIMIT = 1.5

CASES = [
    (inst["name"], problem, m.name)
    for inst in shipped()
    for problem in inst["problems"]
    for m in list_methods()
    if problem in m.problems
]


@pytest.mark.parametrize("name, problem, method", CASES)
def test_method_on_shipped_instance(name, problem, method):
    r = solve(name, problem, method, time_limit=TIME_LIMIT)
    assert r.status != Status.ERROR, r.message
    if r.status in (Status.OPTIMAL, Status.FEASIBLE):
        assert r.plan is not None and r.metrics["feasible"], r.metrics and r.metrics["violations"][:3]
        assert r.objective is not None
    else:
        assert r.message, "a method that finds no plan must say why"


def test_every_shipped_instance_has_problems_and_loads():
    from planner import load_instance

    items = shipped()
    assert items
    for i in items:
        assert i["problems"], f"{i['name']} names no problems in meta.problems"
        load_instance(i["name"])
