"""Exact network node pricing by table: every count vector a node can hold, with its best split
into workers, computed once (independent of the duals); pricing and reduced-cost enumeration are
then one matrix-vector product.

Why: the CP-SAT node pricer (a multiset of worker contents, products of counts) does not prove
its optimum within 10 s from 30 executors / 6 components / 4 nodes (1,500 worker contents, 4
slots), and column generation calls it dozens of times. The table has as many rows as the node
has count vectors (3.6k for 30x6x4, 260k for 46x8x4).

For a node of class c and a count vector y (executors per group), a node column's value is
co(y) + W(y): node-level co-location plus the best worker-level co-location of a split of y
into at most ``slots`` worker contents (those of ``worker_patterns``, enumerated here by
``worker_contents`` with a larger cap). A column with the same y and a
worse split has the same master coefficients and a lower value, so it is dominated in the LP and
in every integer plan: keeping the best split per y loses nothing (the proof stays exact).

W is a dynamic programme over the number of workers m:
W_1(y) = co(y) if y is a worker content, W_m(y) = max(W_{m-1}(y), max_p co(p) + W_{m-1}(y - p))
over worker contents p <= y. Vectors that no split into <= slots workers covers are dropped.
"""

from __future__ import annotations

import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from . import _kernels as K_
from ._patterns import Column, stream_matrix

NEG = -np.inf
NONE_F = np.zeros(0)  # the kernels' "no array" (_kernels)
NONE_B = np.zeros(0, dtype=bool)
RACK_CHUNK = 1 << 20  # codes per chunk of a rack table's build (RackTable._contents)
# node_table: a network node table's estimated build time, at most this share of the time left
# (0.5 until session 12: 100x11x10 of generator seed 1 was then estimated at 26 s of the 45 s
# left at a 60 s limit, built in 20 s; without its table no such size is proven)
TABLE_SHARE = 0.6
FIN_SHARE = 0.5  # NodeTable: a DP level skips the pairs whose source is not finite when at most this share of rows is
# node_table: a build still running at this share of the time left is abandoned (0.65 before
# session 17: on a slower machine 100x11x10 seed 1's table took 31-35 s of the 45 s left at a
# 60 s limit, so it was abandoned at 29 s and the solve ended feasible, bound 11.76; at 0.85,
# 38 s, proven in 44-48 s, 3 runs of 3; the search after the table still has to 95 % of the limit)
TABLE_STOP = 0.85
# NodeTable: a DP level after the second costs about this share of the first level's time per
# stored pair (the first level finds and stores the pairs and applies level 2 to them; the
# later ones reuse the stored pairs, and from level 3 on only from rows the level before
# raised). Measured (session 36, 2 threads): 100x12x10 seed 0, levels 3 and 4 took 0.09 and 0.05
# of level 1's 9.6 s; 100x10x10 seed 1, 0.20 and 0.15 of its 2.1 s. Before, every level was
# estimated at level 1's cost, so the estimate was 1.4-3.3 times the build (100x11x10 seed 1:
# 26.3 s estimated, 12.1 s built), and that table was refused or built by a few hundredths of a
# second of the time left (its solve feasible 19.11 / 16.6-18.8 at 60 s, or optimal in 18 s).
LATER_LEVEL_COST = 0.25
# NodeTable.zero_rows: the rack subproblems' row sets kept per zero set, bytes (all of a table's)
ZERO_ROWS_BYTES = 300_000_000
# Memory budgets in bytes. TABLE_BYTES: traffic's count tables (``_trafficbp``, all node classes
# together), or the rows of a network solve's node tables (``table_row_bytes``; all its tables
# together, one per class of nodes with distinct limits); a solve builds one kind.
TABLE_BYTES = 2_000_000_000
# The (target, source) row pairs a network node table keeps for its DP (int32 each: 8 bytes a
# pair, 10 with the merge-free levels; past it the pairs of the later contents are found again
# at every level, about as much work again for them): 5e8 pairs. It was TABLE_BYTES, 2.5e8 pairs (1e8 before branch
# net-twelve, when 100x11x10's 1.22e8 did not fit); since branch net-twelve-2 100x12x10's
# 4.1e8 fit: its table in 41-46 s instead of 122 s, peak of the whole solve 4.2 GB (measured).
PAIR_BYTES = 4_000_000_000


