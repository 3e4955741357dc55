"""Helpers the heuristics share: free slots, result building, the cluster state of the
resource-aware schedulers, and Storm RAS multi-tenancy (priority order and eviction)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from planner.model import Instance, Topology
from planner.plan import Placement, Plan, Result, Status


def topology_order(instance: Instance) -> list[Topology]:
    """Topologies by priority (0 first), then submission time, then id."""
    return sorted(instance.topologies, key=lambda t: (t.priority, t.submitted, t.id))


def all_slots(instance: Instance) -> list[tuple[str, int]]:
    """Every (node, port), nodes by id, ports ascending."""
    return [(n.id, p) for n in sorted(instance.cluster.nodes, key=lambda n: n.id) for p in n.slots]


def weight_scale(adj: dict[Any, dict[Any, float]]) -> int:
    """The largest denominator among the float weights of ``adj`` (each float is a whole multiple
    of a power of two): every weight times it is an exact integer, so sums of weights compare
    exactly, whatever the order of their terms (ties stay ties)."""
    den = 1
    for nb in adj.values():
        for w in nb.values():
            den = max(den, w.as_integer_ratio()[1])
    return den


def plan_result(problem: str, method: str, placements: list[Placement], status: Status = Status.FEASIBLE,
                message: str = "", **kw) -> Result:
    return Result(problem=problem, method=method, status=status, plan=Plan(placements=placements), message=message, **kw)


def no_plan(problem: str, method: str, reason: str, status: Status = Status.INFEASIBLE, **kw) -> Result:
    return Result(problem=problem, method=method, status=status, plan=None, message=reason, **kw)


# --------------------------------------------------------------------------------------------
# Cluster state shared by the resource-aware schedulers (storm.ras family, rstorm)
# --------------------------------------------------------------------------------------------

FIT_EPS = 1e-9


@dataclass
class CompReq:
    """What one executor of a component asks for, and the placement constraints it carries."""

    id: str
    cpu: float
    mem: float  # on-heap + off-heap MB
    onheap: float
    res: np.ndarray | None  # generic resources, in ClusterState.res_names order (None: none asked)
    site: str | None
    nodes: frozenset[int] | None  # allowed node indices (None: any)
    max_per_node: int | None
    incompatible: frozenset[str]  # components never in the same worker (symmetric closure; may hold itself)


class ClusterState:
    """Free resources of a cluster while topologies are placed on it.

    Nodes are indexed rack by rack (racks in instance order, nodes in rack order), so a rack
    is a contiguous slice ``rack_start[r]:rack_end[r]`` of the per-node arrays. ``cpu``,
    ``mem`` and ``res`` hold what is still available; a worker (node, port) belongs to at most
    one topology (``owner``) and carries its on-heap total (``heap``) and component counts.
    Every placement is undone in reverse order by :meth:`unassign_last`, or all at once for a
    topology by :meth:`unassign_topology` (eviction, a failed search).
    """

    def __init__(self, instance: Instance, extra_resource_names: Iterable[str] = ()):
        self.instance = instance
        racks = instance.cluster.racks
        self.rack_ids = [r.id for r in racks]
        self.nodes = [n for r in racks for n in r.nodes]
        self.node_ids = [n.id for n in self.nodes]
        self.index = {nid: i for i, nid in enumerate(self.node_ids)}
        N = len(self.nodes)
        self.N = N
        self.node_rack = np.array([ri for ri, r in enumerate(racks) for _ in r.nodes], dtype=np.int64)
        starts, ends, k = [], [], 0
        for r in racks:
            starts.append(k)
            k += len(r.nodes)
            ends.append(k)
        self.rack_start = starts
        self.rack_end = ends
        self.nonempty_racks = [ri for ri in range(len(racks)) if ends[ri] > starts[ri]]
        self.cpu = np.array([n.cpu for n in self.nodes], dtype=float)
        self.mem = np.array([n.memory_mb for n in self.nodes], dtype=float)
        names = set(extra_resource_names)
        for n in self.nodes:
            names.update(n.resources)
        for t in instance.topologies:
            for c in t.components:
                names.update(c.resources)
        self.res_names = sorted(names)
        self.res = np.array([[n.resources.get(r, 0.0) for r in self.res_names] for n in self.nodes], dtype=float).reshape(N, len(self.res_names))
        self.ports = [list(n.slots) for n in self.nodes]
        self.site = [n.site for n in self.nodes]
        order = sorted(range(N), key=lambda i: self.node_ids[i])
        self.id_rank = np.empty(N, dtype=np.int64)
        self.id_rank[order] = np.arange(N)
        rorder = sorted(range(len(racks)), key=lambda r: self.rack_ids[r])
        self.rack_id_rank = np.empty(len(racks), dtype=np.int64)
        self.rack_id_rank[rorder] = np.arange(len(racks))
        self.free_slots = np.array([len(p) for p in self.ports], dtype=float)  # ports owned by no topology
        # rack totals of the same, kept up to date by assign/unassign (the rack sort reads them)
        R = len(racks)
        self.rack_cpu = np.array([self.cpu[a:b].sum() for a, b in zip(starts, ends)], dtype=float).reshape(R)
        self.rack_mem = np.array([self.mem[a:b].sum() for a, b in zip(starts, ends)], dtype=float).reshape(R)
        self.rack_res = np.array([self.res[a:b].sum(axis=0) for a, b in zip(starts, ends)], dtype=float).reshape(R, len(self.res_names))
        self.rack_free_slots = np.array([self.free_slots[a:b].sum() for a, b in zip(starts, ends)], dtype=float).reshape(R)
        self.rack_count: dict[str, np.ndarray] = {}  # topology -> executors per rack
        self.owner: dict[tuple[int, int], str] = {}
        self.heap: dict[tuple[int, int], float] = defaultdict(float)
        self.wcomps: dict[tuple[int, int], Counter] = defaultdict(Counter)
        self.node_comp: Counter = Counter()  # (node, topology, component) -> executors
        self.count: dict[str, np.ndarray] = {}  # topology -> executors per node
        self.placed: dict[str, list[tuple[str, int, int, int]]] = defaultdict(list)
        self._reqs: dict[str, dict[str, CompReq]] = {}

    # -- requests ---------------------------------------------------------------------------
    def reqs(self, topology: Topology) -> dict[str, CompReq]:
        """CompReq of every component of ``topology`` (cached)."""
        got = self._reqs.get(topology.id)
        if got is not None:
            return got
        inc: dict[str, set[str]] = {c.id: set(c.incompatible) for c in topology.components}
        for c in topology.components:
            for o in c.incompatible:
                inc[o].add(c.id)
        out = {}
        for c in topology.components:
            res = None
            if c.resources and any(v > 0 for v in c.resources.values()):
                res = np.array([c.resources.get(r, 0.0) for r in self.res_names], dtype=float)
            out[c.id] = CompReq(
                id=c.id, cpu=c.cpu, mem=c.memory_onheap_mb + c.memory_offheap_mb, onheap=c.memory_onheap_mb, res=res,
                site=c.site, nodes=frozenset(self.index[n] for n in c.nodes) if c.nodes is not None else None,
                max_per_node=c.max_per_node, incompatible=frozenset(inc[c.id]),
            )
        self._reqs[topology.id] = out
        return out

    def counts_of(self, tid: str) -> np.ndarray:
        a = self.count.get(tid)
        if a is None:
            a = self.count[tid] = np.zeros(self.N, dtype=float)
            self.rack_count[tid] = np.zeros(len(self.rack_ids), dtype=float)
        return a

    # -- fit checks ---------------------------------------------------------------------------
    def node_fits(self, tid: str, req: CompReq, i: int) -> bool:
        """Node-level checks: free CPU, memory, generic resources, site/node pins, max per node."""
        if self.cpu[i] < req.cpu - FIT_EPS or self.mem[i] < req.mem - FIT_EPS:
            return False
        if req.res is not None and np.any(self.res[i] < req.res - FIT_EPS):
            return False
        if req.site is not None and self.site[i] != req.site:
            return False
        if req.nodes is not None and i not in req.nodes:
            return False
        if req.max_per_node is not None and self.node_comp[(i, tid, req.id)] >= req.max_per_node:
            return False
        return True

    def slot_fits(self, tid: str, req: CompReq, i: int, port: int, max_heap: float) -> bool:
        """Worker-level checks: the worker is free or this topology's, on-heap within max heap,
        no incompatible component in it."""
        w = (i, port)
        own = self.owner.get(w)
        if own is not None and own != tid:
            return False
        if self.heap[w] + req.onheap > max_heap + FIT_EPS:
            return False
        if req.incompatible and own is not None:
            wc = self.wcomps[w]
            for o in req.incompatible:
                if wc.get(o):
                    return False
        return True

    def fits(self, tid: str, req: CompReq, i: int, port: int, max_heap: float) -> bool:
        return self.node_fits(tid, req, i) and self.slot_fits(tid, req, i, port, max_heap)

    # -- changes --------------------------------------------------------------------------------
    def assign(self, tid: str, req: CompReq, idx: int, i: int, port: int) -> None:
        w = (i, port)
        r = self.node_rack[i]
        if w not in self.owner:
            self.owner[w] = tid
            self.free_slots[i] -= 1
            self.rack_free_slots[r] -= 1
        self.cpu[i] -= req.cpu
        self.mem[i] -= req.mem
        self.rack_cpu[r] -= req.cpu
        self.rack_mem[r] -= req.mem
        if req.res is not None:
            self.res[i] -= req.res
            self.rack_res[r] -= req.res
        self.heap[w] += req.onheap
        self.wcomps[w][req.id] += 1
        self.node_comp[(i, tid, req.id)] += 1
        self.counts_of(tid)[i] += 1
        self.rack_count[tid][r] += 1
        self.placed[tid].append((req.id, idx, i, port))

    def unassign_last(self, tid: str, req: CompReq) -> tuple[str, int, int, int]:
        cid, idx, i, port = self.placed[tid].pop()
        assert cid == req.id
        w = (i, port)
        r = self.node_rack[i]
        self.cpu[i] += req.cpu
        self.mem[i] += req.mem
        self.rack_cpu[r] += req.cpu
        self.rack_mem[r] += req.mem
        if req.res is not None:
            self.res[i] += req.res
            self.rack_res[r] += req.res
        self.heap[w] -= req.onheap
        self.wcomps[w][cid] -= 1
        if self.wcomps[w][cid] == 0:
            del self.wcomps[w][cid]
        self.node_comp[(i, tid, cid)] -= 1
        self.counts_of(tid)[i] -= 1
        self.rack_count[tid][r] -= 1
        if not self.wcomps[w]:
            del self.owner[w]
            self.heap.pop(w, None)
            self.free_slots[i] += 1
            self.rack_free_slots[r] += 1
        return cid, idx, i, port

    def unassign_topology(self, topology: Topology) -> None:
        reqs = self.reqs(topology)
        while self.placed.get(topology.id):
            self.unassign_last(topology.id, reqs[self.placed[topology.id][-1][0]])

    def placements(self, tid: str) -> list[Placement]:
        return [Placement(topology=tid, component=c, executor=k, node=self.node_ids[i], slot=p)
                for c, k, i, p in self.placed.get(tid, [])]

    def apply_placements(self, placements: Iterable[Placement]) -> None:
        """Replay existing placements (e.g. an assignment already running)."""
        for p in placements:
            t = self.instance.topology(p.topology)
            self.assign(t.id, self.reqs(t)[p.component], p.executor, self.index[p.node], p.slot)

    # -- totals ---------------------------------------------------------------------------------
    def free_totals(self) -> tuple[float, float]:
        return float(self.cpu.sum()), float(self.mem.sum())


def topology_demand(topology: Topology) -> tuple[float, float]:
    """Total CPU points and memory MB (on + off heap) a topology asks for."""
    cpu = sum(c.cpu * c.parallelism for c in topology.components)
    mem = sum(c.memory_mb * c.parallelism for c in topology.components)
    return cpu, mem


def quick_infeasibility(state: ClusterState, topology: Topology) -> str | None:
    """A reason the topology cannot fit whatever the search does, or None (a shortcut only:
    the search would fail on these too)."""
    cpu, mem = topology_demand(topology)
    fc, fm = state.free_totals()
    if cpu > fc + 1e-6:
        return f"not enough free CPU in the cluster: needs {cpu:g}, {fc:g} free"
    if mem > fm + 1e-6:
        return f"not enough free memory in the cluster: needs {mem:g} MB, {fm:g} MB free"
    for c in topology.components:
        if c.memory_onheap_mb > topology.max_heap_mb + FIT_EPS:
            return (f"an executor of {c.id!r} needs {c.memory_onheap_mb:g} MB on-heap, more than the "
                    f"topology's worker max heap {topology.max_heap_mb:g} MB")
    return None


# --------------------------------------------------------------------------------------------
# Multi-tenancy: Storm RAS scheduling priority and eviction
# --------------------------------------------------------------------------------------------

def guarantee_satisfaction(cpu_allocated: float, mem_allocated: float, cpu_guarantee: float,
                           mem_guarantee: float) -> float:
    """Average fraction of a user's guarantee that is satisfied (Storm RAS document, "Specifying
    Topology Prioritization Strategy"): mean over CPU and memory of allocated / guaranteed.
    Resources without a guarantee are left out; a user with no guarantee at all gets +inf
    (scheduled after every user with one, as Storm's DefaultSchedulingPriorityStrategy does).
    The document's example: A <10 CPU, 50 GB> with <2, 40> allocated gives 0.5."""
    parts = []
    if cpu_guarantee > 0:
        parts.append(cpu_allocated / cpu_guarantee)
    if mem_guarantee > 0:
        parts.append(mem_allocated / mem_guarantee)
    return sum(parts) / len(parts) if parts else math.inf


class Tenancy:
    """Users, their guarantees and what they currently run (Storm's ``User`` bookkeeping)."""

    def __init__(self, instance: Instance):
        self.users = {u.id: u for u in instance.users}
        self.running: dict[str, set[str]] = defaultdict(set)
        self.topos = {t.id: t for t in instance.topologies}

    def owner(self, t: Topology) -> str:
        return t.owner if t.owner is not None and t.owner in self.users else ""

    def guarantee(self, user: str) -> tuple[float, float]:
        u = self.users.get(user)
        return (u.cpu, u.memory_mb) if u is not None else (0.0, 0.0)

    def allocated(self, user: str) -> tuple[float, float]:
        cpu = mem = 0.0
        for tid in self.running[user]:
            c, m = topology_demand(self.topos[tid])
            cpu += c
            mem += m
        return cpu, mem

    def satisfaction(self, user: str) -> float:
        return guarantee_satisfaction(*self.allocated(user), *self.guarantee(user))


def priority_order_key(t: Topology) -> tuple:
    """Within a user: priority (0 most important), then submission time, then id."""
    return (t.priority, t.submitted, t.id)


def next_topology(tenancy: Tenancy, pending: list[Topology]) -> Topology | None:
    """Storm's DefaultSchedulingPriorityStrategy: the user furthest from its guarantee (lowest
    average satisfaction; ties: the larger guarantee, then user id) that has a pending topology,
    and that user's most important pending topology."""
    if not pending:
        return None
    by_user: dict[str, list[Topology]] = defaultdict(list)
    for t in pending:
        by_user[tenancy.owner(t)].append(t)

    def ukey(u: str):
        g = tenancy.guarantee(u)
        return (tenancy.satisfaction(u), -(g[0] + g[1]), u)

    user = min(by_user, key=ukey)
    return min(by_user[user], key=priority_order_key)


def user_order(instance: Instance, allocated: dict[str, tuple[float, float]] | None = None) -> list[tuple[str, float]]:
    """Users sorted as DefaultSchedulingPriorityStrategy takes them, with their satisfaction,
    given what each has allocated ({user: (cpu, memory)}, default nothing)."""
    allocated = allocated or {}
    rows = []
    for u in instance.users:
        s = guarantee_satisfaction(*allocated.get(u.id, (0.0, 0.0)), u.cpu, u.memory_mb)
        rows.append((s, -(u.cpu + u.memory_mb), u.id))
    return [(u, s) for s, _, u in sorted(rows)]


def choose_eviction(tenancy: Tenancy, t: Topology) -> tuple[str, str] | None:
    """Storm's DefaultEvictionStrategy (the RAS document's flow chart, as Storm 1.x codes it):
    which running topology to evict so that ``t`` may fit, and why; None when none may go.

    * The submitter must have a guarantee; no topology of a user below its guarantee is ever taken.
    * Candidate victim: the running user furthest above its guarantee (satisfaction > 1).
      If the submitter's unused guarantee covers ``t``, that user's least important running
      topology goes; otherwise it goes only if that user's excess exceeds the submitter's
      excess after ``t`` (average over CPU and memory).
    * Failing that, the submitter's own least important running topology that is less
      important than ``t``.
    """
    sub = tenancy.owner(t)
    gc, gm = tenancy.guarantee(sub)
    if gc <= 0 or gm <= 0:
        return None
    cpu, mem = topology_demand(t)
    cpu_need, mem_need = cpu / gc, mem / gm
    ac, am = tenancy.allocated(sub)
    cpu_util, mem_util = ac / gc, am / gm
    sub_sat = (cpu_util + mem_util) / 2

    def least_important(tids: Iterable[str]) -> str | None:
        cands = [tenancy.topos[x] for x in tids]
        if not cands:
            return None
        return max(cands, key=lambda x: (x.priority, x.submitted, x.id)).id

    victim_user, best = None, 1.0
    for u in sorted(tenancy.running):
        if not tenancy.running[u] or u not in tenancy.users:
            continue
        s = tenancy.satisfaction(u)
        if s > best:
            victim_user, best = u, s
    if victim_user is not None:
        if 1.0 - cpu_util >= cpu_need and 1.0 - mem_util >= mem_need:
            v = least_important(tenancy.running[victim_user])
            return v, (f"user {victim_user!r} is above its guarantee ({best:.3g}) and {t.id!r} of user "
                       f"{sub!r} fits within {sub!r}'s guarantee")
        if best - 1.0 > (cpu_need + mem_need) / 2 + (sub_sat - 1.0):
            v = least_important(tenancy.running[victim_user])
            return v, (f"user {victim_user!r} is further above its guarantee ({best:.3g}) than user "
                       f"{sub!r} would be with {t.id!r}")
    own = [x for x in tenancy.running[sub] if tenancy.topos[x].priority > t.priority]
    v = least_important(own)
    if v is not None:
        return v, f"less important than {t.id!r} of the same user {sub!r}"
    return None


PlaceFn = Callable[[ClusterState, Topology], str | None]
"""Places one whole topology on the state; returns None on success, else the reason (and
leaves nothing of the topology placed)."""


def running_topologies(instance: Instance, state: ClusterState, running) -> list[str]:
    """Replay ``running`` (a Plan, a plan dict or placements: what the cluster already runs, as
    Storm's Cluster holds it when the scheduler is called) on ``state``; every topology in it
    must be placed whole. Returns the running topology ids. Bad input: InstanceError."""
    from planner.api import parse_plan
    from planner.evaluate import evaluate
    from planner.model import InstanceError

    plan = running if isinstance(running, Plan) else parse_plan(running if isinstance(running, dict) else {"placements": list(running)})
    tids = sorted({p.topology for p in plan.placements})
    known = {t.id for t in instance.topologies}
    for k, p in enumerate(plan.placements):
        if p.topology not in known:
            raise InstanceError(f"options.running.placements[{k}].topology", f"unknown topology {p.topology!r}")
    sub = instance.model_copy(update={"topologies": [t for t in instance.topologies if t.id in tids]})
    m = evaluate(sub, plan, "feasibility")
    if not m["feasible"]:
        v = m["violations"][0]
        raise InstanceError("options.running", f"the running assignment is not valid: {v['constraint']} at {v['where']}: {v['detail']}")
    state.apply_placements(plan.placements)
    return tids


def schedule_topologies(instance: Instance, problem: str, method: str, place: PlaceFn,
                        state: ClusterState | None = None, evict: bool = True, running=None) -> Result:
    """Schedule every topology of ``instance`` as Storm's ResourceAwareScheduler does:
    DefaultSchedulingPriorityStrategy order, ``place`` for each (the strategy), and
    DefaultEvictionStrategy when one does not fit. A topology is placed whole or not at all.

    ``running``: an assignment already on the cluster (see :func:`running_topologies`); its
    topologies count as scheduled and may be evicted.
    ``details``: ``scheduled`` (ids, in scheduling order), ``unscheduled`` and ``evicted``
    ([{topology, reason}]), ``order`` (every attempt in turn). For ``admission`` the plan holds
    the scheduled topologies; for every other problem a topology left out makes the result
    infeasible with the reasons.
    """
    state = state or ClusterState(instance)
    ten = Tenancy(instance)
    scheduled: list[str] = []
    if running:
        for tid in running_topologies(instance, state, running):
            ten.running[ten.owner(ten.topos[tid])].add(tid)
            scheduled.append(tid)
    pending = [t for t in instance.topologies if t.id not in scheduled]
    attempts: Counter = Counter()
    unscheduled: dict[str, str] = {}
    evicted: dict[str, str] = {}
    order: list[str] = []
    limit = 3 * len(instance.topologies) + 3
    while pending:
        t = next_topology(ten, pending)
        pending.remove(t)
        order.append(t.id)
        attempts[t.id] += 1
        while True:
            reason = place(state, t)
            if reason is None:
                ten.running[ten.owner(t)].add(t.id)
                scheduled.append(t.id)
                unscheduled.pop(t.id, None)
                break
            victim = choose_eviction(ten, t) if evict and instance.users and sum(attempts.values()) < limit else None
            if victim is None:
                unscheduled[t.id] = f"{evicted[t.id]}; then could not be placed again: {reason}" if t.id in evicted else reason
                break
            vid, why = victim
            vt = ten.topos[vid]
            state.unassign_topology(vt)
            ten.running[ten.owner(vt)].discard(vid)
            scheduled.remove(vid)
            evicted[vid] = f"evicted for {t.id!r}: {why}"
            if attempts[vid] < 2:
                pending.append(vt)  # Storm puts an evicted topology back in the queue
            else:
                unscheduled[vid] = evicted[vid]
    for tid in evicted:
        if tid not in scheduled and tid not in unscheduled:
            unscheduled[tid] = evicted[tid]
    placements = [p for tid in scheduled for p in state.placements(tid)]
    details = {
        "scheduled": scheduled,
        "unscheduled": [{"topology": k, "reason": v} for k, v in unscheduled.items()],
        "evicted": [{"topology": k, "reason": v, "rescheduled": k in scheduled} for k, v in evicted.items()],
        "order": order,
    }
    if unscheduled and problem != "admission":
        msg = "; ".join(f"{k}: {v}" for k, v in unscheduled.items())
        return no_plan(problem, method, f"could not schedule {len(unscheduled)} topolog{'y' if len(unscheduled) == 1 else 'ies'}: {msg}",
                       details=details)
    return plan_result(problem, method, placements, Status.FEASIBLE, details=details)
