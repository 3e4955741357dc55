"""Branch and price for ``traffic`` phase 1 (inter-node traffic) over node tables.

Why: the configuration LP bound is 2-6 % below the optimum from about 6 nodes on, so the
proof by enumeration (every column within the margin UB - z_inc) needs 10^5 columns and an
integer master nobody solves in time. Here the configuration master is branched instead, and
each branch-and-bound node is bounded by its own configuration LP, solved by column generation
with exact pricing.

Pricing by table: every count vector y a node of class f can hold (``_nodetable._node_vectors``:
caps, CPU, max_per_node) is listed once with its intra-node value v(y) = sum_{g<h} r_gh y_g y_h,
so the reduced cost of every column of the class is one matrix-vector product and the most
improving column is exact (no solver, no rounding). The tables hold their counts as bytes and
once as floats, and are built when they fit a memory budget (``TABLE_BYTES``, ``_Fam.row_bytes``)
and an estimated build time (``BUILD_RATE``); a one-worker table shares phase 1's arrays.

Root convolution (``_convolve``, few groups, one topology): with the root's duals every plan
is worth L minus the sum of its nodes' losses, so the plans within the margin L - incumbent are
searched by a dynamic programme over the nodes on their partial sums; when it completes, phase 1
is decided at the root without a tree. Stopped over its caps, it is tried again (same duals, a
narrower margin) whenever the tree has raised the incumbent, up to ``CONV_TRIES`` tries. The worker counts o_t of a column are
chosen in the pricing: ceil(tot_t / M_t) <= o_t <= min(tot_t, slots) (o_t = 0 iff tot_t = 0),
sum_t o_t <= slots, and the best o for given duals is greedy (one shared capacity, unit weights).

Branching (identical nodes, so never on one lambda): on the number of nodes of class f whose
content has a property P, sum_{p in f, P(y_p)} lambda_p <= floor(a) or >= ceil(a), a its
fractional LP value. The row's dual enters the pricing as -mu [P(y)] on the table, so pricing
stays exact. Properties, in this order: y_g >= k; y_g >= k and y_h >= l; y = one vector.
Strong branching bounds both children of 2-4 candidates by column generation; the candidates
are the best of up to ``screen`` (32) fractional counts ranked by their children's LPs over the
current pool (no pricing; only an order, no bound is taken from it).
When every "y = vector" count is integral the multiset of node contents is integral, and worker
counts o meeting the workers rows exist (each node's o ranges over an interval of integers and
the LP's fractional mix meets the row sums), so the node's LP value is a plan's value.

Bounds: at every column generation iteration the Lagrangian bound
L(pi) = sum_r pi_r b_r + sum_f count_f maxrc_f (branch rows as <= rows with pi >= 0) is valid for
the node; the node's bound is the least L seen (the LP value at convergence). The global bound
is max(incumbent, bounds of the open nodes); ``optimal`` when it is within 1e-7 (relative) of
the incumbent. Stopped early it is a valid bound over all plans (every plan lies in one open
node or in a node already closed by its bound).

Reduced-cost fixing: after a node's column generation, with its last duals pi, a plan of the
subtree better than the incumbent z uses only table rows with rc >= maxrc_f - (L(pi) - z); its
children price over those rows only (``_View``). ``cutoff``: seek only plans above a value (the
first found ends the search); ``enum_all``: record every content multiset at or above the
cut-off / final incumbent (ties kept, integral nodes split three ways), for phase 2
(``_trafficphase2.phase2_bp``). A node LP made infeasible by contradictory branch rows closes
its node. No infeasibility proof (big-M artificials): without a plan the status is ``unknown``.
docs/formulations.md, "Traffic: branch and price", has the mathematics.
"""

from __future__ import annotations

import heapq
import math
import time
import weakref
from typing import Any

import numpy as np

from ._nodetable import TABLE_BYTES as _NT_TABLE_BYTES
from ._nodetable import _node_vectors
from ._patterns import Column, node_classes
from ._trafficls import node_column


