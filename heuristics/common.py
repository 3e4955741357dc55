"""Small helpers the heuristics share: free slots, result building."""

from __future__ import annotations

from planner.model import Instance, Topology
from planner.plan import Placement, Plan, Result, Status


def topology_order(instance: Instance) -> list[Topology]:
    """Topologies by priority (0 first), then submission time, then id."""
    return sorted(instance.topologies, key=lambda t: (t.priority, t.submitted, t.id))


def all_slots(instance: Instance) -> list[tuple[str, int]]:
    """Every (node, port), nodes by id, ports ascending."""
    return [(n.id, p) for n in sorted(instance.cluster.nodes, key=lambda n: n.id) for p in n.slots]


def plan_result(problem: str, method: str, placements: list[Placement], status: Status = Status.FEASIBLE,
                message: str = "", **kw) -> Result:
    return Result(problem=problem, method=method, status=status, plan=Plan(placements=placements), message=message, **kw)


def no_plan(problem: str, method: str, reason: str, status: Status = Status.INFEASIBLE, **kw) -> Result:
    return Result(problem=problem, method=method, status=status, plan=None, message=reason, **kw)
