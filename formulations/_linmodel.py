"""A tiny linear-model layer that one formulation writes once and three solvers read.

The network, traffic, feasibility and admission formulations build a :class:`LinModel`
(integer variables with bounds, linear rows, a linear objective, optional hint values) and
hand it to :func:`solve_model` with ``backend`` "cpsat", "cbc" or "highs". So CP-SAT and
both MILPs solve literally the same statement; only the translation differs:

* CP-SAT needs integer coefficients. Each row is multiplied by the least common multiple
  of its coefficients' denominators (coefficients are read as fractions with denominators up
  to 10^7, which is exact for the decimal data the instances carry); ``<=`` right-hand sides
  are then floored (the left side is an integer). The objective is scaled the same way; when
  that is impossible within int64 range, it is scaled to about 10^9 and rounded, and the
  result says so (``details["objective_exact"] = False``).
* The MILPs (PuLP) take the float coefficients as they are, with relative and absolute gap
  tolerances of 1e-9 so that a proven optimum is an optimum to that tolerance.

Status truth: CP-SAT's OPTIMAL, FEASIBLE, INFEASIBLE, UNKNOWN map one to one. For PuLP,
``LpStatus`` says "Optimal" when CBC stops at its time limit with a solution, so the status
is read from ``prob.sol_status`` (``LpSolutionOptimal`` is the only proof). CBC's bound at a
time limit is read from its log ("Lower bound" / "Upper bound"); HiGHS's from
``mip_dual_bound``.
"""

from __future__ import annotations

import functools
import math
import re
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from formulations.gap import (CBC_COLD, CBC_CRASHED, CBC_OVERRAN, CBC_RERUN, PULP_HANDING_S, cbc_infeasible_is_proof,
                             cpsat_solver, run_cbc, time_left)

Expr = dict[int, float]  # variable index -> coefficient

MILP_GAP = 1e-9


@dataclass
class Var:
    name: str
    lb: int
    ub: int
    milp_continuous: bool = False  # integral at every optimum; the MILP may treat it as continuous


@dataclass
class Row:
    coefs: Expr
    lo: float | None
    hi: float | None
    family: str


