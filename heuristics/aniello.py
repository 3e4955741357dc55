"""Aniello, Baldoni, Querzoni, "Adaptive Online Scheduling in Storm", DEBS 2013 (seed 001).

Two schedulers for the ``traffic`` problem (section 3.2.2): each topology runs on exactly
S = min(W, E) worker slots, at most M(alpha) executors per slot (section 3), node load at
most a capacity B; minimise inter-node traffic.

* :func:`offline` -- the topology-based scheduler of section 3.1.
* :func:`online` -- the traffic-based scheduler of section 3.2.3, completed as
  ../shared/ALGORITHMS.md states it (the seed text stops after its first sentence).

Both report the inter-slot (inter-worker) and inter-node traffic of their plan in
``details``. Both accept ``current_plan`` and ``min_improvement`` (R, percent): the online
scheduler of section 3.2.1 deploys a new schedule only when it lowers inter-node traffic by
more than R %; otherwise the current plan is returned and ``details`` say why.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

from planner import rates
from planner.model import Instance, InstanceError, Topology
from planner.plan import Plan, Result, Status
from planner.registry import register

from .common import all_slots, no_plan, topology_order, weight_scale

Exec = tuple[str, int]
SOURCE = "Aniello, Baldoni, Querzoni, Adaptive Online Scheduling in Storm, DEBS 2013"


# --- shared helpers ---------------------------------------------------------------------

def _alpha(instance: Instance, alpha: float | None) -> float:
    a = instance.params.alpha if alpha is None else alpha
    if not isinstance(a, (int, float)) or isinstance(a, bool) or not 0 <= a <= 1:
        raise InstanceError("options.alpha", f"alpha must be a number in [0, 1], got {a!r}")
    return float(a)


def _beta(beta: Any) -> float:
    if not isinstance(beta, (int, float)) or isinstance(beta, bool) or not 0 <= beta <= 1:
        raise InstanceError("options.beta", f"beta must be a number in [0, 1], got {beta!r}")
    return float(beta)


def _undirected(traffic: dict[tuple[Exec, Exec], float]) -> dict[Exec, dict[Exec, float]]:
    """Adjacency with the traffic of both directions summed: adj[a][b] = R(a->b) + R(b->a)."""
    adj: dict[Exec, dict[Exec, float]] = defaultdict(lambda: defaultdict(float))
    for (a, b), r in traffic.items():
        if a == b or r <= 0:
            continue
        adj[a][b] += r
        adj[b][a] += r
    return adj


def cut_traffic(traffic: dict[tuple[Any, Any], float], where: dict[Any, Any]) -> float:
    """Sum of the traffic between items whose locations in ``where`` differ (unplaced ignored)."""
    total = 0.0
    for (a, b), r in traffic.items():
        wa, wb = where.get(a), where.get(b)
        if wa is not None and wb is not None and wa != wb:
            total += r
    return total


def _traffic_of(t: Topology) -> dict[tuple[Exec, Exec], float]:
    """The measured traffic matrix when the topology carries one, else traffic from rates."""
    return rates.executor_traffic(t)


def plan_traffic(instance: Instance, plan: Plan) -> dict[str, float]:
    """Inter-slot and inter-node traffic of a plan (tuples/s), from the same traffic the
    schedulers use (measured matrix, else rates)."""
    where = {(p.topology, p.component, p.executor): (p.node, p.slot) for p in plan.placements}
    inter_slot = inter_node = 0.0
    for t in instance.topologies:
        tr = _traffic_of(t)
        w = {e: where.get((t.id, *e)) for e in t.executors()}
        inter_slot += cut_traffic(tr, w)
        inter_node += cut_traffic(tr, {e: (x[0] if x else None) for e, x in w.items()})
    return {"inter_slot_traffic": inter_slot, "inter_node_traffic": inter_node}


def _apply_reschedule_rule(instance: Instance, problem: str, method: str, res: Result,
                           current_plan: Any, min_improvement: float) -> Result:
    """Section 3.2.1: deploy the new schedule only if inter-node traffic drops by more than R %."""
    if current_plan is None:
        return res
    if not isinstance(min_improvement, (int, float)) or isinstance(min_improvement, bool) or not 0 <= min_improvement <= 100:
        raise InstanceError("options.min_improvement", f"must be a percentage in [0, 100], got {min_improvement!r}")
    from planner.api import parse_plan

    try:
        cur = parse_plan(current_plan)
    except InstanceError as e:
        raise InstanceError([("options.current_plan" + p[len("plan"):] if p.startswith("plan") else "options.current_plan." + p, r)
                             for p, r in e.problems]) from None
    cur_t = plan_traffic(instance, cur)
    res.details["current_plan_traffic"] = cur_t
    if res.plan is None:
        res.details["rescheduled"] = False
        res.details["reschedule_reason"] = "no new plan was found; keeping the current plan"
        return Result(problem=problem, method=method, status=Status.FEASIBLE, plan=cur, details=res.details,
                      message="no new plan found; the current plan is kept")
    new_t = res.details.get("inter_node_traffic", plan_traffic(instance, res.plan)["inter_node_traffic"])
    old = cur_t["inter_node_traffic"]
    drop = (old - new_t) / old * 100.0 if old > 0 else 0.0
    res.details["traffic_drop_percent"] = drop
    if old > 0 and drop > min_improvement:
        res.details["rescheduled"] = True
        res.details["reschedule_reason"] = f"inter-node traffic drops by {drop:.3g} % > R = {min_improvement:g} %"
        return res
    res.details["rescheduled"] = False
    res.details["reschedule_reason"] = (
        f"inter-node traffic would drop by {drop:.3g} %, not more than R = {min_improvement:g} %; keeping the current plan")
    res.details["rejected_plan"] = res.plan.model_dump()
    res.details.update({"inter_slot_traffic": cur_t["inter_slot_traffic"], "inter_node_traffic": old})
    return Result(problem=problem, method=method, status=Status.FEASIBLE, plan=cur, details=res.details,
                  message=res.details["reschedule_reason"])


def _sizes(instance: Instance, alpha: float) -> tuple[dict[str, int], dict[str, int], str | None]:
    """S and M(alpha) per topology, or a reason why the cluster cannot host them all."""
    total = sum(len(n.slots) for n in instance.cluster.nodes)
    s = {t.id: rates.workers_required(t, total) for t in instance.topologies}
    m = {t.id: rates.max_per_worker(t.executor_count, s[t.id], alpha) for t in instance.topologies}
    need = sum(s.values())
    if need > total:
        return s, m, (f"the topologies need {need} worker slots in total (sum of min(W, E)) but the cluster has "
                      f"{total} (section 3: a schedule is possible only if enough slots are available)")
    return s, m, None


def _result(instance: Instance, problem: str, method: str, assignment: dict, extra: dict[str, Any]) -> Result:
    plan = Plan.from_assignment(assignment)
    details = dict(extra)
    details.update(plan_traffic(instance, plan))
    return Result(problem=problem, method=method, status=Status.FEASIBLE, plan=plan, details=details)


# --- offline (section 3.1) -----------------------------------------------------------------

def offline_partition(t: Topology, S: int, M: int, beta: float) -> tuple[list[list[Exec]], list[str]]:
    """Phase 1 of the offline scheduler: executors of ``t`` onto S abstract slots.

    Components are taken in a linearisation phi of the DAG (``rates.topo_order``). The
    executors of the i-th component (1-based) are dealt round robin over the slots that
    already hold executors of its direct upstream components; once i > ceil(beta C), the
    still-empty slots join that list, ahead of it (they are "forced" into use). A component
    with no placed upstream (a spout) is dealt over all S slots when forced, else over the
    slots in use (slot 0 when none is). A slot holding M executors is skipped; when every
    listed slot is full the least loaded slot with room is used. Finally, any slot still
    empty takes the most recently placed executor of the fullest slot (section 3: exactly
    min(W, E) workers must run the topology). Returns the slots and notes on the repairs.
    """
    order = rates.topo_order(t)
    par = {c.id: c.parallelism for c in t.components}
    ups: dict[str, list[str]] = defaultdict(list)
    for s in t.streams:
        if s.source not in ups[s.target]:
            ups[s.target].append(s.source)
    slots: list[list[Exec]] = [[] for _ in range(S)]
    slot_of: dict[str, set[int]] = defaultdict(set)
    notes: list[str] = []
    C = len(order)
    threshold = math.ceil(beta * C)
    for i, cid in enumerate(order, start=1):
        forced = i > threshold
        cand = sorted({k for u in ups[cid] for k in slot_of[u]})
        empty = [k for k in range(S) if not slots[k]]
        if forced:
            cand = empty + [k for k in cand if k not in empty]
        if not cand:
            used = [k for k in range(S) if slots[k]]
            cand = list(range(S)) if forced else (used or [0])
        ptr = 0
        for j in range(par[cid]):
            chosen = None
            for step in range(len(cand)):
                k = cand[(ptr + step) % len(cand)]
                if len(slots[k]) < M:
                    chosen = k
                    ptr = (ptr + step + 1) % len(cand)
                    break
            if chosen is None:
                room = [k for k in range(S) if len(slots[k]) < M]
                chosen = min(room, key=lambda k: (len(slots[k]), k))
                notes.append(f"{cid}[{j}]: listed slots full (M = {M}); least loaded slot {chosen} used")
            slots[chosen].append((cid, j))
            slot_of[cid].add(chosen)
    for k in range(S):
        if not slots[k]:
            donor = max(range(S), key=lambda q: (len(slots[q]), -q))
            ex = slots[donor].pop()
            slots[k].append(ex)
            notes.append(f"slot {k} empty after phase 1: took {ex[0]}[{ex[1]}] from slot {donor}")
    return slots, notes


@register("aniello.offline", ["traffic"], source=SOURCE + ", section 3.1", kind="heuristic",
          options={"alpha": None, "beta": 0.5, "current_plan": None, "min_improvement": 0.0},
          summary="topology-based: executors follow their upstream components' slots; beta opens empty slots")
def offline(instance: Instance, problem: str, *, time_limit=None, seed=0, alpha=None, beta=0.5,
            current_plan=None, min_improvement=0.0) -> Result:
    """Aniello et al. offline (topology-based) scheduler, section 3.1.

    Phase 1: :func:`offline_partition` per topology (alpha sets M(alpha); default the
    instance's ``params.alpha`` so plans meet the problem's cap). Phase 2: the slots are
    dealt round robin over the nodes: the topology's S slots are the first S free ones in
    Storm's EvenScheduler interleaving (one port of each node, then the second of each...).
    As the paper says, neither CPU nor memory is considered, so the evaluator may reject a
    plan that overloads a node (status infeasible with the node named).
    Deviations: the paper leaves the start of the round robin, spouts, full slots and slots
    left empty open; the choices are in :func:`offline_partition`.
    """
    a = _alpha(instance, alpha)
    b = _beta(beta)
    S, M, why = _sizes(instance, a)
    if why:
        res = no_plan(problem, "aniello.offline", why)
        return _apply_reschedule_rule(instance, problem, "aniello.offline", res, current_plan, min_improvement)
    from .storm import even_slot_order

    free = all_slots(instance)
    assignment: dict = {}
    notes: dict[str, list[str]] = {}
    for t in topology_order(instance):
        parts, nt = offline_partition(t, S[t.id], M[t.id], b)
        order = even_slot_order(free)[: S[t.id]]
        for k, execs in enumerate(parts):
            for (c, i) in execs:
                assignment[(t.id, c, i)] = order[k]
        free = [s for s in free if s not in set(order)]
        if nt:
            notes[t.id] = nt
    res = _result(instance, problem, "aniello.offline", assignment,
                  {"alpha": a, "beta": b, "S": S, "M": M, **({"notes": notes} if notes else {})})
    return _apply_reschedule_rule(instance, problem, "aniello.offline", res, current_plan, min_improvement)


# --- online (section 3.2.3 as ALGORITHMS.md completes it) --------------------------------

class _Bins:
    """Bins (slots or nodes) with a load, a count limit and a load limit, for the greedy
    pair placement both phases of the online scheduler use. A bin's items are kept in the order
    they came in (a dict: taking an item out and putting it back moves it to the end, as with a
    list, in O(1))."""

    def __init__(self, n: int, count_cap: list[int], load_cap: list[float]):
        self.items: list[dict[Any, None]] = [{} for _ in range(n)]
        self.load = [0.0] * n
        self.count_cap = count_cap
        self.load_cap = load_cap
        self.where: dict[Any, int] = {}

    def can(self, k: int, n_items: int, load: float) -> bool:
        return (len(self.items[k]) + n_items <= self.count_cap[k]
                and self.load[k] + load <= self.load_cap[k] + 1e-9 * max(1.0, abs(self.load_cap[k])))

    def least_loaded(self, n_items: int, load: float) -> int | None:
        ok = [k for k in range(len(self.items)) if self.can(k, n_items, load)]
        return min(ok, key=lambda k: (self.load[k], len(self.items[k]), k)) if ok else None

    def put(self, x: Any, k: int, load: float) -> None:
        self.items[k][x] = None
        self.load[k] += load
        self.where[x] = k

    def take(self, x: Any, load: float) -> None:
        k = self.where.pop(x)
        del self.items[k][x]
        self.load[k] -= load


class _Cuts:
    """The traffic each item exchanges with every bin, kept up to date as items move, so that the
    traffic an item would cut in bin k is one subtraction: its traffic to placed items less its
    traffic to bin k. In exact integers (every weight is a float, so a whole multiple of
    1 / ``den``, the largest power-of-two denominator among them): sums do not depend on the
    order of their terms, and ties compare equal. Summing each item's neighbours for every
    candidate took 148 s for the 223,261 pairs of one topology of Storm's largeCluster01 (session
    27); an update costs one pass over an item's neighbours, and only when its bin changes."""

    def __init__(self, adj: dict[Any, dict[Any, float]], bins: int):
        self.adj, self.bins = adj, bins
        self.den = weight_scale(adj)
        self.to_bin: dict[Any, list[int]] = {}  # item -> its traffic to each bin's placed items
        self.placed: dict[Any, int] = {}  # item -> its traffic to all placed items

    def weight(self, x: Any, y: Any) -> int:
        return int(self.adj.get(x, {}).get(y, 0.0) * self.den)

    def moved(self, x: Any, old: int | None, new: int | None) -> None:
        """x left bin ``old`` for bin ``new`` (None: not placed)."""
        if old == new:
            return
        for y, w in self.adj.get(x, {}).items():
            iw = int(w * self.den)
            row = self.to_bin.get(y)
            if row is None:
                row = self.to_bin[y] = [0] * self.bins
                self.placed[y] = 0
            if old is None:
                self.placed[y] += iw
            else:
                row[old] -= iw
            if new is None:
                self.placed[y] -= iw
            else:
                row[new] += iw

    def cut(self, x: Any, k: int, other_bin: int | None, mutual: int) -> int:
        """The traffic x would exchange with placed items outside bin k, leaving out the other item
        of its pair (placed in ``other_bin``, or not placed: None), with which it exchanges
        ``mutual`` (the adjacency is symmetric: one weight serves both items)."""
        row = self.to_bin.get(x)
        if row is None:
            return 0
        total, inside = self.placed[x], row[k]
        if other_bin is not None:
            total -= mutual
            if other_bin == k:
                inside -= mutual
        return total - inside