def lookup(codes: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Rows of ``c`` in the sorted array ``codes`` (-1 where absent): binary search."""
    if len(codes) == 0:
        return np.full(np.shape(c), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(codes, c), len(codes) - 1)
    return np.where(codes[pos] == c, pos, -1)


def _node_vectors(pm, ni: int, limit: int, dtype=np.int16,
                  deadline: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Every count vector y (one column per group) within the node's caps and its CPU, memory
    and resource limits (integer-scaled as in ``_node_limits``), with their uses of those limits
    and the limits; None if more than ``limit`` rows or past ``deadline``. The counts are of
    ``dtype`` (int16; traffic asks for uint8 when every cap is below 256: 6.3 million rows of 12
    groups are then 76 MB instead of 152). Rows are in the order of the mixed-radix code with
    the last group most significant (each axis appends its values' copies in order)."""
    G = pm.groups
    n = pm.nodes[ni]
    K = len(G)
    dims = [("cpu", [int(round(g.comp.cpu * 1000)) for g in G], int(math.floor(n.cpu * 1000 + 1e-6)))]
    if pm.ras:
        dims.append(("mem", [int(round(g.comp.memory_mb * 1000)) for g in G], int(math.floor(n.memory_mb * 1000 + 1e-6))))
        for r in sorted({r for g in G for r in g.comp.resources}):
            dims.append((r, [int(round(g.comp.resources.get(r, 0.0) * 1000)) for g in G],
                         int(math.floor(n.resources.get(r, 0.0) * 1000 + 1e-6))))
    caps = [pm.node_cap(g, ni) for g in G]
    Y = np.zeros((1, K), dtype=dtype)
    use = np.zeros((1, len(dims)), dtype=np.int64)
    lim = np.array([d[2] for d in dims], dtype=np.int64)
    for k in range(K):
        if deadline is not None and time.monotonic() > deadline:
            return None
        # q = 0..caps[k] copies of the rows that take q more of group k, in order, by one compiled
        # pass (``_kernels.extend_axis``; the limit is checked per value, not per axis, as an axis
        # multiplies the rows)
        Y, use, ok = K_.extend_axis(Y, use, k, int(caps[k]), np.array([d[1][k] for d in dims], dtype=np.int64),
                                    lim, int(limit))
        if not ok:
            return None
    # max_per_node over a component's groups (one group per component in network: no-op then)
    by_comp: dict[Any, list[int]] = {}
    for k, g in enumerate(G):
        by_comp.setdefault((g.ti, g.comp.id), []).append(k)
    for kk in by_comp.values():
        lim = G[kk[0]].comp.max_per_node
        if lim is not None and len(kk) > 1:
            keep = Y[:, kk].sum(axis=1, dtype=np.int64) <= lim
            Y, use = Y[keep], use[keep]
    return Y, use, np.array([d[2] for d in dims], dtype=np.int64)


def worker_contents_of(pm, ni: int, ti: int, cap: int, node: bool = False) -> tuple[list[int], np.ndarray] | None:
    """Every worker content of topology ti on node ni (every non-empty count vector of ti's
    groups within the worker caps, heap <= max_heap, fitting node ni alone, no incompatible
    pair), enumerated with numpy on ti's own groups only: (ks, X) with X's column i the counts
    of group ks[i] (100x9x10: 46,029 contents); None if more than ``cap``. The one statement of
    the worker limits: ``worker_contents`` (the node table's, full width) and
    ``_patterns.worker_patterns`` (the CP-SAT pricer's, cap 20,000) read it. The limits are
    summed group by group, as the tests' reference recursion does. Narrow, because a
    multi-topology cluster has many groups: Storm's largeCluster03 has 792, and full-width rows
    made its 80 nodes x 50 topologies of contents cost 16 s of copies (session 23).

    ``node``: ti's contents of the whole node instead (a relaxation of them, for the count cuts
    of :mod:`formulations._workercut`): the node caps, heap <= the node's slots x max_heap
    (each of its workers within max_heap), incompatible components allowed (in two workers)."""
    G = pm.groups
    t = dict(pm.topos)[ti]
    n = pm.nodes[ni]
    capf = pm.node_cap if node else pm.worker_cap
    ks = [k for k, g in enumerate(G) if g.ti == ti and capf(g, ni) > 0]
    X = np.zeros((1, len(ks)), dtype=np.int64)
    use = np.zeros((1, 3))  # heap, cpu, memory
    lim = np.array([t.max_heap_mb * (len(n.slots) if node else 1), n.cpu, n.memory_mb]) + 1e-9
    for i, k in enumerate(ks):
        c = G[k].comp
        # groups before k whose component may not share a worker with k's (their columns)
        clash = [] if node else [j for j, a in enumerate(ks[:i]) if G[a].comp.id != c.id
                                 and (c.id in G[a].comp.incompatible or G[a].comp.id in c.incompatible)]
        free = ~X[:, clash].any(axis=1) if clash else np.ones(len(X), dtype=bool)
        parts_x, parts_u, rows = [X], [use], len(X)
        for q in range(1, capf(G[k], ni) + 1):
            u = use + q * np.array([c.memory_onheap_mb, c.cpu, c.memory_mb])
            ok = (u <= lim).all(axis=1)
            if not ok.any():
                break
            ok &= free  # no incompatible pair: filtered as the group is added, so the cap counts contents
            xx = X[ok].copy()
            xx[:, i] = q
            parts_x.append(xx)
            parts_u.append(u[ok])
            rows += len(xx)
            if rows > cap + 1:  # checked per value: one axis multiplies the rows
                return None
        X = np.concatenate(parts_x)
        use = np.concatenate(parts_u)
    return ks, X[X.any(axis=1)]


def worker_contents(pm, ni: int, ti: int, cap: int) -> np.ndarray | None:
    """``worker_contents_of`` as rows of a (contents x all groups) array; None if more than ``cap``."""
    got = worker_contents_of(pm, ni, ti, cap)
    if got is None:
        return None
    ks, Xs = got
    X = np.zeros((len(Xs), len(pm.groups)), dtype=np.int64)
    X[:, ks] = Xs
    return X


def table_row_bytes(K: int, slots: int) -> int:
    """The bytes one count vector of a network node table holds once built: its counts (int16,
    in box and group order, 4K), their float64 and float32 copies (12K, for pricing and
    ``max_minus``), the column-major copy (K), the code and the value (16), the W levels
    (8 (slots + 1)), the covered flag, the index of ``floats`` (8), and the int64 limits and
    temporaries of ``_node_vectors`` (8 per limit, 3 here, and 2K while rows are copied), and
    since session 15 the rack subproblems' part codes (``part_codes``: 2 bytes a part, at most
    K parts), and the zero-pattern index of the rack subproblems (``zero_index``, since
    session 12; since session 21 in its order a row index, the packed counts or the counts,
    the value and the part codes: 12 + max(8, K) + 2K): about 389 bytes at 12 groups and 4
    slots. The row limit is ``TABLE_BYTES`` over this (5.1 million rows there, 5.6 million
    before session 21, 6.0 million before session 15, 6.3 million before session 12); the DP's
    stored pairs have their own budget, ``PAIR_BYTES``, and the zero index's row sets theirs,
    ``ZERO_ROWS_BYTES``."""
    return 23 * K + max(8, K) + 8 * (slots + 1) + 16 + 1 + 8 + 24 + 12


def merge_free_heaps(pm) -> tuple[np.ndarray, float] | None:
    """(on-heap MB per group, max heap) when two workers of a node whose heaps sum to at most
    the max heap can always be merged into one worker content: one topology, the RAS limits
    (a worker's caps are its node's caps and the heap), no incompatible components. A merged
    worker is never worse (every pair between the two gains, nothing else changes), so the
    best split of a node's vector can be taken among splits with no two such workers
    (``NodeTable``, ``merge_free``). None where that does not hold."""
    if not pm.ras or len(pm.topos) != 1:
        return None
    t = pm.topos[0][1]
    if any(c.incompatible for c in t.components) or not t.max_heap_mb > 0:
        return None
    return np.array([g.comp.memory_onheap_mb for g in pm.groups], dtype=np.float64), float(t.max_heap_mb)


def column_major(Y: np.ndarray) -> np.ndarray:
    """The rows' counts group by group as contiguous rows (K x rows), uint8 where every count
    fits (``NodeTable.columns``)."""
    return np.ascontiguousarray(Y.T, dtype=np.uint8 if Y.max(initial=0) < 256 else Y.dtype)


def _row_ranges(N: int, T: int, found: list[np.ndarray], starts: np.ndarray, ends: np.ndarray,
                scan_cost: float = 1.5e-9, pair_cost: float = 5.5e-8) -> list[int]:
    """T + 1 row bounds 0 = b_0 <= ... <= b_T = N cutting a node table's DP into T ranges of
    about equal estimated work, from a sample of contents: their scanned rows [starts, ends)
    (``scan_cost`` seconds a row) and their pairs' target rows ``found`` (``pair_cost`` a pair:
    its source's gathers and its levels). Costs measured at 100x12x10 under cProfile: 9.2e9
    rows scanned in 14 s, 4.1e8 pairs in 9 s of gathers and 13 s of levels."""
    grid = np.linspace(0, N, 1025).astype(np.int64)
    s = np.asarray(starts, dtype=np.int64)[None, :]
    e = np.asarray(ends, dtype=np.int64)[None, :]
    scanned = np.clip(grid[:, None], s, np.maximum(s, e)) - s
    cost = scan_cost * scanned.sum(axis=1).astype(np.float64)
    tg = np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
    cost += pair_cost * np.searchsorted(tg, grid)
    if cost[-1] <= 0:
        return [int(round(N * t / T)) for t in range(T + 1)]
    cuts = np.searchsorted(cost, cost[-1] * np.arange(1, T) / T)
    return [0] + [int(grid[min(c, len(grid) - 1)]) for c in cuts] + [N]


class NodeTable:
    """The count vectors of one node class with their best worker splits (module docstring).

    Two exact ways to the same W (``dense``):

    * dense (the first one): W on the box prod_k (cap_k + 1) of count vectors; adding a worker
      content p is one shifted slice of the box per content and level, with no index look-ups.
      Its work is box x contents x slots, most of it on vectors the node cannot hold (46x8x4:
      box 3,951,360 for 258,038 feasible vectors).
    * sparse (the default): W only on the feasible vectors F, sorted by their mixed-radix code
      c(y) = sum_k y_k mult_k. F is downward closed (caps and limits with non-negative
      demands), so for y in F and a content p <= y, y - p is in F and c(y - p) = c(y) - c(p):
      its row is a look-up (an index array over the box when it is small, else a binary
      search in the sorted codes). The pairs (y, y - p) of a content p are the rows of F that
      are 0 before p's first axis f (a prefix of the sorted codes: c(y) < mult_{f-1}) and
      >= p from f on; they are found once and reused by every level. Its work is the number
      of such pairs x slots (46x8x4: 28 million pairs)."""

    def __init__(self, pm, ni: int, edges: dict[tuple[int, int], float], limit: int | None = None,
                 box_limit: int = 4_000_000, deadline: float | None = None, dense: bool = False,
                 pair_limit: int | None = None, budget: float | None = None, pair_rate: float = 4e7,
                 content_cap: int = 200_000, merge_free: bool = False, threads: int = 1):
        G = pm.groups
        K = len(G)
        self.K = K
        self.ok = False
        self.refused: str | None = None  # why the table was not built (``node_table`` reports it)
        self.est_seconds: float | None = None  # the DP's estimated time (``_sparse_levels``)
        self.dp_s: float | None = None  # and its time, once built
        self.dense = dense
        self._top: np.ndarray | None = None
        nw = len(pm.nodes[ni].slots)
        parts = []
        for ti, _ in pm.topos:
            # the table's own enumeration (numpy), with a larger cap than the CP-SAT pricer's
            # 20,000 (``worker_patterns``): the build gate below counts the work
            got = worker_contents(pm, ni, ti, content_cap)
            if got is None:
                self.refused = f"more than {content_cap:,} worker contents"
                return
            parts.append(got)
        P = np.concatenate(parts) if parts else np.zeros((0, K), dtype=np.int64)
        if limit is None:  # rows within TABLE_BYTES (was a fixed 2 million, branch net-twelve-2)
            limit = TABLE_BYTES // table_row_bytes(K, nw)
        vec = _node_vectors(pm, ni, limit, deadline=deadline)
        if vec is None or not len(P):
            if vec is not None:
                self.refused = "no worker content"
            elif deadline is not None and time.monotonic() > deadline:  # _node_vectors' other None
                self.refused = "the enumeration of its count vectors passed the deadline"
            else:
                self.refused = f"more than {limit:,} count vectors (the memory budget left)"
            return
        self.merge = merge_free_heaps(pm) if merge_free else None
        if pair_limit is None:  # the merge-free DP also keeps two int8 levels a pair
            pair_limit = PAIR_BYTES // (8 if self.merge is None else 10)
        # groups on the box axes least used by worker contents first: a content p only extends
        # vectors that are 0 on the axes before its first group (below), so that saves most
        perm = np.argsort((P > 0).sum(axis=0), kind="stable")
        Y = vec[0][:, perm]
        P = P[:, perm]
        radix = [int(Y[:, k].max()) + 1 for k in range(K)]
        box = math.prod(radix)
        if (dense and box > box_limit) or box >= 1 << 62:
            return  # the codes are int64 mixed-radix numbers: past 2^62 they would wrap and collide
        mult = np.ones(K, dtype=np.int64)
        for k in range(K - 2, -1, -1):
            mult[k] = mult[k + 1] * radix[k + 1]
        codes = Y.astype(np.int64) @ mult
        order = np.argsort(codes, kind="stable")
        Y, codes = Y[order], codes[order]
        self.codes, self.mult = codes, mult
        self._lut = None
        if box <= 4 * box_limit:
            self._lut = np.full(box, -1, dtype=np.int32)
            self._lut[codes] = np.arange(len(codes), dtype=np.int32)
        keep = (P < np.array(radix)).all(axis=1)
        keep[keep] = self._row(P[keep] @ mult) >= 0  # a content the node cannot hold alone is never used
        P = P[keep]
        A = stream_matrix(K, edges)[np.ix_(perm, perm)]
        co_p = 0.5 * K_.quad(P, A)
        self.P, self.co_p, self.pcodes = P, co_p, P @ mult
        # y >= p on every axis at once: fields of `bits` bits, the top one a guard bit set in
        # y; (y | guards) - p keeps every guard iff no field borrows, i.e. y_k >= p_k for all k
        # (the DP's scan and ``_split``'s contents within y); None where K fields do not fit
        self._pack = None
        bits = int(Y.max(initial=0)).bit_length() + 1
        if K * bits <= 62:
            shift = np.array([1 << (bits * k) for k in range(K)], dtype=np.int64)
            self._pack = (shift, int(sum(1 << (bits * k + bits - 1) for k in range(K))), P @ shift)
        self.perm = perm
        # the counts by group as contiguous rows (``columns``), made before the DP, whose
        # parent pairs read one axis at a time from them (box axis k is row perm[k])
        self._YT = column_major(Y[:, np.argsort(perm)])
        self.heap = None if self.merge is None else self.merge[0][perm]
        if dense:
            levels = self._dense_levels(radix, codes, nw, deadline)
            if levels is None:
                return
            Wf = levels[-1][codes]
        else:
            levels = self._sparse_levels(Y, codes, nw, deadline, pair_limit, budget, pair_rate, threads)
            if levels is None:
                return
            Wf = levels[-1]
        sel = np.isfinite(Wf)
        co_y = 0.5 * K_.quad(Y, A)  # einsum's sums without a float copy of Y (session 21)
        inv = np.argsort(perm)
        self.Yp = Y  # box (axis) order
        self.Y = Y[:, inv]  # group order
        self.value = co_y + np.where(sel, Wf, 0.0)
        self.sel = sel
        self.levels = levels
        self.ok = True

    def floats(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, Y as floats, values) of the vectors some split covers (``sel``), made once
        and shared by every pricer over the whole table and by ``rack_dual_term``."""
        if "_floats" not in self.__dict__:
            idx = np.flatnonzero(self.sel)
            self._floats = (idx, self.Y[idx].astype(np.float64), self.value[idx])
        return self._floats

    def max_minus(self, mu) -> float:
        """max over the vectors some split covers of T(y) - mu . y (``rack_dual_term``), as the
        float64 scan of ``floats`` gives it, found by a float32 scan first (half the memory
        traffic: 100x11x10's 1.5 million rows, 16 ms instead of 28 ms a multiplier under cProfile,
        docs/benchmarks.md): its
        error is below margin = 2.5e-7 (K + 4) (max |T| + top . |mu|) (float32 rounding of T,
        of mu, of the K products and sums and of the difference, 6e-8 relative each, at least
        twice over), so the best row is among those within 2 margin of the float32 maximum,
        which are then scanned in float64 (branch net-twelve). Multipliers outside float32's
        range (or not finite) get the float64 scan itself."""
        mu = np.asarray(mu, dtype=np.float64)
        idx, Y, v = self.floats()
        if not len(v):
            return -math.inf
        if "_floats32" not in self.__dict__:
            self._floats32 = (Y.astype(np.float32), v.astype(np.float32), float(np.abs(v).max()))
        Y32, v32, vmax = self._floats32
        if not (np.isfinite(mu).all() and float(np.abs(mu).max(initial=0.0)) < 1e30):
            vals = v - Y @ mu  # out of float32's range: the float64 scan itself
            return self._argmax_kept(vals, np.arange(len(vals)))
        approx = v32 - Y32 @ mu.astype(np.float32)
        margin = 2.5e-7 * (self.K + 4) * (vmax + float(self.top().astype(np.float64) @ np.abs(mu))) + 1e-12
        cand = np.flatnonzero(approx >= float(approx.max()) - 2 * margin)
        return self._argmax_kept(v[cand] - Y[cand] @ mu, cand)

    def _argmax_kept(self, vals: np.ndarray, rows: np.ndarray) -> float:
        """max(vals), keeping its row (of ``floats``) for ``max_minus_lower``."""
        i = int(np.argmax(vals))
        kept = self.__dict__.setdefault("_argmax_rows", {})
        kept.setdefault(int(rows[i]), None)
        return float(vals[i])

    def max_minus_lower(self, mu) -> float:
        """A lower bound on ``max_minus(mu)``: the same maximum over the rows that were the
        maximum for an earlier multiplier (-inf before any). The two-rack search asks it first:
        a multiplier that cannot tighten a split's bound even with this value is not worth the
        scan of the whole table (branch net-twelve-2: at 100x12x10, 111 of 4,994 multiplier
        updates tightened a split)."""
        kept = self.__dict__.get("_argmax_rows")
        if not kept:
            return -math.inf
        rows = np.fromiter(kept, dtype=np.int64, count=len(kept))
        _, Y, v = self.floats()
        return float(np.max(v[rows] - Y[rows] @ np.asarray(mu, dtype=np.float64)))

    def part_codes(self) -> list[tuple[list[int], list[int], np.ndarray]] | None:
        """The counts of every row as a few small mixed-radix numbers, made once: consecutive
        groups joined while the product of their radices (largest count + 1) stays within
        2^16, each part's numbers a uint16 array over the rows (100x12x10: 3 parts, 6 bytes a
        row); None when one group alone needs more. ``sub_rc`` prices a rack subproblem's rows
        from them without a float copy of their counts."""
        if "_parts" not in self.__dict__:
            rad = [int(r) + 1 for r in self.top()]
            groups: list[list[int]] = [[]]
            prod = 1
            for k in range(self.K):
                if groups[-1] and prod * rad[k] > 1 << 16:
                    groups.append([])
                    prod = 1
                groups[-1].append(k)
                prod *= rad[k]
            self._parts = None
            if all(math.prod(rad[k] for k in g) <= 1 << 16 for g in groups):
                YT = self.columns()
                H = np.empty((len(groups), len(self.Y)), dtype=np.uint16)  # one row a part
                parts = []
                for p, g in enumerate(groups):
                    h = np.zeros(len(self.Y), dtype=np.int32)
                    m = 1
                    for k in g:
                        h += YT[k].astype(np.int32) * m
                        m *= rad[k]
                    H[p] = h
                    parts.append((g, [rad[k] for k in g], H[p]))
                self._parts = parts
                sizes = [math.prod(rad[k] for k in g) for g in groups]
                # each part's code -> its groups' counts (``TablePricer.counts``)
                self._digits = np.zeros((len(groups), max(sizes), max(len(g) for g in groups)),
                                        dtype=np.uint8 if max(rad) <= 256 else np.uint16)
                for p, g in enumerate(groups):
                    rest = np.arange(sizes[p])
                    for a, k in enumerate(g):
                        self._digits[p, :sizes[p], a] = rest % rad[k]
                        rest //= rad[k]
                self._sum_layout = (H, np.array([k for g in groups for k in g], dtype=np.int64),
                                    np.array([rad[k] for g in groups for k in g], dtype=np.int64),
                                    np.cumsum([0] + [len(g) for g in groups]).astype(np.int64),
                                    np.cumsum([0] + sizes).astype(np.int64))
        return self._parts

    def sub_rc(self, pi: np.ndarray, rows: np.ndarray, val: np.ndarray, conv: float,
               phase1: bool, codes: np.ndarray | None = None) -> np.ndarray:
        """The reduced costs val - Y[rows] pi - conv (phase 1: 0 - Y[rows] pi - conv) of a rack
        subproblem's rows: each part's sums pi . y over its radix box tabulated once (at most
        65,536 of them, ``_kernels.part_sums``) and looked up row by row in one compiled pass
        (``_kernels.sub_rc``) over ``codes``, the rows' part codes (one row of them per row, as
        ``TablePricer`` keeps them; None: gathered here); no float copy of Y[rows]. Equal to the
        float64 product up to rounding (the tests hold it bit for bit to session 15's numpy
        look-ups). Without part codes, that product."""
        if self.part_codes() is None:
            base = np.zeros(len(rows)) if phase1 else val
            return base - self.Y[rows].astype(np.float64) @ pi - conv
        H, gflat, rflat, gstarts, starts = self._sum_layout
        if codes is None:
            codes = np.ascontiguousarray(H[:, rows].T)
        S = K_.part_sums(np.asarray(pi, dtype=np.float64), gflat, rflat, gstarts, starts)
        return K_.sub_rc(val, codes, S, starts, float(conv), bool(phase1))

    def columns(self) -> np.ndarray:
        """The counts by group as contiguous rows (K x vectors; uint8 where every count fits):
        a rack subproblem's y <= z test reads one group's counts at a time, and a column of
        the row-major ``Y`` is strided (100x12x10: 3.4 ms a subproblem over 2.9 million rows,
        2,600 subproblems). Made in ``__init__``, before the DP, which reads it too."""
        return self._YT

    def zero_index(self) -> tuple | None:
        """(order, starts, packed, counts, values, codes) of the covered rows by zero pattern
        (bit k: y_k = 0, group order), made once: ``order`` the rows sorted by pattern (stable:
        ascending rows within one), ``starts[b]`` .. ``starts[b + 1]`` the positions of pattern
        b, and in that order each row's counts packed with a guard bit a field as the DP's scan
        packs them (``_pack``, box order; empty where they do not fit 62 bits, and ``counts``,
        the counts a row per row, instead): for a bound b, ((b packed | guards) - y packed) &
        guards == guards iff y <= b, no field borrowing from the next; its value and its part codes (a row per row; an empty
        array without part codes). A bound y <= z with z_k = 0 on the groups of Z keeps only the
        rows of the patterns that contain Z (``TablePricer``); held in this order, a rack
        subproblem's rows are read from a few blocks, not from all over the table (session 21:
        the gathers from the whole table were most of a subproblem's set-up). None past 16
        groups (the starts would hold 2^K + 1 entries)."""
        if self.K > 16:
            return None
        if "_zidx" not in self.__dict__:
            YT = self.columns()
            rows = np.flatnonzero(self.sel)
            zm = np.zeros(len(rows), dtype=np.int64)
            for k in range(self.K):
                zm |= (YT[k][rows] == 0).astype(np.int64) << k
            by = np.argsort(zm, kind="stable")
            order = rows[by].astype(np.int32)
            starts = np.searchsorted(zm[by], np.arange((1 << self.K) + 1))
            if self._pack is not None:  # the counts packed as the DP's scan packs them
                packed = self.Yp[order].astype(np.int64) @ self._pack[0]
                counts = np.zeros((0, self.K), dtype=YT.dtype)
            else:
                packed = np.zeros(0, dtype=np.int64)
                counts = np.ascontiguousarray(YT[:, order].T)
            codes = (np.ascontiguousarray(self._sum_layout[0][:, order].T) if self.part_codes() is not None
                     else np.zeros((0, 0), dtype=np.uint16))
            self._zidx = (order, starts, packed, counts, self.value[order], codes)
        return self._zidx

    def zero_rows(self, zero: int, fewer_than: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The covered rows that are 0 on every group of the bit set ``zero`` (those of the
        zero patterns that contain it, ``zero_index``), ascending, and their positions in the
        index's order; None when they are not fewer than ``fewer_than`` (a prefix scan is then
        cheaper) or there is no index.
        Kept per set in a cache of at most ``ZERO_ROWS_BYTES`` (least recently used out): a
        two-rack search's subproblems share few sets (100x12x10: 2,870 subproblems, 148 sets,
        one of them 1,290 times), and each used to gather, mask and sort them again (session
        21)."""
        cache = self.__dict__.setdefault("_zrows", {})
        if zero in cache:
            got = cache.pop(zero)
            cache[zero] = got  # most recently used last
            return got if len(got[0]) < fewer_than else None
        zi = self.zero_index()
        if zi is None:
            return None
        order, starts = zi[0], zi[1]
        ms = np.arange(len(starts) - 1)
        q = ms[(ms & zero) == zero]
        lo, n = starts[q], starts[q + 1] - starts[q]
        total = int(n.sum())
        if total >= fewer_than:
            return None
        # the positions of those rows in the zero-pattern order (ranges, ascending)
        pos = np.arange(total, dtype=np.int64) + np.repeat(lo - (np.cumsum(n) - n), n)
        by_row = np.argsort(order[pos], kind="stable")
        pos = pos[by_row].astype(np.int32)
        got = (order[pos], pos)
        size = 8 * total
        if size <= ZERO_ROWS_BYTES:
            held = sum(8 * len(r) for r, _ in cache.values())
            while cache and held + size > ZERO_ROWS_BYTES:
                r, _ = cache.pop(next(iter(cache)))
                held -= 8 * len(r)
            cache[zero] = got
        return got

    def row_bytes(self) -> int:
        """The bytes of this (built) table's rows, by ``table_row_bytes``: its levels are
        W_0..W_slots."""
        return len(self.Y) * table_row_bytes(self.K, len(self.levels) - 1)

    def top(self) -> np.ndarray:
        """The largest count of each group over the table's vectors (computed once): a bound
        y <= z cuts the table only on the axes where z is below it."""
        if self._top is None:
            self._top = self.Y.max(axis=0) if len(self.Y) else np.zeros(self.K, dtype=np.int64)
        return self._top

    def _row(self, c: np.ndarray) -> np.ndarray:
        """Rows of the feasible vectors with codes ``c`` (-1 where none)."""
        if self._lut is not None:
            return self._lut[c]
        return lookup(self.codes, c)

    def _dense_levels(self, radix, codes, nw, deadline) -> list[np.ndarray] | None:
        """W_0..W_nw on the dense box (flattened), -inf where no split covers."""
        K, P, co_p = self.K, self.P, self.co_p
        feas = np.zeros(math.prod(radix), dtype=bool)
        feas[codes] = True
        W = np.full(tuple(radix), NEG)
        W[(0,) * K] = 0.0  # W_0: the empty node
        levels = [W.reshape(-1)]
        for m in range(1, nw + 1):
            Wn = W.copy()
            for j in range(len(P)):
                if j % 128 == 0 and deadline is not None and time.monotonic() > deadline:
                    return None
                # some worker of an optimal split of y holds y's first group f; take it last:
                # content p (first group f) only extends vectors that are 0 before axis f
                p = P[j]
                f = int(np.flatnonzero(p)[0])
                src = tuple(slice(0, 1) if k < f else slice(0, radix[k] - int(p[k])) for k in range(K))
                tgt = tuple(slice(0, 1) if k < f else slice(int(p[k]), None) for k in range(K))
                wt = Wn[tgt]
                np.maximum(wt, W[src] + co_p[j], out=wt)
            Wn.reshape(-1)[~feas] = NEG
            W = Wn
            levels.append(W.reshape(-1))
        return levels

    def _sparse_levels(self, Y, codes, nw, deadline, pair_limit, budget, pair_rate,
                       threads: int = 1) -> list[np.ndarray] | None:
        """W_0..W_nw on the feasible rows only (class docstring), -inf where no split covers;
        None when the estimated time (``est_seconds``: the pairs, counted on a sample of 512
        contents, at ``pair_rate`` a second for the first level and ``LATER_LEVEL_COST`` of it
        for each later one on the stored pairs, plus a per-content cost) exceeds ``budget``
        seconds, or when the build passes ``deadline`` (``self.refused`` says which).

        Merge-free splits (``self.merge``, ``merge_free_heaps``): in a split with no two
        workers whose heaps fit one worker, every two workers' heaps sum to more than the max
        heap h, so a split of y into m >= 2 such workers needs H(y) > m h / 2 (sum over the
        pairs), and its m - 1 other workers (the worker holding y's first group is taken
        last) need H(y - p) > (m - 1) h / 2 when m - 1 >= 2, and H(y - p) <= (m - 1) h
        always. A pair (y, p) is used at level m only within those bounds (a small slack
        keeps more pairs, never fewer). Every value the DP forms is still a real split, and
        the best merge-free split, which is a best split, is formed: W is unchanged.

        ``threads`` > 1: the rows are cut into that many ranges of about equal estimated work
        (``_row_ranges``) and one thread (numpy releases the GIL in these scans, gathers and
        scatters) finds the pairs and updates W of the targets in its own range: a content's
        targets in a range are those of its scan limited to the range, and the threads write
        disjoint rows of W_m while reading only W_{m-1}, so W is the same as with one."""
        K, P, co_p, mult = self.K, self.P, self.co_p, self.mult
        N = len(codes)
        first = np.argmax(P > 0, axis=1)
        # rows 0 on the axes before f: a prefix of the sorted codes
        prefix = [N] + [int(np.searchsorted(codes, mult[f - 1])) for f in range(1, K)]
        # within it, the rows with y_f >= p_f start at code p_f mult_f (axis f is the most
        # significant there): only [start_j, prefix_f) is scanned (100x10x10: 1.2e9 rows
        # scanned instead of 2.7e9)
        start = np.searchsorted(codes, P[np.arange(len(P)), first] * mult[first])
        # y >= p on every axis at once (``_pack``, made with P in ``__init__``)
        if self._pack is not None:
            shift, guard, Pg = self._pack
            Yg = (Y.astype(np.int64) @ shift) | guard
        else:
            Yg = None
            Y16 = Y.astype(np.int16)
        top = None
        levels_used = max(nw - 1, 1)
        if self.heap is not None:
            hmax = self.merge[1]
            tol = 1e-6 * max(1.0, hmax)
            hy = Y.astype(np.float64) @ self.heap
            hp = P.astype(np.float64) @ self.heap
            # top[y] = the most workers of a merge-free split of y: the largest m with
            # H(y) > m h / 2 (less the slack); 1 or less: one worker at most
            top = np.minimum(np.ceil(2.0 * (hy + tol) / hmax) - 1, nw).astype(np.int8)
            # the least workers y - p needs: H(y - p) <= (m - 1) h
            need = (np.ceil((hy - tol) / hmax)).astype(np.int8)
            levels_used = max(1, int(top.max()) - 1)
            hi_rest = (nw - 1) * hmax + tol

        def targets(j: int, lo: int = 0, hi: int = N) -> np.ndarray:
            f = int(first[j])
            L, S = min(prefix[f], hi), max(int(start[j]), lo)
            if S >= L:
                return np.zeros(0, dtype=np.int64)
            if Yg is not None:
                tgt = S + np.flatnonzero(((Yg[S:L] - Pg[j]) & guard) == guard)
            else:
                tgt = S + np.flatnonzero((Y16[S:L, f:] >= P[j, f:].astype(np.int16)).all(axis=1))
            if top is not None:  # some level m >= 2 can use y, and y - p fits nw - 1 workers
                tgt = tgt[(top[tgt] >= 2) & (hy[tgt] <= hi_rest + hp[j])]
            return tgt

        threads = max(1, min(int(threads), N))
        bounds = [0, N]
        if budget is not None or threads > 1:
            # the work is the pairs x levels: count the pairs of a sample of contents first (512:
            # 100x11x10's 1.22e8 pairs were estimated at 0.78-1.49e8 by 12 samples of 64, at
            # 1.10-1.35e8 by 12 of 512, which cost about 0.3 s more there)
            rng = np.random.default_rng(0)
            sample = rng.choice(len(P), size=min(len(P), 512), replace=False)
            found = []
            for i, j in enumerate(sample):
                if i % 64 == 63 and deadline is not None and time.monotonic() > deadline:
                    self.refused = "its sample of pairs passed the deadline"
                    return None
                found.append(targets(int(j)))
            self.est_pairs = sum(len(t) for t in found) * len(P) / len(sample)
            if threads > 1:
                bounds = _row_ranges(N, threads, found, start[sample],
                                     np.array(prefix)[first[sample]])
            del found
        if budget is not None:
            # the levels after the first (W_1 needs no pairs, below); pairs are looked up by
            # gathers (dec, below) when there is no look-up table, not binary searches; each
            # content and level also costs a few numpy calls (about 2e-5 s); the pairs past
            # ``pair_limit`` (those of the contents after the first ones that fill it) are found
            # again at every level, about as much work again for them (100x11x10, 1.22e8 pairs:
            # 41 s of CPU all found again, 10.6 s all stored)
            # with threads, the measured speed-up of the whole build (100x12x10: 42.9 s with
            # one thread, 26.1 s with two, 2 cores)
            # the pairs past pair_limit cost a first level's work again at each later level
            stored_est = min(self.est_pairs, float(pair_limit))
            over = max(0.0, self.est_pairs - pair_limit)
            first_s = self.est_pairs / pair_rate + 2e-5 * len(P)
            later_s = (levels_used - 1) * ((LATER_LEVEL_COST * stored_est + over) / pair_rate + 2e-5 * len(P))
            speedup = 1.0 if threads == 1 else min(float(threads), 1.6)
            self.est_seconds = (first_s + later_s) / speedup
            if self.est_seconds > budget:
                self.refused = f"estimated {self.est_seconds:.1f} s, over its budget of {budget:.1f} s"
                return None
        dec = None
        if self._lut is None:
            # dec[k][row of y] = row of y - e_k (-1 where y_k = 0): y - p is reached from y by
            # |p| gathers (F is downward closed), instead of a binary search of its code
            # (branch net-ls; 100x10x10: 88 million binary searches were 7 of the 18 s)
            dec = np.full((K, N), -1, dtype=np.int32)
            for k in range(K):
                have = np.flatnonzero(Y[:, k] > 0)
                dec[k, have] = lookup(codes, codes[have] - mult[k])
        steps = [np.repeat(np.arange(K), P[j]) for j in range(len(P))]  # the unit steps of content j

        # a content p's parents: p - e_k (k from p's first axis f on, keeping f first); every
        # target y of p (y >= p, 0 before f) is a target of each parent, so p's targets are
        # the parent's with y_k >= p_k, and y - p = (y - parent) - e_k: one gather each
        # instead of a scan of p's rows and |p| gathers (the contents are downward closed:
        # their limits are monotone). Not with the merge-free filter, which keeps other
        # targets for each content.
        parents: list[list[tuple[int, int]]] = [[] for _ in range(len(P))]
        if top is None and len(P):
            by_code = np.argsort(self.pcodes, kind="stable")
            sorted_codes = self.pcodes[by_code]
            for k in range(K):
                ok = (P[:, k] > 0) & ((first != k) | (P[:, k] > 1))
                js = np.flatnonzero(ok)
                at = lookup(sorted_codes, self.pcodes[js] - mult[k])
                for j, a in zip(js.tolist(), at.tolist()):
                    if a >= 0:
                        parents[j].append((int(by_code[a]), k))
        cols = self._YT  # group order: box axis k is row perm[k]

        def pairs_of(j: int, lo_row: int = 0, hi_row: int = N, mine: dict | None = None,
                     l2: tuple | None = None) -> tuple:
            """Content j's pairs (targets, sources, and with the merge-free levels each pair's
            first and last level) and whether level 2 was applied to them on the way (``l2``:
            (W_2, W_1, fin), found from a stored parent's pairs only)."""
            known = [] if mine is None else [(len(mine[q][0]), q, k) for q, k in parents[j] if q in mine]
            if known:
                _, q, k = min(known)
                ptgt, psrc = mine[q][0], mine[q][1]
                if dec is None:
                    keep = cols[self.perm[k]][ptgt] >= P[j, k]
                    tgt = ptgt[keep]
                    src = self._row(codes[tgt] - self.pcodes[j]).astype(np.int32)
                    return tgt, src, None, None, False
                W2_, W1_, fin_ = (NONE_F, NONE_F, NONE_B) if l2 is None else l2
                tgt, src = K_.child_pairs(ptgt, psrc, cols[self.perm[k]], int(P[j, k]), dec[k],
                                          W2_, W1_, float(co_p[j]), NONE_B if fin_ is None else fin_)
                return tgt, src, None, None, l2 is not None
            tgt = targets(j, lo_row, hi_row)
            if dec is None:
                src = self._row(codes[tgt] - self.pcodes[j])
            else:
                src = tgt
                for k in steps[j]:
                    src = dec[k][src]
            if top is None:
                return tgt.astype(np.int32), src.astype(np.int32), None, None, False
            # levels lo..hi: lo from H(y - p) <= (m - 1) h, hi from H(y) > m h / 2 and, for
            # m >= 3, H(y - p) > (m - 1) h / 2
            lo = np.maximum(need[src] + 1, 2)
            hi = np.minimum(top[tgt], np.maximum(top[src] + 1, 2))
            keep = lo <= hi
            return (tgt[keep].astype(np.int32), src[keep].astype(np.int32),
                    lo[keep].astype(np.int8), hi[keep].astype(np.int8), False)

        W = np.full(N, NEG)
        W[0] = 0.0  # the empty node has code 0, the smallest
        levels = [W]
        # W_1: W_0 is finite at y = 0 only, so W_1 = W_0 raised to co(p) at each content p
        W1 = W.copy()
        prow = self._row(self.pcodes)
        np.maximum.at(W1, prow, co_p)
        T = len(bounds) - 1
        # per row range: the stored pairs (content -> its pairs with targets in the range), kept
        # while the ranges' stored pairs together stay within pair_limit; past it ("full") a
        # range's later contents' pairs are found again at every level (from a stored parent's
        # where there is one)
        pairs: list[dict[int, tuple]] = [{} for _ in range(T)]
        # level 1 finds the contents' pairs parents first (ascending code: a parent's is less)
        code_order = np.argsort(self.pcodes, kind="stable").tolist()
        full = [False] * T
        stored = [0]
        lock = threading.Lock()

        def update(j: int, m: int, tgt, src, lo, hi, Wn: np.ndarray, Wp: np.ndarray,
                   fin: np.ndarray | None) -> None:
            """W_m >= W_{m-1}(y - p_j) + co(p_j) on content j's pairs (targets of one range) whose
            source has ``fin`` (every pair when None): one compiled pass (``_kernels.maxplus``)."""
            if lo is not None:  # the merge-free levels: the pairs of level m
                sel = (lo <= m) & (hi >= m)
                tgt, src = tgt[sel], src[sel]
            K_.maxplus(Wn, Wp, tgt, src, float(co_p[j]), NONE_B if fin is None else fin)

        def level(t: int, m: int, Wn: np.ndarray | None, fin: np.ndarray | None,
                  W2: np.ndarray | None = None, fin2: np.ndarray | None = None) -> bool:
            """Level m on the targets of range t (m = 1: find and store the pairs, and apply
            level 2 to them at once into ``W2`` when given); False past the deadline. ``fin``:
            the rows of W_{m-1} that can raise a target (a pair from another adds nothing),
            when few rows are: the others' pairs are skipped."""
            lo_row, hi_row = bounds[t], bounds[t + 1]
            mine = pairs[t]
            for i, j in enumerate(code_order if m == 1 else range(len(P))):
                if i % 64 == 0 and deadline is not None and time.monotonic() > deadline:
                    self.refused = "its build passed its deadline"
                    return False
                done2 = False
                if m > 1 and j in mine:
                    tgt, src, lo, hi = mine[j]
                else:
                    tgt, src, lo, hi, done2 = pairs_of(j, lo_row, hi_row, mine, None if W2 is None else (W2, W1, fin2))
                    if m == 1 and not full[t]:
                        with lock:
                            stored[0] += len(tgt)
                            over = stored[0] > pair_limit
                        if over:
                            full[t] = True  # the pairs kept so far stay; the rest are found again
                        else:
                            mine[j] = (tgt, src, lo, hi)
                if m > 1:
                    update(j, m, tgt, src, lo, hi, Wn, W, fin)
                elif W2 is not None and not done2:  # level 2 while the pairs are at hand (W_1 is known)
                    update(j, 2, tgt, src, lo, hi, W2, W1, fin2)
            return True

        def sources(m: int, Wp: np.ndarray, Wpp: np.ndarray) -> tuple[np.ndarray | None, int]:
            """The rows of W_{m-1} whose pairs can raise some W_m (None for all, when more than
            FIN_SHARE of the rows are) and how many they are. Always only the finite ones (W_1 is finite on the
            contents' rows only: 100x12x10, 22,181 of 2.9 million rows). Without the merge-free
            levels, from level 3 on only the rows that W_{m-1} raised above W_{m-2}: a pair from
            a row with W_{m-1}(y - p) = W_{m-2}(y - p) gives co(p) + W_{m-2}(y - p) <= W_{m-1}(y)
            (that pair is a split of y into at most m - 1 workers), so it cannot raise W_m(y)
            above W_{m-1}(y) (session 21; 100x12x10: 1.24 million of the 2.9 million rows
            at level 4, which then raises 58). With the merge-free levels a pair may be used at
            level m and not at m - 1, so there only the finite ones."""
            if m >= 3 and top is None:
                fin = Wp > Wpp
            else:
                fin = np.isfinite(Wp)
            # below half the rows, the bool gather and the compressions cost less than the
            # skipped pairs' gathers and scatter
            n = int(np.count_nonzero(fin))
            return (None if n > FIN_SHARE * N else fin), n

        t_start = time.monotonic()
        pool = ThreadPoolExecutor(T) if T > 1 else None
        try:
            for m in range(1, nw + 1):
                if m > 1 and top is not None and m > levels_used + 1:
                    levels.append(W)  # no merge-free split has m workers: W_m = W_{m-1}
                    continue
                if m == 2:
                    W = W2  # found with the pairs at level 1
                    levels.append(W)
                    continue
                if m == 1:
                    Wn, fin = None, None
                    W2 = W1.copy() if nw >= 2 else None
                    fin2 = sources(2, W1, W)[0] if nw >= 2 else None
                else:
                    fin, n = sources(m, W, levels[-2])
                    if n == 0:
                        # no row can raise any W_m (100x9x10: W_3 = W_2, so levels 3 and 4
                        # scan no pair): W_m = W_{m-1}
                        levels.append(W)
                        continue
                    Wn = W.copy()
                    W2 = fin2 = None
                if pool is None:
                    done = [level(0, m, Wn, fin, W2, fin2)]
                else:
                    done = list(pool.map(level, range(T), [m] * T, [Wn] * T, [fin] * T, [W2] * T, [fin2] * T))
                if not all(done):
                    return None
                W = W1 if m == 1 else Wn
                levels.append(W)
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self.dp_s = time.monotonic() - t_start
        return levels

    def content(self, j: int) -> tuple:
        """Worker content j as sorted (group, count) pairs (the form of ``worker_patterns``)."""
        return tuple(sorted((int(self.perm[a]), int(q)) for a, q in enumerate(self.P[j]) if q))

    def _level_at(self, m: int, c: int) -> float:
        lv = self.levels[m]
        return float(lv[c] if self.dense else lv[self._row(np.array([c]))[0]])

    def split(self, i: int) -> tuple:
        """Best worker contents of vector i (tuple of sorted (group, count) tuples), recovered
        from the levels of W: at level m, a content p with W_{m-1}(y - p) + co(p) = W_m(y).
        Memoised: the rack search prices the same vectors in many rack subproblems."""
        memo = self.__dict__.setdefault("_splits", {})
        if i not in memo:
            memo[i] = self._split(i)
        return memo[i]

    def _split(self, i: int) -> tuple:
        out = []
        y = self.Yp[i].astype(np.int64)
        m = len(self.levels) - 1
        while y.any():
            c = int(y @ self.mult)
            target = self._level_at(m, c)
            if m > 1 and self._level_at(m - 1, c) >= target - 1e-9:
                m -= 1
                continue
            if self._pack is not None:  # the contents within y (100x12x10: 30 us, not 0.5 ms)
                shift, guard, Pg = self._pack
                fits = np.flatnonzero((((int(y @ shift) | guard) - Pg) & guard) == guard)
            else:
                fits = np.flatnonzero((self.P <= y).all(axis=1))
            rest = c - self.pcodes[fits]
            prev_lv = self.levels[m - 1]
            prev = (prev_lv[rest] if self.dense else prev_lv[self._row(rest)]) + self.co_p[fits]
            j = int(fits[np.argmax(prev)])
            assert prev.max() >= target - 1e-9
            out.append(self.content(j))
            y = y - self.P[j]
            m -= 1
        return tuple(sorted(out, reverse=True))


