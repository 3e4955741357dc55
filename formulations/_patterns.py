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
from dataclasses import dataclass, field
from typing import Any, Callable

from planner import rates
from planner.plan import Placement, Plan

from ._linmodel import LinModel, Solution, solve_model

EPS = 1e-9


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


class _Collect:
    def __init__(self, pricer: Pricer, fam: int, limit: int):
        self.pricer, self.fam, self.limit = pricer, fam, limit
        self.cols: list[Column] = []


def _solve_cp(cm, time_limit: float, threads: int, enumerate_all: bool = False, cb=None):
    from ortools.sat.python import cp_model

    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = max(time_limit, 0.01)
    if enumerate_all:
        s.parameters.enumerate_all_solutions = True
        s.parameters.num_workers = 1
    else:
        s.parameters.num_workers = threads
        import os
        for kv in os.environ.get("PAT_CP", "").split(","):
            if kv:
                k, v = kv.split("=")
                setattr(s.parameters, k, type(getattr(s.parameters, k))(eval(v)))
    st = s.Solve(cm, cb) if cb is not None else s.Solve(cm)
    return s, st


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
        self.seen: set[tuple[int, Any]] = set()
        self.stats: dict[str, Any] = {"lp_iterations": 0, "columns_generated": 0, "columns_enumerated": 0}

    def left(self) -> float:
        return math.inf if self.deadline is None else self.deadline - time.monotonic()

    def add(self, col: Column) -> bool:
        k = (col.family, col.key)
        if k in self.seen:
            return False
        self.seen.add(k)
        self.cols.append(col)
        return True

    # --- step 1: column generation ----------------------------------------------------------
    def solve_lp(self, phase1: bool = False):
        """Master LP over the columns so far (artificials on every row, penalised); phase1:
        only the artificials count (a feasibility test). Returns (objective, duals, artificials used)."""
        from ortools.linear_solver import pywraplp

        s = pywraplp.Solver.CreateSolver("GLOP")
        inf = s.infinity()
        lam = [s.NumVar(0.0, inf, "") for _ in self.cols]
        big = 1.0 if phase1 else 100.0 * (1.0 + max((abs(c.value) for c in self.cols), default=0.0))
        cons = {}
        obj = s.Objective()
        for r, rhs in self.rows.items():
            cons[r] = s.Constraint(rhs, rhs)
            ap = s.NumVar(0.0, inf, "")
            am = s.NumVar(0.0, inf, "")
            cons[r].SetCoefficient(ap, 1.0)
            cons[r].SetCoefficient(am, -1.0)
            obj.SetCoefficient(ap, -big)
            obj.SetCoefficient(am, -big)
        for v, c in zip(lam, self.cols):
            obj.SetCoefficient(v, 0.0 if phase1 else c.value)
            for r, x in c.coefs.items():
                cons[r].SetCoefficient(v, x)
        obj.SetMaximization()
        st = s.Solve()
        if st != pywraplp.Solver.OPTIMAL:
            return None
        if phase1:
            used_art = obj.Value() < -1e-7
        else:
            used_art = obj.Value() < sum(c.value * v.solution_value() for v, c in zip(lam, self.cols)) - 1e-6
        return obj.Value(), {r: con.dual_value() for r, con in cons.items()}, used_art

    def price(self, fi: int, duals: dict[Any, float], want: int = 8, quick: float | None = None,
              phase1: bool = False) -> tuple[float, list[Column], bool]:
        """Best reduced cost of family fi (an upper bound, rigorous) and improving columns."""
        fam = self.families[fi]
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
        """Column generation to convergence; returns (Lagrangian UB, duals, maxrc per family)."""
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
            # cheap pricing first (short CP-SAT runs); the exact round only when it finds nothing
            for fi in range(len(self.families)):
                _, cols, _ = self.price(fi, duals, quick=0.1)
                for c in cols:
                    if self.rc(c, duals) > 1e-7 * max(1.0, abs(c.value)) and self.add(c):
                        added += 1
            if added:
                self.stats["columns_generated"] += added
                continue
            maxrc: list[float] = []
            exact = True
            for fi in range(len(self.families)):
                ub, cols, ok = self.price(fi, duals)
                exact &= ok
                maxrc.append(ub)
                for c in cols:
                    if self.rc(c, duals) > 1e-7 * max(1.0, abs(c.value)) and self.add(c):
                        added += 1
            self.stats["columns_generated"] += added
            if exact and not used_art:
                ub = sum(duals.get(r, 0.0) * rhs for r, rhs in self.rows.items()) + \
                    sum(f.count * m for f, m in zip(self.families, maxrc))
                if ub < best_ub:
                    best_ub, best = ub, (duals, maxrc)
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