class _Stopped(Exception):
    """The online scheduler reached its time limit (``deadline``) after ``done`` of ``total`` pairs."""

    def __init__(self, done: int, total: int):
        super().__init__(done, total)
        self.done, self.total = done, total


def _check(deadline: float | None, done: int, total: int) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _Stopped(done, total)


def _greedy_pairs(pairs: list[tuple[Any, Any, float]], items: list[Any], load: dict[Any, float],
                  adj: dict[Any, dict[Any, float]], bins: _Bins, deadline: float | None = None) -> str | None:
    """The online scheduler's greedy step (ALGORITHMS.md, Aniello): pairs by traffic, descending.

    * neither placed: both into the least loaded bin that takes both; else the source into the
      least loaded bin that takes it, the destination with it if it fits, else into the least
      loaded bin that takes it;
    * one or both placed: candidates are the bins holding them plus the least loaded bin that
      can take the heavier one; both are lifted out and every (source bin, destination bin)
      combination is tried; the one with least traffic cut wins (first in candidate order on ties,
      costs within 1e-12 tuples/s being ties). The costs come from ``_Cuts``, exactly.
    Items in no pair go to the least loaded bin that takes them. Returns a reason on failure;
    raises _Stopped past ``deadline`` (looked at every 4,096 pairs).
    """
    cuts = _Cuts(adj, len(bins.items))
    tie = 1e-12 * cuts.den

    def put(x: Any, k: int, old: int | None = None) -> None:
        bins.put(x, k, load[x])
        cuts.moved(x, old, k)

    for i, (a, b, _) in enumerate(pairs):
        if (i & 4095) == 0:
            _check(deadline, i, len(pairs))
        if a not in bins.where and b not in bins.where:
            k = bins.least_loaded(2, load[a] + load[b])
            if k is not None:
                put(a, k)
                put(b, k)
                continue
            k = bins.least_loaded(1, load[a])
            if k is None:
                return f"no room for {a}"
            put(a, k)
            k2 = k if bins.can(k, 1, load[b]) else bins.least_loaded(1, load[b])
            if k2 is None:
                return f"no room for {b}"
            put(b, k2)
            continue
        cand = sorted({bins.where[x] for x in (a, b) if x in bins.where})
        heavy = a if load[a] >= load[b] else b
        extra = bins.least_loaded(1, load[heavy])
        if extra is not None and extra not in cand:
            cand.append(extra)
        old = {x: bins.where[x] for x in (a, b) if x in bins.where}
        for x in old:
            bins.take(x, load[x])
        mutual = cuts.weight(a, b)
        best = None
        for ka in cand:
            if not bins.can(ka, 1, load[a]):
                continue
            cut_a = cuts.cut(a, ka, old.get(b), mutual)
            for kb in cand:
                if ka == kb:
                    if not bins.can(ka, 2, load[a] + load[b]):
                        continue
                elif not bins.can(kb, 1, load[b]):
                    continue
                cost = cut_a + cuts.cut(b, kb, old.get(a), mutual) + (mutual if ka != kb else 0)
                if best is None or best[0] - cost > tie:
                    best = (cost, ka, kb)
        if best is None:
            # cannot happen when the pair was placed before; put things back in free bins
            for x in (a, b):
                k = old.get(x)
                if k is None or not bins.can(k, 1, load[x]):
                    k = bins.least_loaded(1, load[x])
                if k is None:
                    return f"no room for {x}"
                put(x, k, old.get(x))
            continue
        put(a, best[1], old.get(a))
        put(b, best[2], old.get(b))
    for x in items:
        if x not in bins.where:
            k = bins.least_loaded(1, load[x])
            if k is None:
                return f"no room for {x}"
            bins.put(x, k, load[x])
    return None


