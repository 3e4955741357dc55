"""The GAP core against the OR-Library optima (cattrysse1994, both forms).

Minimisation optima: ../shared/data/gap/data.csv. Maximisation optima: OR-Library's gapinfo
table for gap1..gap12 (Beasley; problems c515-1 .. c1060-5 are files gapK-0 .. gapK-4)."""

from __future__ import annotations

import csv

import pytest

from formulations.gap import parse_orlib, read_orlib, solve_gap
from planner.model import InstanceError

MAX_OPT = {
    1: [336, 327, 339, 341, 326], 2: [434, 436, 420, 419, 428], 3: [580, 564, 573, 570, 564],
    4: [656, 644, 673, 647, 664], 5: [563, 558, 564, 568, 559], 6: [761, 759, 758, 752, 747],
    7: [942, 949, 968, 945, 951], 8: [1133, 1134, 1141, 1117, 1127], 9: [709, 717, 712, 723, 706],
    10: [958, 963, 960, 947, 947], 11: [1139, 1178, 1195, 1171, 1171], 12: [1451, 1449, 1433, 1447, 1446],
}


def min_optima(shared) -> dict[str, int]:
    with open(shared / "data" / "gap" / "data.csv") as f:
        return {r["Path"]: int(r["Optimum"]) for r in csv.DictReader(f) if r["Optimum"]}


def check(shared, group: int, k: int, solver: str) -> None:
    path = f"cattrysse1994/gap{group}-{k}"
    data = read_orlib(shared / "data" / "gap" / path)
    lo = solve_gap(data, "min", solver, time_limit=60)
    assert lo.status == "optimal" and data.feasible(lo.assign)
    assert data.value(lo.assign) == min_optima(shared)[path]
    hi = solve_gap(data, "max", solver, time_limit=60)
    assert hi.status == "optimal" and data.feasible(hi.assign)
    assert data.value(hi.assign) == MAX_OPT[group][k]


@pytest.mark.parametrize("solver", ["cpsat", "highs"])
@pytest.mark.parametrize("group", [1, 6, 12])
def test_cattrysse_subset(shared, group, solver):
    check(shared, group, 0, solver)


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["cpsat", "highs"])
@pytest.mark.parametrize("group", range(1, 13))
def test_cattrysse_all_60(shared, group, solver):
    for k in range(5):
        check(shared, group, k, solver)


def test_cbc_one(shared):
    check(shared, 2, 3, "cbc")


def test_parse_errors():
    d = parse_orlib("2 2\n1 2\n3 4\n5 6\n7 8\n10 10\n")
    assert (d.m, d.n, d.capacity) == (2, 2, [10, 10])
    with pytest.raises(InstanceError, match="needs 12 numbers"):
        parse_orlib("2 2\n1 2 3\n")
    with pytest.raises(InstanceError, match="non-integer"):
        parse_orlib("2 x")


def test_infeasible_gap():
    d = parse_orlib("1 2\n1 1\n5 5\n6\n")  # two items of weight 5, capacity 6
    for s in ("cpsat", "highs", "cbc"):
        assert solve_gap(d, "min", s).status == "infeasible"


# cpsat in the slow tier since session 38 (the default suite took 619 s in a clean clone on its machine); highs
# stays, the solver whose limit this test was written for
@pytest.mark.parametrize("solver", ["highs", pytest.param("cpsat", marks=pytest.mark.slow)])
def test_time_limit_holds_on_a_hard_instance(shared, solver):
    """chu1997 d10100 is not solved in seconds by either solver. HiGHS was given no time limit
    when the caller passed no deadline (solve_gap: a 15 s limit still ran past 300 s, found in
    session 35): the limit must hold, and the stopped solve reports its plan and bound."""
    import time

    data = read_orlib(shared / "data" / "gap" / "chu1997" / "d10100")
    t0 = time.monotonic()
    r = solve_gap(data, "min", solver, time_limit=3)
    assert time.monotonic() - t0 < 3 + 5
    assert r.status == "feasible" and r.value is not None and r.bound is not None and r.bound <= r.value
    assert "time limit" in r.message
