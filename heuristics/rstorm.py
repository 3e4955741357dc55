"""R-Storm, the original resource-aware scheduler (Peng, Hosseini, Hong, Farivar, Campbell,
"R-Storm: Resource-Aware Scheduling in Storm", Middleware 2015), as ALGORITHMS.md states it:
the RAS document's "DefaultResourceAwareStrategy" in its comparison, and Shukla and Simmhan's
"RSM" baseline.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from planner.model import Instance, Topology
from planner.registry import register

from .common import ClusterState, quick_infeasibility, schedule_topologies

RSTORM_PROBLEMS = ["network", "feasibility", "admission"]


def bfs_components(t: Topology) -> list[str]:
    """Components in breadth-first order from the spouts (R-Storm section 4.1, task selection):
    spouts by id, then each newly reached component in the order its parent lists it (children
    by id). Components no spout reaches come last, by id."""
    children: dict[str, list[str]] = {c.id: [] for c in t.components}
    for s in t.streams:
        if s.target not in children[s.source]:
            children[s.source].append(s.target)
    for k in children:
        children[k].sort()
    roots = sorted(c.id for c in t.components if c.kind == "spout") or sorted(
        set(children) - {s.target for s in t.streams})
    seen, out, q = set(roots), [], deque(roots)
    while q:
        u = q.popleft()
        out.append(u)
        for v in children[u]:
            if v not in seen:
                seen.add(v)
                q.append(v)
    out += sorted(set(children) - seen)
    return out


def bfs_executor_order(t: Topology) -> list[tuple[str, int]]:
    """Executors taken round robin over the components in BFS order: one of each component in
    that order, then the next one of each, until all are taken."""
    comps = bfs_components(t)
    par = {c.id: c.parallelism for c in t.components}
    out = []
    for k in range(max(par.values())):
        for c in comps:
            if k < par[c]:
                out.append((c, k))
    return out


def rstorm_place_fn(wc: float = 1.0, wm: float = 1.0, wn: float = 1.0):
    """R-Storm node selection (section 4.2): the first executor goes to the rack with the most
    available CPU + memory and there to the node closest (Euclidean, weights ``wc``, ``wm``) to
    the request; every next executor to the node, among those with the resources and a fitting
    slot, minimising sqrt(wc (cpu_req - cpu_avail)^2 + wm (mem_req - mem_avail)^2 + wn d^2)
    with d = 0 on the reference node, 0.5 in its rack, 1 elsewhere; the chosen node becomes
    the reference. Within a node, the lowest port that fits."""

    def place(state: ClusterState, t: Topology) -> str | None:
        why = quick_infeasibility(state, t)
        if why:
            return why
        reqs = state.reqs(t)
        ref = -1
        racks = state.node_rack
        for c, x in bfs_executor_order(t):
            req = reqs[c]
            dist = wc * (req.cpu - state.cpu) ** 2 + wm * (req.mem - state.mem) ** 2
            ok = (state.cpu >= req.cpu - 1e-9) & (state.mem >= req.mem - 1e-9)
            if ref < 0:
                # the rack with the most available CPU + memory first, then the others
                tot = np.zeros(len(state.rack_ids))
                np.add.at(tot, racks, state.cpu + state.mem)
                rank_of_rack = np.argsort(np.argsort(-tot, kind="stable"), kind="stable")
                key1 = rank_of_rack[racks]
            else:
                d = np.where(np.arange(state.N) == ref, 0.0, np.where(racks == racks[ref], 0.5, 1.0))
                dist = dist + wn * d * d
                key1 = np.zeros(state.N)
            cand = np.flatnonzero(ok)
            placed = False
            for n in cand[np.lexsort((state.id_rank[cand], dist[cand], key1[cand]))].tolist():
                if not state.node_fits(t.id, req, n):
                    continue
                for p in state.ports[n]:
                    if state.slot_fits(t.id, req, n, p, t.max_heap_mb):
                        state.assign(t.id, req, x, n, p)
                        ref = n
                        placed = True
                        break
                if placed:
                    break
            if not placed:
                state.unassign_topology(t)
                return f"no node has the resources and a fitting slot for executor {c}[{x}] (R-Storm, no backtracking)"
        return None

    return place


@register("rstorm", RSTORM_PROBLEMS, source="Peng et al., R-Storm, Middleware 2015, section 4 (task selection: BFS; "
          "node selection: weighted Euclidean distance with network distance)",
          options={"wc": 1.0, "wm": 1.0, "wn": 1.0},
          summary="original R-Storm: BFS task order, closest node by resource and network distance")
def rstorm(instance: Instance, problem: str, *, time_limit=None, seed=0, wc=1.0, wm=1.0, wn=1.0):
    """The original R-Storm strategy (see :func:`rstorm_place_fn`) under RAS multi-tenancy.
    Deviations: CPU and memory enter the distance unnormalised with weights 1, as Shukla and
    Simmhan describe it; the slot check (worker heap, one topology per worker) is added so the
    plan is valid for Storm's workers."""
    return schedule_topologies(instance, problem, "rstorm", rstorm_place_fn(float(wc), float(wm), float(wn)))