def online_partition(execs: list[Exec], traffic: dict[tuple[Exec, Exec], float], load: dict[Exec, float],
                     S: int, M: int, deadline: float | None = None) -> tuple[list[list[Exec]], list[str]]:
    """Phase 1 of the online scheduler: executors onto S slots of at most M executors.

    Pairs are the directed executor pairs with traffic > 0, by traffic descending (ties by
    source then destination). After the greedy pass, each slot left empty receives the
    executor, taken from a slot holding several, whose move adds least inter-slot traffic.
    Raises _Stopped past ``deadline``.
    """
    adj = _undirected(traffic)
    pairs = sorted(((a, b, r) for (a, b), r in traffic.items() if r > 0 and a != b), key=lambda p: (-p[2], p[0], p[1]))
    bins = _Bins(S, [M] * S, [math.inf] * S)
    why = _greedy_pairs(pairs, execs, load, adj, bins, deadline)
    if why:
        raise RuntimeError(why)  # S x M >= E always leaves room: a bug if reached
    notes = []
    for k in range(S):
        if bins.items[k]:
            continue
        best = None
        for q in range(S):
            if q == k or len(bins.items[q]) <= 1:
                continue
            for x in bins.items[q]:
                added = sum(w for y, w in adj.get(x, {}).items() if bins.where.get(y) == q)
                if best is None or added < best[0] - 1e-12:
                    best = (added, x, q)
        if best is not None:
            bins.take(best[1], load[best[1]])
            bins.put(best[1], k, load[best[1]])
            notes.append(f"slot {k} was empty: moved {best[1]} from slot {best[2]} (+{best[0]:g} tuples/s inter-slot)")
    return [list(b) for b in bins.items], notes