@dataclass
class LinModel:
    """Integer variables, linear rows tagged with a constraint family, a linear objective."""

    sense: str = "min"  # "min" or "max"
    vars: list[Var] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    objective: Expr = field(default_factory=dict)
    obj_const: float = 0.0
    hint: dict[int, int] = field(default_factory=dict)
    native_products: bool = False  # CP-SAT: p = a*b as AddMultiplicationEquality instead of bits
    products: list[tuple[int, int, int]] = field(default_factory=list)
    _bits: dict[int, list[int]] = field(default_factory=dict)

    # --- building ---------------------------------------------------------------------
    def var(self, name: str, lb: int, ub: int, hint: int | None = None, milp_continuous: bool = False) -> int:
        ub = max(int(ub), int(lb))
        self.vars.append(Var(name, int(lb), ub, milp_continuous))
        k = len(self.vars) - 1
        if hint is not None:
            self.hint[k] = int(hint)
        return k

    def add(self, coefs: Expr, lo: float | None = None, hi: float | None = None, family: str = "") -> None:
        coefs = {k: v for k, v in coefs.items() if v != 0}
        self.rows.append(Row(coefs, lo, hi, family))

    def fixed(self, v: int) -> bool:
        return self.vars[v].lb == self.vars[v].ub

    def bits(self, v: int) -> list[int]:
        """Binary variables b_k with v = sum_k 2^k b_k (shared by every product that expands v)."""
        if v in self._bits:
            return self._bits[v]
        var = self.vars[v]
        if var.lb == 0 and var.ub == 1:
            out = [v]
        else:
            nb = max(1, int(var.ub).bit_length())
            hv = self.hint.get(v)
            out = [self.var(f"{var.name}.bit{k}", 0, 1, None if hv is None else (hv >> k) & 1) for k in range(nb)]
            row = {v: 1.0}
            for k, b in enumerate(out):
                row[b] = -float(2 ** k)
            self.add(row, 0.0, 0.0, family="linearisation")
        self._bits[v] = out
        return out

    def product_upper(self, a: int, b: int, name: str) -> Expr:
        """A linear expression P with P <= a*b always and P = a*b attainable.

        Valid only where the objective rewards P (it is maximised, or minimised with a
        negative coefficient): then P equals the product at every optimum. The factor with the
        smaller upper bound is written in binary, a = sum_k 2^k a_k, and each a_k*b becomes
        q_k with q_k <= ub(b) a_k and q_k <= b (exact for a binary times a bounded integer).
        """
        va, vb = self.vars[a], self.vars[b]
        if va.ub == 0 or vb.ub == 0:
            return {}
        if self.fixed(a):
            return {b: float(va.lb)}
        if self.fixed(b):
            return {a: float(vb.lb)}
        if vb.ub < va.ub:
            a, b, va, vb = b, a, vb, va
        if self.native_products:
            ha, hb = self.hint.get(a), self.hint.get(b)
            p = self.var(f"{name}.p", 0, va.ub * vb.ub, None if ha is None or hb is None else ha * hb)
            self.products.append((p, a, b))
            return {p: 1.0}
        out: Expr = {}
        hb = self.hint.get(b)
        for k, bit in enumerate(self.bits(a)):
            hbit = self.hint.get(bit)
            q = self.var(f"{name}.q{k}", 0, vb.ub, None if (hbit is None or hb is None) else hbit * hb,
                         milp_continuous=True)
            self.add({q: 1.0, bit: -float(vb.ub)}, hi=0.0, family="linearisation")
            self.add({q: 1.0, b: -1.0}, hi=0.0, family="linearisation")
            out[q] = out.get(q, 0.0) + float(2 ** k)
        return out

    def without(self, families: set[str]) -> "LinModel":
        """A copy with the rows of the given families dropped (for explaining infeasibility)."""
        m = LinModel(self.sense, list(self.vars), [r for r in self.rows if r.family not in families],
                     dict(self.objective), self.obj_const, dict(self.hint), self.native_products, list(self.products))
        return m


# --- results ------------------------------------------------------------------------------

@dataclass
class Solution:
    status: str  # optimal, feasible, infeasible, unknown, error
    values: list[int] | None = None
    objective: float | None = None
    bound: float | None = None
    seconds: float = 0.0
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def solve_model(m: LinModel, backend: str, time_limit: float | None = None, threads: int | None = None,
                use_hint: bool = True, seed: int = 0, cpsat_params: dict[str, Any] | None = None,
                deadline: float | None = None) -> Solution:
    """Solve ``m`` with ``backend`` ("cpsat", "cbc", "highs"). ``cpsat_params``: CP-SAT solver
    parameters (names of ``SatParameters``) set after the defaults, e.g. {"linearization_level": 2}.

    ``deadline`` (a ``time.monotonic()`` instant) bounds the translation too: handing a model of
    900,000 rows to CP-SAT takes tens of seconds in Python (Storm's largeCluster03 with its
    ackers: 114 s before the integer fast path, session 25). The rows are handed over until the
    deadline, and the solver gets what is left of it; past it the answer is ``unknown``."""
    t0 = time.perf_counter()
    if backend == "cpsat":
        sol = _solve_cpsat(m, time_limit, threads, use_hint, seed, cpsat_params, deadline)
    elif backend == "cbc":
        sol = _solve_pulp(m, backend, time_limit, threads, use_hint, deadline)
    elif backend == "highs":
        from ._highs_worker import solve_in_worker  # highspy and ortools cannot share a process

        sol = solve_in_worker(m, time_limit, threads, use_hint, deadline)
    else:
        raise ValueError(f"unknown backend {backend!r}")
    sol.seconds = time.perf_counter() - t0
    return sol


