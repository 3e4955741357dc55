"""Search over instance-count vectors for even-routing throughput at a fixed probe rate R:
the bounds such a search would prune with, and an estimate of how large the search is.

Measured on branch tput-enum; since branch tput-six every exact method's even-routing solve
runs :func:`search` first as a proof when its estimated size fits the time left
(``throughput._count_search_stage``, gated by :func:`dive_estimate`); ``bench_throughput_scaling.py
--enumeration``, ``--search`` and ``--partial-cuts`` measure it. The search (:func:`search`): fix N_c component by
component; cut a partial vector when a valid relaxation at R is infeasible; decide each complete
vector left by the fixed-count integer program (``throughput.fixed_n_probe``). If every complete
vector is refuted at R = best x (1 + 1e-5), the best rate is proven. Whether that can finish in
a time limit depends on how many vectors survive the relaxations, which :func:`estimate`
measures (Knuth's estimator) without running the search. docs/formulations.md (throughput,
"Search over the count vector") has the figures: it proves hetero 6 x 6 in 10-15 minutes,
not within 60 s, and cannot finish on hetero 8 x 10 (over 1e8 LPs); where the MILPs finish
(5 x 5) its proof alone took 1-2.5 times their whole solve (tput-enum); on the 3-machine Nasiri
instances it is the fastest proof (tput-six), hence the size gate.

Relaxations (each is satisfied by every placement whose counts are in the node and which
sustains R, so an infeasible answer cuts the node):
* :class:`CountLP`, the compact count-class LP at R (as ``_tputbp.compact_lp_feasible``, as
  feasibility, no phase 1) with identical machines aggregated into types t of m_t machines:
  y_ck in [0, 1], z_ckt in [0, m_t u_ckt]; sum_k y_ck = 1; sum_t z_ckt = k y_ck;
  z_ckt <= m_t u_ckt y_ck; sum_ck w_ckt z_ckt <= m_t cap_t; sum_ck z_ckt <= m_t K, with
  w_ckt = R a_ct g_c / k + MET_ct and u from ``class_caps`` (and ``lp_filter``) at R. The
  aggregation loses nothing: machines of one type have the same u, w and cap, so an aggregated
  solution split evenly over the type's machines is a per-machine one. Fixing N_c = k sets
  y_ck = 1 (the other classes of c to 0); with every N_c fixed it is the fixed-count LP (n_cj
  continuous). One HiGHS model (highspy) is kept and only column bounds change.
* :meth:`CountLP.fill_feasible`, for a complete vector N: the same LP with every capacity cap_t replaced
  by the largest load at most cap_t that whole instances can make on one machine of type t
  (``best_fill``: a subset sum over n_c <= u_c instances of weight w_c, sum n_c <= K;
  incompatibilities ignored, so it stays a relaxation).
Neither has incompatibility rows (dropping rows keeps a relaxation). Both trust HiGHS's
"infeasible" (as ``lp_filter`` does); anything else keeps the node.
"""

from __future__ import annotations

import math
import random
import time

import numpy as np

from .throughput import CAP_SLACK as SLACK
from .throughput import TPData, class_caps, classless, fixed_n_probe, lp_filter, machine_groups
from .throughput import piece_weight as _weight


def search_classes(d: TPData, R: float, deadline: float | None = None,
                   max_range: float | None = None) -> dict[tuple[int, int], list[int]]:
    """The count classes a search at R starts from: ``class_caps`` then ``lp_filter`` at R
    (which may stop at ``deadline`` or past ``max_range``: see there)."""
    return lp_filter(d, R, class_caps(d, R), deadline=deadline, max_range=max_range)