def _capacity(instance: Instance, capacity: Any) -> dict[str, float]:
    nodes = instance.cluster.nodes
    if capacity is None:
        return {n.id: n.cpu for n in nodes}
    if isinstance(capacity, (int, float)) and not isinstance(capacity, bool):
        if capacity < 0:
            raise InstanceError("options.capacity", f"capacity must be >= 0, got {capacity}")
        return {n.id: float(capacity) for n in nodes}
    if isinstance(capacity, dict):
        out = {n.id: n.cpu for n in nodes}
        for k, v in capacity.items():
            if k not in out:
                raise InstanceError(f"options.capacity.{k}", f"unknown node {k!r}")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise InstanceError(f"options.capacity.{k}", f"capacity must be a number >= 0, got {v!r}")
            out[k] = float(v)
        return out
    raise InstanceError("options.capacity", "capacity must be a number (every node) or {node: number}")


@register("aniello.online", ["traffic"], source=SOURCE + ", section 3.2.3 (completed from the authors' code)",
          kind="heuristic",
          options={"alpha": None, "beta": 0.5, "capacity": None, "max_slots_per_node": None,
                   "current_plan": None, "min_improvement": 0.0},
          summary="traffic-based: hottest executor pairs into one slot, hottest slot pairs onto one node")
