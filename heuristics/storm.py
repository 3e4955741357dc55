"""Apache Storm's schedulers.

Each function names the Storm class it reproduces; ../shared/ALGORITHMS.md states them.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from typing import Iterable

import numpy as np

from planner.model import Instance, InstanceError, Topology
from planner.plan import Placement, Plan, Status
from planner.registry import register

from .common import (ClusterState, all_slots, no_plan, plan_result, quick_infeasibility, schedule_topologies,
                     topology_order)

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


# ============================================================================================
# Resource Aware Scheduler (RAS)
# ============================================================================================

RAS_PROBLEMS = ["network", "feasibility", "admission"]
MAX_STATES = 10_000  # topology.ras.constraint.max.state.search
TIME_LIMIT = 60.0  # topology.ras.constraint.max.time.secs
VARIANTS = ("common", "old")


# --- executor orders ------------------------------------------------------------------------

def neighbours(topology: Topology) -> dict[str, set[str]]:
    """Parents and children of every component (Storm's ``Component.getParents/getChildren``)."""
    out: dict[str, set[str]] = {c.id: set() for c in topology.components}
    for s in topology.streams:
        out[s.source].add(s.target)
        out[s.target].add(s.source)
    return out


def connection_count_order(topology: Topology) -> list[tuple[str, int]]:
    """Storm ``ExecSorterByConnectionCount`` (BaseResourceAwareStrategy.orderExecutors).

    Score of a component c: sum over its neighbours n of |execs(n)| x |execs(c)|. Components by
    score descending, ties by id ascending. For each in turn, its neighbours by that product
    ascending (ties by id); then repeatedly one not yet taken executor of c followed by one of
    each neighbour, until c and all its neighbours are exhausted.
    """
    par = {c.id: c.parallelism for c in topology.components}
    nb = neighbours(topology)
    score = {c: sum(par[n] * par[c] for n in nb[c]) for c in par}
    comps = sorted(par, key=lambda c: (-score[c], c))
    queues = {c: deque(range(par[c])) for c in par}
    out: list[tuple[str, int]] = []
    for c in comps:
        ns = sorted(nb[c], key=lambda n: (par[n] * par[c], n))
        while True:
            took = False
            if queues[c]:
                out.append((c, queues[c].popleft()))
                took = True
            for n in ns:
                if queues[n]:
                    out.append((n, queues[n].popleft()))
                    took = True
            if not took:
                break
    return out


# --- node sorting (NodeSorterHostProximity) ---------------------------------------------------------

def _shares(cols: list[tuple[np.ndarray, float]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Average and minimum over resources of available / siblings' available; resources whose
    siblings' total is 0 are left out (Storm skips them); with none left both are 0."""
    used = [a / tot for a, tot in cols if tot > 0]
    if not used:
        z = np.zeros(n)
        return z, z
    if len(used) == 2:  # CPU and memory only: the common case, kept cheap
        return (used[0] + used[1]) / 2, np.minimum(used[0], used[1])
    avg = used[0].copy()
    for u in used[1:]:
        avg += u
    avg /= len(used)
    mn = used[0] if len(used) == 1 else np.minimum.reduce(used)
    return avg, mn


def _rack_arrays(state: ClusterState, tid: str, include_slots: bool):
    R = len(state.rack_ids)
    avail = [state.rack_cpu, state.rack_mem]
    if state.res_names:
        avail += [state.rack_res[:, k] for k in range(len(state.res_names))]
    if include_slots:
        avail.append(state.rack_free_slots)
    cols = [(x, float(x.sum())) for x in avail]
    state.counts_of(tid)
    avg, mn = _shares(cols, R)
    return state.rack_count[tid], avg, mn


def _node_arrays(state: ClusterState, tid: str, r: int, include_slots: bool):
    a, b = state.rack_start[r], state.rack_end[r]
    cols = [(state.cpu[a:b], float(state.rack_cpu[r])), (state.mem[a:b], float(state.rack_mem[r]))]
    if state.res_names:
        cols += [(state.res[a:b, k], float(state.rack_res[r, k])) for k in range(len(state.res_names))]
    if include_slots:
        cols.append((state.free_slots[a:b], float(state.rack_free_slots[r])))
    cnt = state.counts_of(tid)[a:b]
    avg, mn = _shares(cols, b - a)
    return cnt, avg, mn


def _order(cnt, avg, mn, rank, variant: str) -> np.ndarray:
    if variant == "common":  # executors here, average, subordinate (minimum), id
        return np.lexsort((rank, -mn, -avg, -cnt))
    if variant == "old":  # executors here, subordinate, average, id (the RAS document)
        return np.lexsort((rank, -avg, -mn, -cnt))
    raise InstanceError("options.variant", f"unknown sort variant {variant!r}; known: {', '.join(VARIANTS)}")


def rack_order(state: ClusterState, tid: str, variant: str = "common", include_slots: bool = False) -> list[int]:
    """Rack indices best first (NodeSorterHostProximity's rack level, see :func:`sort_racks`)."""
    cnt, avg, mn = _rack_arrays(state, tid, include_slots)
    return _order(cnt, avg, mn, state.rack_id_rank, variant).tolist()


def node_order(state: ClusterState, tid: str, r: int, variant: str = "common", include_slots: bool = False,
               keep: np.ndarray | None = None) -> list[int]:
    """Node indices of rack ``r``, best first (the node level of :func:`sort_nodes`); with
    ``keep`` (a boolean mask over all nodes) only the nodes it marks."""
    a, b = state.rack_start[r], state.rack_end[r]
    if a == b:
        return []
    cnt, avg, mn = _node_arrays(state, tid, r, include_slots)
    o = _order(cnt, avg, mn, state.id_rank[a:b], variant)
    if keep is not None:
        o = o[keep[a:b][o]]
    return (o + a).tolist()


def could_fit_mask(state: ClusterState, tid: str, req) -> np.ndarray:
    """Nodes that could take one executor of ``req`` now: enough CPU, memory and generic
    resources, and a free slot or a worker of this topology. While one node order is in use
    the search only adds load to the state it was made in (backtracking below the executor
    that made it discards it), so a node outside this mask could never be chosen from that
    order: leaving it out changes no outcome, only the time spent."""
    ok = (state.cpu >= req.cpu - 1e-9) & (state.mem >= req.mem - 1e-9) & ((state.free_slots > 0) | (state.counts_of(tid) > 0))
    if req.res is not None:
        ok &= np.all(state.res >= req.res - 1e-9, axis=1)
    return ok


class LazyNodes:
    """All nodes in NodeSorterHostProximity order: racks sorted when created, each rack's nodes
    sorted the first time the iteration reaches that rack (Storm's LazyNodeSorting), then kept."""

    __slots__ = ("state", "tid", "variant", "include_slots", "racks", "flat", "next_rack", "keep")

    def __init__(self, state: ClusterState, tid: str, variant: str = "common", include_slots: bool = False,
                 eager: bool = False, req=None):
        self.state, self.tid, self.variant, self.include_slots = state, tid, variant, include_slots
        self.keep = could_fit_mask(state, tid, req) if req is not None else None  # as of now, see could_fit_mask
        self.racks = rack_order(state, tid, variant, include_slots)
        self.flat: list[int] = []
        self.next_rack = 0
        if eager:
            self.get(state.N)

    def get(self, k: int) -> int:
        """The k-th node (index), or -1 past the end."""
        flat = self.flat
        while k >= len(flat):
            if self.next_rack >= len(self.racks):
                return -1
            r = self.racks[self.next_rack]
            self.next_rack += 1
            flat.extend(node_order(self.state, self.tid, r, self.variant, self.include_slots, self.keep))
        return flat[k]


def _state_with(instance: Instance, assigned) -> ClusterState:
    st = ClusterState(instance)
    if assigned:
        pls = assigned.placements if isinstance(assigned, Plan) else list(assigned)
        st.apply_placements(pls)
    return st


def _tid(instance: Instance, topology) -> str:
    tid = topology.id if isinstance(topology, Topology) else str(topology)
    instance.topology(tid)
    return tid


def sort_racks(instance: Instance, topology, assigned: Plan | Iterable[Placement] | None = None,
               variant: str = "common", include_slots: bool = False) -> list[str]:
    """Racks in the order Storm's NodeSorterHostProximity tries them for ``topology``.

    Keys: (1) this topology's executors already on the rack, descending; then for
    ``variant="common"`` (current Storm) (2) the average over resources of rack available /
    cluster available, descending, (3) the minimum of those shares ("subordinate resource
    availability"), descending; for ``variant="old"`` (the RAS document, DEFAULT_RAS) the
    minimum before the average; (4) rack id ascending. Resources: CPU, memory, generic
    resources, and free slots when ``include_slots`` (the document counts them; Storm's code
    does not). ``assigned``: placements already made (they use resources and count in (1)).
    """
    st = _state_with(instance, assigned)
    return [st.rack_ids[r] for r in rack_order(st, _tid(instance, topology), variant, include_slots)]


def sort_nodes(instance: Instance, topology, rack: str, assigned: Plan | Iterable[Placement] | None = None,
               variant: str = "common", include_slots: bool = False) -> list[str]:
    """Nodes of ``rack`` in NodeSorterHostProximity order (keys as :func:`sort_racks`, shares
    taken against the rack's available resources)."""
    st = _state_with(instance, assigned)
    if rack not in st.rack_ids:
        raise InstanceError("rack", f"unknown rack {rack!r}")
    return [st.node_ids[i] for i in node_order(st, _tid(instance, topology), st.rack_ids.index(rack), variant, include_slots)]


def rack_scores(instance: Instance, topology, assigned: Plan | Iterable[Placement] | None = None,
                include_slots: bool = False) -> dict[str, dict[str, float]]:
    """Per rack: ``executors`` (key 1), ``average`` and ``subordinate`` shares (keys 2 and 3),
    as fractions (the document prints percentages)."""
    st = _state_with(instance, assigned)
    cnt, avg, mn = _rack_arrays(st, _tid(instance, topology), include_slots)
    return {st.rack_ids[r]: {"executors": float(cnt[r]), "average": float(avg[r]), "subordinate": float(mn[r])}
            for r in range(len(st.rack_ids))}


# --- the backtracking search (BaseResourceAwareStrategy.scheduleExecutorsOnNodes) ------------------

def dfs_place(state: ClusterState, t: Topology, execs: list[tuple[str, int]], new_order, *,
              reuse_within_component: bool = True, max_states: int = MAX_STATES,
              time_limit: float = TIME_LIMIT) -> str | None:
    """Depth-first first fit with backtracking over ``execs`` in order.

    For each executor, nodes come from ``new_order(i)`` (a :class:`LazyNodes`), made afresh
    when the executor's component differs from the previous executor's (else the previous
    order is reused from its start); within a node, its ports ascending that are free or
    already this topology's. The first slot that fits wins. When no slot fits, the previous
    executor is undone and continues from its next slot. Every assignment counts as a state;
    after ``max_states`` states or ``time_limit`` seconds the search gives up. Returns None
    when every executor is placed, else the reason (and nothing of ``t`` stays placed).
    """
    E = len(execs)
    if E == 0:
        return None
    reqs = state.reqs(t)
    tid, heap = t.id, t.max_heap_mb
    comps = [c for c, _ in execs]
    orders: list = [None] * E
    pos_k = [0] * E
    pos_j = [0] * E
    started = [False] * E
    counts = state.counts_of(tid)
    ports_of = state.ports
    free_slots = state.free_slots
    node_fits, slot_fits = state.node_fits, state.slot_fits
    t0 = time.perf_counter()
    states = 0
    loops = 0
    i = 0
    deepest = 0
    while True:
        loops += 1
        if states >= max_states:
            state.unassign_topology(t)
            return (f"search limit reached: {max_states} states without placing every executor "
                    f"(deepest: {deepest} of {E}; last stuck on {execs[deepest][0]}[{execs[deepest][1]}])")
        if (loops & 127) == 0 and time.perf_counter() - t0 > time_limit:
            state.unassign_topology(t)
            return f"time limit of {time_limit:g} s reached after {states} states (deepest: {deepest} of {E})"
        if not started[i]:
            started[i] = True
            if reuse_within_component and i > 0 and comps[i] == comps[i - 1]:
                orders[i] = orders[i - 1]
            else:
                orders[i] = new_order(i)
            pos_k[i] = 0
            pos_j[i] = 0
        req = reqs[comps[i]]
        order = orders[i]
        k, j = pos_k[i], pos_j[i]
        found = False
        n = p = -1
        while True:
            n = order.get(k)
            if n < 0:
                break
            if j == 0 and ((free_slots[n] <= 0 and counts[n] <= 0) or not node_fits(tid, req, n)):
                k += 1
                continue
            ports = ports_of[n]
            while j < len(ports):
                p = ports[j]
                j += 1
                if slot_fits(tid, req, n, p, heap):
                    found = True
                    break
            if found:
                break
            k += 1
            j = 0
        if found:
            state.assign(tid, req, execs[i][1], n, p)
            pos_k[i], pos_j[i] = k, j
            states += 1
            i += 1
            if i > deepest:
                deepest = i if i < E else deepest
            if i == E:
                return None
            continue
        started[i] = False
        if i == 0:
            state.unassign_topology(t)
            c, x = execs[deepest]
            return (f"no worker slot fits executor {c}[{x}] (CPU {reqs[c].cpu:g}, memory {reqs[c].mem:g} MB, "
                    f"on-heap {reqs[c].onheap:g} MB of max heap {heap:g}) after backtracking through {states} states")
        i -= 1
        state.unassign_last(tid, reqs[comps[i]])


def _limits(time_limit, max_states):
    tl = TIME_LIMIT if time_limit is None else float(time_limit)
    ms = int(max_states)
    if ms < 1:
        raise InstanceError("options.max_states", f"must be >= 1, got {max_states}")
    return tl, ms


def ras_place_fn(variant: str = "common", include_slots: bool = False, max_states: int = MAX_STATES,
                 time_limit: float = TIME_LIMIT, prune: bool = True):
    """The per-topology strategy of storm.ras (variant "common") and storm.ras-old ("old").
    ``prune=False`` keeps every node in each order (see :func:`could_fit_mask`; same plans, slower)."""
    if variant not in VARIANTS:
        raise InstanceError("options.variant", f"unknown sort variant {variant!r}; known: {', '.join(VARIANTS)}")

    def place(state: ClusterState, t: Topology) -> str | None:
        why = quick_infeasibility(state, t)
        if why:
            return why
        execs = connection_count_order(t)
        if variant == "common":
            reqs = state.reqs(t)

            def new_order(i):
                return LazyNodes(state, t.id, "common", include_slots, req=reqs[execs[i][0]] if prune else None)
            return dfs_place(state, t, execs, new_order, max_states=max_states, time_limit=time_limit)
        once = LazyNodes(state, t.id, "old", include_slots, eager=True)  # sorted once per topology
        return dfs_place(state, t, execs, lambda i: once, max_states=max_states, time_limit=time_limit)

    return place


@register("storm.ras", RAS_PROBLEMS, source="Apache Storm ResourceAwareScheduler with DefaultResourceAwareStrategy / "
          "GenericResourceAwareStrategy (ExecSorterByConnectionCount, NodeSorterHostProximity), "
          "DefaultSchedulingPriorityStrategy, DefaultEvictionStrategy",
          options={"max_states": MAX_STATES, "include_slots": False, "running": None},
          summary="Storm's current RAS: connection-count executor order, rack-then-node sort, backtracking first fit")
def ras(instance: Instance, problem: str, *, time_limit=None, seed=0, max_states=MAX_STATES, include_slots=False,
        running=None):
    """Storm's Resource Aware Scheduler with its current default strategy.

    Per topology (BaseResourceAwareStrategy): executors in ExecSorterByConnectionCount order;
    nodes in NodeSorterHostProximity "COMMON" order (racks, then nodes of each rack: executors
    of this topology there, average share of available resources, minimum share, id),
    re-sorted whenever the executor's component changes; depth-first first fit with
    backtracking, at most ``max_states`` states and ``time_limit`` seconds (default 60) per
    topology. A slot fits when the node has the CPU, memory (on + off heap) and generic
    resources, the worker's on-heap stays within the topology's max heap, the worker belongs
    to no other topology, and the model's placement constraints hold. Several topologies are
    taken in DefaultSchedulingPriorityStrategy order with DefaultEvictionStrategy (see
    :func:`heuristics.common.schedule_topologies`). Deviations: no favoured/unfavoured or
    grey-listed nodes, no shared memory or worker overhead, no hosts between racks and nodes,
    no rare-resource affinity adjustment; the search is restarted per topology.
    ``running``: a plan already on the cluster (Storm's existing assignments), e.g. to submit
    a topology to a full cluster and watch the eviction.
    """
    tl, ms = _limits(time_limit, max_states)
    return schedule_topologies(instance, problem, "storm.ras", ras_place_fn("common", bool(include_slots), ms, tl),
                               running=running)


@register("storm.ras-old", RAS_PROBLEMS, source="Apache Storm RAS document, 'Enhancements on original "
          "DefaultResourceAwareStrategy' (DEFAULT_RAS sort, STORM-1766)",
          options={"max_states": MAX_STATES, "include_slots": False},
          summary="RAS with the document's older sort: racks and nodes sorted once per topology, subordinate share first")
def ras_old(instance: Instance, problem: str, *, time_limit=None, seed=0, max_states=MAX_STATES, include_slots=False):
    """The RAS document's strategy: as ``storm.ras`` but racks and nodes are sorted once per
    topology with the older keys (executors there, subordinate resource availability, average,
    id). ``include_slots`` counts free slots as a resource, as the document does."""
    tl, ms = _limits(time_limit, max_states)
    return schedule_topologies(instance, problem, "storm.ras-old", ras_place_fn("old", bool(include_slots), ms, tl))


# --- round robin variants --------------------------------------------------------------------------

def _first_fitting_slot(state: ClusterState, tid: str, req, n: int, heap: float) -> int | None:
    if not state.node_fits(tid, req, n):
        return None
    for p in state.ports[n]:
        if state.slot_fits(tid, req, n, p, heap):
            return p
    return None


def rr_place(state: ClusterState, t: Topology) -> str | None:
    """RoundRobinResourceAwareStrategy: nodes sorted once (COMMON keys); for each executor (in
    connection-count order) try nodes from a cursor onwards, wrapping; take the first fitting
    slot and move the cursor past that node; the cursor returns to the first node when the
    component changes. No backtracking."""
    why = quick_infeasibility(state, t)
    if why:
        return why
    order = LazyNodes(state, t.id, "common", eager=True).flat
    N = len(order)
    reqs = state.reqs(t)
    cursor, prev = 0, None
    for c, x in connection_count_order(t):
        if c != prev:
            cursor = 0
        prev = c
        req = reqs[c]
        for step in range(N):
            pos = (cursor + step) % N
            p = _first_fitting_slot(state, t.id, req, order[pos], t.max_heap_mb)
            if p is not None:
                state.assign(t.id, req, x, order[pos], p)
                cursor = (pos + 1) % N
                break
        else:
            state.unassign_topology(t)
            return f"no node fits executor {c}[{x}] (round robin, no backtracking)"
    return None


@register("storm.ras-roundrobin", RAS_PROBLEMS, source="Apache Storm RoundRobinResourceAwareStrategy",
          summary="RAS round robin over nodes sorted once; no backtracking")
def ras_roundrobin(instance: Instance, problem: str, *, time_limit=None, seed=0):
    """Storm's RoundRobinResourceAwareStrategy (see :func:`rr_place`), with RAS multi-tenancy."""
    return schedule_topologies(instance, problem, "storm.ras-roundrobin", rr_place)


def rr_doc_place(state: ClusterState, t: Topology) -> str | None:
    """The RAS document's RoundRobinStrategy: the slots not held by another topology, nodes by
    id and ports ascending, in a list; executor i (Storm's task order) tries slots from index
    i onwards, wrapping, and takes the first that fits."""
    why = quick_infeasibility(state, t)
    if why:
        return why
    slots = [(i, p) for i in sorted(range(state.N), key=lambda i: state.node_ids[i]) for p in state.ports[i]
             if state.owner.get((i, p)) in (None, t.id)]
    S = len(slots)
    # the list is by node: run_end[j] is where slot j's node's slots end. A node that cannot take
    # the executor (node_fits) answers for all its slots, so the scan skips them (Storm's
    # largeCluster01: every executor scanned up to 65,600 slots one by one, session 27)
    run_end = [S] * S
    for j in range(S - 2, -1, -1):
        run_end[j] = run_end[j + 1] if slots[j][0] == slots[j + 1][0] else j + 1
    reqs = state.reqs(t)
    for e, (c, x) in enumerate(t.executors()):
        req = reqs[c]
        step = 0
        while step < S:
            j = (e + step) % S
            n, p = slots[j]
            if not state.node_fits(t.id, req, n):
                step += run_end[j] - j
                continue
            if state.slot_fits(t.id, req, n, p, t.max_heap_mb):
                state.assign(t.id, req, x, n, p)
                break
            step += 1
        else:
            state.unassign_topology(t)
            return f"no slot fits executor {c}[{x}] (round robin)"
    return None


@register("storm.ras-rr-doc", RAS_PROBLEMS, source="Apache Storm RAS document, 'Improvements in Scheduling' "
          "(RoundRobinStrategy of the experiments)",
          summary="the RAS document's round robin over slots with a resource check")
def ras_rr_doc(instance: Instance, problem: str, *, time_limit=None, seed=0):
    """The naive round robin the RAS document compares against (see :func:`rr_doc_place`)."""
    return schedule_topologies(instance, problem, "storm.ras-rr-doc", rr_doc_place)


# --- ConstraintSolverStrategy --------------------------------------------------------------------------

def constraint_order(t: Topology, severity: str = "stated") -> list[str]:
    """Components most constrained first (ConstraintSolverStrategy / ExecSorterByConstraintSeverity).

    ``stated`` (ALGORITHMS.md): |incompatible| + floor(#components / k), descending, ties by id
    descending. ``storm``: Storm's code, |incompatible| + #executors / k (+ 0.0001) for
    components with a max per node. |incompatible| is the symmetric set (itself included
    when a component is incompatible with itself); the k term is 0 without a max per node.
    """
    inc: dict[str, set[str]] = {c.id: set(c.incompatible) for c in t.components}
    for c in t.components:
        for o in c.incompatible:
            inc[o].add(c.id)
    ncomp = len(t.components)

    def sev(c) -> float:
        k = c.max_per_node
        if k is None:
            return float(len(inc[c.id]))
        if severity == "stated":
            return float(len(inc[c.id]) + ncomp // k)
        return len(inc[c.id]) + c.parallelism / k + 0.0001

    if severity not in ("stated", "storm"):
        raise InstanceError("options.severity", f"unknown severity {severity!r}; known: stated, storm")
    # descending severity, ties by id descending == sort by (severity, id) descending
    return [c.id for c in sorted(t.components, key=lambda c: (sev(c), c.id), reverse=True)]


def cs_place_fn(severity: str = "stated", max_states: int = MAX_STATES, time_limit: float = TIME_LIMIT):
    def place(state: ClusterState, t: Topology) -> str | None:
        reqs = state.reqs(t)
        for c in t.components:
            k = c.max_per_node
            if k is None:
                continue
            allowed = sum(1 for i in range(state.N)
                          if (c.site is None or state.site[i] == c.site) and (reqs[c.id].nodes is None or i in reqs[c.id].nodes))
            if c.parallelism > allowed * k:
                return (f"fail fast: component {c.id!r} has {c.parallelism} executors > {allowed} nodes x "
                        f"max_per_node {k} = {allowed * k}")
        why = quick_infeasibility(state, t)
        if why:
            return why
        execs = [(c, x) for c in constraint_order(t, severity) for x in range(t.component(c).parallelism)]
        return dfs_place(state, t, execs, lambda i: LazyNodes(state, t.id, "common", req=reqs[execs[i][0]]),
                         max_states=max_states, time_limit=time_limit)

    return place


@register("storm.constraint-solver", RAS_PROBLEMS, source="Apache Storm ConstraintSolverStrategy",
          options={"max_states": MAX_STATES, "severity": "stated"},
          summary="Storm's constraint solver: incompatible components, max per node, fail-fast check, backtracking")
def constraint_solver(instance: Instance, problem: str, *, time_limit=None, seed=0, max_states=MAX_STATES,
                      severity="stated"):
    """Storm's ConstraintSolverStrategy on the model's constraints: ``incompatible`` components
    never share a worker (a component incompatible with itself: one executor per worker) and
    at most ``max_per_node`` executors of a component per node. Fails fast when a component
    has more executors than (nodes it may use) x k. Executors component by component in
    :func:`constraint_order`; nodes in the COMMON order, re-sorted when the component changes;
    the same backtracking search and limits as ``storm.ras``. Deviation: Storm keeps
    incompatible components off the same node; the model (and the evaluator) says worker."""
    tl, ms = _limits(time_limit, max_states)
    return schedule_topologies(instance, problem, "storm.constraint-solver", cs_place_fn(severity, ms, tl))