def _count_vectors(pm, ni: int) -> int:
    """How many count vectors y (y_g <= node cap) fit the node's CPU (a dynamic programme over
    CPU units; pins and max_per_node are left out, so it counts at least the table's rows)."""
    G = pm.groups
    cpu = [int(round(g.comp.cpu * 1000)) for g in G]
    cap = int(math.floor(pm.nodes[ni].cpu * 1000 + 1e-6))
    d = 0
    for c in cpu + [cap]:
        d = math.gcd(d, c)
    d = d or 1
    if cap // d > 200_000:
        return 0  # too fine to count cheaply: let the table builder decide
    ways = np.zeros(cap // d + 1, dtype=float)
    ways[0] = 1.0
    for g, c in zip(G, cpu):
        c //= d
        ncap = pm.node_cap(g, ni)
        new = ways.copy()
        for q in range(1, ncap + 1):
            if q * c > len(ways) - 1:
                break
            new[q * c:] += ways[:len(ways) - q * c] if c else ways
        ways = new
    return int(ways.sum())


# The memory the node tables of B&P may take (bytes), shared evenly by the node classes:
# checked before anything is built, from the counted rows x ``_Fam.row_bytes``. A one-worker
# table filtered from phase 1's (``_one_worker_plan``, ``TrafficBP(fams=...)``) shares its
# arrays when it keeps every row, else its copy must fit what phase 1's tables left of it
# (else that search is refused, and phase 2 goes on without it). docs/benchmarks.md, "traffic:
# tables by memory", has the measured peaks. The one budget of ``_nodetable`` (network's node
# table keeps its DP pairs within it too).
TABLE_BYTES = float(_NT_TABLE_BYTES)
# Seconds a table row costs to build (``_node_vectors`` and ``_Fam``'s arrays), measured on
# this machine under load 5 (2 cores): 0.5-0.9 us a row at 100x10x10 / 100x12x10 (1.8, 6.3 and
# 9.3 million rows; 1.2-1.3 us before Z was converted from the row-major counts), so 1.5 us
# leaves a margin for a busier machine (docs/benchmarks.md, "traffic: tables by memory").
BUILD_RATE = 1.5e-6
BUILD_SHARE = 0.3  # of the time left that building the tables may take
CONVOLVE = True  # B&P tries the root's proof by convolution (TrafficBP._convolve) by default
# a convolution stopped over its caps is tried again whenever a better incumbent (by over 1e-6
# relative) has narrowed the root's margin, up to this many tries in all (a stopped try costs
# 0.6-1.5 s at 100x5x10, whose margin goes 0.745 -> 0.554 -> 0.523 -> 0.478 as B&P improves the
# incumbent, with 617, 337, 303 and 257 rows; at 0.478 it proves)
CONV_TRIES = 6
POLISH_TRIES = 4  # local searches from incumbents the tree improved (TrafficBP._polish)


def _narrow(top: int, signed: bool = False):
    """The narrowest integer type holding 0..top: uint8 / int16 / int64 (int16 / int64 when
    ``signed``, for values that are summed and subtracted)."""
    if top < 256 and not signed:
        return np.uint8
    return np.int16 if top < 32768 else np.int64


class _Fam:
    """One class of identical nodes: its table of contents and worker-count ranges.

    Arrays (N rows): ``YT`` the counts, groups x rows, as bytes (uint8 when every count is
    below 256; ``Y`` is its transposed view, rows x groups: sum rows of it only widened);
    ``Z`` the counts as floats, rows x groups (made once, for the pricing's product);
    ``V`` the intra-node value; ``lo``/``hi`` the worker-count range per topology (int16)."""

    @staticmethod
    def row_bytes(K: int, T: int) -> int:
        """Bytes a table row takes at the peak: its arrays (Z 8 K, YT K, V 8, lo and hi 4 T),
        the filter's int64 totals and ranges and its mask (24 T + 1, while the arrays are
        made), and the pricing's float temporaries over the whole table (rc and its terms, 4 x
        8). The builder's rows before the arrays (``_node_vectors``' narrow counts and int64 CPU
        use, twice while an axis is appended: 2 (K + 8), then the transposed copy K) are freed
        before Z is made, and take less. Measured: 100x12x10 peaks at 1.31 GB (6.3 million
        rows, 1.12 GB by this count) and 1.8 GB (instance seed 1, 9.3 million, 1.64 GB), the
        rest being the interpreter and the solvers (docs/benchmarks.md)."""
        return _Fam.array_bytes(K, T) + 24 * T + 1 + 32

    @staticmethod
    def array_bytes(K: int, T: int) -> int:
        """Bytes of one row of the table's own arrays: Z 8 K, YT K, V 8, lo and hi 4 T."""
        return 9 * K + 8 + 4 * T

    def __init__(self, pm, cls: list[int], pairs, budget: float | None = None, one_worker: bool = False,
                 deadline: float | None = None, full: "_Fam | None" = None):
        self.cls = cls
        self.count = len(cls)
        self.one_worker = one_worker
        G = pm.groups
        K = len(G)
        tis = [ti for ti, _ in pm.topos]
        slots = len(pm.nodes[cls[0]].slots)
        budget = TABLE_BYTES if budget is None else budget
        Yrows = None  # the rows x groups counts while building (Z is converted from them)
        if full is not None:
            # the one-worker table from the full table of the same class (phase 1's), not built
            # again: every row one worker per topology can hold is a row of the full table
            # (ceil(tot_t / M_t) = min(tot_t, 1) there), so filtering its rows below gives the
            # same table, in the same order; its arrays are shared when every row is kept
            YT = full.YT
        else:
            n = _count_vectors(pm, cls[0])
            if n * self.row_bytes(K, len(tis)) > budget:  # counted first: building a table to drop it costs seconds
                raise _TooBig
            if deadline is not None and n * BUILD_RATE > BUILD_SHARE * (deadline - time.monotonic()):
                raise _TooBig  # building would eat the time limit
            top = max([pm.node_cap(g, cls[0]) for g in G], default=0)
            rows = int(budget // self.row_bytes(K, len(tis)))  # the builder's limit, also when n was not counted
            out = _node_vectors(pm, cls[0], rows, dtype=_narrow(top),
                                deadline=None if deadline is None else time.monotonic() + BUILD_SHARE * (deadline - time.monotonic()))
            if out is None:
                raise _TooBig
            Yrows = out[0]
            del out
            YT = np.ascontiguousarray(Yrows.T)
        # executors per topology: sums of the topology's group rows, widened (the counts are bytes)
        sel = [[k for k, g in enumerate(G) if g.ti == ti] for ti in tis]
        tot = np.stack([(YT if len(ks) == K else YT[ks]).sum(axis=0, dtype=np.int64) for ks in sel],
                       axis=1).reshape(YT.shape[1], len(tis))
        M = np.array([pm.M[ti] for ti in tis], dtype=np.int64)
        lo = -(-tot // M)
        hi = np.minimum(tot, slots)
        ok = np.ones(len(tot), dtype=bool)
        if one_worker:  # at most one worker per topology: inter-worker = inter-node traffic
            ok = (tot <= M).all(axis=1)  # a topology over M_t executors on the node needs two
            lo = hi = np.minimum(tot, 1)
        ok &= (lo.sum(axis=1) <= slots) & (lo <= hi).all(axis=1)
        every = bool(ok.all())
        wk = _narrow(slots, signed=True)  # signed: o is summed and subtracted
        self.lo, self.hi = lo[ok].astype(wk), hi[ok].astype(wk)
        del tot, lo, hi
        self.slots = slots
        if full is not None and every:
            self.YT, self.Z, self.V = full.YT, full.Z, full.V
        elif full is not None:
            # a copy of the kept rows, next to phase 1's tables: within what they left of the budget
            if int(ok.sum()) * self.array_bytes(K, len(tis)) > budget:
                raise _TooBig
            self.YT = np.ascontiguousarray(YT[:, ok])
            self.Z, self.V = full.Z[ok], full.V[ok]
        else:
            self.YT = YT if every else np.ascontiguousarray(YT[:, ok])
            del YT
            # the floats for the pricing's product, made once, rows x groups, converted from the
            # row-major counts (from the transposed ones it took 2.5-4.4 s at 6.3 million rows)
            self.Z = (Yrows if every else Yrows[ok]).astype(np.float64)
            del Yrows
            # V = sum r_ab y_a y_b, each term as (r y_a) y_b over the contiguous count rows
            V = np.zeros(len(self.Z))
            tmp = np.empty(len(self.Z))
            for (a, b), r in pairs.items():
                np.multiply(self.YT[a], float(r), out=tmp)  # float: a uint8 product would wrap
                tmp *= self.YT[b]
                V += tmp
            self.V = V
        self.Y = self.YT.T
        self.cap = self.YT.max(axis=1).astype(np.int64) if self.YT.shape[1] else np.zeros(K, dtype=np.int64)
        self._codes = None

    def nbytes(self) -> int:
        """Bytes of this table's arrays (shared ones included)."""
        return sum(a.nbytes for a in (self.YT, self.Z, self.V, self.lo, self.hi))

    def find(self, y) -> int | None:
        """Table row of count vector y, or None (the sorted codes are made at the first call).
        The code is y's mixed-radix number over the table's box, computed modulo 2^64 (uint64
        arithmetic wraps): past a box of 2^64 codes two rows can share a code, so a code only
        names candidates, and a candidate is the answer only if its row equals y."""
        y = np.asarray(y, dtype=np.int64)
        if len(self.V) == 0 or (y > self.cap).any() or (y < 0).any():
            return None
        if self._codes is None:
            radix = np.ones(len(self.cap), dtype=np.uint64)
            for k in range(1, len(self.cap)):  # array products: they wrap past 2^64 without a warning
                radix[k:k + 1] = radix[k - 1:k] * (self.cap[k - 1:k].astype(np.uint64) + np.uint64(1))
            codes = np.zeros(len(self.V), dtype=np.uint64)
            for k in range(len(self.cap)):
                codes += radix[k] * self.YT[k].astype(np.uint64)
            order = np.argsort(codes, kind="stable")
            self._radix = radix
            self._codes = (codes[order], order)
        codes, order = self._codes
        c = (y.astype(np.uint64) * self._radix).sum(dtype=np.uint64)
        j = int(np.searchsorted(codes, c))
        while j < len(codes) and codes[j] == c:
            i = int(order[j])
            if np.array_equal(self.YT[:, i], y):
                return i
            j += 1
        return None


def _best_o(lo: np.ndarray, hi: np.ndarray, slots: int, pw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per table row (worker-count ranges lo..hi, at most ``slots`` workers), the worker counts
    maximising -pw . o and that value (several topologies; one topology is priced inline)."""
    o = lo.copy()
    cap = slots - o.sum(axis=1)
    for t in np.argsort(pw):  # most negative dual first: each worker there gains -pw[t]
        if -pw[t] <= 0:
            break
        add = np.minimum(hi[:, t] - lo[:, t], cap)
        o[:, t] += add
        cap -= add
    return o, -(o @ pw)


class _TooBig(Exception):
    pass


def _release(counter: list, size: float) -> None:
    counter[0] -= size


class _View:
    """The rows of a family's table still able to improve on the incumbent in a subtree
    (reduced-cost fixing); idx None = the whole table. Arrays are copies (fast pricing)."""

    def __init__(self, fm: _Fam, idx: np.ndarray | None):
        self.idx = idx
        self.masks: dict[int, np.ndarray] = {}  # branch property (mask id) at the view's rows
        if idx is None:
            self.Z, self.V, self.YT, self.lo, self.hi = fm.Z, fm.V, fm.YT, fm.lo, fm.hi
        else:
            self.Z, self.V, self.YT = fm.Z[idx], fm.V[idx], fm.YT[:, idx]
            self.lo, self.hi = fm.lo[idx], fm.hi[idx]  # already narrow (``_Fam``)

    def __len__(self) -> int:
        return len(self.V)

    def mask(self, mid: int, bp: "TrafficBP") -> np.ndarray:
        """Branch property mid at the view's rows (bool), built once per view (a few kept)."""
        m = self.masks.get(mid)
        if m is None:
            if len(self.masks) >= 16:
                self.masks.pop(next(iter(self.masks)))
            m = self.masks[mid] = bp.mask_at(mid, self.idx) > 0
        return m

    def full(self, i: int) -> int:
        return int(i) if self.idx is None else int(self.idx[i])


class TrafficBP:
    """Best-first branch and price over the configuration master (module docstring)."""

    def __init__(self, pm, pairs, deadline: float | None, budget: float | None = None, strong: int = 4, screen: int = 32,
                 fixing: bool = True, one_worker: bool = False, cutoff: float | None = None,
                 enum_all: bool = False, fams: list[_Fam] | None = None, convolve: bool | None = None):
        self.pm = pm
        # try the root's proof by convolution (``_convolve``); None: the module's CONVOLVE
        self.convolve = CONVOLVE if convolve is None else convolve
        self.fixing = fixing
        self._bytes = [0.0]  # bytes of the sub-tables alive (a list: released by their finalizers)
        self.strong = strong
        self.strong_rows = 300_000  # above this many rows in the views, at most 2 candidates
        self.screen = screen  # candidates ranked by their children's restricted LPs before strong branching
        self.deadline = deadline
        G = pm.groups
        self.K = len(G)
        self.tis = [ti for ti, _ in pm.topos]
        self.s = np.array([g.size for g in G], dtype=float)
        self.S = np.array([pm.S[ti] for ti in self.tis], dtype=float)
        if fams and one_worker and not fams[0].one_worker:  # filtered from the full tables
            self.classes = [fm.cls for fm in fams]
            # a one-worker table that copies rows gets what phase 1's tables left of the budget
            left = (TABLE_BYTES if budget is None else budget) - sum(fm.nbytes() for fm in fams)
            self.fams = [_Fam(pm, fm.cls, pairs, left / len(fams), True, deadline, full=fm) for fm in fams]
        elif fams is not None:  # another search's tables (same instance, same one_worker): read-only
            if fams and fams[0].one_worker != one_worker:
                raise ValueError("full tables cannot be made from one-worker tables")
            self.classes, self.fams = [fm.cls for fm in fams], fams
        else:
            self.classes = node_classes(pm, with_rack=False)
            # the budget (None: TABLE_BYTES, read at the call) shared evenly by the classes
            share = (TABLE_BYTES if budget is None else budget) / max(1, len(self.classes))
            self.fams = [_Fam(pm, cls, pairs, share, one_worker, deadline)
                         for cls in self.classes]
        # column pool: (family, table row, worker counts)
        self.pool: list[tuple[int, int, tuple[int, ...]]] = []
        self.seen: set = set()
        self.masks: list[tuple[int, None, Any]] = []  # branch properties: (family, None, key), see mask_at
        self.stats: dict[str, Any] = {"bp_nodes": 0, "bp_lp": 0, "bp_columns": 0}
        self._h = None  # the master LP (HiGHS), kept across solves
        self.root_lag = None
        self.inc_value = -math.inf
        self.cutoff = cutoff  # only plans worth more than it are sought; the first one found ends the search
        # enum_all: every content multiset worth at least the final incumbent (or the cut-off) is
        # recorded: nodes whose bound ties the incumbent are kept, integral nodes split three ways
        self.enum_all = enum_all
        self.plans: list[dict] = []  # enum_all: the content multisets {(family, row): count} found
        self.complete = False
        if cutoff is not None:
            self.inc_value = cutoff
        self.inc: list[tuple[int, int, tuple[int, ...], int]] | None = None  # (fam, row, o, count)
        # polish(inc) -> nodes for set_incumbent or None: a local search from an incumbent the
        # tree improved (traffic sets it; ``_polish``); the value it last ran from
        self.polish = None
        self._polished = -math.inf

    def left(self) -> float:
        return math.inf if self.deadline is None else self.deadline - time.monotonic()

    def add(self, f: int, i: int, o) -> bool:
        key = (f, int(i), tuple(int(x) for x in o))
        if key in self.seen:
            return False
        self.seen.add(key)
        self.pool.append(key)
        return True

    # --- incumbent -----------------------------------------------------------------------------
    def set_incumbent(self, nodes: list[tuple[int, tuple[int, ...], tuple[int, ...]]]) -> bool:
        """nodes: (family, y vector, o vector) per used node; True if it became the incumbent."""
        agg: dict = {}
        val = 0.0
        for f, y, o in nodes:
            i = self.fams[f].find(y)
            if i is None:
                return False
            val += self.fams[f].V[i]
            agg[(f, i, tuple(o))] = agg.get((f, i, tuple(o)), 0) + 1
        for f, fam in enumerate(self.fams):  # the other nodes of each class are empty
            used = sum(c for (g, _, _), c in agg.items() if g == f)
            if used < fam.count:
                z = fam.find([0] * self.K)
                key = (f, z, tuple([0] * len(self.tis)))
                agg[key] = agg.get(key, 0) + fam.count - used
        for f, i, o in agg:
            self.add(f, i, o)
        if val > self.inc_value:
            self.inc_value = val
            self.inc = [(f, i, o, c) for (f, i, o), c in agg.items()]
            if self.cutoff is not None:
                self.found = True
            return True
        return False

    # --- the node LP ---------------------------------------------------------------------------
    def _lp(self, rows: list[tuple[int, int, float]]):
        """Master LP over the pool with branch rows (mask id, sign, rhs): sign * count <= rhs.
        One HiGHS model kept across calls (columns appended, branch rows swapped), so each
        solve starts from the last basis. Artificials on the equality rows keep every node LP
        feasible (a relaxation, so still a bound). Returns (value, lambda, equality-row duals,
        branch-row duals (>= 0), equality right-hand sides, branch right-hand sides)."""
        import highspy

        inf = highspy.kHighsInf
        K, T, F = self.K, len(self.tis), len(self.fams)
        ne = K + T + F
        b_eq = np.concatenate([self.s, self.S, [fm.count for fm in self.fams]])
        h = self._h
        if h is None:
            h = self._h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            h.changeObjectiveSense(highspy.ObjSense.kMaximize)
            for r in range(ne):
                h.addRow(float(b_eq[r]), float(b_eq[r]), 0, np.array([], dtype=np.int32), np.array([]))
            big = 100.0 * (1.0 + max(float(np.abs(fm.V).max(initial=0.0)) for fm in self.fams))
            for r in range(ne):
                for c in (1.0, -1.0):
                    h.addCol(-big, 0.0, inf, 1, np.array([r], dtype=np.int32), np.array([c]))
            self._ncols = 0
            self._rows: list = []
        if self._rows != rows:  # swap the branch rows after the prefix both nodes share
            keep = 0
            while keep < min(len(rows), len(self._rows)) and rows[keep] == self._rows[keep]:
                keep += 1
            if len(self._rows) > keep:
                h.deleteRows(len(self._rows) - keep, np.arange(ne + keep, ne + len(self._rows), dtype=np.int32))
            fam = np.array([p[0] for p in self.pool[:self._ncols]], dtype=np.int64)
            row = np.array([p[1] for p in self.pool[:self._ncols]], dtype=np.int64)
            for mid, sign, rhs in rows[keep:]:
                f, _, _ = self.masks[mid]
                sel = np.nonzero(fam == f)[0] if self._ncols else np.zeros(0, dtype=np.int64)
                sel = sel[self.mask_at(mid, row[sel]) > 0]
                lo, hi = (-inf, rhs) if sign > 0 else (-rhs, inf)
                h.addRow(lo, hi, len(sel), (2 * ne + sel).astype(np.int32), np.ones(len(sel)))
            self._rows = list(rows)
        for j in range(self._ncols, len(self.pool)):  # new columns, with their branch-row entries
            f, i, o = self.pool[j]
            fm = self.fams[f]
            idx, val = [], []
            for g in range(K):
                if fm.Y[i, g]:
                    idx.append(g)
                    val.append(float(fm.Y[i, g]))
            for t in range(T):
                if o[t]:
                    idx.append(K + t)
                    val.append(float(o[t]))
            idx.append(K + T + f)
            val.append(1.0)
            for r, (mid, _, _) in enumerate(rows):
                g, _, _ = self.masks[mid]
                if g == f and self.mask_at(mid, np.array([i]))[0] > 0:
                    idx.append(ne + r)
                    val.append(1.0)
            h.addCol(float(fm.V[i]), 0.0, inf, len(idx), np.array(idx, dtype=np.int32), np.array(val))
        self._ncols = len(self.pool)
        h.run()
        self.stats["bp_lp"] += 1
        st = h.getModelStatus()
        if st == highspy.HighsModelStatus.kInfeasible:
            return "infeasible"  # contradictory branch rows: the node holds no plan
        if st != highspy.HighsModelStatus.kOptimal:
            return None
        sol = h.getSolution()
        lam = np.array(sol.col_value[2 * ne:])
        dual = np.array(sol.row_dual)
        pi_ub = np.maximum(0.0, np.array([sign for _, sign, _ in rows]) * dual[ne:]) if rows else np.zeros(0)
        b_ub = np.array([rhs for _, _, rhs in rows]) if rows else np.zeros(0)
        return h.getInfo().objective_function_value, lam, dual[:ne], pi_ub, b_eq, b_ub

    def _price(self, pi_eq, pi_ub, rows, views, want: int = 15):
        """Best reduced cost per family (exact over its view) and improving columns, and the
        reduced costs over the views. The duals of the rows y_g >= k add up to one penalty
        per value of y_g, applied with one look-up per group."""
        K, T = self.K, len(self.tis)
        pc, pw, pconv = pi_eq[:K], pi_eq[K:K + T], pi_eq[K + T:]
        maxrc, new, rcs = [], [], []
        for f, fm in enumerate(self.fams):
            vw = views[f]
            if len(vw) == 0:
                maxrc.append(-math.inf)
                rcs.append(np.zeros(0))
                continue
            if T == 1:  # value - pc.y - pw o, o = lo or hi
                o = vw.lo if pw[0] >= 0 else vw.hi
                rc = vw.Z @ -pc
                rc -= pw[0] * o[:, 0]
            else:
                o, og = _best_o(vw.lo, vw.hi, fm.slots, pw)  # the view's rows only
                rc = og - vw.Z @ pc
            rc += vw.V
            rc -= pconv[f]
            look = [np.zeros(fm.cap[g] + 1) for g in range(K)]
            other, at = [], []
            for r, (mid, sign, _) in enumerate(rows):
                g, mask, key = self.masks[mid]
                if g != f or not pi_ub[r]:
                    continue
                if len(key) == 3 and key[1] != "y":
                    look[key[1]][key[2]:] += pi_ub[r] * sign
                elif key[1] == "y":  # one table row: found in the view (its rows are sorted)
                    j = key[2] if vw.idx is None else int(np.searchsorted(vw.idx, key[2]))
                    if j < len(vw) and vw.full(j) == key[2]:
                        at.append((pi_ub[r] * sign, j))
                else:
                    other.append((pi_ub[r] * sign, vw.mask(mid, self)))
            for g in range(K):
                if look[g].any():
                    rc -= look[g][vw.YT[g]]
            for c, mask in other:
                rc[mask] -= c
            for c, j in at:
                rc[j] -= c
            m = float(rc.max())
            maxrc.append(m)
            rcs.append(rc)
            pos = np.flatnonzero(rc > 1e-9 * max(1.0, m))
            if len(pos) > want:
                pos = pos[np.argpartition(-rc[pos], want)[:want]]
            for i in pos[np.argsort(-rc[pos])]:
                if rc[i] > 1e-9 * max(1.0, abs(vw.V[i])):
                    new.append((f, vw.full(i), o[i]))
        return maxrc, new, rcs

    def solve_node(self, rows, views) -> tuple[float, np.ndarray | None, list]:
        """Column generation at a node; (bound, lambda at the last LP (None if stopped early),
        the views for its children). Reduced-cost fixing: with the last duals pi,
        value <= L(pi) - sum_p (maxrc_f - rc_p) lambda_p for every plan of the node, so a plan
        better than the incumbent z uses only rows with rc_p >= maxrc_f - (L(pi) - z)."""
        best = math.inf
        while True:
            if self.left() <= 0:
                return best, None, views
            out = self._lp(rows)
            if out == "infeasible":
                return -math.inf, None, views
            if out is None:
                return best, None, views
            val, lam, pi_eq, pi_ub, b_eq, b_ub = out
            maxrc, new, rcs = self._price(pi_eq, pi_ub, rows, views)
            counts = np.array([fm.count for fm in self.fams], dtype=float)
            K, T = self.K, len(self.tis)
            lag = float(pi_eq[:K + T] @ b_eq[:K + T] + (pi_ub @ b_ub if len(rows) else 0.0) + counts @ (
                np.array(maxrc) + pi_eq[K + T:]))
            if lag < best and not rows:  # the root's duals: phase 2 enumerates against them
                self.root_lag = (lag, pi_eq.copy(), list(maxrc))
            best = min(best, lag)
            added = sum(self.add(*c) for c in new)
            self.stats["bp_columns"] = len(self.pool)
            if not added or best - val <= 1e-9 * max(1.0, abs(val)):
                return best, lam, self._fix(views, rcs, maxrc, lag)

    def _fix(self, views, rcs, maxrc, lag):
        if self.inc_value == -math.inf or self.fixing is False:
            return views
        margin = lag - self.inc_value + 1e-7 * max(1.0, abs(self.inc_value))
        out = []
        for f, (vw, rc) in enumerate(zip(views, rcs)):
            keep = np.flatnonzero(rc >= maxrc[f] - margin)
            if len(keep) <= 0.8 * len(vw):
                if self._bytes[0] >= 1.5e9:  # the views alive (open nodes' and pending) hold 1.5 GB
                    self.stats["bp_view_refused"] = self.stats.get("bp_view_refused", 0) + 1
                    out.append(vw)
                    continue
                idx = keep if vw.idx is None else vw.idx[keep]
                nv = _View(self.fams[f], idx)
                size = nv.Z.nbytes + nv.YT.nbytes + nv.V.nbytes + nv.lo.nbytes + nv.hi.nbytes
                self._bytes[0] += size
                self.stats["bp_view_made"] = self.stats.get("bp_view_made", 0) + 1
                # counted while the view lives: a view of a closed subtree gives its bytes back
                # (the budget counted every view ever made, so fixing stopped after ~15 of them)
                weakref.finalize(nv, _release, self._bytes, size)
                self.stats["bp_view_min"] = min(self.stats.get("bp_view_min", len(keep)), len(keep))
                if not self.stats.get("bp_view_root"):
                    self.stats["bp_view_root"] = len(keep)
                out.append(nv)
            else:
                out.append(vw)
        return out

    # --- branching -----------------------------------------------------------------------------
    def _branch(self, lam: np.ndarray, n: int = 1):
        """Up to n fractional aggregated counts [(mask id, value)], the most fractional first, of
        the first kind that has one; [] when the content multiset is integral."""
        used = [(j, x) for j, x in enumerate(lam) if x > 1e-9]
        for kind in ("single", "pair", "vector"):
            agg: dict = {}
            for j, x in used:
                f, i, _ = self.pool[j]
                y = [int(q) for q in self.fams[f].Y[i]]
                nz = [g for g in range(self.K) if y[g] > 0]
                if kind == "single":
                    keys = [(f, g, k) for g in nz for k in range(1, y[g] + 1)]
                elif kind == "pair":
                    keys = [(f, g, k, h, l) for a, g in enumerate(nz) for h in nz[a + 1:]
                            for k in range(1, y[g] + 1) for l in range(1, y[h] + 1)]
                else:
                    keys = [(f, "y", i)]
                for key in keys:
                    agg[key] = agg.get(key, 0.0) + x
            frac = [(abs(a - math.floor(a) - 0.5), key, a) for key, a in agg.items()
                    if min(a - math.floor(a), math.ceil(a) - a) > 1e-6]
            if frac:
                frac.sort(key=lambda t: (t[0], str(t[1])))
                return [(self._mask(key), a) for _, key, a in frac[:n]]
        return []

    def _screen(self, cands, rows, b: float, n: int):
        """The n candidates of ``cands`` whose children drop most on the current pool (one LP
        per child, no pricing: the restricted LP's value is at most the child's LP bound, so
        the drop is over-estimated; each drop is capped at b - incumbent, where a child is
        pruned, and a restricted LP without a point counts as that cap). Only an order for
        strong branching: no bound is taken from it."""
        cap = b - self.inc_value + 1e-6 if self.inc_value > -math.inf else math.inf
        scored = []
        for pos, (mid, a) in enumerate(cands):
            drops = []
            for sign, rhs in ((1, math.floor(a)), (-1, -math.ceil(a))):
                out = self._lp(rows + [(mid, sign, float(rhs))])
                if out is None:  # the LP did not finish: no information, keep the fractional order
                    drops.append(0.0)
                elif out == "infeasible":
                    drops.append(cap)
                else:
                    drops.append(min(cap, max(0.0, b - out[0])))
            scored.append(((drops[0] + 1e-6) * (drops[1] + 1e-6), -pos, mid, a))
            if self.left() <= 0:
                break
        self.stats["bp_screened"] = self.stats.get("bp_screened", 0) + len(scored)
        scored.sort(reverse=True)
        return [(mid, a) for _, _, mid, a in scored[:n]]

    def _mask(self, key) -> int:
        for mid, (_, _, k) in enumerate(self.masks):
            if k == key:
                return mid
        self.masks.append((key[0], None, key))
        return len(self.masks) - 1

    def mask_at(self, mid: int, idx: np.ndarray | None) -> np.ndarray:
        """The property of branch row mid (1.0 / 0.0) at table rows idx (None: every row)."""
        f, _, key = self.masks[mid]
        YT = self.fams[f].YT
        rows = slice(None) if idx is None else idx
        if key[1] == "y":
            at = np.arange(YT.shape[1]) if idx is None else idx
            return (at == key[2]).astype(float)
        if len(key) == 3:
            return (YT[key[1], rows] >= key[2]).astype(float)
        return ((YT[key[1], rows] >= key[2]) & (YT[key[3], rows] >= key[4])).astype(float)

    def _integral_plan(self, lam: np.ndarray):
        """The node contents of an LP solution whose content counts are integral, with worker
        counts meeting the workers rows (greedy within each node's range); None if none found."""
        nodes: dict = {}
        for j, x in enumerate(lam):
            if x > 1e-9:
                f, i, _ = self.pool[j]
                nodes[(f, i)] = nodes.get((f, i), 0.0) + x
        out = []
        for (f, i), x in nodes.items():
            c = int(round(x))
            if abs(x - c) > 1e-6:
                return None
            out.extend([(f, i)] * c)
        for f, fm in enumerate(self.fams):  # the LP may have used artificials: check the rows
            if sum(1 for g, _ in out if g == f) != fm.count:
                return None
        if out and not np.array_equal(sum(self.fams[f].Y[i].astype(np.int64) for f, i in out), self.s.astype(np.int64)):
            return None
        T = len(self.tis)
        o = np.array([self.fams[f].lo[i] for f, i in out], dtype=np.int64).reshape(len(out), T)
        for t in range(T):
            need = int(self.S[t]) - int(o[:, t].sum())
            for n, (f, i) in enumerate(out):
                if need <= 0:
                    break
                room = min(self.fams[f].hi[i, t] - o[n, t], self.fams[f].slots - o[n].sum())
                add = max(0, min(room, need))
                o[n, t] += add
                need -= add
            if need != 0:
                return None
        return [(f, tuple(int(v) for v in self.fams[f].Y[i]), tuple(int(v) for v in o[n])) for n, (f, i) in enumerate(out)]

    # --- the root's proof by convolution (few groups) --------------------------------------------
    def _convolve(self, pair_cap: int = 8_000_000, row_cap: int = 2_000) -> tuple | str | None:
        """Exact search of the plans within the root's Lagrangian margin, by a dynamic programme
        over the nodes (one topology, no branch rows; docs/formulations.md, "Traffic: branch
        and price", *Root convolution*).

        With the root's duals pi (``root_lag``), a plan (every equality row met, one table row
        per node, empty nodes included, worker counts o_n in [lo_n, hi_n] summing to S) is worth
        L(pi) - sum_n l(y_n, o_n), l(y, o) = maxrc_f - rc(y, o) = a(y) + pw o >= 0 with
        a(y) = maxrc_f - v(y) + pc . y + pconv_f. Since sum_n o_n = S, its loss is
        sum_n a(y_n) + pw S whatever the o_n: only sum lo_n <= S <= sum hi_n matters. A plan
        worth more than the incumbent (or cut-off) z has loss below delta = L - z, and every
        prefix of its nodes has loss at least sum a + min(pw Lo, pw Hi) over the prefix (the
        other nodes' losses are >= 0), so that is within delta too. The rows are combined node
        by node over the states (sum y, Lo = sum lo, Hi = min(sum hi, S)), keeping the least
        sum a per state (the nodes left only see the state), pruning by that bound; both halves
        of the node sequence are expanded and joined where the y sums make s and Lo <= S <= Hi.
        The least loss found is L - (the best plan's value) when it is within delta; none means
        no plan beats z.

        Returns (loss, [(family, row, o)]) for the best plan, "none", or None when not
        applicable (several topologies, sums too wide for 62 bits, over ``row_cap`` rows within
        the margin) or stopped (over ``pair_cap`` pairs at a level, or past the deadline). The
        row cap is measured, not derived: it finished with 29-257 rows in the margin (100x5x10
        seeds 0 and 2, 46x8x4) and went over the pair cap, after 0.2-3.5 s, with 1,897-27,253
        (100x5x10 seed 1, 100x6..9x10, 60x8x6)."""
        if len(self.tis) != 1 or self.root_lag is None or self.inc_value == -math.inf:
            return None
        lag, pi, maxrc = self.root_lag
        K = self.K
        pc, pw, pconv = pi[:K], float(pi[K]), pi[K + 1:]
        s = self.s.astype(np.int64)
        S = int(self.S[0])
        scale = max(1.0, abs(lag))
        delta = lag - self.inc_value + 1e-9 * scale
        if delta < 0:
            return "none"
        tops = np.concatenate([s, [S]])
        bits = int(tops.max(initial=1)).bit_length() + 1
        if (K + 1) * bits > 62:
            return None
        # fields: the K group sums and Lo; guard bits keep every field's sum within (s, S)
        shift = np.array([1 << (bits * k) for k in range(K + 1)], dtype=np.int64)
        guard = int(sum(1 << (bits * k + bits - 1) for k in range(K + 1)))
        tg = int(tops @ shift) | guard  # tg - w keeps every guard bit iff w <= (s, S) field by field
        ys = int(s @ shift[:K])
        lomask = ((1 << bits) - 1) << (bits * K)

        def lo_of(e):
            """The Lo field (the top one) of encoded states."""
            return (e & lomask) >> (bits * K)
        opts = []  # per family: (encoded (y, lo), a, its pruning bound, hi, row), by bound
        for f, fm in enumerate(self.fams):
            a = maxrc[f] - fm.V + fm.Z @ pc + pconv[f]
            lo, hi = fm.lo[:, 0].astype(np.int64), fm.hi[:, 0].astype(np.int64)
            lb = a + np.minimum(pw * lo, pw * hi)  # the row's least loss, >= 0 up to rounding
            rows = np.flatnonzero(lb <= delta)
            rows = rows[np.argsort(lb[rows], kind="stable")]
            enc = fm.Y[rows].astype(np.int64) @ shift[:K] + lo[rows] * int(shift[K])
            opts.append((enc, a[rows], np.maximum(lb[rows], 0.0), hi[rows], rows))
        seq = [f for f, fm in enumerate(self.fams) for _ in range(fm.count)]
        self.stats["bp_conv_rows"] = sum(len(op[0]) for op in opts)
        if self.stats["bp_conv_rows"] > row_cap:
            self.stats["bp_conv"] = "over the row cap"
            return None

        def expand(part):
            """States after the nodes of ``part``: (encoded sums, Hi, least sum a, back-pointers)."""
            enc, his, acc = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1)
            backs = []
            for f in part:
                oe, oa, ol, oh = opts[f][:4]
                # the state's bound: sum a + min(pw Lo, pw Hi) (Lo is the top field)
                los = lo_of(enc)
                bnd = acc + np.minimum(pw * los, pw * his)
                order = np.argsort(bnd, kind="stable")
                enc, his, acc, bnd = enc[order], his[order], acc[order], bnd[order]
                if backs:
                    backs[-1] = (backs[-1][0][order], backs[-1][1][order])
                prev, pick, total = [], [], 0
                for j in range(len(oe)):
                    if j % 64 == 0 and self.left() <= 0:
                        self.stats["bp_conv"] = "past the deadline"
                        return None
                    # bound of state + row >= bound of state + the row's least loss: a
                    # prefilter; the exact bound is checked on the pairs below
                    n = int(np.searchsorted(bnd, delta - ol[j], side="right"))
                    if n == 0:
                        break  # rows sorted by their least loss: no later one fits either
                    hit = np.flatnonzero(((tg - (enc[:n] + oe[j])) & guard) == guard)
                    if len(hit):
                        prev.append(hit)
                        pick.append(np.full(len(hit), j))
                        total += len(hit)
                        if total > pair_cap:
                            self.stats["bp_conv"] = "over the pair cap"
                            return None
                if not prev:
                    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), backs
                prev, pick = np.concatenate(prev), np.concatenate(pick)
                ne, nh, na = enc[prev] + oe[pick], np.minimum(his[prev] + oh[pick], S), acc[prev] + oa[pick]
                nlo = lo_of(ne)
                ok = na + np.minimum(pw * nlo, pw * nh) <= delta
                prev, pick, ne, nh, na = prev[ok], pick[ok], ne[ok], nh[ok], na[ok]
                o = np.lexsort((na, nh, ne))
                first = np.ones(len(o), dtype=bool)
                first[1:] = (ne[o][1:] != ne[o][:-1]) | (nh[o][1:] != nh[o][:-1])
                keep = o[first]
                backs.append((prev[keep], pick[keep]))
                enc, his, acc = ne[keep], nh[keep], na[keep]
                self.stats["bp_conv_states"] = max(self.stats.get("bp_conv_states", 0), len(enc))
            return enc, his, acc, backs

        h = len(seq) // 2
        A = expand(seq[:h])
        B = None if A is None else expand(seq[h:])
        if B is None:
            return None
        ea, ha, aa, ba = A
        eb, hb, ab, bb = B
        if len(ea) == 0 or len(eb) == 0:
            return "none"
        # join on the y sums (y_A + y_B = s); then Lo_A + Lo_B <= S <= Hi_A + Hi_B
        yb = eb & ~lomask
        ob = np.argsort(yb, kind="stable")
        want = ys - (ea & ~lomask)
        start = np.searchsorted(yb[ob], want, side="left")
        stop = np.searchsorted(yb[ob], want, side="right")
        cnt = stop - start
        if cnt.sum() == 0:
            return "none"
        if int(cnt.sum()) > pair_cap or self.left() <= 0:  # the join's arrays grow with its pairs
            self.stats["bp_conv"] = "over the pair cap" if self.left() > 0 else "past the deadline"
            return None
        ia = np.repeat(np.arange(len(ea)), cnt)
        ib = ob[np.repeat(start, cnt) + (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt))]
        loa, lob = lo_of(ea[ia]), lo_of(eb[ib])
        ok = (loa + lob <= S) & (ha[ia] + hb[ib] >= S)
        if not ok.any():
            return "none"
        tot = np.where(ok, aa[ia] + ab[ib] + pw * S, np.inf)
        k = int(np.argmin(tot))
        if tot[k] > delta:
            return "none"

        def back(part, backs, i):
            out = []
            for lvl in range(len(part) - 1, -1, -1):
                prev, pick = backs[lvl]
                f = part[lvl]
                out.append((f, int(opts[f][4][int(pick[i])])))
                i = int(prev[i])
            return out

        nodes = back(seq[:h], ba, int(ia[k])) + back(seq[h:], bb, int(ib[k]))
        # worker counts: lo each, then up to hi until S (sum lo <= S <= sum hi)
        o = [int(self.fams[f].lo[i, 0]) for f, i in nodes]
        need = S - sum(o)
        for n, (f, i) in enumerate(nodes):
            add = min(need, int(self.fams[f].hi[i, 0]) - o[n])
            o[n] += add
            need -= add
        return float(tot[k]), [(f, i, (o[n],)) for n, (f, i) in enumerate(nodes)]

    def _root_proof(self) -> bool:
        """Try the proof by convolution (``_convolve``) with the root's duals and the current
        incumbent; True when it proves the incumbent (its plan taken, or none beats it). The
        root's duals bound every plan, so a proof found later in the search is as good."""
        t0 = time.monotonic()
        conv = self._convolve()
        self.stats["bp_conv_seconds"] = round(self.stats.get("bp_conv_seconds", 0.0) + time.monotonic() - t0, 3)
        self.stats["bp_conv_tries"] = self.stats.get("bp_conv_tries", 0) + 1
        if conv is None:
            return False
        # proven: the best plan within the margin, or none beats z
        self.stats["bp_conv"] = "plan" if conv != "none" else "none within the margin"
        if conv == "none":
            return True
        nodes = [(f, tuple(int(q) for q in self.fams[f].Y[i]), o) for f, i, o in conv[1]]
        val = sum(float(self.fams[f].V[i]) for f, i, _ in conv[1])
        tot = np.sum([y for _, y, _ in nodes], axis=0)
        if (not np.array_equal(tot, self.s) or sum(o[0] for _, _, o in nodes) != int(self.S[0])
                or abs(val - (self.root_lag[0] - conv[0])) > 1e-6 * max(1.0, abs(val))):
            self.stats["bp_conv"] = "inconsistent"  # not expected: the search goes on as without it
            return False
        if not self.set_incumbent(nodes) and val > self.inc_value + 1e-9 * max(1.0, abs(val)):
            self.stats["bp_conv"] = "inconsistent"  # its plan was not taken: no proof from it
            return False
        return True

    def _polish(self) -> None:
        """Run ``polish`` from the incumbent when it has risen (by over 1e-6 relative) since the
        last run, at most ``POLISH_TRIES`` times; a better plan becomes the incumbent. Why: the
        tree's incumbents are integral LP solutions, often a few moves from a better plan; at
        100x5x10 the tree's first one (55.6800, node 61) is polished to the optimum 55.9446 in
        about 1 s, while the tree alone reached it after 684 nodes."""
        tol = 1e-6 * max(1.0, abs(self.inc_value))
        if self.inc_value <= self._polished + tol or self.stats.get("bp_polish", 0) >= POLISH_TRIES:
            return
        self.stats["bp_polish"] = self.stats.get("bp_polish", 0) + 1
        nodes = self.polish(self.inc)
        before = self.inc_value
        if nodes is not None and self.set_incumbent(nodes):
            self.stats["bp_polish_gain"] = round(float(self.stats.get("bp_polish_gain", 0.0) + self.inc_value - before), 9)
        self._polished = self.inc_value

    def _conv_retry(self) -> float | None:
        """After a convolution that proved nothing: the margin a better incumbent must narrow
        before it is tried again; inf when there was no incumbent yet; None when it is not
        tried again (not applicable, inconsistent, stopped by the clock, or ``CONV_TRIES``
        tries made)."""
        if self.root_lag is None or len(self.tis) != 1 or self.stats.get("bp_conv_tries", 0) >= CONV_TRIES:
            return None
        if self.inc_value == -math.inf:
            return math.inf
        if self.stats.get("bp_conv") in ("over the pair cap", "over the row cap"):
            return self.root_lag[0] - self.inc_value
        return None

    # --- search --------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Best-first search; returns status, value (intra-node), bound and the incumbent."""
        heap: list = []
        tick = 0
        root_bound = None
        # heap entries: (-bound, tick, branch rows, views, solved); solved = (lambda, the
        # children's views) when strong branching already ran the node's column generation
        heapq.heappush(heap, (-math.inf, tick, [], [_View(fm, None) for fm in self.fams], None))
        self._polished = self.inc_value  # a start given before the search (the seeding search's) is not polished
        unresolved = -math.inf  # bound of nodes left without a plan or a branch
        status = "optimal"
        self.found = False
        conv_delta = None  # the margin of a convolution stopped over its caps, to retry below
        while heap and not (self.found and not self.enum_all):
            negb, _, rows, views, solved = heap[0]
            pb = -negb
            scale = max(1.0, abs(self.inc_value)) if self.inc_value > -math.inf else 1.0
            if pb <= self.inc_value + (-1e-7 if self.enum_all else 1e-7) * scale:
                heap.clear()
                break
            if self.left() <= 0:
                status = "feasible"
                break
            if self.polish is not None and self.inc is not None and self.cutoff is None and not self.enum_all:
                self._polish()
            if (conv_delta is not None and self.inc_value > -math.inf
                    and self.root_lag[0] - self.inc_value < conv_delta - 1e-6 * max(1.0, abs(self.inc_value))):
                # a better incumbent narrows the root's margin: the convolution may fit now
                if self._root_proof():
                    heap.clear()
                    unresolved = -math.inf  # the root's duals bound those nodes too
                    break
                conv_delta = self._conv_retry()
            heapq.heappop(heap)
            self.stats["bp_nodes"] += 1
            if solved is not None:  # converged during the parent's strong branching: not again
                b = pb
                lam, cviews = solved
                self.stats["bp_reused"] = self.stats.get("bp_reused", 0) + 1
            else:
                b, lam, cviews = self.solve_node(rows, views)
            b = min(b, pb)
            if root_bound is None:
                root_bound = b
                self.stats["bp_root_bound"] = b
                if self.convolve and not self.enum_all and lam is not None:
                    if self._root_proof():
                        heap.clear()
                        break
                    conv_delta = self._conv_retry()
            if b == -math.inf:  # no plan in this node
                continue
            if lam is None:  # stopped early: the node stays open with the bound it has
                tick += 1
                heapq.heappush(heap, (-b, tick, rows, views, None))
                status = "feasible"
                break
            if b <= self.inc_value + (-1e-7 if self.enum_all else 1e-7) * scale:
                continue
            # strong branching costs pricing passes: fewer candidates while the tables are big
            n_strong = self.strong if sum(len(v) for v in cviews) <= self.strong_rows else min(self.strong, 2)
            cands = self._branch(lam, max(n_strong, self.screen))
            if len(cands) > n_strong:
                cands = self._screen(cands, rows, b, n_strong)
            if not cands:
                plan = self._integral_plan(lam)
                if plan is not None and self.enum_all:
                    # record the multiset, then split off exactly it: count_y <= c - 1,
                    # count_y >= c + 1, count_y = c for its first content y not yet fixed
                    ms: dict = {}
                    for f, y, _ in plan:
                        key = (f, self.fams[f].find(y))
                        ms[key] = ms.get(key, 0) + 1
                    if ms not in self.plans:
                        self.plans.append(ms)
                    if self.cutoff is None:
                        self.set_incumbent(plan)
                        scale = max(1.0, abs(self.inc_value))
                    fixed = {(m, sg, r) for m, sg, r in rows}
                    for (f, i), c in sorted(ms.items()):
                        mid = self._mask((f, "y", i))
                        if (mid, 1, float(c)) in fixed and (mid, -1, float(-c)) in fixed:
                            continue
                        for extra in ([(mid, 1, float(c - 1))], [(mid, -1, float(-(c + 1)))],
                                      [(mid, 1, float(c)), (mid, -1, float(-c))]):
                            if extra[0][2] < 0 and extra[0][1] == 1:
                                continue  # count <= -1: empty
                            tick += 1
                            heapq.heappush(heap, (-b, tick, rows + extra, cviews, None))
                        break
                    continue
                if plan is not None:
                    self.set_incumbent(plan)
                    continue
                # the LP leans on artificials (the node may have no plan): no plan and no
                # branch here, so the node stays unresolved with its (valid) bound
                unresolved = max(unresolved, b)
                continue
            # strong branching: bound both children of a few candidates (column generation to
            # convergence, cheap with the shared pool) and branch where the weaker child drops most
            best = None
            for mid, a in cands:
                kids = []
                for sign, rhs in ((1, math.floor(a)), (-1, -math.ceil(a))):
                    r2 = rows + [(mid, sign, float(rhs))]
                    cb, clam, kv = (self.solve_node(r2, cviews) if len(cands) > 1 else (b, None, cviews))
                    cb = min(cb, b)
                    if clam is not None and cb > self.inc_value and not self.enum_all and not self._branch(clam):
                        plan = self._integral_plan(clam)
                        if plan is not None and self.set_incumbent(plan):
                            scale = max(1.0, abs(self.inc_value))
                    kids.append((cb, r2, (clam, kv) if clam is not None and len(cands) > 1 else None))
                score = (b - kids[0][0] + 1e-6) * (b - kids[1][0] + 1e-6)
                if best is None or score > best[0]:
                    best = (score, kids)
                if self.left() <= 0:
                    break
            for cb, r2, done in best[1]:
                if cb > self.inc_value + (-1e-7 if self.enum_all else 1e-7) * scale:
                    tick += 1
                    heapq.heappush(heap, (-cb, tick, r2, cviews, done))
        self.complete = not heap and unresolved == -math.inf and self.left() > 0
        open_bound = max([e[0] * -1 for e in heap], default=-math.inf)
        bound = max(self.inc_value, open_bound, unresolved)
        if bound > self.inc_value + 1e-7 * max(1.0, abs(self.inc_value) if self.inc is not None else 1.0):
            status = "feasible"
        if self.inc is None:
            status = "unknown"  # infeasibility is not proven here (big-M artificials)
        self.stats["bp_open"] = len(heap)
        return {"status": status, "value": None if self.inc is None else self.inc_value,
                "bound": None if bound == -math.inf else bound, "incumbent": self.inc}


# --- the configuration model's view (traffic_plan, phase 2) ---------------------------------------

def bp_column(bp: TrafficBP, f: int, i: int, o) -> Column:
    """A configuration-model column (``_patterns.build_traffic``'s rows and payload)."""
    fm = bp.fams[f]
    ys = tuple((k, int(q)) for k, q in enumerate(fm.Y[i]) if q > 0)
    os_ = tuple((ti, int(x)) for ti, x in zip(bp.tis, o))
    return node_column(f, ("conv", "node", fm.cls[0]), ys, os_, float(fm.V[i]))


class BPTable:
    """Exact enumeration of a family's columns by reduced cost from the B&P table (one
    topology), for ``PatternModel.enumerate`` (traffic phase 2)."""

    def __init__(self, bp: TrafficBP, f: int):
        self.bp, self.f = bp, f

    def at_least(self, duals: dict, threshold: float, cap: int) -> list[Column] | None:
        bp, fm = self.bp, self.bp.fams[self.f]
        pc = np.array([duals.get(("cover", k), 0.0) for k in range(bp.K)])
        pw = duals.get(("workers", bp.tis[0]), 0.0)
        base = fm.V - fm.Z @ pc - duals.get(("conv", "node", fm.cls[0]), 0.0)
        out: list[Column] = []
        for o in range(int(fm.lo.min(initial=0)), int(fm.hi.max(initial=0)) + 1):
            sel = np.nonzero((fm.lo[:, 0] <= o) & (o <= fm.hi[:, 0]) & (base - pw * o >= threshold))[0]
            if len(out) + len(sel) > cap:
                return None
            out.extend(bp_column(bp, self.f, int(i), (o,)) for i in sel)
        return out
