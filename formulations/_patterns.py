"""Configuration (pattern) models for ``network`` and ``traffic``: Dantzig-Wolfe master over
node (and rack) contents, column generation, and reduced-cost column enumeration for proofs.

Why: the compact count model's LP bound lets every count spread thinly over every place (a
linear over-estimator of a product cannot charge for spreading), so branch and bound has to
close a large gap on its own. Here a *column* is one place's whole content (a node's counts,
with its split into workers; a rack's counts), priced with its exact co-location value, so
spreading a column thinly does not raise the bound: this is the configuration LP, as in
cutting stock versus assignment. docs/formulations.md ("Configuration models") writes it down.

The method, exact end to end:

1. Column generation on the LP master (GLOP), pricing by CP-SAT (each pricing problem is one
   place: a small quadratic knapsack). At convergence the Lagrangian bound
   UB = pi.b + sum_f count_f * maxrc_f is valid for any duals pi (every master row is an
   equality and each family f has a convexity row sum_p lambda_p = count_f that includes the
   empty content).
2. The integer master over the generated columns gives an incumbent z_inc (any backend:
   CP-SAT, CBC or HiGHS solve this LinModel).
3. A column p of family f can be in a plan worth >= z_inc only if
   rc_p >= maxrc_f - (UB - z_inc) (the other places lose at most their maxrc). All such
   columns are enumerated (CP-SAT, all solutions) and the integer master is solved again over
   them: its optimum is the problem's optimum.

Not applicable (the caller falls back to the compact model): feasibility/admission,
self-streams, and for traffic components that may not share a worker.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from planner import rates
from planner.plan import Placement, Plan

from .gap import cpsat_solver
from ._linmodel import LinModel, Solution, solve_model

EPS = 1e-9


def stream_matrix(K: int, edges: dict) -> np.ndarray:
    """The symmetric K x K matrix of stream weights (or traffic rates) between groups, from
    ``edges`` {(a, b): w}; both directions of a pair add up."""
    A = np.zeros((K, K))
    for (a, b), w in edges.items():
        A[a, b] += w
        A[b, a] += w
    return A


@dataclass
class Column:
    family: int
    value: float  # co-location value (the master maximises sum value * lambda)
    coefs: dict[Any, float]  # master row -> coefficient (convexity row included)
    payload: Any  # what the plan needs (counts per worker, ...)
    key: Any = None


@dataclass
class Family:
    """Places of one kind (a class of identical nodes, or one rack) and their pricing model."""

    name: str
    count: int
    conv_row: Any
    build: Callable[[], "Pricer"]  # a fresh CP-SAT pricing model
    pricer: "Pricer | None" = None
    heuristic: Callable[[dict], list["Column"]] | None = None  # fast pricing without proof
    table: Any = None  # exact pricing by table (_nodetable.TablePricer), replaces the CP-SAT pricer
    # exact pricing without a solver: (duals, seconds=) -> (max reduced cost, best columns), or
    # None when it gives up (then the CP-SAT pricer runs); network racks without a rack table
    # (RackHeuristic.exact)
    exact: Callable[..., tuple[float, list["Column"]] | None] | None = None


class Pricer:
    """A CP-SAT model of one place: value and row coefficients as linear terms over its vars."""

    def __init__(self):
        from ortools.sat.python import cp_model

        self.cp_model = cp_model
        self.cm = cp_model.CpModel()
        self.value: list[tuple[Any, float]] = []
        self.rows: dict[Any, list[tuple[Any, float]]] = defaultdict(list)
        self.ubs: dict[Any, int] = {}
        self.decode: Callable[[Callable[[Any], int]], Any] = lambda val: None
        self.key: Callable[[Any], Any] = lambda payload: repr(payload)

    def int_var(self, lb: int, ub: int, name: str):
        v = self.cm.NewIntVar(lb, ub, name)
        self.ubs[v.Index()] = max(abs(lb), abs(ub))
        return v

    def product(self, a, b, name: str):
        ua, ub_ = self.ubs[a.Index()], self.ubs[b.Index()]
        p = self.int_var(0, ua * ub_, name)
        self.cm.AddMultiplicationEquality(p, [a, b])
        return p

    def column(self, fam: int, val: Callable[[Any], int]) -> Column:
        value = sum(c * val(v) for v, c in self.value)
        coefs: dict[Any, float] = {}
        for r, terms in self.rows.items():
            x = sum(c * val(v) for v, c in terms)
            if abs(x) > EPS:
                coefs[r] = x
        payload = self.decode(val)
        return Column(fam, value, coefs, payload, self.key(payload))

    def rc_terms(self, duals: dict[Any, float], with_value: bool = True) -> tuple[dict[int, float], dict[int, Any]]:
        """Reduced cost rc = sum_v a_v v (the convexity dual is added by the caller)."""
        a: dict[int, float] = defaultdict(float)
        var: dict[int, Any] = {}
        for v, c in (self.value if with_value else []):
            a[v.Index()] += c
            var[v.Index()] = v
        for r, terms in self.rows.items():
            d = duals.get(r, 0.0)
            if d:
                for v, c in terms:
                    a[v.Index()] -= d * c
                    var[v.Index()] = v
        return {k: x for k, x in a.items() if abs(x) > 1e-12}, var


def _scaled(a: dict[int, float], ubs: dict[int, int]) -> tuple[dict[int, int], float, float]:
    """Integer coefficients round(a S), the scale S and the worst rounding error / S."""
    span = sum(abs(x) * ubs[k] for k, x in a.items()) or 1.0
    scale = min(1e7 / max(abs(x) for x in a.values()) if a else 1.0, 2.0 ** 52 / span)
    ia = {k: int(round(x * scale)) for k, x in a.items()}
    err = sum(abs(ia[k] / scale - x) * ubs[k] for k, x in a.items())
    return ia, scale, err


def _solve_cp(cm, time_limit: float, threads: int, enumerate_all: bool = False, cb=None):
    s = cpsat_solver()
    s.parameters.max_time_in_seconds = max(time_limit, 0.01)
    if enumerate_all:
        s.parameters.enumerate_all_solutions = True
        s.parameters.num_workers = 1
    else:
        s.parameters.num_workers = threads
    st = s.Solve(cm, cb) if cb is not None else s.Solve(cm)
    return s, st


def lp_with_artificials(ri: np.ndarray, ci: np.ndarray, data: np.ndarray, values: np.ndarray,
                        rhs: np.ndarray, phase1: bool = False) -> tuple[float, np.ndarray, bool] | str:
    """The master LP of a configuration model, by GLOP: maximise values . lambda over
    lambda >= 0 with rows A lambda = rhs (A's entries (ri, ci, data), one column per value),
    each row with two penalised artificials (+1 and -1, objective -big, big = 100 (1 + max
    |value|)); phase1: only the artificials count. Returns (objective, row duals, artificials
    used), or GLOP's status when it does not solve the LP to optimality (also after a retry
    without its presolve, which occasionally gives up).

    Built by OR-Tools' model builder from one sparse matrix, with the variables in the order
    the coefficient-by-coefficient ``pywraplp`` build had them (the columns, then each row's
    two artificials), so GLOP gives the same duals: 1.3 ms against 4.7 ms for 13 rows and 260
    columns (the two-rack search of 100x12x10 solves about 3,300 of these)."""
    # OR-Tools' model builder through its C++ helpers, which model_builder.Model and .Solver
    # wrap: the Python module imports pandas (0.7 s of a CLI run of a tiny instance) and its
    # values() and dual_values() make a Variable and a LinearConstraint object for every entry
    # (1 s of the two-rack search above); the helpers hand back the arrays as they are
    from ortools.linear_solver.python import model_builder_helper as mbh
    from scipy import sparse

    R, n = len(rhs), len(values)
    big = 1.0 if phase1 else 100.0 * (1.0 + float(np.abs(values).max(initial=0.0)))
    art = np.arange(R)
    rows = np.concatenate([ri, art, art])
    cols = np.concatenate([ci, n + 2 * art, n + 2 * art + 1])
    vals = np.concatenate([data, np.ones(R), -np.ones(R)])
    nv = n + 2 * R
    obj = np.full(nv, -big)
    obj[:n] = 0.0 if phase1 else values
    m = mbh.ModelBuilderHelper()
    m.fill_model_from_sparse_data(np.zeros(nv), np.full(nv, np.inf), obj, rhs, rhs,
                                  sparse.csr_matrix((vals, (rows, cols)), shape=(R, nv)))
    m.set_maximize(True)
    s = mbh.ModelSolverHelper("GLOP")
    s.solve(m)
    if s.status() != mbh.SolveStatus.OPTIMAL:
        s.set_solver_specific_parameters("use_preprocessing: false")
        s.solve(m)
    if s.status() != mbh.SolveStatus.OPTIMAL:
        return str(s.status())
    x, duals = np.asarray(s.variable_values()), np.asarray(s.dual_values())
    value = float(s.objective_value())
    used_art = value < -1e-7 if phase1 else value < float(values @ x[:n]) - 1e-6
    return value, duals, used_art


class PatternModel:
    """Master rows, families of places, columns; the three steps of the module docstring."""

    def __init__(self, rows: dict[Any, float], families: list[Family], value_const: float, deadline: float | None,
                 threads: int = 2):
        self.rows = rows  # equality rows: name -> right-hand side
        self.families = families
        self.value_const = value_const
        self.deadline = deadline
        self.threads = threads
        self.cols: list[Column] = []
        self.seen: dict[tuple[int, Any], Column] = {}  # (family, key) -> the stored column
        self.exact_cap = 10.0  # seconds per exact pricing; past it, CP-SAT's bound is used (valid, looser)
        # settle (branch net-seeds): in an exact round, a rack family whose exact search gave up
        # is bounded by that search's bound instead of CP-SAT (set by network_racks where the
        # two-rack search, which does not read the racks' maxrc, follows)
        self.settle = False
        self.stats: dict[str, Any] = {"lp_iterations": 0, "columns_generated": 0, "columns_enumerated": 0}

    def left(self) -> float:
        return math.inf if self.deadline is None else self.deadline - time.monotonic()

    def add(self, col: Column) -> bool:
        k = (col.family, col.key)
        if k in self.seen:
            return False
        self.seen[k] = col
        self.cols.append(col)
        return True

    def stored(self, col: Column) -> Column:
        """Add ``col`` if new; the model's column with its family and key (the one its
        solutions refer to)."""
        self.add(col)
        return self.seen[(col.family, col.key)]

    # --- step 1: column generation ----------------------------------------------------------
    def solve_lp(self, phase1: bool = False):
        """Master LP over the columns so far (artificials on every row, penalised); phase1:
        only the artificials count (a feasibility test). Returns (objective, duals, artificials used)."""
        rows = list(self.rows)
        ridx = {r: i for i, r in enumerate(rows)}
        ri, ci, data = [], [], []
        for j, c in enumerate(self.cols):
            for r, x in c.coefs.items():
                ri.append(ridx[r])
                ci.append(j)
                data.append(x)
        got = lp_with_artificials(np.asarray(ri, dtype=np.int64), np.asarray(ci, dtype=np.int64),
                                  np.asarray(data, dtype=np.float64), np.array([c.value for c in self.cols]),
                                  np.array([self.rows[r] for r in rows], dtype=np.float64), phase1)
        if isinstance(got, str):
            self.stats["lp_status"] = got
            return None
        value, duals, used_art = got
        return value, {r: float(duals[i]) for i, r in enumerate(rows)}, used_art

    def price(self, fi: int, duals: dict[Any, float], want: int = 8, quick: float | None = None,
              phase1: bool = False) -> tuple[float, list[Column], bool]:
        """Best reduced cost of family fi (an upper bound, rigorous) and improving columns."""
        fam = self.families[fi]
        if fam.table is not None:
            ub, cols = fam.table.best(duals, want, phase1)
            return ub, cols, True
        if fam.exact is not None and not phase1:
            # quick round: 2 s; exact round (quick = the exact cap): up to that cap and 6 times the
            # prefixes, since CP-SAT, the alternative, seldom proves these (branch net-wide)
            exact_round = quick is None or quick > 2.0
            secs = min(quick or 30.0, 10.0) if exact_round else 2.0
            got = fam.exact(duals, seconds=max(0.0, min(secs, self.left())),  # within the model's limit
                            state_cap=6_000_000 if exact_round else 1_000_000)
            if got is not None:
                return got[0], got[1][:want], True
            gave_up = getattr(getattr(fam.exact, "__self__", None), "gave_up", math.inf)
            if exact_round and self.settle and math.isfinite(gave_up):
                # the caller settles for the search's bound (valid, not proven tight): no CP-SAT
                self.stats["settled"] = self.stats.get("settled", 0) + 1
                return gave_up, [], False
        pr = fam.pricer or fam.build()
        fam.pricer = pr
        a, var = pr.rc_terms(duals, with_value=not phase1)
        const = -duals.get(fam.conv_row, 0.0)
        if not a:
            col = pr.column(fi, lambda v: 0)
            return const, [col], True
        ia, scale, err = _scaled(a, pr.ubs)
        cm = pr.cm
        cm.Maximize(sum(ia[k] * var[k] for k in ia))
        cols: list[Column] = []
        cp = pr.cp_model

        class CB(cp.CpSolverSolutionCallback):
            def __init__(self):
                super().__init__()

            def on_solution_callback(self):
                if len(cols) < 50:
                    cols.append(pr.column(fi, self.Value))

        cb = CB()
        s, st = _solve_cp(cm, min(self.left(), quick or 30.0), self.threads, cb=cb)
        if st not in (cp.OPTIMAL, cp.FEASIBLE):
            return math.inf, [], False
        ub = s.BestObjectiveBound() / scale + err + const
        cols.append(pr.column(fi, s.Value))

        def rc(c: Column) -> float:
            return (0.0 if phase1 else c.value) - sum(duals.get(r, 0.0) * x for r, x in c.coefs.items())

        cols.sort(key=lambda c: -rc(c))
        return ub, [c for c in cols[:want]], st == cp.OPTIMAL

    def rc(self, c: Column, duals) -> float:
        return c.value - sum(duals.get(r, 0.0) * x for r, x in c.coefs.items())

    def generate(self) -> tuple[float | None, dict[Any, float] | None, list[float] | None]:
        """Column generation to convergence; returns (Lagrangian UB, duals, maxrc per family): the
        least UB of the iterations whose every maxrc was an upper bound (proven tight or not;
        ``stats["bound_pricing"]``), or Nones when none was."""
        best_ub, best = math.inf, None
        while True:
            if self.left() <= 0:
                return (None, None, None) if best is None else (best_ub, *best)
            lp_out = self.solve_lp()
            if lp_out is None:  # GLOP gave up: no bound from this model
                self.stats["lp"] = "failed"
                return (None, None, None) if best is None else (best_ub, *best)
            lp, duals, used_art = lp_out
            self.stats["lp_iterations"] += 1
            added = 0
            proven: dict[int, tuple] = {}  # quick-round pricings that were exact (same duals)
            # cheap pricing first: the numpy heuristics, then short CP-SAT runs; the exact
            # round only when neither finds an improving column
            for quick in ("heuristic", 0.5):
                for fi in range(len(self.families)):
                    if self.left() <= 0:  # a family's first pricing can take a second (largeCluster01: 48 of them)
                        break
                    if quick == "heuristic":
                        h = self.families[fi].heuristic
                        cols = h(duals) if h is not None else []
                    else:
                        got = self.price(fi, duals, quick=quick)
                        cols = got[1]
                        if got[2]:
                            proven[fi] = got
                    for c in cols:
                        if self.rc(c, duals) > 1e-7 * max(1.0, abs(c.value)) and self.add(c):
                            added += 1
                if added:
                    break
            if added:
                self.stats["columns_generated"] += added
                continue
            if self.left() <= 0:  # the quick rounds were cut short: no exact round
                return (None, None, None) if best is None else (best_ub, *best)
            maxrc: list[float] = []
            exact = True
            for fi in range(len(self.families)):
                # a family priced exactly in the quick round is not priced again (the exact
                # rack pricer and the tables give the same answer for the same duals)
                ub, cols, ok = proven[fi] if fi in proven else self.price(fi, duals, quick=self.exact_cap)
                exact &= ok
                maxrc.append(ub)
                for c in cols:
                    if self.rc(c, duals) > 1e-7 * max(1.0, abs(c.value)) and self.add(c):
                        added += 1
            self.stats["columns_generated"] += added
            if not used_art and all(math.isfinite(m) for m in maxrc):
                # valid for any duals when every maxrc is an upper bound, proven tight or not
                # (CP-SAT's bound, a give-up's bound): branch net-seeds, where seed 1's rack
                # pricing was never proven and column generation ended without a bound
                ub = sum(duals.get(r, 0.0) * rhs for r, rhs in self.rows.items()) + \
                    sum(f.count * m for f, m in zip(self.families, maxrc))
                if ub < best_ub:
                    best_ub, best = ub, (duals, maxrc)
                    self.stats["bound_pricing"] = "proven" if exact else "unproven"
            if added == 0:
                if used_art:  # the LP looks infeasible: prove it (phase 1) or go on with its columns
                    if self.infeasible():
                        return -math.inf, None, None
                    continue
                return (None, None, None) if best is None else (best_ub, *best)
            if best is not None and best_ub - lp <= 1e-9 * max(1.0, abs(lp)):
                return best_ub, *best

    def infeasible(self) -> bool:
        """Phase 1: minimise the artificials with exact pricing; True only if the LP master is
        proven infeasible (then so is every integer plan). Columns found are kept."""
        while self.left() > 0:
            out = self.solve_lp(phase1=True)
            if out is None:
                return False
            _, duals, used = out
            if not used:
                return False
            added = 0
            bound = sum(duals.get(r, 0.0) * rhs for r, rhs in self.rows.items())
            for fi, fam in enumerate(self.families):
                ub, cols, _ = self.price(fi, duals, phase1=True)
                bound += fam.count * ub  # ub: a rigorous upper bound on the phase-1 reduced cost
                for c in cols:
                    if -sum(duals.get(r, 0.0) * x for r, x in c.coefs.items()) > 1e-7 and self.add(c):
                        added += 1
            # Lagrangian bound on -(artificials) for any integer plan: below 0 means none exists
            if bound < -1e-6:
                return True
            if added == 0:
                return False
        return False

    # --- step 3: enumeration ---------------------------------------------------------------
    def enumerate(self, fi: int, duals: dict[Any, float], threshold: float, cap: int) -> bool:
        """Add every column of family fi with reduced cost >= threshold; False if over ``cap``
        columns or out of time (then the proof is incomplete)."""
        fam = self.families[fi]
        if fam.table is not None:
            cols = fam.table.at_least(duals, threshold, cap)
            if cols is None:
                return False
            for c in cols:
                if self.add(c):
                    self.stats["columns_enumerated"] += 1
            return True
        pr = fam.build()  # a fresh model: the enumeration adds a constraint
        a, var = pr.rc_terms(duals)
        const = -duals.get(fam.conv_row, 0.0)
        if a:
            ia, scale, err = _scaled(a, pr.ubs)
            pr.cm.Add(sum(ia[k] * var[k] for k in ia) >= math.floor((threshold - const - err) * scale) - 1)
        elif const < threshold:
            return True
        cp = pr.cp_model
        found: list[Column] = []
        over = [False]

        class CB(cp.CpSolverSolutionCallback):
            def on_solution_callback(self):
                found.append(pr.column(fi, self.Value))
                if len(found) > cap:
                    over[0] = True
                    self.StopSearch()

        s, st = _solve_cp(pr.cm, self.left(), 1, enumerate_all=True, cb=CB())
        if over[0] or st not in (cp.OPTIMAL, cp.INFEASIBLE):
            return False
        for c in found:
            if self.add(c):
                self.stats["columns_enumerated"] += 1
        return True

    # --- step 2: the integer master ----------------------------------------------------------
    def master(self, backend: str, threads: int | None, hint: dict[int, int] | None = None,
               bound: float | None = None) -> tuple[LinModel, Solution]:
        m = LinModel("max")
        lam = []
        for i, c in enumerate(self.cols):
            ub = self.families[c.family].count
            lam.append(m.var(f"lambda[{self.families[c.family].name},{i}]", 0, ub,
                             None if hint is None else hint.get(i, 0)))
        by_row: dict[Any, dict[int, float]] = defaultdict(dict)
        for v, c in zip(lam, self.cols):
            for r, x in c.coefs.items():
                by_row[r][v] = x
        for r, rhs in self.rows.items():
            m.add(by_row.get(r, {}), rhs, rhs, family="master")
        m.objective = {v: c.value for v, c in zip(lam, self.cols) if c.value}
        m.obj_const = self.value_const
        lim = self.left()
        sol = solve_model(m, backend, None if math.isinf(lim) else max(lim, 0.05), threads, use_hint=hint is not None)
        return m, sol

    def chosen(self, values: list[int]) -> list[tuple[Column, int]]:
        return [(c, values[i]) for i, c in enumerate(self.cols) if values[i] > 0]


def run_patterns(pm: PatternModel, backend: str, threads: int | None, cap: int = 20000,
                 improve: Callable[[list | None, float], tuple[float, list] | None] | None = None) -> dict[str, Any]:
    """Steps 1-3; returns status ('optimal', 'feasible', 'infeasible', 'unknown'), value, bound,
    and the chosen columns. ``improve`` (traffic: a local search) maps the master's chosen
    columns (or None) to a better (value, chosen) whose columns it has added to ``pm``."""
    out: dict[str, Any] = {"status": "unknown", "value": None, "bound": None, "chosen": None}
    ub, duals, maxrc = pm.generate()
    out["stats"] = pm.stats
    if ub is None:
        return out
    if ub == -math.inf:
        out["status"] = "infeasible"
        return out
    ub += pm.value_const
    out["bound"] = ub
    out["lagrangian"] = (ub, duals, maxrc)  # for a caller that enumerates more (traffic phase 2)
    m, sol = pm.master(backend, threads)
    scale = max(1.0, abs(ub))
    if sol.status in ("optimal", "feasible"):
        z = sol.objective
        out.update(status="feasible", value=z, chosen=pm.chosen(sol.values))
        if sol.status == "optimal" and ub - z <= 1e-7 * scale:
            out.update(status="optimal", bound=z)
            return out
    elif sol.status == "infeasible":
        z = -math.inf  # the generated columns do not combine into a plan: enumerate more
    elif improve is None:
        return out
    else:
        z = -math.inf
    if improve is not None:  # a better incumbent shrinks the enumeration margin ub - z
        better = improve(out["chosen"], ub)
        out["stats"]["incumbent_master"] = None if out["value"] is None else out["value"]
        if better is not None and better[0] > z + 1e-9 * scale:
            z = better[0]
            out.update(status="feasible", value=z, chosen=better[1])
            out["stats"]["incumbent_search"] = z
        if ub - z <= 1e-7 * scale:
            out.update(status="optimal", bound=z)
            return out
    if z == -math.inf and sol.status not in ("infeasible",):
        return out
    # step 3 with a growing margin delta: columns with rc >= maxrc_f - delta; once the master's
    # optimum z over them has ub - z <= delta, every column an optimal plan could use is present
    delta = max(1e-6 * scale, min(ub - z, 1e-3 * scale))
    while True:
        delta = min(delta, ub - z)
        for fi in range(len(pm.families)):
            if not pm.enumerate(fi, duals, maxrc[fi] - delta - 1e-7 * scale, cap):
                out["stats"]["enumeration"] = f"incomplete at margin {delta:.4g}"
                return out
        out["stats"]["columns"] = len(pm.cols)
        out["stats"]["margin"] = delta
        m, sol2 = pm.master(backend, threads, hint=None if out["chosen"] is None else _rehint(pm, out["chosen"]))
        if sol2.status in ("optimal", "feasible"):
            if sol2.objective >= z - 1e-9 * scale:
                z = sol2.objective
                out.update(status="feasible", value=z, chosen=pm.chosen(sol2.values))
            if sol2.status != "optimal":
                # the master's bound covers plans of enumerated columns only; any other plan
                # uses a column below the threshold and is worth at most ub - delta
                mb = ub if sol2.bound is None else max(sol2.bound, ub - delta)
                out["bound"] = min(ub, mb)
                return out
            if ub - z <= delta + 1e-7 * scale:
                out.update(status="optimal", bound=z)
                return out
        elif sol2.status != "infeasible":
            return out
        elif delta >= ub - z:  # z = -inf here: every column is present and no plan exists
            out["status"] = "infeasible"
            return out
        delta *= 4


def _rehint(pm: PatternModel, chosen) -> dict[int, int]:
    """The incumbent's lambda values in the (grown) column list."""
    pos = {(c.family, c.key): i for i, c in enumerate(pm.cols)}
    return {pos[(c.family, c.key)]: v for c, v in chosen}