# how many rows are handed to a solver between two looks at the clock
CLOCK_EVERY = 4096
# seconds CP-SAT spends outside its time limit per variable and row, kept back from the solver's
# limit when a deadline is given (measured: about 5 s for 1.75 million, see _solve_cpsat)
CPSAT_SETUP_S = 3e-6


def handing_stopped(backend: str, rows: int, total: int) -> Solution:
    """The Solution of a translation stopped at its deadline (``rows`` of ``total`` handed over;
    all of them when the deadline came after the hand-over, before the solver could start)."""
    if rows >= total:
        msg = f"time limit reached after handing the model to {backend} ({total:,} rows), before it could start"
    else:
        msg = f"time limit reached while handing the model to {backend} ({rows:,} of {total:,} rows)"
    return Solution("unknown", message=msg, details={"handed_rows": rows})


@functools.lru_cache(maxsize=1 << 16)
def _frac(x: float) -> Fraction | None:
    f = Fraction(x).limit_denominator(10 ** 7)
    if abs(float(f) - x) <= 1e-12 * max(1.0, abs(x)):
        return f
    return None


ONE = Fraction(1)


def _integer_row(coefs: Expr, limit: int = 2 ** 40) -> tuple[dict[int, int], Fraction] | None:
    """Integer coefficients proportional to ``coefs`` and the multiplier used, or None."""
    if all(float(c).is_integer() for c in coefs.values()):  # most rows: no fractions needed
        return {k: int(c) for k, c in coefs.items()}, ONE
    fr = {}
    for k, c in coefs.items():
        f = _frac(float(c))
        if f is None:
            return None
        fr[k] = f
    mult = 1
    for f in fr.values():
        mult = mult * f.denominator // math.gcd(mult, f.denominator)
        if mult > limit:
            return None
    out = {k: int(f * mult) for k, f in fr.items()}
    return out, Fraction(mult)


def _scaled_side(v: float | None, mult: Fraction, up: bool) -> int | None:
    """A row side times ``mult``, rounded inwards for an integer left side (ceil for ``>=``)."""
    if v is None:
        return None
    x = float(v) if mult == ONE else float(Fraction(v) * mult)
    return math.ceil(x - 1e-7) if up else math.floor(x + 1e-7)


