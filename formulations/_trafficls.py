"""Node-level local search for ``traffic`` phase 1: an incumbent for the configuration model.

Why: the configuration model proves optimality by enumerating every node column whose reduced
cost is within UB - z_inc of the best (docs/formulations.md, "Proof by enumeration"), so the
proof's size is set by the incumbent z_inc. The restricted integer master over the columns of
column generation is often infeasible or several per cent off (60x8x6: 949 where this search
finds 937.1), which makes the margin, and the enumeration, blow up. This search works on node counts only
(Y[node, group]; value sum_node sum_{g<h} r_gh Y[n,g] Y[n,h], the intra-node traffic), which is
all phase 1 sees: moves of one executor and swaps of two between nodes, steepest first, with
random kicks (iterated local search) until its time budget ends. Every state it keeps is
feasible: node caps (pins, CPU, max_per_node), node CPU and a worker count o[t,n] per node with
o <= executors <= M_t o, sum_t o <= slots and sum_n o[t,n] = S_t (checked by :func:`workers`).

No optimality claim: the columns it returns are only an incumbent for the master.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

import numpy as np


class NodeSearch:
    """The node-count view of a traffic instance (groups, caps, rates as a matrix)."""

    def __init__(self, pm, pairs: dict[tuple[int, int], float]):
        G = pm.groups
        self.pm = pm
        self.K = len(G)
        self.nodes = [ni for ni, n in enumerate(pm.nodes) if n.slots]
        self.N = len(self.nodes)
        from ._patterns import stream_matrix

        self.A = stream_matrix(self.K, pairs)
        self.size = np.array([g.size for g in G], dtype=np.int64)
        self.cpu = np.array([g.comp.cpu for g in G], dtype=float)
        self.cap = np.array([[pm.node_cap(g, ni) for g in G] for ni in self.nodes], dtype=np.int64)
        self.ncpu = np.array([pm.nodes[ni].cpu for ni in self.nodes], dtype=float)
        self.slots = np.array([len(pm.nodes[ni].slots) for ni in self.nodes], dtype=np.int64)
        self.topo = np.array([g.ti for g in G])
        self.tis = [ti for ti, _ in pm.topos]
        self.S = {ti: pm.S[ti] for ti in self.tis}
        self.M = {ti: pm.M[ti] for ti in self.tis}
        # max_per_node over the groups of one component (only when a component has several groups)
        comp: dict[tuple[int, str], list[int]] = {}
        for k, g in enumerate(G):
            comp.setdefault((g.ti, g.comp.id), []).append(k)
        self.mpn = [(kk, G[kk[0]].comp.max_per_node) for kk in comp.values()
                    if len(kk) > 1 and G[kk[0]].comp.max_per_node is not None]

    # --- feasibility ------------------------------------------------------------------------
    def workers(self, Y: np.ndarray) -> dict[int, np.ndarray] | None:
        """Worker counts o[t][node] meeting the worker rules for counts Y, or None (greedy: the
        fewest workers each node needs, then the rest where there is room; may miss a solution
        with several topologies, never returns a wrong one)."""
        o: dict[int, np.ndarray] = {}
        used = np.zeros(self.N, dtype=np.int64)
        hi: dict[int, np.ndarray] = {}
        for ti in self.tis:
            T = Y[:, self.topo == ti].sum(axis=1)
            lo = np.where(T > 0, -(-T // self.M[ti]), 0)
            hi[ti] = np.minimum(T, self.slots)
            if (lo > hi[ti]).any():
                return None
            o[ti] = lo.copy()
            used += lo
        if (used > self.slots).any():
            return None
        for ti in self.tis:
            extra = self.S[ti] - int(o[ti].sum())
            if extra < 0:
                return None
            for n in range(self.N):
                if extra == 0:
                    break
                add = int(min(extra, hi[ti][n] - o[ti][n], self.slots[n] - used[n]))
                if add > 0:
                    o[ti][n] += add
                    used[n] += add
                    extra -= add
            if extra:
                return None
        return o

    def node_ok(self, y: np.ndarray, n: int) -> bool:
        if (y > self.cap[n]).any() or (y < 0).any() or float(y @ self.cpu) > self.ncpu[n] + 1e-9:
            return False
        return all(int(y[kk].sum()) <= lim for kk, lim in self.mpn)

    def value(self, Y: np.ndarray) -> float:
        return 0.5 * float(np.einsum("nk,kl,nl->", Y, self.A, Y))

    # --- search ------------------------------------------------------------------------------
    def descend(self, Y: np.ndarray, deadline: float) -> np.ndarray:
        """Steepest improving move or swap until none (or the deadline)."""
        A = self.A
        while time.monotonic() < deadline:
            AY = Y @ A  # AY[n, k]: gain rate of one more executor of k on node n
            load = Y @ self.cpu
            # moves k: a -> b, gain AY[b,k] - AY[a,k]
            D = AY[None, :, :] - AY[:, None, :]  # D[a, b, k]
            ok = (Y[:, None, :] > 0) & (Y[None, :, :] < self.cap[None, :, :]) & \
                 (load[None, :, None] + self.cpu[None, None, :] <= self.ncpu[None, :, None] + 1e-9)
            D = np.where(ok, D, -np.inf)
            order = np.argsort(-D, axis=None)[:50]
            moved = False
            for f in order:
                a, b, k = np.unravel_index(f, D.shape)
                if D[a, b, k] <= 1e-9:
                    break
                Z = Y.copy()
                Z[a, k] -= 1
                Z[b, k] += 1
                if self.node_ok(Z[b], b) and self.workers(Z) is not None:
                    Y, moved = Z, True
                    break
            if moved:
                continue
            # swaps: k a->b, l b->a; gain D[a,b,k] + D[b,a,l] - 2 A[k,l]
            best, arg = 1e-9, None
            Dm = AY[None, :, :] - AY[:, None, :]
            # pairs of occupied nodes only (a swap needs an executor on each side), in the
            # (a, b) order of the loop over all pairs: on a big cluster most nodes are empty
            held = [np.nonzero(Y[a] > 0)[0] for a in range(self.N)]
            occ = [a for a in range(self.N) if len(held[a])]
            for ia, a in enumerate(occ):
                ks = held[a]
                for b in occ[ia + 1:]:
                    ls = held[b]
                    g = Dm[a, b, ks][:, None] + Dm[b, a, ls][None, :] - 2 * A[np.ix_(ks, ls)]
                    g[ks[:, None] == ls[None, :]] = -np.inf
                    i, j = np.unravel_index(np.argmax(g), g.shape)
                    if g[i, j] > best:
                        Z = Y.copy()
                        Z[a, ks[i]] -= 1
                        Z[b, ks[i]] += 1
                        Z[b, ls[j]] -= 1
                        Z[a, ls[j]] += 1
                        if self.node_ok(Z[a], a) and self.node_ok(Z[b], b) and self.workers(Z) is not None:
                            best, arg = g[i, j], Z
            if arg is None:
                return Y
            Y = arg
        return Y

    def greedy(self, rng: random.Random | None = None, deadline: float | None = None) -> np.ndarray | None:
        """Executors one by one (heaviest traffic first) onto the node where they gain most
        (ties: the least loaded; ``rng`` adds noise for other starts); None if stuck or past
        ``deadline``."""
        Y = np.zeros((self.N, self.K), dtype=np.int64)
        load = np.zeros(self.N)
        weight = self.A.sum(axis=1)
        order = sorted(range(self.K), key=lambda k: (-weight[k], -self.cpu[k]))
        if rng is not None:
            rng.shuffle(order)
        for k in order:
            for _ in range(int(self.size[k])):
                if deadline is not None and time.monotonic() > deadline:
                    return None
                gain = Y @ self.A[:, k] - 1e-6 * load
                if rng is not None:
                    gain = gain * np.array([1.0 + 0.2 * rng.random() for _ in range(self.N)])
                ok = (Y[:, k] < self.cap[:, k]) & (load + self.cpu[k] <= self.ncpu + 1e-9)
                if not ok.any():
                    return None
                n = int(np.argmax(np.where(ok, gain, -np.inf)))
                Y[n, k] += 1
                load[n] += self.cpu[k]
        if not all(self.node_ok(Y[n], n) for n in range(self.N)) or self.workers(Y) is None:
            return None
        return Y

    def kick(self, Y: np.ndarray, rng: random.Random, moves: int) -> np.ndarray:
        """Random feasible moves (a perturbation for the next descent)."""
        Z = Y.copy()
        for _ in range(moves * 10):
            if moves <= 0:
                break
            a, b = rng.randrange(self.N), rng.randrange(self.N)
            ks = np.nonzero(Z[a] > 0)[0]
            if a == b or not len(ks):
                continue
            k = int(ks[rng.randrange(len(ks))])
            W = Z.copy()
            W[a, k] -= 1
            W[b, k] += 1
            if self.node_ok(W[b], b) and self.workers(W) is not None:
                Z = W
                moves -= 1
        return Z

    def run(self, starts: list[np.ndarray], budget: float, seed: int = 0, target: float = math.inf,
            patience: int = 5000, kicks: int | None = None) -> tuple[float, np.ndarray] | None:
        """Iterated local search from each feasible start; the best (value, Y). Stops at the
        budget, at ``target`` (a proven upper bound), after ``patience`` kicks without gain or
        after ``kicks`` kicks."""
        return iterated_local_search(self, starts, budget, seed, target, patience, kick_cap=6, kick_every=5,
                                     worse=0.1, tol=1e-9, every_start=False, kicks=kicks)

    # --- conversions -------------------------------------------------------------------------
    def from_plan(self, plan) -> np.ndarray | None:
        G = self.pm.groups
        gidx = {(g.topo.id, g.comp.id, i): k for k, g in enumerate(G) for i in g.members}
        nidx = {self.pm.nodes[ni].id: j for j, ni in enumerate(self.nodes)}
        Y = np.zeros((self.N, self.K), dtype=np.int64)
        for pl in plan.placements:
            k = gidx.get((pl.topology, pl.component, pl.executor))
            if k is None or pl.node not in nidx:
                return None
            Y[nidx[pl.node], k] += 1
        if (Y.sum(axis=0) != self.size).any() or not all(self.node_ok(Y[n], n) for n in range(self.N)) \
                or self.workers(Y) is None:
            return None
        return Y

    def from_columns(self, model, chosen) -> np.ndarray | None:
        """Counts of the integer master's chosen node columns, dealt to the classes' nodes."""
        pos = {ni: j for j, ni in enumerate(self.nodes)}
        free = class_nodes(self.pm, [f.name for f in model.families])
        Y = np.zeros((self.N, self.K), dtype=np.int64)
        for col, cnt in chosen:
            _, ys, _ = col.payload
            for _ in range(cnt):
                n = pos[free[col.family].pop(0)]
                for k, q in ys:
                    Y[n, k] = q
        return Y if (Y.sum(axis=0) == self.size).all() else None

    def columns(self, model, Y: np.ndarray) -> list[tuple[Any, int]] | None:
        """Y as node columns of ``model`` (build_traffic's families), with their counts."""
        from ._patterns import node_classes

        o = self.workers(Y)
        if o is None:
            return None
        fam_of = {f.name: fi for fi, f in enumerate(model.families)}
        pos = {ni: j for j, ni in enumerate(self.nodes)}
        out: dict[Any, list] = {}
        for cls in node_classes(self.pm, False):
            fi = fam_of[f"node{cls[0]}"]
            conv = model.families[fi].conv_row
            for ni in cls:
                n = pos[ni]
                ys = tuple((k, int(q)) for k, q in enumerate(Y[n]) if q > 0)
                os_ = tuple(sorted((ti, int(o[ti][n])) for ti in self.tis))
                payload = ("y", ys, os_)
                if (fi, payload) in out:
                    out[(fi, payload)][1] += 1
                    continue
                out[(fi, payload)] = [node_column(fi, conv, ys, os_, 0.5 * float(Y[n] @ self.A @ Y[n])), 1]
        return [(c, k) for c, k in out.values()]


def class_nodes(pm, names: list[str]) -> dict[int, list[int]]:
    """Per configuration family (named ``node<i>`` after its first node, as ``build_traffic``
    and the B&P tables name them), the indices of its nodes, in order: node columns are dealt
    to them one by one."""
    from ._patterns import node_classes

    classes = {f"node{c[0]}": list(c) for c in node_classes(pm, False)}
    return {fi: list(classes[name]) for fi, name in enumerate(names)}


def node_column(fi: int, conv, ys: tuple, os_: tuple, value: float):
    """The configuration-model column of one node (``_patterns.build_traffic``'s rows and
    payload): ys = ((group, count), ...) with counts > 0, os_ = ((topology, workers), ...),
    conv its family's convexity row, value its intra-node traffic."""
    from ._patterns import Column

    coefs: dict[Any, float] = {("cover", k): float(q) for k, q in ys}
    for ti, ov in os_:
        if ov:
            coefs[("workers", ti)] = float(ov)
    coefs[conv] = 1.0
    payload = ("y", ys, os_)
    return Column(fi, value, coefs, payload, payload)


def seed_traffic(pm, model, pairs, starts_plans: list, chosen, budget: float, seed: int = 0,
                 target: float = math.inf, kicks: int | None = None):
    """Run the search from the master's plan and the given plans; add the best as columns to
    ``model``; returns (value, [(column, count)]) or None."""
    ns = NodeSearch(pm, pairs)
    starts = []
    if chosen is not None:
        Y = ns.from_columns(model, chosen)
        if Y is not None:
            starts.append(Y)
    starts += plan_starts(ns, starts_plans)
    rng = random.Random(seed)
    t0 = time.monotonic()
    for i in range(3):
        # the first fill, when it is the only start, runs to its end (as before deadlines)
        Y = ns.greedy(None if i == 0 else rng, deadline=None if i == 0 and not starts else t0 + budget)
        if Y is not None:
            starts.append(Y)
    if not starts:
        return None
    best = ns.run(starts, max(0.0, budget - (time.monotonic() - t0)), seed, target - model.value_const, kicks=kicks)
    if best is None:
        return None
    cols = ns.columns(model, best[1])
    if cols is None:
        return None
    out = []
    for c, k in cols:
        out.append((model.stored(c), k))  # the model may already hold it: use the stored one
    return best[0] + model.value_const, out


def phase2_free_search(pm, model, pairs, total: float, z1: float, deadline: float | None, accept,
                       seed: int = 0, tries: int = 16):
    """Phase 2 by search (a shortcut, not a proof by itself): iterated local searches from
    fresh randomised greedy fills, each stopped as soon as it reaches the phase-1 optimum
    ``z1`` (inter-node traffic), until ``accept(plan)`` holds for the plan built from one of
    them (the caller's check: the evaluator's inter-worker traffic equals z1, which proves
    phase 2 because inter-worker >= inter-node >= z1 for every plan; ``total`` is the traffic
    of all pairs, so intra-node traffic total - z1 is the search's target). Different runs end on
    different phase-1 optima, and only some are phase-2 free (100x10x10: 2 of 8 seeds, each
    reaching z1 in 0.1-5 s). Returns the accepted plan or None (time, ``tries`` or no fill).
    ``deadline`` None: no clock (the caller in formulations.traffic always gives one)."""
    from ._patterns import traffic_plan

    ns = NodeSearch(pm, pairs)
    target = total - z1 - model.value_const  # the search maximises intra-node traffic
    goal = target - 1e-9 * max(1.0, abs(target))
    rng = random.Random(seed)
    for _ in range(tries):
        if deadline is not None and time.monotonic() >= deadline:
            return None
        starts = [Y for Y in (ns.greedy(rng, deadline) for _ in range(2)) if Y is not None]
        if not starts:
            return None
        budget = 30.0 if deadline is None else deadline - time.monotonic()
        best = ns.run(starts, budget, rng.randrange(2 ** 31), target)
        if best is None or best[0] < goal:
            continue
        cols = ns.columns(model, best[1])
        if cols is None:
            continue
        plan = traffic_plan(pm, model, cols)
        if accept(plan):
            return plan
    return None


def plan_starts(ls, plans: list) -> list:
    """The states of the given plans (None entries skipped) that ``ls.from_plan`` can express:
    the starts of ``NodeSearch`` (traffic) and ``_networkls.WorkerSearch`` (network)."""
    return [X for X in (ls.from_plan(p) for p in plans if p is not None) if X is not None]


def work_budget(size: int, time_limit: float | None, kicks_per: float, kicks_range: tuple[int, int],
                cap_per: float, cap_range: tuple[float, float]) -> tuple[int, float]:
    """A local search's budget of work, (kicks, seconds cap), for ``size`` = executors x nodes:
    ``kicks_per`` x size kicks within ``kicks_range``, a count, so that a slower machine runs
    the same search to the same plan; ``cap_per`` x size seconds within ``cap_range``, then at
    most 1/10 of the time limit, a cap only (traffic's node search and network's worker search)."""
    kicks = int(min(kicks_range[1], max(kicks_range[0], round(kicks_per * size))))
    cap = min(cap_range[1], max(cap_range[0], cap_per * size))
    if time_limit is not None:
        cap = min(cap, time_limit / 10)
    return kicks, cap


def iterated_local_search(ls, starts: list, budget: float, seed: int, target: float, patience: int,
                          kick_cap: int, kick_every: int, worse: float, tol: float, every_start: bool,
                          kicks: int | None = None):
    """The iterated local search of ``NodeSearch`` (traffic) and ``_networkls.WorkerSearch``
    (network) over ``ls``'s ``descend(state, deadline)``, ``kick(state, rng, moves)`` and
    ``value(state)``: descend from each start (``every_start``: at least one past the budget),
    then from the current state kicked by 2 .. 2 + min(kick_cap, stall // kick_every) random
    moves; a worse result becomes current with probability ``worse``, else the best does.
    Returns the best (value, state), or None when no start was descended. Stops at the
    budget, at ``target`` (a proven upper bound, less 1e-9 relative), after ``patience``
    kicks without a gain over ``tol``, or after ``kicks`` kicks (a budget of work: the same
    search, and the same result, on a slower machine, where the seconds ``budget`` is then a
    safety cap)."""
    deadline = time.monotonic() + budget
    rng = random.Random(seed)
    best = None
    for X in starts:
        if time.monotonic() >= deadline and (best is not None or not every_start):
            break
        X = ls.descend(X, deadline)
        v = ls.value(X)
        if best is None or v > best[0] + tol:
            best = (v, X)
    if best is None:
        return None
    cur = best
    stall = 0
    goal = target - 1e-9 * max(1.0, abs(target)) if math.isfinite(target) else math.inf
    done = 0
    while time.monotonic() < deadline and best[0] < goal and stall < patience and (kicks is None or done < kicks):
        done += 1
        Xn = ls.descend(ls.kick(cur[1], rng, rng.randint(2, 2 + min(kick_cap, stall // kick_every))), deadline)
        v = ls.value(Xn)
        if v > best[0] + tol:
            best, stall = (v, Xn), 0
        else:
            stall += 1
        cur = (v, Xn) if v >= cur[0] - tol or rng.random() < worse else best
    return best
