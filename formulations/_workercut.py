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


def count_cuts(pm, ti: int, deadline: float | None = None) -> dict[str, int]:
    """Lower bounds on topology ``ti``'s pairs split over workers ("W") and over nodes ("N")
    from the LP over its contents (the count cut; docs/formulations.md): {level: bound}, a level
    left out where its contents number more than COUNT_CONTENTS_MAX, or past ``deadline``;
    none with more than COUNT_KINDS_MAX node kinds.

    Every plan puts each executor in one worker (node), so its contents z (count vectors of
    the topology's components, within what one worker (node) of some node kind holds:
    ``_nodetable.worker_contents_of``) with multiplicities lambda_z >= 0 satisfy
    sum_z z lambda_z = p (the parallelisms), and keep sum_z v(z) lambda_z pairs together, with
    v(z) = sum over streams u -> d of z_u z_d. So the LP max sum v lambda s.t. those rows bounds
    the pairs kept together; any duals y give the bound y.p + E max(0, max_z v(z) - y.z) (at
    most E contents are used), which is computed here over every content, so the solver's
    answer is only a suggestion. The pairs split are at least the total less that. Unlike the
    executor cut (:func:`worker_cut`) its size is the contents', not the executors': a Storm
    topology of 200 executors in 2 components has 5 worker contents and 5,150 node contents."""
    from ._nodetable import worker_contents_of
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
    E = float(topo.executor_count)
    total = sum(w * p[u] * p[d] for (u, d), w in streams.items())
    groups = [nis for nis in node_kinds(pm) if pm.nodes[nis[0]].slots]
    # a node's contents depend on its slots too (its workers' heaps), which node kinds leave out
    kinds = {"W": [nis[0] for nis in groups],
             "N": [ni for nis in groups for ni in {len(pm.nodes[ni].slots): ni for ni in nis}.values()]}
    out = {}
    if len(kinds["N"]) > COUNT_KINDS_MAX:
        return out
    for level in "WN":
        parts = []
        for ni in kinds[level]:
            if deadline is not None and time.monotonic() > deadline:
                return out
            got = worker_contents_of(pm, ni, ti, COUNT_CONTENTS_MAX, node=level == "N")
            if got is None:
                parts = None
                break
            got_ks, X = got
            Z = np.zeros((len(X), len(ks)), dtype=np.int64)
            Z[:, [col[k] for k in got_ks]] = X
            parts.append(Z)
        if not parts:
            continue
        Z = np.unique(np.concatenate(parts), axis=0)
        if len(Z) > COUNT_CONTENTS_MAX:
            continue
        Zf = Z.astype(float)
        v = np.zeros(len(Z))
        for (u, d), w in streams.items():
            v += w * Zf[:, u] * Zf[:, d]
        if not (Zf.sum(axis=0) > 0).all():
            continue  # a component no content holds: no plan, which the counting checks report
        ub = _contents_lp(Zf, v, p, E, deadline)
        if ub is not None:
            cut = int(total) - int(math.floor(ub * (1 + 1e-9) + 1e-6))
            if cut > 0:
                out[level] = cut
    return out


def _contents_lp(Z, v, p, E: float, deadline: float | None, rounds: int = 60, add: int = 200) -> float | None:
    """The least bound y.p + E max(0, max_z v(z) - y.z) on max {v.lambda : Z^T lambda = p,
    lambda >= 0} over the duals y that column generation visits (SciPy's HiGHS on the columns
    so far: the one-executor contents and the best ``add`` by value per executor, then each round
    the ``add`` of largest reduced cost over all of ``Z``), or None when no LP was solved. Every
    y gives a valid bound, so stopping early (``rounds``, ``deadline``) only weakens it; at the
    LP optimum it is the LP's value. One HiGHS solve over 175,000 contents of 3 components took
    2.8 s; the generation, a few rounds of a few hundred columns."""
    from scipy.optimize import linprog

    size = Z.sum(axis=1)
    start = set(np.flatnonzero(size == 1).tolist())
    start |= set(np.argsort(-(v / size), kind="stable")[:add].tolist())
    cols = np.array(sorted(start), dtype=np.int64)
    best = None
    for _ in range(rounds):
        r = linprog(-v[cols], A_eq=Z[cols].T, b_eq=p, bounds=(0, None), method="highs")
        if r.status != 0 or r.eqlin is None:
            return best
        y = -np.asarray(r.eqlin.marginals, dtype=float)
        if not np.all(np.isfinite(y)):
            return best
        rc = v - Z @ y
        delta = float(rc.max())
        ub = float(y @ p) + max(0.0, delta) * E
        best = ub if best is None else min(best, ub)
        if delta <= 1e-9 * max(1.0, abs(ub)) or deadline is not None and time.monotonic() > deadline:
            return best
        new = np.argsort(-rc, kind="stable")[:add]
        new = new[rc[new] > 0]
        cols = np.union1d(cols, new)
    return best