def _solve_cpsat(m: LinModel, time_limit, threads, use_hint, seed, params=None, deadline=None) -> Solution:
    from ortools.sat.python import cp_model

    cm = cp_model.CpModel()
    if deadline is not None and time.monotonic() > deadline:
        return handing_stopped("CP-SAT", 0, len(m.rows))
    xs = [cm.new_int_var(v.lb, v.ub, v.name) for v in m.vars]
    assert not xs or xs[-1].index == len(xs) - 1  # the proto rows below name variable k by k
    # rows go into the model's proto directly: a third faster than expressions for 876,000 rows
    constraints = cm.proto.constraints
    for i, r in enumerate(m.rows):
        if deadline is not None and not i % CLOCK_EVERY and time.monotonic() > deadline:
            return handing_stopped("CP-SAT", i, len(m.rows))
        ir = _integer_row(r.coefs)
        if ir is None:  # not a decimal row: scale by 10^6 and round outward (safe side)
            coefs = {k: round(c * 10 ** 6) for k, c in r.coefs.items()}
            mult = Fraction(10 ** 6)
        else:
            coefs, mult = ir
        lo = _scaled_side(r.lo, mult, True)
        hi = _scaled_side(r.hi, mult, False)
        if not coefs:
            if (lo is not None and lo > 0) or (hi is not None and hi < 0):
                cm.add_bool_or([])  # an empty row that cannot hold: the model is infeasible
            continue
        lin = constraints.add().linear
        lin.vars.extend(coefs.keys())  # variable k is the model's k-th: made in order above
        lin.coeffs.extend(coefs.values())
        lin.domain.extend((cp_model.INT_MIN if lo is None else lo, cp_model.INT_MAX if hi is None else hi))
    for p, a, b in m.products:
        cm.add_multiplication_equality(xs[p], [xs[a], xs[b]])
    exact = True
    scale = Fraction(1)
    if m.objective:
        ir = _integer_row(m.objective, limit=2 ** 30)
        span = sum(abs(c) * max(abs(m.vars[k].lb), abs(m.vars[k].ub)) for k, c in m.objective.items())
        if ir is not None and span * float(ir[1]) < 2 ** 50:
            icoefs, scale = ir
        else:
            exact = False
            scale = Fraction(int(1e9 / max(abs(c) for c in m.objective.values())) or 1)
            icoefs = {k: round(c * float(scale)) for k, c in m.objective.items()}
        expr = cp_model.LinearExpr.weighted_sum([xs[k] for k in icoefs], list(icoefs.values()))
        if m.sense == "min":
            cm.minimize(expr)
        else:
            cm.maximize(expr)
    if use_hint:
        for k, v in m.hint.items():
            cm.add_hint(xs[k], v)
    time_limit = time_left(time_limit, deadline)
    if deadline is not None:
        # CP-SAT's own work outside its clock (loading, tearing down): 4-5 s past a 1 s or 10 s
        # limit on 873,264 variables and 876,214 rows (largeCluster03 with ackers, session 25)
        time_limit -= CPSAT_SETUP_S * (len(m.vars) + len(m.rows))
    if time_limit is not None and time_limit <= 0:
        return handing_stopped("CP-SAT", len(m.rows), len(m.rows))
    solver = cpsat_solver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(max(time_limit, 0.01))
    solver.parameters.num_workers = int(threads or 2)
    solver.parameters.random_seed = int(seed)
    for k, v in (params or {}).items():
        setattr(solver.parameters, k, v)
    st = solver.solve(cm)
    name = solver.status_name(st)
    details = {"objective_exact": exact, "status_raw": name, "conflicts": solver.num_conflicts}
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        vals = [int(solver.value(x)) for x in xs]
        obj = _objective_value(m, vals)
        bound = None
        if m.objective:
            bound = solver.best_objective_bound / float(scale) + m.obj_const
        status = "optimal" if st == cp_model.OPTIMAL else "feasible"
        if not m.objective:
            status, bound = "optimal", obj
        elif status == "optimal":
            bound = obj
        return Solution(status, vals, obj, bound, details=details)
    if st == cp_model.INFEASIBLE:
        return Solution("infeasible", details=details)
    if st == cp_model.MODEL_INVALID:
        return Solution("error", message=f"CP-SAT: invalid model: {cm.validate()}", details=details)
    return Solution("unknown", message="CP-SAT stopped (time limit) before finding a plan", details=details)


def _objective_value(m: LinModel, vals: list[int]) -> float:
    return m.obj_const + sum(c * vals[k] for k, c in m.objective.items())


def hint_solution(m: LinModel, tol: float = 1e-6) -> list[int] | None:
    """The hint as a full assignment when it gives every variable a value within its bounds and
    holds every row (within ``tol``); else None."""
    if len(m.hint) != len(m.vars):
        return None
    vals = [m.hint[k] for k in range(len(m.vars))]
    if any(not (v.lb <= x <= v.ub) for v, x in zip(m.vars, vals)):
        return None
    for r in m.rows:
        e = sum(c * vals[k] for k, c in r.coefs.items())
        if (r.lo is not None and e < r.lo - tol) or (r.hi is not None and e > r.hi + tol):
            return None
    return vals


