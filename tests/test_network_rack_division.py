"""network's rack division (session 34; formulations/_rackguide.py ``divided_plan``,
network._rack_division): one topology wider than half a rack is divided over the racks, keeping
the most pairs within racks, and each rack's part is solved alone on that rack's instance."""

from __future__ import annotations

import pytest

import planner
from formulations import _nodetable
from formulations import _rackguide as G
from formulations._gen import layered
from formulations._rasmodel import PlacementModel, Run, component_groups
from formulations.network import solve_network
from planner import rates
from planner.evaluate import evaluate
from planner.model import parse_instance
from planner.plan import Placement, Plan

SIZES = ["20x5x4", "24x5x4", "30x6x4"]


def _inst(size: str, seed: int = 0):
    e, c, n = map(int, size.split("x"))
    return parse_instance(layered(e, c, n, seed, problem="network"))


def _base(inst) -> PlacementModel:
    groups = [g for ti, t in enumerate(inst.topologies) for g in component_groups(ti, t)]
    return PlacementModel(inst, "network", groups, sense="min", build=False)


def _levels(inst, plan) -> tuple[int, dict]:
    """(pairs split over racks, {rack: pairs within it split over workers plus over nodes}),
    counted pair by pair from the plan."""
    t = inst.topologies[0]
    rack_of = inst.cluster.rack_of()
    at = {(q.component, q.executor): (q.node, q.slot) for q in plan.placements}
    cross, within = 0, {}
    for u, downs in rates.downstream(t).items():
        for d in downs:
            for i in range(t.component(u).parallelism):
                for j in range(t.component(d).parallelism):
                    a, b = at[(u, i)], at[(d, j)]
                    if rack_of[a[0]] != rack_of[b[0]]:
                        cross += 1
                    else:
                        within[rack_of[a[0]]] = within.get(rack_of[a[0]], 0) + (a != b) + (a[0] != b[0])
    return cross, within


@pytest.mark.parametrize("size", SIZES)
def test_a_racks_instance_measures_that_racks_part_of_a_plan(size):
    """The proven plan of the whole instance, cut by rack: each part, its executors numbered
    from 0 per component, passes the evaluator on ``rack_instance`` (that rack, those counts),
    and its metric times its executors is the pairs within the rack split over workers plus
    over nodes; with 3 x the pairs split over racks they make the whole metric."""
    inst = _inst(size)
    res = planner.solve(inst, "network", method="exact.cpsat", time_limit=30)
    assert res.status.value == "optimal"
    rack_of = inst.cluster.rack_of()
    cross, within = _levels(inst, res.plan)
    total = 3 * cross
    for rack in inst.cluster.racks:
        mine = sorted((q for q in res.plan.placements if rack_of[q.node] == rack.id),
                      key=lambda q: (q.component, q.executor))
        counts: dict[str, int] = {}
        placed = []
        for q in mine:
            placed.append(q.model_copy(update={"executor": counts.get(q.component, 0)}))
            counts[q.component] = counts.get(q.component, 0) + 1
        if not mine:
            continue
        sub = G.rack_instance(inst, rack.id, counts)
        m = evaluate(sub, Plan(placements=placed), "network")
        assert m["feasible"], m
        part = m["network_metric"] * sum(counts.values())
        assert part == pytest.approx(within.get(rack.id, 0))
        total += part
    assert total / inst.topologies[0].executor_count == pytest.approx(res.objective)


