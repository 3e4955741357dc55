"""Exact models for ``slots`` under ``params.slot_usage = "rate"`` (docs/formulations.md,
"Slots", "Rate usage").

Under "rate", q threads of c in one slot take the rate q rho_c / Q_c (even routing; Q_c = c's
thread count) and use the model row at q threads scaled by that rate over the row's peak:

    CPU = cpu_cq * (q rho_c / Q_c) / peak_cq = A_cq / Q_c,   A_cq = cpu_cq q rho_c / peak_cq

(memory alike), for a row with a finite, positive peak ("scaled" rows; the evaluator uses the
row unscaled otherwise: "constant" rows). The rate condition q rho_c / Q_c <= peak_cq is
Q_c >= need_cq as under peak usage. The usage is linear in iota_c = 1 / Q_c.

MILP (CBC, HiGHS), exact without thread-count levels: with v_csq binary ("slot s holds q
threads of c") and f_csq >= 0 the share of c's rate that slot s takes,

    f_csq <= q iota_c,   f_csq >= q iota_c - q iotamax_c (1 - v_csq),   f_csq <= q iotamax_c v_csq,
    sum_{s,q} f_csq = 1

force f_csq = q iota_c v_csq, so sum f = iota_c Q_c = 1: iota_c = 1/Q_c exactly, and the slot
rows are linear:  sum_{scaled} (cpu_cq rho_c / peak_cq) f_csq + sum_{constant} cpu_cq v_csq <= 100 u_s.
The LP relaxation lets a component's rate split unevenly over its groups (weighted routing),
which is the bound it gives.

CP-SAT (integers only): t_cs * Q_c >= a_cs (AddMultiplicationEquality), a_cs = sum_q
round(SCALE A_cq) v_csq, sum_c t_cs + constants <= capacity. Rounding A down and allowing
100 SCALE + (number of scaled components that may share the slot) gives a *relaxation* (each
ceiling of a_cs / Q_c adds less than 1), whose bound is valid; rounding up with capacity
100 SCALE gives a *restriction*, whose plans are truly feasible. The driver solves the
relaxation, keeps its plan when the evaluator's rule accepts it (then its optimum is proven),
and otherwise solves the restriction (or the MILP with 100 - 1e-3 %) for a plan, reporting the
relaxation's bound.

Bounds and proofs of the slot count (docs/formulations.md, "Rate usage"): ``even_bound``, the
least L such that every component's least usage with at most L groups under even routing
(``least_usage``, a dynamic programme) fits L slots; ``packing_check``, which decides whether a
plan on exactly L interchangeable slots exists from each component's distributions within the
volume room and a CP-SAT packing of their groups.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from . import gap as core
from ._slotscommon import (cover, cpsat_tail, cpsat_threads, incompatible_rows, max_per_node_rows, price_weights,
                           symmetry)

SCALE = 10_000  # CP-SAT: percent x 10^4
CHECK_TOL = 9e-7  # relative slack of the plan check (the evaluator allows 1e-6)


@dataclass
class RateRow:
    """q threads of c in one slot under rate usage."""

    q: int
    need: int
    peak: float
    scaled: bool  # usage = a_cpu / Q_c (else the constant cpu, mem)
    cpu: float
    mem: float
    a_cpu: float  # cpu q rho / peak (scaled rows)
    a_mem: float


CAP = 100.0 * (1 + 1e-6)  # a slot's capacity in the relaxations and bounds (%, with slack)
# ``packing_check``'s plan searches, each a share of the time then left: the randomised search,
# the share MILP, the fixed-count search. Session 17 tried other shares on the slower machine
# of sessions 15-17 (docs/benchmarks.md, "slots: the packing check's time shares ... (session
# 17)") and kept these: each change that gave the 7-task application cell its 5-slot plan (the
# share MILP needs 5.7-6.5 s there and gets about 4.7 s) cost other cells theirs. The
# fixed-count search runs first since session 41, with 80 % (half of what the others left before)
RANDOM_SHARE = 0.3
SHARE_MILP_SHARE = 0.25
FIXED_SHARE = 0.8
QUICK_SEARCH_S, QUICK_SEARCH_SHARE = 4.0, 0.2  # the randomised search before the fixed-count one: at most these seconds, this share


def all_scaled(d, R, c: int) -> bool:
    """Component c has a rate and every row of it is rate-scaled."""
    return d.rho[c] > 0 and bool(R[c]) and all(r.scaled for r in R[c])


def threshold(r) -> int:
    """The least total thread count Q_c at which row r may be used: its own thread count, its
    need, and enough threads that its rate share fits one slot (CPU and memory)."""
    return max(r.q, r.need, math.ceil(r.a_cpu / CAP - 1e-9), math.ceil(r.a_mem / CAP - 1e-9))


def rows(d) -> list[list[RateRow]]:
    """Per component, its usable rows under rate usage (``d`` prepared without the peak filter).
    A constant row above 100 % is dropped; a scaled row is kept (its usage is at most its row
    because Q_c >= need_cq keeps the scale <= 1, and can be far less)."""
    out = []
    for c in range(d.C):
        rho = d.rho[c]
        row = []
        for o in d.options[c]:
            scaled = math.isfinite(o.peak) and o.peak > 0
            if not scaled and (o.cpu > 100 + 1e-9 or o.mem > 100 + 1e-9):
                continue
            a_cpu = o.cpu * o.q * rho / o.peak if scaled else 0.0
            a_mem = o.mem * o.q * rho / o.peak if scaled else 0.0
            row.append(RateRow(o.q, o.need, o.peak, scaled, o.cpu, o.mem, a_cpu, a_mem))
        out.append(row)
    return out


def q_bounds(d, R, c: int) -> tuple[int, int]:
    """The least and largest thread count of c in any plan."""
    lo = max(1, min(r.need for r in R[c])) if R[c] else 1
    top = max((r.q for r in R[c]), default=0)
    hi = sum(top for s in range(d.S) if d.allowed[c][s])
    if d.max_per_node[c] is not None:
        hi = min(hi, d.max_per_node[c] * len(d.nodes))
    return lo, max(lo, hi)


def usage(d, R, q: dict[tuple[int, int], int], partial: bool = False) -> list[tuple[float, float]] | None:
    """Per used slot (CPU %, memory %) of allocation ``q`` under rate usage, or None when a
    group breaks its rate condition, its pins, max_per_node or an incompatible pair, or when
    a component has no thread (``partial``: components with none are left out, for a plan
    being built)."""
    Q = [sum(x for (c, _), x in q.items() if c == cc) for cc in range(d.C)]
    if not partial and any(x < 1 for x in Q):
        return None
    by = [{r.q: r for r in R[c]} for c in range(d.C)]
    per_node = {}
    out = []
    for s in range(d.S):
        cpu = mem = 0.0
        here = []
        for c in range(d.C):
            x = q.get((c, s), 0)
            if not x:
                continue
            r = by[c].get(x)
            if r is None or not d.allowed[c][s] or Q[c] < r.need:
                return None
            here.append(c)
            k = (c, d.slot_node[s])
            per_node[k] = per_node.get(k, 0) + x
            if d.max_per_node[c] is not None and per_node[k] > d.max_per_node[c]:
                return None
            if r.scaled:
                cpu += r.a_cpu / Q[c]
                mem += r.a_mem / Q[c]
            else:
                cpu += r.cpu
                mem += r.mem
        if any(a in here and b in here for a, b in d.incompatible):
            return None
        if here:
            out.append((cpu, mem))
    return out


def valid(d, R, q, partial: bool = False) -> bool:
    """Does ``q`` pass the evaluator's slot rule under rate usage (with a margin inside its
    1e-6 tolerance)? ``partial``: for the components ``q`` places (see ``usage``)."""
    u = usage(d, R, q, partial)
    return u is not None and all(a <= 100 * (1 + CHECK_TOL) and b <= 100 * (1 + CHECK_TOL) for a, b in u)


def key(d, q) -> tuple[int, float]:
    used = {s for (_, s) in q}
    return len(used), sum(d.price[k] for k in {d.slot_node[s] for s in used})


def volume_bound(d, R) -> int:
    """Slots every plan needs: each component's least total usage (a scaled component's shares
    sum to 1, so its usage is at least rho_c min_q cpu_cq / peak_cq; a constant one uses at
    least its smallest row) over the evaluator's limit of one slot, for CPU and for memory."""
    tot_c = tot_m = 0.0
    for c in range(d.C):
        if not R[c]:
            continue
        if all(r.scaled for r in R[c]):
            tot_c += d.rho[c] * min(r.cpu / r.peak for r in R[c])
            tot_m += d.rho[c] * min(r.mem / r.peak for r in R[c])
        else:
            tot_c += min(r.cpu if not r.scaled else 0.0 for r in R[c])
            tot_m += min(r.mem if not r.scaled else 0.0 for r in R[c])
    return max(1, math.ceil(tot_c / CAP - 1e-9), math.ceil(tot_m / CAP - 1e-9))


def least_usage(R, c: int, lmax: int, weight: tuple[float, float], deadline: float | None = None):
    """U[L] for L = 0..lmax: the least weighted usage (weight[0] CPU + weight[1] memory, in %)
    that component c takes in total in any plan where it has at most L groups (slots), under
    even routing (docs/formulations.md, "Rate usage", "The even-routing volume bound"). inf
    where no such plan exists; None when ``deadline`` (time.monotonic()) passes first.

    A group of q threads of a scaled row uses A_q / Q_c with Q_c = the sum of c's group sizes.
    It is allowed only when Q_c >= thr_q = max(q, need_q, A_cpu_q / cap, A_mem_q / cap) (rate
    condition, and the group alone within one slot). For each distinct threshold th, the rows
    with thr_q <= th are the allowed set for every Q_c >= th: a dynamic programme gives
    G_L[t] = least sum of weighted A over at most L groups of those rows with t threads in total,
    and U[L] = min over th and t >= th of G_L[t] / t. Every plan's distribution of c is counted
    at th = the largest threshold among its rows, so U[L] is a lower bound (and exact: every
    pair (th, t) evaluated is a distribution the rules allow)."""
    rows = R[c]
    U = [math.inf] * (lmax + 1)
    if not rows or lmax < 1:
        return U
    wc, wm = weight
    if not all(r.scaled for r in rows):
        # constant rows: at least one group, each using its row unscaled; mixed kinds: no claim
        least = min(wc * r.cpu + wm * r.mem for r in rows) if not any(r.scaled for r in rows) else 0.0
        return [math.inf] + [least] * lmax
    import numpy as np

    qs = np.array([r.q for r in rows])
    A = np.array([wc * r.a_cpu + wm * r.a_mem for r in rows])
    thr = np.array([threshold(r) for r in rows])
    top = lmax * int(qs.max())
    for th in sorted(set(thr.tolist())):
        if th > top:
            break
        if deadline is not None and time.monotonic() > deadline:
            return None
        sel = thr <= th
        qq, AA = qs[sel], A[sel]
        G = np.full(top + 1, math.inf)
        G[0] = 0.0
        ts = np.arange(th, top + 1)
        cand = np.full((len(qq), top + 1), math.inf)
        for L in range(1, lmax + 1):
            cand.fill(math.inf)
            for i in range(len(qq)):
                cand[i, qq[i]:] = G[:top + 1 - qq[i]] + AA[i]
            G = np.minimum(G, cand.min(axis=0))
            U[L] = min(U[L], float((G[th:] / ts).min()))
    return U


EVEN_WEIGHTS = ((1.0, 0.0), (0.0, 1.0), (0.5, 0.5))  # CPU, memory, their mean


def usage_tables(d, R, lmax: int, deadline: float | None = None) -> dict | None:
    """``least_usage`` of every component for each of ``EVEN_WEIGHTS``: {weight: [U_c]}, or
    None when ``deadline`` passes first."""
    out = {}
    for w in EVEN_WEIGHTS:
        out[w] = []
        for c in range(d.C):
            U = least_usage(R, c, lmax, w, deadline)
            if U is None:
                return None
            out[w].append(U)
    return out


def even_bound(d, R, lmax: int, deadline: float | None = None, tables: dict | None = None) -> int | None:
    """The least L in 1..lmax such that the components' least usages with at most L groups
    each (``least_usage``) fit L slots, for CPU, for memory and for their mean; lmax + 1 when
    no L up to lmax passes (no plan has lmax slots or fewer); None when ``deadline`` passes.
    Pins, max_per_node and incompatible pairs are left out (a relaxation)."""
    if lmax < 1:
        return max(1, lmax + 1)
    tables = tables if tables is not None else usage_tables(d, R, lmax, deadline)
    if tables is None:
        return None
    cap = CAP
    for L in range(1, lmax + 1):
        # a margin of 1e-9 relative on the safe side (float sums of the evaluator's terms)
        if all(sum(U[L] for U in tables[w]) <= cap * L * (1 + 1e-9) for w in EVEN_WEIGHTS):
            return L
    return lmax + 1