def _solve_pulp(m: LinModel, backend: str, time_limit, threads, use_hint, deadline=None) -> Solution:
    import pulp

    name = "CBC" if backend == "cbc" else "HiGHS"
    if deadline is not None and time.monotonic() > deadline:
        return handing_stopped(name, 0, len(m.rows))

    if m.products:
        raise ValueError("native products are for CP-SAT only; MILP models expand them in binary")
    prob = pulp.LpProblem("placement", pulp.LpMinimize if m.sense == "min" else pulp.LpMaximize)
    xs = [
        pulp.LpVariable(f"v{k}", lowBound=v.lb, upBound=v.ub, cat="Continuous" if v.milp_continuous else "Integer")
        for k, v in enumerate(m.vars)
    ]
    obj = pulp.lpSum(c * xs[k] for k, c in m.objective.items()) + m.obj_const if m.objective else pulp.LpAffineExpression()
    if not m.objective and xs:
        obj = 0 * xs[0]
    prob += obj
    for i, r in enumerate(m.rows):
        if deadline is not None and not i % CLOCK_EVERY and time.monotonic() > deadline:
            return handing_stopped(name, i, len(m.rows))
        if not r.coefs:
            if (r.lo is not None and r.lo > 1e-9) or (r.hi is not None and r.hi < -1e-9):
                return Solution("infeasible", details={"status_raw": "empty row cannot hold"})
            continue
        # the expression from (variable, coefficient) pairs: a quarter of lpSum's time on 876,214 rows
        e = pulp.LpAffineExpression([(xs[k], c) for k, c in r.coefs.items()])
        if r.lo is not None and r.hi is not None and r.lo == r.hi:
            prob.addConstraint(pulp.LpConstraint(e, pulp.LpConstraintEQ, f"r{i}", r.lo))
        else:
            if r.lo is not None:
                prob.addConstraint(pulp.LpConstraint(e, pulp.LpConstraintGE, f"r{i}l", r.lo))
            if r.hi is not None:
                prob.addConstraint(pulp.LpConstraint(e if r.lo is None else e.copy(), pulp.LpConstraintLE, f"r{i}u", r.hi))
    warm = bool(use_hint and m.hint)
    if warm:
        for k, v in m.hint.items():
            xs[k].setInitialValue(v)
    bound = None
    text = ""
    time_limit = time_left(time_limit, deadline)
    if deadline is not None:
        # what PuLP still does outside the solver's clock: CBC's MPS file, HiGHS's rows one by one
        nonzeros = sum(len(r.coefs) for r in m.rows)
        need = PULP_HANDING_S[backend] * nonzeros
        if time_limit - need <= 0:
            return Solution("unknown", message=f"time limit reached: {time_limit:.1f} s left, and handing "
                                               f"{nonzeros:,} nonzeros to {name} takes about {need:.0f} s",
                            details={"handed_rows": len(m.rows)})
        time_limit -= need
    if time_limit is not None and time_limit <= 0:
        return handing_stopped(name, len(m.rows), len(m.rows))
    started = time.perf_counter()
    if backend == "cbc":
        text, _ = run_cbc(prob, time_limit, warm, gapRel=MILP_GAP, gapAbs=MILP_GAP, threads=threads)
        mt = re.search(r"(Lower|Upper) bound:\s*([-+0-9.eE]+)", text)
        if mt:
            bound = float(mt.group(2)) + m.obj_const  # CBC's log leaves out the objective's constant
    else:
        solver = _HiGHSWarm(msg=False, timeLimit=time_limit, gapRel=MILP_GAP, gapAbs=MILP_GAP, threads=threads)
        solver.warm = warm
        prob.solve(solver)
        try:
            info = prob.solverModel.getInfo()
            b = float(info.mip_dual_bound)
            if math.isfinite(b):
                # pulp.HiGHS hands HiGHS the negated objective of a maximisation, and drops the
                # objective's constant
                bound = (-b if m.sense == "max" else b) + m.obj_const
        except Exception:  # noqa: BLE001 - the bound is optional
            bound = None
    ss = prob.sol_status
    details = {"status_raw": pulp.LpStatus[prob.status], "sol_status": ss}
    if CBC_CRASHED in text:
        details["cbc_died"] = "again without the start solution" if CBC_RERUN in text else True
    if CBC_OVERRAN in text:
        details["cbc_overran"] = True
    if ss in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        vals = [int(round(x.varValue or 0.0)) for x in xs]
        objv = _objective_value(m, vals)
        if ss == pulp.LpSolutionOptimal or not m.objective:
            return Solution("optimal", vals, objv, objv, details=details)
        return Solution("feasible", vals, objv, bound, details=details)
    if ss == pulp.LpSolutionInfeasible or prob.status == pulp.LpStatusInfeasible:
        # CBC's "Integer infeasible" comes back as status Infeasible with sol_status 0; past its
        # clock that answer proves nothing
        if backend == "cbc" and not cbc_infeasible_is_proof(text, time.perf_counter() - started, time_limit):
            return Solution("unknown", message="cbc stopped (time limit) before finding a plan", details=details)
        return Solution("infeasible", details=details)
    if ss == pulp.LpSolutionUnbounded:
        return Solution("error", message="MILP reported unbounded (a modelling bug)", details=details)
    if CBC_OVERRAN in text:
        why = "CBC ran past its time limit and was stopped"
        kept = _start_kept(m, warm, bound, why + "; the start solution is kept", details)
        return kept or Solution("unknown", message=why + " before giving a plan", details=details)
    if CBC_COLD in text and warm:
        # CBC ran without the start solution (a short limit, ``gap.CBC_WARM_MIN_S``) and found
        # nothing: the start solution, when it is a whole plan, is what a warm run would have kept
        details["cbc_start"] = "not given: limit below CBC_WARM_MIN_S"
        died = "the CBC process died (a CBC fault); the start solution is kept" if CBC_CRASHED in text else ""
        kept = _start_kept(m, warm, bound, died, details)
        if kept is not None:
            return kept
    if CBC_CRASHED in text:
        return Solution("unknown", message="the CBC process died (a CBC fault) before giving a plan", details=details)
    # no plan, but the bound the solver reached (its root LP at least) is still a valid one: the
    # callers that keep a plan of their own report it (network, traffic)
    return Solution("unknown", bound=bound, message=f"{backend} stopped (time limit) before finding a plan",
                    details=details)