# 24x5x4 and 30x6x4 in the slow tier since session 38 (the default suite took 619 s in a clean clone on its machine)
@pytest.mark.parametrize("size", SIZES[:1] + [pytest.param(s, marks=pytest.mark.slow) for s in SIZES[1:]])
def test_the_divided_plan_passes_the_evaluator_and_follows_a_best_division(size):
    """The divided plan passes the evaluator on the whole instance; its executors per rack keep
    as many pairs within racks as the division model's best (CP-SAT may return another division
    of the same value); its metric is 3 x its pairs over racks plus its racks' parts, each
    proven on its rack here; and it is no better than the proven optimum."""
    inst = _inst(size)
    pm = _base(inst)
    assert G.divisible(inst, pm) is None
    run = Run(inst, "network", "exact.cpsat", 30.0, None, None, True, 0)
    got, info = G.divided_plan(run, pm, None, solve_network)
    assert got is not None and info["margin"] == 1.0
    metric, plan = got
    m = evaluate(inst, plan, "network")
    assert m["feasible"] and m["network_metric"] == pytest.approx(metric)
    cross, within = _levels(inst, plan)
    assert all(status == "optimal" for _, status, _ in info["racks"])
    assert {r: v for r, _, v in info["racks"]} == pytest.approx(within)
    assert (3 * cross + sum(within.values())) / inst.topologies[0].executor_count == pytest.approx(metric)
    counts, racks = G.divide(pm, [0], 1.0, None)
    rack_of = inst.cluster.rack_of()
    have: dict = {}
    for q in plan.placements:
        have[(q.component, rack_of[q.node])] = have.get((q.component, rack_of[q.node]), 0) + 1
    kept = {k: [have.get((g.comp.id, pm.racks[r]), 0) for r in racks] for k, g in enumerate(pm.groups)}

    def pairs_kept(c) -> int:
        return sum(sum(a * b for a, b in zip(c[ku], c[kd])) for ku, kd, _ in pm.stream_pairs())

    assert pairs_kept(kept) == pairs_kept(counts)
    best = planner.solve(inst, "network", method="exact.cpsat", time_limit=30)
    assert best.status.value == "optimal" and metric >= best.objective - 1e-9


def test_not_divided_when_pinned_narrow_or_on_one_rack():
    inst = _inst("20x5x4")
    pm = _base(inst)
    d = layered(20, 5, 4, 0, problem="network")
    d["topologies"][0]["components"][0]["nodes"] = [d["cluster"]["racks"][0]["nodes"][0]["id"]]
    pinned = parse_instance(d)
    assert "pinned" in G.divisible(pinned, _base(pinned))
    one = inst.model_copy(update={"cluster": inst.cluster.model_copy(update={
        "racks": [inst.cluster.racks[0].model_copy(update={"nodes": [n for r in inst.cluster.racks for n in r.nodes]})]})})
    assert "several racks" in G.divisible(one, _base(one))
    big = inst.model_copy(update={"cluster": inst.cluster.model_copy(update={"racks": [
        r.model_copy(update={"nodes": [n.model_copy(update={"cpu": n.cpu * 10, "memory_mb": n.memory_mb * 10})
                                       for n in r.nodes]}) for r in inst.cluster.racks]})})
    assert "not wide" in G.divisible(big, _base(big))
    assert G.divisible(inst, pm) is None


@pytest.mark.slow  # slow tier since session 38 (21 s; the default suite took 778-788 s on its machine)
def test_the_solve_takes_the_divided_plan_where_no_node_table_is_built(monkeypatch):
    """With the node tables refused (their memory budget set to 0, as seed 1's 100x12x10's 6.2
    million rows are), the solve runs the rack division: its plan passes the evaluator, is no
    worse than the division's, and its bound is no more than the optimum proven with tables."""
    inst = _inst("24x5x4")
    proven = planner.solve(inst, "network", method="exact.cpsat", time_limit=30)
    assert proven.status.value == "optimal"
    monkeypatch.setattr(_nodetable, "TABLE_BYTES", 0)
    res = planner.solve(inst, "network", method="exact.cpsat", time_limit=20)
    assert res.ok
    div = res.details.get("configuration", res.details).get("rack_division")
    assert div is not None and "objective" in div, res.details
    assert evaluate(inst, res.plan, "network")["feasible"]
    assert res.objective <= div["objective"] + 1e-9
    assert res.objective >= proven.objective - 1e-9
    assert res.bound is not None and res.bound <= proven.objective + 1e-9


def test_the_rack_parts_placements_are_renumbered_into_the_whole_topology():
    """Every executor of the whole topology is placed once by the divided plan."""
    inst = _inst("30x6x4")
    run = Run(inst, "network", "exact.cpsat", 30.0, None, None, True, 0)
    got, _ = G.divided_plan(run, _base(inst), None, solve_network)
    assert got is not None
    placed = sorted((q.component, q.executor) for q in got[1].placements)
    assert placed == sorted(inst.topologies[0].executors())
    assert all(isinstance(q, Placement) for q in got[1].placements)
