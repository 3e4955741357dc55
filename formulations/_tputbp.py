"""Per-machine configuration relaxation for even-routing throughput at a fixed probe rate R.

At a fixed R and a count class k of component c ("N_c = k"), every instance of c on machine j
carries the constant load w_cjk(R) = R a_cj g_c / k + MET_cj. A *configuration* of a machine type
t (machines with the same signature ``d.ident``) is an integer vector n_ck >= 0 with
  sum_ck w_tck n_ck <= cap_t,  sum_ck n_ck <= K,  n_ck <= u_tck (``class_caps`` at R),
  at most one class k per component c (a plan gives c one count),
  incompatible components not both present.
Master (phase 1, all variables >= 0):
  min sum_c s_c
  sum_k y_ck + s_c = 1                                  (each component picks a class)
  sum_{t,p} n_pck lambda_tp - k y_ck >= 0               (class k of c gets its k instances)
  sum_p lambda_tp <= m_t                                 (machines of type t)
A placement sustaining R gives a solution with value 0, so a positive optimum proves that no
placement sustains R. Column generation prices each type by an exact Pareto DP when few
(class, n) options have a positive price, else by a small MILP (SciPy's HiGHS).

The proof of "value > 0" does not rest on the LP solver's optimality: for any multipliers
pi_ck >= 0 of the linking rows, Lagrangian duality gives
  value >= L(pi) = sum_c min(1, min_k k pi_ck) - sum_t m_t P_t(pi),
  P_t(pi) = max over configurations of type t of sum_ck pi_ck n_ck  (>= 0: the empty one),
and P_t is bounded from above by the pricing's proof (the MILP's dual bound, or the DP's optimum
with a relative 1e-9). ``L(pi) > 0`` is the certificate. Option ``extra`` adds, per type, the
rows sum_p n_pck lambda_tp <= U_tck y_ck and sum_{p uses (c,k)} lambda_tp <= m_t y_ck (their
multipliers enter the prices and L); measured far too slow, off by default.

``bp_probe`` branches on count-class ranges over this LP. Status: a measured tool for offline
proofs and plan searches (docs/formulations.md, throughput, "Configuration LP and branch and
price"); the exact methods do not call it. With each box's classes filtered by ``lp_filter``
(session 50) it refutes hetero 8 x 10 just above its optimum in about 4 minutes (38 before), but
that still needs the optimum's plan first, and nearly all of its time is the pricing MILPs.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .throughput import CAP_SLACK, TPData, class_caps, classless, machine_groups, piece_weight

SLACK = CAP_SLACK
DP_OPTIONS = 40  # pricing by the Pareto DP up to this many (class, n) options, else by MILP


def _pareto(f: list) -> list:
    """Keep the (weight, value, ...) entries no other entry beats (less or equal weight and
    more value)."""
    f.sort(key=lambda x: (x[0], -x[1]))
    out, top = [], -math.inf
    for x in f:
        if x[1] > top + 1e-12:
            out.append(x)
            top = x[1]
    return out


class ConfigLP:
    """Configuration LP at one rate R over the classes ``caps`` (a class_caps dict)."""

    def __init__(self, d: TPData, R: float, caps: dict | None = None, fixed: dict | None = None, extra: bool = False,
                 greedy: bool = False):
        self.d, self.R, self.extra = d, R, int(extra)
        self.greedy = greedy and not extra
        self.caps = class_caps(d, R) if caps is None else caps
        if fixed is not None:  # fixed[c] = k: only that class for c
            self.caps = {ck: u for ck, u in self.caps.items() if fixed.get(ck[0], ck[1]) == ck[1]}
        self.classes = sorted(self.caps)
        self.cidx = {ck: i for i, ck in enumerate(self.classes)}
        self.types = machine_groups(d)
        self.rho = np.zeros((len(self.types), len(self.classes)))
        self.nu = np.zeros((len(self.types), len(self.classes)))
        self.cols: list[tuple[int, dict[int, int]]] = []  # (type, {class index: n})
        self.seen: set = set()
        self.stats = {"iters": 0, "cols": 0, "pricing_s": 0.0, "lp_s": 0.0, "exact_rounds": 0}
        self.last_res = None  # the last master LP solution (scipy OptimizeResult)

    # weights of class i on type t's representative machine
    def _w(self, t: int, i: int) -> float:
        c, k = self.classes[i]
        return piece_weight(self.d, self.R, c, k, self.types[t][0])

    def price(self, t: int, pi: np.ndarray):
        """max sum_i (pi_i - rho_ti) n_i - nu_ti [n_i > 0] over configurations of type t:
        (value, upper bound, n dict). Exact dynamic programme over components with Pareto
        fronts (weight, value) per instance count; the MILP when components are incompatible or
        more than DP_OPTIONS (class, n) options have a positive price. The upper bound adds
        1e-10 for the options left out as priced at most 1e-12."""
        if self.d.incompatible:
            return self.price_milp(t, pi)
        d, j = self.d, self.types[t][0]
        nopt = sum(self.caps[ck][j] for i, ck in enumerate(self.classes) if pi[i] - self.rho[t][i] > 1e-12)
        if nopt > DP_OPTIONS:
            return self.price_milp(t, pi)
        rho, nu = self.rho[t], self.nu[t]
        capj = d.cap[j] * (1 + SLACK) + SLACK
        opts: dict[int, list] = {}
        for i, (c, k) in enumerate(self.classes):
            prof = pi[i] - rho[i]
            u = self.caps[(c, k)][j]
            if prof <= 1e-12 or u <= 0:
                continue
            w = self._w(t, i)
            for n in range(1, u + 1):
                v = prof * n - nu[i]
                if v > 1e-12:
                    opts.setdefault(c, []).append((n, w * n, v, i))
        # fronts[m] = list of (weight, value, choice) Pareto-optimal, m = instances used
        fronts: list[list] = [[] for _ in range(d.K + 1)]
        fronts[0] = [(0.0, 0.0, ())]
        for c, ol in opts.items():
            new = [list(f) for f in fronts]
            for m in range(d.K + 1):
                for (w0, v0, ch) in fronts[m]:
                    for (n, wn, vn, i) in ol:
                        if m + n <= d.K and w0 + wn <= capj:
                            new[m + n].append((w0 + wn, v0 + vn, ch + ((i, n),)))
            fronts = [_pareto(f) for f in new]
        best = max((x for f in fronts for x in f), key=lambda x: x[1])
        val = best[1]
        return val, val * (1 + 1e-9) + 1e-10, dict(best[2])

    def price_greedy(self, t: int, pi: np.ndarray):
        """A configuration of type t of high value sum_i pi_i n_i, by greedy fills (no bound):
        classes in three orders (price per weight, price, price per combined use of capacity and
        instance slots), each taking as many instances of a class as fit, one class per component
        and no incompatible pair. Returns (value, n dict) of the best fill."""
        d, j = self.d, self.types[t][0]
        capj = d.cap[j] * (1 + SLACK) + SLACK
        items = []
        for i, ck in enumerate(self.classes):
            u = self.caps[ck][j]
            if pi[i] > 1e-12 and u > 0:
                w = self._w(t, i)
                if w <= capj:
                    items.append((i, ck[0], w, float(pi[i]), u))
        if not items:
            return 0.0, {}
        bad = {c: set() for c in range(d.C)}
        for c1, c2 in d.incompatible:
            bad[c1].add(c2)
            bad[c2].add(c1)
        best_v, best_n = 0.0, {}
        keys = (lambda x: x[3] / x[2], lambda x: x[3], lambda x: x[3] / (x[2] / capj + 1.0 / d.K))
        for key in keys:
            left, slots, v, n, used = capj, d.K, 0.0, {}, set()
            for i, c, w, p, u in sorted(items, key=key, reverse=True):
                if c in used or bad[c] & used:
                    continue
                m = min(u, slots, int(left / w))
                if m <= 0:
                    continue
                n[i] = m
                used.add(c)
                v += p * m
                left -= w * m
                slots -= m
                if slots == 0:
                    break
            if v > best_v:
                best_v, best_n = v, n
        return best_v, best_n

    def price_milp(self, t: int, pi: np.ndarray):
        """max sum pi_i n_i over configurations of type t: (value, dual bound, n dict)."""
        from scipy.optimize import Bounds, LinearConstraint, milp

        d, j = self.d, self.types[t][0]
        rho, nu = self.rho[t], self.nu[t]
        items = [i for i in range(len(self.classes)) if pi[i] - rho[i] > 1e-12 and self.caps[self.classes[i]][j] > 0]
        if not items:
            return 0.0, 1e-10, {}
        comps = sorted({self.classes[i][0] for i in items})
        nI, nC = len(items), len(comps)
        # variables: n_i (integer), v_i (binary: class i used), b_c (binary: c present)
        nv = 2 * nI + nC
        rows, lo, hi = [], [], []
        r = np.zeros(nv)
        for a, i in enumerate(items):
            r[a] = self._w(t, i)
        rows.append(r); lo.append(-np.inf); hi.append(d.cap[j] * (1 + SLACK) + SLACK)
        r = np.zeros(nv); r[:nI] = 1
        rows.append(r); lo.append(-np.inf); hi.append(d.K)
        cpos = {c: 2 * nI + q for q, c in enumerate(comps)}
        for a, i in enumerate(items):
            r = np.zeros(nv); r[a] = 1; r[nI + a] = -self.caps[self.classes[i]][j]
            rows.append(r); lo.append(-np.inf); hi.append(0)
        for c in comps:
            r = np.zeros(nv)
            for a, i in enumerate(items):
                if self.classes[i][0] == c:
                    r[nI + a] = 1
            r[cpos[c]] = -1
            rows.append(r); lo.append(0); hi.append(0)
        for c1, c2 in d.incompatible:
            if c1 in cpos and c2 in cpos:
                r = np.zeros(nv); r[cpos[c1]] = 1; r[cpos[c2]] = 1
                rows.append(r); lo.append(-np.inf); hi.append(1)
        obj = np.zeros(nv)
        for a, i in enumerate(items):
            obj[a] = -(pi[i] - rho[i])
            obj[nI + a] = nu[i]
        ub = np.array([float(self.caps[self.classes[i]][j]) for i in items] + [1.0] * (nI + nC))
        opts = {"disp": False, "mip_rel_gap": 1e-9}  # no clock: run() checks its deadline between rounds
        res = milp(obj, constraints=LinearConstraint(np.array(rows), lo, hi), integrality=np.ones(nv),
                   bounds=Bounds(np.zeros(nv), ub), options=opts)
        if res.x is None:
            return 0.0, math.inf, {}
        n = {i: int(round(res.x[a])) for a, i in enumerate(items) if round(res.x[a]) > 0}
        val = sum((pi[i] - rho[i]) * v - nu[i] for i, v in n.items())
        db = getattr(res, "mip_dual_bound", None)
        # the certificate uses what HiGHS proves (its dual bound), not the incumbent: the
        # solver stops at an absolute gap of 1e-6, larger than the certificate's margin
        ub = -db if db is not None and np.isfinite(db) else math.inf
        return val, max(ub, val) + 1e-10, n

    def solve_master(self):
        from scipy.optimize import linprog

        C, nK, T = self.d.C, len(self.classes), len(self.types)
        nL = len(self.cols)
        # variables: lambda (nL), y (nK), s (C)
        nv = nL + nK + C
        cost = np.zeros(nv); cost[nL + nK:] = 1
        a_eq = np.zeros((C, nv)); b_eq = np.ones(C)
        for i, (c, k) in enumerate(self.classes):
            a_eq[c, nL + i] = 1
        for c in range(C):
            a_eq[c, nL + nK + c] = 1
        extra = self.extra
        a_ub = np.zeros((nK + T + 2 * nK * T * extra, nv)); b_ub = np.zeros(nK + T + 2 * nK * T * extra)
        base = nK + T
        for q, (t, n) in enumerate(self.cols):
            for i, v in n.items():
                a_ub[i, q] = -v
                if extra:
                    a_ub[base + t * nK + i, q] = v
                    a_ub[base + nK * T + t * nK + i, q] = 1
            a_ub[nK + t, q] = 1
        for i, (c, k) in enumerate(self.classes):
            a_ub[i, nL + i] = k
            if extra:
                for t in range(T):
                    a_ub[base + t * nK + i, nL + i] = -sum(self.caps[(c, k)][j] for j in self.types[t])
                    a_ub[base + nK * T + t * nK + i, nL + i] = -len(self.types[t])
        for t in range(T):
            b_ub[nK + t] = len(self.types[t])
        res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
        m = -res.ineqlin.marginals
        pi = m[:nK]  # >= 0 for the >= linking rows
        self.rho = np.maximum(m[base:base + nK * T], 0).reshape(T, nK) if extra else np.zeros((T, nK))
        self.nu = np.maximum(m[base + nK * T:], 0).reshape(T, nK) if extra else np.zeros((T, nK))
        return res.fun, np.maximum(pi, 0.0), res

    def _ycoef(self, pi) -> float:
        """sum_c min(1, min_k reduced coefficient of y_ck) in the Lagrangian."""
        C, T = self.d.C, len(self.types)
        mins = [1.0] * C
        for i, (c, k) in enumerate(self.classes):
            v = k * pi[i]
            for t in range(T if self.extra else 0):  # rho and nu are zero without the extra rows
                v -= sum(self.caps[(c, k)][j] for j in self.types[t]) * self.rho[t][i] + len(self.types[t]) * self.nu[t][i]
            mins[c] = min(mins[c], v)
        return sum(mins)

    def run(self, deadline: float | None = None, eps: float = 1e-7):
        """Column generation. Returns ("infeasible", L) when a certificate L > 0 is found,
        ("feasible", 0) when the LP value reaches 0, ("unknown", value) on time out.
        With ``greedy``, a round prices every type by ``price_greedy`` first and adds those
        columns (reduced cost above eps) without exact pricing while they price out and the
        greedy values, lower bounds on P_t, leave no certificate possible (ycoef - sum_t m_t
        greedy_t <= eps); otherwise the round prices exactly, as without it."""
        C = self.d.C
        if classless(C, self.classes):
            return "infeasible", math.inf
        best_cert = -math.inf
        while True:
            if deadline is not None and time.monotonic() > deadline:
                return "unknown", best_cert
            t0 = time.monotonic()
            val, pi, self.last_res = self.solve_master()  # bp_probe reads the last LP's solution
            self.stats["lp_s"] += time.monotonic() - t0
            self.stats["iters"] += 1
            if val <= eps:
                return "feasible", val
            t0 = time.monotonic()
            added = 0
            cert = self._ycoef(pi)
            T = len(self.types)
            low = [0.0] * T  # greedy values: lower bounds on P_t
            if self.greedy:
                # greedy columns first; the exact pricing only when no greedy column prices out or
                # when the greedy values (lower bounds on P_t) leave room for a certificate
                duals = np.maximum(-self.last_res.ineqlin.marginals[len(self.classes):len(self.classes) + T], 0.0)
                cols = []
                for t in range(T):
                    low[t], n = self.price_greedy(t, pi)
                    key = (t, tuple(sorted(n.items())))
                    if n and low[t] > duals[t] + eps and key not in self.seen:
                        cols.append((key, t, n))
                if cols and cert - sum(len(self.types[t]) * low[t] for t in range(T)) <= eps:
                    for key, t, n in cols:
                        self.seen.add(key)
                        self.cols.append((t, n))
                    self.stats["pricing_s"] += time.monotonic() - t0
                    self.stats["cols"] = len(self.cols)
                    continue
            self.stats["exact_rounds"] += 1
            for t in range(T):
                v, ub, n = self.price(t, pi)
                cert -= len(self.types[t]) * ub
                key = (t, tuple(sorted(n.items())))
                if n and v > eps and key not in self.seen:
                    # the machine-count row's dual is <= 0; add whenever the column can help
                    self.seen.add(key)
                    self.cols.append((t, n))
                    added += 1
            self.stats["pricing_s"] += time.monotonic() - t0
            self.stats["cols"] = len(self.cols)
            best_cert = max(best_cert, cert)
            if best_cert > eps:
                return "infeasible", best_cert
            if not added:
                return "unknown_converged", val


def compact_lp_feasible(d: TPData, R: float, caps: dict | None = None) -> tuple[bool, float]:
    """The compact count-class LP at R (z_cjk <= u_cjk y_ck, machine rows), phase 1."""
    from scipy.optimize import linprog

    caps = class_caps(d, R) if caps is None else caps
    classes = sorted(caps)
    C, J = d.C, d.J
    if classless(C, classes):
        return False, math.inf
    zs = [(i, j) for i, (c, k) in enumerate(classes) for j in range(J) if caps[(c, k)][j] > 0]
    nK, nZ = len(classes), len(zs)
    nv = nZ + nK + C
    cost = np.zeros(nv); cost[nZ + nK:] = 1
    eq_rows = C + nK
    a_eq = np.zeros((eq_rows, nv)); b_eq = np.zeros(eq_rows); b_eq[:C] = 1
    for i, (c, k) in enumerate(classes):
        a_eq[c, nZ + i] = 1
        a_eq[C + i, nZ + i] = -k
    for c in range(C):
        a_eq[c, nZ + nK + c] = 1
    a_ub = np.zeros((nZ + 2 * J, nv)); b_ub = np.zeros(nZ + 2 * J)
    for q, (i, j) in enumerate(zs):
        c, k = classes[i]
        a_eq[C + i, q] = 1
        a_ub[q, q] = 1; a_ub[q, nZ + i] = -caps[(c, k)][j]
        a_ub[nZ + j, q] = piece_weight(d, R, c, k, j)
        a_ub[nZ + J + j, q] = 1
    for j in range(J):
        b_ub[nZ + j] = d.cap[j] * (1 + SLACK) + SLACK
        b_ub[nZ + J + j] = d.K
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    return res.fun <= 1e-7, res.fun


def filter_classes(d: TPData, R: float, caps: dict, deadline: float | None = None) -> dict:
    """``throughput.lp_filter`` repeated until it drops nothing more: each pass charges every
    component its least class left, so what one pass drops can tighten the next pass's LPs."""
    from .throughput import lp_filter

    while True:
        nxt = lp_filter(d, R, caps, deadline)
        if len(nxt) == len(caps):
            return nxt
        caps = nxt