class _TableColumns:
    """Pricing over a table of precomputed contents: subclasses give ``rc(duals, phase1)`` (the
    reduced cost of every row) and ``column(r)``."""

    def best(self, duals: dict, want: int, phase1: bool = False, rc: np.ndarray | None = None) -> tuple[float, list[Column]]:
        """The ``want`` rows of highest reduced cost as columns (``rc``: those reduced costs, when
        the caller has them already under these duals)."""
        if rc is None:
            rc = self.rc(duals, phase1)
        i = int(np.argmax(rc))
        if rc[i] <= 1e-7:
            # no column the callers would add (they take reduced costs above 1e-7 max(1, |value|)):
            # the usual answer once a rack subproblem's seeds are in; the best one alone, without
            # the partition and the other columns' splits
            return float(rc[i]), [self.column(i)]
        top = np.argpartition(-rc, want - 1)[:want] if want < len(rc) else np.arange(len(rc))
        top = top[np.argsort(-rc[top], kind="stable")]
        return float(rc[top[0]]), [self.column(int(r)) for r in top]

    def at_least(self, duals: dict, threshold: float, cap: int) -> list[Column] | None:
        rc = self.rc(duals)
        hit = np.flatnonzero(rc >= threshold)
        if len(hit) > cap:
            return None
        return [self.column(int(r)) for r in hit]