def run_patterns(pm: PatternModel, backend: str, threads: int | None, cap: int = 20000) -> dict[str, Any]:
    """Steps 1-3; returns status ('optimal', 'feasible', 'infeasible', 'unknown'), value, bound,
    and the chosen columns."""
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
    else:
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
                out["bound"] = min(ub, sol2.bound if sol2.bound is not None else ub)
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


def _node_pricer(pm, nodes: list[int], edges, with_workers: bool, traffic: bool) -> Pricer:
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
        cap = pm.node_cap(g, ni)
        if cap > 0:
            y[k] = pr.int_var(0, cap, f"y{k}")
    # node resources
    cm.Add(sum(int(round(G[k].comp.cpu * 1000)) * y[k] for k in y) <= int(math.floor(n.cpu * 1000 + 1e-6)))
    if pm.ras:
        cm.Add(sum(int(round(G[k].comp.memory_mb * 1000)) * y[k] for k in y) <= int(math.floor(n.memory_mb * 1000 + 1e-6)))
        for r in sorted({r for k in y for r in G[k].comp.resources}):
            cm.Add(sum(int(round(G[k].comp.resources.get(r, 0.0) * 1000)) * y[k] for k in y)
                   <= int(math.floor(n.resources.get(r, 0.0) * 1000 + 1e-6)))
    by_comp: dict[tuple[int, str], list[int]] = defaultdict(list)
    for k in y:
        by_comp[(G[k].ti, G[k].comp.id)].append(k)
    for (ti, cid), kk in by_comp.items():
        lim = G[kk[0]].comp.max_per_node
        if lim is not None and len(kk) > 1:
            cm.Add(sum(y[k] for k in kk) <= lim)
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
    for (ka, kb), wgt in edges.items():
        if ka in y and kb in y:
            pr.value.append((pr.product(y[ka], y[kb], f"Y{ka},{kb}"), wgt))
            if with_workers:
                for w in range(nw):
                    if (ka, w) in x and (kb, w) in x:
                        pr.value.append((pr.product(x[(ka, w)], x[(kb, w)], f"X{ka},{kb},{w}"), wgt))

    def decode(val):
        if with_workers:
            ws = [tuple(sorted((k, val(x[(k, w)])) for k in y if (k, w) in x and val(x[(k, w)]) > 0)) for w in range(nw)]
            return ("x", tuple(sorted((w for w in ws if w), reverse=True)))
        return ("y", tuple(sorted((k, val(y[k])) for k in y if val(y[k]) > 0)),
                tuple(sorted((ti, val(own[ti])) for ti in topos)))

    pr.decode = decode
    pr.key = lambda p: p
    return pr


def _rack_pricer(pm, ri: int, edges) -> Pricer:
    """One rack's counts z[g] (RAS): capacity of its nodes in total; linked to its nodes' columns."""
    pr = Pricer()
    cm = pr.cm
    G = pm.groups
    nodes = [ni for ni in range(len(pm.nodes)) if pm.node_rack[ni] == ri and pm.nodes[ni].slots]
    z = {}
    for k, g in enumerate(G):
        cap = min(g.size, sum(pm.node_cap(g, ni) for ni in nodes))
        if cap > 0:
            z[k] = pr.int_var(0, cap, f"z{k}")
    cm.Add(sum(int(round(G[k].comp.cpu * 1000)) * z[k] for k in z) <= int(math.floor(sum(pm.nodes[ni].cpu for ni in nodes) * 1000 + 1e-6)))
    cm.Add(sum(int(round(G[k].comp.memory_mb * 1000)) * z[k] for k in z)
           <= int(math.floor(sum(pm.nodes[ni].memory_mb for ni in nodes) * 1000 + 1e-6)))
    for k in z:
        pr.rows[("cover", k)].append((z[k], 1.0))
        pr.rows[("link", ri, k)].append((z[k], -1.0))
    for (ka, kb), wgt in edges.items():
        if ka in z and kb in z:
            pr.value.append((pr.product(z[ka], z[kb], f"Z{ka},{kb}"), wgt))
    pr.decode = lambda val: tuple(sorted((k, val(z[k])) for k in z if val(z[k]) > 0))
    pr.key = lambda p: p
    return pr