def online(instance: Instance, problem: str, *, time_limit=None, seed=0, alpha=None, beta=0.5, capacity=None,
           max_slots_per_node=None, current_plan=None, min_improvement=0.0) -> Result:
    """Aniello et al. online (traffic-based) scheduler, section 3.2.3 as ALGORITHMS.md states it.

    Traffic: the topology's measured matrix when present, else ``rates.executor_traffic``.
    Load of an executor: its component's CPU points (the paper measures Hz; points are the
    planner's CPU unit). Phase 1 per topology: :func:`online_partition` with M(alpha)
    (alpha defaults to ``params.alpha``). Phase 2, all topologies' slots together: slot pairs
    by inter-slot traffic, descending, placed on nodes by the same greedy rule with node
    capacity B (``capacity``: a number for every node or {node: B}; default the node's CPU
    points), its free ports and at most ``max_slots_per_node`` slots; slots without traffic
    go to the least loaded node that takes them. ``beta`` is accepted for symmetry with the
    paper's parameter list and is unused (it only steers the offline scheduler).
    """
    a = _alpha(instance, alpha)
    _beta(beta)
    caps = _capacity(instance, capacity)
    if max_slots_per_node is not None and (not isinstance(max_slots_per_node, int) or isinstance(max_slots_per_node, bool)
                                           or max_slots_per_node < 1):
        raise InstanceError("options.max_slots_per_node", f"must be an integer >= 1, got {max_slots_per_node!r}")
    method = "aniello.online"
    S, M, why = _sizes(instance, a)
    if why:
        return _apply_reschedule_rule(instance, problem, method, no_plan(problem, method, why), current_plan, min_improvement)

    slot_items: list[tuple[str, list[Exec]]] = []  # (topology, executors) per slot
    slot_traffic: dict[tuple[int, int], float] = defaultdict(float)
    notes: dict[str, list[str]] = {}
    deadline = None if time_limit is None else time.monotonic() + time_limit

    def stopped(where: str, st: _Stopped) -> Result:
        res = no_plan(problem, method, f"stopped by the time limit ({time_limit:g} s) in {where}, after {st.done:,} of "
                                       f"{st.total:,} pairs by traffic; no plan", status=Status.UNKNOWN)
        return _apply_reschedule_rule(instance, problem, method, res, current_plan, min_improvement)

    for t in topology_order(instance):
        tr = _traffic_of(t)
        load = {(c.id, i): c.cpu for c in t.components for i in range(c.parallelism)}
        try:
            _check(deadline, 0, len(tr))
            parts, nt = online_partition(t.executors(), tr, load, S[t.id], M[t.id], deadline)
        except _Stopped as st:
            return stopped(f"phase 1 (executors to slots) of topology {t.id!r}", st)
        base = len(slot_items)
        idx = {}
        for k, execs in enumerate(parts):
            slot_items.append((t.id, execs))
            for x in execs:
                idx[x] = base + k
        for (x, y), r in tr.items():
            if r > 0 and idx.get(x) is not None and idx.get(y) is not None and idx[x] != idx[y]:
                slot_traffic[(idx[x], idx[y])] += r
        if nt:
            notes[t.id] = nt

    # phase 2: slots -> nodes
    nodes = sorted(instance.cluster.nodes, key=lambda n: n.id)
    cap_count = [len(n.slots) if max_slots_per_node is None else min(len(n.slots), max_slots_per_node) for n in nodes]
    bins = _Bins(len(nodes), cap_count, [caps[n.id] for n in nodes])
    slot_load = {k: sum(instance.topology(tid).component(c).cpu for c, _ in execs) for k, (tid, execs) in enumerate(slot_items)}
    adj = _undirected(slot_traffic)
    pairs = sorted(((a_, b_, r) for (a_, b_), r in slot_traffic.items()), key=lambda p: (-p[2], p[0], p[1]))
    try:
        why = _greedy_pairs(pairs, list(range(len(slot_items))), slot_load, adj, bins, deadline)
    except _Stopped as st:
        return stopped("phase 2 (slots to nodes)", st)
    if why:
        k = int(why.split()[-1])
        res = no_plan(problem, method,
                      f"phase 2: no node has a free port and capacity B left for slot {k} of topology "
                      f"{slot_items[k][0]!r} (load {slot_load[k]:g} points)",
                      details={"phase1_slots": [[f"{c}[{i}]" for c, i in ex] for _, ex in slot_items]})
        return _apply_reschedule_rule(instance, problem, method, res, current_plan, min_improvement)
    assignment = {}
    for ni, n in enumerate(nodes):
        ports = list(n.slots)
        for k in sorted(bins.items[ni]):
            port = ports.pop(0)
            tid, execs = slot_items[k]
            for c, i in execs:
                assignment[(tid, c, i)] = (n.id, port)
    res = _result(instance, problem, method, assignment,
                  {"alpha": a, "S": S, "M": M, "capacity": caps,
                   "node_load": {nodes[i].id: bins.load[i] for i in range(len(nodes)) if bins.items[i]},
                   **({"notes": notes} if notes else {})})
    return _apply_reschedule_rule(instance, problem, method, res, current_plan, min_improvement)
