"""The generalized assignment core, the OR-Library GAP reader, and the solver plumbing that the
throughput and slots models share.

Generalized assignment (GAP): agents i = 1..m with capacities b_i, items j = 1..n; item j on
agent i weighs a_ij and is worth c_ij; every item goes to exactly one agent and an agent's load
is at most its capacity. OR-Library's gap1..gap12 (Cattrysse et al. 1994) quote optima in the
maximisation form (maximise sum c_ij x_ij); Chu and Beasley's types a-d and ``data.csv`` use the
minimisation form. Both are solved here.

The core is one constraint block, written once for CP-SAT and once for PuLP:

    sum_i x_{k,i} = d_k            (each item class k is placed d_k times)
    sum_k a_{k,i} x_{k,i} <= b_i   (agent capacity)

with integer ``x_{k,i}`` counting how many copies of class k go to agent i. A plain GAP has one
class per item and d_k = 1 (x binary). The throughput model (formulations.throughput) builds the
same block with classes = (component, instance count) and a demand d_k that is itself a
variable; see docs/formulations.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from planner.model import InstanceError

CPSAT_WORKERS = 2  # the test machine has 2 cores
# OR-Tools 9.15's presolve can turn an enforced linear row into an unconditional one when the
# row's Boolean coefficients sum past 2^31 (an int accumulator in
# ActivityBoundHelper::RemoveEnforcementThatMakesConstraintTrivial, reached from the
# linear-with-at-most-one inclusion step; github google/or-tools#5293): the model loses
# solutions, so "infeasible" or an optimality proof can be false. Branch cpsat-weighted met it
# (a false bound on a micro throughput instance). Our models scale float data to large integer
# coefficients, and presolve itself extracts enforcement literals from big-M rows, so every
# CP-SAT solve here switches that step off (``cpsat_solver``), not only the models where the
# defect was seen.
CPSAT_PRESOLVE_GUARD = True


def cpsat_solver():
    """A CP-SAT solver with the presolve guard of or-tools#5293 set (``CPSAT_PRESOLVE_GUARD``):
    ``presolve_inclusion_work_limit`` 0. Every CP-SAT solve of the package is made with it."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    if CPSAT_PRESOLVE_GUARD:
        solver.parameters.presolve_inclusion_work_limit = 0
    return solver
MIP_REL_GAP = 1e-7  # both MILP solvers: "optimal" means proven within this relative gap


# --- data ------------------------------------------------------------------------------------

@dataclass
class GapData:
    """A GAP instance: ``cost[i][j]``, ``weight[i][j]`` for agent i and item j, ``capacity[i]``."""

    cost: list[list[int]]
    weight: list[list[int]]
    capacity: list[int]
    name: str = "gap"

    @property
    def m(self) -> int:
        return len(self.capacity)

    @property
    def n(self) -> int:
        return len(self.cost[0]) if self.cost else 0

    def value(self, assign: Sequence[int]) -> int:
        """Total cost of ``assign`` (agent of each item)."""
        return sum(self.cost[i][j] for j, i in enumerate(assign))

    def feasible(self, assign: Sequence[int]) -> bool:
        """Every item on a real agent and every agent within capacity."""
        if len(assign) != self.n or any(not (0 <= i < self.m) for i in assign):
            return False
        load = [0] * self.m
        for j, i in enumerate(assign):
            load[i] += self.weight[i][j]
        return all(load[i] <= self.capacity[i] for i in range(self.m))