# --- the two problems ---------------------------------------------------------------------------

def node_classes(pm, with_rack: bool) -> list[list[int]]:
    """Identical nodes (capacities, slots, site, resources, pin membership; and rack)."""
    pins = [set(c.nodes) for _, t in pm.topos for c in t.components if c.nodes is not None]
    cls: dict[Any, list[int]] = {}
    for ni, n in enumerate(pm.nodes):
        if not n.slots:
            continue
        key = (pm.node_rack[ni] if with_rack else 0, n.cpu, n.memory_mb if pm.ras else 0, len(n.slots),
               tuple(sorted(n.resources.items())) if pm.ras else (), n.site, tuple(n.id in p for p in pins))
        cls.setdefault(key, []).append(ni)
    return list(cls.values())


def applicable(pm, problem: str) -> str | None:
    """Why the pattern model cannot be used here (None when it can)."""
    for _, t in pm.topos:
        if any(s.source == s.target for s in t.streams):
            return "a component streams to itself"
        if problem == "traffic" and any(c.incompatible for c in t.components):
            return "incompatible components (worker-level constraint) in traffic"
    return None


def _node_pricer(pm, nodes: list[int], edges, with_workers: bool, traffic: bool, ybound: dict[int, int] | None = None) -> Pricer:
    """One node of class ``nodes``: counts y[g] (and x[g,w] per worker when needed)."""
    pr = Pricer()
    cm = pr.cm
    G = pm.groups
    ni = nodes[0]
    n = pm.nodes[ni]
    nw = len(n.slots)
    y = {}
    x = {}
    for k, g in enumerate(G):
        cap = pm.node_cap(g, ni) if ybound is None else min(pm.node_cap(g, ni), ybound.get(k, 0))
        if cap > 0:
            y[k] = pr.int_var(0, cap, f"y{k}")
    _node_limits(cm, G, y, n, memory=pm.ras)
    topos = [ti for ti, _ in pm.topos]
    own = {}
    if with_workers:
        for w in range(nw):
            for ti in topos:
                own[(ti, w)] = cm.NewBoolVar(f"o{ti},{w}")
            cm.Add(sum(own[(ti, w)] for ti in topos) <= 1)
            for k in y:
                ub = pm.worker_cap(G[k], ni)
                if ub > 0:
                    x[(k, w)] = pr.int_var(0, ub, f"x{k},{w}")
                    cm.Add(x[(k, w)] <= ub * own[(G[k].ti, w)])
            for ti, t in pm.topos:
                ks = [k for k in y if G[k].ti == ti and (k, w) in x]
                if pm.ras and ks:
                    cm.Add(sum(int(round(G[k].comp.memory_onheap_mb * 1000)) * x[(k, w)] for k in ks)
                           <= int(math.floor(t.max_heap_mb * 1000 + 1e-6)))
                # incompatibility inside a worker
                comps = defaultdict(list)
                for k in ks:
                    comps[G[k].comp.id].append(k)
                used = {}
                for cid, kk in comps.items():
                    b = cm.NewBoolVar("")
                    cm.Add(sum(x[(k, w)] for k in kk) <= sum(pm.worker_cap(G[k], ni) for k in kk) * b)
                    cm.Add(sum(x[(k, w)] for k in kk) >= b)  # b is determined (enumeration counts plans once)
                    used[cid] = b
                    if cid in t.component(cid).incompatible:
                        cm.Add(sum(x[(k, w)] for k in kk) <= 1)
                cl = sorted(comps)
                for i, c in enumerate(cl):
                    for d in cl[i + 1:]:
                        if d in t.component(c).incompatible or c in t.component(d).incompatible:
                            cm.Add(used[c] + used[d] <= 1)
                # two workers of t on one node that could merge (heap) are never better than the
                # merged worker (every pair between them gains): keep only unmergeable splits
                if pm.ras and ks and not any(c.incompatible for c in t.components) and t.max_heap_mb > 0 and \
                        all(float(G[k].comp.memory_onheap_mb * 1000).is_integer() for k in ks):
                    hw = sum(int(round(G[k].comp.memory_onheap_mb * 1000)) * x[(k, w)] for k in ks)
                    for w0 in range(w):
                        k0 = [k for k in y if G[k].ti == ti and (k, w0) in x]
                        h0 = sum(int(round(G[k].comp.memory_onheap_mb * 1000)) * x[(k, w0)] for k in k0)
                        big = int(math.floor(t.max_heap_mb * 1000 + 1e-6)) + 1
                        cm.Add(hw + h0 >= big * (own[(ti, w)] + own[(ti, w0)] - 1))
            if w > 0:  # interchangeable ports: non-increasing totals
                cm.Add(sum(x[(k, w)] for k in y if (k, w) in x) <= sum(x[(k, w - 1)] for k in y if (k, w - 1) in x))
        for k in y:
            cm.Add(y[k] == sum(x[(k, w)] for w in range(nw) if (k, w) in x))
        ow = {}
        for ti in topos:
            ow[ti] = sum(own[(ti, w)] for w in range(nw))
            for w in range(nw):  # an owned worker is non-empty (the plan has no empty workers)
                cm.Add(sum(x[(k, w)] for k in y if G[k].ti == ti and (k, w) in x) >= own[(ti, w)])
    if traffic:
        # o[t] workers on this node, o <= executors <= M o, sum_t o <= slots
        for ti, t in pm.topos:
            ks = [k for k in y if G[k].ti == ti]
            o = pr.int_var(0, nw, f"o{ti}")
            tot = sum(y[k] for k in ks) if ks else 0
            cm.Add(o <= tot)
            cm.Add(tot <= pm.M[ti] * o)
            own[ti] = o
            pr.rows[("workers", ti)].append((o, 1.0))
        cm.Add(sum(own[ti] for ti in topos) <= nw)
    for k in y:
        pr.rows[("cover", k)].append((y[k], 1.0))
    # value: node-level (and worker-level) co-location, weighted
    prods: dict[Any, list] = defaultdict(list)  # place -> product vars (for the density cuts)
    for (ka, kb), wgt in edges.items():
        if ka in y and kb in y:
            p = pr.product(y[ka], y[kb], f"Y{ka},{kb}")
            pr.value.append((p, wgt))
            prods[(G[ka].ti, "node")].append(p)
            if with_workers:
                for w in range(nw):
                    if (ka, w) in x and (kb, w) in x:
                        q = pr.product(x[(ka, w)], x[(kb, w)], f"X{ka},{kb},{w}")
                        pr.value.append((q, wgt))
                        prods[(G[ka].ti, w)].append(q)
    if not traffic:
        _density(pr, pm, prods, y, x)

    def decode(val):
        if with_workers:
            ws = [tuple(sorted((k, val(x[(k, w)])) for k in y if (k, w) in x and val(x[(k, w)]) > 0)) for w in range(nw)]
            return ("x", tuple(sorted((w for w in ws if w), reverse=True)))
        return ("y", tuple(sorted((k, val(y[k])) for k in y if val(y[k]) > 0)),
                tuple(sorted((ti, val(own[ti])) for ti in topos)))

    pr.decode = decode
    pr.key = lambda p: p
    return pr