class CountLP:
    """The compact count-class LP at rate R over ``caps``, machines aggregated by type."""

    def __init__(self, d: TPData, R: float, caps: dict[tuple[int, int], list[int]]):
        import highspy

        self.d, self.R, self.caps = d, R, caps
        self.types = machine_groups(d)
        self.classes = sorted(caps)
        self.yidx = {ck: i for i, ck in enumerate(self.classes)}
        self.by_comp = {c: [ck for ck in self.classes if ck[0] == c] for c in range(d.C)}
        self.lps, self.seconds = 0, 0.0
        self._ok = highspy.HighsModelStatus.kInfeasible
        h = self.h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        inf = highspy.kHighsInf
        ny = len(self.classes)
        self.load_row: dict[int, int] = {}  # type -> its load row
        zs = []  # (class index, type index, m_t u)
        for i, ck in enumerate(self.classes):
            for t, js in enumerate(self.types):
                U = len(js) * caps[ck][js[0]]
                if U > 0:
                    zs.append((i, t, U))
        h.addVars(ny + len(zs), np.zeros(ny + len(zs)), np.array([1.0] * ny + [float(U) for _, _, U in zs]))

        def row(lo, hi, idx, val):
            h.addRow(lo, hi, len(idx), np.array(idx, dtype=np.int32), np.array(val, dtype=float))

        for c in range(d.C):
            idx = [self.yidx[ck] for ck in self.by_comp[c]]
            row(1.0, 1.0, idx, [1.0] * len(idx))
        # zs's columns by class and by type, listed once (scanning zs for each class cost 2.2 s
        # of quadratic work on hetero 20 x 30's 5,995 classes, session 27)
        of_class: list[list[tuple[int, int]]] = [[] for _ in self.classes]
        of_type: list[list[tuple[int, tuple[int, int]]]] = [[] for _ in self.types]
        for q, (i, t, U) in enumerate(zs):
            of_class[i].append((ny + q, U))
            of_type[t].append((ny + q, self.classes[i]))
        for i, (c, k) in enumerate(self.classes):
            mine = of_class[i]
            row(0.0, 0.0, [i] + [q for q, _ in mine], [-float(k)] + [1.0] * len(mine))
            for q, U in mine:
                row(-inf, 0.0, [q, i], [1.0, -float(U)])
        for t, js in enumerate(self.types):
            j = js[0]
            mine = of_type[t]
            if mine:
                self.load_row[t] = h.getNumRow()
                row(-inf, len(js) * (d.cap[j] * (1 + SLACK) + SLACK), [q for q, _ in mine],
                    [_weight(d, R, c, k, j) for _, (c, k) in mine])
                row(-inf, float(len(js) * d.K), [q for q, _ in mine], [1.0] * len(mine))

    def fix(self, c: int, k: int | None) -> None:
        """N_c = k (k None: every class of c allowed again)."""
        for ck in self.by_comp[c]:
            lo, hi = (0.0, 1.0) if k is None else ((1.0, 1.0) if ck[1] == k else (0.0, 0.0))
            self.h.changeColBounds(self.yidx[ck], lo, hi)

    def fill_caps(self, fixed: dict[int, int]) -> None:
        """Replace each type's capacity by an upper bound on what whole instances can fill on one
        of its machines: :func:`best_fill` over the pieces of the fixed components (their class)
        and of every class left of the free ones (several classes of one free component may
        share the machine: a relaxation), stopped at cap (1 - 1e-4) or 2000 nodes (then cap)."""
        import highspy

        d, R = self.d, self.R
        for t, r in self.load_row.items():
            j = self.types[t][0]
            w, u = [], []
            for ck in self.classes:
                c, k = ck
                if fixed.get(c, k) == k and self.caps[ck][j] > 0:
                    w.append(_weight(d, R, c, k, j))
                    u.append(self.caps[ck][j])
            fill = best_fill(w, u, d.cap[j], d.K, near=1e-4, budget=2000)
            self.h.changeRowBounds(r, -highspy.kHighsInf, len(self.types[t]) * (fill * (1 + SLACK) + SLACK))

    def plain_caps(self) -> None:
        """The capacities cap_t again (after a fill)."""
        import highspy

        for t, r in self.load_row.items():
            j = self.types[t][0]
            self.h.changeRowBounds(r, -highspy.kHighsInf, len(self.types[t]) * (self.d.cap[j] * (1 + SLACK) + SLACK))

    def fill_feasible(self, N: list[int]) -> bool:
        """The fill test of a complete vector N already fixed by :meth:`fix`: this LP (y_cN_c = 1)
        with each type's capacity replaced by its best fill by whole instances of the classes N
        (:func:`best_fill`), the other rows as they are; the capacities are restored afterwards.
        False proves that no placement with counts N sustains R."""
        import highspy

        d, R = self.d, self.R
        if any((c, N[c]) not in self.caps for c in range(d.C)):
            return False
        for t, r in self.load_row.items():
            j = self.types[t][0]
            here = [c for c in range(d.C) if self.caps[(c, N[c])][j] > 0]
            fill = best_fill([_weight(d, R, c, N[c], j) for c in here], [self.caps[(c, N[c])][j] for c in here],
                             d.cap[j], d.K)
            self.h.changeRowBounds(r, -highspy.kHighsInf, len(self.types[t]) * (fill * (1 + SLACK) + SLACK))
        try:
            return self.feasible()
        finally:
            self.plain_caps()

    def feasible(self) -> bool:
        """False only when HiGHS proves the LP infeasible (anything else keeps the node)."""
        t = time.perf_counter()
        self.h.run()
        self.lps += 1
        st = self.h.getModelStatus()
        self.seconds += time.perf_counter() - t
        return st != self._ok


