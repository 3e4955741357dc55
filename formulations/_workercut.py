"""The worker, node and count cuts: lower bounds on a topology's cross-worker and cross-node
executor pairs (network).

In the network metric every pair of executors (e of u, f of a downstream d) costs at least 1
when e and f are in different workers. A worker holds at most the topology's max heap of
on-heap memory and lives on one node, so a topology whose executors do not fit one worker is
split over several, and every plan pays at least the fewest pairs such a split can cut. That
minimum is a capacitated clique partition: the executors are split into groups (workers), each
group within the limits one worker can meet on some node; minimise the weighted pairs split.
Nodes and ports do not enter it, so it is a relaxation of every plan's workers, and its optimum,
or a stopped solver's bound on it, is a lower bound on every plan's cross-worker pairs.

The counting bound (``network.count_excess``) bounds each stream alone and gives 0 wherever a
stream fits one worker; the cut sees the whole topology. Storm's TopologyName00009 (35
executors, 3,872 MB of on-heap against a 2,048 MB heap, every stream fitting one worker) has a
counting bound of 0 and a cut of 23 pairs, so its metric is at least 23 / 35, which the local
search's plan meets.

The model (CP-SAT; docs/formulations.md, "The worker cut") has no worker index, so no symmetry
between workers: same[e,f] is 1 when executors e < f share a worker, transitive by the triangle
inequalities same[e,f] + same[f,g] - same[e,g] <= 1 (all three rotations), and 0 for components
that may not share a worker (incompatible). A worker's limits, seen from each executor e in it:
for on-heap (at most the max heap), CPU and memory (at most the largest node's, each alone),
sum_f need_f same[e,f] <= cap - need_e; for a component with at most k executors per node, at
most k - 1 others of it beside e. Maximise the weighted same pairs; the cut is the total weight
less that. Its LP relaxation is strong here (Storm's TopologyName00001: 313 of the 315 that
CP-SAT proves in 2 s, against the counting bound's 139).

The node cut (``cut_data(..., "N")``) is the same model one level up: groups that one node can
hold, bounding the pairs every plan splits over nodes, which the metric counts again beside the
worker level. Storm's TopologyName00001 needs 4.4 nodes' CPU; the counting bound's node level is
4 pairs, its node cut at least 237 (CP-SAT, 20 s).

The count cut (:func:`count_cuts`) bounds both levels over counts instead of executors: an LP
over the topology's worker (node) contents, for topologies of any size whose contents are few
(Storm's wide topologies of hundreds of executors in a few components).
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from planner import rates

# the model has a Boolean per executor pair and three triangle rows per executor triple: up to
# this many executors (60: 1,770 Booleans, 102,660 rows, built in about 0.4 s)
CUT_EXECUTORS_MAX = 60
# CP-SAT workers (8 proves TopologyName00009's cut in 2.3 s on 2 cores; 2 did not in 10 s)
CUT_WORKERS = 8
EPS = 1e-9


def cut_data(pm, ti: int, level: str = "W") -> dict | None:
    """The data of topology ``ti``'s cut model from the placement model ``pm`` (its nodes give
    the largest CPU and memory), or None when the cut is 0 (every executor fits one worker) or
    the topology is past CUT_EXECUTORS_MAX: {"E", "pairs" ({(e, f): weight}, e < f, only
    weights > 0), "apart" (pairs that may not share a worker), "rows" ([(need per executor,
    cap)]), "limit" ([(executors of a component, at most that many in one worker)]),
    "executor" ([(component id, index)]), "C" (the components)}.

    ``level`` "N": the node cut, the same model with groups that one node can hold (its CPU and
    memory, each the largest node's; on-heap at most the most slots of a node x the max heap;
    per-node limits; no pairs apart, since incompatible components may share a node in two
    workers), a lower bound on the pairs every plan splits over nodes; None when the topology
    fits one node."""
    topo = dict(pm.topos)[ti]
    comps = sorted(topo.components, key=lambda c: c.id)
    E = sum(c.parallelism for c in comps)
    if E < 2 or E > CUT_EXECUTORS_MAX:
        return None
    nodes = [n for n in pm.nodes if n.slots]
    if not nodes:
        return None
    first, executor, of = {}, [], []
    for c in comps:
        first[c.id] = len(executor)
        executor += [(c.id, i) for i in range(c.parallelism)]
        of += [c] * c.parallelism
    rows = [([c.cpu for c in of], max(n.cpu for n in nodes))]
    heap = float(topo.max_heap_mb) * (1 if level == "W" else max(len(n.slots) for n in nodes))
    if pm.ras:
        rows.append(([c.memory_mb for c in of], max(n.memory_mb for n in nodes)))
        rows.append(([c.memory_onheap_mb for c in of], heap))
    limit = [(list(range(first[c.id], first[c.id] + c.parallelism)), c.max_per_node)
             for c in comps if c.max_per_node is not None and c.max_per_node < c.parallelism]
    apart = set()
    for c in (comps if level == "W" else []):
        for o in comps:
            if o.id in c.incompatible:
                for e in range(first[c.id], first[c.id] + c.parallelism):
                    for f in range(first[o.id], first[o.id] + o.parallelism):
                        if e != f:
                            apart.add((min(e, f), max(e, f)))
    if not apart and not limit and all(sum(need) <= cap + EPS for need, cap in rows):
        return None  # one worker (node) holds them all: the cut is 0
    size = {c.id: c.parallelism for c in comps}
    pairs: dict[tuple[int, int], int] = {}
    for u, downs in rates.downstream(topo).items():
        for d in downs:
            for e in range(first[u], first[u] + size[u]):
                for f in range(first[d], first[d] + size[d]):
                    if e != f:
                        key = (min(e, f), max(e, f))
                        pairs[key] = pairs.get(key, 0) + 1
    if not pairs:
        return None
    return {"E": E, "C": len(comps), "pairs": pairs, "apart": apart, "rows": rows, "limit": limit,
            "executor": executor}


def worker_cut(data: dict, time_limit: float, threads: int | None = None, seed: int = 0,
               hint: list | None = None) -> dict | None:
    """For :func:`cut_data`'s ``data``: {"cut": a lower bound on the pairs every plan splits
    over workers, "proven": whether it is the least, "groups": the best partition found (lists
    of executor indices), "found": the pairs it splits}, or None when CP-SAT ended with no
    partition (an executor above a worker's limits, which the counting checks report).
    ``hint``: a worker label per executor (a plan's), given to CP-SAT as its start."""
    from ortools.sat.python import cp_model

    from .gap import cpsat_solver

    E, pairs, apart = data["E"], data["pairs"], data["apart"]
    m = cp_model.CpModel()
    same: dict[tuple[int, int], object] = {}
    for e, f in itertools.combinations(range(E), 2):
        same[e, f] = 0 if (e, f) in apart else m.NewBoolVar(f"s{e}_{f}")

    def s(a: int, b: int):
        return same[(a, b) if a < b else (b, a)]

    for e, f, g in itertools.combinations(range(E), 3):
        a, b, c = same[e, f], same[f, g], same[e, g]
        if isinstance(a, int) + isinstance(b, int) + isinstance(c, int) >= 2:
            continue  # two of the three are 0: the rows hold whatever the third is
        m.Add(a + b - c <= 1)
        m.Add(a - b + c <= 1)
        m.Add(b + c - a <= 1)
    for need, cap in data["rows"]:
        for e in range(E):
            terms = [(need[f], s(e, f)) for f in range(E) if f != e and need[f] > 0]
            if terms and sum(q for q, _ in terms) > cap - need[e] + EPS:
                # kB-scaled integers, floored: every real group stays within the row
                m.Add(sum(int(math.floor(q * 1024 + 1e-6)) * v for q, v in terms)
                      <= int(math.floor((cap - need[e]) * 1024 + 1e-6)))
    for members, k in data["limit"]:
        for e in members:
            m.Add(sum(s(e, f) for f in members if f != e) <= k - 1)
    m.Maximize(sum(w * s(e, f) for (e, f), w in pairs.items()))
    if hint is not None:
        for (e, f), v in same.items():
            if not isinstance(v, int):
                m.AddHint(v, hint[e] == hint[f])
    solver = cpsat_solver()
    solver.parameters.max_time_in_seconds = max(0.01, float(time_limit))
    solver.parameters.num_workers = int(threads or CUT_WORKERS)
    solver.parameters.random_seed = int(seed)
    # presolve on the triangle rows took more than 2 s at 53 executors, with no better bound
    solver.parameters.cp_model_presolve = False
    st = solver.Solve(m)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    total = sum(pairs.values())
    best = int(math.floor(solver.BestObjectiveBound() + 1e-6))
    # the best partition found, as worker groups of executor indices (same[] is transitive)
    label = list(range(E))
    for (e, f), v in same.items():
        if not isinstance(v, int) and solver.Value(v):
            label[f] = label[e] = min(label[e], label[f])
    groups: dict[int, list[int]] = {}
    for e in range(E):
        groups.setdefault(label[e], []).append(e)
    found = total - int(round(solver.ObjectiveValue()))
    return {"cut": max(0, total - best), "proven": st == cp_model.OPTIMAL, "groups": list(groups.values()), "found": found}


# the count cuts: at most this many distinct worker (node) contents of one topology, and node
# kinds (each kind's contents are enumerated)
COUNT_CONTENTS_MAX = 300_000
COUNT_KINDS_MAX = 16
# contents past COUNT_CONTENTS_MAX: the LP's columns priced by CP-SAT (one small model per node
# kind and round), for topologies of up to this many groups (largeCluster01's TopologyName00023,
# 5,402 executors in 6 components: its node level converges in 7 rounds; 19 components did not
# converge in 30 s)
COUNT_PRICE_COMPONENTS_MAX = 12
# the pricing's reduced costs in integers: duals rounded down at this scale (the maximum only
# grows, so its bound stays valid)
PRICE_SCALE = 10**6


def count_cuts(pm, ti: int, deadline: float | None = None) -> dict[str, int]:
    """Lower bounds on topology ``ti``'s pairs split over workers ("W") and over nodes ("N")
    from the LP over its contents (the count cut; docs/formulations.md), and over racks ("R"):
    {level: bound}, a level left out past ``deadline``; none with more than COUNT_KINDS_MAX
    node kinds.

    Every plan puts each executor in one worker (node), so its contents z (count vectors of
    the topology's groups, within what one worker (node) of some node kind holds:
    ``_nodetable.worker_contents_of``) with multiplicities lambda_z >= 0 satisfy
    sum_z z lambda_z = p (the parallelisms), and keep sum_z v(z) lambda_z pairs together, with
    v(z) = sum over streams u -> d of z_u z_d. So the LP max sum v lambda s.t. those rows bounds
    the pairs kept together; any duals y give the bound y.p + U max(0, max_z v(z) - y.z), U the
    most contents a plan uses (its executors, and the cluster's nodes, or slots, with the
    topology's groups), so the solver's answer is only a suggestion. The pairs split are at
    least the total less that. Unlike the executor cut (:func:`worker_cut`) its size is the
    contents', not the executors': a Storm topology of 200 executors in 2 components has 5
    worker contents and 5,150 node contents.

    The rack level ("R"), for a topology that no rack holds alone: :func:`_rack_split`, the
    least pairs split over racks by any division of its counts within the racks' sums.

    The maximum over contents is taken over all of them where they number at most
    COUNT_CONTENTS_MAX (enumerated), else by a CP-SAT model per node kind (:class:`_ModelPricer`,
    its proven bound; topologies of at most COUNT_PRICE_COMPONENTS_MAX groups). Node kinds
    whose contents another kind's include (caps and limits no larger) are left out."""
    from ._rasmodel import node_kinds

    topo = dict(pm.topos)[ti]
    ks = [k for k, g in enumerate(pm.groups) if g.ti == ti]
    col = {k: i for i, k in enumerate(ks)}
    streams: dict[tuple[int, int], int] = {}
    for ku, kd, _ in pm.stream_pairs():
        if ku in col:
            key = (col[ku], col[kd])
            streams[key] = streams.get(key, 0) + 1
    if not streams:
        return {}
    p = np.array([pm.groups[k].size for k in ks], dtype=float)
    total = sum(w * p[u] * p[d] for (u, d), w in streams.items())
    groups = [nis for nis in node_kinds(pm) if pm.nodes[nis[0]].slots]
    # a node's contents depend on its slots too (its workers' heaps), which node kinds leave out
    kinds = {"W": [nis[0] for nis in groups],
             "N": [ni for nis in groups for ni in {len(pm.nodes[ni].slots): ni for ni in nis}.values()]}
    if len(kinds["N"]) > COUNT_KINDS_MAX:
        return {}
    # the most contents a plan uses: one a worker (node) at most, and one an executor at most
    units = {"W": sum(len(pm.nodes[ni].slots) for nis in groups for ni in nis),
             "N": sum(len(nis) for nis in groups)}
    out = {}
    comps = [pm.groups[k].comp for k in ks]
    for level in "WN":
        node = level == "N"
        reps = kinds[level]
        limits = [_kind_limits(pm, ks, ni, topo.max_heap_mb, node) for ni in reps]
        keep = _maximal(limits)
        reps, limits = [reps[i] for i in keep], [limits[i] for i in keep]
        U = float(min(topo.executor_count, units[level]))
        price = _enumerated_pricer(pm, ti, ks, col, streams, reps, node, deadline)
        if price is None and len(ks) <= COUNT_PRICE_COMPONENTS_MAX:
            price = _ModelPricer(comps, streams, limits, not node, deadline)
        if price is None:
            continue
        ub = _contents_lp(price, streams, len(ks), p, U, deadline)
        if ub is not None and (cut := int(total) - int(math.floor(ub * (1 + 1e-9) + 1e-6))) > 0:
            out[level] = cut
    racks = _rack_limits(pm, ks, topo.max_heap_mb)
    whole = [float(np.dot(row, p)) for row in _needs(comps)]
    if len(racks) > 1 and not any((p <= hi).all() and all(w <= lim + EPS for w, lim in zip(whole, lims))
                                  for hi, lims in racks):
        # the rack level, where no rack holds the whole topology alone
        kept = _rack_split(comps, streams, [int(x) for x in p], racks, deadline)
        if kept is not None and (cut := int(total) - int(math.floor(kept + 1e-6))) > 0:
            out["R"] = cut
    return out


def _rack_split(comps, streams: dict, p: list[int], racks: list, deadline: float | None) -> float | None:
    """An upper bound on the pairs a topology keeps within racks (CP-SAT's proven bound on the
    most), or None when CP-SAT finds no split by ``deadline``: its counts split over the racks
    (``racks``: (caps, limits) each, :func:`_rack_limits`), each rack's share within its caps
    and its on-heap, CPU and memory (coefficients rounded down, limits up, so every plan's split
    is a solution), maximising sum over racks and streams of w z_ur z_dr. Exact for the racks'
    sums, so the rack-level count cut is the least number of pairs split over racks that any
    division of the topology's executors meeting them leaves (largeCluster03's TopologyName00047,
    976 executors in 17 components, needs more memory than one rack has: 27,840 pairs, proven in
    0.1 s; the counting bound's rack level is 0)."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    racks = sorted(racks, key=lambda k: (list(k[1]), list(k[0])))  # alike racks next to each other
    z = [[m.NewIntVar(0, min(h, p[c]), f"z{r}_{c}") for c, h in enumerate(hi)] for r, (hi, _) in enumerate(racks)]
    for c in range(len(p)):
        m.Add(sum(zr[c] for zr in z) == p[c])
    # alike racks are interchangeable: their shares of the largest component (by memory) in
    # non-increasing order (TopologyName00047 on largeCluster03's two racks: 0.1 s, 12 s without)
    order_alike(m, z, racks, max(range(len(p)), key=lambda c: (p[c] * comps[c].memory_mb, -c)))
    terms = []
    for zr, (hi, lims) in zip(z, racks):
        _add_room(m, zr, comps, lims)
        terms += _kept_pairs(m, zr, [min(h, q) for h, q in zip(hi, p)], streams)
    m.Maximize(sum(terms))
    s = cpsat_until(deadline)
    if s is None or s.Solve(m) not in (cp_model.FEASIBLE, cp_model.OPTIMAL):
        return None
    return s.BestObjectiveBound()


def cpsat_until(deadline: float | None, workers: int = CUT_WORKERS, linearization: int | None = None):
    """A CP-SAT solver (``gap.cpsat_solver``) with ``workers`` workers (and
    ``linearization_level``, when given) and the time to ``deadline`` (a monotonic instant);
    None when none is left."""
    from .gap import cpsat_solver

    s = cpsat_solver()
    s.parameters.num_workers = workers
    if linearization is not None:
        s.parameters.linearization_level = linearization
    if deadline is not None:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        s.parameters.max_time_in_seconds = left
    return s


def _limits(pm, ni: int, max_heap: float, node: bool) -> tuple[float, float, float]:
    """What one worker (node) of node ni holds in all: on-heap, CPU, memory (the limits of
    ``_nodetable.worker_contents_of``)."""
    n = pm.nodes[ni]
    return (max_heap * (len(n.slots) if node else 1), n.cpu, n.memory_mb)


def _kind_limits(pm, ks: list[int], ni: int, max_heap: float, node: bool) -> tuple[list[int], tuple]:
    """(caps, limits) of a worker (node) of node ni: each group's ``worker_cap`` (``node_cap``)
    and ``_limits``."""
    capf = pm.node_cap if node else pm.worker_cap
    return [capf(pm.groups[k], ni) for k in ks], _limits(pm, ni, max_heap, node)


def _maximal(kinds: list[tuple[list[int], tuple]]) -> list[int]:
    """The indices of the kinds ((caps, limits) of a worker, node or rack) whose contents no
    other kind's include: a kind with every group's cap and every limit at most another's holds
    nothing the other does not (of equal ones, the first kept). Storm's largeCluster01: 6 node
    kinds, one of them the largest in everything."""
    vec = [np.array(list(hi) + list(lim), dtype=float) for hi, lim in kinds]
    return [a for a, va in enumerate(vec)
            if not any((vb >= va).all() and ((vb > va).any() or b < a) for b, vb in enumerate(vec) if b != a)]


def _rack_limits(pm, ks: list[int], max_heap: float) -> list[tuple[list[int], tuple[float, float, float]]]:
    """(caps, limits) of each rack with slots: a group's cap the sum of its nodes'
    ``node_cap`` (at most its size), and on-heap (slots x max heap), CPU and memory summed over
    the rack's nodes: what any plan's executors on that rack meet, a relaxation of its nodes.
    Caps are read once per node kind (``node_kinds``): for largeCluster02's 28 wide topologies
    0.08 s in all, 0.68 s when read node by node."""
    from ._rasmodel import node_kinds

    caps = {}
    for nis in node_kinds(pm):
        c = np.array([pm.node_cap(pm.groups[k], nis[0]) for k in ks])
        caps.update((ni, c) for ni in nis)
    out = []
    for ri in range(len(pm.racks)):
        nis = [ni for ni, n in enumerate(pm.nodes) if pm.node_rack[ni] == ri and n.slots]
        if not nis:
            continue
        hi = np.minimum(sum(caps[ni] for ni in nis), [pm.groups[k].size for k in ks])
        out.append(([int(x) for x in hi],
                    tuple(float(sum(x)) for x in zip(*(_limits(pm, ni, max_heap, True) for ni in nis)))))
    return out


def _enumerated_pricer(pm, ti, ks, col, streams, reps, node, deadline):
    """The pricer over every content of the kinds ``reps`` (enumerated by
    ``_nodetable.worker_contents_of``): a function of the duals y giving (the largest reduced
    cost, the ``add`` contents of largest reduced cost, positive ones only), with the start
    columns as ``.start``; None past COUNT_CONTENTS_MAX contents or ``deadline``, or where some
    group is in no content (no plan, which the counting checks report)."""
    from ._nodetable import worker_contents_of

    parts = []
    for ni in reps:
        if deadline is not None and time.monotonic() > deadline:
            return None
        got = worker_contents_of(pm, ni, ti, COUNT_CONTENTS_MAX, node=node)
        if got is None:
            return None
        got_ks, X = got
        Z = np.zeros((len(X), len(ks)), dtype=np.int64)
        Z[:, [col[k] for k in got_ks]] = X
        parts.append(Z)
    if not parts:
        return None
    Z = np.unique(np.concatenate(parts), axis=0)
    if len(Z) > COUNT_CONTENTS_MAX:
        return None
    Zf = Z.astype(float)
    v = _values(Zf, streams)
    if not (Zf.sum(axis=0) > 0).all():
        return None
    add = 200

    def price(y):
        rc = v - Zf @ y
        new = np.argsort(-rc, kind="stable")[:add]
        new = new[rc[new] > 0]
        return float(rc.max()), Zf[new]

    size = Zf.sum(axis=1)
    start = np.union1d(np.flatnonzero(size == 1), np.argsort(-(v / size), kind="stable")[:add])
    price.start = Zf[start]
    return price


def _values(Z: np.ndarray, streams: dict) -> np.ndarray:
    """v(z) of each row of Z: the pairs it keeps together, sum over streams of w z_u z_d."""
    v = np.zeros(len(Z))
    for (u, d), w in streams.items():
        v += w * Z[:, u] * Z[:, d]
    return v


def _needs(comps) -> list[list[float]]:
    """Each group's on-heap, CPU and memory per executor, the rows of the limits' sums."""
    return [[c.memory_onheap_mb for c in comps], [c.cpu for c in comps], [c.memory_mb for c in comps]]


def _add_room(m, z, comps, lims) -> None:
    """CP-SAT rows: z's on-heap, CPU and memory sums within ``lims``, relaxed
    (:func:`room_row`), so every count vector within them is a solution."""
    for row, lim in zip(_needs(comps), lims):
        room_row(m, [(a, zz) for a, zz in zip(row, z) if a > 0], lim)


def room_row(m, terms: list, cap: float, relax: bool = True, scale: float = 1.0) -> None:
    """The CP-SAT row sum a x <= cap over ``terms`` ((a, x) pairs) in integers at 10^-3:
    relaxed (coefficients rounded down, the limit up, so every x meeting the real row meets it),
    or, with ``relax`` False, restricted to ``scale`` x cap (coefficients up, the limit down, so
    every x meeting it meets the real row at that scale)."""
    if relax:
        m.Add(sum(int(math.floor(a * 1000)) * x for a, x in terms) <= int(math.ceil((cap + EPS) * 1000)))
    else:
        m.Add(sum(int(math.ceil(a * 1000)) * x for a, x in terms) <= int(math.floor(cap * scale * 1000)))


def order_alike(m, z, keys: list, first: int) -> None:
    """Symmetry rows for interchangeable racks (equal ``keys``: their caps and limits): within
    each class of alike racks, in index order, their counts z[r][first] non-increasing."""
    last: dict = {}
    for r, key in enumerate(keys):
        key = repr(key)
        if key in last:
            m.Add(z[last[key]][first] >= z[r][first])
        last[key] = r


def _kept_pairs(m, z, hi, streams: dict) -> list:
    """CP-SAT terms w z_u z_d of the pairs z keeps together, each product an
    ``AddMultiplicationEquality`` (``hi``: z's upper bounds)."""
    terms = []
    for (u, d), w in streams.items():
        prod = m.NewIntVar(0, hi[u] * hi[d], f"p{u}_{d}")
        m.AddMultiplicationEquality(prod, [z[u], z[d]])
        terms.append(w * prod)
    return terms


def _Solutions(z):
    """A CP-SAT solution callback keeping the values of ``z`` of each solution found."""
    from ortools.sat.python import cp_model

    class Keep(cp_model.CpSolverSolutionCallback):
        def __init__(self):
            super().__init__()
            self.rows = []

        def on_solution_callback(self):
            self.rows.append([self.Value(v) for v in z])

    return Keep()


class _ModelPricer:
    """The pricer by CP-SAT (contents past the enumeration's cap): for the duals y, per kind of
    ``kinds`` ((caps, (on-heap, CPU, memory)) of a worker, node or rack), max sum_streams w z_u z_d
    - sum floor(y S) z / S over the kind's contents (the caps, and on-heap, CPU and memory summed
    as ``_nodetable.worker_contents_of`` does, coefficients rounded down and limits up, so every
    content is in the model; with ``apart``, a worker's incompatible groups not both), products
    by ``AddMultiplicationEquality``. Its value is CP-SAT's proven bound, at least the largest
    reduced cost; its columns the contents it found with a positive one."""

    def __init__(self, comps, streams, kinds, apart, deadline):
        self.comps, self.streams, self.kinds, self.apart = comps, streams, kinds, apart
        self.deadline = deadline
        self.start = np.eye(len(comps))

    def _model(self, hi: list[int], lims: tuple, y: np.ndarray):
        from ortools.sat.python import cp_model

        comps = self.comps
        m = cp_model.CpModel()
        z = [m.NewIntVar(0, h, f"z{i}") for i, h in enumerate(hi)]
        _add_room(m, z, comps, lims)
        if self.apart:
            nz = {}
            for i, a in enumerate(comps):
                for j in range(i):
                    b = comps[j]
                    if a.id != b.id and (a.id in b.incompatible or b.id in a.incompatible):
                        for q in (i, j):
                            if q not in nz:
                                nz[q] = m.NewBoolVar(f"nz{q}")
                                m.Add(z[q] <= hi[q] * nz[q])
                        m.AddBoolOr([nz[i].Not(), nz[j].Not()])
        m.Maximize(PRICE_SCALE * sum(_kept_pairs(m, z, hi, self.streams))
                   - sum(int(math.floor(y[i] * PRICE_SCALE)) * z[i] for i in range(len(z))))
        return m, z

    def __call__(self, y: np.ndarray):
        from ortools.sat.python import cp_model

        C = len(self.comps)
        best, cols = -math.inf, []
        for hi, lims in self.kinds:
            if self.deadline is not None and self.deadline <= time.monotonic():
                return math.inf, np.zeros((0, C))
            m, z = self._model(hi, lims, y)
            s = cpsat_until(self.deadline)
            if s is None:
                return math.inf, np.zeros((0, C))
            found = _Solutions(z)
            st = s.Solve(m, found)
            if st not in (cp_model.FEASIBLE, cp_model.OPTIMAL):  # no bound proven (0 always fits)
                return math.inf, np.zeros((0, C))
            best = max(best, s.BestObjectiveBound() / PRICE_SCALE)
            if found.rows:  # every improving content found on the way: fewer rounds
                Zs = np.array(found.rows, dtype=float)
                cols.extend(Zs[_values(Zs, self.streams) - Zs @ y > 1e-9])
        return best, np.array(cols).reshape(-1, C)


def _contents_lp(price, streams: dict, C: int, p, U: float, deadline: float | None, rounds: int = 60) -> float | None:
    """The least bound y.p + U max(0, max_z v(z) - y.z) on max {v.lambda : Z^T lambda = p,
    lambda >= 0} over the duals y that column generation visits (SciPy's HiGHS on the columns
    so far: ``price.start``, then each round the contents ``price(y)`` returns with the largest
    reduced cost it bounds), or None when no LP was solved. Every y gives a valid bound, so
    stopping early (``rounds``, ``deadline``) only weakens it; at the LP optimum it is the LP's
    value. One HiGHS solve over 175,000 contents of 3 components took 2.8 s; the generation, a
    few rounds of a few hundred columns."""
    from scipy.optimize import linprog

    cols = np.unique(np.asarray(price.start, dtype=float).reshape(-1, C), axis=0)
    best = None
    for _ in range(rounds):
        v = _values(cols, streams)
        r = linprog(-v, A_eq=cols.T, b_eq=p, bounds=(0, None), method="highs")
        if r.status != 0 or r.eqlin is None:
            return best
        y = -np.asarray(r.eqlin.marginals, dtype=float)
        if not np.all(np.isfinite(y)):
            return best
        delta, new = price(y)
        if not math.isfinite(delta):
            return best
        ub = float(y @ p) + max(0.0, delta) * U
        best = ub if best is None else min(best, ub)
        if delta <= 1e-9 * max(1.0, abs(ub)) or deadline is not None and time.monotonic() > deadline:
            return best
        if not len(new):
            return best
        cols = np.unique(np.concatenate([cols, new]), axis=0)
    return best