def parse_orlib(text: str, name: str = "gap") -> GapData:
    """Parse one instance in OR-Library layout without the leading problem count:
    ``m n``, m rows of n costs, m rows of n weights, m capacities (whitespace-separated)."""
    toks = text.split()
    try:
        vals = [int(t) for t in toks]
    except ValueError:
        bad = next(t for t in toks if not re.fullmatch(r"-?\d+", t))
        raise InstanceError(name, f"GAP file holds a non-integer token {bad!r}") from None
    if len(vals) < 2:
        raise InstanceError(name, "GAP file too short: expected 'm n' first")
    m, n = vals[0], vals[1]
    need = 2 + 2 * m * n + m
    if m < 1 or n < 1:
        raise InstanceError(name, f"GAP sizes must be >= 1, got m={m} n={n}")
    if len(vals) != need:
        raise InstanceError(name, f"GAP file with m={m}, n={n} needs {need} numbers, found {len(vals)}")
    p = 2
    cost = [vals[p + i * n: p + (i + 1) * n] for i in range(m)]
    p += m * n
    weight = [vals[p + i * n: p + (i + 1) * n] for i in range(m)]
    p += m * n
    cap = vals[p: p + m]
    return GapData(cost, weight, cap, name)


def read_orlib(path: str | Path) -> GapData:
    """Read a GAP file of ``../shared/data/gap`` (see its README)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InstanceError(str(p), f"cannot read: {e.strerror or e}") from None
    return parse_orlib(text, p.name)


# --- the assignment core ------------------------------------------------------------------

def cpsat_assignment(model, weights: list[list[int]], capacity: list[int], demand: list[Any],
                     upper: list[list[int]] | None = None, prefix: str = "x"):
    """Add the GAP block to a CP-SAT model; return ``x[k][i]`` (copies of class k on agent i).

    ``weights[k][i]`` and ``capacity[i]`` are integers; ``demand[k]`` an int or a linear
    expression; ``upper[k][i]`` bounds x (0 forbids the pair; default: 1 if demand is 1)."""
    K, M = len(weights), len(capacity)
    x = []
    for k in range(K):
        row = []
        for i in range(M):
            ub = upper[k][i] if upper is not None else (demand[k] if isinstance(demand[k], int) else 1)
            row.append(model.NewIntVar(0, max(0, int(ub)), f"{prefix}[{k},{i}]"))
        x.append(row)
        model.Add(sum(row) == demand[k])
    for i in range(M):
        terms = [weights[k][i] * x[k][i] for k in range(K) if weights[k][i] != 0]
        if terms:
            model.Add(sum(terms) <= capacity[i])
    return x


def pulp_assignment(prob, weights: list[list[float]], capacity: list[float], demand: list[Any],
                    upper: list[list[int]] | None = None, prefix: str = "x"):
    """The same block for a PuLP problem; binary when every bound is 1."""
    import pulp

    K, M = len(weights), len(capacity)
    x = []
    for k in range(K):
        row = []
        for i in range(M):
            ub = upper[k][i] if upper is not None else (demand[k] if isinstance(demand[k], (int, float)) else 1)
            ub = max(0, int(ub))
            cat = "Binary" if ub == 1 else "Integer"
            row.append(pulp.LpVariable(f"{prefix}_{k}_{i}", 0, ub, cat=cat if ub > 0 else "Integer"))
        x.append(row)
        prob += pulp.lpSum(row) == demand[k], f"{prefix}_demand_{k}"
    for i in range(M):
        terms = [weights[k][i] * x[k][i] for k in range(K) if weights[k][i] != 0]
        if terms:
            prob += pulp.lpSum(terms) <= capacity[i], f"{prefix}_cap_{i}"
    return x


# --- solver plumbing ---------------------------------------------------------------------

@dataclass
class Outcome:
    """What a solver said: ``status`` in optimal/feasible/infeasible/unknown, the objective of
    the solution it holds (solver's sense), its proven ``bound`` and wall seconds."""

    status: str
    objective: float | None = None
    bound: float | None = None
    seconds: float = 0.0
    values: dict[str, float] = field(default_factory=dict)


# seconds per nonzero that PuLP and the solver spend after the rows are made, outside the solver's
# clock, on largeCluster03's feasibility model with ackers (5,584,096 nonzeros, session 25): CBC's
# MPS file 44.3 s; HiGHS's addRow calls 81.0 s and 5.2 s past a 1 s limit. Kept back from the
# solver's limit when a deadline is given (``_linmodel.solve_model``; ``run_pulp`` for CBC)
PULP_HANDING_S = {"cbc": 8e-6, "highs": 1.55e-5}


def time_left(time_limit: float | None, deadline: float | None) -> float | None:
    """A solver's own limit: ``time_limit``, cut to what is left before ``deadline`` (a
    ``time.monotonic()`` instant; None: no deadline). May be zero or negative: nothing is left."""
    if deadline is None:
        return time_limit
    left = deadline - time.monotonic()
    return left if time_limit is None else min(time_limit, left)


def run_cpsat(model, time_limit: float | None, seed: int = 0, workers: int = CPSAT_WORKERS,
              deadline: float | None = None):
    """Solve a CP-SAT model; return (Outcome, solver). ``optimal`` only when proven.
    ``deadline``: as for ``run_pulp`` (the limit cut to what is left; ``unknown`` and no
    solver when nothing is)."""
    from ortools.sat.python import cp_model

    time_limit = time_left(time_limit, deadline)
    if deadline is not None and time_limit <= 0:
        return Outcome("unknown", seconds=0.0), None
    solver = cpsat_solver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = int(seed)
    t0 = time.perf_counter()
    st = solver.Solve(model)
    sec = time.perf_counter() - t0
    has_obj = model.HasObjective()
    if st == cp_model.OPTIMAL:
        obj = solver.ObjectiveValue() if has_obj else None
        return Outcome("optimal", obj, obj, sec), solver
    if st == cp_model.FEASIBLE:
        return Outcome("feasible", solver.ObjectiveValue() if has_obj else None,
                       solver.BestObjectiveBound() if has_obj else None, sec), solver
    if st == cp_model.INFEASIBLE:
        return Outcome("infeasible", seconds=sec), solver
    if st == cp_model.MODEL_INVALID:
        raise RuntimeError("CP-SAT: model invalid: " + model.Validate())
    return Outcome("unknown", bound=solver.BestObjectiveBound() if has_obj else None, seconds=sec), solver


@contextlib.contextmanager
def _quiet_stdout():
    """Silence file descriptor 1 (C++ prints bypass sys.stdout)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def _pulp_to_scipy_milp(prob, time_limit: float | None, deadline: float | None = None):
    """Solve a PuLP problem with HiGHS as bundled in SciPy (``scipy.optimize.milp``).

    Why not ``pulp.HiGHS``: it goes through ``highspy``, whose ``libhighs.so.1`` clashes with the
    HiGHS library inside OR-Tools unless their versions match (pyproject pins highspy to OR-Tools'
    HiGHS; docs/architecture.md); SciPy's HiGHS is linked privately and coexists with any.
    SciPy's ``milp`` takes no start solution, and returns no dual bound when stopped before a
    plan: :func:`_pulp_highspy` does both.
    """
    import numpy as np
    import pulp
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    vs = prob.variables()
    idx = {v.name: k for k, v in enumerate(vs)}
    sign = -1.0 if prob.sense == pulp.LpMaximize else 1.0
    c = np.zeros(len(vs))
    for v, a in prob.objective.items():
        c[idx[v.name]] = sign * a
    rows, cols, vals, lo, hi = [], [], [], [], []
    for r, con in enumerate(prob.constraints.values()):
        for v, a in con.items():
            rows.append(r)
            cols.append(idx[v.name])
            vals.append(a)
        rhs = -con.constant
        lo.append(rhs if con.sense in (pulp.LpConstraintGE, pulp.LpConstraintEQ) else -np.inf)
        hi.append(rhs if con.sense in (pulp.LpConstraintLE, pulp.LpConstraintEQ) else np.inf)
    integrality = np.array([1 if v.cat == pulp.LpInteger else 0 for v in vs])
    lb = np.array([-np.inf if v.lowBound is None else v.lowBound for v in vs], dtype=float)
    ub = np.array([np.inf if v.upBound is None else v.upBound for v in vs], dtype=float)
    cons = []
    if rows or prob.constraints:
        A = coo_matrix((vals, (rows, cols)), shape=(len(prob.constraints), len(vs))).tocsr()
        cons = [LinearConstraint(A, np.array(lo), np.array(hi))]
    opts: dict[str, Any] = {"disp": False, "mip_rel_gap": MIP_REL_GAP}
    if deadline is not None:  # the arrays above took their time (seconds for throughput's 20 x 30)
        time_limit = max(time_left(time_limit, deadline), 0.01)
    if time_limit is not None:  # also without a deadline (solve_gap): 4302435 had dropped this line
        opts["time_limit"] = float(time_limit)
    with _quiet_stdout():  # HiGHS prints a debug line from C++ now and then
        res = milp(c, constraints=cons, integrality=integrality, bounds=Bounds(lb, ub), options=opts)
    if res.x is not None:
        for v, x in zip(vs, res.x):
            v.varValue = float(x)
    return res, sign


def _pulp_highspy(prob, time_limit: float | None, deadline: float | None = None, start: bool = False):
    """Solve a PuLP problem with ``pulp.HiGHS`` (highspy) in this process. With ``start``, the
    variables' initial values are handed over as a start solution (``_linmodel._HiGHSWarm``,
    partial: HiGHS completes the values left unset), which HiGHS keeps as its incumbent when it
    is feasible. Unlike SciPy's ``milp`` it reports HiGHS's dual bound also when the time runs out
    before a plan. Returns what :func:`run_pulp` reads of SciPy's ``milp`` result (``status`` 0
    optimal, 1 stopped, 2 infeasible; ``x``; ``mip_dual_bound``) and the sign, as
    :func:`_pulp_to_scipy_milp`. The absolute gap is set far below HiGHS's default (1e-6, a
    relative 1e-6 on the even direct MILP's T' ~ 1), so that ``optimal`` means ``MIP_REL_GAP``."""
    import types

    import pulp

    from ._linmodel import _HiGHSWarm

    if deadline is not None:
        time_limit = max(time_left(time_limit, deadline), 0.01)
    solver = _HiGHSWarm(msg=False, timeLimit=time_limit, gapRel=MIP_REL_GAP, gapAbs=1e-10, threads=1)
    solver.warm = solver.partial = start
    with _quiet_stdout():
        prob.solve(solver)
    found = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    code = 0 if prob.sol_status == pulp.LpSolutionOptimal else 2 if prob.status == pulp.LpStatusInfeasible else 1
    bound = float(prob.solverModel.getInfo().mip_dual_bound)
    # pulp.HiGHS hands HiGHS the negated objective of a maximisation, as SciPy's form does
    return types.SimpleNamespace(status=code, x=[v.varValue for v in prob.variables()] if found else None,
                                 mip_dual_bound=bound), (-1.0 if prob.sense == pulp.LpMaximize else 1.0)


def cbc_infeasible_is_proof(log_text: str, seconds: float, time_limit: float | None) -> bool:
    """Whether CBC's "infeasible" is a proof. CBC stopped by its clock has answered
    'infeasible' (the slots assignment model, Diamond at 200 tuples/s, 5 s limit); its log then
    says "Stopped on time". Only an answer given within the limit, without that line, proves."""
    if "Stopped on time" in log_text:
        return False
    return time_limit is None or seconds < time_limit


# CBC 2.10.3 (the one PuLP bundles) can return a wrong "optimal" answer when its preprocessing
# removes the whole model: on an admission instance (tests/test_milp_status.py) it reports 1
# where the optimum is 3, with the log lines "processed model has 0 rows, 0 columns" and "Cuts at
# root node changed objective from -1 to -1.79769e+308"; the same model without preprocessing,
# and CP-SAT, HiGHS and brute force, give 3. The CBC tracker has such reports (coin-or/Cbc #720,
# #751: the same two log lines, wrong results).
CBC_EMPTIED = "processed model has 0 rows, 0 columns"
# the line ``run_cbc`` adds to the log when the CBC process died (PuLP: "Error while trying to
# execute"): CBC 2.10's binary can die by a segmentation fault when its time limit falls while
# it processes a start solution (seen at 100x10x10's compact network model with a limit of
# 0.35 s, reproduced with its files: exit code 139 at -sec 0.36, none at 0.2, 0.5 or 1-5 s)
CBC_CRASHED = "planner: the CBC process died"
CBC_RERUN = CBC_CRASHED + " with the start solution; run again without it"
# so a start solution is given to CBC only under a limit of at least CBC_WARM_MIN_S seconds (or
# none): session 15 saw the same death at 100x9x10's compact model with limits of 0.61-0.70 s on
# a slower machine (3 of 3 runs; without the start solution 3 of 3 ended normally, with CBC's
# root bound), and there is then no time to run it again
CBC_WARM_MIN_S = 2.0
CBC_COLD = "planner: no start solution for CBC under a limit below CBC_WARM_MIN_S"
# the line ``run_cbc`` adds to the log when it stopped a CBC process that ran past its time limit
# by more than CBC_GRACE_S + CBC_GRACE_SHARE x the limit: CBC 2.10 does not look at its clock
# while it reads and presolves a large model (largeCluster03's feasibility model with ackers,
# 873,264 columns and 876,214 rows: still running after 16 minutes at -sec 1.7, session 25)
CBC_OVERRAN = "planner: CBC ran past its time limit and was stopped"
CBC_GRACE_S, CBC_GRACE_SHARE = 2.0, 0.1
# the CBC runs that died inside the current ``cbc_watch`` (None outside one)
_CBC_DEATHS: contextvars.ContextVar[list | None] = contextvars.ContextVar("cbc_deaths", default=None)


@contextlib.contextmanager
def cbc_watch():
    """Count the CBC processes that die (``run_cbc``) in this block, in this thread: the solve
    drivers of throughput and slots run inside one, so that a result that stops short of a proof
    because CBC died says so (``stop_message``, ``none_found_message``) instead of blaming the
    time limit. Yields the list of deaths (one entry per run that died)."""
    token = _CBC_DEATHS.set([])
    try:
        yield _CBC_DEATHS.get()
    finally:
        _CBC_DEATHS.reset(token)


def watched(solve):
    """``solve()`` (a solve driver's call, returning a Result) inside a ``cbc_watch``; when CBC
    runs died in it, their count goes into the result's details (``cbc_died``); the messages
    say so where it matters (``stop_message``, ``none_found_message``)."""
    with cbc_watch() as died:
        res = solve()
    if died:
        res.details["cbc_died"] = len(died)
    return res


def cbc_deaths() -> int:
    """CBC runs that died so far inside the current ``cbc_watch`` (0 outside one)."""
    got = _CBC_DEATHS.get()
    return len(got) if got else 0


def _died_words(n: int) -> str:
    return f"the CBC process died ({n} run{'s' if n > 1 else ''})"


def stop_message(tail: str) -> str:
    """The message of a result stopped before its proof: the time limit, or, when CBC runs died
    inside the current ``cbc_watch``, that."""
    n = cbc_deaths()
    return f"stopped: {_died_words(n)}; {tail}" if n else f"stopped by the time limit: {tail}"


def none_found_message(what: str) -> str:
    """The message of a result with nothing found (``what``: "allocation", "placement")."""
    n = cbc_deaths()
    return f"{_died_words(n)} before any {what} was found" if n else f"time limit reached before any {what} was found"


def run_cbc(prob, time_limit: float | None, warm: bool = False, **options: Any) -> tuple[str, float]:
    """Solve ``prob`` with PuLP's CBC; return CBC's log and the seconds taken. When CBC's
    preprocessing emptied the model (``CBC_EMPTIED``), whose answer is not to be trusted, the
    model is solved again with ``preprocess off`` in the time left (at least 1 s); the result
    left in ``prob`` and the log returned are the second run's. When the CBC process dies
    (``CBC_CRASHED`` is then in the log returned, and ``prob`` holds no solution), a run with a
    start solution is made again without it if at least 1 s is left (``CBC_RERUN`` in the log); under a
    limit below ``CBC_WARM_MIN_S`` none is given (``CBC_COLD`` in the log). ``options``: further
    ``PULP_CBC_CMD`` arguments (threads, gapRel, gapAbs); threads <= 1 runs CBC's serial code."""
    import pulp

    if options.get("threads") is not None and options["threads"] <= 1:
        # CBC's serial code, not its threaded one with one thread: with "threads 1" CBC 2.10.3
        # (PuLP's) now and then waits 10 s for its one worker thread to start ("Thread 0 used 0
        # times, waiting to start 10.000144"; wall 10.01 s for 0.01 s of CPU): 10-15 of 575
        # runs on tiny slots models (session 20), none of 575 in serial mode
        options = {k: v for k, v in options.items() if k != "threads"}
    t0 = time.perf_counter()

    def left(floor: float) -> float | None:
        return None if time_limit is None else max(time_limit - (time.perf_counter() - t0), floor)

    def once(limit, extra, start: bool):
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "cbc.log"
            cmd = _watched_cbc_cmd(msg=False, timeLimit=limit, warmStart=start, logPath=str(log), options=extra, **options)
            dog = _CbcWatchdog(cmd, limit)
            try:
                prob.solve(cmd)
            except pulp.PulpSolverError as e:
                if "Error while trying to execute" not in str(e):
                    raise  # not a run that died (no CBC binary, ...): an error
                if dog.stop():
                    return (log.read_text() if log.exists() else "") + f"\n{CBC_OVERRAN}\n"
                deaths = _CBC_DEATHS.get()
                if deaths is not None:
                    deaths.append(start)  # (only their number is read)
                return (log.read_text() if log.exists() else "") + f"\n{CBC_CRASHED}\n"
            finally:
                dog.stop()
            return log.read_text() if log.exists() else ""

    cold = warm and time_limit is not None and time_limit < CBC_WARM_MIN_S
    if cold:
        warm = False
    text = once(time_limit, [], warm) + (f"\n{CBC_COLD}\n" if cold else "")
    if CBC_CRASHED in text and warm and (left(0.0) is None or left(0.0) >= 1.0):
        text = once(left(1.0), [], False) + f"\n{CBC_RERUN}\n"
    if CBC_EMPTIED in text:
        text = once(left(1.0), ["preprocess off"], warm)
    return text, time.perf_counter() - t0


def _watched_cbc_cmd(**kw):
    """PuLP's CBC command (``pulp.PULP_CBC_CMD(**kw)``) that remembers the names of its temporary
    files (``watch_files``), so that ``_CbcWatchdog`` can tell its CBC process from any other."""
    import pulp

    cmd = pulp.PULP_CBC_CMD(**kw)
    cmd.watch_files = ()
    create = cmd.create_tmp_files

    def create_tmp_files(name, *args):
        files = tuple(create(name, *args))  # PuLP returns a generator
        cmd.watch_files = tuple(str(f) for f in files)
        return files

    cmd.create_tmp_files = create_tmp_files
    return cmd


class _CbcWatchdog:
    """Kills the CBC process of ``cmd`` once it runs CBC_GRACE_S + CBC_GRACE_SHARE x ``limit``
    seconds past ``limit`` (counted from now, so PuLP's writing of the model counts too). The
    process is found in /proc as a child of this one whose command line names ``cmd``'s model
    file; without /proc (not Linux) nothing is watched."""

    def __init__(self, cmd, limit: float | None):
        import threading

        self.cmd, self.killed = cmd, False
        self._done = threading.Event()
        if limit is None or not os.path.isdir("/proc"):
            return
        self._until = time.monotonic() + limit + CBC_GRACE_S + CBC_GRACE_SHARE * limit
        threading.Thread(target=self._watch, daemon=True, name="cbc-watchdog").start()

    def _watch(self) -> None:
        import signal

        if self._done.wait(max(self._until - time.monotonic(), 0.0)):
            return
        # PuLP may still be writing the model (60 s for largeCluster03's): look again until CBC
        # has started and is stopped, or the run ends
        while not self._done.is_set():
            names = [f for f in self.cmd.watch_files if f.endswith(".mps")]
            for pid in _children():
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        args = f.read().decode(errors="replace").split("\0")
                except OSError:
                    continue
                if names and names[0] in args:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                        self.killed = True
                        return
            self._done.wait(0.25)

    def stop(self) -> bool:
        """End the watch; whether the watchdog killed the process."""
        self._done.set()
        return self.killed


def _children() -> list[int]:
    """The pids of this process's children (from /proc)."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(me):
            out.append(int(entry))
    return out


def run_pulp(prob, solver: str, time_limit: float | None, warm: bool = False,
             deadline: float | None = None, highspy: bool = False) -> Outcome:
    """Solve a PuLP problem with ``cbc`` or ``highs``. The status says ``optimal`` only when the
    solver proved it (PuLP's ``LpStatus`` says Optimal for CBC stopped by its time limit with a
    solution; ``sol_status`` tells which). ``deadline`` (``time.monotonic()``): the limit is cut
    to what is left of it, measured when the solver starts, so the time the caller spent
    building ``prob`` counts; ``unknown`` at once when nothing is left. HiGHS runs through
    SciPy's ``milp`` unless ``highspy`` or ``warm`` (a start needs highspy): then in this process
    through highspy (:func:`_pulp_highspy`), which also keeps its dual bound when stopped before
    a plan."""
    import pulp

    maximise = prob.sense == pulp.LpMaximize
    t0 = time.perf_counter()
    time_limit = time_left(time_limit, deadline)
    if deadline is not None and time_limit <= 0:
        return Outcome("unknown", seconds=0.0)
    if solver == "cbc" and deadline is not None:
        # CBC's MPS file is written and read outside CBC's clock: keep that back, and do not start
        # CBC when nothing would be left (hetero 20 x 30's direct model, 176,521 columns, given
        # 1.6 s, ran 3.7 s until the watchdog stopped it, session 27)
        time_limit -= PULP_HANDING_S["cbc"] * sum(len(c) for c in prob.constraints.values())
        if time_limit <= 0:
            return Outcome("unknown", seconds=time.perf_counter() - t0)
    highspy = solver == "highs" and (highspy or warm)
    if highspy and deadline is not None:
        # pulp.HiGHS hands the rows to highspy outside HiGHS's clock (hetero 8 x 10's direct MILP,
        # 24,338 nonzeros: 0.28 s past its limit, session 53): keep that back, as _linmodel does
        time_limit -= PULP_HANDING_S["highs"] * sum(len(c) for c in prob.constraints.values())
        if time_limit <= 0:
            return Outcome("unknown", seconds=time.perf_counter() - t0)
    if solver == "cbc":
        text, sec = run_cbc(prob, time_limit, warm, gapRel=MIP_REL_GAP)  # serial CBC (run_cbc)
        bound = None
        mt = re.search(r"best possible\s+(-?[\d.eE+-]+)", text)
        if mt:
            bound = float(mt.group(1))
            # CBC minimises internally: for a maximisation it prints the negated values
            if maximise and "Objective value" not in text:
                pass
        ss = prob.sol_status
        obj = pulp.value(prob.objective) if ss in (1, 2) else None
        if ss == 1 and prob.status == 1:
            return Outcome("optimal", obj, obj, sec)
        if ss == 2:
            if bound is not None and maximise and obj is not None and bound < obj:
                bound = -bound  # CBC's log shows the minimisation form
            return Outcome("feasible", obj, bound, sec)
        if prob.status == -1:
            if not cbc_infeasible_is_proof(text, sec, time_limit):
                return Outcome("unknown", seconds=sec)
            return Outcome("infeasible", seconds=sec)
        if prob.status == -2:
            return Outcome("unknown", seconds=sec)
        return Outcome("unknown", bound=bound, seconds=sec)
    if solver == "highs":
        res, sign = (_pulp_highspy(prob, time_limit, deadline, start=warm) if highspy
                     else _pulp_to_scipy_milp(prob, time_limit, deadline))
        sec = time.perf_counter() - t0
        bound = getattr(res, "mip_dual_bound", None)
        bound = sign * bound if bound is not None and math.isfinite(bound) else None
        obj = pulp.value(prob.objective) if res.x is not None else None
        if res.status == 0:
            # HiGHS's proven bound: it stops at a relative gap of MIP_REL_GAP or at its absolute
            # gap (1e-6 by default through SciPy), which on the even direct MILP's T' ~ 1 is a
            # relative 1e-6, ten times MIP_REL_GAP; the incumbent's value is no bound there
            return Outcome("optimal", obj, bound if bound is not None and obj is not None else obj, sec)
        if res.status == 2:
            return Outcome("infeasible", seconds=sec)
        if res.x is not None:
            return Outcome("feasible", obj, bound, sec)
        return Outcome("unknown", bound=bound, seconds=sec)
    raise ValueError(f"unknown MILP solver {solver!r}")


# --- plain GAP -----------------------------------------------------------------------------

@dataclass
class GapSolution:
    status: str
    value: float | None
    bound: float | None
    assign: list[int] | None
    seconds: float
    message: str = ""  # why a solve stopped short of a proof ("" when it did not, or proved)


def solve_gap(data: GapData, sense: str = "min", solver: str = "cpsat", time_limit: float | None = None,
              seed: int = 0) -> GapSolution:
    """Solve a GAP exactly (``sense`` "min" or "max") with ``cpsat``, ``highs`` or ``cbc``.
    The value and bound are in the asked sense."""
    if sense not in ("min", "max"):
        raise InstanceError("sense", f"must be 'min' or 'max', got {sense!r}")
    m, n = data.m, data.n
    # classes = items (d = 1); weights[k][i] = a_ij
    w = [[data.weight[i][j] for i in range(m)] for j in range(n)]
    upper = [[1 if data.weight[i][j] <= data.capacity[i] else 0 for i in range(m)] for j in range(n)]
    if solver == "cpsat":
        from ortools.sat.python import cp_model

        model = cp_model.CpModel()
        x = cpsat_assignment(model, w, list(data.capacity), [1] * n, upper)
        obj = sum(data.cost[i][j] * x[j][i] for j in range(n) for i in range(m))
        (model.Minimize if sense == "min" else model.Maximize)(obj)
        out, sol = run_cpsat(model, time_limit, seed)
        assign = None
        if out.status in ("optimal", "feasible"):
            assign = [next(i for i in range(m) if sol.Value(x[j][i])) for j in range(n)]
        return GapSolution(out.status, out.objective, out.bound, assign, out.seconds, _gap_message(out.status))
    import pulp

    prob = pulp.LpProblem(data.name.replace("-", "_"), pulp.LpMinimize if sense == "min" else pulp.LpMaximize)
    x = pulp_assignment(prob, w, list(data.capacity), [1] * n, upper)
    prob += pulp.lpSum(data.cost[i][j] * x[j][i] for j in range(n) for i in range(m))
    with cbc_watch():
        out = run_pulp(prob, solver, time_limit)
        message = _gap_message(out.status)
    assign = None
    if out.status in ("optimal", "feasible"):
        assign = [max(range(m), key=lambda i: x[j][i].varValue or 0) for j in range(n)]
    val = float(data.value(assign)) if assign is not None else None
    return GapSolution(out.status, val, out.bound, assign, out.seconds, message)


def _gap_message(status: str) -> str:
    """The message of a GAP solve by the status it ended with (inside its ``cbc_watch``): why it
    stopped short of a proof, "" when it did not."""
    if status == "feasible":
        return stop_message("the assignment is feasible, its optimality not proven")
    if status == "unknown":
        return none_found_message("assignment")
    return ""