def best_fill(weights: list[float], counts: list[int], cap: float, K: int, near: float = 0.0,
              budget: int | None = None) -> float:
    """The largest sum_i n_i weights[i] <= cap with 0 <= n_i <= counts[i] and sum n_i <= K
    (depth-first, heaviest first; stops early when the capacity is met). An upper bound on it
    in two cases: ``cap`` itself once a fill reaches cap (1 - near), or once ``budget`` search
    nodes are spent. :func:`best_fill_groups` with one option per group."""
    return best_fill_groups([[(w, u)] for w, u in zip(weights, counts)], cap, K, near, budget)


def best_fill_groups(groups: list[list[tuple[float, int]]], cap: float, K: int, near: float = 0.0,
                     budget: int | None = None) -> float:
    """The largest load <= cap from pieces where each group (a component) uses at most one of its
    options (weight w, at most u pieces), at most K pieces in all; ``near`` and ``budget`` as in
    :func:`best_fill` (then ``cap``, an upper bound). Depth-first, groups by largest weight."""
    groups = sorted((sorted(g, key=lambda o: -o[0]) for g in groups), key=lambda g: -g[0][0])
    limit = cap * (1 + SLACK) + SLACK
    rest = [0.0] * (len(groups) + 1)
    for i in reversed(range(len(groups))):
        rest[i] = rest[i + 1] + max(w * u for w, u in groups[i])
    best, spent = 0.0, 0

    def rec(i: int, load: float, left: int) -> bool:
        nonlocal best, spent
        spent += 1
        if load > best:
            best = load
            if best >= cap * (1 - near):
                best = cap
                return True
        if budget is not None and spent > budget:
            best = cap
            return True
        if i == len(groups) or left == 0 or load + rest[i] <= best:
            return False
        for w, u in groups[i]:
            for x in range(min(u, left, int((limit - load) // w) if w > 0 else left), 0, -1):
                if rec(i + 1, load + x * w, left - x):
                    return True
        return rec(i + 1, load, left)

    rec(0, 0.0, K)
    return min(best, cap)


def estimate(d: TPData, R: float, dives: int, deadline: float | None = None, order: list[int] | None = None,
             leaf_probe_limit: float = 5.0, seed: int = 0, partial_fill: bool = False) -> dict:
    """Knuth's estimator of the count-vector search at R. Each dive fixes the components in
    ``order`` (default: fewest classes first); at each depth it solves the CountLP of every
    child (each class of the next component), counts the children not cut (b_i), and descends
    into one of them at random; prod_i b_i over the first i depths is an unbiased estimate of
    the number of nodes not cut at depth i. At the last depth the children left are also tested
    by :meth:`CountLP.fill_feasible`, and those left after that by ``fixed_n_probe`` at R. Returns the
    mean estimates per depth, of complete vectors after the LP, after the fill test and not
    refuted by the fixed-count MILP, and the mean seconds of each test. ``partial_fill``: each
    node's LP gets the capacities of :meth:`CountLP.fill_caps`."""
    caps = search_classes(d, R)
    ks = {c: sorted(k for (cc, k) in caps if cc == c) for c in range(d.C)}
    out = {"classes": len(caps), "range_product": math.prod(len(v) for v in ks.values()), "dives": 0}
    if classless(d.C, caps):
        return out
    order = sorted(range(d.C), key=lambda c: len(ks[c])) if order is None else order
    lp = CountLP(d, R, caps)
    rng = random.Random(seed)
    depth = [0.0] * d.C
    leaves = {"lp": 0.0, "fill": 0.0, "milp": 0.0}
    fill_s = milp_s = 0.0
    fills = milps = unknown = 0
    while out["dives"] < dives and (deadline is None or time.monotonic() < deadline):
        out["dives"] += 1
        prod, N = 1.0, [0] * d.C
        for pos, c in enumerate(order):
            kids = []
            for k in ks[c]:
                lp.fix(c, k)
                if partial_fill:
                    lp.fill_caps({**{o: N[o] for o in order[:pos]}, c: k})
                if lp.feasible():
                    kids.append(k)
            prod *= len(kids)
            depth[pos] += prod
            if not kids:
                break
            if pos < d.C - 1:
                N[c] = rng.choice(kids)
                lp.fix(c, N[c])
                continue
            n_fill = n_milp = 0
            for k in kids:
                N[c] = k
                lp.fix(c, k)
                t = time.perf_counter()
                ok = lp.fill_feasible(N)
                fill_s += time.perf_counter() - t
                fills += 1
                if ok:
                    n_fill += 1
                    t = time.perf_counter()
                    left = leaf_probe_limit if deadline is None else max(0.05, min(leaf_probe_limit, deadline - time.monotonic()))
                    st, _ = fixed_n_probe(d, N, R, left, confirm=True)
                    milp_s += time.perf_counter() - t
                    milps += 1
                    if st != "infeasible":
                        n_milp += 1
                        unknown += st == "unknown"
            leaves["lp"] += prod
            leaves["fill"] += prod / len(kids) * n_fill
            leaves["milp"] += prod / len(kids) * n_milp
        for c in order:
            lp.fix(c, None)
    n = max(out["dives"], 1)
    out.update(order=order, depth=[x / n for x in depth], leaves_lp=leaves["lp"] / n, leaves_fill=leaves["fill"] / n,
               leaves_milp=leaves["milp"] / n, milp_unknown=unknown, lps=lp.lps,
               lp_ms=1000 * lp.seconds / max(lp.lps, 1), fill_tests=fills, fill_ms=1000 * fill_s / max(fills, 1),
               milps=milps, milp_ms=1000 * milp_s / max(milps, 1))
    return out


MORE_DIVES = 256  # search(max_lps=..., budget=...): dives past the first ``dives`` up to this many ...
MORE_DIVES_SHARE = 0.1  # ... while within this share of the budget (session 51: hetero 6 x 6) ...
MORE_DIVES_COST = 0.1  # ... and below this share of the search's estimated seconds (LPs and leaf tests)


class _Stop(Exception):
    pass


def dive_estimate(lp: CountLP, ks: dict[int, list[int]], order: list[int], dives: int, seed: int = 0,
                  deadline: float | None = None, stop_above: float | None = None,
                  leaf: dict | None = None, more: int = 0, more_until: float | None = None,
                  stop_seconds: float | None = None) -> tuple[float, int]:
    """Knuth's estimate of how many CountLPs the search below solves (the children tried at
    every node not cut, summed over the depths), from ``dives`` random dives on ``lp`` (left
    with no component fixed); returns (estimate, dives done). With ``stop_above``, the dives stop after
    an eighth of them once the running estimate passes 4 x ``stop_above`` (a size gate only);
    with ``stop_seconds``, once the search's seconds estimated so far pass it (its LPs at the
    dives' own seconds per LP, and with ``leaf`` its fill tests and fixed-count programs).
    ``leaf``: a dict that gets the estimate of the complete vectors the LP leaves (``leaves``,
    the search's fill tests) and the seconds of one fill test (:meth:`CountLP.fill_feasible`)
    timed on a random such vector of each dive that reaches one (``fill_s`` over ``fills``);
    when that vector passes the fill test, the seconds of its fixed-count program
    (``fixed_n_probe`` at R, as the search's first probe of it: ``milp_s`` over ``milps``) and
    the estimate of the vectors that pass (``passed``), and the search's seconds by all that
    (``search_s``: as for ``stop_seconds``).
    ``more``: after the first ``dives``, go on up to ``more`` dives in all while the clock is
    before ``more_until`` (and ``deadline``) and the dives so far took less than ``MORE_DIVES_COST``
    of the time the search they estimate would (a search estimated cheap is cheaper to run than to
    estimate better):
    the estimator is heavy-tailed, and a few dives tend to miss the large subtrees that make
    its mean."""
    rng = random.Random(seed)
    total, done = 0.0, 0
    leaves = 0.0
    lps0, secs0, t0 = lp.lps, lp.seconds, time.monotonic()
    passed = 0.0

    def search_seconds() -> float:
        """The search's seconds by the dives so far: the running estimate of its LPs x the dives'
        own seconds per LP, plus (with ``leaf``) the estimated complete vectors x the seconds of
        one fill test and the estimated passing ones x the seconds of one fixed-count program.
        (Session 51 counted the LPs alone here: on tiny 5 x 5 the dives then ran 46 times, 4.3 s
        of a 60 s solve, before the whole prediction, 560 s, skipped the search; 0.5 s before.)"""
        s = total / done * (lp.seconds - secs0) / max(lp.lps - lps0, 1)
        if leaf is not None:
            s += leaves / done * leaf.get("fill_s", 0.0) / max(leaf.get("fills", 0), 1)
            s += passed / done * leaf.get("milp_s", 0.0) / max(leaf.get("milps", 0), 1)
        return s

    def go_on() -> bool:
        if done < dives:
            return True
        now = time.monotonic()
        return (done < more and more_until is not None and now < more_until
                and now - t0 < MORE_DIVES_COST * search_seconds())

    while go_on() and (deadline is None or time.monotonic() < deadline):
        if done >= max(1, dives // 8) and (
                (stop_above is not None and total / done > 4 * stop_above)
                or (stop_seconds is not None and search_seconds() > stop_seconds)):
            break
        done += 1
        prod = 1.0
        N = [0] * lp.d.C
        for c in order:
            total += prod * len(ks[c])
            kids = []
            for k in ks[c]:
                lp.fix(c, k)
                if lp.feasible():
                    kids.append(k)
            prod *= len(kids)
            if not kids:
                break
            N[c] = rng.choice(kids)
            lp.fix(c, N[c])
            if leaf is not None and c == order[-1]:
                leaves += prod
                lps, secs, t = lp.lps, lp.seconds, time.perf_counter()
                ok = lp.fill_feasible(N)
                lp.lps, lp.seconds = lps, secs  # the LP counts stay the dives' own
                leaf["fill_s"] = leaf.get("fill_s", 0.0) + time.perf_counter() - t
                leaf["fills"] = leaf.get("fills", 0) + 1
                if ok:  # the search decides such a vector by the fixed-count program: time one
                    t = time.perf_counter()
                    left = None if deadline is None else max(0.05, deadline - time.monotonic())
                    fixed_n_probe(lp.d, list(N), lp.R, left, confirm=True)
                    leaf["milp_s"] = leaf.get("milp_s", 0.0) + time.perf_counter() - t
                    leaf["milps"] = leaf.get("milps", 0) + 1
                    passed += prod
        for c in order:
            lp.fix(c, None)
    if leaf is not None:
        leaf["leaves"] = leaves / max(done, 1)
        leaf["passed"] = passed / max(done, 1)
        leaf["search_s"] = search_seconds() if done else 0.0
    return total / max(done, 1), done


def search(d: TPData, rate: float, n: list[list[int]] | None, deadline: float | None = None, step: float = 1e-5,
           order: list[int] | None = None, probe_limit: float | None = None, stats: dict | None = None,
           partial_fill: bool = False, max_lps: float | None = None, dives: int = 8,
           caps: dict[tuple[int, int], list[int]] | None = None, budget: float | None = None,
           cost: float = 2.5, max_range: float | None = None):
    """The count-vector search itself, as an optimiser: depth-first over N (components in
    ``order``, default fewest classes first), at the probe rate R = best x (1 + step). A
    partial vector is cut when its CountLP is infeasible; a complete one when
    :meth:`CountLP.fill_feasible` is False; a complete one left is re-optimised by
    ``throughput.best_for_counts`` from the best rate (a placement found raises the incumbent,
    and R with it: the LP is rebuilt at the new R, the cuts already made stay valid because
    loads only grow with R); it is refuted when that search ends on an infeasible probe.
    Returns (best rate, n, proven): ``proven`` means every count vector was cut or refuted at
    the final R, i.e. no placement sustains best x (1 + step). A deadline, or a probe stopped
    by ``probe_limit``, leaves it unproven. ``max_lps``: first estimate the LPs the search
    needs (:func:`dive_estimate`, ``dives`` dives) and give up at once, unproven, when the
    estimate is larger, or (with ``budget`` seconds) when the predicted seconds (``stats["predicted_s"]``:
    the estimated LPs x the seconds of one in the dives, plus the estimated complete vectors
    the LP leaves x the seconds of one fill test, plus those that pass it x the seconds of one
    fixed-count program, both timed in the dives, all x ``cost``) are more than the budget
    (``stats["estimate"]``, ``stats["leaves_estimate"]``, ``stats["passed_estimate"]``,
    ``stats["skipped"]``). Before session 51 four dives (stopped by one cold LP's time) and
    the LPs alone predicted hetero 6 x 6's search at about 120 s of a 300 s solve's 201 s
    budget; it ran 208 s unproven (alone, at the optimum, it takes 381 s: 377,615 LPs, most of
    the time, and 43,689 fill tests), where the back end alone proves the optimum in 110 s.
    ``caps``: the classes of :func:`search_classes` at rate x (1 + step), if already known.
    ``max_range``: give up at once when the product of the count ranges left passes it (before
    any dive); the dives get at most 15 % of ``budget``, and too few dives in that time give up;
    past ``dives``, more dives run (up to ``MORE_DIVES``) within ``MORE_DIVES_SHARE`` of ``budget``."""
    from .throughput import best_for_counts

    stats = {} if stats is None else stats
    for key in ("nodes", "leaves", "fill_cut", "milp_refuted", "incumbents"):
        stats.setdefault(key, 0)
    state = {"best": rate, "n": n, "undecided": 0}
    R = rate * (1 + step)
    caps = search_classes(d, R, deadline, max_range) if caps is None else caps
    ks = {c: sorted(k for (cc, k) in caps if cc == c) for c in range(d.C)}
    if classless(d.C, caps):
        return rate, n, True
    order = sorted(range(d.C), key=lambda c: len(ks[c])) if order is None else order
    prod = math.prod(len(v) for v in ks.values())
    stats["range"] = float(prod) if prod < 10 ** 300 else math.inf  # many components: past float range
    if max_range is not None and stats["range"] > max_range:
        stats["skipped"] = True
        return rate, n, False
    box = {"R": R, "caps": caps, "lp": CountLP(d, R, caps)}
    N = [0] * d.C
    if max_lps is not None:
        lp0 = box["lp"]
        dive_stop = deadline if budget is None else time.monotonic() + 0.15 * budget
        if deadline is not None:
            dive_stop = min(dive_stop, deadline)
        leaf: dict = {}
        more_until = None if budget is None else min(dive_stop, time.monotonic() + MORE_DIVES_SHARE * budget)
        # (before session 51 the seconds gate came from one cold LP, 50 times a warm one on hetero 6 x 6)
        stats["estimate"], done = dive_estimate(lp0, ks, order, dives, deadline=dive_stop, stop_above=max_lps, leaf=leaf,
                                                more=MORE_DIVES, more_until=more_until,
                                                stop_seconds=None if budget is None else 4 * budget / cost)
        stats["dives"] = done
        stats["leaves_estimate"] = leaf["leaves"]
        stats["passed_estimate"] = leaf["passed"]
        stats["predicted_s"] = leaf["search_s"] * cost
        stats["lps"] = stats.get("lps", 0) + lp0.lps
        lp0.lps, lp0.seconds = 0, 0.0
        if done < max(1, dives // 8) or stats["estimate"] > max_lps \
                or (budget is not None and stats["predicted_s"] > budget):
            stats["skipped"] = True
            return rate, n, False

    def raise_rate(r: float, m, pos: int) -> None:
        """A better placement: new incumbent, new R, the LP rebuilt with the path's fixings."""
        state["best"], state["n"] = r, m
        stats["incumbents"] += 1
        stats["lps"] = stats.get("lps", 0) + box["lp"].lps
        R2 = r * (1 + step)
        full = class_caps(d, R2)
        box["R"], box["caps"] = R2, {ck: u for ck, u in full.items() if ck in box["caps"]}
        box["lp"] = CountLP(d, R2, box["caps"])
        for c in order[:pos]:
            if (c, N[c]) in box["caps"]:
                box["lp"].fix(c, N[c])

    def dfs(pos: int) -> None:
        c = order[pos]
        for k in ks[c]:
            if deadline is not None and time.monotonic() > deadline:
                raise _Stop
            if (c, k) not in box["caps"] or any((o, N[o]) not in box["caps"] for o in order[:pos]):
                continue  # the rate rose past this class
            box["lp"].fix(c, k)
            stats["nodes"] += 1
            if partial_fill:
                N[c] = k
                box["lp"].fill_caps({o: N[o] for o in order[:pos + 1]})
            if not box["lp"].feasible():
                continue
            N[c] = k
            if pos < d.C - 1:
                dfs(pos + 1)
                continue
            stats["leaves"] += 1
            if not box["lp"].fill_feasible(N):
                stats["fill_cut"] += 1
                continue
            best_before = state["best"]
            r, m, proven = best_for_counts(d, list(N), best_before, deadline, step=step, probe_limit=probe_limit,
                                           confirm=True)
            if m is not None and r > best_before:
                raise_rate(r, m, pos)
            if proven:
                stats["milp_refuted"] += 1
            else:
                state["undecided"] += 1
        box["lp"].fix(c, None)

    try:
        dfs(0)
        done = True
    except _Stop:
        done = False
    stats["undecided"] = state["undecided"]
    stats["lps"] = stats.get("lps", 0) + box["lp"].lps
    return state["best"], state["n"], done and state["undecided"] == 0