def worker_patterns(pm, ni: int, ti: int, cap: int = 20000) -> list[tuple[tuple[int, int], ...]] | None:
    """Every non-empty content of one worker of topology ti on node ni: counts within the
    worker caps, heap <= max_heap, fitting the node alone, no incompatible pair, as tuples of
    (group, count). None if more than ``cap`` (the CP-SAT pricer's 20,000; the node table
    asks ``_nodetable.worker_contents``, which lists them, for up to 200,000)."""
    from ._nodetable import worker_contents_of

    got = worker_contents_of(pm, ni, ti, cap)
    if got is None:
        return None
    ks, X = got
    return [tuple((ks[i], q) for i, q in enumerate(row) if q) for row in X.tolist()]


def _node_pricer_patterns(pm, nodes: list[int], edges, pats: dict[int, list], ybound: dict[int, int] | None) -> Pricer:
    """One node as a multiset of worker contents: u[p] workers with content p. The worker
    level is then linear (sum_p u[p] co(p)); only the node level keeps products of y."""
    pr = Pricer()
    cm = pr.cm
    G = pm.groups
    ni = nodes[0]
    n = pm.nodes[ni]
    nw = len(n.slots)
    y = {}
    for k, g in enumerate(G):
        cap = pm.node_cap(g, ni) if ybound is None else min(pm.node_cap(g, ni), ybound.get(k, 0))
        if cap > 0:
            y[k] = pr.int_var(0, cap, f"y{k}")
    u = {}
    terms: dict[int, list] = defaultdict(list)
    for ti, plist in pats.items():
        t = dict(pm.topos)[ti]
        small = []
        for i, pat in enumerate(plist):
            if any(q > (pr.ubs[y[k].Index()] if k in y else 0) for k, q in pat):
                continue
            v = pr.int_var(0, nw, f"u{ti},{i}")
            u[(ti, i)] = (v, pat)
            for k, q in pat:
                terms[k].append((v, q))
            co = sum(wgt * dict(pat).get(a, 0) * dict(pat).get(b, 0) for (a, b), wgt in edges.items())
            if co:
                pr.value.append((v, co))
            heap = sum(G[k].comp.memory_onheap_mb * q for k, q in pat)
            if not any(c.incompatible for c in t.components) and 2 * heap <= t.max_heap_mb + 1e-9:
                small.append(v)
        if small:  # two workers that fit in one are never better than the merged one
            cm.Add(sum(small) <= 1)
    cm.Add(sum(v for v, _ in u.values()) <= nw)
    for k in y:
        cm.Add(y[k] == sum(q * v for v, q in terms[k]))
    _node_limits(cm, G, y, n, memory=True)
    for k in y:
        pr.rows[("cover", k)].append((y[k], 1.0))
    prods: dict[Any, list] = defaultdict(list)
    for (ka, kb), wgt in edges.items():
        if ka in y and kb in y:
            p = pr.product(y[ka], y[kb], f"Y{ka},{kb}")
            pr.value.append((p, wgt))
            prods[(G[ka].ti, "node")].append(p)
    _density(pr, pm, prods, y, {})

    def decode(val):
        ws = []
        for (ti, i), (v, pat) in u.items():
            ws.extend([tuple(sorted(pat))] * val(v))
        return ("x", tuple(sorted(ws, reverse=True)))

    pr.decode = decode
    pr.key = lambda p: p
    return pr


def node_pricer(pm, nodes: list[int], edges, ybound: dict[int, int] | None = None) -> Pricer:
    """Network node pricing: worker-content form when the contents are few, else per-worker counts."""
    pats = {}
    cache = pm.__dict__.setdefault("_worker_patterns", {})
    for ti, _ in pm.topos:
        if (nodes[0], ti) not in cache:
            cache[(nodes[0], ti)] = worker_patterns(pm, nodes[0], ti)
        pl = cache[(nodes[0], ti)]
        if pl is None:
            return _node_pricer(pm, nodes, edges, with_workers=True, traffic=False, ybound=ybound)
        pats[ti] = pl
    return _node_pricer_patterns(pm, nodes, edges, pats, ybound)


class NodeHeuristic:
    """Fast pricing for a network node class from its worker contents (numpy): the best
    single-worker and two-worker nodes by reduced cost, then greedy third/fourth workers.
    Exact values; no optimality claim (the CP-SAT pricer gives the proof)."""

    def __init__(self, pm, nodes, edges, fi: int, conv, rowkey, ybound=None):
        import numpy as np

        self.np = np
        self.n = pm.nodes[nodes[0]]
        self.nw = len(self.n.slots)
        self.fi, self.conv, self.rowkey = fi, conv, rowkey
        self._args = (pm, nodes, edges, ybound)  # the arrays are made at the first call (``_prepare``)

    def _prepare(self) -> None:
        """The worker contents and their arrays, made when the heuristic is first asked: a
        model's build makes one per node class, and listing every class's contents took 24 s
        of Storm's largeCluster01 (32 classes) before column generation could look at its clock
        (session 26)."""
        if self._args is None:
            return
        pm, nodes, edges, ybound = self._args
        self._args = None
        np = self.np
        G = pm.groups
        ni = nodes[0]
        K = len(G)
        pats = []
        for ti, _ in pm.topos:
            pl = pm.__dict__.setdefault("_worker_patterns", {}).get((ni, ti))
            if pl is None:
                pl = worker_patterns(pm, ni, ti)
                pm.__dict__["_worker_patterns"][(ni, ti)] = pl
            pats.extend(pl or [])
        cap = np.array([pm.node_cap(g, ni) if ybound is None else min(pm.node_cap(g, ni), ybound.get(k, 0))
                        for k, g in enumerate(G)], dtype=float)
        capl = cap.tolist()
        self.pats = pats = [p for p in pats if all(q <= capl[k] for k, q in p)]
        self.cap = cap
        self.edges = edges
        self.cross = None
        if len(pats) > HEURISTIC_CONTENTS:  # __call__ prices nothing then: no dense arrays (next line)
            return  # Storm's largeCluster03: 100k contents x 792 groups took 221 s of einsum (session 23)
        P = np.zeros((len(pats), K))
        for i, pat in enumerate(pats):
            for k, q in pat:
                P[i, k] = q
        self.P = P
        self.A = A = stream_matrix(K, edges)
        self.cpu = np.array([g.comp.cpu for g in G])
        self.mem = np.array([g.comp.memory_mb for g in G])
        PA = P @ A
        self.co = 0.5 * (PA * P).sum(axis=1)  # co(p) per worker content
        self.cross = PA @ P.T

    def column(self, ws: list[int]) -> "Column":
        y = self.P[ws].sum(axis=0)
        val = 0.5 * float(y @ self.A @ y) + float(self.co[ws].sum())
        contents = tuple(sorted((self.pats[i] for i in ws), reverse=True))
        coefs = {self.rowkey(k): float(q) for k, q in enumerate(y) if q}
        coefs[self.conv] = 1.0
        return Column(self.fi, val, coefs, ("x", contents), ("x", contents))

    def fits(self, y) -> bool:
        return bool((y <= self.cap).all() and y @ self.cpu <= self.n.cpu + 1e-9 and y @ self.mem <= self.n.memory_mb + 1e-9)

    def __call__(self, duals: dict) -> list["Column"]:
        np = self.np
        self._prepare()
        if self.cross is None or not len(self.pats):
            return []
        pi = np.array([duals.get(self.rowkey(k), 0.0) for k in range(self.P.shape[1])])
        a = 2.0 * self.co - self.P @ pi  # a single worker: node and worker pairs both count
        order = np.argsort(-a)[:400]
        best: list[tuple[float, list[int]]] = [(float(a[i]), [int(i)]) for i in order[:5]]
        if self.nw >= 2:
            sub = order
            M = a[sub][:, None] + a[sub][None, :] + self.cross[np.ix_(sub, sub)]
            flat = np.argsort(-M, axis=None)[:200]
            for f in flat:
                i, j = divmod(int(f), len(sub))
                if i > j:
                    continue
                ws = [int(sub[i]), int(sub[j])]
                if self.fits(self.P[ws].sum(axis=0)):
                    best.append((float(M[i, j]), ws))
        # greedy: extend the best few by more workers
        ext = []
        for val, ws in sorted(best, key=lambda t: -t[0])[:10]:
            ws = list(ws)
            while len(ws) < self.nw:
                gain = a[order] + self.cross[np.ix_(order, ws)].sum(axis=1)
                j = int(np.argmax(gain))
                if gain[j] <= 0:
                    break
                cand = ws + [int(order[j])]
                if not self.fits(self.P[cand].sum(axis=0)):
                    break
                ws, val = cand, val + float(gain[j])
            ext.append((val, ws))
        cols = [self.column(ws) for _, ws in sorted(best + ext, key=lambda t: -t[0])[:12]]
        return cols


HEURISTIC_CONTENTS = 6000  # NodeHeuristic: past this many worker contents a node it prices nothing (cross is pairs^2)
PAIR_STARTS = 32  # RackHeuristic: the best coordinate-ascent contents improved by pair moves
# a call's ascents stop (where they are, every row valid) past RACK_CALL_SHARE of the solve's time
# left, at most RACK_CALL_CAP s. On the benchmarks' instances a call takes milliseconds (100x12x10
# at a 30 s limit: 184 calls, the longest 0.064 s), so the cap binds only in the last second or so
# before the deadline; Storm's largeCluster03 (792 groups) ran past 900 s in the pair ascent
RACK_CALL_SHARE, RACK_CALL_CAP = 0.05, 2.0
PAIR_GRID = 2_000_000  # RackHeuristic._pair_ascent: a pair is skipped past rows x (cap_a + 1)(cap_b + 1) points


