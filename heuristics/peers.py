"""Peer baselines from the literature around Storm: T-Storm and Heron's two packers.

* ``tstorm`` -- Xu, Chen, Tang, Su, "T-Storm: Traffic-aware online scheduling in Storm",
  ICDCS 2014, section IV (the scheduling algorithm): executors by total traffic,
  descending; each goes to the node that adds least inter-node traffic among those with a
  free slot and enough CPU, at most ceil(gamma x executors / nodes) executors per node.
* ``heron.ffd`` -- Apache Heron ``FirstFitDecreasingPacking``: instances by memory then
  CPU, descending; each into the first container it fits, a new container when none does.
* ``heron.rcrr`` -- Apache Heron ``ResourceCompliantRRPacking``: strict round robin over the
  requested containers; on the first instance that does not fit, one more container and start
  over.

A Heron container is a Storm worker slot here: resources are checked per node (CPU, memory,
generic resources), heap per worker (topology max heap), and one topology per worker.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from planner import rates
from planner.model import Component, Instance, InstanceError, Node, Topology
from planner.plan import Placement, Status
from planner.registry import register

from .common import all_slots, no_plan, plan_result, topology_order, weight_scale
from .storm import even_slot_order

Slot = tuple[str, int]
EPS = 1e-9
_MISSING = object()  # a journal's "this key was not there"


class _State:
    """Free resources and what each worker holds, for the RAS hard limits and placement constraints."""

    def __init__(self, instance: Instance):
        self.inst = instance
        self.nodes: dict[str, Node] = {n.id: n for n in instance.cluster.nodes}
        self.cpu = {n.id: n.cpu for n in instance.cluster.nodes}
        self.mem = {n.id: n.memory_mb for n in instance.cluster.nodes}
        self.res = {n.id: dict(n.resources) for n in instance.cluster.nodes}
        self.owner: dict[Slot, str] = {}
        self.heap: dict[Slot, float] = defaultdict(float)
        self.comps: dict[Slot, Counter] = defaultdict(Counter)
        self.count: dict[Slot, int] = defaultdict(int)
        self.per_node: Counter = Counter()  # (topology, component, node)
        self.assign: dict[tuple[str, str, int], Slot] = {}
        self._journal: list | None = None  # (dict, key, value before) of each change since begin()

    def begin(self) -> None:
        """Record every change from here on, so that ``rollback`` can undo them exactly (a trial
        packing without copying the whole state: heron.rcrr's restarts copied all 65,600 slots'
        state each time on Storm's largeCluster01, session 27)."""
        self._journal = []

    def commit(self) -> None:
        self._journal = None

    def rollback(self) -> None:
        """Every recorded value back as it was (the same floats, not recomputed), then stop recording."""
        for d, key, old in reversed(self._journal or []):
            if old is _MISSING:
                d.pop(key, None)
            else:
                d[key] = old
        self._journal = None

    def _save(self, d: dict, key: Any) -> None:
        if self._journal is not None:
            self._journal.append((d, key, d[key] if key in d else _MISSING))

    def why_not(self, t: Topology, c: Component, slot: Slot) -> str | None:
        nid, _ = slot
        n = self.nodes[nid]
        if self.owner.get(slot, t.id) != t.id:
            return "worker used by another topology"
        if c.cpu > self.cpu[nid] + EPS:
            return "CPU"
        if c.memory_mb > self.mem[nid] + EPS:
            return "memory"
        for r, x in c.resources.items():
            if x > self.res[nid].get(r, 0.0) + EPS:
                return f"resource {r}"
        if self.heap[slot] + c.memory_onheap_mb > t.max_heap_mb + EPS:
            return "worker heap"
        if c.site is not None and n.site != c.site:
            return "site pin"
        if c.nodes is not None and nid not in c.nodes:
            return "node pin"
        if c.max_per_node is not None and self.per_node[(t.id, c.id, nid)] >= c.max_per_node:
            return "max_per_node"
        here = self.comps[slot]
        if c.id in c.incompatible and here[c.id] > 0:
            return "incompatible with itself"
        for other, k in here.items():
            if k > 0 and other != c.id and (other in c.incompatible or c.id in t.component(other).incompatible):
                return f"incompatible with {other}"
        return None

    def put(self, t: Topology, c: Component, i: int, slot: Slot) -> None:
        nid = slot[0]
        if self._journal is not None:
            save = self._save
            save(self.owner, slot)
            save(self.cpu, nid)
            save(self.mem, nid)
            for r in c.resources:
                save(self.res[nid], r)
            save(self.heap, slot)
            save(self.comps, slot)
            save(self.comps[slot], c.id)
            save(self.count, slot)
            save(self.per_node, (t.id, c.id, nid))
            save(self.assign, (t.id, c.id, i))
        self.owner[slot] = t.id
        self.cpu[nid] -= c.cpu
        self.mem[nid] -= c.memory_mb
        for r, x in c.resources.items():
            self.res[nid][r] = self.res[nid].get(r, 0.0) - x
        self.heap[slot] += c.memory_onheap_mb
        self.comps[slot][c.id] += 1
        self.count[slot] += 1
        self.per_node[(t.id, c.id, nid)] += 1
        self.assign[(t.id, c.id, i)] = slot

    def node_refuses(self, t: Topology, c: Component, nid: str) -> bool:
        """``why_not`` refuses c on every slot of node ``nid`` for a reason of the node's own
        (CPU, memory, resources, pins, max_per_node), whatever the slot holds."""
        if c.cpu > self.cpu[nid] + EPS or c.memory_mb > self.mem[nid] + EPS:
            return True
        if any(x > self.res[nid].get(r, 0.0) + EPS for r, x in c.resources.items()):
            return True
        return self.pinned_out(t, c, nid)

    def pinned_out(self, t: Topology, c: Component, nid: str) -> bool:
        """Site or node pin, or max_per_node, forbids node ``nid``."""
        n = self.nodes[nid]
        return ((c.site is not None and n.site != c.site) or (c.nodes is not None and nid not in c.nodes)
                or (c.max_per_node is not None and self.per_node[(t.id, c.id, nid)] >= c.max_per_node))

    def placements(self) -> list[Placement]:
        return [Placement(topology=t, component=c, executor=i, node=s[0], slot=s[1])
                for (t, c, i), s in sorted(self.assign.items())]


def _pos_int(name: str, v: Any, allow_none: bool = True) -> int | None:
    if v is None and allow_none:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise InstanceError(f"options.{name}", f"must be an integer >= 1, got {v!r}")
    return v


def _undirected(traffic: dict) -> dict:
    adj: dict = defaultdict(lambda: defaultdict(float))
    for (a, b), r in traffic.items():
        if a != b and r > 0:
            adj[a][b] += r
            adj[b][a] += r
    return adj


# --- T-Storm ------------------------------------------------------------------------------

TSTORM_SOURCE = "Xu, Chen, Tang, Su, T-Storm: Traffic-aware online scheduling in Storm, ICDCS 2014, section IV"


@register("tstorm", ["traffic", "network"], source=TSTORM_SOURCE, kind="heuristic", options={"gamma": 1.0},
          summary="traffic-aware greedy: hottest executors first, onto the node adding least inter-node traffic")
def tstorm(instance: Instance, problem: str, *, time_limit=None, seed=0, gamma=1.0):
    """T-Storm's greedy (Xu et al., ICDCS 2014, section IV).

    Per topology (priority order): executors sorted by total traffic (in + out, from the
    measured matrix when present, else from rates), descending, ties by (component, index).
    Each goes to the node that adds least inter-node traffic with the executors already
    placed, among nodes with a usable slot and enough CPU and holding fewer than
    ceil(gamma x E / N) of the topology's executors (N = nodes with a slot; ``gamma`` is the
    consolidation factor); ties: fewer of its executors there, then node id.

    ``network``: within the node, the topology's worker there is reused (T-Storm runs one
    worker per node per topology) when it fits, else the next free slot. Memory, heap and
    placement constraints are checked too (they are hard in that problem).

    ``traffic``: the problem fixes S = min(W, E) workers and M(alpha) executors per worker
    (alpha = params.alpha). N is then min(nodes, S), since at most S nodes can hold the
    workers. Nodes are chosen as above, using at most S distinct nodes and at
    most (free ports x M) executors per node; then each node gets enough workers (at least
    ceil(k/M), more on the fullest nodes until S in all) and its executors are split over them,
    each into the worker it exchanges most traffic with (an empty worker when as many executors
    remain as empty workers). When that cannot give S workers the result is infeasible with
    the reason. These worker rules are this module's, not T-Storm's (T-Storm has no such limits).
    """
    if not isinstance(gamma, (int, float)) or isinstance(gamma, bool) or not gamma > 0 or not math.isfinite(gamma):
        raise InstanceError("options.gamma", f"gamma must be a number > 0, got {gamma!r}")
    method = "tstorm"
    st = _State(instance)
    total_slots = sum(len(n.slots) for n in instance.cluster.nodes)
    node_ids = sorted(n.id for n in instance.cluster.nodes if n.slots)
    if not node_ids:
        return no_plan(problem, method, "no node has a worker slot")
    details: dict[str, Any] = {"gamma": gamma, "cap_per_node": {}}
    for t in topology_order(instance):
        tr = rates.executor_traffic(t)
        adj = _undirected(tr)
        tot = {x: sum(adj[x].values()) for x in t.executors()}
        order = sorted(t.executors(), key=lambda x: (-tot[x], x))
        E = len(order)
        n_eff = len(node_ids)
        if problem == "traffic":
            S = rates.workers_required(t, total_slots)
            M = rates.max_per_worker(E, S, instance.params.alpha)
            n_eff = min(n_eff, S)  # at most S nodes can hold the topology's S workers
        cap = math.ceil(gamma * E / n_eff)
        details["cap_per_node"][t.id] = cap
        node_of: dict = {}
        on_node: Counter = Counter()
        # the traffic an executor would add on a node is its traffic to placed executors less
        # that to the node's, in exact integers (weight_scale); a node is looked at closely (its
        # slots) only when its key would win: Storm's largeCluster01 summed every neighbour for
        # each of 1,312 nodes and scanned their 50 ports for each executor (session 27)
        den = weight_scale(adj)
        if problem == "traffic":  # workers are chosen after the nodes (_split_workers): the counts hold meanwhile
            free_count = {nid: sum(1 for p in st.nodes[nid].slots if (nid, p) not in st.owner) for nid in node_ids}
        for x in order:
            c = t.component(x[0])
            to_node: Counter = Counter()
            for y, w in adj[x].items():
                if y in node_of:
                    to_node[node_of[y]] += int(w * den)
            placed = sum(to_node.values())
            best = None
            for nid in node_ids:
                if on_node[nid] >= cap:
                    continue
                if problem == "traffic":
                    if nid not in on_node and len(on_node) >= S:
                        continue
                    if not free_count[nid] or on_node[nid] >= free_count[nid] * M:
                        continue
                    if c.cpu > st.cpu[nid] + EPS or st.pinned_out(t, c, nid):
                        continue
                elif st.node_refuses(t, c, nid):  # every slot of the node would refuse c
                    continue
                key = (placed - to_node[nid], on_node[nid], nid)
                if best is not None and not key < best[0]:
                    continue
                if problem == "traffic":
                    slot = None
                else:
                    free_ports = [p for p in st.nodes[nid].slots if (nid, p) not in st.owner]
                    own = [(nid, p) for p in st.nodes[nid].slots if st.owner.get((nid, p)) == t.id]
                    slot = next((s for s in own + [(nid, p) for p in free_ports] if st.why_not(t, c, s) is None), None)
                    if slot is None:
                        continue
                best = (key, nid, slot)
            if best is None:
                return no_plan(problem, method,
                               f"topology {t.id!r}: no node has a free slot, CPU ({c.cpu:g} points) and room under the "
                               f"cap of {cap} executors per node for {x[0]}[{x[1]}]"
                               + (" (and at most S workers / M executors per worker)" if problem == "traffic" else ""))
            node_of[x] = best[1]
            on_node[best[1]] += 1
            if problem == "traffic":
                st.cpu[best[1]] -= c.cpu  # reserved; the worker is chosen in _split_workers
                st.per_node[(t.id, c.id, best[1])] += 1
            else:
                st.put(t, c, x[1], best[2])
        if problem == "traffic":
            why = _split_workers(st, t, order, node_of, on_node, adj, S, M)
            if why:
                return no_plan(problem, method, f"topology {t.id!r}: {why}")
    return plan_result(problem, method, st.placements(), Status.FEASIBLE, details=details)


def _split_workers(st: _State, t: Topology, order: list, node_of: dict, on_node: Counter, adj, S: int, M: int) -> str | None:
    """Give each used node w_n workers (sum S, ceil(k_n/M) <= w_n <= min(k_n, free ports)) and
    split its executors over them, each into the worker it exchanges most traffic with."""
    used = sorted(on_node)
    free = {n: [p for p in st.nodes[n].slots if (n, p) not in st.owner] for n in used}
    lo = {n: math.ceil(on_node[n] / M) for n in used}
    hi = {n: min(on_node[n], len(free[n])) for n in used}
    if sum(lo.values()) > S or sum(hi.values()) < S or any(lo[n] > hi[n] for n in used):
        return (f"its executors landed on {len(used)} nodes, which can hold between {sum(lo.values())} and "
                f"{sum(hi.values())} workers under M = {M}; the problem needs exactly S = {S}")
    w = dict(lo)
    while sum(w.values()) < S:
        n = max((n for n in used if w[n] < hi[n]), key=lambda n: (on_node[n] / w[n], n))
        w[n] += 1
    for n in used:
        slots = [(n, p) for p in free[n][: w[n]]]
        members: dict[Slot, list] = {s: [] for s in slots}
        mine = [x for x in order if node_of[x] == n]
        for j, x in enumerate(mine):
            remaining = len(mine) - j
            empty = [s for s in slots if not members[s]]
            ok = [s for s in slots if len(members[s]) < M]
            if remaining <= len(empty):
                ok = empty
            best = max(ok, key=lambda s: (sum(adj[x].get(y, 0.0) for y in members[s]), -len(members[s]), -s[1]))
            members[best].append(x)
            c = t.component(x[0])
            st.cpu[n] += c.cpu  # put() takes the reservation again
            st.per_node[(t.id, c.id, n)] -= 1
            st.put(t, c, x[1], best)
    return None


# --- Heron ------------------------------------------------------------------------------------

HERON_FFD = "Apache Heron FirstFitDecreasingPacking (heron/packing/binpacking)"
HERON_RCRR = "Apache Heron ResourceCompliantRRPacking (heron/packing/roundrobin)"


def _free_slots_in_order(st: _State) -> list[Slot]:
    return [s for s in all_slots(st.inst) if s not in st.owner]


@register("heron.ffd", ["network", "feasibility"], source=HERON_FFD, kind="heuristic", options={"max_instances": 4},
          summary="first fit decreasing by memory then CPU; opens a worker slot as a container when none fits")
def heron_ffd(instance: Instance, problem: str, *, time_limit=None, seed=0, max_instances=4):
    """Heron's FirstFitDecreasingPacking, on Storm's slots.

    Per topology (priority order): instances sorted by memory (on-heap + off-heap), then CPU,
    both descending, then (component, index). Each goes into the first open container (in
    opening order) where it fits and that holds fewer than ``max_instances`` instances; when
    none does, a new container is opened: the first free worker slot (nodes by id, ports
    ascending) where it fits. No slot left: infeasible, naming the instance. ``max_instances``
    defaults to 4, our assumption for Heron's per-container instance default; None = no limit.
    """
    mi = _pos_int("max_instances", max_instances)
    method = "heron.ffd"
    st = _State(instance)
    containers: dict[str, list[Slot]] = {}
    # the slots in order once, by node: a free slot holds nothing, so whether an instance fits it
    # depends on its node alone, and one free slot a node answers for all (listing and testing
    # every free slot for each new container took 84 s on Storm's largeCluster01's 65,600 slots,
    # session 27; slots are only ever taken here)
    by_node: list[tuple[str, list[int]]] = []
    for nid, port in all_slots(instance):
        if not by_node or by_node[-1][0] != nid:
            by_node.append((nid, []))
        by_node[-1][1].append(port)
    for t in topology_order(instance):
        items = sorted(((t.component(c), i) for c, i in t.executors()),
                       key=lambda ci: (-ci[0].memory_mb, -ci[0].cpu, ci[0].id, ci[1]))
        opened: list[Slot] = []
        room: list[Slot] = []  # opened containers under max_instances, in opening order (a full one stays full)
        for c, i in items:
            slot = next((s for s in room if st.why_not(t, c, s) is None), None)
            if slot is None:
                slot = next((s for s in (_first_free(st, nid, ports) for nid, ports in by_node)
                             if s is not None and st.why_not(t, c, s) is None), None)
                if slot is None:
                    return no_plan(problem, method, f"topology {t.id!r}: no open container and no free worker slot "
                                                    f"fits {c.id}[{i}] (CPU {c.cpu:g}, memory {c.memory_mb:g} MB)")
                opened.append(slot)
                room.append(slot)
            st.put(t, c, i, slot)
            if mi is not None and st.count[slot] >= mi:
                room.remove(slot)
        containers[t.id] = [f"{n}:{p}" for n, p in opened]
    return plan_result(problem, method, st.placements(), Status.FEASIBLE, details={"containers": containers})


def _first_free(st: _State, nid: str, ports: list[int]) -> Slot | None:
    """Node ``nid``'s first port no topology owns, or None."""
    return next(((nid, p) for p in ports if (nid, p) not in st.owner), None)


@register("heron.rcrr", ["network", "feasibility"], source=HERON_RCRR, kind="heuristic", options={"max_instances": None},
          summary="strict round robin over the requested containers; one more container and restart on a violation")
def heron_rcrr(instance: Instance, problem: str, *, time_limit=None, seed=0, max_instances=None):
    """Heron's ResourceCompliantRRPacking, on Storm's slots.

    Per topology (priority order): k = topology.workers containers (1 when unset), taken as
    the first k free slots in Storm's EvenScheduler interleaving (spread over the nodes).
    Instances sorted by (component, index) go strictly round robin: instance j into container
    j mod k. When an instance does not fit its container (node CPU, memory, worker heap,
    placement, or ``max_instances``), the topology's packing is undone, k grows by one and the
    round robin starts over. More containers than free slots: infeasible with the reason.
    """
    mi = _pos_int("max_instances", max_instances)
    method = "heron.rcrr"
    st = _State(instance)
    restarts: dict[str, int] = {}
    for t in topology_order(instance):
        k = t.workers or 1
        execs = t.executors()
        k = min(k, len(execs))
        restarts[t.id] = 0
        free = even_slot_order(_free_slots_in_order(st))  # a restart leaves the state as it was
        while True:
            if k > len(free):
                return no_plan(problem, method, f"topology {t.id!r}: round robin needs {k} containers but only "
                                                f"{len(free)} free worker slots remain (after {restarts[t.id]} restarts)")
            st.begin()  # the trial packing, undone exactly on a violation
            cont = free[:k]
            bad = None
            for j, (cid, i) in enumerate(execs):
                c = t.component(cid)
                s = cont[j % k]
                why = "max_instances" if mi is not None and st.count[s] >= mi else st.why_not(t, c, s)
                if why:
                    bad = f"{cid}[{i}] in container {s[0]}:{s[1]} ({why})"
                    break
                st.put(t, c, i, s)
            if bad is None:
                st.commit()
                break
            st.rollback()
            if k >= len(execs):
                return no_plan(problem, method, f"topology {t.id!r}: with one instance per container, {bad} still does "
                                                f"not fit (after {restarts[t.id]} restarts)")
            restarts[t.id] += 1
            k += 1
    return plan_result(problem, method, st.placements(), Status.FEASIBLE, details={"restarts": restarts})