class TablePricer(_TableColumns):
    """Exact pricing and enumeration of one network node family from a :class:`NodeTable`,
    optionally restricted to y <= ybound (a rack subproblem)."""

    def __init__(self, table: NodeTable, fi: int, conv, rowkey, ybound: dict[int, int] | None = None):
        self.t = table
        self.fi, self.conv, self.rowkey = fi, conv, rowkey
        self.Yf = None  # the rows' counts as floats: the whole table's shared copy; None in a subproblem
        self.codes = None  # a subproblem's rows' part codes, a row per row (``NodeTable.sub_rc``)
        self.scan = "whole"  # how the rows were found (tests)
        if ybound is None:
            self.idx, self.Yf, self.val = table.floats()
            self.whole = True
            return
        self.whole = False
        top = table.top()
        YT = table.columns()
        # the rows are sorted by code, whose most significant axis is box axis 0: the rows
        # within the bound on it are a prefix, and only that prefix is scanned
        g = int(table.perm[0])
        end = len(table.codes)
        if ybound.get(g, 0) < top[g]:
            end = int(np.searchsorted(table.codes, (ybound.get(g, 0) + 1) * int(table.mult[0])))
        # or only the rows 0 on every group the bound holds at 0 (``zero_index``), when fewer:
        # rack contents often leave whole groups to the other rack (100x12x10's two-rack search:
        # 118,000 such rows a subproblem on average, against a prefix of 2.5 million)
        zero = sum(1 << k for k in range(table.K) if ybound.get(k, 0) == 0)
        got = table.zero_rows(zero, end) if zero else None
        if got is not None:
            rows, pos = got
            _, _, packed, counts, values, codes = table.zero_index()
            b = np.array([min(ybound.get(k, 0), int(top[k])) for k in range(table.K)], dtype=np.int64)
            if len(packed):  # the bound packed in box order, with the guards
                shift, guard, _ = table._pack
                args = (int(b[table.perm] @ shift) | guard, guard, np.zeros(0, dtype=np.int64))
            else:
                args = (0, 0, b)
            # ascending, as the rows; their values and part codes from the index's order
            self.idx, self.val, codes = K_.rows_within(rows, pos, packed, *args, counts, values, codes)
            self.codes = codes if codes.shape[1] else None
            self.scan = "zero pattern"
            return
        mask = table.sel[:end].copy()
        for k in range(table.K):  # one column at a time, only where the bound cuts
            if k != g and ybound.get(k, 0) < top[k]:
                mask &= YT[k, :end] <= ybound.get(k, 0)
        self.idx = np.flatnonzero(mask).astype(np.int32)
        self.val = table.value[self.idx]
        if table.part_codes() is not None:
            self.codes = np.ascontiguousarray(table._sum_layout[0][:, self.idx].T)
        self.scan = "prefix"

    def rc(self, duals: dict, phase1: bool = False) -> np.ndarray:
        pi = np.array([duals.get(self.rowkey(k), 0.0) for k in range(self.t.K)])
        # the whole table: its shared float copy (one matrix product, faster than the parts'
        # look-ups over every row); a rack subproblem: the table's part codes, no copy (so a
        # solved subproblem the two-rack search keeps holds no float rows: before session 15
        # each made one and dropped it when kept, 100x11x10's 434 kept ones a 5.4 GB peak with them)
        if not self.whole:  # the table's part codes, in one compiled pass
            return self.t.sub_rc(pi, self.idx, self.val, duals.get(self.conv, 0.0), phase1, self.codes)
        base = np.zeros(len(self.idx)) if phase1 else self.val
        return base - self.Yf @ pi - duals.get(self.conv, 0.0)

    def counts(self) -> np.ndarray:
        """The rows' counts (rows x K, int64), decoded from their part codes when the pricer
        holds them (read in order, not gathered from the whole table)."""
        if self.codes is not None:
            _, gflat, _, gstarts, _ = self.t._sum_layout
            return K_.part_counts(self.codes, self.t._digits, gflat, gstarts, self.t.K)
        return self.t.Y[self.idx].astype(np.int64)

    def column(self, r: int) -> Column:
        i = int(self.idx[r])
        y = self.t.Y[i]
        contents = self.t.split(i)
        coefs = {self.rowkey(k): float(q) for k, q in enumerate(y) if q}
        coefs[self.conv] = 1.0
        return Column(self.fi, float(self.t.value[i]), coefs, ("x", contents), ("x", contents))



