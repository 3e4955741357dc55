"""Throughput, weighted routing: CP-SAT over supports with cuts from the rate LP (logic-based
Benders). docs/formulations.md, "Throughput", "Weighted routing", gives the mathematics.

With weighted routing the rate of a support b (b_cj = 1: an instance of c on machine j) is the
LP  max R  s.t.  sum_j x_cj = g_c R,  sum_c a_cj x_cj + sum_c MET_cj b_cj <= cap_j,  x_cj >= 0,
x_cj = 0 where b_cj = 0.  CP-SAT has no continuous variables, so here it only searches over
supports, and each support that fails a probe rate R becomes a linear cut on the supports.

Certificate. Any u_j >= 0 (machines) and v_c (components) give, for every support b' that
sustains R with flows x:
    R sum_c g_c v_c = sum_cj v_c x_cj
                    = sum_cj u_j a_cj x_cj + sum_cj (v_c - u_j a_cj) x_cj
                   <= sum_j u_j (cap_j - sum_c MET_cj b'_cj) + sum_cj (v_c - u_j a_cj)^+ X_cj b'_cj
with X_cj >= x_cj a bound on the pair's flow: X_cj = min(g_c R, (cap_j - MET_cj)^+ / a_cj). So
    sum_cj [u_j MET_cj - (v_c - u_j a_cj)^+ X_cj] b'_cj  <=  sum_j u_j cap_j - R sum_c g_c v_c
holds for every support that sustains R, whatever (u, v) is: its validity needs no trust in the
LP solver. A support is refuted by it when its left-hand side exceeds the right-hand side. The
LP's dual at b (scaled to sum_c g_c v_c = 1) has v_c <= u_j a_cj on b's pairs and
sum_j u_j (cap_j - MET(b)_j) = rate(b), so it refutes b at every R > rate(b); the pairs outside
b with v_c > u_j a_cj get a negative ("lifted") coefficient, through which other supports may
escape the cut. :func:`wide_certificate` finds a certificate with fewer lifted pairs.

The coefficients are computed in exact rational arithmetic from the float data (``Fraction``)
and rounded to integers in the safe direction (coefficients down, right-hand side up; b' >= 0),
so the integer cut that CP-SAT receives is implied by the exact one. A cut is added only when
the exact check says that it refutes the support it was made for (:func:`refutes`) and its
integer form still does; otherwise the probe ends "unknown".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

# An integer cut's coefficients sum (in absolute value) to less than 2^CUT_SUM_BITS. OR-Tools 9.15's
# presolve sums a row's Boolean coefficients in a 32-bit int (google/or-tools#5293). Measured here
# (branch cpsat-weighted): cuts scaled to 2^30 or 2^40 per coefficient made a master that a known
# support satisfies (checked row by row in integers) "infeasible" with presolve on, "feasible"
# with it off or with presolve_inclusion_work_limit = 0. So cut rows stay below 2^30 in sum (the
# master's symmetry rows, lexicographic weights up to 2^50, do not: safe only because presolve is
# off, and every CP-SAT solve of the package also sets presolve_inclusion_work_limit = 0,
# gap.cpsat_solver), and the master is solved without presolve (MASTER_PARAMS; with presolve off the master solves were
# also faster: hetero 8 x 10 weighted 10.1 s -> 3.5 s of CP-SAT in all, measured), by one worker
# without LP (the final refutation on hetero 8 x 10: 9.1 s with two workers, 0.55 s this way).
CUT_SUM_BITS = 30
MASTER_PARAMS = {"cp_model_presolve": False, "presolve_inclusion_work_limit": 0, "num_workers": 1,
                 "linearization_level": 0}
WIDE_ROUNDS = 60  # wide_certificate: at most this many LPs per cut


@dataclass(frozen=True)
class Certificate:
    """Multipliers u_j >= 0 on the machines' capacity rows and v_c on the components' rates."""

    u: tuple[float, ...]
    v: tuple[float, ...]


def rate_and_certificate(d, b: list[list[int]]) -> tuple[float, Certificate | None]:
    """The LP rate of the support b (``throughput.weighted_lp``, the LP of ``weighted_rate``) and
    the LP's dual as a :class:`Certificate` (None when the LP is not solved to optimality or its
    dual is not finite). When b's overheads alone overload a machine j the rate is -1 and the
    certificate is that machine's row (u = e_j, v = 0)."""
    from .throughput import overloaded, weighted_lp

    j = overloaded(d, b)
    if j is not None:  # overheads alone over the capacity: the machine's row refutes b at any R
        return -1.0, Certificate(tuple(1.0 if k == j else 0.0 for k in range(d.J)), tuple(0.0 for _ in range(d.C)))
    rate, u, v = weighted_lp(d, b)
    return rate, (None if u is None else _normalised(d, u, v))