def _start_kept(m: LinModel, warm: bool, bound: float | None, message: str, details: dict) -> Solution | None:
    """The start solution as a ``feasible`` Solution when CBC gave no plan of its own (it died, or
    was stopped past its limit) and the start solution is a whole plan (``hint_solution``);
    ``optimal`` when the model has no objective (every plan is optimal then, as for a plan CBC
    returns)."""
    vals = hint_solution(m) if warm else None
    if vals is None:
        return None
    obj = _objective_value(m, vals)
    if not m.objective:
        return Solution("optimal", vals, obj, obj, message=message, details=details)
    return Solution("feasible", vals, obj, bound, message=message, details=details)


def _make_highs_warm():
    import pulp

    class HiGHSWarm(pulp.HiGHS):
        """pulp.HiGHS that passes the variables' initial values to HiGHS as a start solution."""

        warm = False
        partial = False  # hand over only the values set, for HiGHS to complete (else unset ones are 0)

        def callSolver(self, lp):  # noqa: N802 - PuLP's name
            if self.warm and self.partial:
                import numpy as np

                given = [(v.index, float(v.varValue)) for v in lp.variables() if v.varValue is not None]
                if given:
                    lp.solverModel.setSolution(len(given), np.array([k for k, _ in given], dtype=np.int32),
                                               np.array([x for _, x in given], dtype=float))
            elif self.warm:
                import highspy

                sol = highspy.HighsSolution()
                vals = [0.0] * lp.solverModel.getNumCol()
                for v in lp.variables():
                    vals[v.index] = float(v.varValue) if v.varValue is not None else 0.0
                sol.col_value = vals
                sol.value_valid = True
                lp.solverModel.setSolution(sol)
            lp.solverModel.run()

    return HiGHSWarm


def _HiGHSWarm(**kw):  # noqa: N802 - behaves as a class
    return _make_highs_warm()(**kw)
