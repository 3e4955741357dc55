"""A plan written the way Storm assigns: worker slots with executor task ranges.

Storm numbers a topology's tasks from 1 over its components sorted by id (system components
included, so ``__acker`` sorts with the others), each component taking as many consecutive
ids as it has tasks. A component's tasks are split over its executors in order, larger
chunks first (``Utils.partitionFixed``): 10 tasks on 3 executors give [1-4], [5-7], [8-10].
Executor ``i`` of a component (our index) is chunk ``i``.

Tasks per component: the import info's ``tasks`` (``instance.meta["storm"]["topologies"][id]
["tasks"]``) when the importer recorded a count that differs from the executor count, else one
task per executor. When the recorded tasks are fewer than the executors (Storm would then run
only that many executors), each executor still gets one task id: tasks = max(tasks, executors).
"""

from __future__ import annotations

from typing import Any

from ..model import Instance, InstanceError
from ..plan import Plan


def partition_fixed(n_chunks: int, first: int, count: int) -> list[tuple[int, int]]:
    """Split task ids ``first .. first+count-1`` into ``n_chunks`` [start, end] ranges, larger first."""
    base, extra = divmod(count, n_chunks)
    out, t = [], first
    for i in range(n_chunks):
        size = base + (1 if i < extra else 0)
        out.append((t, t + size - 1))
        t += size
    return out


def task_ranges(instance: Instance, topology_id: str) -> dict[str, list[tuple[int, int]]]:
    """{component: [(start, end) per executor index]} for one topology."""
    topo = instance.topology(topology_id)
    recorded = (((instance.meta or {}).get("storm") or {}).get("topologies") or {}).get(topology_id, {}).get("tasks") or {}
    out: dict[str, list[tuple[int, int]]] = {}
    next_id = 1
    for c in sorted(topo.components, key=lambda c: c.id):
        n_tasks = max(int(recorded.get(c.id, c.parallelism)), c.parallelism)
        out[c.id] = partition_fixed(c.parallelism, next_id, n_tasks)
        next_id += n_tasks
    return out


def to_assignment(instance: Instance, plan: Plan) -> dict[str, Any]:
    """Per topology: worker slots ``{node, port, executors: [[start, end], ...]}`` as Storm assigns.

    Also ``executors`` (every executor: component, index, task range, node, port) and
    ``unassigned`` (task ranges the plan leaves unplaced). A placement naming an unknown
    topology, component or executor index raises InstanceError.
    """
    by_topo: dict[str, dict[tuple[str, int], tuple[str, int]]] = {}
    known = {t.id for t in instance.topologies}
    node_ids = {n.id for n in instance.cluster.nodes}
    for i, p in enumerate(plan.placements):
        where = f"plan.placements[{i}]"
        if p.topology not in known:
            raise InstanceError(where + ".topology", f"unknown topology {p.topology!r}")
        if p.node not in node_ids:
            raise InstanceError(where + ".node", f"unknown node {p.node!r}")
        by_topo.setdefault(p.topology, {})[(p.component, p.executor)] = (p.node, p.slot)
    result: dict[str, Any] = {"topologies": {}}
    for topo in instance.topologies:
        ranges = task_ranges(instance, topo.id)
        placed = by_topo.get(topo.id, {})
        for (comp, idx) in placed:
            if comp not in ranges:
                raise InstanceError("plan.placements", f"topology {topo.id!r} has no component {comp!r}")
            if idx >= len(ranges[comp]):
                raise InstanceError("plan.placements", f"{topo.id}/{comp} has {len(ranges[comp])} executors; index {idx} is out of range")
        workers: dict[tuple[str, int], list[tuple[int, int]]] = {}
        executors, unassigned = [], []
        for comp in sorted(ranges):
            for idx, rng in enumerate(ranges[comp]):
                slot = placed.get((comp, idx))
                if slot is None:
                    unassigned.append(list(rng))
                    continue
                workers.setdefault(slot, []).append(rng)
                executors.append({"component": comp, "index": idx, "tasks": list(rng), "node": slot[0], "port": slot[1]})
        result["topologies"][topo.id] = {
            "workers": [{"node": n, "port": p, "executors": [list(r) for r in sorted(rs)]}
                        for (n, p), rs in sorted(workers.items())],
            "executors": executors,
            "unassigned": unassigned,
            "tasks_total": sum(r[-1][1] - r[0][0] + 1 for r in ranges.values()),
        }
    return result