def table_sig(pm, ni: int) -> tuple:
    """Nodes with equal limits, slots, site and pin membership have one table (any rack)."""
    n = pm.nodes[ni]
    pins = [set(c.nodes) for _, t in pm.topos for c in t.components if c.nodes is not None]
    return (n.cpu, n.memory_mb, len(n.slots), tuple(sorted(n.resources.items())), n.site, tuple(n.id in p for p in pins))


def table_threads(threads: int | None) -> int:
    """The threads of a node table's DP: the solve's (None: 2, CP-SAT's default workers), at
    most the CPUs this process may use."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(2 if threads is None else int(threads), cpus))


def node_table(pm, nodes: list[int], edges, deadline: float | None, threads: int | None = None) -> NodeTable | None:
    """The table of a node class (shared by classes of equal capacity in other racks), or None
    when it would be too big: its estimated build time (sampled pairs x levels, see
    :class:`NodeTable`, divided by its threads' speed-up) over ``TABLE_SHARE`` = 60 % of the
    time left (50 % before session 12, 30 % before branch net-seeds, which refused 100x10x10 seed 1's table: estimated 19 s of the 45 s left at a 60 s
    limit, built in 24 s), more count vectors than what ``TABLE_BYTES`` still holds after the
    solve's tables built before it (``table_row_bytes``; a fixed 2 million a table before branch
    net-twelve-2), or the worker contents not enumerable; or the build passes ``TABLE_STOP`` =
    85 % of the time left (65 % before session 17, half before session 12; then it is abandoned). ``threads``: the solve's
    threads, the DP's row ranges (``table_threads``, ``NodeTable``)."""
    ni = nodes[0]
    sig = table_sig(pm, ni)
    cache = pm.__dict__.setdefault("_node_tables", {})
    if sig in cache:
        return cache[sig]
    left = math.inf if deadline is None else deadline - time.monotonic()
    # one budget for the rows of all the solve's node tables (they stay for the whole solve)
    used = sum(t.row_bytes() for t in cache.values() if t is not None)
    nw = len(pm.nodes[ni].slots)
    limit = max(0, TABLE_BYTES - used) // table_row_bytes(len(pm.groups), nw)
    t0 = time.monotonic()
    t = NodeTable(pm, ni, edges, limit=limit,
                  deadline=None if deadline is None else time.monotonic() + TABLE_STOP * left,
                  budget=None if deadline is None else TABLE_SHARE * left,
                  threads=table_threads(threads))
    table = t if t.ok else None
    cache[sig] = table
    # what each build did, for the solve's details (``build_network``: "node_tables")
    note = {"node": int(ni), "built": t.ok, "s": round(time.monotonic() - t0, 2)}
    if t.est_seconds is not None:
        note["estimated_s"] = round(t.est_seconds, 2)
    if table is not None:
        note.update(rows=int(len(t.Y)), dp_s=round(t.dp_s, 2))  # dp_s: what estimated_s estimates
    else:
        note["refused"] = t.refused or "not built"
    pm.__dict__.setdefault("_node_table_notes", []).append(note)
    return table