class RackHeuristic:
    """Fast pricing for a network rack family (numpy, no proof; the CP-SAT rack pricer gives
    the exact round): rc(z) = co(z) - pi . z - pi_conv over 0 <= z <= cap within the rack's
    CPU and memory. co has no diagonal (no self-streams), so rc is linear in each z_k when the
    others are fixed and its best z_k is 0 or the most that fits: coordinate ascent from many
    starts at once (the empty rack, the rack filled in random group orders, random corners of
    the box), a few sweeps each, then pair ascent (``_pair_ascent``) from the best
    ``PAIR_STARTS`` of them; the distinct contents of best rc are returned."""

    def __init__(self, pm, ri: int, edges, fi: int, conv, starts: int = 256, seed: int = 0,
                 deadline: float | None = None):
        from ._nodetable import rack_limits

        G = pm.groups
        K = len(G)
        self.K, self.ri, self.fi, self.conv = K, ri, fi, conv
        _, caps, cap_cpu, cap_mem = rack_limits(pm, ri)
        self.cap = np.array(caps, dtype=np.int64)
        self.dem = np.array([[int(round(g.comp.cpu * 1000)) for g in G],
                             [int(round(g.comp.memory_mb * 1000)) for g in G]], dtype=np.int64)  # (2, K)
        self.lim = np.array([cap_cpu, cap_mem], dtype=np.int64)
        self.A = stream_matrix(K, edges)
        self.edges = edges
        rng = np.random.default_rng(seed)
        self.starts = (rng.random((starts, K)) < 0.5) * self.cap[None, :]
        self.fails = 0  # consecutive give-ups of the exact pricer
        self.exact_fails = 0  # consecutive give-ups in exact rounds (they ignore the back-off)
        self.skip = 0  # calls left to pass to CP-SAT at once (after give-ups)
        self.order = 0  # the exact pricer's group order tried first (0: group order, 1: by cap)
        self.gave_up = math.inf  # after a call that gave up: a valid upper bound on its maximum
        self.pairs = PAIR_STARTS  # the best contents improved by pair moves (0: none)
        self.deadline = deadline  # the solve's: a call's ascents stop at RACK_CALL_SHARE of the time left

    def _most(self, Z: np.ndarray, k: int, U: np.ndarray | None = None) -> np.ndarray:
        """The most of group k each row of Z can hold with its other counts fixed (``U``: Z's
        uses of the two limits, Z @ dem.T, when the caller keeps them)."""
        if U is None:
            U = Z @ self.dem.T
        slack = self.lim[None, :] - (U - np.outer(Z[:, k], self.dem[:, k]))  # (S, 2), without group k
        most = np.full(len(Z), int(self.cap[k]))
        for r in range(2):
            if self.dem[r, k] > 0:
                most = np.minimum(most, np.maximum(slack[:, r], -1) // self.dem[r, k])
        return np.maximum(most, 0)

    def _fill(self, Z: np.ndarray) -> np.ndarray:
        """Rows over the rack's limits cut down (last groups first) until they fit."""
        for k in range(self.K - 1, -1, -1):
            over = ((Z @ self.dem.T) > self.lim[None, :]).any(axis=1)
            if not over.any():
                break
            Z[over, k] = np.minimum(Z[over, k], self._most(Z[over], k))
        return Z

    def _rc(self, Z: np.ndarray, pi: np.ndarray, conv: float) -> np.ndarray:
        """Reduced costs of the rack contents Z: co(z) - pi . z - conv."""
        return 0.5 * ((Z @ self.A) * Z).sum(axis=1) - Z @ pi - conv

    def __call__(self, duals: dict) -> list[Column]:
        K = self.K
        pi = np.array([duals.get(("cover", k), 0.0) - duals.get(("link", self.ri, k), 0.0) for k in range(K)])
        conv = duals.get(self.conv, 0.0)
        key = (pi.tobytes(), conv, self.pairs, self.starts.tobytes())
        if getattr(self, "_last", None) is not None and self._last[0] == key:
            return list(self._last[1])  # the same duals again (heuristic round, then exact()'s call)
        until = None if self.deadline is None else \
            time.monotonic() + min(RACK_CALL_CAP, RACK_CALL_SHARE * max(0.0, self.deadline - time.monotonic()))
        Z = self._fill(np.vstack([np.zeros((1, K), dtype=np.int64), self.starts.copy()]))
        S = Z @ self.A  # slopes and limit uses, kept up to date as columns change (743 groups:
        U = Z @ self.dem.T  # recomputing them per group was 16 s of a 60 s solve, session 24)
        for sweep in range(6):
            if sweep and until is not None and time.monotonic() > until:
                break
            changed = False
            for k in range(K):
                g = S[:, k] - pi[k]  # rc is linear in z_k with this slope
                new = np.where(g > 0, self._most(Z, k, U), 0)
                d = new - Z[:, k]
                rows = np.flatnonzero(d)
                if len(rows):
                    changed = True
                    Z[:, k] = new
                    S[rows] += np.outer(d[rows], self.A[k])
                    U[rows] += np.outer(d[rows], self.dem[:, k])
            if not changed:
                break
        rc = self._rc(Z, pi, conv)
        if self.pairs:
            # pair ascent (branch net-seeds) from the best distinct contents: coordinate ascent
            # stops where both rack limits bind and only trading one group for another helps
            # (docs/benchmarks.md, "network: generator seed 1")
            _, first = np.unique(Z, axis=0, return_index=True)
            top = first[np.argsort(-rc[first], kind="stable")[:self.pairs]]
            Zp = self._pair_ascent(Z[top].copy(), pi, until=until)
            Z, rc = np.vstack([Z, Zp]), np.concatenate([rc, self._rc(Zp, pi, conv)])
        cols = self._columns(Z, rc)
        self._last = (key, cols)
        return list(cols)

    def _pair_ascent(self, Z: np.ndarray, pi: np.ndarray, sweeps: int = 8, grid: int = PAIR_GRID,
                     until: float | None = None) -> np.ndarray:
        """Each row of Z improved by exact moves of two groups at a time: for a pair (a, b), rc
        with the other counts fixed is g_a x + g_b y + A_ab x y + const over the integer points
        (x, y) of the box within the rack's limits; every point is tried (vectorised over the
        rows) and the best taken, pair after pair, until a sweep changes nothing. Pairs whose
        grid of points over all rows exceeds ``grid`` are skipped (large caps: the work and the
        temporaries grow with (cap_a + 1)(cap_b + 1)). Every row stays within the box and the
        limits (no proof: a heuristic). ``until``: a time.monotonic() past which it stops where it
        is (checked before each first group of a pair; every row is still valid then)."""
        K = self.K
        cap, dem, lim, A = self.cap, self.dem, self.lim, self.A
        ranges = [np.arange(cap[k] + 1) for k in range(K)]
        S = Z @ A  # (n, K) slopes with every group, kept up to date as Z changes
        U = Z @ dem.T  # (n, 2) uses of the rack's limits, likewise
        for _ in range(sweeps):
            changed = False
            for a in range(K):
                if until is not None and time.monotonic() > until:
                    return Z
                for b in range(a + 1, K):
                    x, y = ranges[a], ranges[b]
                    if len(Z) * len(x) * len(y) > grid:
                        continue
                    za, zb = Z[:, a], Z[:, b]
                    ga = S[:, a] - A[a, b] * zb - pi[a]
                    gb = S[:, b] - A[a, b] * za - pi[b]
                    use = U - np.outer(za, dem[:, a]) - np.outer(zb, dem[:, b])  # (n, 2)
                    val = ga[:, None, None] * x[None, :, None] + gb[:, None, None] * y[None, None, :] \
                        + A[a, b] * (x[:, None] * y[None, :])[None]
                    for r in range(2):
                        over = use[:, r, None, None] + dem[r, a] * x[None, :, None] + dem[r, b] * y[None, None, :] > lim[r]
                        val = np.where(over, -np.inf, val)
                    cur = ga * za + gb * zb + A[a, b] * za * zb
                    flat = val.reshape(len(Z), -1)
                    i = flat.argmax(axis=1)
                    better = flat[np.arange(len(Z)), i] > cur + 1e-12 * np.maximum(1.0, np.abs(cur))
                    if better.any():
                        changed = True
                        da = i[better] // len(y) - Z[better, a]
                        db = i[better] % len(y) - Z[better, b]
                        Z[better, a] += da
                        Z[better, b] += db
                        S[better] += np.outer(da, A[a]) + np.outer(db, A[b])
                        U[better] += np.outer(da, dem[:, a]) + np.outer(db, dem[:, b])
            if not changed:
                break
        return Z

    def _columns(self, Z: np.ndarray, rc: np.ndarray, want: int = 8) -> list[Column]:
        """The rack columns of the distinct rows of Z of highest ``rc``."""
        from ._nodetable import rack_column

        out, seen = [], set()
        for i in np.argsort(-rc, kind="stable"):
            z = np.asarray(Z[i], dtype=np.int64)
            key = z.tobytes()
            if key in seen:
                continue
            seen.add(key)
            out.append(rack_column(self.fi, self.ri, self.conv, z, float(sum(w * z[a] * z[b] for (a, b), w in self.edges.items()))))
            if len(out) >= want:
                break
        return out

    def exact(self, duals: dict, state_cap: int = 1_000_000, seconds: float = 2.0) -> tuple[float, list[Column]] | None:
        """The exact maximum reduced cost of the rack and its best columns, without a solver:
        every content with rc above the heuristic's best (less 1e-9 |rc|) is generated by the
        prefix search of ``_splits_above`` (``both=False``; its bound of the rest over-estimates,
        so none is lost), and the best of them is the maximum. The bound returned is that maximum
        plus 1e-9 max(1, |max|) (float rounding). None when the search gives up (over
        ``state_cap`` prefixes at a level or ``seconds``): the caller prices by CP-SAT then.
        After the k-th give-up in a row the next 2^k calls go to CP-SAT at once (100x6x10: the
        search gives up at every call, each give-up cost about 0.6 s)."""
        self.gave_up = math.inf  # an upper bound on the maximum when the call gives up (below)
        if self.skip > 0 and seconds <= 2.0:  # the back-off applies to quick calls only
            self.skip -= 1
            return None
        exact = seconds > 2.0
        if exact:
            # an exact round ignores the back-off, but after k give-ups in exact rounds in a row
            # it gets 2^-k of its seconds (at least 2 s): each give-up was followed by CP-SAT
            # for up to the same cap again (about 20 s per rack family and round)
            seconds = max(2.0, seconds / 2 ** self.exact_fails)
        K = self.K
        pi = np.array([duals.get(("cover", k), 0.0) - duals.get(("link", self.ri, k), 0.0) for k in range(K)])
        conv = duals.get(self.conv, 0.0)
        heur = self(duals)
        # the best known reduced cost: the heuristic's contents, and the empty rack (rc = -conv)
        top = max([-conv] + [c.value - sum(q * pi[k] for k, q in c.key) - conv for c in heur])
        thr = top - 1e-9 * max(1.0, abs(top))
        # two group orders (branch net-wide): the groups' own and smallest cap first
        # (``_splits_above_ordered``). Neither is always faster (100x9x10: the cap order 2-10x;
        # 100x10x10's calls with no improving column: the group order 0.1 s against 2.1 s), so
        # the order that last succeeded gets a quarter of the prefixes and seconds first, then
        # the other the rest of the seconds with the whole prefix cap (a per-level cap).
        t0 = time.monotonic()
        bounds: list[float] = []  # each give-up's bound on the maximum (both are valid)
        for i, o in enumerate((self.order, 1 - self.order)):
            search = _splits_above_ordered if o else _splits_above
            secs = seconds / 4 if i == 0 else seconds - (time.monotonic() - t0)
            got = search(self.cap, np.zeros(K, dtype=np.int64), self.cap, -pi, self.edges, -conv, thr,
                         self.dem, self.lim, None, state_cap=state_cap // 4 if i == 0 else state_cap,
                         deadline=time.monotonic() + max(0.0, secs), both=False, last_ends=True,
                         bound_out=bounds)
            if not isinstance(got, str):
                self.order = o
                break
        if isinstance(got, str):
            b = min(bounds, default=math.inf)
            self.gave_up = b + 1e-9 * max(1.0, abs(b)) if math.isfinite(b) else math.inf
            self.fails += 1
            self.skip = 2 ** self.fails
            if exact:
                self.exact_fails += 1
            return None
        self.fails = self.skip = self.exact_fails = 0  # a success ends the back-off
        Z, F = got
        best = max(top, float(F.max())) if len(F) else top
        cols = self._columns(Z, F) if len(F) else []
        keys = {c.key for c in cols}
        cols += [c for c in heur if c.key not in keys]
        return best + 1e-9 * max(1.0, abs(best)), cols


def _density(pr: Pricer, pm, prods, y, x) -> None:
    """Motzkin-Straus inside the pricing model (it tightens CP-SAT's LP): the pairs (u, d) of
    one topology's stream graph at one place holding k of its executors number at most
    (omega - 1) / (2 omega) k^2 in products, omega = the graph's clique number."""
    import networkx as nx

    G = pm.groups
    cm = pr.cm
    for (ti, place), ps in prods.items():
        t = dict(pm.topos)[ti]
        g = nx.Graph()
        for u, downs in rates.downstream(t).items():
            for d in downs:
                g.add_edge(u, d)
        omega = max((len(c) for c in nx.find_cliques(g)), default=2)
        ks = [k for k in y if G[k].ti == ti]
        cnt = [y[k] for k in ks] if place == "node" else [x[(k, place)] for k in ks if (k, place) in x]
        ub = sum(pr.ubs[v.Index()] for v in cnt)
        tot = pr.int_var(0, ub, "")
        cm.Add(tot == sum(cnt))
        sq = pr.int_var(0, ub * ub, "")
        cm.AddMultiplicationEquality(sq, [tot, tot])
        cm.Add(2 * omega * sum(ps) <= (omega - 1) * sq)


def _rack_pricer(pm, ri: int, edges) -> Pricer:
    """One rack's counts z[g] (RAS): capacity of its nodes in total; linked to its nodes' columns."""
    from ._nodetable import rack_limits

    pr = Pricer()
    cm = pr.cm
    G = pm.groups
    _, caps, cap_cpu, cap_mem = rack_limits(pm, ri)
    z = {k: pr.int_var(0, cap, f"z{k}") for k, cap in enumerate(caps) if cap > 0}
    cm.Add(sum(int(round(G[k].comp.cpu * 1000)) * z[k] for k in z) <= cap_cpu)
    cm.Add(sum(int(round(G[k].comp.memory_mb * 1000)) * z[k] for k in z) <= cap_mem)
    for k in z:
        pr.rows[("cover", k)].append((z[k], 1.0))
        pr.rows[("link", ri, k)].append((z[k], -1.0))
    for (ka, kb), wgt in edges.items():
        if ka in z and kb in z:
            pr.value.append((pr.product(z[ka], z[kb], f"Z{ka},{kb}"), wgt))
    pr.decode = lambda val: tuple(sorted((k, val(z[k])) for k in z if val(z[k]) > 0))
    pr.key = lambda p: p
    return pr


def network_edges(pm) -> tuple[dict[tuple[int, int], float], float]:
    """The network metric's pair weights between groups, {(a, b) a <= b: sum of 1 / E_t over
    the streams between them}, and its constant sum 3 n_u n_d / E_t: metric = constant minus
    the weighted co-location (rack, node and worker pairs)."""
    G = pm.groups
    edges: dict[tuple[int, int], float] = defaultdict(float)
    const = 0.0
    for ku, kd, e_t in pm.stream_pairs():
        edges[(min(ku, kd), max(ku, kd))] += 1.0 / e_t
        const += 3.0 * G[ku].size * G[kd].size / e_t
    return edges, const


def build_network(pm, deadline, threads, tables: bool = True) -> tuple[PatternModel, dict, float]:
    """Network: maximise rack + node + worker co-location (each weighted 1/E_t per stream).
    ``tables``: price node classes exactly by table (``_nodetable``) where it is small enough."""
    from ._nodetable import RackTable, TablePricer, node_table

    G = pm.groups
    edges, const = network_edges(pm)
    racks = sorted({pm.node_rack[ni] for ni in range(len(pm.nodes)) if pm.nodes[ni].slots})
    multi_rack = len(racks) > 1
    rows: dict[Any, float] = {}
    fams: list[Family] = []
    one_rack_const = 0.0
    for k, g in enumerate(G):
        rows[("cover", k)] = float(g.size)
    if not multi_rack:
        one_rack_const = sum(w * G[a].size * G[b].size for (a, b), w in edges.items())
    for cls in node_classes(pm, with_rack=True):
        ri = pm.node_rack[cls[0]]
        conv = ("conv", "node", cls[0])
        rows[conv] = float(len(cls))

        def build(cls=cls, ri=ri, conv=conv):
            pr = node_pricer(pm, cls, edges)
            if multi_rack:
                for k in list(pr.rows):
                    if k[0] == "cover":
                        pr.rows[("link", ri, k[1])] = pr.rows.pop(k)
            pr.rows[conv] = []
            return _with_conv(pr, conv)

        fam = Family(f"node{cls[0]}", len(cls), conv, build)
        rk = (lambda k, ri=ri: ("link", ri, k)) if multi_rack else (lambda k: ("cover", k))
        table = node_table(pm, cls, edges, deadline, threads) if tables else None
        if table is not None:
            fam.table = TablePricer(table, len(fams), conv, rk)
            # exact and cheap: priced with the rack heuristics, before any CP-SAT pricer runs
            fam.heuristic = lambda duals, tp=fam.table: tp.best(duals, 8)[1]
        else:
            fam.heuristic = NodeHeuristic(pm, cls, edges, len(fams), conv, rk)
        fams.append(fam)
    if multi_rack:
        for ri in racks:
            for k in range(len(G)):
                rows[("link", ri, k)] = 0.0
            conv = ("conv", "rack", ri)
            rows[conv] = 1.0

            def build(ri=ri, conv=conv):
                return _with_conv(_rack_pricer(pm, ri, edges), conv)

            fam = Family(f"rack{ri}", 1, conv, build)
            # about 2e6 contents a second to build (shared 2-core machine): within 30 % of the time left
            left = math.inf if deadline is None else deadline - time.monotonic()
            rt = RackTable(pm, ri, edges, len(fams), conv) if tables and _rack_box(pm, ri) <= 2e6 * 0.3 * left else None
            if rt is not None and rt.ok:
                fam.table = rt
            else:  # the CP-SAT rack pricer is slow to prove: a fast heuristic, then a solver-free exact one
                fam.heuristic = RackHeuristic(pm, ri, edges, len(fams), conv, deadline=deadline)
                fam.exact = fam.heuristic.exact
            fams.append(fam)
    # value = const_reward; the master maximises co-location, the metric is const - value
    # every plan's co-location value is a multiple of 1 / lcm_t E_t (integer pair counts over E_t)
    lcm = math.lcm(*(int(t.executor_count) for _, t in pm.topos)) if pm.topos else 1
    unit = 1.0 / lcm if lcm <= 10**6 else 0.0
    return PatternModel(rows, fams, one_rack_const, deadline, 1), {"edges": edges, "const": const, "racks": racks,
                                                                   "unit": unit,
                                                                   "tables": list(pm.__dict__.get("_node_table_notes", []))}, const


def _with_conv(pr: Pricer, conv) -> Pricer:
    """The convexity row has coefficient 1 for every column (a constant term)."""
    old = pr.column

    def column(fam, val):
        c = old(fam, val)
        c.coefs[conv] = 1.0
        return c

    pr.column = column
    return pr


def build_traffic(pm, pairs, deadline, threads) -> tuple[PatternModel, float]:
    """Traffic phase 1: maximise intra-node traffic; node columns carry worker counts."""
    G = pm.groups
    rows: dict[Any, float] = {("cover", k): float(g.size) for k, g in enumerate(G)}
    for ti, _ in pm.topos:
        rows[("workers", ti)] = float(pm.S[ti])
    const = sum(r * G[a].size * G[b].size for (a, b), r in pairs.items())
    fams = []
    for cls in node_classes(pm, with_rack=False):
        conv = ("conv", "node", cls[0])
        rows[conv] = float(len(cls))

        def build(cls=cls, conv=conv):
            pr = _node_pricer(pm, cls, pairs, with_workers=False, traffic=True)
            return _with_conv(pr, conv)

        fams.append(Family(f"node{cls[0]}", len(cls), conv, build))
    return PatternModel(rows, fams, 0.0, deadline, 1), const


def _table_sig(pm, ni: int):
    from ._nodetable import table_sig

    return table_sig(pm, ni)


class _SeedPool:
    """The node columns generated so far (the master's and every rack subproblem's), kept for
    seeding rack subproblems: each with its convexity row and its counts per group, so that
    the columns fitting a rack content z are found by one comparison over an array instead of
    a Python loop over every column per subproblem (100x12x10: 2,600 subproblems x about 5,000
    columns were 20 of the two-rack search's 85 s). The arrays grow by doubling: the search
    appends columns after most subproblems."""

    def __init__(self, K: int):
        self.K = K
        self.cols: list[Column] = []  # as stored: rows ("link", rack, group) or ("cover", group)
        # the same with ("cover", group) rows, as a subproblem has them: one dict per column,
        # shared by every subproblem it seeds (columns' coefficients are never changed once made)
        self.sub_coefs: list[dict] = []
        self.conv: list[Any] = []
        self._conv_id: dict[Any, int] = {}
        self._ids = np.zeros(64, dtype=np.int64)
        self._counts = np.zeros((64, K))
        self._values = np.zeros(64)

    def append(self, c: Column) -> None:
        coefs = {("cover", r[2]) if r[0] == "link" else r: x for r, x in c.coefs.items()}
        conv = next(r for r in c.coefs if r[0] == "conv")
        n = len(self.cols)
        if n == len(self._ids):
            self._ids = np.concatenate([self._ids, np.zeros(n, dtype=np.int64)])
            self._counts = np.concatenate([self._counts, np.zeros((n, self.K))])
            self._values = np.concatenate([self._values, np.zeros(n)])
        for r, x in coefs.items():  # row n is still zeros
            if r[0] == "cover":
                self._counts[n, r[1]] = x
        self._ids[n] = self._conv_id.setdefault(conv, len(self._conv_id))
        self._values[n] = c.value
        self.cols.append(c)
        self.sub_coefs.append(coefs)
        self.conv.append(conv)

    def fitting(self, convs, z: dict[int, int]) -> np.ndarray:
        """Indices (in order) of the columns whose convexity row is in ``convs`` and whose
        counts are at most z."""
        n = len(self.cols)
        want = [self._conv_id[c] for c in convs if c in self._conv_id]
        zz = np.array([z.get(k, 0) for k in range(self.K)], dtype=np.float64)
        return np.flatnonzero(np.isin(self._ids[:n], want) & (self._counts[:n] <= zz).all(axis=1))


def _rack_sub(pm, ri: int, z: dict[int, int], edges, deadline, seed: _SeedPool | None) -> PatternModel:
    """Rack ri holding exactly z: its node classes as families (single-rack configuration
    model), seeded with node columns already generated for that rack (none without a pool)."""
    from ._nodetable import TablePricer

    G = pm.groups
    rows: dict[Any, float] = {("cover", k): float(z.get(k, 0)) for k in range(len(G))}
    fams = []
    fam_of = {}
    for cls in node_classes(pm, with_rack=True):
        if pm.node_rack[cls[0]] != ri:
            continue
        conv = ("conv", "node", cls[0])
        rows[conv] = float(len(cls))

        def build(cls=cls, conv=conv):
            return _with_conv(node_pricer(pm, cls, edges, ybound=z), conv)

        fam_of[conv] = len(fams)
        fam = Family(f"node{cls[0]}", len(cls), conv, build)
        table = pm.__dict__.get("_node_tables", {}).get(_table_sig(pm, cls[0]))
        if table is not None:
            fam.table = TablePricer(table, len(fams), conv, lambda k: ("cover", k), ybound=z)
        else:
            fam.heuristic = NodeHeuristic(pm, cls, edges, len(fams), conv, lambda k: ("cover", k), ybound=z)
        fams.append(fam)
    sub = PatternModel(rows, fams, 0.0, deadline, 1)
    for i in (seed.fitting(list(fam_of), z) if seed is not None else []):
        c = seed.cols[i]
        sub.add(Column(fam_of[seed.conv[i]], c.value, seed.sub_coefs[i], c.payload, c.key))
    return sub


class _RackLP:
    """The column generation of ``_rack_sub(pm, ri, z, ..., seed).generate()`` where every node
    class of the rack has a node table, over arrays: the seeds are rows of the pool's count
    array and a ``Column`` is made only for a column the pricing adds. It keeps the model's
    steps (the seeds in the pool's order, the tables' ``best`` columns added in their order,
    the Lagrangian bound of the converged duals), so GLOP sees the same LPs and the search the
    same bounds and multipliers. Why: at 100x12x10 the two-rack search bounds 2,661 rack
    contents, each a subproblem of about 250 seed columns that converges after 1.2 LPs on
    average; making their ``Column`` objects and reading their coefficients back was about a
    quarter of the search. ``ok`` is False where a class has no table (the caller builds the
    model then)."""

    def __init__(self, pm, ri: int, z: dict[int, int], seed: "_SeedPool"):
        from ._nodetable import TablePricer

        tables = pm.__dict__.get("_node_tables", {})
        K = len(pm.groups)
        self.K, self.seed = K, seed
        found = [(cls, tables.get(_table_sig(pm, cls[0]))) for cls in node_classes(pm, with_rack=True)
                 if pm.node_rack[cls[0]] == ri]
        self.ok = all(t is not None for _, t in found)  # checked before any table is restricted
        if not self.ok:
            return
        self.classes: list[tuple[Any, int, Any]] = []
        for cls, table in found:
            conv = ("conv", "node", cls[0])
            self.classes.append((conv, len(cls), TablePricer(table, len(self.classes), conv, lambda k: ("cover", k), ybound=z)))
        convs = [c[0] for c in self.classes]
        seeds = seed.fitting(convs, z)
        pos = {seed._conv_id[c]: i for i, c in enumerate(convs) if c in seed._conv_id}
        self.Y = seed._counts[seeds]
        self.val = seed._values[seeds]
        self.cls = np.array([pos[int(i)] for i in seed._ids[seeds]], dtype=np.int64)
        self._seeds = seeds  # pool indices of the first len(seeds) columns
        self.rhs = np.concatenate([[float(z.get(k, 0)) for k in range(K)],
                                   [float(cnt) for _, cnt, _ in self.classes]])
        self.new_cols: list[Column] = []  # the columns the pricing added, in order
        self._keys: list[set] | None = None

    def _matrix(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The LP's entries (row, column, value): the cover rows' counts, then the convexity rows."""
        j, k = np.nonzero(self.Y)
        n = len(self.val)
        return (np.concatenate([k, self.K + self.cls]), np.concatenate([j, np.arange(n)]),
                np.concatenate([self.Y[j, k], np.ones(n)]))

    def _known(self, ci: int, key) -> bool:
        """Is ``key`` a column of class ci already (a seed or an added one)?"""
        if self._keys is None:  # the seeds' keys, made once, when the pricing first improves
            self._keys = [set() for _ in self.classes]
            for i, c in zip(self._seeds, self.cls):
                self._keys[int(c)].add(self.seed.cols[int(i)].key)
        return key in self._keys[ci]

    def generate(self, deadline: float | None):
        """``PatternModel.generate``'s (UB, duals, maxrc) (Nones when no bound: out of time, or
        GLOP failed), or "phase1" when the converged LP still uses artificials (the caller's
        model then proves infeasibility or goes on)."""
        rows = [("cover", k) for k in range(self.K)] + [c[0] for c in self.classes]
        while True:  # (the model's bound is that of the converged duals: the only one computed)
            if deadline is not None and time.monotonic() >= deadline:
                return None, None, None
            ri, ci, data = self._matrix()
            got = lp_with_artificials(ri, ci, data, self.val, self.rhs)
            if isinstance(got, str):
                return None, None, None
            _, dual, used_art = got
            duals = {r: float(dual[i]) for i, r in enumerate(rows)}
            maxrc, added = [], 0
            for fi, (conv, _, pr) in enumerate(self.classes):
                rc = pr.rc(duals)
                maxrc.append(float(rc.max()))
                if maxrc[-1] <= 1e-7:  # no column to add (``best`` would make the best one's split)
                    continue
                ub, cols = pr.best(duals, 8, rc=rc)
                for c in cols:
                    rc = c.value - sum(duals.get(r, 0.0) * x for r, x in c.coefs.items())
                    if rc > 1e-7 * max(1.0, abs(c.value)) and not self._known(fi, c.key):
                        self._keys[fi].add(c.key)
                        y = np.zeros(self.K)
                        for r, x in c.coefs.items():
                            if r[0] == "cover":
                                y[r[1]] = x
                        self.Y = np.vstack([self.Y, y[None, :]])
                        self.val = np.append(self.val, c.value)
                        self.cls = np.append(self.cls, fi)
                        self.new_cols.append(c)
                        added += 1
            if added:
                continue
            if used_art:
                return "phase1"
            return float(dual @ self.rhs) + sum(cnt * m for (_, cnt, _), m in zip(self.classes, maxrc)), duals, maxrc


def network_racks(pm, model: PatternModel, info: dict, backend: str, threads, cap: int = 20000,
                  incumbent: tuple[float, Any] | None = None, search_deadline: float | None = None) -> dict[str, Any]:
    """Several racks: the configuration LP mixes rack contents, so its bound alone is loose.
    Search the rack contents (z_r, one per rack, summing to the executor counts) whose
    Lagrangian bound UB + sum_r (rc(z_r) - maxrc_r) beats the incumbent, best bound first;
    for each, solve every rack's node problem exactly (single-rack configuration model, whose
    LP is tight). The margin delta of the enumerated rack contents grows until it covers the gap."""
    from ._nodetable import rack_by_convolution

    out: dict[str, Any] = {"status": "unknown", "value": None, "bound": None, "chosen": None}
    if incumbent is not None:  # (value, plan) of a known plan
        out.update(status="feasible", value=incumbent[0], chosen=incumbent[1])
    racks = info["racks"]
    if len(racks) == 2 and incumbent is not None:
        # the two-rack search will follow, and its split bounds do not read the racks' maxrc
        # (they cancel: ub - maxrc_1 - maxrc_2 + rc_1 + rc_2): where every node class has a
        # table, an exact round settles for a rack search's give-up bound instead of CP-SAT's
        # (branch net-seeds; docs/formulations.md "Bound", settling)
        from ._nodetable import table_sig

        tables = pm.__dict__.get("_node_tables", {})
        model.settle = all(tables.get(table_sig(pm, c[0])) is not None
                           for c in node_classes(pm, True) if pm.node_rack[c[0]] in racks)
    ub, duals, maxrc = model.generate()
    out["stats"] = st = model.stats
    if ub is None:
        return out
    if ub == -math.inf:
        out.update(status="infeasible", chosen=None)
        return out
    G = pm.groups
    n = [g.size for g in G]
    out["bound"] = ub
    if search_deadline is not None:  # the bound is known: the rack search may use more of the limit
        model.deadline = search_deadline
    scale = max(1.0, abs(ub))
    rack_f = [fi for fi, f in enumerate(model.families) if f.name.startswith("rack")]
    node_seed = _SeedPool(len(pm.groups))
    for c in model.cols:
        if not model.families[c.family].name.startswith("rack"):
            node_seed.append(c)
    seen_seed = {(model.families[c.family].conv_row, c.key) for c in node_seed.cols}
    racks = info["racks"]
    # racks with the same node classes (capacities, counts) are interchangeable: z_1 >= z_2 lexicographically
    sig = {ri: tuple(sorted((len(c), pm.nodes[c[0]].cpu, pm.nodes[c[0]].memory_mb, len(pm.nodes[c[0]].slots))
                            for c in node_classes(pm, True) if pm.node_rack[c[0]] == ri)) for ri in racks}
    z_best = -math.inf if incumbent is None else incumbent[0]
    best: list | None = None
    cache: dict[Any, tuple[float, list] | None] = {}
    done: set = set()
    st["rack_tuples"] = 0

    def share(ri: int, sub: PatternModel) -> None:
        """Node columns found in a rack subproblem are valid for any rack content that covers
        them: reuse them as seeds."""
        share_cols(ri, [(sub.families[c.family].conv_row, c) for c in sub.cols])

    def share_cols(ri: int, cols: list) -> None:
        for conv, c in cols:
            if (conv, c.key) not in seen_seed:
                seen_seed.add((conv, c.key))
                coefs = {("link", ri, r[1]) if r[0] == "cover" else r: x for r, x in c.coefs.items()}
                node_seed.append(Column(-1, c.value, coefs, c.payload, c.key))

    def solve_rack(ri: int, zc: Column, need: float | None = None) -> tuple | None | str:
        """Rack ri holding zc exactly: (value, node columns), None (no plan), "incomplete", or
        with ``need`` (only values >= need matter) possibly ("below", bound < need)."""
        z = dict(zc.payload)
        key = (sig[ri], zc.key) if list(sig.values()).count(sig[ri]) > 1 else (ri, zc.key)
        if key in cache:
            return cache[key]
        if need is not None and lp_bound.get(key, math.inf) < need:
            return ("below", lp_bound[key])
        sub = subs.pop(key, None) or _rack_sub(pm, ri, z, info["edges"], model.deadline, node_seed)
        if all(f.table is not None for f in sub.families):
            # every node class has a table: the exact max-plus convolution of the node tables
            # (no integer master); the subproblem's LP gives the Lagrangian it starts from
            lag = sub_lag.pop(key, None) or sub.generate()
            if lag[0] is not None:
                if lag[0] == -math.inf:
                    cache[key] = None
                    return None
                t0 = time.monotonic()
                conv = rack_by_convolution(sub, lag[0], lag[1], lag[2], z, model.deadline, need=need)
                st["rack_convolution_s"] = round(st.get("rack_convolution_s", 0.0) + time.monotonic() - t0, 3)
                if conv is None:
                    cache[key] = None
                    return None
                if isinstance(conv, tuple) and isinstance(conv[0], str):  # ("below", bound)
                    # a bound below what the caller needs, not the optimum: kept as the rack's
                    # bound (with the model, for an exact solve if a later split needs one)
                    lp_bound[key] = min(lp_bound.get(key, math.inf), conv[1])
                    subs[key], sub_lag[key] = sub, lag
                    st["rack_cutoffs"] = st.get("rack_cutoffs", 0) + 1
                    return conv
                if conv != "incomplete":
                    st["rack_subproblems"] = st.get("rack_subproblems", 0) + 1
                    st["rack_convolutions"] = st.get("rack_convolutions", 0) + 1
                    share(ri, sub)
                    cache[key] = conv
                    return conv
        o = run_patterns(sub, backend, threads, cap)
        if o["status"] == "infeasible":
            cache[key] = None
            return None
        if o["status"] != "optimal":
            return "incomplete"
        res = (o["value"], [(sub.families[c.family].name, c, v) for c, v in o["chosen"]])
        share(ri, sub)
        cache[key] = res
        st["rack_subproblems"] = st.get("rack_subproblems", 0) + 1
        return res

    subs: dict[Any, PatternModel] = {}
    sub_lag: dict[Any, tuple] = {}  # the converged Lagrangian (bound, duals, maxrc) of those
    lp_bound: dict[Any, float] = {}
    sub_duals: list[tuple[int, Any]] = []  # (rack, cover duals) of every single-rack LP solved

    def rack_bound(ri: int, zc: Column) -> float:
        """Upper bound on rack ri's node + worker co-location with content zc: the LP of its
        single-rack configuration model (tight on these instances, and cheap with node
        tables); a tuple whose racks' bounds do not beat the incumbent is skipped unsolved."""
        key = (sig[ri], zc.key) if list(sig.values()).count(sig[ri]) > 1 else (ri, zc.key)
        if key in cache:
            return -math.inf if cache[key] is None else cache[key][0]
        if key not in lp_bound:
            lean = _RackLP(pm, ri, dict(zc.payload), node_seed)
            got = lean.generate(model.deadline) if lean.ok else "model"
            if got in ("model", "phase1"):
                sub = _rack_sub(pm, ri, dict(zc.payload), info["edges"], model.deadline, node_seed)
                b, sd, _maxrc = sub.generate()
            else:
                sub = None
                b, sd, _maxrc = got
            lp_bound[key] = math.inf if b is None else b
            if sd is not None and b is not None and b > -math.inf:
                # the cover duals of groups absent from zc are arbitrary (no column uses those
                # rows); any mu is valid, and raising those entries only lowers the dual term at
                # zc: take the larger of theirs and the master's link dual
                zd = dict(zc.payload)
                sub_duals.append((ri, np.array([sd.get(("cover", k), 0.0) if zd.get(k, 0) else
                                                max(sd.get(("cover", k), 0.0), duals.get(("link", ri, k), 0.0))
                                                for k in range(len(G))])))
            if b is not None and b > -math.inf:
                sub_lag[key] = (b, sd, _maxrc)
                if sub is not None:
                    subs[key] = sub
                    share(ri, sub)  # its node columns seed the next subproblems' LPs
                else:  # solve_rack builds the model (its tables) if it needs it
                    share_cols(ri, [(lean.classes[c.family][0], c) for c in lean.new_cols])
            st["rack_lp_bounds"] = st.get("rack_lp_bounds", 0) + 1
        return lp_bound[key]

    if len(racks) == 2 and z_best > -math.inf:
        two = _two_rack_search(pm, model, ub, duals, maxrc, rack_f, racks, sig, z_best, best, out, st,
                               rack_bound, solve_rack, sub_duals, scale, info["edges"], unit=info.get("unit", 0.0))
        if two is not None:
            return two
    delta = max(1e-6 * scale, 1e-3 * scale)
    while True:
        for fi in rack_f:
            if not model.enumerate(fi, duals, maxrc[fi] - delta - 1e-7 * scale, cap):
                st["enumeration"] = f"rack contents incomplete at margin {delta:.4g}"
                return out
        cols = {fi: [c for c in model.cols if c.family == fi] for fi in rack_f}
        rcs = {id(c): model.rc(c, duals) for fi in rack_f for c in cols[fi]}
        # tuples: one rack column per rack, summing to n (depth-first over racks)
        tuples: list[tuple[float, list[Column]]] = []

        # the last rack's content is what the others leave: look it up instead of looping
        last = {c.key: c for c in cols[rack_f[-1]]}
        # every other rack's columns as arrays (counts, loss), with the losses' sorted order: a
        # node of the search takes the columns within its slack as a prefix of that order and
        # tests them against what is left at once, then visits them in column order (the order
        # of the plain loop over the columns, which took 25 s of a 40-executor solve on five racks)
        arr = {}
        for fi in rack_f[:-1]:
            Zf = np.zeros((len(cols[fi]), len(n)), dtype=np.int64)
            for j, c in enumerate(cols[fi]):
                for k, q in c.payload:
                    Zf[j, k] = q
            lf = np.array([maxrc[fi] - rcs[id(c)] for c in cols[fi]], dtype=np.float64)
            order = np.argsort(lf, kind="stable")
            arr[fi] = (Zf, lf, order, lf[order])

        # the last rack's contents as mixed-radix codes of their counts (radix n_k + 1), sorted;
        # None when the last rack has no column or the codes would not fit in 62 bits (the lookup
        # per column is used then)
        radix_mult = np.cumprod([1] + [q + 1 for q in n[:-1]], dtype=np.int64)
        last_codes = None
        if len(rack_f) > 1 and cols[rack_f[-1]] and sum(math.log2(q + 1) for q in n) < 62:
            last_codes = np.sort(np.array([sum(q * int(radix_mult[k]) for k, q in c.payload) for c in cols[rack_f[-1]]],
                                          dtype=np.int64))

        # per depth, the summed counts of the racks after it and before the last when each of
        # those has exactly one column (None otherwise)
        mid_sum: list[np.ndarray | None] = []
        for i in range(len(rack_f)):
            mids = [cols[fi] for fi in rack_f[i + 1:-1]]
            mid_sum.append(None if i >= len(rack_f) - 1 or any(len(m) != 1 for m in mids) else
                           np.array([sum(dict(m[0].payload).get(k, 0) for m in mids) for k in range(len(n))], dtype=np.int64))

        def dfs(i: int, left: np.ndarray, slack: float, chosen: list[Column]) -> None:
            fi = rack_f[i]
            same_prev = i > 0 and sig[racks[i]] == sig[racks[i - 1]]
            if i == len(rack_f) - 1:
                c = last.get(tuple((k, int(q)) for k, q in enumerate(left) if q))
                if c is None:
                    return
                loss = maxrc[fi] - rcs[id(c)]
                if loss > slack + 1e-7 * scale or (same_prev and c.key > chosen[-1].key):
                    return  # (identical racks: non-increasing contents)
                tuples.append((ub - (slack - loss), chosen + [c]))
                return
            Zf, lf, order, lsorted = arr[fi]
            within = order[:int(np.searchsorted(lsorted, slack + 1e-7 * scale, side="right"))]
            fits = np.sort(within[(Zf[within] <= left).all(axis=1)])
            if last_codes is not None and mid_sum[i] is not None and len(fits):
                # the racks between this one and the last have one column each (as an empty
                # rack does): the last rack's content for every column here at once, and only
                # the columns whose remainder is a column of the last rack go on
                rest = left - Zf[fits] - mid_sum[i]
                code = rest @ radix_mult
                at = np.minimum(np.searchsorted(last_codes, code), len(last_codes) - 1)
                fits = fits[(rest >= 0).all(axis=1) & (last_codes[at] == code)]
            for j in fits.tolist():
                c = cols[fi][j]
                if same_prev and c.key > chosen[-1].key:
                    continue  # identical racks: non-increasing contents
                dfs(i + 1, left - Zf[j], slack - float(lf[j]), chosen + [c])

        dfs(0, np.array(n, dtype=np.int64), delta, [])
        tuples.sort(key=lambda t: -t[0])
        # every tuple above the incumbent gets its racks' LP bounds (tighter than the Lagrangian
        # one); then tuples are solved best LP bound first, so a good incumbent comes early
        ranked = []
        for tub, tup in tuples:
            if time.monotonic() > (model.deadline or math.inf):
                st["enumeration"] = "time limit in the rack search"
                return out
            tk = tuple(c.key for c in tup)
            if tk in done or tub <= z_best + 1e-7 * scale:
                continue
            lpb = sum(c.value for c in tup) + sum(rack_bound(ri, c) for ri, c in zip(racks, tup))
            ranked.append((min(tub, lpb), tk, tup))
        ranked.sort(key=lambda t: -t[0])
        for tb, tk, tup in ranked:
            if time.monotonic() > (model.deadline or math.inf):
                st["enumeration"] = "time limit in the rack search"
                return out
            if tk in done:
                continue
            done.add(tk)
            if tb <= z_best + 1e-7 * scale:
                st["rack_tuples_pruned"] = st.get("rack_tuples_pruned", 0) + 1
                continue
            st["rack_tuples"] += 1
            res = _solve_tuple(solve_rack, racks, tup, sum(c.value for c in tup))
            if res is None:
                st["enumeration"] = "rack subproblem not proven"
                return out
            total, parts = res
            if total > z_best:
                z_best, best = total, parts
                out.update(status="feasible", value=z_best, chosen=best)
        st["margin"] = delta
        if z_best > -math.inf and ub - z_best <= delta + 1e-7 * scale:
            out.update(status="optimal", bound=z_best)
            return out
        delta = 4 * delta if z_best == -math.inf else min(4 * delta, ub - z_best)


