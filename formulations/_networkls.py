"""Worker-level local search for ``network``: an incumbent for the configuration model.

Why: the two-rack search (``_patterns._two_rack_search``, ``_splits_above``) keeps every split
of the executors between the racks whose bound beats the incumbent, so its work is set by how
far the incumbent is from the optimum; the ``storm.ras`` plan it started from is far off on the
larger instances (100x10x10: 22.6 against an optimum near 19). This search works on the counts
X[w, g] of every group g in every worker w (a slot of a node), whose co-location value is

    value(X) = sum_e w_e (sum_w X[w,a] X[w,b] + sum_n Y[n,a] Y[n,b] + sum_r Z[r,a] Z[r,b]),

Y and Z the node and rack sums (the RAS metric is const - value). With A the symmetric stream
weight matrix (zero diagonal: a component streaming to itself makes the configuration model
not apply) and S[w, g] = (X A)[w, g] + (Y A)[node(w), g] + (Z A)[rack(w), g], moving one
executor of g from worker w1 to w2 gains S[w2, g] - S[w1, g] (a level the two workers share
cancels), and swapping g in w1 with h in w2 gains that plus S[w1, h] - S[w2, h]
- 2 A[g, h] d(w1, w2), d = the number of levels (worker, node, rack) the two workers differ in.
Steepest improving move, else steepest improving swap, until none; then random feasible moves
(a kick) and again (iterated local search), until the budget ends.

Every state it keeps is feasible: worker caps (pins, heap per executor, incompatibility with
itself), worker heap <= the topology's max heap, one topology per worker, no incompatible pair
in a worker, node caps, CPU, memory, generic resources and max_per_node over a component's
groups. No optimality claim: its plan is only an incumbent (the caller checks it with the
evaluator before using it).
"""

from __future__ import annotations

import math
import random
import time

import numpy as np

from ._patterns import stream_matrix
from ._rasmodel import node_kinds

TOL = 1e-9
# Sizes past which the search does not run. A descent step scores every worker and group against
# every group (workers x groups^2 multiply-adds, also in ``value``), and its move array holds
# occupied x active workers x groups entries. Storm's largeCluster03 (960 workers, 743 groups:
# 5.3e8 and, from storm.ras's plan, 9.7e7) is searched in about 8 s; largeCluster01 (65,600
# workers, 389 groups: 9.9e9, and a 32 GB array) ran out of memory (session 26).
SEARCH_WORK_MAX = 2e9
MOVE_ENTRIES_MAX = 3e8
# value() sums einsum's dense products up to this many (workers x groups^2), by stream pairs past it
VALUE_DENSE_MAX = 1e7