def build_network(pm, deadline, threads) -> tuple[PatternModel, dict, float]:
    """Network: maximise rack + node + worker co-location (each weighted 1/E_t per stream)."""
    G = pm.groups
    index = {(g.ti, g.comp.id): k for k, g in enumerate(G)}
    edges: dict[tuple[int, int], float] = defaultdict(float)
    const = 0.0
    for ti, t in pm.topos:
        e_t = float(t.executor_count)
        for u, downs in rates.downstream(t).items():
            for d in downs:
                ku, kd = index[(ti, u)], index[(ti, d)]
                edges[(min(ku, kd), max(ku, kd))] += 1.0 / e_t
                const += 3.0 * G[ku].size * G[kd].size / e_t
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
            pr = _node_pricer(pm, cls, edges, with_workers=True, traffic=False)
            if multi_rack:
                for k in list(pr.rows):
                    if k[0] == "cover":
                        pr.rows[("link", ri, k[1])] = pr.rows.pop(k)
            pr.rows[conv] = []
            return _with_conv(pr, conv)

        fams.append(Family(f"node{cls[0]}", len(cls), conv, build))
    if multi_rack:
        for ri in racks:
            for k in range(len(G)):
                rows[("link", ri, k)] = 0.0
            conv = ("conv", "rack", ri)
            rows[conv] = 1.0

            def build(ri=ri, conv=conv):
                return _with_conv(_rack_pricer(pm, ri, edges), conv)

            fams.append(Family(f"rack{ri}", 1, conv, build))
    # value = const_reward; the master maximises co-location, the metric is const - value
    return PatternModel(rows, fams, one_rack_const, deadline, 1), {"edges": edges, "const": const, "racks": racks}, const


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


def _rack_sub(pm, ri: int, z: dict[int, int], edges, deadline, seed: list[Column]) -> PatternModel:
    """Rack ri holding exactly z: its node classes as families (single-rack configuration
    model), seeded with node columns already generated for that rack."""
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
            return _with_conv(_node_pricer(pm, cls, edges, with_workers=True, traffic=False), conv)

        fam_of[conv] = len(fams)
        fams.append(Family(f"node{cls[0]}", len(cls), conv, build))
    sub = PatternModel(rows, fams, 0.0, deadline, 1)
    for c in seed:
        conv = next(r for r in c.coefs if r[0] == "conv")
        if conv in fam_of:
            coefs = {("cover", r[2]) if r[0] == "link" else r: x for r, x in c.coefs.items()}
            if all(x <= z.get(r[1], 0) for r, x in coefs.items() if r[0] == "cover"):
                sub.add(Column(fam_of[conv], c.value, coefs, c.payload, c.key))
    return sub