def rack_limits(pm, ri: int) -> tuple[list[int], list[int], int, int]:
    """Rack ri's limits on its contents z (one statement for the rack table, the CP-SAT rack
    pricer and the two-rack search): its nodes with slots, z_g <= cap_g = min(s_g, sum of the
    nodes' caps for g), and its total CPU and memory in thousandths, floored (demands are
    rounded to thousandths likewise)."""
    from ._rasmodel import node_kinds

    nodes = [ni for ni in range(len(pm.nodes)) if pm.node_rack[ni] == ri and pm.nodes[ni].slots]
    # a cap read once per node kind on the rack (node_kinds): largeCluster01's 32 calls read
    # 389 groups x 65,600 nodes' caps one by one, 3.7 s of an 8 s limit (session 35)
    here = set(nodes)
    kinds = [(nis[0], sum(1 for ni in nis if ni in here)) for nis in node_kinds(pm)]
    kinds = [(rep, n) for rep, n in kinds if n]
    caps = [min(g.size, sum(n * pm.node_cap(g, rep) for rep, n in kinds)) for g in pm.groups]
    cap_cpu = int(math.floor(sum(pm.nodes[ni].cpu for ni in nodes) * 1000 + 1e-6))
    cap_mem = int(math.floor(sum(pm.nodes[ni].memory_mb for ni in nodes) * 1000 + 1e-6))
    return nodes, caps, cap_cpu, cap_mem