def _normalised(d, u: list[float], v: list[float]) -> Certificate | None:
    """(u, v) scaled to sum_c g_c v_c = 1, or None when that sum is not positive or any
    multiplier is not finite (then no cut can be read from them)."""
    G = sum(d.gain[c] * v[c] for c in range(d.C))
    if not (G > 0 and math.isfinite(G)):
        return None
    u, v = [x / G for x in u], [x / G for x in v]
    if not all(math.isfinite(x) for x in u + v):
        return None
    return Certificate(tuple(u), tuple(v))


def wide_certificate(d, b: list[list[int]], R: float, rounds: int = WIDE_ROUNDS,
                     deadline: float | None = None) -> Certificate | None:
    """A certificate that refutes b at R with few lifted pairs. E starts as every allowed pair
    outside b; the LP rate of b with the pairs of E allowed to carry flow free of overhead
    (overheads of b only) is computed, and while it reaches R the pair of E that carries the
    most flow (in CPU) is taken out of E. Once it falls below R, its dual has v_c <= u_j a_cj on
    every pair of b and E, so its cut lifts only the pairs taken out: a support escapes it only
    by using one of those, or by paying less overhead than b in the weights u. None when E runs
    out (or ``rounds`` LPs are spent) while the rate still reaches R, or an LP is not solved.
    The LPs are one GLOP model (OR-Tools) whose column bounds change between rounds (warm
    starts); GLOP only suggests (u, v): the caller checks the cut exactly. None also past
    ``deadline`` (each LP gets the time left)."""
    from ortools.linear_solver import pywraplp

    lp = pywraplp.Solver.CreateSolver("GLOP")
    if lp is None:
        return None
    inf = lp.infinity()
    rate = lp.NumVar(0, inf, "R")
    pairs = [(c, j) for c in range(d.C) for j in range(d.J) if d.allowed(c, j)]
    x = {p: lp.NumVar(0, inf if b[p[0]][p[1]] else 0.0, "") for p in pairs}
    flow_rows = []
    for c in range(d.C):  # sum_j x_cj - g_c R = 0
        row = lp.Constraint(0, 0)
        row.SetCoefficient(rate, -d.gain[c])
        for j in range(d.J):
            if (c, j) in x:
                row.SetCoefficient(x[(c, j)], 1)
        flow_rows.append(row)
    cap_rows = []
    for j in range(d.J):  # sum_c a_cj x_cj <= cap_j - MET(b)_j
        row = lp.Constraint(-inf, max(0.0, d.cap[j] - sum(d.met[c][j] for c in range(d.C) if b[c][j])))
        for c in range(d.C):
            if (c, j) in x:
                row.SetCoefficient(x[(c, j)], d.a[c][j])
        cap_rows.append(row)
    lp.Objective().SetCoefficient(rate, 1)
    lp.Objective().SetMaximization()
    E = [p for p in pairs if not b[p[0]][p[1]]]
    for p in E:
        x[p].SetUb(inf)
    for _ in range(rounds):
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            lp.SetTimeLimit(max(1, int(left * 1000)))
        if lp.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        if rate.solution_value() < R:
            u = [max(0.0, row.dual_value()) for row in cap_rows]  # GLOP: capacity duals >= 0 here,
            v = [-row.dual_value() for row in flow_rows]  # the rate rows' with the opposite sign
            return _normalised(d, u, v)
        used = [p for p in E if x[p].solution_value() > 0]
        if not used:
            return None
        p = max(used, key=lambda p: x[p].solution_value() * d.a[p[0]][p[1]])
        E.remove(p)
        x[p].SetUb(0.0)
    return None