def network_racks(pm, model: PatternModel, info: dict, backend: str, threads, cap: int = 20000) -> dict[str, Any]:
    """Several racks: the configuration LP mixes rack contents, so its bound alone is loose.
    Search the rack contents (z_r, one per rack, summing to the executor counts) whose
    Lagrangian bound UB + sum_r (rc(z_r) - maxrc_r) beats the incumbent, best bound first;
    for each, solve every rack's node problem exactly (single-rack configuration model, whose
    LP is tight). The margin delta of the enumerated rack contents grows until it covers the gap."""
    out: dict[str, Any] = {"status": "unknown", "value": None, "bound": None, "chosen": None}
    ub, duals, maxrc = model.generate()
    out["stats"] = st = model.stats
    if ub is None:
        return out
    if ub == -math.inf:
        out["status"] = "infeasible"
        return out
    G = pm.groups
    n = [g.size for g in G]
    out["bound"] = ub
    scale = max(1.0, abs(ub))
    rack_f = [fi for fi, f in enumerate(model.families) if f.name.startswith("rack")]
    node_seed = [c for c in model.cols if not model.families[c.family].name.startswith("rack")]
    racks = info["racks"]
    # racks with the same node classes (capacities, counts) are interchangeable: z_1 >= z_2 lexicographically
    sig = {ri: tuple(sorted((len(c), pm.nodes[c[0]].cpu, pm.nodes[c[0]].memory_mb, len(pm.nodes[c[0]].slots))
                            for c in node_classes(pm, True) if pm.node_rack[c[0]] == ri)) for ri in racks}
    z_best = -math.inf
    best: list | None = None
    cache: dict[Any, tuple[float, list] | None] = {}
    done: set = set()
    st["rack_tuples"] = 0

    def rack_value(c: Column) -> float:
        return c.value

    def solve_rack(ri: int, zc: Column) -> tuple[float, list] | None | str:
        z = dict(zc.payload)
        key = (sig[ri], zc.key) if list(sig.values()).count(sig[ri]) > 1 else (ri, zc.key)
        if key in cache:
            return cache[key]
        sub = _rack_sub(pm, ri, z, info["edges"], model.deadline, node_seed)
        o = run_patterns(sub, backend, threads, cap)
        if o["status"] == "infeasible":
            cache[key] = None
            return None
        if o["status"] != "optimal":
            return "incomplete"
        res = (o["value"], [(sub.families[c.family].name, c, v) for c, v in o["chosen"]])
        cache[key] = res
        st["rack_subproblems"] = st.get("rack_subproblems", 0) + 1
        return res

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

        def dfs(i: int, left: list[int], slack: float, chosen: list[Column]) -> None:
            if i == len(rack_f):
                if not any(left):
                    tuples.append((ub - slack, list(chosen)))
                return
            fi = rack_f[i]
            for c in cols[fi]:
                loss = maxrc[fi] - rcs[id(c)]
                if loss > slack + 1e-7 * scale:
                    continue
                zz = dict(c.payload)
                if any(zz.get(k, 0) > left[k] for k in range(len(n))):
                    continue
                if i > 0 and sig[racks[i]] == sig[racks[i - 1]] and c.key > chosen[-1].key:
                    continue  # identical racks: non-increasing contents
                dfs(i + 1, [left[k] - zz.get(k, 0) for k in range(len(n))], slack - loss, chosen + [c])

        dfs(0, list(n), delta, [])
        tuples.sort(key=lambda t: -t[0])
        for tub, tup in tuples:
            if time.monotonic() > (model.deadline or math.inf):
                st["enumeration"] = "time limit in the rack search"
                return out
            tk = tuple(c.key for c in tup)
            if tk in done or tub <= z_best + 1e-7 * scale:
                continue
            done.add(tk)
            st["rack_tuples"] += 1
            total = sum(rack_value(c) for c in tup)
            parts = []
            for ri, c in zip(racks, tup):
                r = solve_rack(ri, c)
                if r == "incomplete":
                    st["enumeration"] = "rack subproblem not proven"
                    return out
                if r is None:
                    total = -math.inf
                    break
                total += r[0]
                parts.extend(r[1])
            if total > z_best:
                z_best, best = total, parts
                out.update(status="feasible", value=z_best, chosen=best)
        st["margin"] = delta
        if z_best > -math.inf and ub - z_best <= delta + 1e-7 * scale:
            out.update(status="optimal", bound=z_best)
            return out
        delta = 4 * delta if z_best == -math.inf else min(4 * delta, ub - z_best)


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
    nxt = {k: iter(g.members) for k, g in enumerate(G)}
    out = []
    for col, cnt in chosen:
        _, ys, os_ = col.payload
        for _ in range(cnt):
            ni = free[col.family].pop(0)
            ports = iter(pm.nodes[ni].slots)
            for ti, o in os_:
                if o == 0:
                    continue
                execs = [(k, next(nxt[k])) for k, q in ys if G[k].ti == ti for _ in range(q)]
                sizes = [len(execs) // o + (1 if i < len(execs) % o else 0) for i in range(o)]
                pos = 0
                for sz in sizes:
                    port = next(ports)
                    for k, e in execs[pos:pos + sz]:
                        out.append(Placement(topology=G[k].topo.id, component=G[k].comp.id, executor=e,
                                             node=pm.nodes[ni].id, slot=port))
                    pos += sz
    return Plan(placements=out)