class RackTable(_TableColumns):
    """Exact pricing and enumeration of a rack family (network, several racks) from every rack
    content z: z_g <= min(s_g, sum of the rack's node caps), the rack's total CPU and memory
    (the constraints of ``_rack_pricer``); value co(z). Built only when the box of contents is
    small (``box_limit``), else the CP-SAT rack pricer is used. The box is decoded from its
    mixed-radix codes in one pass (contents sorted by code c(z) = sum_g z_g mult_g, looked up by
    :meth:`rows`), and racks of equal node classes share one table."""

    def __init__(self, pm, ri: int, edges, fi: int, conv, box_limit: int = 4_000_000):
        G = pm.groups
        K = len(G)
        self.K, self.fi, self.conv, self.ri = K, fi, conv, ri
        self.ok = False
        _, caps, cap_cpu, cap_mem = rack_limits(pm, ri)
        key = (tuple(caps), cap_cpu, cap_mem)
        cache = pm.__dict__.setdefault("_rack_tables", {})
        if cache.get(key) is None and math.prod(c + 1 for c in caps) <= box_limit:
            cache[key] = self._contents(pm, caps, cap_cpu, cap_mem, edges, box_limit)
        if cache.get(key) is None:
            return
        self.Z, self.val, self.codes, self.mult, self.radix, self.Zf = cache[key]
        self.ok = True

    @staticmethod
    def _contents(pm, caps, cap_cpu, cap_mem, edges, box_limit, zf_limit=50_000_000):
        G = pm.groups
        K = len(G)
        radix = np.array(caps, dtype=np.int64) + 1
        box = int(np.prod(radix))
        if box > box_limit:
            return None
        mult = np.ones(K, dtype=np.int64)
        for k in range(K - 2, -1, -1):
            mult[k] = mult[k + 1] * radix[k + 1]
        # the box in code order, in chunks of the last axes j..K-1 (at most RACK_CHUNK codes): their
        # decoded block, CPU and memory are computed once; in each chunk the axes before j are
        # constant, so a chunk is one add, one compare and one gather. Only the contents within
        # the rack's CPU and memory are ever held, not the whole box.
        wide = cap_cpu >= 2**31 or cap_mem >= 2**31
        acc = np.int64 if wide else np.int32
        dcpu = np.array([int(round(g.comp.cpu * 1000)) for g in G], dtype=np.int64)
        dmem = np.array([int(round(g.comp.memory_mb * 1000)) for g in G], dtype=np.int64)
        zt = np.int8 if int(radix.max(initial=1)) <= 128 else np.int16
        j = K
        while j > 0 and int(np.prod(radix[j - 1:])) <= RACK_CHUNK:
            j -= 1
        inner = int(np.prod(radix[j:]))
        icode = np.arange(inner, dtype=np.int64)
        zin = np.stack([(icode // mult[k]) % radix[k] for k in range(j, K)], axis=1) if j < K else \
            np.zeros((1, 0), dtype=np.int64)
        icpu = (zin @ dcpu[j:]).astype(acc)
        imem = (zin @ dmem[j:]).astype(acc)
        # co(z) = sum_e w z_a z_b (a != b: no self-streams here) = inner part + prefix part +
        # the cross terms, linear in the inner block with weights from the prefix
        W = np.zeros((K, K))
        for (a, b), w in edges.items():
            W[a, b] += w
        zinf = zin.astype(np.float64)
        ival = np.einsum("ik,kl,il->i", zinf, W[j:, j:], zinf)
        zin = zin.astype(zt)

        def prefix(o: int) -> tuple[np.ndarray, int, int]:
            pre = np.array([(o * inner // int(mult[k])) % int(radix[k]) for k in range(j)], dtype=np.int64)
            return pre, int(pre @ dcpu[:j]), int(pre @ dmem[:j])

        def fits(pc: int, pmem: int) -> np.ndarray:
            return np.flatnonzero((icpu <= cap_cpu - pc) & (imem <= cap_mem - pmem))

        # two passes (count, then fill) so the table is allocated once, at its size
        count = 0
        for o in range(box // inner):
            _, pc, pmem = prefix(o)
            if pc <= cap_cpu and pmem <= cap_mem:
                count += int(np.count_nonzero((icpu <= cap_cpu - pc) & (imem <= cap_mem - pmem)))
        Z = np.empty((count, K), dtype=zt)
        codes = np.empty(count, dtype=np.int64)
        val = np.empty(count)
        at = 0
        for o in range(box // inner):
            pre, pc, pmem = prefix(o)
            if pc > cap_cpu or pmem > cap_mem:
                continue
            ok = fits(pc, pmem)
            end = at + len(ok)
            Z[at:end, :j] = pre
            Z[at:end, j:] = zin[ok]
            codes[at:end] = o * inner + icode[ok]
            pf = pre.astype(np.float64)
            cross = pf @ W[:j, j:] + W[j:, :j] @ pf
            val[at:end] = (ival + zinf @ cross)[ok] + float(pf @ W[:j, :j] @ pf)
            at = end
        Zf = Z.astype(np.float64) if Z.size <= zf_limit else None  # a float copy for fast pricing
        return Z, val, codes, mult, radix, Zf

    def rows(self, z: np.ndarray) -> np.ndarray:
        """Rows of contents ``z`` (one per line; -1 where z is not a rack content)."""
        c = np.asarray(z, dtype=np.int64) @ self.mult
        inbox = ((np.asarray(z) >= 0) & (np.asarray(z) < self.radix)).all(axis=1)
        return np.where(inbox, lookup(self.codes, c), -1)

    def dot(self, pi: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Z pi over all contents (or ``rows``), one column at a time (no float copy of Z)."""
        if rows is None and self.Zf is not None:
            return self.Zf @ pi
        Z = self.Z if rows is None else self.Z[rows]
        out = np.zeros(len(Z))
        for k in range(self.K):
            if pi[k] != 0.0:
                out += pi[k] * Z[:, k]
        return out

    def rc(self, duals: dict, phase1: bool = False) -> np.ndarray:
        pi = np.array([duals.get(("cover", k), 0.0) - duals.get(("link", self.ri, k), 0.0) for k in range(self.K)])
        base = np.zeros(len(self.Z)) if phase1 else self.val
        return base - self.dot(pi) - duals.get(self.conv, 0.0)

    def column(self, r: int) -> Column:
        return rack_column(self.fi, self.ri, self.conv, self.Z[r], float(self.val[r]))


def rack_column(fi: int, ri: int, conv, z, value: float) -> Column:
    """The master column of rack ri holding counts z (cover +z, link_ri -z, convexity 1)."""
    key = tuple((k, int(q)) for k, q in enumerate(z) if q)
    coefs = {("cover", k): float(q) for k, q in key}
    coefs.update({("link", ri, k): -float(q) for k, q in key})
    coefs[conv] = 1.0
    return Column(fi, value, coefs, key, key)


def rack_by_convolution(sub, ub: float, duals: dict, maxrc: list[float], z: dict[int, int],
                        deadline: float | None = None, cap: int = 5_000_000,
                        delta0: float | None = None, need: float | None = None,
                        ordered: bool = True) -> tuple | None | str:
    """Exact single-rack solve without an integer master: the best node + worker co-location of
    a rack holding exactly z, over the node tables of ``sub`` (a ``_rack_sub`` model whose
    families all have a :class:`TablePricer`), from its Lagrangian (``ub``, ``duals``,
    ``maxrc``: the converged column generation of ``sub``).

    Every node takes one table row y <= z; the rows of the rack's nodes sum to z. With the
    duals, sum over nodes of rc(y) = value - pi . b, so a plan's value is ub - sum of the losses
    l(y) = maxrc_f - rc(y) >= 0. For a margin delta, the rows with l(y) <= delta are combined
    node by node (a max-plus convolution over count vectors, restricted to partial sums <= z and
    partial losses <= delta, keeping the least loss per partial sum: what the nodes not yet
    placed can do depends only on the sum so far), and the last node's row is looked up as
    z minus the partial sum. A plan of loss L <= delta has every node's loss and every partial
    loss <= L, so it is in that search: the least loss found, when <= delta, is the optimum.
    With ``ordered`` (the default; False is kept as the tests' reference), the nodes of a class
    are read with non-decreasing losses, and a row of loss l with m - 1 nodes of its class after
    it extends only partial losses <= delta - m l: every plan can be read in that order (its
    nodes of one class are interchangeable), and so read, each of its prefixes passes the test,
    so the reading of a plan of loss L <= delta is in the search.
    Otherwise delta doubles, capped by the least loss of the plans the last look-up met (their
    losses exceed delta, but the optimum's is at most theirs), until it covers the largest loss
    a plan can have; then no plan means none exists.

    With ``need`` (branch net-ls: the caller only wants plans worth at least need), delta stops
    at ub - need: when no plan has a loss within it, every plan is worth less than ub - delta
    <= need and ("below", ub - delta) is returned (a bound, not the optimum).

    Returns (value, [(family name, Column, count)]), None if the rack has no plan, ("below",
    bound), or "incomplete" (over ``cap`` partial sums, or past ``deadline``)."""
    fams = sub.families
    prs = [f.table for f in fams]
    if not fams or any(not isinstance(p, TablePricer) for p in prs):
        return "incomplete"
    K = prs[0].t.K
    axes = [k for k in range(K) if z.get(k, 0) > 0]
    zv = np.array([int(z[k]) for k in axes], dtype=np.int64)
    A = len(axes)
    bits = max(int(zv.max()).bit_length() + 1 if A else 1, 2)
    if A * bits > 62:
        return "incomplete"
    shift = np.array([1 << (bits * k) for k in range(A)], dtype=np.int64)
    guard = int(sum(1 << (bits * k + bits - 1) for k in range(A)))
    radix = zv + 1
    mult = np.ones(A, dtype=np.int64)
    for k in range(A - 2, -1, -1):
        mult[k] = mult[k + 1] * radix[k + 1]
    zcode = int(zv @ mult) if A else 0
    zg = (int(zv @ shift) if A else 0) | guard  # z with guard bits: z - w stays guarded iff w <= z
    scale = max(1.0, abs(ub))
    tol = 1e-9 * scale
    loss, sub_y, codes, enc = [], [], [], []
    for fi, pr in enumerate(prs):
        lo = maxrc[fi] - pr.rc(duals)
        loss.append(np.maximum(lo, 0.0))
        Y = pr.counts()[:, axes] if A else np.zeros((len(pr.idx), 0), dtype=np.int64)
        sub_y.append(Y)
        codes.append(Y @ mult if A else np.zeros(len(Y), dtype=np.int64))
        enc.append(Y @ shift if A else np.zeros(len(Y), dtype=np.int64))
    seq = [fi for fi, f in enumerate(fams) for _ in range(f.count)]
    if not seq:
        return (0.0, []) if zcode == 0 else None
    # ordered: the nodes of one class are interchangeable, so a plan can be read with each
    # class's losses non-decreasing along seq; the row at a node with m - 1 nodes of its class
    # after it then costs at least m times its loss in all (those nodes lose at least as much)
    # (branch net-twelve)
    here = [fams[fi].count - (i - seq.index(fi)) if ordered else 1 for i, fi in enumerate(seq)]
    # the largest loss a plan can have: past it every combination is in the search
    top = sum(float(loss[fi].max()) if len(loss[fi]) else 0.0 for fi in seq)
    delta = max(1e-3 * scale, 1e-6) if delta0 is None else max(delta0, 1e-6)
    stop = math.inf if need is None else max(ub - need, 0.0)  # losses past it do not matter
    delta = min(delta, max(stop, 1e-6))
    inc = math.inf
    while True:
        cand = []
        for fi in range(len(prs)):
            rows = np.flatnonzero(loss[fi] <= delta + tol)
            rows = rows[np.argsort(loss[fi][rows], kind="stable")]
            cand.append(rows)
        # partial sums after the first node: (code, guarded rest z - w, loss, back-pointers)
        r0 = cand[seq[0]]
        r0 = r0[here[0] * loss[seq[0]][r0] <= delta + tol]
        st_code, st_rest, st_loss = codes[seq[0]][r0], zg - enc[seq[0]][r0], loss[seq[0]][r0]
        ok = (st_rest & guard) == guard
        st_code, st_rest, st_loss = st_code[ok], st_rest[ok], st_loss[ok]
        backs = [(np.full(int(ok.sum()), -1), r0[ok])]
        for i in range(1, len(seq) - 1):
            fi, m = seq[i], here[i]
            rows = cand[fi]
            order = np.argsort(st_loss, kind="stable")
            st_code, st_rest, st_loss = st_code[order], st_rest[order], st_loss[order]
            parts = []
            total = 0
            for j in range(0, len(rows), 256):  # compiled, 256 rows between deadline checks
                if deadline is not None and time.monotonic() > deadline:
                    return "incomplete"
                # each row's partial sums within the loss left (a prefix: sorted by loss) whose
                # rest stays guarded; a row with none ends the step (rows sorted by loss)
                hit, rr, rest, status = K_.conv_level(st_rest, st_loss, rows[j:j + 256], loss[fi], enc[fi],
                                                      delta + tol, float(m), guard, cap - total)
                if len(hit):
                    parts.append((hit, rr, rest))
                    total += len(hit)
                if status == 2:
                    return "incomplete"
                if status == 1:
                    break
            if not parts:
                st_code = np.zeros(0, dtype=np.int64)
                break
            prev = np.concatenate([p[0] for p in parts])
            rr = np.concatenate([p[1] for p in parts])
            rest = np.concatenate([p[2] for p in parts])
            code = st_code[prev] + codes[fi][rr]
            lo = st_loss[prev] + loss[fi][rr]
            # the least loss per partial sum (the nodes left only see the sum)
            o = np.lexsort((lo, code))
            first = np.ones(len(o), dtype=bool)
            first[1:] = code[o][1:] != code[o][:-1]
            keep = o[first]
            # back-pointers refer to the previous level's rows in its stored order
            backs[-1] = tuple(b[order] for b in backs[-1])
            backs.append((prev[keep], rr[keep]))
            st_code, st_rest, st_loss = code[keep], rest[keep], lo[keep]
        found = None
        if len(st_code):
            last = seq[-1]
            if len(seq) == 1:
                hitz = np.flatnonzero(st_code == zcode)
                if len(hitz):
                    found = int(hitz[np.argmin(st_loss[hitz])])
                    best_loss = float(st_loss[found])
            else:
                rows = cand[last]
                lc = codes[last][rows]
                o = np.argsort(lc, kind="stable")
                lc, lrows = lc[o], rows[o]
                want = zcode - st_code
                pos = lookup(lc, want)
                hit = pos >= 0
                if hit.any():
                    tot = np.where(hit, st_loss + loss[last][lrows[pos]], np.inf)
                    i = int(np.argmin(tot))
                    if tot[i] <= delta + tol:
                        found = (i, int(lrows[pos[i]]))
                        best_loss = float(tot[i])
                    else:  # a plan, but maybe not the best: the optimum's loss is at most its
                        inc = min(inc, float(tot[i]))
        if found is not None:
            # read the rows back level by level
            picks = []
            if len(seq) == 1:
                picks.append((seq[0], int(backs[0][1][found])))
            else:
                i, rl = found
                picks.append((seq[-1], rl))
                for lvl in range(len(backs) - 1, -1, -1):
                    prev, rr = backs[lvl]
                    picks.append((seq[lvl], int(rr[i])))
                    i = int(prev[i])
            value = 0.0
            tot = np.zeros(A, dtype=np.int64)
            cnt: dict = {}
            for fi, r in picks:
                pr = prs[fi]
                value += float(pr.val[r])
                tot += sub_y[fi][r]
                key = (fi, int(r))
                cnt[key] = cnt.get(key, 0) + 1
            if not (tot == zv).all() or abs(value - (ub - best_loss)) > 1e-6 * scale:
                return "incomplete"  # not expected; the caller's integer master decides then
            chosen = [(fams[fi].name, prs[fi].column(r), c) for (fi, r), c in cnt.items()]
            return value, chosen
        if delta >= top:
            return None  # every row was in: no combination covers z
        if delta >= stop:
            # every plan loses more than delta (rows and partial sums up to delta + tol were
            # searched): each is worth less than ub - delta, i.e. than need once delta = stop
            return ("below", ub - delta)
        if deadline is not None and time.monotonic() > deadline:
            return "incomplete"
        # the optimum's loss is above delta and at most that of any plan seen (inc)
        delta = min(2 * delta, inc, top + tol, max(stop, delta))