def _two_rack_splits(pm, racks, rack_f, fams, duals, ub, maxrc, s, edges, thr, deadline):
    """The rack-1 contents z whose split's Lagrangian bound exceeds thr (``_splits_above``
    over both racks' caps and limits): (Z, bounds), or why it gave up."""
    from ._nodetable import rack_limits

    G = pm.groups
    K = len(G)
    lims = {ri: rack_limits(pm, ri) for ri in racks}
    caps = {ri: np.array(lims[ri][1]) for ri in racks}
    pi = {ri: np.array([duals.get(("cover", k), 0.0) - duals.get(("link", ri, k), 0.0) for k in range(K)]) for ri in racks}
    cv = [duals.get(fams[fi].conv_row, 0.0) for fi in rack_f]
    r1, r2 = racks
    f1, f2 = rack_f
    # Lagrangian of a split: ub - maxrc_1 - maxrc_2 + rc_1(z) + rc_2(s - z), rc_r(z) = co(z) - pi_r . z - conv_r
    const = ub - maxrc[f1] - maxrc[f2] - float(pi[r2] @ s) - cv[0] - cv[1]
    dem = [[int(round(g.comp.cpu * 1000)) for g in G], [int(round(g.comp.memory_mb * 1000)) for g in G]]
    capr = {ri: [lims[ri][2], lims[ri][3]] for ri in racks}
    return _splits_above(s, np.maximum(0, s - caps[r2]), np.minimum(s, caps[r1]), -(pi[r1] - pi[r2]), edges,
                         const, thr, dem, capr[r1], capr[r2], deadline=deadline)


