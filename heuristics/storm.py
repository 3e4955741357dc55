"""Apache Storm's schedulers.

Each function names the Storm class it reproduces; ../shared/ALGORITHMS.md states them.
"""

from __future__ import annotations

from collections import defaultdict

from planner.model import Instance
from planner.plan import Placement, Status
from planner.registry import register

from .common import all_slots, no_plan, plan_result, topology_order

FIXED_COUNT_PROBLEMS = ["network", "traffic", "feasibility", "admission"]


def even_slot_order(free: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Storm's EvenScheduler slot interleaving (``EvenScheduler.sortSlots``).

    Free slots grouped by node (node id ascending, ports ascending); nodes ordered by their
    number of free slots, descending (stable); then the first slot of each node in that
    order, the second of each, and so on.
    """
    by_node: dict[str, list[int]] = defaultdict(list)
    for n, p in free:
        by_node[n].append(p)
    nodes = sorted(by_node)
    for n in nodes:
        by_node[n].sort()
    nodes.sort(key=lambda n: -len(by_node[n]))  # stable: ties keep id order
    out = []
    depth = max((len(v) for v in by_node.values()), default=0)
    for k in range(depth):
        for n in nodes:
            if k < len(by_node[n]):
                out.append((n, by_node[n][k]))
    return out


def even_assign(instance: Instance, free: list[tuple[str, int]], topology, counts: dict[str, int] | None = None) -> list[Placement]:
    """One topology by EvenScheduler: k = min(workers, free slots); executor i -> slot i mod k."""
    slots = even_slot_order(free)
    want = topology.workers if topology.workers is not None else len(slots)
    k = min(want, len(slots))
    if k == 0:
        return []
    chosen = slots[:k]
    comps = sorted(topology.components, key=lambda c: c.id)
    execs = [(c.id, i) for c in comps for i in range((counts or {}).get(c.id, c.parallelism))]
    return [Placement(topology=topology.id, component=c, executor=i, node=chosen[j % k][0], slot=chosen[j % k][1])
            for j, (c, i) in enumerate(execs)]


@register("storm.even", FIXED_COUNT_PROBLEMS, source="Apache Storm EvenScheduler / DefaultScheduler (Shukla's DSM)",
          summary="Storm's default round-robin scheduler; no resource check")
def even(instance: Instance, problem: str, *, time_limit=None, seed=0):
    """Storm ``EvenScheduler``: executors sorted by (component, index) dealt round robin over
    k = min(topology.workers, free slots) slots interleaved across nodes. Topologies in
    priority order each take from the slots left free; ``workers`` unset means every free
    slot. It checks no resource, so the evaluator may find its plan over capacity."""
    free = all_slots(instance)
    placements: list[Placement] = []
    missing = []
    for t in topology_order(instance):
        got = even_assign(instance, free, t)
        if not got:
            missing.append(t.id)
            continue
        used = {(p.node, p.slot) for p in got}
        free = [s for s in free if s not in used]
        placements.extend(got)
    if missing and problem != "admission":
        return no_plan(problem, "storm.even", f"no free slot left for topologies {missing}")
    return plan_result(problem, "storm.even", placements, Status.FEASIBLE,
                       details={"unscheduled": missing} if missing else {})