def component_cuts(d, tables: dict | None, L: int) -> list[tuple[int, float, float]] | None:
    """Per component, for plans on at most L slots: (least number of groups, least total CPU %,
    least total memory %) from ``usage_tables`` (computed up to L or beyond), or None."""
    if tables is None or L < 1 or L >= len(tables[EVEN_WEIGHTS[0]][0]):
        return None
    out = []
    for c in range(d.C):
        Uc, Um = tables[(1.0, 0.0)][c], tables[(0.0, 1.0)][c]
        k = next((j for j in range(1, L + 1) if math.isfinite(Uc[j])), L + 1)
        out.append((k, Uc[L], Um[L]))
    return out


def slot_bound(bound_obj: float | None, big: int) -> int | None:
    """Slots bound from a bound on big * slots + cost (0 <= cost < big)."""
    if bound_obj is None or not math.isfinite(bound_obj):
        return None
    return max(0, math.ceil((bound_obj - (big - 1)) / big - 1e-9))


# --- CP-SAT ----------------------------------------------------------------------------------

def cpsat(d, R, hint, time_limit, relaxed: bool, *, seed: int = 0, min_slots: int = 0, cuts=None):
    """The integer model (relaxed or restricted, see the module docstring). Returns
    (Outcome, q or None, big)."""
    from ortools.sat.python import cp_model

    started = time.monotonic()
    rnd = math.floor if relaxed else math.ceil
    eps = -1e-6 if relaxed else 1e-6  # float noise: round towards the safe side of each model
    m = cp_model.CpModel()
    v = {}
    u = [m.NewBoolVar(f"u[{s}]") for s in range(d.S)]
    w = [m.NewBoolVar(f"w[{k}]") for k in range(len(d.nodes))]
    Q = []
    cap = 100 * SCALE
    vol_cpu, vol_mem = [], []  # volume cut terms: least total usage of each component
    vol_c = vol_m = 0
    tsum = {}  # (c, "t" or "m") -> the CPU / memory variables t_cs of c (for ``cuts``)
    for c in range(d.C):
        Qc = cpsat_threads(d, m, u, v, c, R[c], *q_bounds(d, R, c))
        Q.append(Qc)
        sc = [r for r in R[c] if r.scaled]
        if all_scaled(d, R, c):
            # total usage of c is rho_c sum_s share_s cpu/peak >= rho_c min(cpu/peak): valid for every plan
            vol_c += math.floor(SCALE * d.rho[c] * min(r.cpu / r.peak for r in sc) * (1 - 1e-9))
            vol_m += math.floor(SCALE * d.rho[c] * min(r.mem / r.peak for r in sc) * (1 - 1e-9))
    for s in range(d.S):
        here = [(c, r) for c in range(d.C) for r in R[c] if (c, s, r.q) in v]
        if not here:
            m.Add(u[s] == 0)
            m.AddImplication(u[s], w[d.slot_node[s]])
            continue
        rows_cpu, rows_mem = [], []
        n_scaled = 0
        for c in sorted({c for c, _ in here}):
            mine = [r for cc, r in here if cc == c]
            const = [r for r in mine if not r.scaled]
            rows_cpu += [rnd(r.cpu * SCALE - eps) * v[(c, s, r.q)] for r in const]
            rows_mem += [rnd(r.mem * SCALE - eps) * v[(c, s, r.q)] for r in const]
            if relaxed:
                vol_cpu += [rnd(r.cpu * SCALE - eps) * v[(c, s, r.q)] for r in const]
                vol_mem += [rnd(r.mem * SCALE - eps) * v[(c, s, r.q)] for r in const]
            sc = [r for r in mine if r.scaled and (r.a_cpu > 0 or r.a_mem > 0)]
            if not sc:
                continue
            n_scaled += 1
            for name, attr, acc in (("t", "a_cpu", rows_cpu), ("m", "a_mem", rows_mem)):
                coef = [(max(0, rnd(getattr(r, attr) * SCALE - eps)), v[(c, s, r.q)]) for r in sc]
                top = max(a for a, _ in coef)
                if top == 0:
                    continue
                lo, _ = q_bounds(d, R, c)
                tmax = min(cap + d.C + 1, -(-top // lo))
                t = m.NewIntVar(0, tmax, f"{name}[{c},{s}]")
                p = m.NewIntVar(0, tmax * q_bounds(d, R, c)[1], f"{name}Q[{c},{s}]")
                m.AddMultiplicationEquality(p, [t, Q[c]])
                m.Add(p >= sum(a * x for a, x in coef))
                acc.append(t)
                tsum.setdefault((c, name), []).append(t)
        # relaxation: each ceiling of a / Q adds < 1 per scaled component, and the evaluator
        # accepts 1e-6 relative over 100 % (1 unit at SCALE 10^4)
        extra = n_scaled + 1 if relaxed else 0
        m.Add(sum(rows_cpu) <= cap + extra)
        m.Add(sum(rows_mem) <= cap + extra)
        m.AddImplication(u[s], w[d.slot_node[s]])
        m.Add(u[s] <= sum(v[(c, s, r.q)] for c, r in here))
        for c1, c2 in d.incompatible:
            a = [v[(c, s, r.q)] for c, r in here if c == c1]
            b = [v[(c, s, r.q)] for c, r in here if c == c2]
            if a and b:
                m.Add(sum(a) + sum(b) <= 1)
    if relaxed:  # the volume cut (valid for every plan; the restriction needs no bound)
        m.Add((cap + d.C + 1) * sum(u) >= vol_c + sum(vol_cpu))
        m.Add((cap + d.C + 1) * sum(u) >= vol_m + sum(vol_mem))
    if min_slots > 1:  # a proven lower bound on the slots of every plan (even_bound): a valid cut
        m.Add(sum(u) >= min_slots)
    if relaxed and cuts is not None:
        # component_cuts for a model of at most S slots: c holds >= k groups and uses >= U in
        # total; each t_cs > (SCALE A - 1) / Q_c here (A rounded down), and c has at most Q_c
        # groups, so its t sum to > SCALE U - 1
        for c, (k, Ucpu, Umem) in enumerate(cuts):
            m.Add(sum(x for (cc, s, _), x in v.items() if cc == c) >= k)
            if all_scaled(d, R, c):
                for name, U in (("t", Ucpu), ("m", Umem)):
                    if (c, name) in tsum and math.isfinite(U):
                        m.Add(sum(tsum[(c, name)]) >= math.floor(SCALE * U * (1 - 1e-9)) - 1)
    big = cpsat_tail(d, m, v, u, w, R, hint)
    if time_limit is not None:  # building counts against the limit
        time_limit = time_limit - (time.monotonic() - started)
        if time_limit <= 0.05:
            return core.Outcome("unknown", seconds=time.monotonic() - started), None, big
    out, sol = core.run_cpsat(m, time_limit, seed)
    out.seconds = time.monotonic() - started
    q = None
    if out.status in ("optimal", "feasible"):
        q = {(c, s): qq for (c, s, qq), x in v.items() if sol.Value(x)}
    return out, q, big


# --- MILP ------------------------------------------------------------------------------------

def milp(d, R, hint, time_limit, relaxed: bool, *, solver: str, min_slots: int = 0, cuts=None):
    """The share model (module docstring) with CBC or HiGHS; ``relaxed`` False lowers the slot
    capacity to 100 - 1e-3 % (room for the solvers' tolerances). Returns (Outcome, q, big)."""
    import pulp

    started = time.monotonic()
    # relaxed: the evaluator's own limit (100 % plus its 1e-6 relative tolerance)
    capacity = CAP if relaxed else 100.0 - 1e-3
    p = pulp.LpProblem("slots_rate", pulp.LpMinimize)
    v, f = {}, {}
    u = [pulp.LpVariable(f"u_{s}", cat="Binary") for s in range(d.S)]
    w = [pulp.LpVariable(f"w_{k}", cat="Binary") for k in range(len(d.nodes))]
    def out_of_time() -> bool:
        return time_limit is not None and time.monotonic() - started > time_limit

    for c in range(d.C):
        lo, hi = q_bounds(d, R, c)
        shared = d.rho[c] > 0 and any(r.scaled for r in R[c])
        iota = pulp.LpVariable(f"iota_{c}", 1.0 / hi, 1.0 / lo) if shared else None
        terms = []
        for s in range(d.S):
            if not d.allowed[c][s]:
                continue
            if out_of_time():  # building the PuLP model counts against the limit
                return core.Outcome("unknown", seconds=time.monotonic() - started), None, price_weights(d)[1]
            for r in R[c]:
                x = v[(c, s, r.q)] = pulp.LpVariable(f"v_{c}_{s}_{r.q}", cat="Binary")
                terms.append(r.q * x)
                if shared:
                    y = f[(c, s, r.q)] = pulp.LpVariable(f"f_{c}_{s}_{r.q}", 0, 1)
                    p += y <= r.q * iota
                    p += y >= r.q * iota - (r.q / lo) * (1 - x)
                    p += y <= min(1.0, r.q / lo) * x
                    if math.isfinite(r.peak):
                        p += d.rho[c] * y <= r.peak * x  # the rate condition, on the share
            p += pulp.lpSum(v[(c, s, r.q)] for r in R[c]) <= u[s]
        # Q_c as a variable: each rate row below then has 2 nonzeros, not 1 + S |R_c|
        Qc = pulp.LpVariable(f"Q_{c}", lo, hi)
        p += Qc == pulp.lpSum(terms)
        if shared:
            p += pulp.lpSum(y for (cc, _, _), y in f.items() if cc == c) == 1
        cover(d, c, v, lambda e: p.addConstraint(e), pulp.lpSum)
        for r in R[c]:
            if r.need > 1:
                for s in range(d.S):
                    if (c, s, r.q) in v:
                        p += Qc >= r.need * v[(c, s, r.q)]
    for s in range(d.S):
        here = [(c, r) for c in range(d.C) for r in R[c] if (c, s, r.q) in v]
        cpu, mem = [], []
        for c, r in here:
            x = v[(c, s, r.q)]
            if r.scaled and (c, s, r.q) in f:
                cpu.append(r.cpu * d.rho[c] / r.peak * f[(c, s, r.q)])
                mem.append(r.mem * d.rho[c] / r.peak * f[(c, s, r.q)])
            elif not r.scaled:
                cpu.append(r.cpu * x)
                mem.append(r.mem * x)
        p += pulp.lpSum(cpu) <= capacity * u[s]
        p += pulp.lpSum(mem) <= capacity * u[s]
        p += u[s] <= w[d.slot_node[s]]
        if here:
            p += u[s] <= pulp.lpSum(v[(c, s, r.q)] for c, r in here)
        else:
            p += u[s] == 0
        incompatible_rows(p, d, [(c, v[(c, s, r.q)]) for c, r in here])
    max_per_node_rows(p, d, v, [[r.q for r in R[c]] for c in range(d.C)])
    symmetry(d, lambda e: p.addConstraint(e), u, w)
    if min_slots > 1:  # a proven lower bound on the slots of every plan (even_bound): a valid cut
        p += pulp.lpSum(u) >= min_slots
    if cuts is not None:
        # component_cuts for a model of at most S slots: c holds >= k groups and its shares'
        # usage (exactly its total usage in a plan) is >= U
        for c, (k, Ucpu, Umem) in enumerate(cuts):
            p += pulp.lpSum(x for (cc, _, _), x in v.items() if cc == c) >= k
            if all_scaled(d, R, c):
                for attr, U in (("cpu", Ucpu), ("mem", Umem)):
                    terms = [getattr(r, attr) * d.rho[c] / r.peak * f[(c, s, r.q)] for s in range(d.S) for r in R[c]
                             if (c, s, r.q) in f]
                    if terms and math.isfinite(U):
                        p += pulp.lpSum(terms) >= U * (1 - 1e-9)
    pw, big = price_weights(d)
    objective = big * pulp.lpSum(u) + pulp.lpSum(pw[k] * w[k] for k in range(len(d.nodes)))
    p += objective
    cutoff = None
    if hint is not None:
        # the seed's value becomes a cutoff for both MILPs: HiGHS through SciPy takes no start,
        # and CBC given this model's start (binaries, or every variable) exited abnormally on
        # the Diamond micro-DAG at 50 tuples/s
        n, _ = key(d, hint)
        cutoff = big * n + sum(pw[k] for k in {d.slot_node[s] for (_, s) in hint})
        p += objective <= cutoff
    if time_limit is not None:
        # the back ends translate the PuLP model outside the solver's clock (an MPS file for
        # CBC, SciPy arrays for HiGHS): keep the margin measured for the pattern model
        margin = 0.3 + 4e-5 * sum(len(con) for con in p.constraints.values())
        time_limit = time_limit - (time.monotonic() - started) - margin
        if time_limit <= 0.05:
            return core.Outcome("unknown", seconds=time.monotonic() - started), None, big
    out = core.run_pulp(p, solver, time_limit)
    if out.status == "infeasible" and cutoff is not None:
        # only the cutoff can cut everything when the hint is a plan: nothing beats the hint
        out.status, out.bound = "cutoff", float(cutoff)
    q = None
    if out.status in ("optimal", "feasible"):
        q = {(c, s): qq for (c, s, qq), x in v.items() if (x.varValue or 0) > 0.5}
    return out, q, big


# --- a constructive seed ---------------------------------------------------------------------

def greedy(d, R) -> dict[tuple[int, int], int] | None:
    """A quick plan under rate usage, or None: each component takes the fewest equal groups
    (k groups of q threads, Q_c = k q, every group within its peak and alone within 100 %),
    least total usage among those; the groups are then packed first-fit decreasing into the
    slots in order (pins, max_per_node and incompatible pairs respected). Checked by ``valid``."""
    groups = []  # (cpu, mem, c, q)
    for c in range(d.C):
        best = None
        for r in R[c]:
            for k in range(1, d.S + 1):
                Q = k * r.q
                if Q < r.need:
                    continue
                cpu, mem = (r.a_cpu / Q, r.a_mem / Q) if r.scaled else (r.cpu, r.mem)
                if cpu > 100 or mem > 100:
                    continue
                cand = (k, k * cpu + k * mem, r.q, cpu, mem)
                if best is None or cand < best:
                    best = cand
                break  # larger k for this row only costs slots
        if best is None:
            return None
        k, _, q, cpu, mem = best
        groups += [(cpu, mem, c, q)] * k
    groups.sort(key=lambda g: -(g[0] + g[1]))
    load = [[0.0, 0.0] for _ in range(d.S)]
    q: dict[tuple[int, int], int] = {}
    per_node: dict[tuple[int, int], int] = {}
    for cpu, mem, c, qq in groups:
        for s in range(d.S):
            k = d.slot_node[s]
            if (not d.allowed[c][s] or (c, s) in q or load[s][0] + cpu > 100 or load[s][1] + mem > 100
                    or any((a == c and (b, s) in q) or (b == c and (a, s) in q) for a, b in d.incompatible)
                    or (d.max_per_node[c] is not None and per_node.get((c, k), 0) + qq > d.max_per_node[c])):
                continue
            q[(c, s)] = qq
            load[s][0] += cpu
            load[s][1] += mem
            per_node[(c, k)] = per_node.get((c, k), 0) + qq
            break
        else:
            return None
    return q if valid(d, R, q) else None


# --- proving the slot count when slots are interchangeable ------------------------------------

def first_slots(d, k: int):
    """``d`` cut to its first k slots (nodes kept; a node past the cut has no slot)."""
    import dataclasses

    return dataclasses.replace(d, slots=d.slots[:k], slot_node=d.slot_node[:k],
                               allowed=[row[:k] for row in d.allowed])


def remap(d, q, nodes: list[int]) -> dict[tuple[int, int], int]:
    """The contents of q's used slots moved, in order, onto the slots of ``nodes``."""
    target = [s for s in range(d.S) if d.slot_node[s] in set(nodes)]
    used = sorted({s for (_, s) in q})
    m = dict(zip(used, target))
    return {(c, m[s]): x for (c, s), x in q.items()}



# --- slot-count check by near-optimal distributions (interchangeable slots) ------------------

def _dp_sets(R, c, L: int, weights):
    """Per distinct threshold th (as in ``least_usage``): the rows allowed for Q_c >= th and,
    per weight, G[k][t] = least weighted A over at most k groups of them with t threads."""
    import numpy as np

    rows = R[c]
    thr = [threshold(r) for r in rows]
    top = L * max(r.q for r in rows)
    out = []
    for th in sorted(set(thr)):
        if th > top:
            break
        sel = [r for r, h in zip(rows, thr) if h <= th]
        tabs = []
        for wc, wm in weights:
            G = np.full((L + 1, top + 1), math.inf)
            G[0, 0] = 0.0
            for k in range(1, L + 1):
                G[k] = G[k - 1]
                for r in sel:
                    G[k, r.q:] = np.minimum(G[k, r.q:], G[k - 1, :top + 1 - r.q] + wc * r.a_cpu + wm * r.a_mem)
            tabs.append(G)
        out.append((th, sel, tabs))
    return out, top


def _counts_within(dp, L: int, budget: dict, deadline: float | None = None):
    """The thread counts Q_c whose least usage with at most L groups (``_dp_sets``' tables
    ``dp``) is within ``budget`` for every weight, in increasing order: (Q_c, the rows allowed
    at Q_c, the tables, the budget's caps at Q_c). Stops (returns) once ``deadline`` passes,
    checked per threshold; the caller tells the two endings apart by the clock."""
    weights = list(budget)
    sets, top = dp
    for j, (th, sel, tabs) in enumerate(sets):
        if deadline is not None and time.monotonic() > deadline:
            return
        hi = sets[j + 1][0] - 1 if j + 1 < len(sets) else top
        for Q in range(th, hi + 1):
            caps = [budget[w] * Q * (1 + 1e-9) for w in weights]
            if all(tabs[i][L, Q] <= caps[i] for i in range(len(weights))):
                yield Q, sel, tabs, caps


def distributions(R, c: int, L: int, budget: dict, deadline: float | None, limit: int = 3000,
                  max_nodes: int | None = None, dp=None):
    """Every way component c (all rows scaled) can have at most L groups whose total usage for
    each weight w in ``budget`` is at most budget[w]: a list of (Q_c, ((q, groups), ...)), or
    None past ``limit`` distributions, ``max_nodes`` search nodes or ``deadline``. A group of q threads must have its row
    allowed at Q_c (Q_c >= thr_q, see ``least_usage``). ``dp``: ``_dp_sets(R, c, L, list(budget))``
    when the caller has it already (it depends on the budget's weights, not its values)."""
    weights = list(budget)
    out = []
    nodes = 0
    for Q, sel, tabs, caps in _counts_within(dp if dp is not None else _dp_sets(R, c, L, weights), L, budget):
        sel = sorted(sel, key=lambda r: -r.q)
        wa = [[wc * r.a_cpu + wm * r.a_mem for r in sel] for wc, wm in weights]
        stack = [(0, Q, L, [0.0] * len(weights), ())]
        while stack:
            nodes += 1
            if nodes % 4096 == 0 and ((deadline is not None and time.monotonic() > deadline)
                                      or (max_nodes is not None and nodes > max_nodes)):
                return None
            i, t, k, acc, chosen = stack.pop()
            if t == 0:
                out.append((Q, chosen))
                if len(out) > limit:
                    return None
                continue
            if i == len(sel) or k == 0:
                continue
            r = sel[i]
            for n in range(min(k, t // r.q), -1, -1):
                acc2 = [a + n * wa[w][i] for w, a in enumerate(acc)]
                t2, k2 = t - n * r.q, k - n
                # the rest from any allowed rows (a lower bound on what rows i+1.. can do)
                if any(acc2[w] + tabs[w][k2, t2] > caps[w] for w in range(len(weights))):
                    continue
                stack.append((i + 1, t2, k2, acc2, chosen + (((r.q, n),) if n else ())))
    return out


def _undominated(c: int, ds: list, size) -> list:
    """``ds`` without the distributions another one dominates: D dominates D' when D's groups
    can be matched to distinct groups of D' that use at least as much CPU and memory (in a
    packing, D' can then be swapped for D). Only for up to 400 distributions (pairwise test)."""
    if len(ds) > 400:
        return ds
    items = [[(size(c, q, Q, "cpu"), size(c, q, Q, "mem")) for q, Q, n in dd for _ in range(n)] for dd in ds]

    def fits(a, b) -> bool:  # every group of a matched into a distinct group of b, no bigger
        if len(a) > len(b):
            return False
        match = [-1] * len(b)

        def augment(i, seen) -> bool:
            for j, y in enumerate(b):
                if j in seen or a[i][0] > y[0] or a[i][1] > y[1]:
                    continue
                seen.add(j)
                if match[j] < 0 or augment(match[j], seen):
                    match[j] = i
                    return True
            return False

        return all(augment(i, set()) for i in range(len(a)))

    keep = []
    for i in range(len(ds)):
        if not any(j != i and fits(items[j], items[i]) and (not fits(items[i], items[j]) or j < i) for j in range(len(ds))):
            keep.append(ds[i])
    return keep


def thread_counts(R, c: int, L: int, budget: dict, dp, deadline: float | None = None):
    """Component c's distributions within ``budget`` on at most L groups, described by thread
    count instead of listed (for when ``distributions`` lists too many): per thread count Q_c
    that some distribution within the budget has (``_dp_sets``' tables), c's least CPU and
    memory usage at that count and the rows such a distribution may use (a row r is kept when
    its own usage plus the least usage of at most L - 1 other groups with Q_c - q_r threads is
    within the budget). A list of (Q_c, least CPU %, least memory %, rows), or None past
    ``deadline``."""
    weights = list(budget)
    ic, im = weights.index((1.0, 0.0)), weights.index((0.0, 1.0))
    out = []
    for Q, sel, tabs, caps in _counts_within(dp, L, budget, deadline):
        used = [r for r in sel if r.q <= Q and all(
            tabs[x][L - 1, Q - r.q] + wc * r.a_cpu + wm * r.a_mem <= caps[x] for x, (wc, wm) in enumerate(weights))]
        out.append((Q, tabs[ic][L, Q] / Q, tabs[im][L, Q] / Q, used))
    if deadline is not None and time.monotonic() > deadline:
        return None
    return out


LIST_COUNTS = 100  # a component with more thread counts in its budget is not listed (``packing_check``)


def room_at(tables: dict, L: int) -> dict:
    """Per even-routing weight, what L slots hold beyond every component's least usage
    (``usage_tables``): the room a component's usage may take above its own least."""
    return {w: CAP * L - sum(U[L] for U in tables[w]) for w in EVEN_WEIGHTS}


def describe(R, tables: dict, L: int, room: dict, dp: dict, listing: float | None):
    """The packing check's description of each rate-scaled component c (the keys of ``dp``,
    its ``_dp_sets``) on L slots, within its budget (its least usage plus ``room``): its
    distributions (``distributions``, up to 3,000 of them or 100,000 search nodes, about 1 s),
    or, past those limits or past ``LIST_COUNTS`` thread counts (where the listing has always
    run into its limits, 1-3 s lost per component), its thread counts (``thread_counts``).
    Returns (lists, by_count, counts): the listed components' distributions, the others' thread
    counts, and every component's thread counts; None when the thread counts could not be
    listed by ``listing``. Every distribution a plan on L slots may use is among these, so a
    packing over them that finds none is a proof."""
    lists, by_count, counts = {}, {}, {}
    for c in dp:
        budget = {w: tables[w][c][L] + room[w] for w in EVEN_WEIGHTS}
        tc = thread_counts(R, c, L, budget, dp[c], listing)  # milliseconds
        if tc is None:
            return None
        counts[c] = tc
        ds = None if len(tc) > LIST_COUNTS else distributions(R, c, L, budget, listing, limit=3000, max_nodes=100_000, dp=dp[c])
        if ds is not None:
            lists[c] = ds
        else:
            by_count[c] = tc
    return lists, by_count, counts


def gather(d, R, lists: dict, by_count: dict):
    """Per component its distributions, each a list of (q, Q, n) (None: by thread count);
    None when a component is not handled by the packing check; [] for one with nothing in its
    budget."""
    comps = []
    for c in range(d.C):
        if c in lists:
            comps.append([[(q, Q, n) for q, n in ch] for Q, ch in lists[c]])
        elif c in by_count:
            comps.append(None)
            if not by_count[c]:
                return []
        elif R[c] and all(not r.scaled for r in R[c]):
            # constant rows: one group of any row (a plan's other groups only add usage)
            comps.append([[(r.q, 0, 1)] for r in R[c]])
        else:  # mixed kinds of rows, or no rate: not handled here
            return None
        if comps[-1] == []:
            return []
    return comps


def dp_tables(R, scaled, L: int, cache: dict | None = None) -> dict:
    """Every rate-scaled component's ``_dp_sets`` on L groups. With a ``cache`` (one per solve,
    made by the driver as {"L": the largest count it will ask}) they are kept: tables built for
    L' >= L serve L unchanged (a table's row k and column t do not depend on its size; past
    L x the largest row's threads row L is infinite), and where a larger count than the kept
    one is asked they are built once for the cache's "L". Building them is the packing
    check's largest fixed cost on many slots (2.5 s on 25 slots for the 15-task application
    DAG at 100 tuples/s, where the plan search above the bound gives a count 3-4 s)."""
    def build(at: int) -> dict:
        return {c: _dp_sets(R, c, at, list(EVEN_WEIGHTS)) for c in scaled}

    if cache is None:
        return build(L)
    if "dp" not in cache:
        cache["dp"], cache["built"] = build(L), L
    elif cache["built"] < L:
        at = max(L, cache["L"])
        cache["dp"], cache["built"] = build(at), at
    return cache["dp"]


def packing_check(d, R, tables: dict, L: int, deadline: float | None, fixed: bool = True, dp_cache: dict | None = None):
    """Is there a plan on exactly L interchangeable slots? ("infeasible", None) when none
    exists, ("feasible", q) with a plan q on d's first L slots (checked by ``valid``), or
    ("unknown", None), or ("n/a", None) when the check does not handle the instance (a
    component with rows of mixed kinds, pins or max_per_node: at every L alike). Every component's total usage in such a plan is at most L slots less
    the others' least usages (``usage_tables``), so only its distributions within that budget
    are listed (``distributions``); a component with too many of them is described by its
    possible thread counts instead (``thread_counts``). A CP-SAT model then chooses one
    distribution (or a thread count and groups) per component and packs the groups into L
    slots (CPU and memory rounded down to 10^-4 %: a relaxation, so "infeasible" is a proof; a
    plan found is checked exactly; ``_pack_split``). When some component is described by thread
    count, a search over fixed thread-count vectors (``fixed_search``, first since session
    41), a randomised search (``_search``) with, beside it in a child process, the share
    MILP by HiGHS on the first L slots (``ShareJob``, under a time limit), and a search with
    cut budgets (plan searches only:
    there "infeasible" says "unknown") look for a plan first; when the thread counts cannot be
    listed in the time, only the last runs. ``fixed``: run ``fixed_search`` (every check of the
    driver does since session 41; from session 13 to 40 its bisection over the counts above an
    undecided one left it out). ``dp_cache``: the solve's ``dp_tables`` cache."""
    cap = CAP
    if tables is None or any(x is not None for x in d.max_per_node) or not all(all(a) for a in d.allowed):
        return "n/a", None
    if L < 1 or L > d.S or L >= len(tables[EVEN_WEIGHTS[0]][0]):
        return "unknown", None
    room = room_at(tables, L)
    if any(room[w] < -cap * L * 1e-9 for w in EVEN_WEIGHTS):
        return "infeasible", None
    scaled = [c for c in range(d.C) if all_scaled(d, R, c)]
    dp = dp_tables(R, scaled, L, dp_cache)  # the same for every budget below
    listing = None if deadline is None else time.monotonic() + 0.6 * (deadline - time.monotonic())

    def cut_search(until, end):
        """A search for a plan only: each component's budget is its least usage plus room /
        (number of rate-scaled components), halved until its listing passes the limits (by
        ``until``); their packing until ``end``."""
        lists = {}
        for c in scaled:
            share = 1.0 / len(scaled)
            while True:
                budget = {w: tables[w][c][L] + share * room[w] for w in EVEN_WEIGHTS}
                ds = distributions(R, c, L, budget, until, limit=3000, max_nodes=100_000, dp=dp[c])
                if ds is not None:
                    break
                share /= 2
                if share < 1e-3 or (until is not None and time.monotonic() > until):
                    return "unknown", None
            lists[c] = ds
        comps = gather(d, R, lists, {})
        if not comps:
            return "unknown", None
        out = _pack_split(d, R, tables, L, comps, {}, end)
        return ("unknown", None) if out[0] == "infeasible" else out  # only some distributions were tried

    def part(share):
        return None if deadline is None else time.monotonic() + share * (deadline - time.monotonic())

    # every distribution a plan on L slots may use, within the listing's limits (3,000
    # distributions or 100,000 search nodes, about 1 s), a component past them by its thread
    # counts: "infeasible" from these is a proof
    got = describe(R, tables, L, room, dp, listing)
    if got is None:  # the listing's time is spent: look for a plan only, its listings by a
        return cut_search(part(0.4), deadline)  # fresh 40 % of the time left
    lists, by_count, counts = got
    comps = gather(d, R, lists, by_count)
    if comps is None:
        return "n/a", None
    if not comps:
        return "infeasible", None
    if not by_count:
        return _pack_split(d, R, tables, L, comps, {}, deadline)
    # first (since session 41) a short randomised search (``QUICK_SEARCH_S`` seconds or
    # ``QUICK_SEARCH_SHARE`` of the time left): on the micro-DAGs at 200 tuples/s it finds the
    # plans in 0.02-1.7 s where the fixed-count search finds none in its whole share (Star 200
    # on 12 slots: 24 s of a 60 s limit); the randomised search later starts from another seed,
    # so as not to repeat its attempts. Then the thread counts fixed, one count vector after
    # another, each a 0/1 packing (``FIXED_SHARE`` of the time left; 10 s without a limit):
    # where the randomised search fills the components described by thread count one after
    # another, this packs them all at once (session 13: plans at the even-routing bound on
    # application-style cells where every other search found none); its soft-capacity packing
    # found every plan at the bound the other searches had found, in 0.1-3.3 s, and more
    if fixed:
        quick = time.monotonic() + QUICK_SEARCH_S
        q = _search(d, R, L, comps, by_count, quick if deadline is None else min(quick, part(QUICK_SEARCH_SHARE)))
        if q is None:
            q = fixed_search(d, R, L, comps, counts, room, part(FIXED_SHARE) if deadline is not None else time.monotonic() + 10.0)
        if q is not None:
            return "feasible", q
    # then the randomised search for a plan (without a limit 2 s or 2,000 attempts) and,
    # under a limit, beside it the share MILP on the first L slots by HiGHS, also a plan
    # search: where several components are described by thread count the randomised search
    # fills them one after another and can miss every plan (generated application DAG of 7
    # tasks at 50 tuples/s: none in 13 s; this model: a 5-slot plan in 3 s). The share MILP
    # runs in a child process (``ShareJob``); both run until 30 % + 25 % of the remaining 70 %
    # of the time left, and a plan from either ends the other. Then the search with cut
    # budgets (its listings by 20 %, its packing by 50 % of the time then left; skipped
    # without a limit), then the per-count packing models, which can also prove that there is
    # no plan (without a limit, until they decide)
    share = None
    if deadline is not None:
        share = ShareJob.start(d, R, tables, L, part(RANDOM_SHARE + (1 - RANDOM_SHARE) * SHARE_MILP_SHARE))
    if share is None:
        q = _search(d, R, L, comps, by_count, part(RANDOM_SHARE) if deadline is not None else time.monotonic() + 2.0,
                    tries=2000 if deadline is None else None, seed=1 if fixed else 0)
        if q is None and deadline is not None:  # no job: the share MILP after the randomised search
            q = share_search(d, R, tables, L, part(SHARE_MILP_SHARE))
    else:
        # the randomised search runs until the child's deadline (where the share MILP ended
        # when it ran after the randomised search), also when the child answers earlier without
        # a plan: HiGHS keeps a margin for the model's translation and mostly stops before it
        q = _search(d, R, L, comps, by_count, share.deadline, stop=share.found, seed=1 if fixed else 0)
        if q is None:
            q = share.result()
        share.cancel()
    if q is not None:
        return "feasible", q
    if deadline is not None:
        out = cut_search(part(0.2), part(0.5))
        if out[0] == "feasible":
            return out
    return _pack_split(d, R, tables, L, comps, by_count, deadline)


class ShareJob:
    """``share_search`` beside the randomised search, in a child process (``_child.Job``): the
    child builds the share model and solves it by SciPy's HiGHS while this process runs the
    randomised search, so both run at full speed on two cores (in one process SciPy's HiGHS
    and a busy Python loop slow each other down: 5.9 s -> 22.7 s for the share MILP of the
    7-task application cell), and a solve no longer wanted is stopped. ``start`` returns None
    where no job can run (one already runs in this process, no child process, too little time);
    the caller then runs ``share_search`` after its randomised search, as before. The child's
    plan is checked here again by ``valid``."""

    child = None
    lock = threading.Lock()

    def __init__(self, job, d, R, L: int, deadline: float):
        self.job, self.d, self.R, self.L, self.deadline = job, d, R, L, deadline
        self.plan = None  # the child's plan once it answered with one that passes ``valid``

    @classmethod
    def start(cls, d, R, tables: dict, L: int, deadline: float) -> "ShareJob | None":
        from ._child import Child, Job

        if deadline - time.monotonic() < 0.5:
            return None
        if cls.child is None:
            # one thread for numpy's BLAS there: the child is to take one core, not more
            cls.child = Child("formulations._slotsrate:_share_child_main",
                              env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        job = Job.start(cls.child, cls.lock, (d, R, tables, L, deadline))
        return None if job is None else cls(job, d, R, L, deadline)

    def _take(self, wait: float) -> None:
        if not self.job.over:
            q = self.job.answer(wait)
            self.plan = q if isinstance(q, dict) and valid(first_slots(self.d, self.L), self.R, q) else None

    def found(self) -> bool:
        """True once the child answered with a plan (the randomised search's stop test)."""
        if self.job.done():
            self._take(0.0)
        return self.plan is not None

    def result(self):
        """The plan or None, waiting for the child's answer until the deadline (and 1 s for its
        way back)."""
        self._take(max(0.0, self.deadline - time.monotonic()) + 1.0)
        return self.plan

    def cancel(self) -> None:
        self.job.cancel()


def _share_child_main() -> None:
    """``ShareJob``'s child: PuLP and SciPy's HiGHS imported before the first request (about
    1.5 s, while the parent runs its first randomised search), then ``share_search`` served."""
    import pulp  # noqa: F401
    import scipy.optimize  # noqa: F401

    from ._child import serve

    serve(lambda request: share_search(*request))


def share_search(d, R, tables: dict, L: int, deadline: float):
    """A plan on d's first L slots from the share MILP (``milp``, HiGHS) with the component
    cuts of L slots, or None (out of time, no plan, or its plan fails ``valid``). A plan search
    for every back end: what it finds is checked by ``valid``; its "infeasible" is not used."""
    left = deadline - time.monotonic()
    if left < 0.5:
        return None
    dk = first_slots(d, L)
    try:
        out, q, _ = milp(dk, R, None, left, True, solver="highs", cuts=component_cuts(d, tables, L), min_slots=L)
    except Exception:  # noqa: BLE001 - a solver's failure only means no plan from this search
        return None
    return q if q is not None and valid(dk, R, q) else None


def _sizer(R, C: int):
    """size(c, q, Q, attr): the usage (attr "cpu" or "mem", % of a slot) of one group of
    component c on the row with q threads when c has Q threads in all: a_attr / Q for a
    rate-scaled row, the row's own attr for a constant one."""
    by = [{r.q: r for r in R[c]} for c in range(C)]

    def size(c, q, Q, attr):
        r = by[c][q]
        return getattr(r, "a_" + attr) / Q if r.scaled and Q else getattr(r, attr)

    return size


def _pack(d, R, tables, L, comps, by_count, deadline):
    """``packing_check``'s CP-SAT model over the listed distributions ``comps`` (None for a
    component described by thread count, ``by_count[c]``: see ``thread_counts``), solved
    until ``deadline``."""
    return _pack_model(d, R, tables, L, comps, by_count)(deadline)


def _pack_model(d, R, tables, L, comps, by_count):
    """``_pack``'s model, built once: a function of the deadline that solves it (so that
    ``_pack_split`` can solve a count's model again with more time without building it again)."""
    from ortools.sat.python import cp_model

    size = _sizer(R, d.C)

    # "fluid" components (every group under 1 % CPU and memory): only their least total usage
    # is kept, against the slots' total free room (a relaxation); they are placed afterwards
    fluid = [c for c, ds in enumerate(comps) if ds is not None and len(ds) > 1 and all(
        size(c, q, Q, a) < 1.0 for dd in ds for q, Q, _ in dd for a in ("cpu", "mem"))]

    def units(v: float) -> int:  # a size in 10^-4 %, rounded down
        return math.floor(SCALE * v + 1e-6)

    capu = 100 * SCALE + 1  # sizes rounded down lose < 1 unit each; the evaluator allows 100 (1 + 1e-6) % = 1 unit
    m = cp_model.CpModel()
    x = {}  # (c, slot, (q, Q)) for listed components
    free = {}  # (c, slot) -> threads there, for components described by thread count
    pres = {}  # (c, slot) -> such a component is there (for incompatible pairs)
    load_c = [[] for _ in range(L)]
    load_m = [[] for _ in range(L)]
    # the total of every slot's usage (against L slots when there are fluid components)
    total_c, total_m = [], []
    for c, ds in enumerate(comps):
        if c in fluid:
            continue
        if ds is None:
            # described by thread count (``thread_counts``): Q_c is the k-th listed count; slot
            # b holds g_b threads (0: none) whose size is table[k, g_b], A / Q_c rounded down,
            # or more than a slot when that row is not usable at that count
            tc = by_count[c]
            qmax = max((r.q for _, _, _, rws in tc for r in rws), default=0)
            width = qmax + 1
            tab_c, tab_m = [], []
            for Q, _, _, rws in tc:
                ok = {r.q: r for r in rws}
                for g in range(width):
                    r = ok.get(g)
                    tab_c.append(0 if g == 0 else units(r.a_cpu / Q) if r else capu + 1)
                    tab_m.append(0 if g == 0 else units(r.a_mem / Q) if r else capu + 1)
            k = m.NewIntVar(0, len(tc) - 1, "")
            Qc = m.NewIntVar(min(t[0] for t in tc), max(t[0] for t in tc), "")
            m.AddElement(k, [t[0] for t in tc], Qc)
            gs, sc_all, sm_all = [], [], []
            for b in range(L):
                g = m.NewIntVar(0, qmax, "")
                idx = m.NewIntVar(0, len(tab_c) - 1, "")
                m.Add(idx == width * k + g)
                sc, sm = m.NewIntVar(0, capu + 1, ""), m.NewIntVar(0, capu + 1, "")
                m.AddElement(idx, tab_c, sc)
                m.AddElement(idx, tab_m, sm)
                load_c[b].append(sc)
                load_m[b].append(sm)
                gs.append(g)
                sc_all.append(sc)
                sm_all.append(sm)
                free[(c, b)] = g
                if any(c in pair for pair in d.incompatible):  # present in slot b iff g > 0
                    pres[(c, b)] = z = m.NewBoolVar("")
                    m.Add(g >= 1).OnlyEnforceIf(z)
                    m.Add(g == 0).OnlyEnforceIf(z.Not())
            m.Add(sum(gs) == Qc)
            # c's total usage is at least its least usage at Q_c; each rounded size loses < 1 unit
            for al, attr, acc in ((sc_all, 1, total_c), (sm_all, 2, total_m)):
                lu = m.NewIntVar(-L, (100 * SCALE + 1) * L, "")
                m.AddElement(k, [math.floor(SCALE * t[attr] * (1 - 1e-9)) - L for t in tc], lu)
                m.Add(sum(al) >= lu)
                acc.extend(al)
            continue
        y = [m.NewBoolVar("") for _ in ds]
        m.AddExactlyOne(y)
        types = sorted({(q, Q) for dd in ds for q, Q, _ in dd})
        for b in range(L):
            here = []
            for t in types:
                v = x[(c, b, t)] = m.NewBoolVar("")
                here.append(v)
                sc, sm = units(size(c, *t, "cpu")), units(size(c, *t, "mem"))
                load_c[b].append(sc * v)
                load_m[b].append(sm * v)
                total_c.append(sc * v)
                total_m.append(sm * v)
            m.AddAtMostOne(here)
        for t in types:
            m.Add(sum(x[(c, b, t)] for b in range(L)) == sum(n * y[i] for i, dd in enumerate(ds) for q, Q, n in dd if (q, Q) == t))
    at = {}  # (c, slot) -> the literals saying c is there (one per group type, or its presence)
    for (c, b, _), v in x.items():
        at.setdefault((c, b), []).append(v)
    for cb, z in pres.items():
        at.setdefault(cb, []).append(z)
    cl = []
    for b in range(L):
        m.Add(sum(load_c[b]) <= capu)
        m.Add(sum(load_m[b]) <= capu)
        lb = m.NewIntVar(0, capu, "")
        m.Add(lb == sum(load_c[b]))
        cl.append(lb)
        for c1, c2 in d.incompatible:
            m.Add(sum(v for c in (c1, c2) for v in at.get((c, b), ())) <= 1)
    for b in range(L - 1):  # the slots are interchangeable: order them by CPU load
        m.Add(cl[b] >= cl[b + 1])
    if fluid:
        # all slots' usage <= L slots, the fluid components counted by their least usage
        # (rounded down: still valid)
        for w, tot in (((1.0, 0.0), total_c), ((0.0, 1.0), total_m)):
            need = math.floor(SCALE * sum(tables[w][c][L] for c in fluid) * (1 - 1e-9))
            m.Add(sum(tot) <= capu * L - need)

    def solve(model, limit):
        """CP-SAT on ``model``: "infeasible", "unknown", ("feasible", plan), or "rejected" when
        its solution does not pass ``valid`` after the fluid components are placed (the same
        model would give the same solution again)."""
        # one worker, no LP: measured on Star 100 tuples/s at 6 slots (infeasible), 2.6 s against
        # 12-28 s for two workers or linearization levels 1-2 (load average 6 on 2 cores)
        solver = core.cpsat_solver()
        if limit is not None:
            solver.parameters.max_time_in_seconds = float(limit)
        solver.parameters.num_workers = 1
        solver.parameters.linearization_level = 0
        st = solver.Solve(model)
        if st == cp_model.INFEASIBLE:
            return "infeasible", None
        if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return "unknown", None
        q = {(c, b): t[0] for (c, b, t), v in x.items() if solver.Value(v)}
        # a component described by thread count: its groups give Q_c (checked by ``valid``)
        q.update({cb: solver.Value(g) for cb, g in free.items() if solver.Value(g)})
        for c in fluid:  # place each fluid component: its distributions, least usage first, first fit
            for dd in sorted(comps[c], key=lambda dd: sum(n * size(c, qq, Q, "cpu") for qq, Q, n in dd)):
                groups = [qq for qq, Q, n in dd for _ in range(n)]
                if len(groups) > L:
                    continue
                trial = dict(q)
                trial.update({(c, b): qq for b, qq in zip(range(L - 1, -1, -1), groups)})  # least loaded first
                if valid(d, R, trial, partial=True):  # the fluid components after c are not placed yet
                    q = trial
                    break
            else:
                return "rejected", None
        return ("feasible", q) if valid(d, R, q) else ("rejected", None)

    def run(deadline):
        tl = None if deadline is None else deadline - time.monotonic()
        return ("unknown", None) if tl is not None and tl <= 0.05 else solve(m, tl)

    return run


def _pack_split(d, R, tables, L, comps, by_count, deadline):
    """``_pack``, and with components described by thread count, one packing per thread count
    of the one with the most counts (least usage first), in rounds with a doubling time slice
    (the last undecided count gets all the time left): a count proven infeasible is dropped,
    the first plan ends the search, and when every count is dropped no plan exists (together
    the models cover every Q_c of that component). A count whose solution fails ``valid`` is
    dropped too, but then the answer is "unknown", never "infeasible"."""
    size = _sizer(R, d.C)

    comps = [ds if ds is None else _undominated(c, ds, size) for c, ds in enumerate(comps)]
    if not by_count:
        st, q = _pack(d, R, tables, L, comps, by_count, deadline)
        return ("unknown", None) if st == "rejected" else (st, q)
    c0 = max(by_count, key=lambda c: len(by_count[c]))
    pending = sorted(by_count[c0], key=lambda e: e[1])
    step = 0.25
    rejected = False  # a count whose model's solution failed ``valid``: it is neither a plan nor refuted
    # a count's model, built in its first round and solved again in the later ones; kept only
    # for up to 64 counts (each model holds every by-count component's size tables, up to a
    # few MB at 400 counts)
    built = {}
    keep = len(pending) <= 64
    while pending:
        undecided = []
        for entry in pending:
            now = time.monotonic()
            if deadline is not None and deadline - now <= 0.05:
                return "unknown", None
            # the last undecided count gets all the time left (no restarts)
            end = deadline if len(pending) == 1 else now + step if deadline is None else min(deadline, now + step)
            run = built.get(entry[0]) or _pack_model(d, R, tables, L, comps, by_count | {c0: [entry]})
            if keep:
                built[entry[0]] = run
            st, q = run(end)
            if st == "feasible":
                return st, q
            if st == "unknown":
                undecided.append(entry)
            rejected |= st == "rejected"  # not solved again: it would give the same solution
        pending = undecided
        step *= 2
    return ("unknown", None) if rejected else ("infeasible", None)


def _fill(tc, res, L: int):
    """Groups of a component described by thread count (``thread_counts`` entries ``tc``) that
    fit the free room ``res`` (per slot (CPU %, memory %), None where the component may not
    go): {slot: threads} for the first thread count Q_c in ``tc``'s order whose groups, at most
    one per slot, add up to Q_c and each fit their slot at Q_c; None when no count does. A
    dynamic programme over the slots on bit sets of reachable thread sums."""
    for Q, _, _, rws in tc:
        reach = [1]
        opts = []
        for b in range(L):
            ok = [] if res[b] is None else [r.q for r in rws if r.a_cpu / Q <= res[b][0] and r.a_mem / Q <= res[b][1]]
            opts.append(ok)
            cur = nxt = reach[-1]
            for g in ok:
                nxt |= cur << g
            reach.append(nxt & ((1 << (Q + 1)) - 1))
        if not (reach[-1] >> Q) & 1:
            continue
        out, t = {}, Q
        for b in range(L - 1, -1, -1):
            if (reach[b] >> t) & 1:
                continue  # slot b holds no group
            g = next(g for g in opts[b] if g <= t and (reach[b] >> (t - g)) & 1)
            out[b] = g
            t -= g
        return out
    return None


def _fill2(outer, inner, res, L: int):
    """Groups of two components described by thread count, for one thread count of each
    (``thread_counts`` entries ``outer`` and ``inner``), in the free room ``res`` (as ``_fill``):
    ({slot: threads}, {slot: threads}) or None. A dynamic programme over the slots on the outer
    component's thread sum keeps, per sum, the most inner threads the room left could hold (in
    each slot the inner component's largest row that fits there); when that reaches the inner
    count, the outer groups are walked back and ``_fill`` places the inner ones (it may still
    fail when the inner rows that fit are not every size up to the largest). A plan search
    only: a None proves nothing."""
    import numpy as np

    Qo, _, _, rws_o = outer
    Qi, _, _, rws_i = inner
    ri = sorted(rws_i, key=lambda r: r.q)
    ic = np.array([r.a_cpu / Qi for r in ri])
    im = np.array([r.a_mem / Qi for r in ri])
    iq = np.array([r.q for r in ri])

    def most(rc, rm) -> int:  # the inner component's largest row fitting room (rc, rm)
        ok = (ic <= rc) & (im <= rm)
        return int(iq[ok].max()) if ok.any() else 0

    NEG = -(10 ** 9)
    V = np.full(Qo + 1, NEG, dtype=np.int64)
    V[0] = 0
    Vs, steps = [V], []  # Vs[b]: the best inner capacity per outer sum over slots < b
    for b in range(L):
        if res[b] is None:
            opts = [(0, 0)]
        else:
            rc, rm = res[b]
            opts = [(0, most(rc, rm))] + [(r.q, most(rc - r.a_cpu / Qo, rm - r.a_mem / Qo)) for r in rws_o
                                          if r.q <= Qo and r.a_cpu / Qo <= rc and r.a_mem / Qo <= rm]
        new = np.full(Qo + 1, NEG, dtype=np.int64)
        for g, h in opts:
            new[g:] = np.maximum(new[g:], Vs[-1][:Qo + 1 - g] + h)
        steps.append(opts)
        Vs.append(new)
    if Vs[L][Qo] < Qi:
        return None
    by_q = {r.q: r for r in rws_o}
    go, t = {}, Qo
    for b in range(L - 1, -1, -1):
        want = Vs[b + 1][t]
        g = next(g for g, h in steps[b] if g <= t and Vs[b][t - g] + h == want)
        if g:
            go[b] = g
        t -= g
    room = [None if res[b] is None else (res[b][0] - (by_q[go[b]].a_cpu / Qo if b in go else 0.0),
                                          res[b][1] - (by_q[go[b]].a_mem / Qo if b in go else 0.0))
            for b in range(L)]
    gi = _fill([inner], room, L)
    return None if gi is None else (go, gi)


def _search(d, R, L: int, comps, by_count, deadline: float, seed: int = 0, tries: int | None = None,
            stop=None):
    """A randomised search for a plan on L interchangeable slots (``packing_check``'s data:
    ``comps`` the listed distributions, None for a component in ``by_count``, described by
    thread count): each listed component takes one of its distributions (least usage most
    likely), the groups go largest first into a fitting slot (per attempt: the fullest, the
    emptiest or any, with noise), then the components described by thread count fill the
    room left: the two with the largest usage together (``_fill2``, a few pairs of their
    counts, least usage most likely) unless they may not share a slot, the others one after
    another (``_fill``).
    Returns the first allocation that passes ``valid``, or None at ``deadline``, after
    ``tries`` attempts or once ``stop()`` is true (another search has a plan). Finds plans
    only; proves nothing."""
    import random

    rnd = random.Random(seed)
    sz = _sizer(R, d.C)

    def size(c, q, Q):
        return sz(c, q, Q, "cpu"), sz(c, q, Q, "mem")

    listed = []  # per listed component: its distributions as group lists, least CPU first
    for c, ds in enumerate(comps):
        if ds is None:
            continue
        opts = [[(size(c, q, Q), q) for q, Q, n in dd for _ in range(n)] for dd in ds]
        listed.append((c, sorted(opts, key=lambda g: sum(x[0][0] for x in g))))
    # the components described by thread count, largest usage first; each its counts, least usage first
    last = [(c, sorted(by_count[c], key=lambda e: e[1])) for c in sorted(by_count, key=lambda c: -max(e[1] for e in by_count[c]))]
    clash = {c: {b for a, b in d.incompatible if a == c} | {a for a, b in d.incompatible if b == c} for c in range(d.C)}
    cap = 100 * (1 + CHECK_TOL)
    # the two largest filled together (``_fill2``), unless they may not share a slot (then one
    # after the other, as the rest)
    pair = len(last) >= 2 and last[1][0] not in clash[last[0][0]]

    def place(c, f):
        """Component c's groups by slot (``f``, from ``_fill``/``_fill2``) into this attempt's plan."""
        Q = sum(f.values())
        for b, g in f.items():
            sc, sm = size(c, g, Q)
            load[b][0] += sc
            load[b][1] += sm
            here[b].add(c)
            q[(c, b)] = g

    while time.monotonic() < deadline and (tries is None or tries > 0) and not (stop is not None and stop()):
        tries = None if tries is None else tries - 1
        items = []
        for c, opts in listed:
            items += [(sz, c, q) for sz, q in opts[min(len(opts) - 1, int(rnd.expovariate(0.7)))]]
        items.sort(key=lambda it: -it[0][0] * rnd.uniform(0.8, 1.2))
        # per attempt a rule for the listed groups: the fullest slot that fits (leaves whole
        # slots free), the emptiest (spreads the room for the components filled last), or any
        sign = rnd.choice((1.0, -1.0, 0.0))
        load = [[0.0, 0.0] for _ in range(L)]
        here = [set() for _ in range(L)]
        q = {}
        for (sc, sm), c, qq in items:
            fits = [b for b in range(L) if c not in here[b] and not (clash[c] & here[b])
                    and load[b][0] + sc <= cap and load[b][1] + sm <= cap]
            if not fits:
                break
            b = max(fits, key=lambda b: sign * load[b][0] + rnd.uniform(0, 5)) if sign else rnd.choice(fits)
            load[b][0] += sc
            load[b][1] += sm
            here[b].add(c)
            q[(c, b)] = qq
        else:
            rest = last
            if pair:
                # the two largest by thread count together (``_fill2``): a few pairs of their
                # thread counts, each drawn least usage most likely
                (co, tco), (ci, tci) = last[:2]
                res = [None if (clash[co] | clash[ci]) & here[b] else (cap - load[b][0], cap - load[b][1]) for b in range(L)]
                for _ in range(4):
                    eo = tco[min(len(tco) - 1, int(rnd.expovariate(1 / 3)))]
                    ei = tci[min(len(tci) - 1, int(rnd.expovariate(1 / 3)))]
                    f2 = _fill2(eo, ei, res, L)
                    if f2 is not None:
                        break
                else:
                    continue
                place(co, f2[0])
                place(ci, f2[1])
                rest = last[2:]
            for c, tc in rest:
                res = [None if clash[c] & here[b] else (cap - load[b][0], cap - load[b][1]) for b in range(L)]
                f = _fill(tc, res, L)
                if f is None:
                    break
                place(c, f)
            else:
                if valid(d, R, q):
                    return q
    return None


FIXED_SLICE = 1.5  # ``fixed_search``: seconds of its first try
FIXED_GROWTH = 1.5  # ``fixed_search``: each try's seconds this many times the try's before
FIXED_SLICE_MAX = 16.0  # ``fixed_search``: seconds of a try at most
FIXED_LEAST_TRIES = 4  # ``fixed_search``: tries of the least-CPU vector before the random ones
FIXED_HINTS = False  # ``fixed_search``: a try starts from the best near-packing of the vector's tries before (off: measured no gain, session 45)
FIXED_STAY = 0.8  # ``fixed_search`` (with hints): a vector is tried again while a try cuts its overflow to this share


def fixed_search(d, R, L: int, comps, counts: dict, room: dict, deadline: float, seed: int = 0):
    """A plan search on L interchangeable slots with every rate-scaled component's thread count
    fixed (``packing_check``'s data: ``comps`` from ``gather``, ``counts`` every rate-scaled
    component's thread counts, ``room`` from ``room_at``). With Q_c fixed a group's CPU and
    memory are constants, so the question is a 0/1 packing: per component, slot and row kept at
    Q_c (``thread_counts``) a Boolean, at most one group of a component in a slot, the groups'
    threads summing to Q_c (or, every other try, to at least Q_c: see ``pack``; a component with
    constant rows: one group of any row), incompatible components apart, each slot's CPU and
    memory (rounded up to 10^-4 %, so that its solutions are plans) at most 100 %, as soft
    capacities whose overflow is minimised (``fixed_pack``). CP-SAT (two workers), tries of
    ``FIXED_SLICE`` seconds growing ``FIXED_GROWTH`` times a try (at most ``FIXED_SLICE_MAX``),
    its seed changed every try: four tries with every component at its least-CPU count, then random
    vectors (each component's k-th cheapest count, k exponential with mean 2, seeded) whose CPU
    and memory above the least usages fit the room, at most 200 draws. A (vector, form) that
    CP-SAT proves to have no packing is not tried again.

    With ``FIXED_HINTS`` (off by default) each try of a vector starts from the least-overflow
    assignment of its tries before (a solution hint), and a vector whose try cut that overflow
    to ``FIXED_STAY`` of what it was is tried once more before the next vector; the least-CPU
    vector's stays count among its ``FIXED_LEAST_TRIES`` tries, so a vector whose overflow
    stalls is left. Session 44: the least-CPU vector's tries on seed 0's 11-task application
    DAG at 100 tuples/s took its overflow from 11.5 % to 2.2 % of a slot in 12 s, and the
    search then left it; with the stay, the sixth try packed it at 20.7 s. Measured over four
    application cells and whole 60 s solves (session 45, docs/benchmarks.md), it found 16 of
    24 plans at 26 s per seed against 15 without, but proved 11 of 18 whole solves against 13
    of 18 without (seed 1's 15 tasks at 100 lost a round of all three back ends), so it stays
    off: the probe's ``--fixed-hints`` turns it on.
    Since session 46 (``ANNEAL_SHARE`` > 0) the least-CPU vector gets one CP-SAT try, then
    an annealing for ``ANNEAL_SHARE`` of the time left (at most ``ANNEAL_MAX`` seconds) in place
    of its other tries: since session 47 ``anneal_vectors``, a climb over count vectors from the
    least-CPU one, each scored by ``anneal_pack`` (session 46: ``anneal_pack`` on the least-CPU
    vector alone); the random vectors' tries follow with the slices and forms they had after
    the four.
    Returns the first plan that passes ``valid``, or None. Finds plans only: a vector without a
    packing says nothing about the others.

    Measured (session 13, docs/benchmarks.md "slots: application-style DAGs, plans at the bound
    by fixed thread counts"): on three application-style cells whose plans had stayed a slot
    above the even-routing bound, plans at the bound in 0.2-10 s (three seeds each), where the
    randomised search (``_search``) and the share MILP found none. Session 41 (the soft
    packing): plans at the bound on those cells in 0.1-3.3 s and on four more of the twelve in
    7-25 s; on 20 s per seed the growing tries found 5 of 12 plans on four of those harder
    cells where tries of a constant 1.5 s found 3 and tries doubling from 2 s found 2."""
    import itertools
    import random

    rnd = random.Random(seed)
    got = _vector_space(counts, room)
    if got is None:
        return None
    base, least, cpu, mem = got
    refuted: set = set()  # (vector, form) that CP-SAT proved to have no packing
    near: dict = {}  # vector -> the least overflow reached on it and its assignment (``fixed_pack``'s keep)
    tries: dict = {}  # vector -> its tries so far

    def vector_key(pick: dict) -> tuple:
        return tuple(sorted((c, e[0]) for c, e in pick.items()))

    first = {c: tc[0] for c, tc in base.items()}  # the least-CPU vector

    def vectors():
        for _ in range(FIXED_LEAST_TRIES if ANNEAL_SHARE <= 0 else 1):  # CP-SAT's seed changes each try
            if tries.get(vector_key(first), 0) >= FIXED_LEAST_TRIES:
                break  # its stays count among these tries
            yield first
        for _ in range(200):
            pick = {c: tc[min(len(tc) - 1, int(rnd.expovariate(0.5)))] for c, tc in base.items()}
            if sum(e[1] - least[c][0] for c, e in pick.items()) <= cpu and \
                    sum(e[2] - least[c][1] for c, e in pick.items()) <= mem:
                yield pick

    if COMPOSE_SHARE > 0:  # first the model over the tied counts at once (session 48)
        q = compose_search(d, R, L, comps, counts, room,
                           min(COMPOSE_MAX, COMPOSE_SHARE * (deadline - time.monotonic())), seed)
        if q is not None:
            return q
    gen = vectors()
    i = 0
    annealed = ANNEAL_SHARE <= 0
    again = None  # the vector to try once more: its last try cut its overflow (``FIXED_STAY``)
    while True:
        if not annealed and i == 1:
            # after one CP-SAT try of the least-CPU vector the annealing on it stands for its
            # other tries; the random vectors then keep their slices and forms (try index)
            annealed, i = True, FIXED_LEAST_TRIES
            if (vector_key(first), False) not in refuted:  # CP-SAT proved no packing: nothing to anneal
                q = anneal_vectors(d, R, L, counts, room, comps,
                                   min(ANNEAL_MAX, ANNEAL_SHARE * (deadline - time.monotonic())), seed)
                if q is not None:
                    return q
        source, again = (gen if again is None else itertools.chain([again], gen)), None
        for pick in source:
            key = (vector_key(pick), i % 2 == 1)
            if key not in refuted:
                break
        else:
            return None  # the draws are spent
        left = deadline - time.monotonic()
        if left < 0.5:
            return None
        kept = near.setdefault(key[0], {}) if FIXED_HINTS else None
        before = math.inf if kept is None else kept.get("over", math.inf)
        st, q = fixed_pack(d, R, L, comps, pick, min(FIXED_SLICE * FIXED_GROWTH ** i, FIXED_SLICE_MAX, left),
                           seed + i, key[1], keep=kept)
        i += 1
        tries[key[0]] = tries.get(key[0], 0) + 1
        if st == "infeasible":
            refuted.add(key)
        if q is not None and valid(d, R, q):
            return q
        if kept and before < math.inf and kept.get("over", math.inf) <= FIXED_STAY * before:
            again = pick  # still closing in: its next try starts from this one's near-packing


ANNEAL_SHARE, ANNEAL_MAX = 0.35, 10.0  # ``fixed_search``: the annealing's share of its time, and its seconds at most (0: off)
# ``anneal_pack``'s restarts, in turn: (seconds, weight of the CPU used against the overflow);
# its temperature falls from ANNEAL_T[0] to ANNEAL_T[1] units over each ANNEAL_CYCLE "seconds";
# these "seconds", and the restarts', count moves tried, ANNEAL_RATE to one (about what the
# development machine tries in a second, session 49), so that a seed gives the same search on
# any machine and under any load; only the caller's limit is wall time
ANNEAL_RESTARTS = ((0.5, 0.5), (1.0, 0.2))
ANNEAL_T, ANNEAL_CYCLE = (2000.0, 5.0), 2.0
ANNEAL_RATE = 700_000


def anneal_pack(d, R, L: int, comps, pick: dict, limit: float, seed: int = 0, trace: list | None = None):
    """A plan search for ``fixed_pack``'s question (the count vector ``pick`` on L slots, the
    thread sums exact) by simulated annealing with restarts, within ``limit`` seconds:
    ("feasible", plan on slots 0..L-1) or ("unknown", None) (or "infeasible" when some
    component has no group that fits a slot alone). Sizes are ``fixed_pack``'s (rounded up to
    10^-4 %), so a packing of overflow 0 is a plan; it still needs ``valid``.

    A start: per component with rate-scaled rows the composition of Q_c into at most L groups
    of its kept rows with the least CPU + 0.3 memory (a dynamic programme over group counts
    and threads), a component with constant rows its least-CPU row; groups placed largest CPU
    first, each in a slot without that component (nor an incompatible one, where there is
    such a slot) of least CPU load (the first restart) or, later, one of the least loaded ones
    at random. Moves: swap a component's groups (or a group and nothing) between two slots,
    or move threads of a group to the component's group in another slot (a new group when it
    has none there): one thread, or as many as a random kept row's size; every size stays a
    kept row. A move changes two slots, each by its CPU and memory above 100 %; the move's
    cost is that change plus the restart's weight times the change in CPU used (so the search
    keeps the groups large, where a thread costs least); it is taken if the cost is <= 0, or
    with probability exp(-cost / T). Restarts take ``ANNEAL_RESTARTS`` in turn. Restart lengths
    and the temperature's cycle count moves tried (``ANNEAL_RATE`` to the second of their
    figures), not seconds, since session 49: a seed then makes the same search on any machine
    and under any load until ``limit`` (wall time) stops it; with seconds, the restarts were cut
    where the clock said, so a loaded machine changed the search (a test that packed seed 0's
    11-task cell at 50 t/s in about 3 s failed once in a clean checkout at its 40 s).

    Why (session 46, docs/benchmarks.md): on seed 0's 11-task application DAG at 100 tuples/s
    on 16 slots and at 50 tuples/s on 8, the least-CPU vector's single CP-SAT try of
    ``fixed_pack`` packed in 2.0-30 s (24 runs each; 22 and 12 of 24 within 26 s), this
    search, given 10 s, in 0.03-6.0 s (12 of 12 seeds over two runs) and 0.5-9.1 s (9 of 12)."""
    import random

    rnd = random.Random(seed)
    end = time.monotonic() + limit
    cap = 100 * SCALE
    clash: dict = {}
    for a, b in d.incompatible:
        clash.setdefault(a, set()).add(b)
        clash.setdefault(b, set()).add(a)
    groups = fixed_items(d, R, comps, pick)
    if groups is None:
        return "unknown", None
    tab = {c: {q: (_units(uc), _units(um)) for q, uc, um in items} for c, (_, items) in groups.items()}
    Qs = {c: Q for c, (Q, _) in groups.items()}  # None: constant rows
    if not all(tab.values()):
        return "infeasible", None
    cs = list(tab)
    parts = {}
    for c in cs:
        t = tab[c]
        if Qs[c] is None:
            parts[c] = [min(t, key=lambda q: t[q])]
            continue
        parts[c] = _least_composition(t, Qs[c], L)
        if parts[c] is None:
            return "infeasible", None
    order = sorted(cs, key=lambda c: -max(v[0] for v in tab[c].values()))
    sizes = {c: sorted(tab[c]) for c in cs}

    def over(x, y):
        return max(0, x - cap) + max(0, y - cap)

    def restart(k: int, moves: int, weight: float):
        g = {c: [0] * L for c in cs}
        cpu, mem = [0] * L, [0] * L
        for c in order:
            t = tab[c]
            for q in sorted(parts[c], key=lambda q: -t[q][0]):
                free = [b for b in range(L) if not g[c][b]]
                apart = [b for b in free if not any(g[o][b] for o in clash.get(c, ()))]
                free = sorted(apart or free, key=lambda b: cpu[b])
                b = free[0 if k == 0 else min(len(free) - 1, int(rnd.expovariate(1.0)))]
                g[c][b] = q
                cpu[b] += t[q][0]
                mem[b] += t[q][1]
        # the overflow, and a slot's capacity for each incompatible pair sharing a slot
        total = sum(over(cpu[b], mem[b]) for b in range(L))
        total += cap * sum(1 for a, a2 in d.incompatible for b in range(L) if g[a][b] and g[a2][b])
        temp, it = ANNEAL_T[0], 0
        low = total
        while total > 0 and L > 1:
            it += 1
            if it & 1023 == 0:
                if it >= moves or time.monotonic() > end:
                    if trace is not None:
                        trace.append(low)
                    return None
                temp = ANNEAL_T[0] * (ANNEAL_T[1] / ANNEAL_T[0]) ** (((it / ANNEAL_RATE) % ANNEAL_CYCLE) / ANNEAL_CYCLE)
            c = cs[rnd.randrange(len(cs))]
            t, gc = tab[c], g[c]
            b1 = rnd.randrange(L)
            g1 = gc[b1]
            if not g1:
                continue
            b2 = rnd.randrange(L - 1)
            b2 += b2 >= b1
            g2 = gc[b2]
            m = rnd.random()
            if Qs[c] is None or m < 0.25:  # swap c's groups of b1 and b2
                n1, n2 = g2, g1
            else:  # threads from b1 to b2: one, or a kept row's size
                move = 1 if m >= 0.6 else sizes[c][rnd.randrange(len(sizes[c]))]
                n1, n2 = g1 - move, g2 + move
                if n1 < 0 or (n1 and n1 not in t) or n2 not in t:
                    continue
            u1, u2 = t.get(g1, (0, 0)), t.get(g2, (0, 0))
            v1, v2 = t.get(n1, (0, 0)), t.get(n2, (0, 0))
            c1, m1 = cpu[b1] - u1[0] + v1[0], mem[b1] - u1[1] + v1[1]
            c2, m2 = cpu[b2] - u2[0] + v2[0], mem[b2] - u2[1] + v2[1]
            delta = over(c1, m1) + over(c2, m2) - over(cpu[b1], mem[b1]) - over(cpu[b2], mem[b2])
            if c in clash and ((not n1) != (not g1) or (not n2) != (not g2)):  # c enters or leaves a slot
                delta += cap * ((bool(n1) - bool(g1)) * sum(1 for o in clash[c] if g[o][b1])
                                + (bool(n2) - bool(g2)) * sum(1 for o in clash[c] if g[o][b2]))
            cost = delta + weight * (c1 + c2 - cpu[b1] - cpu[b2])
            if cost <= 0 or rnd.random() < math.exp(-cost / temp):
                gc[b1], gc[b2] = n1, n2
                cpu[b1], mem[b1], cpu[b2], mem[b2] = c1, m1, c2, m2
                total += delta
                if total < low:
                    low = total
        return {(c, b): g[c][b] for c in cs for b in range(L) if g[c][b]} if total <= 0 else None

    k = 0
    while time.monotonic() < end - 0.01:
        secs, weight = ANNEAL_RESTARTS[k % len(ANNEAL_RESTARTS)]
        q = restart(k, int(secs * ANNEAL_RATE), weight)
        k += 1
        if q is not None:
            return "feasible", q
        if L < 2:  # no moves: the one start is all there is
            break
    return "unknown", None


def _vector_space(counts: dict, room: dict):
    """What ``fixed_search`` and ``anneal_vectors`` draw count vectors from: (each component's
    counts by least CPU, each component's least CPU and least memory over its counts, the CPU
    room, the memory room), or None when some component has no count."""
    base = {c: sorted(tc, key=lambda e: e[1]) for c, tc in counts.items() if tc}
    if len(base) < len(counts):
        return None
    least = {c: (tc[0][1], min(e[2] for e in tc)) for c, tc in base.items()}
    return base, least, room[(1.0, 0.0)], room[(0.0, 1.0)]


ANNEAL_PROBE = 1.0  # ``anneal_vectors``: seconds of the annealing that scores one count vector
# ``anneal_vectors``: a vector the climb moves to whose overflow is below this (10^-4 % of a
# slot: 1 %) is annealed once more for this many seconds
ANNEAL_DEEP_AT, ANNEAL_DEEP = 10_000, 2.0
ANNEAL_FIRST = 0.5  # ``anneal_vectors``: the least-CPU vector's share of its time (at least ANNEAL_PROBE)


def anneal_vectors(d, R, L: int, counts: dict, room: dict, comps, limit: float, seed: int = 0):
    """A plan search over count vectors (``fixed_search``'s data) by a climb whose steps are
    scored by ``anneal_pack``, within ``limit`` seconds: the least-CPU vector first (annealed
    for ``ANNEAL_FIRST`` of the time), then, in turn, one component's thread count changed to
    another of its counts (at random) that keeps the vector's CPU and memory above the least
    usages within the room; each vector is annealed for ``ANNEAL_PROBE`` seconds (two
    restarts), and the climb moves to it when the least overflow that annealing reached is no
    more than the current vector's (a vector it moves to whose overflow is below
    ``ANNEAL_DEEP_AT`` is annealed once more, ``ANNEAL_DEEP`` seconds). It stops when no
    component has another count within the room. Returns the first plan that passes ``valid``,
    or None.

    Why (session 47, docs/benchmarks.md): many counts of a component tie on CPU (a component
    whose cheapest row has q threads costs the same at every multiple of q), and the least-CPU
    vector takes the smallest, whose groups are the largest. On seed 0's 15-task application
    DAG at 100 tuples/s on 19 slots that vector's three 86 % groups fit no slot beside the
    largest component's groups, so its annealing never fell below 52 % of a slot; a plan on 19
    exists with other tied counts (benchmarks/data). The climb alone (the least-CPU vector
    given ``ANNEAL_PROBE`` only), 10 s per seed, 6 seeds: seed 0's 7 tasks at 100 (10 slots),
    where the least-CPU vector's annealing stalls at 5-34 % (0 of 6), 6 of 6 in 1.0-7.7 s; seed
    1's 15 tasks at 100 6 of 6 (that annealing: 3 of 6); seed 0's 11 tasks at 50 4 of 6 (5 of 6).
    In whole 60 s solves it lost a round on the 11 tasks at 50, so the least-CPU vector first
    gets ``ANNEAL_FIRST`` of the time, as in session 46; that version was the fastest of the
    three in one run of two rounds. The 15 tasks at 100 on 19 slots: no plan in 10 s (6 seeds)."""
    import random

    rnd = random.Random(seed)
    end = time.monotonic() + limit
    got = _vector_space(counts, room)
    if got is None:
        return None
    base, least, cpu_room, mem_room = got
    movable = [c for c, tc in base.items() if len(tc) > 1]
    blocked: set = set()  # components with no other count within the room at the current vector

    def score(pick: dict, secs: float):
        lows: list = []
        _, q = anneal_pack(d, R, L, comps, pick, secs, rnd.randrange(1 << 30), trace=lows)
        if q is not None and valid(d, R, q):
            return 0, q
        return min(lows, default=math.inf), None

    cur = {c: tc[0] for c, tc in base.items()}
    s, q = score(cur, min(max(ANNEAL_PROBE, ANNEAL_FIRST * limit), limit))
    while q is None and len(blocked) < len(movable) and time.monotonic() < end - 0.05:
        c = movable[rnd.randrange(len(movable))]
        ex_c = sum(e[1] - least[k][0] for k, e in cur.items() if k != c) - least[c][0]
        ex_m = sum(e[2] - least[k][1] for k, e in cur.items() if k != c) - least[c][1]
        ok = [e for e in base[c] if e is not cur[c] and ex_c + e[1] <= cpu_room and ex_m + e[2] <= mem_room]
        if not ok:
            blocked.add(c)
            continue
        new = dict(cur)
        new[c] = ok[rnd.randrange(len(ok))]
        s2, q = score(new, min(ANNEAL_PROBE, end - time.monotonic()))
        if s2 <= s:
            cur, s = new, s2
            blocked.clear()
            if s < ANNEAL_DEEP_AT and time.monotonic() < end - 0.05:
                s3, q = score(cur, min(ANNEAL_DEEP, end - time.monotonic()))
                s = min(s, s3)
    return q


def fixed_items(d, R, comps, pick: dict) -> dict | None:
    """The groups ``fixed_pack`` and ``anneal_pack`` choose from for the count vector ``pick``:
    per component, (Q_c, [(threads, CPU %, memory %)]) for a rate-scaled one in ``pick`` (its
    rows kept at Q_c, used at that count), (None, its rows) for one with constant rows (one
    group of any row); only groups that fit a slot alone (<= 100 %). None when some component
    is neither (``comps[c]`` None: rows of mixed kinds)."""
    out = {}
    for c in range(d.C):
        if c in pick:
            out[c] = (pick[c][0], _items_at(pick[c]))
        elif comps[c] is not None:
            out[c] = (None, [e for e in ((r.q, r.cpu, r.mem) for r in R[c]) if e[1] <= 100 and e[2] <= 100])
        else:
            return None
    return out


def _items_at(entry) -> list:
    """A rate-scaled component's groups at one of its thread counts (a ``thread_counts`` entry
    (Q, least CPU, least memory, rows kept at Q)): (threads, CPU %, memory %) of each kept row
    used at Q, only those within a slot alone (<= 100 %)."""
    Q, _, _, rws = entry
    return [e for e in ((r.q, r.a_cpu / Q, r.a_mem / Q) for r in rws) if e[1] <= 100 and e[2] <= 100]


def _units(pct: float) -> int:
    """A size in % rounded up to 10^-4 % (``SCALE``), so sums of the rounded sizes within
    100 % are plans."""
    return math.ceil(pct * SCALE - 1e-9)


def _least_composition(t: dict, Q: int, L: int) -> list[int] | None:
    """Group sizes from ``t`` (threads -> (CPU, memory)) summing to Q in at most L groups with
    the least CPU + 0.3 memory (``anneal_pack``'s start), or None when none sums to Q."""
    import numpy as np

    inf = math.inf
    cost = {q: v[0] + 0.3 * v[1] for q, v in t.items() if q <= Q}
    best = [np.full(Q + 1, inf)]
    best[0][0] = 0.0
    for _ in range(L):
        cur = best[-1].copy()
        for q, w in cost.items():
            np.minimum(cur[q:], best[-1][:Q + 1 - q] + w, out=cur[q:])
        best.append(cur)
    if not math.isfinite(best[L][Q]):
        return None
    out, k, rem = [], L, Q
    while rem > 0:
        if best[k - 1][rem] <= best[k][rem]:
            k -= 1  # as good with fewer groups
            continue
        q = next(q for q, w in cost.items() if q <= rem and abs(best[k - 1][rem - q] + w - best[k][rem]) <= 1e-6 * (1 + best[k][rem]))
        out.append(q)
        rem -= q
        k -= 1
    return out


COMPOSE_TIE = 1e-6  # ``compose_options``: counts whose least CPU is within this (relative) of the least tie with it
# ``compose_search``'s levels: (how many counts beyond the ties a component may take, tries a round)
COMPOSE_LEVELS = ((0, 3), (30, 1))
COMPOSE_SLICE = 3.0  # ``compose_search``: seconds of a try
# ``compose_search``: a level's tries after its first by CP-SAT's neighbourhood searches alone (off:
# measured no gain, session 48; the probe's --compose-lns turns it on)
COMPOSE_LNS = False
# ``fixed_search``: ``compose_search``'s share of the time, and its seconds at most (0: off)
COMPOSE_SHARE, COMPOSE_MAX = 0.9, 30.0


def compose_options(d, R, L: int, counts: dict, room: dict, extra: int):
    """``compose_pack``'s choices (``fixed_search``'s data): per rate-scaled component, a list of
    (its ``thread_counts`` entry, {group threads: (how many groups, (CPU, memory) of one in
    10^-4 %, rounded up)}) for the counts tied on CPU with its least-CPU count (within a relative
    ``COMPOSE_TIE``) and its ``extra`` next cheapest counts whose CPU and memory above its least
    usages fit the room; each count with one way to split it, the least composition of Q into
    at most L groups of its kept rows (``_least_composition``, as ``anneal_pack``'s start). A
    count with no such composition is left out. None when some component has no choice left."""
    ranked = _ranked_options(L, counts, room, extra)
    return None if ranked is None else _options_within(ranked, extra)


def _ranked_options(L: int, counts: dict, room: dict, extra: int):
    """``compose_options`` for ``extra`` counts beyond the ties, each option with its rank: -1
    for a tie, else its place among the counts beyond the ties (so ``_options_within`` gives
    the options of any smaller ``extra`` without splitting the counts again)."""
    got = _vector_space(counts, room)
    if got is None:
        return None
    base, least, cpu_room, mem_room = got
    out = {}
    for c, tc in base.items():
        lo = tc[0][1]
        ties = [e for e in tc if e[1] <= lo * (1 + COMPOSE_TIE) + 1e-9]  # a prefix: tc is by CPU
        more = [e for e in tc[len(ties):] if e[1] - lo <= cpu_room and e[2] - least[c][1] <= mem_room][:extra]
        opts = []
        for rank, e in [(-1, e) for e in ties] + list(enumerate(more)):
            size = {q: (_units(uc), _units(um)) for q, uc, um in _items_at(e)}
            parts = _least_composition(size, e[0], L) if size else None
            if parts is not None:
                opts.append((rank, e, {q: (parts.count(q), size[q]) for q in set(parts)}))
        out[c] = opts
    return out


def _options_within(ranked: dict, extra: int):
    """The options of ``_ranked_options`` up to ``extra`` counts beyond the ties, as
    ``compose_options`` gives them, or None when some component has none."""
    out = {c: [(e, g) for rank, e, g in opts if rank < extra] for c, opts in ranked.items()}
    return None if not all(out.values()) else out


def compose_pack(d, R, L: int, comps, options: dict, limit: float, seed: int = 0, lns_only: bool = False):
    """A plan search on L interchangeable slots over several count vectors at once: each
    rate-scaled component chooses one of its ``options`` (``compose_options``: a thread count and
    its groups, a fixed multiset of sizes) and places those groups in distinct slots; a component
    with constant rows places one group of any row. Booleans w_ckbq ("slot b holds a q-thread
    group of c's option k") with sum_b w_ckbq = (groups of q in k) y_ck, exactly one y_ck per
    component, at most one group of a component in a slot, incompatible components apart, and
    the slots' CPU and memory (sizes rounded up to 10^-4 %) as soft capacities whose overflow is
    minimised, stopping at 0 (``_soft_capacities``, ``_solve_to_zero``, as ``fixed_pack``):
    ("feasible", plan on slots 0..L-1), ("infeasible", None) when CP-SAT proves that no choice of
    the options packs, or ("unknown", None). Its plans still need ``valid``. A restriction
    (one composition per count, only the counts offered), so "infeasible" says nothing about
    other counts or compositions. ``lns_only``: CP-SAT's neighbourhood searches alone
    (``_solve_to_zero``): never "infeasible".

    Why (session 48, docs/benchmarks.md): the counts that tie on CPU differ only in how finely
    they cut a component (a component whose cheapest row has q threads costs the same at every
    multiple of q, in that many equal groups), and which cut packs depends on the others'; the
    climb over count vectors (``anneal_vectors``) tries them one vector at a time and never
    packed seed 0's 15-task application DAG at 100 tuples/s on its bound, 19 slots, where this
    model, given every tie at once, packs it."""
    from ortools.sat.python import cp_model

    first = {c: opts[0][0] for c, opts in options.items()}
    fixed = fixed_items(d, R, comps, first)  # the components with constant rows
    if fixed is None:
        return "unknown", None
    m = cp_model.CpModel()
    w = {}  # (c, k or None, b, threads) -> Boolean
    load_c, load_m = [[] for _ in range(L)], [[] for _ in range(L)]  # (size in 10^-4 %, Boolean)
    here = {}  # (c, b) -> c's Booleans in slot b
    for c in range(d.C):
        if c in options:
            ys = []
            for k, (_, groups) in enumerate(options[c]):
                ys.append(m.NewBoolVar(""))
                for q, (n, (uc, um)) in groups.items():
                    slots = []
                    for b in range(L):
                        v = w[(c, k, b, q)] = m.NewBoolVar("")
                        slots.append(v)
                        here.setdefault((c, b), []).append(v)
                        load_c[b].append((uc, v))
                        load_m[b].append((um, v))
                    m.Add(sum(slots) == n * ys[-1])
            m.AddExactlyOne(ys)
        else:  # constant rows: one group of any row
            _, items = fixed[c]
            if not items:
                return "infeasible", None
            allv = []
            for b in range(L):
                for q, uc, um in items:
                    v = w[(c, None, b, q)] = m.NewBoolVar("")
                    allv.append(v)
                    here.setdefault((c, b), []).append(v)
                    load_c[b].append((_units(uc), v))
                    load_m[b].append((_units(um), v))
            m.AddExactlyOne(allv)
    present = {}
    for key, vs in here.items():
        m.AddAtMostOne(vs)
        present[key] = m.NewBoolVar("")
        m.Add(sum(vs) == present[key])
    _apart(m, d, present, L)
    over = _soft_capacities(m, load_c, load_m)
    st, s = _solve_to_zero(m, over, limit, seed, lns_only)
    if st != "feasible":
        return st, None
    return "feasible", {(c, b): q for (c, _, b, q), v in w.items() if s.Value(v)}


def compose_search(d, R, L: int, comps, counts: dict, room: dict, limit: float, seed: int = 0):
    """``compose_pack`` within ``limit`` seconds, in tries of ``COMPOSE_SLICE`` seconds (CP-SAT's
    seed changed every try), over the levels of ``COMPOSE_LEVELS`` in rounds: three tries of the
    ties alone, then one with 30 more counts per component; a level CP-SAT proves has no packing
    is dropped, and so is one that offers the same counts as a level before. Returns the first
    plan that passes ``valid``, or None (a search for plans only).

    Why tries and levels (session 48, docs/benchmarks.md): the model's solutions come from
    CP-SAT's neighbourhood searches, and on the tightest cell (seed 0's 15 tasks at 100 tuples/s
    on 19 slots, 6.9 % of a slot to spare) about one try in four packs, most within 5 s, while
    the others stall 0.04-6 % of a slot above a packing; the ties alone pack the 11- and 15-task
    cells within a second where 30 more counts per component take 1-3 s or stall, but seed 0's
    7 tasks at 100 on 10 slots has no packing on its ties (proven in 0.3 s) and packs with 30
    more counts."""
    end = time.monotonic() + limit
    ranked = _ranked_options(L, counts, room, max(extra for extra, _ in COMPOSE_LEVELS))
    levels, seen = [], set()
    for extra, tries in COMPOSE_LEVELS:
        opts = None if ranked is None else _options_within(ranked, extra)
        if opts is None:
            return None
        key = tuple(sorted((c, tuple(e[0] for e, _ in o)) for c, o in opts.items()))
        if key not in seen:
            seen.add(key)
            levels.append([opts, tries, False])
    i = 0
    while levels:
        for level in list(levels):
            for _ in range(level[1]):
                left = end - time.monotonic()
                if left < 0.2:
                    return None
                # a level's first try with CP-SAT's full search, which may prove it has no
                # packing; with ``COMPOSE_LNS`` its later tries by the neighbourhood searches alone
                st, q = compose_pack(d, R, L, comps, level[0], min(COMPOSE_SLICE, left), seed + i, level[2])
                level[2] = COMPOSE_LNS
                i += 1
                if q is not None and valid(d, R, q):
                    return q
                if st == "infeasible":
                    levels.remove(level)
                    break
    return None


def fixed_pack(d, R, L: int, comps, pick: dict, limit: float, seed: int = 0, at_least: bool = False,
               keep: dict | None = None):
    """``fixed_search``'s 0/1 packing of one count vector ``pick`` (component -> its
    ``thread_counts`` entry (Q, least CPU, least memory, rows); the components not in it have
    constant rows, ``comps`` as from ``gather``) on L slots, by CP-SAT (two workers, ``seed``)
    within ``limit`` seconds: ("feasible", plan on slots 0..L-1), ("infeasible", None) when
    CP-SAT proves there is none, or ("unknown", None). ``at_least``: the threads of a
    component sum to at least Q instead of exactly Q. Its plans still need ``valid``.
    ``keep``: a dict carried from one try of the same vector to the next; its "q" (the least
    overflow's assignment so far, (c, b) -> threads) is given to CP-SAT as a solution hint and
    replaced when this try ends lower (its "over"). A hint only steers the search, so the answer
    means the same with or without it.

    The capacities are soft: each slot's CPU and memory past 100 % is an overflow variable and
    their sum is minimised. A packing exists iff the minimum is 0, so a lower bound above 0
    proves there is none, and the first solution of overflow 0 is a packing (the solve stops
    there). CP-SAT's local search repairs near-packings, which the pure feasibility model
    (hard capacities, slots in non-increasing CPU order to break their symmetry) did not do:
    on seed 1's 7-task application cell at 100 tuples/s on 11 slots that model found no
    packing in 10 tries of 1.5 s, this one a packing in 0.3-2.8 s (8 seeds; with the load
    ordering kept 7 of 8 within 15 s, so the ordering is left out; one worker instead of two:
    1 of 8), session 40."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    x = {}
    load_c, load_m = [[] for _ in range(L)], [[] for _ in range(L)]  # (size in 10^-4 %, Boolean)
    present = {}
    groups = fixed_items(d, R, comps, pick)
    if groups is None:
        return "unknown", None
    for c, (Q, items) in groups.items():  # Q None: constant rows, one group of any row
        allv = []
        for b in range(L):
            here = []
            for qq, uc, um in items:
                v = x[(c, b, qq)] = m.NewBoolVar("")
                here.append(v)
                allv.append((v, qq))
                load_c[b].append((_units(uc), v))
                load_m[b].append((_units(um), v))
            if here:
                m.AddAtMostOne(here)
                pb = present[(c, b)] = m.NewBoolVar("")
                m.Add(sum(here) == pb)
        if not allv:
            return "infeasible", None
        if Q is not None:
            # exactly Q threads, or (every other try) at least Q: with Q' >= Q a group's true
            # usage a / Q' is at most the size counted (a / Q) and its rows stay allowed
            # (their thresholds are <= Q), so every solution is a plan. Each form finds plans
            # the other misses within seconds (measured on the application-style cells)
            total = sum(qq * v for v, qq in allv)
            m.Add(total >= Q) if at_least else m.Add(total == Q)
        else:
            m.AddExactlyOne(v for v, _ in allv)
    _apart(m, d, present, L)
    over = _soft_capacities(m, load_c, load_m)
    if keep and keep.get("q"):
        for (c, b, qq), v in x.items():
            m.AddHint(v, keep["q"].get((c, b)) == qq)
    st, s = _solve_to_zero(m, over, limit, seed)
    if s is not None and keep is not None and over and s.ObjectiveValue() < keep.get("over", math.inf):
        keep["over"] = s.ObjectiveValue()
        keep["q"] = {(c, b): qq for (c, b, qq), v in x.items() if s.Value(v)}
    if st != "feasible":
        return st, None
    return "feasible", {(c, b): qq for (c, b, qq), v in x.items() if s.Value(v)}


def _apart(m, d, present: dict, L: int) -> None:
    """Incompatible components in no slot together: ``present[(c, b)]`` is c's Boolean "a group
    of c in slot b" (``fixed_pack``, ``compose_pack``)."""
    for a, a2 in d.incompatible:
        for b in range(L):
            if (a, b) in present and (a2, b) in present:
                m.AddBoolOr([present[(a, b)].Not(), present[(a2, b)].Not()])


def _soft_capacities(m, load_c: list, load_m: list) -> list:
    """The soft slot capacities of ``fixed_pack`` and ``compose_pack``: per slot and resource
    whose sizes (10^-4 %, with their Booleans) may pass 100 %, an overflow variable at least the
    load past 100 %; their sum is the model's objective. Returns the overflow variables."""
    cap = 100 * SCALE
    over = []
    for load in (*load_c, *load_m):
        most = sum(w for w, _ in load)  # a slot's load is at most every size in it at once
        if most <= cap:
            continue
        o = m.NewIntVar(0, most - cap, "")
        m.Add(o >= sum(w * v for w, v in load) - cap)
        over.append(o)
    if over:
        m.Minimize(sum(over))
    return over


def _solve_to_zero(m, over: list, limit: float, seed: int, lns_only: bool = False):
    """Solve a soft-capacity packing (``_soft_capacities``) by CP-SAT (two workers, ``seed``)
    within ``limit`` seconds, stopping at the first solution of overflow 0: ("feasible",
    solver) for such a solution, ("infeasible", solver or None) when CP-SAT proves the least
    overflow above 0 (or the model infeasible), ("unknown", solver or None) otherwise; the
    solver is given wherever it holds a solution. ``lns_only``: CP-SAT's neighbourhood searches
    alone (``use_lns_only``), which find packings more often but prove nothing."""
    from ortools.sat.python import cp_model

    class _AtZero(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self):  # noqa: N802 (OR-Tools' name)
            if self.ObjectiveValue() < 0.5:
                self.StopSearch()

    s = core.cpsat_solver()
    s.parameters.max_time_in_seconds = max(0.1, limit)
    s.parameters.num_workers = 2
    s.parameters.random_seed = seed
    s.parameters.use_lns_only = lns_only
    st = s.Solve(m, _AtZero())
    if st == cp_model.INFEASIBLE:
        return "infeasible", None
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return "unknown", None
    if over and s.ObjectiveValue() > 0.5:
        # no packing when the minimum is proven above 0 (or its bound is), else undecided
        return ("infeasible" if st == cp_model.OPTIMAL or s.BestObjectiveBound() > 0.5 else "unknown"), s
    return "feasible", s