def _solve_tuple(solve_rack, racks, tup, base: float, *, rack_bound=None, target: float | None = None):
    """Solve every rack's node problem for one tuple of rack contents: (base + their values,
    their node columns), value -inf when a rack has no plan, None when a rack's subproblem was
    not proven (the caller's search cannot claim anything then). With ``target`` (and
    ``rack_bound``), for a caller that needs only totals >= target: each rack is solved with
    the value it must reach given the racks solved before it and the bounds of the others;
    "below" when one cannot reach it (the tuple cannot reach ``target``)."""
    assert (target is None) == (rack_bound is None), "target and rack_bound come together"
    bounds = None if target is None else [rack_bound(ri, c) for ri, c in zip(racks, tup)]
    total, parts = base, []
    for i, (ri, c) in enumerate(zip(racks, tup)):
        r = solve_rack(ri, c, None if target is None else target - total - sum(bounds[i + 1:]))
        if r == "incomplete":
            return None
        if r is None:
            return -math.inf, parts
        if isinstance(r[0], str):  # ("below", bound)
            return "below"
        total += r[0]
        parts.extend(r[1])
    return total, parts


def rack_dual_term(pm, ri: int, mu, lower: bool = False) -> float:
    """sum over rack ri's node classes c of |c| max_y (T_c(y) - mu . y), T_c the node table's
    values (node + worker co-location of count vector y): for any mu, mu . z plus this bounds
    the node + worker co-location of the rack holding exactly z (Lagrangian relaxation of its
    cover rows sum_nodes y = z; y over all vectors of the table, y <= z dropped). With
    ``lower``, a lower bound on it instead, without scanning the tables: each max over the rows
    that were a table's maximum for earlier multipliers (``NodeTable.max_minus_lower``; -inf
    before any)."""
    from ._nodetable import table_sig

    tables = pm.__dict__["_node_tables"]
    tot = 0.0
    for c in node_classes(pm, True):
        if pm.node_rack[c[0]] != ri:
            continue
        t = tables[table_sig(pm, c[0])]
        tot += len(c) * (t.max_minus_lower(mu) if lower else t.max_minus(mu))
    return tot