def bp_probe(d: TPData, R: float, deadline: float | None = None, stats: dict | None = None,
             caps: dict | None = None, box_filter: bool = True, greedy: bool = False):
    """Does some even placement sustain R? Depth-first branch and price over count-class ranges
    N_c in [lo_c, hi_c]; a node is cut when its configuration LP has a certificate L(pi) > 0;
    a node whose LP picks one class per component is decided by ``fixed_n_probe``; otherwise
    branch on the component whose class choice is most spread, at its mean class.
    ``caps``: the root's classes (default ``class_caps`` at R; any dict that keeps every class a
    placement sustaining R can use, e.g. ``lp_filter``'s). ``box_filter`` (session 50): every
    box's classes go through :func:`filter_classes` first, whose LP charges each other component
    its least count in the box (valid inside the box), and the box's ranges shrink to the classes
    left (the filter never drops a component's last class, so it narrows boxes and the LP cuts
    them). ``greedy``: the configuration LPs price by greedy fills first (``ConfigLP.run``).
    ``stats`` gathers nodes, leaves and the configuration LPs' rounds (all, exact) and seconds
    (pricing, master).
    Returns ("infeasible" | "feasible" | "unknown", n or None)."""
    from .throughput import fixed_n_probe, structurally_ok

    caps = class_caps(d, R) if caps is None else caps
    if classless(d.C, caps):
        return "infeasible", None
    pool: dict[tuple, None] = {}
    stats = {} if stats is None else stats
    for key in ("nodes", "leaves", "iters", "exact_rounds", "pricing_s", "lp_s"):
        stats.setdefault(key, 0)
    stack = [{c: (min(k for (cc, k) in caps if cc == c), max(k for (cc, k) in caps if cc == c)) for c in range(d.C)}]
    unknown = False
    probed: dict[tuple, str] = {}
    while stack:
        if deadline is not None and time.monotonic() > deadline:
            return "unknown", None
        rng = stack.pop()
        stats["nodes"] += 1
        sub = {ck: u for ck, u in caps.items() if rng[ck[0]][0] <= ck[1] <= rng[ck[0]][1]}
        if classless(d.C, sub):
            continue
        if box_filter:  # lp_filter keeps each component's last class, so the box keeps a range
            sub = filter_classes(d, R, sub, deadline)
            rng = {c: (min(k for (cc, k) in sub if cc == c), max(k for (cc, k) in sub if cc == c)) for c in range(d.C)}
        lp = ConfigLP(d, R, caps=sub, extra=False, greedy=greedy)
        for (t, key) in pool:
            if all((c, k) in lp.cidx for c, k, _ in key):
                lp.cols.append((t, {lp.cidx[(c, k)]: n for c, k, n in key}))
                lp.seen.add((t, tuple(sorted((lp.cidx[(c, k)], n) for c, k, n in key))))
        st, _ = lp.run(deadline)
        for key in ("iters", "exact_rounds", "pricing_s", "lp_s"):
            stats[key] += lp.stats[key]
        for t, col in lp.cols:
            pool[(t, tuple(sorted((lp.classes[i][0], lp.classes[i][1], n) for i, n in col.items())))] = None
        if st == "infeasible":
            continue
        if st == "unknown":
            return "unknown", None
        wide = [c for c in range(d.C) if rng[c][0] < rng[c][1]]
        N = None
        if not wide:
            N = [rng[c][0] for c in range(d.C)]
        elif st == "feasible":
            res = lp.last_res  # the LP that ended run() "feasible", on the same columns
            nL = len(lp.cols)
            y = res.x[nL:nL + len(lp.classes)]
            mean = [0.0] * d.C
            spread = [0.0] * d.C
            for i, (c, k) in enumerate(lp.classes):
                mean[c] += k * y[i]
            for i, (c, k) in enumerate(lp.classes):
                spread[c] += y[i] * abs(k - mean[c])
            c = max(range(d.C), key=lambda c: spread[c])
            if spread[c] < 1e-6:  # one class per component: decide that count vector exactly
                N = [min(max(round(mean[c]), rng[c][0]), rng[c][1]) for c in range(d.C)]
        if N is not None:
            stats["leaves"] += 1
            if tuple(N) not in probed:
                left = None if deadline is None else deadline - time.monotonic()
                st2, n = fixed_n_probe(d, N, R, left)
                probed[tuple(N)] = st2
                if st2 == "feasible" and structurally_ok(d, n):
                    return "feasible", n
                if st2 != "infeasible":
                    unknown = True
            if not wide:
                continue
            # split the vector N off: N_c < m, N_c > m, N_c = m for a component with a range
            c, m = wide[0], N[wide[0]]
            for p in ((rng[c][0], m - 1), (m + 1, rng[c][1]), (m, m)):
                if p[0] <= p[1]:
                    r2 = dict(rng)
                    r2[c] = p
                    stack.append(r2)
            continue
        if st == "feasible":
            m = min(max(math.floor(mean[c]), rng[c][0]), rng[c][1] - 1)
            w_lo = sum(y[i] for i, (cc, k) in enumerate(lp.classes) if cc == c and k <= m)
        else:  # LP stopped without a certificate nor a solution: halve the first wide range
            c = wide[0]
            m, w_lo = (rng[c][0] + rng[c][1]) // 2, 1.0
        lo_r, hi_r = dict(rng), dict(rng)
        lo_r[c] = (rng[c][0], m)
        hi_r[c] = (m + 1, rng[c][1])
        # the side holding more of the LP's weight is explored first (pushed last)
        stack.extend([hi_r, lo_r] if w_lo >= 0.5 else [lo_r, hi_r])
    return ("unknown", None) if unknown else ("infeasible", None)