def _parts(d, cert: Certificate) -> tuple:
    """The parts of the cut of ``cert`` that do not depend on R, in fractions: (sum_j u_j cap_j,
    sum_c g_c v_c, [(c, j, u_j MET_cj, (v_c - u_j a_cj)^+, g_c, (cap_j - MET_cj)^+ / a_cj or None)])."""
    u = [max(Fraction(0), Fraction(x)) for x in cert.u]  # u >= 0 is what makes the cut valid
    v = [Fraction(x) for x in cert.v]
    U = sum((u[j] * Fraction(d.cap[j]) for j in range(d.J)), Fraction(0))
    G = sum((Fraction(d.gain[c]) * v[c] for c in range(d.C)), Fraction(0))
    terms = []
    for c in range(d.C):
        for j in range(d.J):
            if not d.allowed(c, j):
                continue
            a, met = Fraction(d.a[c][j]), Fraction(d.met[c][j])
            lift = v[c] - u[j] * a
            room = max(Fraction(0), Fraction(d.cap[j]) - met) / a if a > 0 else None
            terms.append((c, j, u[j] * met, lift if lift > 0 else Fraction(0), Fraction(d.gain[c]), room))
    return U, G, terms


def cut_at(d, cert: Certificate, R: float, cache: dict | None = None) -> tuple[dict[tuple[int, int], Fraction], Fraction]:
    """The exact cut of ``cert`` at rate R: ({(c, j): coefficient}, right-hand side) over the
    allowed pairs; every support that sustains R satisfies sum coefficient b_cj <= rhs.
    ``cache`` keeps the R-independent parts per certificate (they are recomputed at every probe
    rate otherwise)."""
    parts = cache.get(cert) if cache is not None else None
    if parts is None:
        parts = _parts(d, cert)
        if cache is not None:
            cache[cert] = parts
    U, G, terms = parts
    Rf = Fraction(R)
    coef = {}
    for c, j, k, lift, g, room in terms:
        if lift:  # the pair may carry flow at a profit in these weights: at most X_cj of it
            X = g * Rf if room is None else min(g * Rf, room)
            k = k - lift * X
        coef[(c, j)] = k
    return coef, U - Rf * G


def refutes(d, cert: Certificate, R: float, b: list[list[int]]) -> bool:
    """Exact check, independent of the LP solver: the cut of ``cert`` at R (recomputed in
    fractions) is violated by the support b, so b does not sustain R."""
    coef, rhs = cut_at(d, cert, R)
    return sum((k for (c, j), k in coef.items() if b[c][j]), Fraction(0)) > rhs


def integer_cut(coef: dict, rhs: Fraction, bits: int = CUT_SUM_BITS) -> tuple[dict, int]:
    """Integer coefficients A and bound B such that sum A b <= B is implied by the exact cut for
    every b >= 0: scaled by a power of two s, A = floor(s coef), B = ceil(s rhs), with s chosen
    so that sum |A| and |B| stay below 2^bits (``CUT_SUM_BITS``)."""
    top = max(sum((abs(x) for x in coef.values()), Fraction(0)), abs(rhs))
    if top == 0:
        return {p: 0 for p in coef}, 0
    # floor(log2 top) exactly, from the numerator's and denominator's bit lengths (a float log2
    # overflows or underflows on extreme fractions)
    lg = top.numerator.bit_length() - top.denominator.bit_length()
    if Fraction(2) ** lg > top:
        lg -= 1
    e = bits - 1 - lg  # s top < 2^(bits - 1)
    while True:  # rounding adds up to one per coefficient: scale down until both sums fit
        s = Fraction(2) ** e
        A = {p: math.floor(k * s) for p, k in coef.items()}
        B = math.ceil(rhs * s)
        if sum(abs(x) for x in A.values()) < 2 ** bits and abs(B) < 2 ** bits:
            return A, B
        e -= 1


def integer_refutes(A: dict, B: int, b: list[list[int]]) -> bool:
    return sum(k for (c, j), k in A.items() if b[c][j]) > B


def master_model(d, R: float, pool: list[Certificate], cache: dict | None = None):
    """CP-SAT model over supports b at the probe rate R: sum_j b_cj >= 1, at most K pairs per
    machine, incompatibilities, identical machines' columns in non-increasing lexicographic order
    (``throughput._structure_cpsat``), each machine's overheads within its capacity (the
    certificate u = e_j, v = 0), and the cut of every certificate of ``pool`` at R. Returns
    (model, b)."""
    from ortools.sat.python import cp_model

    from .throughput import _structure_cpsat

    m = cp_model.CpModel()
    b = [[m.NewIntVar(0, 1 if d.allowed(c, j) else 0, f"b[{c},{j}]") for j in range(d.J)] for c in range(d.C)]
    for c in range(d.C):
        m.Add(sum(b[c]) >= 1)
    _structure_cpsat(m, d, b, 1)
    for j in range(d.J):
        coef = {(c, j): Fraction(d.met[c][j]) for c in range(d.C) if d.allowed(c, j)}
        if coef:
            _add_cut(m, b, *integer_cut(coef, Fraction(d.cap[j])))
    for cert in pool:
        _add_cut(m, b, *integer_cut(*cut_at(d, cert, R, cache)))
    return m, b