class WorkerSearch:
    """The worker-count view of a network instance (``pm``: a PlacementModel, ``edges``: the
    stream weights {(a, b): w} of ``_patterns.build_network``)."""

    def __init__(self, pm, edges: dict[tuple[int, int], float]):
        G = pm.groups
        self.pm = pm
        self.K = K = len(G)
        self.wk = list(pm.workers)  # (node index, port)
        self.Wn = len(self.wk)
        self.wnode = np.array([ni for ni, _ in self.wk], dtype=np.int64)
        self.N = len(pm.nodes)
        self.nrack = np.array(pm.node_rack, dtype=np.int64)
        self.R = int(self.nrack.max()) + 1 if self.N else 0
        self.wrack = self.nrack[self.wnode] if self.Wn else np.zeros(0, dtype=np.int64)
        self.A = stream_matrix(K, edges)
        self.size = np.array([g.size for g in G], dtype=np.int64)
        self.topo = np.array([g.ti for g in G], dtype=np.int64)
        self.cpu = np.array([g.comp.cpu for g in G], dtype=float)
        self.mem = np.array([g.comp.memory_mb for g in G], dtype=float)
        self.heap = np.array([g.comp.memory_onheap_mb for g in G], dtype=float)
        self.maxheap = np.array([g.topo.max_heap_mb for g in G], dtype=float)  # of g's topology
        res = sorted({r for g in G for r in g.comp.resources})
        self.res = np.array([[g.comp.resources.get(r, 0.0) for r in res] for g in G], dtype=float).reshape(K, len(res))
        self.nres = np.array([[n.resources.get(r, 0.0) for r in res] for n in pm.nodes], dtype=float).reshape(self.N, len(res))
        self.ncpu = np.array([n.cpu for n in pm.nodes], dtype=float)
        self.nmem = np.array([n.memory_mb for n in pm.nodes], dtype=float)
        # caps read once per node kind (node_kinds), not per node: a worker's caps are its node's,
        # and alike nodes have the same (Storm's largeCluster03: 80 nodes x 792 groups, 1.6 s)
        kinds = node_kinds(pm)
        kind_of = np.zeros(self.N, dtype=np.int64)
        for i, nis in enumerate(kinds):
            kind_of[nis] = i
        ncap = np.array([[pm.node_cap(g, nis[0]) for g in G] for nis in kinds], dtype=np.int64).reshape(len(kinds), K)
        self.ncap = ncap[kind_of]
        ncap_w = np.array([[pm.worker_cap(g, nis[0]) for g in G] for nis in kinds], dtype=np.int64).reshape(len(kinds), K)
        self.wcap = ncap_w[kind_of][self.wnode]
        self.by_node: list[list[int]] = [[] for _ in range(self.N)]  # worker indices by node, for plan()
        for w, ni in enumerate(self.wnode.tolist()):
            self.by_node[ni].append(w)
        # the streams as pairs (a <= b) with their weights, for value() on large states
        ia, ib = np.nonzero(np.triu(self.A))
        self.pair_a, self.pair_b = ia, ib
        self.pair_w = np.where(ia == ib, 0.5, 1.0) * self.A[ia, ib]
        # groups that may not share a worker: other topologies, incompatible components
        inc = self.topo[:, None] != self.topo[None, :]
        by_topo: dict[int, list[int]] = {}
        for k, g in enumerate(G):
            by_topo.setdefault(g.ti, []).append(k)
        for ks in by_topo.values():
            for a in ks:
                for b in ks:
                    ga, gb = G[a], G[b]
                    if a != b and (gb.comp.id in ga.comp.incompatible or ga.comp.id in gb.comp.incompatible):
                        inc[a, b] = True
        np.fill_diagonal(inc, False)
        self.inc = inc
        comp: dict[tuple[int, str], list[int]] = {}
        for k, g in enumerate(G):
            comp.setdefault((g.ti, g.comp.id), []).append(k)
        self.mpn = [(kk, G[kk[0]].comp.max_per_node) for kk in comp.values()
                    if len(kk) > 1 and G[kk[0]].comp.max_per_node is not None]

    # --- feasibility -------------------------------------------------------------------------
    def worker_ok(self, x: np.ndarray, w: int) -> bool:
        if (x < 0).any() or (x > self.wcap[w]).any():
            return False
        on = x > 0
        if not on.any():
            return True
        if float(x @ self.heap) > float(self.maxheap[on][0]) + TOL:
            return False
        return not (self.inc[np.ix_(on, on)]).any()

    def node_ok(self, y: np.ndarray, n: int) -> bool:
        if (y < 0).any() or (y > self.ncap[n]).any():
            return False
        if float(y @ self.cpu) > self.ncpu[n] + TOL or float(y @ self.mem) > self.nmem[n] + TOL:
            return False
        if self.res.shape[1] and (y @ self.res > self.nres[n] + TOL).any():
            return False
        return all(int(y[kk].sum()) <= lim for kk, lim in self.mpn)

    def feasible(self, X: np.ndarray) -> bool:
        if (X.sum(axis=0) != self.size).any():
            return False
        Y = self.node_sums(X)
        return all(self.worker_ok(X[w], w) for w in range(self.Wn)) and all(self.node_ok(Y[n], n) for n in range(self.N))

    def node_sums(self, X: np.ndarray) -> np.ndarray:
        Y = np.zeros((self.N, self.K), dtype=np.int64)
        np.add.at(Y, self.wnode, X)
        return Y

    def rack_sums(self, Y: np.ndarray) -> np.ndarray:
        Z = np.zeros((self.R, self.K), dtype=np.int64)
        np.add.at(Z, self.nrack, Y)
        return Z

    def value(self, X: np.ndarray) -> float:
        """Co-location value (worker + node + rack) of worker counts X."""
        Y = self.node_sums(X)
        Z = self.rack_sums(Y)
        if X.size * self.K <= VALUE_DENSE_MAX:  # the sums every recorded search made, bit for bit
            A = self.A
            return 0.5 * float(np.einsum("wk,kl,wl->", X, A, X) + np.einsum("nk,kl,nl->", Y, A, Y)
                               + np.einsum("rk,kl,rl->", Z, A, Z))
        # large: by stream pairs; einsum's dense triple sum took 2 s of a 0.8 s search cap on
        # Storm's largeCluster03 with its ackers (960 workers x 792 groups)
        a, b, w = self.pair_a, self.pair_b, self.pair_w
        return float(sum(np.einsum("ip,ip->p", M[:, a], M[:, b], dtype=float) @ w for M in (X, Y, Z)))

    # --- search -------------------------------------------------------------------------------
    def _move_mask(self, X: np.ndarray, Y: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """ok[i, j, g]: moving one executor of g from worker src[i] to worker dst[j] keeps the
        state feasible."""
        on = X > 0
        heap_w = X @ self.heap
        # the worker w2 after receiving g (w1 losing one executor never breaks a worker limit)
        fit_w = (X < self.wcap) & (heap_w[:, None] + self.heap[None, :] <= self.maxheap[None, :] + TOL) \
            & ~((on.astype(np.int64) @ self.inc.astype(np.int64)) > 0)
        # a worker whose only content is one executor of g becomes empty: it may then take any
        # topology, but it is the source, not the target, so fit_w stands as it is
        load = Y @ self.cpu
        mload = Y @ self.mem
        fit_n = (Y < self.ncap) & (load[:, None] + self.cpu[None, :] <= self.ncpu[:, None] + TOL) \
            & (mload[:, None] + self.mem[None, :] <= self.nmem[:, None] + TOL)
        if self.res.shape[1]:
            ru = Y @ self.res
            fit_n &= ((ru[:, None, :] + self.res[None, :, :]) <= self.nres[:, None, :] + TOL).all(axis=2)
        for kk, lim in self.mpn:
            full = Y[:, kk].sum(axis=1) >= lim
            fit_n[np.ix_(full, kk)] = False
        same_node = self.wnode[src][:, None] == self.wnode[dst][None, :]
        ok = on[src][:, None, :] & fit_w[dst][None, :, :] & (same_node[:, :, None] | fit_n[self.wnode[dst]][None, :, :])
        ok[src[:, None] == dst[None, :]] = False
        return ok

    def _active(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(occupied workers, occupied workers and each node's first empty worker), ascending.
        A node's empty workers are interchangeable (same caps, same scores), so a move to the
        first of them stands for a move to any; a swap needs executors on both sides. On a big
        cluster with a small topology most workers are empty (ras-doc-five-racks: 200)."""
        occ = X.any(axis=1)
        act = occ.copy()
        empty = np.flatnonzero(~occ)
        if len(empty):
            _, first = np.unique(self.wnode[empty], return_index=True)
            act[empty[first]] = True
        return np.flatnonzero(occ), np.flatnonzero(act)

    def _scores(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        A = self.A
        Z = self.rack_sums(Y)
        return X @ A + (Y @ A)[self.wnode] + (Z @ A)[self.wrack]

    def _diff_levels(self, occ: np.ndarray) -> np.ndarray:
        """dl[i, j]: 1, 2 or 3 as workers occ[i] and occ[j] share a node, a rack, or neither
        (over the occupied workers only: every worker pair of Storm's largeCluster01, 65,600
        workers, would be 32 GB)."""
        n, r = self.wnode[occ], self.wrack[occ]
        return 1 + (n[:, None] != n[None, :]).astype(float) + (r[:, None] != r[None, :]).astype(float)

    def _apply(self, X: np.ndarray, Y: np.ndarray, w1: int, w2: int, g: int) -> None:
        X[w1, g] -= 1
        X[w2, g] += 1
        Y[self.wnode[w1], g] -= 1
        Y[self.wnode[w2], g] += 1

    def descend(self, X: np.ndarray, deadline: float) -> np.ndarray:
        """Steepest improving move, else the best improving feasible swap, until none."""
        X = X.copy()
        Y = self.node_sums(X)
        A = self.A
        while time.monotonic() < deadline:
            S = self._scores(X, Y)
            occ, act = self._active(X)
            if len(occ) * len(act) * self.K > MOVE_ENTRIES_MAX:  # the arrays below would not fit
                return X
            # D[i, j, g]: moving g from occ[i] to act[j]; over every worker pair, the first
            # maximum in (w1, w2, g) order is this one (an empty worker past its node's first
            # ties with that first one)
            D = S[act][None, :, :] - S[occ][:, None, :]
            D = np.where(self._move_mask(X, Y, occ, act), D, -np.inf)
            f = int(np.argmax(D))
            i, j, g = np.unravel_index(f, D.shape)
            if D[i, j, g] > TOL:
                self._apply(X, Y, int(occ[i]), int(act[j]), int(g))
                continue
            if not self._swap(X, Y, S, occ, A):
                return X
        return X

    def _swap(self, X, Y, S, occ, A, tries: int = 64) -> bool:
        """The best improving feasible swap (among the ``tries`` best by gain, ties by worker
        and group order); applied in place. Only occupied workers (``occ``) take part. None are
        tried past 5e6 (worker, worker, group, group) entries: the arrays below would take
        seconds and hundreds of MB per call (200x20x64: 2 s, 0.7 GB)."""
        W = len(occ)
        if (W * self.K) ** 2 > 5e6:
            return False
        on = X[occ] > 0
        So = S[occ]
        Dm = So[None, :, :] - So[:, None, :]
        # gain[i1, i2, g, h] = Dm[i1, i2, g] + Dm[i2, i1, h] - 2 A[g, h] dl[w1, w2]
        gain = Dm[:, :, :, None] + np.transpose(Dm, (1, 0, 2))[:, :, None, :] \
            - 2.0 * A[None, None, :, :] * self._diff_levels(occ)[:, :, None, None]
        valid = on[:, None, :, None] & on[None, :, None, :]
        valid &= ~np.eye(self.K, dtype=bool)[None, None, :, :]
        valid &= ~np.eye(W, dtype=bool)[:, :, None, None]
        gain = np.where(valid, gain, -np.inf)
        flat = gain.reshape(-1)
        cand = np.flatnonzero(flat > TOL)
        if len(cand) == 0:
            return False
        if len(cand) > tries:  # the best by gain; at the cut, ties go to the lower index
            keep = np.argpartition(-flat[cand], tries - 1)[:tries]
            cut = flat[cand[keep]].min()
            above = cand[flat[cand] > cut]
            cand = np.concatenate([above, cand[flat[cand] == cut][:tries - len(above)]])
        top = cand[np.lexsort((cand, -flat[cand]))]
        for f in top:
            i1, i2, g, h = (int(v) for v in np.unravel_index(f, gain.shape))
            w1, w2 = int(occ[i1]), int(occ[i2])
            X[w1, g] -= 1
            X[w2, g] += 1
            X[w2, h] -= 1
            X[w1, h] += 1
            n1, n2 = self.wnode[w1], self.wnode[w2]
            ok = self.worker_ok(X[w1], w1) and self.worker_ok(X[w2], w2)
            if ok and n1 != n2:
                y1 = Y[n1].copy()
                y2 = Y[n2].copy()
                y1[g] -= 1
                y1[h] += 1
                y2[g] += 1
                y2[h] -= 1
                ok = self.node_ok(y1, n1) and self.node_ok(y2, n2)
            if ok:
                if n1 != n2:
                    Y[n1] = y1
                    Y[n2] = y2
                return True
            X[w1, g] += 1
            X[w2, g] -= 1
            X[w2, h] += 1
            X[w1, h] -= 1
        return False

    def kick(self, X: np.ndarray, rng: random.Random, moves: int) -> np.ndarray:
        """Random feasible moves of one executor (a perturbation for the next descent)."""
        X = X.copy()
        Y = self.node_sums(X)
        for _ in range(moves * 20):
            if moves <= 0:
                break
            w1, w2 = rng.randrange(self.Wn), rng.randrange(self.Wn)
            ks = np.flatnonzero(X[w1] > 0)
            if w1 == w2 or not len(ks):
                continue
            g = int(ks[rng.randrange(len(ks))])
            X[w1, g] -= 1
            X[w2, g] += 1
            n1, n2 = self.wnode[w1], self.wnode[w2]
            ok = self.worker_ok(X[w2], w2)
            if ok and n1 != n2:
                y2 = Y[n2].copy()
                y2[g] += 1
                ok = self.node_ok(y2, n2)
            if ok:
                Y[n1, g] -= 1
                Y[n2, g] += 1
                moves -= 1
            else:
                X[w1, g] += 1
                X[w2, g] -= 1
        return X

    def run(self, starts: list[np.ndarray], budget: float, seed: int = 0, target: float = math.inf,
            patience: int = 2000, kicks: int | None = None) -> tuple[float, np.ndarray] | None:
        """Iterated local search from each feasible start: the best (value, X) found. Stops at
        the budget (seconds), at ``target`` (e.g. a proven upper bound), after ``patience``
        kicks without gain, or after ``kicks`` kicks."""
        from ._trafficls import iterated_local_search

        return iterated_local_search(self, starts, budget, seed, target, patience, kick_cap=8, kick_every=10,
                                     worse=0.05, tol=TOL, every_start=True, kicks=kicks)

    # --- conversions ---------------------------------------------------------------------------
    def from_plan(self, plan) -> np.ndarray | None:
        """Worker counts of a plan, or None if it does not fit this view (or is infeasible)."""
        G = self.pm.groups
        gidx = {(g.topo.id, g.comp.id, i): k for k, g in enumerate(G) for i in g.members}
        widx = {(self.pm.nodes[ni].id, p): w for w, (ni, p) in enumerate(self.wk)}
        X = np.zeros((self.Wn, self.K), dtype=np.int64)
        for pl in plan.placements:
            k = gidx.get((pl.topology, pl.component, pl.executor))
            w = widx.get((pl.node, pl.slot))
            if k is None or w is None:
                return None
            X[w, k] += 1
        return X if self.feasible(X) else None

    def greedy(self, rng: random.Random | None = None, deadline: float | None = None) -> np.ndarray | None:
        """Executors one by one (most stream weight first) into the feasible worker where they
        gain most (``rng``: shuffled order and noisy gains, for other starts); None if stuck or
        past ``deadline`` (each executor costs a product over every worker and group: Storm's
        largeCluster01, 24,403 executors on 65,600 workers, ran past 300 s under a 60 s limit
        before the deadline, session 26)."""
        X = np.zeros((self.Wn, self.K), dtype=np.int64)
        Y = np.zeros((self.N, self.K), dtype=np.int64)
        Z = np.zeros((self.R, self.K), dtype=np.int64)
        # what the exact checks (worker_ok, node_ok) need, kept per worker and node, to skip
        # at once the workers they would refuse: a necessary-condition filter only (with slack
        # on the sums), so the worker chosen is the same; 1,414 executors on 960 workers
        # (Storm's largeCluster03) spent 20 s refused one by one (session 24)
        wtopo = np.full(self.Wn, -1, dtype=np.int64)
        wheap = np.zeros(self.Wn)
        ncpu = np.zeros(self.N)
        nmem = np.zeros(self.N)
        slack = 1e-6
        order = sorted(range(self.K), key=lambda k: -self.A[k].sum())
        if rng is not None:
            rng.shuffle(order)
        for g in order:
            a = self.A[:, g]
            t = self.topo[g]
            for _ in range(int(self.size[g])):
                if deadline is not None and time.monotonic() > deadline:
                    return None
                gain = X @ a + (Y @ a)[self.wnode] + (Z @ a)[self.wrack] + 1e-6 * (X.sum(axis=1) > 0)  # ties: used workers
                if rng is not None:
                    gain = gain * (1.0 + 0.3 * np.array([rng.random() for _ in range(self.Wn)]))
                wn = self.wnode
                cand = ((wtopo == -1) | (wtopo == t)) & (X[:, g] < self.wcap[:, g]) \
                    & (wheap + self.heap[g] <= self.maxheap[g] + TOL + slack) \
                    & (Y[wn, g] < self.ncap[wn, g]) & (ncpu[wn] + self.cpu[g] <= self.ncpu[wn] + TOL + slack) \
                    & (nmem[wn] + self.mem[g] <= self.nmem[wn] + TOL + slack)
                placed = False
                for w in np.argsort(-gain, kind="stable"):
                    w = int(w)
                    if not cand[w]:
                        continue
                    X[w, g] += 1
                    n = self.wnode[w]
                    y = Y[n].copy()
                    y[g] += 1
                    if self.worker_ok(X[w], w) and self.node_ok(y, n):
                        Y[n] = y
                        Z[self.nrack[n], g] += 1
                        wtopo[w] = t
                        wheap[w] += self.heap[g]
                        ncpu[n] += self.cpu[g]
                        nmem[n] += self.mem[g]
                        placed = True
                        break
                    X[w, g] -= 1
                if not placed:
                    return None
        return X

    def plan(self, X: np.ndarray):
        """The plan of worker counts X (each group's executors taken in member order)."""
        from ._patterns import deal_workers

        # the workers by node kept from __init__ (a scan of every worker per node took 14 s of a
        # 10 s limit for one topology on Storm's largeCluster01: 1,312 nodes x 65,600 workers)
        used = set(np.flatnonzero(X.any(axis=1)).tolist())
        nodes = []
        for ni in range(self.N):
            ws = self.by_node[ni]
            if not used.intersection(ws):
                continue
            # deal_workers takes the node's ports in order: keep each worker on its own port
            parts = [{k: int(q) for k, q in enumerate(X[w]) if q} for w in ws]
            nodes.append((ni, parts))
        return deal_workers(self.pm, nodes)


def too_large(pm) -> bool:
    """Whether ``pm``'s workers x groups^2 is past ``SEARCH_WORK_MAX`` (the search is not run)."""
    return len(pm.workers) * len(pm.groups) ** 2 > SEARCH_WORK_MAX


def search_network(pm, edges, starts_plans: list, budget: float, seed: int = 0, target: float = math.inf,
                   value_const: float = 0.0, kicks: int | None = None):
    """Iterated local search from the given plans (those that fit) and three greedy fills:
    (co-location value + value_const, plan), or None. ``target``: stop once reached (an upper
    bound on that value in the same terms: network passes the one of metric 0). ``kicks``: a
    budget of work (the three fills, then that many kicks), with ``budget`` seconds as a cap
    only; without it the fills after the first start only within half the budget, and the
    kicks until the budget. None also when workers x groups^2 is past ``SEARCH_WORK_MAX``. No
    optimality claim."""
    t0 = time.monotonic()
    if too_large(pm):
        return None
    ws = WorkerSearch(pm, edges)
    if ws.Wn == 0:
        return None
    from ._trafficls import plan_starts

    starts = plan_starts(ws, starts_plans)
    rng = random.Random(seed)
    for i in range(3):  # the fills count against the budget (the first one if there is no start)
        if i > 0 and time.monotonic() - t0 >= budget:
            break
        if kicks is None and starts and time.monotonic() - t0 >= budget / 2:
            break
        # the first fill, when it is the only start, runs to its end (as before deadlines)
        X = ws.greedy(None if i == 0 else rng, deadline=None if i == 0 and not starts else t0 + budget)
        if X is not None:
            starts.append(X)
    if not starts:
        return None
    best = ws.run(starts, max(0.0, budget - (time.monotonic() - t0)), seed, target - value_const, kicks=kicks)
    if best is None:
        return None
    return best[0] + value_const, ws.plan(best[1])