def _fold_multiplier(part: np.ndarray, zm: np.ndarray, live: np.ndarray, lower: float,
                     exact: Callable[[], float]) -> float | None:
    """One multiplier mu into one side's split bounds B(z) = min over the pool (mu . z + H(mu)):
    part = min(part, zm + H) in place (zm = Z @ mu, H = ``exact()``, the rack's dual term: a
    scan of its node tables), unless zm + ``lower`` (a lower bound on H) already reaches part
    on every ``live`` split: then zm + H >= part there too, no live bound can tighten, and H is
    not computed (returns None; the part of dead splits is left as it is, which only keeps it
    higher: still valid). Otherwise returns H. Nothing is ever lowered below the exact minimum
    (branch net-twelve-2; docs/formulations.md "Two racks")."""
    if lower > -math.inf and bool((zm[live] + lower >= part[live]).all()):
        return None
    h = exact()
    np.minimum(part, zm + h, out=part)
    return h


def _rack_box(pm, ri: int) -> int:
    from ._nodetable import rack_limits

    return math.prod(c + 1 for c in rack_limits(pm, ri)[1])


TWO_RACK_TABLE_LIMIT = 30_000_000  # rack boxes up to this are scanned whole (RackTable), larger ones by _splits_above



def _lex_at_least(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Per row, A >= B lexicographically (the first axis most significant; equal rows count):
    the order of mixed-radix codes, without codes (a box past 2^63 would wrap them)."""
    diff = A.astype(np.int64) - B.astype(np.int64)
    nz = diff != 0
    first = nz.argmax(axis=1)
    return ~nz.any(axis=1) | (diff[np.arange(len(diff)), first] > 0)

def _two_rack_search(pm, model, ub, duals, maxrc, rack_f, racks, sig, z_best, best, out, st,
                     rack_bound, solve_rack, sub_duals, scale, edges,
                     unit: float = 0.0) -> dict | None:
    """Two racks whose contents and node classes all have tables: best-first search over every
    rack-1 content z (rack 2 holds s - z), vectorised over the rack table, with no enumeration
    margin (docs/formulations.md, "Two racks").

    Bound of a split z: min(Lagrangian, co(z) + co(s - z) + B_1(z) + B_2(s - z)), where
    B_r(z) = min over a pool of multipliers mu of (mu . z + sum_c |c| max_y (T_c(y) - mu . y))
    bounds the node + worker co-location of rack r holding z (Lagrangian relaxation of its
    cover rows, T_c = the node table of class c, y over all its vectors: valid for any mu).
    The pool starts with the master's link duals and gains the cover duals of every single-rack
    LP solved, so the bounds of all splits tighten as the search goes. The split of highest bound
    gets its racks' LP bounds; if they beat the incumbent its racks are solved exactly. Optimal
    once no split's bound beats the incumbent; stopped early, the bound is the best left.
    None if not applicable (the caller's enumeration then runs)."""
    from ._nodetable import RackTable, lookup, rack_column, table_sig

    t0 = time.monotonic()
    fams = model.families
    tables = pm.__dict__.get("_node_tables", {})
    classes = {ri: [c for c in node_classes(pm, True) if pm.node_rack[c[0]] == ri] for ri in racks}
    for ri in racks:
        for c in classes[ri]:
            if tables.get(table_sig(pm, c[0])) is None:
                return None
    G = pm.groups
    K = len(G)
    s = np.array([g.size for g in G], dtype=np.int64)
    tol = 1e-7 * scale
    # plan values are multiples of `unit` (1 / lcm of the topologies' executor counts): a split
    # can beat the incumbent only if its bound reaches z_best + unit
    need = unit - tol if unit > 10 * tol else tol
    f1, f2 = rack_f
    same = sig[racks[0]] == sig[racks[1]]
    rts = [fams[fi].table for fi in rack_f]
    # about 2e6 contents a second to build and scan a rack table on the shared 2-core machine
    # (load 6): used when 80 % of the time left covers it and its box is at most box_limit
    left = math.inf if model.deadline is None else model.deadline - time.monotonic()
    box_limit = TWO_RACK_TABLE_LIMIT  # read at call time (tests lower it)
    use_table = all(_rack_box(pm, ri) <= box_limit and (isinstance(rt, RackTable) or _rack_box(pm, ri) <= 2e6 * 0.8 * left)
                    for ri, rt in zip(racks, rts))
    got = None
    if not (use_table and all(isinstance(rt, RackTable) for rt in rts)):
        # no rack table built for pricing: the splits above the incumbent first (branch net-ls:
        # with its corner bound, 100x6x10's 4,262 splits in about 3 s, where building and scanning
        # the rack table of 2.7e7 codes took 9-16 s); the table if that gives up and it fits
        got = _two_rack_splits(pm, racks, rack_f, fams, duals, ub, maxrc, s, edges, z_best + need, model.deadline)
        if isinstance(got, str):
            st["two_rack_splits_gave_up"] = got
            # the table only when the split search stopped at its state cap and the table's
            # build still fits the time now left (the search may have used what was measured)
            left = math.inf if model.deadline is None else model.deadline - time.monotonic()
            if not use_table or got.startswith("time") or not all(
                    isinstance(rt, RackTable) or _rack_box(pm, ri) <= 2e6 * 0.8 * left for ri, rt in zip(racks, rts)):
                return None
            got = None
    if got is None:
        for i, (ri, fi) in enumerate(zip(racks, rack_f)):
            if not isinstance(rts[i], RackTable):  # too big to price with; the search only needs it once
                rts[i] = RackTable(pm, ri, edges, fi, fams[fi].conv_row, box_limit=box_limit)
                if not rts[i].ok:
                    return None
        rt1, rt2 = rts
        # rack 2's row of s - z for every rack-1 content z
        if (rt1.radix == s + 1).all() and (rt2.radix == s + 1).all():
            # both boxes are [0, s] in one radix: c(s - z) = c(s) - c(z), and every z <= s
            c2 = int(s @ rt2.mult) - rt1.codes
            r2 = lookup(rt2.codes, c2)
        else:
            c2 = np.zeros(len(rt1.Z), dtype=np.int64)
            inbox = np.ones(len(rt1.Z), dtype=bool)
            for k in range(K):  # column by column (no K-wide temporaries)
                rest = s[k] - rt1.Z[:, k].astype(np.int64)
                inbox &= (rest >= 0) & (rest < rt2.radix[k])
                c2 += rest * rt2.mult[k]
            r2 = np.where(inbox, lookup(rt2.codes, c2), -1)
            del inbox
        rc1, rc2 = rt1.rc(duals), rt2.rc(duals)
        lag = np.full(len(r2), -np.inf)
        ok = r2 >= 0
        lag[ok] = ub - (maxrc[f1] - rc1[ok]) - (maxrc[f2] - rc2[r2[ok]])
        if same and rt1.Z is rt2.Z:
            lag[rt1.codes < c2] = -np.inf  # interchangeable racks: z >= s - z in code order
        cand = np.flatnonzero(lag > z_best + need)
        del rc1, rc2, c2
        r1c, r2c, lagc = cand, r2[cand], lag[cand]
        Z1, Z2 = rt1.Z[r1c], rt2.Z[r2c]
        val = rt1.val[r1c] + rt2.val[r2c]
        st["two_rack_setup"] = "rack table"
    else:
        # only the splits whose Lagrangian bound beats the incumbent were generated
        Z1, lagc = got
        Z2 = s - Z1
        if same:  # interchangeable racks: z >= s - z in lexicographic (= code) order
            keep = _lex_at_least(Z1, Z2)
            Z1, Z2, lagc = Z1[keep], Z2[keep], lagc[keep]

        def co(Z: np.ndarray) -> np.ndarray:
            out = np.zeros(len(Z))
            for (a, b), w in edges.items():
                out += w * Z[:, a].astype(np.float64) * Z[:, b]
            return out

        val = co(Z1) + co(Z2)
        st["two_rack_setup"] = "splits above the incumbent"
    st["two_rack_splits"] = int(len(lagc))
    st["two_rack_setup_s"] = round(time.monotonic() - t0, 2)
    Zs = [Z1.astype(np.float64), Z2.astype(np.float64)]  # counts, exact in floats
    del Z1, Z2
    node_part = [np.full(len(lagc), np.inf), np.full(len(lagc), np.inf)]

    def column(side: int, i: int) -> Column:
        """The rack column of split i's rack ``side`` (0: z, 1: s - z)."""
        fi = rack_f[side]
        z = Zs[side][i].astype(np.int64)
        return rack_column(fi, racks[side], fams[fi].conv_row, z,
                           float(sum(w * z[a] * z[b] for (a, b), w in edges.items())))

    def H(ri: int, mu: np.ndarray) -> float:
        return rack_dual_term(pm, ri, mu)

    term_key = {ri: tuple(sorted((len(c), id(tables[table_sig(pm, c[0])])) for c in classes[ri])) for ri in racks}

    def add_mu(ri: int, mu: np.ndarray) -> None:
        terms: dict = {}  # racks whose classes have the same sizes and tables have the same dual term
        lows: dict = {}
        for side in (0, 1):
            if racks[side] == ri or sig[racks[side]] == sig[ri]:  # any mu is valid: its term per rack
                tk = term_key[racks[side]]
                zm = Zs[side] @ mu
                if tk in terms:
                    np.minimum(node_part[side], zm + terms[tk], out=node_part[side])
                    continue
                if tk not in lows:
                    lows[tk] = rack_dual_term(pm, racks[side], mu, lower=True)
                got = _fold_multiplier(node_part[side], zm, alive, lows[tk], lambda r=racks[side]: H(r, mu))
                if got is None:
                    st["multipliers_skipped"] = st.get("multipliers_skipped", 0) + 1
                else:
                    terms[tk] = got

    # splits not yet taken, and the one being bounded until its racks' multipliers are in
    # (add_mu screens on these: the split reads node_part[1] after rack 1's multiplier)
    alive = np.ones(len(lagc), dtype=bool)
    for ri in racks:
        add_mu(ri, np.array([duals.get(("link", ri, k), 0.0) for k in range(K)]))

    def grid(b: float) -> float:
        """A bound on plan values, rounded down to their grid (max(z_best, .): a plan exists)."""
        if unit > 10 * tol:
            b = math.floor(b / unit + 1e-6) * unit
        return max(b, z_best)

    used = 0
    st["rack_tuples"] = 0
    stale = True  # the split bounds are recomputed only after new multipliers tightened node_part
    while True:
        if stale:
            bnd = np.where(alive, np.minimum(lagc, val + node_part[0] + node_part[1]), -np.inf)
            stale = False
            if 2 * np.count_nonzero(bnd > z_best + need) < len(bnd):  # drop the splits already beaten
                keep = np.flatnonzero(bnd > z_best + need)
                lagc, val, bnd, alive = lagc[keep], val[keep], bnd[keep], alive[keep]
                Zs = [Zs[0][keep], Zs[1][keep]]
                node_part = [node_part[0][keep], node_part[1][keep]]
        i = int(np.argmax(bnd)) if len(bnd) else -1
        top = -math.inf if i < 0 else float(bnd[i])
        if top <= z_best + need:
            out.update(status="optimal", bound=z_best)
            st["margin"] = 0.0
            return out
        if time.monotonic() > (model.deadline or math.inf):
            st["enumeration"] = "time limit in the two-rack search"
            out["bound"] = grid(min(ub, top))
            return out
        bnd[i] = -np.inf
        tup = [column(0, i), column(1, i)]
        # rack 1's LP bound first; with it (and the multiplier its LP adds to the pool) the
        # split may already be beaten without rack 2's LP (branch net-ls)
        lpb = float(val[i]) + rack_bound(racks[0], tup[0])
        while used < len(sub_duals):
            add_mu(*sub_duals[used])
            used += 1
            stale = True
        if lpb + float(node_part[1][i]) > z_best + need:
            lpb += rack_bound(racks[1], tup[1])
            while used < len(sub_duals):
                add_mu(*sub_duals[used])
                used += 1
        else:
            st["rack_lp_skipped"] = st.get("rack_lp_skipped", 0) + 1
            lpb += float(node_part[1][i])
        alive[i] = False  # its multipliers are in; bnd[i] is already -inf
        if lpb <= z_best + need:
            st["rack_tuples_pruned"] = st.get("rack_tuples_pruned", 0) + 1
            continue
        st["rack_tuples"] += 1
        res = _solve_tuple(solve_rack, racks, tup, float(val[i]), rack_bound=rack_bound, target=z_best + need)
        if res is None:
            st["enumeration"] = "rack subproblem not proven"
            out["bound"] = grid(min(ub, top))
            return out
        if res == "below":
            st["rack_tuples_cut"] = st.get("rack_tuples_cut", 0) + 1
            continue
        total, parts = res
        if total > z_best:
            z_best, best = total, parts
            out.update(status="feasible", value=z_best, chosen=best)
            stale = True  # a chance to drop the splits it beats


def seed_network(pm, model: PatternModel, info: dict, plan: Plan) -> float | None:
    """Add a plan's node and rack contents as columns (a start for the LP and an incumbent);
    returns the plan's co-location value (the master's objective), or None if it does not fit."""
    G = pm.groups
    gidx = {(g.topo.id, g.comp.id, i): k for k, g in enumerate(G) for i in g.members}
    nidx = {n.id: ni for ni, n in enumerate(pm.nodes)}
    fam_of = {f.conv_row: fi for fi, f in enumerate(model.families)}
    multi = len(info["racks"]) > 1
    edges = info["edges"]
    workers: dict[int, dict[Any, dict[int, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for pl in plan.placements:
        k = gidx.get((pl.topology, pl.component, pl.executor))
        if k is None or pl.node not in nidx:
            return None
        workers[nidx[pl.node]][pl.slot][k] += 1

    def co(v: dict[int, int]) -> float:
        return sum(w * v.get(a, 0) * v.get(b, 0) for (a, b), w in edges.items())

    total = model.value_const
    rack_z: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for cls in node_classes(pm, True):
        conv = ("conv", "node", cls[0])
        fi = fam_of[conv]
        ri = pm.node_rack[cls[0]]
        for ni in cls:
            ws = tuple(sorted((tuple(sorted(c.items())) for c in workers[ni].values() if c), reverse=True))
            yv: dict[int, int] = defaultdict(int)
            for c in workers[ni].values():
                for k, q in c.items():
                    yv[k] += q
                    rack_z[ri][k] += q
            val = co(yv) + sum(co(dict(w)) for w in ws)
            total += val
            coefs = {(("link", ri, k) if multi else ("cover", k)): float(q) for k, q in yv.items()}
            coefs[conv] = 1.0
            model.add(Column(fi, val, coefs, ("x", ws), ("x", ws)))
    if multi:
        for ri in info["racks"]:
            z = {k: q for k, q in rack_z[ri].items() if q}
            val = co(z)
            total += val
            coefs = {("cover", k): float(q) for k, q in z.items()}
            coefs.update({("link", ri, k): -float(q) for k, q in z.items()})
            coefs[("conv", "rack", ri)] = 1.0
            key = tuple(sorted(z.items()))
            model.add(Column(fam_of[("conv", "rack", ri)], val, coefs, key, key))
    return total


# --- plans --------------------------------------------------------------------------------------

def network_plan(pm, chosen: list[tuple[str, Column, int]]) -> Plan:
    """Node columns (family name = node{first node of the class}) dealt to their class's nodes."""
    G = pm.groups
    free = {f"node{c[0]}": list(c) for c in node_classes(pm, True)}
    nxt = {k: iter(g.members) for k, g in enumerate(G)}
    out = []
    for name, col, cnt in chosen:
        if name not in free:
            continue  # rack columns carry no placement
        for _ in range(cnt):
            ni = free[name].pop(0)
            ports = list(pm.nodes[ni].slots)
            for w, content in enumerate(col.payload[1]):
                for k, q in content:
                    for _ in range(q):
                        out.append(Placement(topology=G[k].topo.id, component=G[k].comp.id, executor=next(nxt[k]),
                                             node=pm.nodes[ni].id, slot=ports[w]))
    return Plan(placements=out)


def traffic_plan(pm, model: PatternModel, chosen: list[tuple[Column, int]]) -> Plan:
    """Node columns dealt to nodes; each node's executors split evenly over its o[t] workers."""
    G = pm.groups
    classes = {f"node{c[0]}": list(c) for c in node_classes(pm, False)}
    free = {fi: classes[f.name] for fi, f in enumerate(model.families)}
    nodes = []
    for col, cnt in chosen:
        _, ys, os_ = col.payload
        for _ in range(cnt):
            parts = []
            for ti, o in os_:
                if o == 0:
                    continue
                execs = [k for k, q in ys if G[k].ti == ti for _ in range(q)]
                sizes = [len(execs) // o + (1 if i < len(execs) % o else 0) for i in range(o)]
                pos = 0
                for sz in sizes:
                    part: dict[int, int] = {}
                    for k in execs[pos:pos + sz]:
                        part[k] = part.get(k, 0) + 1
                    parts.append(part)
                    pos += sz
            nodes.append((free[col.family].pop(0), parts))
    return deal_workers(pm, nodes)


def deal_workers(pm, nodes: list[tuple[int, list[dict[int, int]]]]) -> Plan:
    """The plan of per-node worker contents: nodes = [(node index, [{group: count} per
    worker])]; each worker takes its node's next slot, each group's executors are taken in
    member order (traffic: ``traffic_plan`` and both phase-2 routes)."""
    G = pm.groups
    nxt = {k: iter(g.members) for k, g in enumerate(G)}
    out = []
    for ni, parts in nodes:
        ports = iter(pm.nodes[ni].slots)
        for part in parts:
            port = next(ports)
            for k, q in part.items():
                for _ in range(q):
                    out.append(Placement(topology=G[k].topo.id, component=G[k].comp.id, executor=next(nxt[k]),
                                         node=pm.nodes[ni].id, slot=port))
    return Plan(placements=out)


def _node_limits(cm, G, y, n, memory: bool) -> None:
    """One node's hard limits on group counts y[k] (CP-SAT, scaled to integers): CPU, and with
    ``memory`` also memory and generic resources; max_per_node per component."""
    cm.Add(sum(int(round(G[k].comp.cpu * 1000)) * y[k] for k in y) <= int(math.floor(n.cpu * 1000 + 1e-6)))
    if memory:
        cm.Add(sum(int(round(G[k].comp.memory_mb * 1000)) * y[k] for k in y) <= int(math.floor(n.memory_mb * 1000 + 1e-6)))
        for r in sorted({r for k in y for r in G[k].comp.resources}):
            cm.Add(sum(int(round(G[k].comp.resources.get(r, 0.0) * 1000)) * y[k] for k in y)
                   <= int(math.floor(n.resources.get(r, 0.0) * 1000 + 1e-6)))
    by_comp: dict[tuple[int, str], list[int]] = defaultdict(list)
    for k in y:
        by_comp[(G[k].ti, G[k].comp.id)].append(k)
    for kk in by_comp.values():
        lim = G[kk[0]].comp.max_per_node
        if lim is not None and len(kk) > 1:
            cm.Add(sum(y[k] for k in kk) <= lim)


CORNER_AXES = 12  # _splits_above bounds the rest by its box corners when at most this many groups are free
CORNER_WORK = 4_000_000  # prefix x corner products per chunk of that bound
LAGRANGE_STEPS = (0.05, 0.2, 1.0)  # multipliers of a rack limit in that bound, times a typical gain per unit of it


def _splits_above_ordered(s, lo, hi, lin, edges, const, thr, dem, cap1, cap2, **kw):
    """``_splits_above`` with the groups taken smallest range (hi - lo) first (branch net-wide):
    the prefixes multiply slowest where the ranges are small, and with ``last_ends`` the
    largest range is the last group, tried at its two ends only. Same results (Z in group
    order). Used by the exact rack pricer (100x9x10: 2-10x less CPU a call than in group
    order); not by the two-rack splits (measured 5.2 s of CPU against 4.4 s there)."""
    s, lo, hi = (np.asarray(a, dtype=np.int64) for a in (s, lo, hi))
    o = np.argsort(hi - lo, kind="stable")
    inv = np.argsort(o)
    e2: dict = defaultdict(float)
    for (a, b), w in edges.items():
        e2[(min(inv[a], inv[b]), max(inv[a], inv[b]))] += w
    dem = np.asarray(dem)[:, o]
    got = _splits_above(s[o], lo[o], hi[o], np.asarray(lin, dtype=np.float64)[o], e2, const, thr, dem, cap1, cap2, **kw)
    if isinstance(got, str):
        return got
    Z, F = got
    return Z[:, inv], F


def _splits_above(s, lo, hi, lin, edges, const, thr, dem, cap1, cap2, state_cap: int = 6_000_000,
                  deadline: float | None = None, both: bool = True, last_ends: bool = False,
                  bound_out: list | None = None):
    """Every rack-1 content z (rack 2 holds s - z) with lo <= z <= hi, both racks within their
    limits (``dem``: per-group demand rows, ``cap1``/``cap2``: the racks' totals) and
    const + f(z) > thr, where f(z) = lin . z + sum_e w_e (z_a z_b + (s_a - z_a)(s_b - z_b)) (the
    Lagrangian of a split, quadratic in z), without scanning the box: the groups are fixed one
    at a time and a prefix is dropped when its fixed part plus an upper bound on the rest does
    not exceed thr. The bound is a sum of separate maxima over the box of the rest (each linear
    term at an end of its range, each stream with a free end at the corners of its free
    factors), so it over-estimates: no split above thr is lost. Returns (Z, f + const), or why
    it gave up (a string: more than ``state_cap`` prefixes at a level, or past ``deadline``).

    ``both=False``: one rack alone (exact rack pricing, ``RackHeuristic.exact``): f(z) =
    lin . z + sum_e w_e z_a z_b, and only ``cap1`` is checked (``cap2`` is ignored).
    ``last_ends`` (with ``both=False``): the last group takes only the ends of its range within
    the limits (lo, and the most that fits after the prefix): f is linear in it, so the best
    content above thr is among the results, but not every content above thr is.

    ``bound_out`` (a list; branch net-seeds): when the search gives up, an upper bound on
    const + f(z) over every z within the limits is appended: max(thr, the largest bound of the
    prefixes the last completed level kept) (a dropped prefix's bound was <= thr or it was over
    a limit; inf when no level was completed)."""
    K = len(s)
    last = math.inf  # the largest bound of the prefixes kept by the last completed level

    def gave_up(why: str) -> str:
        if bound_out is not None:
            bound_out.append(max(float(thr), last))
        return why

    s = np.asarray(s, dtype=np.int64)
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    lin = np.asarray(lin, dtype=np.float64)
    W = np.zeros((K, K))
    for (a, b), w in edges.items():
        W[min(a, b), max(a, b)] += w
    # per stream e = (a < b): h(za, zb) = za zb + (sa - za)(sb - zb); the constant part is kept
    # in h, so f = lin . z + sum_e w_e h_e(z_a, z_b)

    def h(a, b, za, zb):
        if not both:
            return W[a, b] * za * zb
        return W[a, b] * (za * zb + (s[a] - za) * (s[b] - zb))

    pairs = [(a, b) for a in range(K) for b in range(a + 1, K) if W[a, b] != 0.0]
    # bound of the rest at level j: linear terms of free axes, streams with both ends free
    rest_lin = np.zeros(K + 1)
    rest_pair = np.zeros(K + 1)
    for j in range(K - 1, -1, -1):
        rest_lin[j] = rest_lin[j + 1] + max(lin[j] * lo[j], lin[j] * hi[j])
    for j in range(K + 1):
        rest_pair[j] = sum(max(h(a, b, x, y) for x in (lo[a], hi[a]) for y in (lo[b], hi[b]))
                           for a, b in pairs if a >= j)
    # tighter (branch net-ls): f is linear in each z_k with the others fixed (every stream term
    # is bilinear), so the most the free groups j+1..K-1 add over their box is reached at one of
    # its corners (z_k in {lo_k, hi_k}); the stream terms with a fixed first end are linear in
    # the free end (slope and constant per prefix). Per level: the corners C, and what each
    # corner adds on its own (its linear terms and its streams with both ends free).
    corners: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for j in range(K - 1):
        free = np.arange(j + 1, K)
        if len(free) > CORNER_AXES:
            continue
        bitsq = (np.arange(1 << len(free))[:, None] >> np.arange(len(free))[None, :]) & 1
        C = np.where(bitsq == 1, hi[free][None, :], lo[free][None, :]).astype(np.float64)
        cc = C @ lin[free]
        for a, b in pairs:
            if a > j:
                cc += h(a, b, C[:, a - j - 1], C[:, b - j - 1])
        corners[j] = (C, cc)
    Z = np.zeros((1, 0), dtype=np.int16)
    F = np.full(1, float(const))
    use1 = np.zeros((1, len(cap1)))
    dem = np.asarray(dem, dtype=np.float64)  # (rows, K)
    if not both:
        cap2 = [math.inf] * len(dem)
    use2 = np.zeros((1, len(cap2)))
    c1, c2 = np.asarray(cap1, dtype=np.float64) + 1e-9, np.asarray(cap2, dtype=np.float64) + 1e-9
    for j in range(K):
        if deadline is not None and time.monotonic() > deadline:
            return gave_up(f"time limit at group {j}")
        n = len(Z)
        if last_ends and j == K - 1:
            # f is linear in the last group: per prefix only its ends, lo and the most that fits
            room = np.full(n, float(hi[j]))
            for r in range(len(dem)):
                if dem[r, j] > 0:
                    room = np.minimum(room, np.floor((c1[r] - use1[:, r]) / dem[r, j]))
            top = np.flatnonzero(room > lo[j])
            idx = np.concatenate([np.flatnonzero(room >= lo[j]), top])
            v = np.concatenate([np.full(len(idx) - len(top), lo[j]), room[top]]).astype(np.int16)
        else:
            vals = np.arange(lo[j], hi[j] + 1, dtype=np.int16)
            m = len(vals)
            if n * m > state_cap:
                return gave_up(f"{n * m} prefixes at group {j}")
            idx = np.repeat(np.arange(n), m)
            v = np.tile(vals, n)
        Zn = Z[idx]
        Fn = F[idx] + lin[j] * v
        for a, b in pairs:  # streams whose second end is j: now fixed
            if b == j:
                Fn += h(a, b, Zn[:, a].astype(np.float64), v.astype(np.float64))
        u1 = use1[idx] + np.outer(v, dem[:, j])
        u2 = use2[idx] + np.outer(s[j] - v.astype(np.int64), dem[:, j])
        # streams with one end fixed (a <= j < b): linear in z_b, so at an end of b's range
        fits = (u1 <= c1).all(axis=1) & (u2 <= c2).all(axis=1)
        if not fits.all():  # the limits first (cheap): the bound is computed for the rest only
            Zn, v, Fn, u1, u2 = Zn[fits], v[fits], Fn[fits], u1[fits], u2[fits]
        if j in corners:
            C, cc = corners[j]
            fr = slice(j + 1, K)
            base = Fn.copy()
            slope = np.zeros((len(Fn), C.shape[1]))
            for a, b in pairs:
                if a <= j < b:
                    za = (v if a == j else Zn[:, a]).astype(np.float64)
                    h0 = h(a, b, za, 0.0)
                    base += h0
                    slope[:, b - j - 1] += h(a, b, za, 1.0) - h0
            # the limits on the free groups, a . z_free <= left (per prefix), enter by Lagrange:
            # for any lam >= 0 the box maximum of f + lam (left - a . z_free) bounds f on the
            # part of the box within the limit; a few lam per row, the least bound kept
            rows = [(dem[r, fr], c1[r] - u1[:, r]) for r in range(len(dem))]
            if both:
                rows += [(-dem[r, fr], c2[r] - u2[:, r] - float(dem[r, fr] @ s[fr])) for r in range(len(dem))]
            grad = np.abs(lin[fr]) + (W + W.T)[fr].sum(axis=1) * float(max(hi.max(initial=0), s.max(initial=0)))
            lams = []
            for r, (a, _) in enumerate(rows):
                pos = a > 0
                if pos.any() and np.isfinite(rows[r][1]).all():
                    rho = float(np.median(grad[pos] / a[pos]))
                    lams += [(r, rho * q) for q in LAGRANGE_STEPS]
            lams.append((None, 0.0))
            bnd = np.full(len(Fn), np.inf)
            step = max(1, CORNER_WORK // len(cc))
            alive = np.arange(len(Fn))
            for r, lam in lams:  # each multiplier bounds only the prefixes the others kept
                sl, bs = slope[alive], base[alive]
                if r is not None:
                    sl = sl - lam * rows[r][0][None, :]
                    bs = bs + lam * rows[r][1][alive]
                b = np.empty(len(alive))
                for i in range(0, len(alive), step):
                    if deadline is not None and time.monotonic() > deadline:  # a level's bound can take seconds
                        return gave_up(f"time limit at group {j}")
                    b[i:i + step] = bs[i:i + step] + (sl[i:i + step] @ C.T + cc[None, :]).max(axis=1)
                bnd[alive] = np.minimum(bnd[alive], b)
                alive = alive[bnd[alive] > thr]
                if not len(alive):
                    break
        else:
            bnd = Fn + rest_lin[j + 1] + rest_pair[j + 1]
            for a, b in pairs:
                if a <= j < b:
                    za = v if a == j else Zn[:, a]
                    za = za.astype(np.float64)
                    bnd += np.maximum(h(a, b, za, float(lo[b])), h(a, b, za, float(hi[b])))
        keep = bnd > thr
        last = float(bnd[keep].max()) if keep.any() else -math.inf
        Z = np.concatenate([Zn[keep], v[keep, None]], axis=1)
        F, use1, use2 = Fn[keep], u1[keep], u2[keep]
    ok = F > thr
    return Z[ok], F[ok]