def _add_cut(m, b, A: dict, B: int) -> None:
    terms = [k * b[c][j] for (c, j), k in A.items() if k]
    if terms:
        m.Add(sum(terms) <= B)
    elif B < 0:
        m.AddBoolOr([])  # 0 <= B < 0: nothing sustains the rate


def solve_master(model, time_limit: float | None, seed: int):
    """CP-SAT on a master model with ``MASTER_PARAMS``; returns (status, solver) with status
    "feasible", "infeasible" or "unknown"."""
    from ortools.sat.python import cp_model

    from .gap import cpsat_solver

    solver = cpsat_solver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(0.01, float(time_limit))
    solver.parameters.random_seed = int(seed)
    for k, v in MASTER_PARAMS.items():
        setattr(solver.parameters, k, v)
    st = solver.Solve(model)
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return "feasible", solver
    if st == cp_model.INFEASIBLE:
        return "infeasible", solver
    if st == cp_model.MODEL_INVALID:
        raise RuntimeError("CP-SAT: master model invalid: " + model.Validate())
    return "unknown", solver


def make_cut(d, b: list[list[int]], R: float, cert: Certificate | None, deadline: float | None = None):
    """The checked cut refuting b at R (rate(b) < R): the wide certificate if it refutes b, else
    the LP's plain dual; (certificate, A, B) or None when neither passes both checks (a
    certificate whose numbers defeat the exact arithmetic counts as not passing)."""
    for c in (wide_certificate(d, b, R, deadline=deadline), cert):
        if c is None:
            continue
        try:
            if not refutes(d, c, R, b):
                continue
            A, B = integer_cut(*cut_at(d, c, R))
        except (ArithmeticError, ValueError):
            continue
        if integer_refutes(A, B, b):
            return c, A, B
    return None


def probe(d, R: float, pool: list[Certificate], hint, deadline: float | None, seed: int, stats: dict | None = None,
          cache: dict | None = None):
    """Does some support sustain R? CP-SAT proposes a support b of the master (:func:`master_model`,
    every certificate of ``pool`` a cut at R); the LP rates it; if rate(b) >= R, b is the answer;
    otherwise a checked cut refuting b (:func:`make_cut`) is appended to ``pool`` (it stays valid
    at every rate: the cut is recomputed at each R) and the master is solved again. Returns
    (status, b): "feasible" with a support whose LP rate is >= R; "infeasible" when the master
    with all its cuts has no solution (a proof, every cut being valid); "unknown" at the
    deadline or when no checked cut refutes a support. ``cache``: see :func:`cut_at`."""
    st = stats if stats is not None else {}
    for k in ("solves", "cuts", "rejected", "master_s", "cut_s", "build_s"):
        st.setdefault(k, 0)
    t0 = time.monotonic()
    m, b = master_model(d, R, pool, cache)
    st["build_s"] += time.monotonic() - t0
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0.01:
            return "unknown", None
        if hint is not None:
            m.ClearHints()
            for c in range(d.C):
                for j in range(d.J):
                    if d.allowed(c, j):
                        m.AddHint(b[c][j], hint[c][j])
        t0 = time.monotonic()
        out, sol = solve_master(m, left, seed)
        st["solves"] += 1
        st["master_s"] += time.monotonic() - t0
        if out != "feasible":
            return out, None
        bb = [[sol.Value(b[c][j]) for j in range(d.J)] for c in range(d.C)]
        t0 = time.monotonic()
        r, cert = rate_and_certificate(d, bb)
        if r >= R:
            st["cut_s"] += time.monotonic() - t0
            return "feasible", bb
        made = make_cut(d, bb, R, cert, deadline)
        st["cut_s"] += time.monotonic() - t0
        if made is None:  # no checked cut: this probe cannot be decided
            st["rejected"] += 1
            return "unknown", None
        cert, A, B = made
        pool.append(cert)
        st["cuts"] += 1
        _add_cut(m, b, A, B)
        hint = bb
