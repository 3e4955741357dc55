"""Exact models for the ``throughput`` problem (Nasiri et al., J Big Data 2023).

One topology; choose each component's instance count N_c >= 1 and how many of its instances
go to each machine (n_cj); all instances on a machine share its one worker (first port).
An instance of c on machine j receiving r tuples/s uses r e_cj / 10 + MET_cj CPU points; the
machine's total must stay within its ``cpu``. Maximise the topology input rate R.

* ``even`` routing (Storm's shuffle): every instance of c receives g_c R / N_c (g_c = tuples
  processed by c per input tuple). For a fixed R the question "is there a placement?" is a
  generalized assignment with item classes (c, k) = "an instance of c when N_c = k", weight
  R a_cj g_c / k + MET_cj on machine j (a_cj = e_cj / 10): the GAP core of formulations.gap.
  R is found by bisection on these feasibility models, jumping to the exact rate of every
  placement found (closed form), until the lowest infeasible R is within a relative 1e-5 of the
  best placement's rate. CP-SAT gets integer weights rounded so that its model is a relaxation
  (an infeasible answer is a proof); the placements it returns are rated exactly.
* ``weighted`` routing (the best split of each component's rate over its instances): one
  instance per (component, machine) used is enough (more only add MET), so the decision is the
  support b_cj. MILP: max R with flows x_cj <= g_c R_ub b_cj, a direct model. CP-SAT has no
  continuous variables: it searches over supports only, at probe rates R just above the
  incumbent, and every support whose rate LP falls short of R is cut off by a certificate from
  that LP, checked in exact arithmetic (formulations/_tputcuts.py, a logic-based Benders loop);
  "infeasible" with all cuts proves R out of reach. (Option ``weighted_cuts=False``: the former
  bisection with flows in rounded integer units.) Tolerance: relative 1e-5 (CP-SAT's cut loop
  and the count-vector search; CP-SAT's bisections, even routing and ``weighted_cuts=False``,
  accept up to 1e-4 for their rounded weights), the MILP's own optimality gap 1e-7 (MILP).

Even routing starts (option ``weighted_start``, default on) from the weighted-routing optimum:
its bound bounds the even optimum from above and its split, rounded, is the first incumbent.
Count classes that cannot sustain the rate at hand are dropped (``class_caps``, ``lp_filter``);
identical machines' count vectors are ordered lexicographically (symmetry breaking). The start
is then polished (option ``polish``, default on): a descent over the instance-count vector N in
which each N is re-optimised by a small fixed-count integer program (``polish_counts`` over
``best_for_counts``, whose probes are ``fixed_n_probe``).

Then (option ``count_search``, default on) the count-vector search of ``_tputenum`` tries to
prove the incumbent when random dives estimate that it fits in the time left; if it does, the
back end's own model is not run. Otherwise, with option ``lns`` (default off: measured no
clear gain at 60 s, session 49), a neighbourhood search over count vectors (``lns_counts``: one
or two components' counts freed at a time, each neighbourhood one integer program,
``counts_probe``) improves the incumbent first. CP-SAT's bisection probes just above the
incumbent first.

``max_instances`` (default 10, Nasiri's example) caps the instances on one machine, which makes
the even-routing search space finite: N_c <= sum of the caps of c's machines.
docs/formulations.md gives the mathematics.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

from planner import rates
from planner.model import Instance, InstanceError
from planner.plan import Placement, Plan, Result, Status
from planner.registry import register

from . import gap as core

TOL = 1e-5  # relative: optimal means best rate >= bound / (1 + TOL)
MILP_SYM_MAX = 10**5  # largest weight in the MILPs' symmetry-breaking key (numerics)
SHARE_UNITS = 10**6  # CP-SAT weighted routing: flows in 1/D of a component's rate
OPTIONS = {"hint": None, "max_instances": 10, "weighted_start": True, "polish": True, "count_search": True,
           "weighted_cuts": True, "lns": False, "highs_start": False}
POLISH_PROBE = 1.0  # seconds: one fixed-count probe in the start polish
POLISH_SHARE = 0.2  # at most this share of the time left goes to the polish
POLISH_MAX = 30.0  # seconds of polish when there is no time limit
LNS_SHARE = 0.3  # even routing: the neighbourhood search over count vectors' share of the time left ...
LNS_MAX = 30.0  # ... or its seconds without a time limit
LNS_PROBE = 2.0  # seconds: one of its probes at most
WEIGHTED_SHARE = 0.3  # at most this share of the time left goes to the weighted-routing bound
GALLOP_SHARE = 0.3  # CP-SAT, even routing: a galloping probe's share of the time left
PROOF_FIRST = True  # ... and after the gallop's first infeasible probe, the proof probe next (same share)
WEIGHTED_GROWTH = 4  # CP-SAT, weighted routing with cuts: the probe step's growth after a feasible probe
COUNT_SEARCH_SHARE = 0.7  # even routing: the count-vector search's share of the time left ...
COUNT_SEARCH_MAX = 60.0  # ... or its seconds without a time limit
COUNT_SEARCH_DIVES = 32  # random dives that estimate its size first
COUNT_SEARCH_LPS = 10**6  # never tried when the estimate says more LPs than this
COUNT_SEARCH_RANGE = 1e9  # nor when the count ranges left multiply to more than this (no dives)
COUNT_SEARCH_COST = 0.75  # predicted seconds = estimated LPs x (seconds per LP in the dives) x this
SOURCE = "Nasiri et al., J Big Data 2023 (problem statement); exact models in docs/formulations.md"


# --- the statement as data ------------------------------------------------------------------

@dataclass
class TPData:
    """Everything the models need, in index form: components c, machines j."""

    topology_id: str
    comps: list[str]
    machines: list[str]
    port: list[int]
    cap: list[float]
    gain: list[float]
    a: list[list[float]]  # a[c][j] = e_cj / 10, CPU points per tuple/s; nan if not allowed
    met: list[list[float]]
    kmax: list[list[int]]  # max instances of c on j (0 = forbidden)
    K: int  # max instances on one machine
    incompatible: list[tuple[int, int]]
    routing: str
    ident: list[tuple]  # machine signature for symmetry breaking

    @property
    def C(self) -> int:
        return len(self.comps)

    @property
    def J(self) -> int:
        return len(self.machines)

    def nmax(self, c: int) -> int:
        return sum(min(self.kmax[c][j], self.K) for j in range(self.J))

    def allowed(self, c: int, j: int) -> bool:
        return self.kmax[c][j] > 0


def prepare(instance: Instance, max_instances: int = 10) -> TPData:
    """Check that the instance states a throughput problem and index it.

    Raises InstanceError for bad input (several topologies, no spout, ...)."""
    if not isinstance(max_instances, int) or isinstance(max_instances, bool) or max_instances < 1:
        raise InstanceError("options.max_instances", f"must be an integer >= 1, got {max_instances!r}")
    if len(instance.topologies) != 1:
        raise InstanceError("topologies", f"throughput places one topology; the instance has {len(instance.topologies)}")
    t = instance.topologies[0]
    for si, s in enumerate(t.streams):
        if s.grouping in ("all", "global"):
            raise InstanceError(f"topologies[0].streams[{si}].grouping",
                                f"grouping {s.grouping!r} is not modelled by the exact throughput models "
                                "(they assume the rate splits evenly or by weight over the receiving instances)")
    gains = rates.component_gains(t)
    if not any(g > 0 for g in gains.values()):
        raise InstanceError("topologies[0].components", "no spout: no component processes tuples, the rate is unbounded")
    comps = [c.id for c in t.components]
    nodes = [n for n in sorted(instance.cluster.nodes, key=lambda n: n.id) if n.slots]
    if not nodes:
        raise InstanceError("cluster", "no node has a worker slot")
    a, met, kmax = [], [], []
    for comp in t.components:
        ra, rm, rk = [], [], []
        for n in nodes:
            prof = instance.profile(rates.profile_key(comp), n.type)
            ok = prof is not None
            if comp.site is not None and n.site != comp.site:
                ok = False
            if comp.nodes is not None and n.id not in comp.nodes:
                ok = False
            k = max_instances
            if comp.max_per_node is not None:
                k = min(k, comp.max_per_node)
            if comp.id in comp.incompatible:
                k = min(k, 1)
            ra.append(prof.exec_ms / 10.0 if ok else math.nan)
            rm.append(prof.overhead if ok else math.nan)
            rk.append(k if ok else 0)
        a.append(ra)
        met.append(rm)
        kmax.append(rk)
    inc = set()
    idx = {c: i for i, c in enumerate(comps)}
    for comp in t.components:
        for other in comp.incompatible:
            if other != comp.id:
                inc.add(tuple(sorted((idx[comp.id], idx[other]))))
    ident = [(n.type, n.cpu, n.site, tuple(a[c][j] if not math.isnan(a[c][j]) else -1 for c in range(len(comps))),
              tuple(met[c][j] if not math.isnan(met[c][j]) else -1 for c in range(len(comps))),
              tuple(kmax[c][j] for c in range(len(comps)))) for j, n in enumerate(nodes)]
    return TPData(t.id, comps, [n.id for n in nodes], [n.slots[0] for n in nodes], [n.cpu for n in nodes],
                  [gains[c] for c in comps], a, met, kmax, max_instances, sorted(inc), t.routing, ident)


# --- rating a placement exactly -------------------------------------------------------------

def even_rate(d: TPData, n: list[list[int]]) -> float:
    """Sustainable input rate of counts ``n[c][j]`` under even routing (closed form);
    -1 if the overheads alone overload a machine."""
    rates = _rate_key(d, n)
    return rates[0] if rates else math.inf


def overloaded(d: TPData, b: list[list[int]]) -> int | None:
    """The first machine whose instances' overheads alone (b[c][j] instances of c, MET each)
    exceed its capacity (by more than a relative 1e-9), or None."""
    for j in range(d.J):
        fixed = sum(b[c][j] * d.met[c][j] for c in range(d.C) if b[c][j])
        if d.cap[j] - fixed < -1e-9 * max(1.0, d.cap[j]):
            return j
    return None


def weighted_lp(d: TPData, b: list[list[int]]) -> tuple[float, list[float] | None, list[float] | None]:
    """The rate LP of ``b[c][j]`` (instances per pair) under weighted routing, by SciPy's HiGHS:
    max R over flows x_cj >= 0 on b's pairs, sum_j x_cj = g_c R, sum_c a_cj x_cj <= cap_j - the
    overheads. Returns (rate, u, v) with the LP's duals u_j = dR/dcap_j >= 0 and v_c (the rate
    rows'); rate -1 and no duals when the overheads alone overload a machine (``overloaded``) or
    the LP is not solved, inf when it is unbounded."""
    from scipy.optimize import linprog

    if overloaded(d, b) is not None:
        return -1.0, None, None
    pairs = [(c, j) for c in range(d.C) for j in range(d.J) if b[c][j]]
    nv = 1 + len(pairs)
    a_eq = [[0.0] * nv for _ in range(d.C)]
    a_ub = [[0.0] * nv for _ in range(d.J)]
    for c in range(d.C):
        a_eq[c][0] = -d.gain[c]
    for k, (c, j) in enumerate(pairs):
        a_eq[c][1 + k] = 1.0
        a_ub[j][1 + k] = d.a[c][j]
    b_ub = [max(0.0, d.cap[j] - sum(b[c][j] * d.met[c][j] for c in range(d.C) if b[c][j])) for j in range(d.J)]
    cost = [-1.0] + [0.0] * len(pairs)
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[0.0] * d.C, bounds=[(0, None)] * nv, method="highs")
    if res.status == 3:
        return math.inf, None, None
    if res.status != 0:
        return -1.0, None, None
    # linprog minimises -R, so its marginals are d(-R)/d(rhs): u_j = dR/dcap_j, v_c the row's marginal
    u = [max(0.0, -float(x)) for x in res.ineqlin.marginals]
    v = [float(x) for x in res.eqlin.marginals]
    return float(res.x[0]), u, v


def weighted_rate(d: TPData, b: list[list[int]]) -> float:
    """Best input rate of the support ``b[c][j]`` (instances per pair) under weighted routing
    (``weighted_lp``); -1 if the overheads alone overload a machine."""
    return weighted_lp(d, b)[0]


def rate_of(d: TPData, n: list[list[int]]) -> float:
    return even_rate(d, n) if d.routing == "even" else weighted_rate(d, n)


def structurally_ok(d: TPData, n: list[list[int]]) -> bool:
    """Counts respect the caps, pins, incompatibilities and N_c >= 1."""
    for c in range(d.C):
        if sum(n[c]) < 1:
            return False
        for j in range(d.J):
            if n[c][j] < 0 or n[c][j] > d.kmax[c][j]:
                return False
    for j in range(d.J):
        if sum(n[c][j] for c in range(d.C)) > d.K:
            return False
        for c1, c2 in d.incompatible:
            if n[c1][j] and n[c2][j]:
                return False
    return True


def upper_bound(d: TPData) -> float:
    """R_ub: the LP with every allowed pair, no overheads, no instance caps (valid for both
    routings: any even or weighted placement gives a feasible flow)."""
    full = [[1 if d.allowed(c, j) else 0 for j in range(d.J)] for c in range(d.C)]
    saved = d.met
    d.met = [[0.0 if d.allowed(c, j) else math.nan for j in range(d.J)] for c in range(d.C)]
    try:
        r = weighted_rate(d, full)
    finally:
        d.met = saved
    if r >= 0:
        return r
    # the LP was not solved (weighted_rate's -1: it cannot be infeasible, R = 0 is a point):
    # the CPU bound instead, every unit of input rate needing sum_c g_c min_j a_cj CPU points
    need = sum(d.gain[c] * min(d.a[c][j] for j in range(d.J) if d.allowed(c, j)) for c in range(d.C)
               if any(d.allowed(c, j) for j in range(d.J)))
    return sum(d.cap) / need if need > 0 else math.inf


def machine_groups(d: TPData) -> list[list[int]]:
    """The groups of identical machines (same signature ``d.ident``: type, capacity, site,
    profiles and caps), each in machine order, in the order of their first machine."""
    groups: dict[tuple, list[int]] = {}
    for j, key in enumerate(d.ident):
        groups.setdefault(key, []).append(j)
    return list(groups.values())


def sym_pairs(d: TPData) -> list[tuple[int, int]]:
    """(j, j') for consecutive machines of each group of identical machines: any placement can
    be permuted within a group, so the models may ask each group's count vectors to be sorted
    by one key."""
    return [(g[i], g[i + 1]) for g in machine_groups(d) for i in range(len(g) - 1)]


def sym_weights(d: TPData, top: int | None, limit: int) -> list[int]:
    """Weights w_c of the sort key sum_c w_c n_cj: powers of B = (largest count) + 1, component 0
    most significant, which orders count vectors lexicographically; components whose weight
    would pass ``limit`` get 0 (the key is then lexicographic on a prefix, still valid)."""
    B = (d.K if top is None else top) + 1
    w, v = [0] * d.C, 1
    for c in reversed(range(d.C)):
        w[c] = v
        v *= B
    scale = 1
    while w[0] // scale > limit:
        scale *= B
    return [x // scale for x in w]


def canonical(d: TPData, n: list[list[int]]) -> list[list[int]]:
    """The same placement with each group of identical machines' columns sorted by
    :func:`sym_weights`'s key, descending (lexicographic), so that it satisfies the symmetry
    breaking of both models (hints and warm starts)."""
    out = [row[:] for row in n]
    for g in machine_groups(d):
        cols = sorted((tuple(n[c][j] for c in range(d.C)) for j in g), reverse=True)
        for j, col in zip(g, cols):
            for c in range(d.C):
                out[c][j] = col[c]
    return out


def make_plan(d: TPData, n: list[list[int]], rate: float) -> Plan:
    """Instances of c numbered machine by machine; the claim is a hair under the exact rate."""
    pl = []
    for c, cid in enumerate(d.comps):
        i = 0
        for j in range(d.J):
            for _ in range(n[c][j]):
                pl.append(Placement(topology=d.topology_id, component=cid, executor=i, node=d.machines[j], slot=d.port[j]))
                i += 1
    counts = {cid: sum(n[c]) for c, cid in enumerate(d.comps)}
    return Plan(placements=pl, parallelism={d.topology_id: counts}, input_rate=rate * (1 - 1e-9))


def counts_from_plan(d: TPData, plan: Plan | None) -> list[list[int]] | None:
    """n[c][j] read from another method's plan (for ``hint``), None if it does not fit the model."""
    if plan is None:
        return None
    ci = {c: k for k, c in enumerate(d.comps)}
    mj = {m: k for k, m in enumerate(d.machines)}
    n = [[0] * d.J for _ in range(d.C)]
    for p in plan.placements:
        if p.topology != d.topology_id or p.component not in ci or p.node not in mj:
            return None
        n[ci[p.component]][mj[p.node]] += 1
    if d.routing == "weighted":
        n = [[min(x, 1) for x in row] for row in n]
    return n if structurally_ok(d, n) else None


CAP_SLACK = 1e-9  # relative slack on capacities in the fixed-rate tests (_tputbp, _tputenum)


def piece_weight(d: TPData, R: float, c: int, k: int, j: int) -> float:
    """The load at rate R of one instance of c on machine j when N_c = k: R a_cj g_c / k + MET_cj."""
    return R * d.a[c][j] * d.gain[c] / k + d.met[c][j]


def class_caps(d: TPData, R: float) -> dict[tuple[int, int], list[int]]:
    """Bounds that every placement sustaining the rate R obeys, per count class (c, k) ("N_c = k"):
    u_cjk = how many instances of c fit on machine j at R, min(k_cj, k, floor(cap_j / w_cjk))
    with w_cjk = R a_cj g_c / k + MET_cj; a class is dropped when its instances cannot all be
    placed (sum_j u_cjk < k) or when k instances of c, each at its cheapest overhead, plus every
    component's cheapest load at R exceed the machines' total capacity. R = 0 keeps the plain
    caps (and the overheads' limits). Floors get a relative slack of 1e-9, so the bounds never
    cut a placement whose exact rate is R."""
    out: dict[tuple[int, int], list[int]] = {}
    total = sum(d.cap) * (1 + 1e-9) + 1e-9
    base = 0.0
    cheap = []
    for c in range(d.C):
        js = [j for j in range(d.J) if d.allowed(c, j)]
        if not js:
            return out
        lo_rate = min(R * d.a[c][j] * d.gain[c] for j in js)
        lo_met = min(d.met[c][j] for j in js)
        cheap.append((lo_rate, lo_met))
        base += lo_rate + lo_met
    for c in range(d.C):
        lo_rate, lo_met = cheap[c]
        for k in range(1, d.nmax(c) + 1):
            if base + (k - 1) * lo_met > total:
                break
            u = []
            for j in range(d.J):
                cap = min(d.kmax[c][j], k)
                if cap > 0:
                    w = piece_weight(d, R, c, k, j)
                    if w > 0:
                        cap = min(cap, math.floor((d.cap[j] * (1 + 1e-9) + 1e-9) / w))
                u.append(max(cap, 0))
            if sum(u) >= k:
                out[(c, k)] = u
    return out


def classless(C: int, classes) -> bool:
    """Some component c < C has no count class (c, k) among ``classes``: no placement exists."""
    have = {c for c, _ in classes}
    return any(c not in have for c in range(C))


def lp_filter(d: TPData, R: float, caps: dict[tuple[int, int], list[int]], deadline: float | None = None,
              max_range: float | None = None) -> dict[tuple[int, int], list[int]]:
    """Drop the count classes (c, k) that no placement sustaining R can use, by an LP: shares
    s_c'j >= 0 with sum_j s_c'j = 1; machine j's load sum_c' s_c'j (R a_c'j g_c' + M_c' MET_c'j)
    <= cap_j and instances sum_c' M_c' s_c'j <= K, where M_c = k and M_c' = the least count class
    left for c' (the real count is at least that, and n_c'j = N_c' s_c'j); s_cj <= u_cjk / k.
    A placement with N_c = k gives a solution (its shares), so an infeasible LP rules the class
    out. Classes are tested from the largest k down and from the smallest up, each side stopping
    at the first class the LP allows (the classes between are kept untested). It stops at
    ``deadline``, and once the components tested so far leave count ranges whose product passes
    ``max_range`` (the others leave at least one class each, so the whole product passes it too);
    stopped, it returns the classes dropped so far (every one proven), the rest untested: hetero
    20 x 30 spent 1.4 s in 439 LPs to find its 8e48 vectors far past the count-vector search's
    gate (session 27)."""
    import numpy as np
    from scipy.optimize import linprog

    if R <= 0 or not caps:
        return caps
    pairs = [(c, j) for c in range(d.C) for j in range(d.J) if d.allowed(c, j)]
    nv = len(pairs)
    a_eq = np.zeros((d.C, nv))
    for i, (c, j) in enumerate(pairs):
        a_eq[c, i] = 1.0
    b_ub = np.array([d.cap[j] * (1 + 1e-9) + 1e-9 for j in range(d.J)] + [d.K + 1e-9] * d.J)
    ks = {c: sorted(k for (cc, k) in caps if cc == c) for c in range(d.C)}
    if any(not ks[c] for c in range(d.C)):
        return caps
    out = dict(caps)

    def allowed(c0: int, k0: int) -> bool:
        kmin = [ks[c][0] for c in range(d.C)]
        a_ub = np.zeros((2 * d.J, nv))
        bounds = []
        for i, (c, j) in enumerate(pairs):
            M = k0 if c == c0 else kmin[c]
            a_ub[j, i] = R * d.a[c][j] * d.gain[c] + M * d.met[c][j]
            a_ub[d.J + j, i] = M
            bounds.append((0.0, out[(c0, k0)][j] / k0 if c == c0 else 1.0))
        res = linprog(np.zeros(nv), A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.ones(d.C), bounds=bounds, method="highs")
        return res.status != 2  # only a proven infeasible LP drops the class

    kept = 1
    for c in range(d.C):
        for side in (reversed, iter):
            for k in side(list(ks[c])):
                if deadline is not None and time.monotonic() > deadline:
                    return out
                if len(ks[c]) <= 1 or allowed(c, k):
                    break
                del out[(c, k)]
                ks[c].remove(k)
        kept *= len(ks[c])
        if max_range is not None and kept > max_range:
            return out
    return out


# --- feasibility models at a fixed rate (even routing) -----------------------------------------

def _even_cpsat(d: TPData, R: float, hint: list[list[int]] | None, time_limit: float | None, seed: int):
    """CP-SAT relaxation of "a placement sustains R" (even routing); returns (status, n)."""
    from ortools.sat.python import cp_model

    deadline = _limit_deadline(time_limit)

    m = cp_model.CpModel()
    n, y, classes, demand, upper = _even_skeleton_cpsat(m, d, R)
    S = [1e7 / max(d.cap[j], 1e-9) for j in range(d.J)]
    weights = [[math.floor(piece_weight(d, R, c, k, j) * S[j]) if d.allowed(c, j) else 0
                for j in range(d.J)] for (c, k) in classes]
    capacity = [math.ceil(d.cap[j] * S[j]) for j in range(d.J)]
    _check_clock(deadline)
    z = core.cpsat_assignment(m, weights, capacity, demand, upper, prefix="z")
    of_comp = _classes_of(d, classes)
    for c in range(d.C):
        _check_clock(deadline)
        for j in range(d.J):
            m.Add(n[c][j] == sum(z[k][j] for k in of_comp[c]))
    if hint is not None:
        for c in range(d.C):
            for j in range(d.J):
                m.AddHint(n[c][j], hint[c][j])
    out, sol = core.run_cpsat(m, time_limit, seed, deadline=deadline)
    if out.status in ("optimal", "feasible"):
        return "feasible", [[sol.Value(n[c][j]) for j in range(d.J)] for c in range(d.C)]
    return out.status, None


def _even_skeleton_cpsat(m, d: TPData, R: float = 0.0):
    """Counts n_cj, count choice y_ck (N_c = k), caps, incompatibilities, symmetry breaking."""
    caps = class_caps(d, R)
    n = [[m.NewIntVar(0, d.kmax[c][j], f"n[{c},{j}]") for j in range(d.J)] for c in range(d.C)]
    classes, demand, upper, y = [], [], [], {}
    for c in range(d.C):
        ks = [k for k in range(1, d.nmax(c) + 1) if (c, k) in caps]
        ys = [m.NewBoolVar(f"y[{c},{k}]") for k in ks]
        m.AddExactlyOne(ys)
        m.Add(sum(n[c]) == sum(k * yk for k, yk in zip(ks, ys)))
        for k, yk in zip(ks, ys):
            y[(c, k)] = yk
            classes.append((c, k))
            demand.append(k * yk)
            upper.append(caps[(c, k)])
    _structure_cpsat(m, d, n)
    return n, y, classes, demand, upper


def _structure_cpsat(m, d: TPData, n, top: int | None = None) -> None:
    for j in range(d.J):
        m.Add(sum(n[c][j] for c in range(d.C)) <= d.K)
        for c1, c2 in d.incompatible:
            b1, b2 = m.NewBoolVar(""), m.NewBoolVar("")
            m.Add(n[c1][j] == 0).OnlyEnforceIf(b1.Not())
            m.Add(n[c2][j] == 0).OnlyEnforceIf(b2.Not())
            m.AddBoolOr([b1.Not(), b2.Not()])
    w = sym_weights(d, top, 2**50)
    for j1, j2 in sym_pairs(d):  # identical machines: count vectors in non-increasing lex order
        m.Add(sum(w[c] * n[c][j1] for c in range(d.C)) >= sum(w[c] * n[c][j2] for c in range(d.C)))


def _pulp_counts(p, d: "TPData", R: float = 0.0, use_lp: bool = False, deadline: float | None = None):
    """Instance counts n[c][j] with one binary y[c,k] per total count k of component c (the
    even-routing share 1/k becomes a constant per class); returns (n, classes, demand, upper, y).
    Raises BuildStopped past ``deadline``."""
    import pulp

    caps = class_caps(d, R)
    if use_lp:
        caps = lp_filter(d, R, caps, deadline=deadline)
    _check_clock(deadline)
    n = [[pulp.LpVariable(f"n_{c}_{j}", 0, d.kmax[c][j], cat="Integer") for j in range(d.J)] for c in range(d.C)]
    classes, demand, upper, yv = [], [], [], {}
    for c in range(d.C):
        ks = [k for k in range(1, d.nmax(c) + 1) if (c, k) in caps]
        ys = [pulp.LpVariable(f"y_{c}_{k}", cat="Binary") for k in ks]
        p += pulp.lpSum(ys) == 1
        p += pulp.lpSum(n[c]) == pulp.lpSum(k * yk for k, yk in zip(ks, ys))
        for k, yk in zip(ks, ys):
            yv[(c, k)] = yk
            classes.append((c, k))
            demand.append(k * yk)
            upper.append(caps[(c, k)])
    return n, classes, demand, upper, yv


class BuildStopped(Exception):
    """A back end's model build reached its deadline (``_check_clock``): there is nothing to
    solve; ``solve_throughput`` keeps its incumbent and bound."""


def _check_clock(deadline: float | None) -> None:
    """Raise BuildStopped once ``deadline`` has passed (the MILP builders look between rows)."""
    if deadline is not None and time.monotonic() > deadline:
        raise BuildStopped


def _limit_deadline(time_limit: float | None) -> float | None:
    """A MILP builder's time limit as a deadline from now: building the PuLP model counts
    (hetero 20 x 30's direct even-routing model took 4-5 s of a 10 s limit, session 26)."""
    return None if time_limit is None else time.monotonic() + time_limit


def _even_milp(d: TPData, R: float, hint, time_limit, solver: str):
    """The same feasibility model with PuLP (float weights); returns (status, n)."""
    import pulp

    deadline = _limit_deadline(time_limit)

    p = pulp.LpProblem("tp_even", pulp.LpMinimize)
    n, classes, demand, upper, yv = _pulp_counts(p, d, R, deadline=deadline)
    weights = [[piece_weight(d, R, c, k, j) if d.allowed(c, j) else 0.0 for j in range(d.J)]
               for (c, k) in classes]
    z = core.pulp_assignment(p, weights, list(d.cap), demand, upper, prefix="z")
    _link_counts(p, d, n, z, classes, deadline)
    _class_vub_pulp(p, classes, upper, yv, z)
    _structure_pulp(p, d, n)
    p += pulp.lpSum([])  # feasibility
    warm = False
    if hint is not None and solver == "cbc":
        _set_even_start(d, hint, n, yv, z, classes)
        warm = True
    out = core.run_pulp(p, solver, time_limit, warm=warm, deadline=deadline)
    if out.status in ("optimal", "feasible"):
        return "feasible", [[int(round(n[c][j].varValue or 0)) for j in range(d.J)] for c in range(d.C)]
    return out.status, None


def _even_milp_direct(d: TPData, r_lo: float, r_ub: float, hint, time_limit, solver: str, highs_start: bool = False):
    """Direct MILP for even routing: minimise T' = R_ub / R (no bisection).

    Dividing machine j's row  R sum_c a_cj g_c s_cj + sum_c MET_cj n_cj <= cap_j  by R and
    scaling by R_ub gives  R_ub sum_c a_cj g_c s_cj + sum_c MET_cj (n_cj T') <= cap_j T', where
    the share s_cj = n_cj / N_c = sum_k z_cjk / k is linear in the GAP-core variables, and the
    product n_cj T' is linearised exactly through the bits of n_cj (McCormick on binaries with
    1 <= T' <= R_ub / R_lo). Returns (Outcome, n); the Outcome's objective and bound are in T'.
    HiGHS runs through highspy, which keeps its dual bound when stopped before a plan. The hint
    is CBC's start, HiGHS's too with ``highs_start``; else HiGHS gets the hint's rate as a cutoff."""
    import pulp

    deadline = _limit_deadline(time_limit)

    tmax = r_ub / r_lo
    p = pulp.LpProblem("tp_even_direct", pulp.LpMinimize)
    T = pulp.LpVariable("T", 1.0, tmax)
    n, classes, demand, upper, yv = _pulp_counts(p, d, r_lo * (1 - 1e-6), use_lp=True, deadline=deadline)
    # the core with zero weights and no capacity rows: the rows below carry the loads
    z = core.pulp_assignment(p, [[0.0] * d.J for _ in classes], [0.0] * d.J, demand, upper, prefix="z")
    of_comp = _link_counts(p, d, n, z, classes, deadline)
    bits = {}
    for j in range(d.J):
        _check_clock(deadline)
        terms = []
        for c in range(d.C):
            if not d.allowed(c, j):
                continue
            coef = r_ub * d.a[c][j] * d.gain[c]
            terms += [(z[kk][j], coef / classes[kk][1]) for kk in of_comp[c]]
            if d.met[c][j] > 0:
                nb = max(1, d.kmax[c][j].bit_length())
                beta = [pulp.LpVariable(f"beta_{c}_{j}_{e}", cat="Binary") for e in range(nb)]
                q = [pulp.LpVariable(f"q_{c}_{j}_{e}", 0, tmax) for e in range(nb)]
                p += n[c][j] == pulp.lpSum((1 << e) * beta[e] for e in range(nb))
                for e in range(nb):  # q_e = beta_e T, exactly, for binary beta_e and 1 <= T <= tmax
                    p += q[e] <= tmax * beta[e]
                    p += q[e] >= beta[e]
                    p += q[e] <= T - (1 - beta[e])
                    p += q[e] >= T - tmax * (1 - beta[e])
                terms += [(q[e], d.met[c][j] * (1 << e)) for e in range(nb)]
                bits[(c, j)] = (beta, q)
        if terms:
            p += pulp.LpAffineExpression(terms + [(T, -d.cap[j])]) <= 0
    _structure_pulp(p, d, n)
    p += T
    warm = False
    if hint is not None:
        h_rate = even_rate(d, hint)
        if h_rate > 0:
            if solver == "cbc" or highs_start:
                _set_even_start(d, hint, n, yv, z, classes)
                tv = min(tmax, max(1.0, r_ub / h_rate))
                T.setInitialValue(tv)
                for (c, j), (beta, q) in bits.items():
                    for e in range(len(beta)):
                        bit = hint[c][j] >> e & 1
                        beta[e].setInitialValue(bit)
                        q[e].setInitialValue(bit * tv)
                warm = True
            else:  # HiGHS without a start: a valid cutoff instead
                p += T <= min(tmax, r_ub / h_rate * (1 + 1e-7))
    # highspy, not SciPy's milp, which drops HiGHS's dual bound when the time runs out before a
    # plan (session 53: hetero 5 x 8 at 60 s kept the weighted bound 4072.39; through highspy,
    # the same model and cutoff, 4041.32); where SciPy does find plans the two agree
    out = core.run_pulp(p, solver, time_limit, warm=warm, deadline=deadline, highspy=True)
    if out.status in ("optimal", "feasible"):
        return out, [[int(round(n[c][j].varValue or 0)) for j in range(d.J)] for c in range(d.C)]
    return out, None


def _classes_of(d: TPData, classes) -> list[list[int]]:
    """Each component's indices in ``classes`` (the (c, k) list of the builders), listed once:
    scanning every class for each (c, j) cost seconds on hetero 20 x 30's 6,000 classes
    (session 27)."""
    of_comp: list[list[int]] = [[] for _ in range(d.C)]
    for kk, (c, _) in enumerate(classes):
        of_comp[c].append(kk)
    return of_comp


def _link_counts(p, d: TPData, n, z, classes, deadline: float | None) -> list[list[int]]:
    """n_cj = sum_k z_cjk for every component and machine (PuLP); returns ``_classes_of``.
    Raises BuildStopped past ``deadline``."""
    import pulp

    of_comp = _classes_of(d, classes)
    for c in range(d.C):
        _check_clock(deadline)
        for j in range(d.J):
            p += pulp.LpAffineExpression([(n[c][j], 1.0)] + [(z[kk][j], -1.0) for kk in of_comp[c]]) == 0
    return of_comp


def _class_vub_pulp(p, classes, upper, yv, z) -> None:
    """z_cjk <= u_cjk y_ck: a class's instances sit anywhere only if the class is chosen (the
    core bounds z by u alone; this is the disaggregated form, tighter in the LP relaxation)."""
    for kk, (c, k) in enumerate(classes):
        for j, u in enumerate(upper[kk]):
            if u > 0:
                p += z[kk][j] <= u * yv[(c, k)]


def _set_even_start(d, hint, n, yv, z, classes):
    N = [sum(r) for r in hint]
    for c in range(d.C):
        for j in range(d.J):
            n[c][j].setInitialValue(hint[c][j])
    for (c, k), v in yv.items():
        v.setInitialValue(1 if N[c] == k else 0)
    for kk, (c, k) in enumerate(classes):
        for j in range(d.J):
            z[kk][j].setInitialValue(hint[c][j] if N[c] == k else 0)


def _structure_pulp(p, d: TPData, n, b=None) -> None:
    import pulp

    if b is None:
        b = [[None] * d.J for _ in range(d.C)]
        need = {c for pair in d.incompatible for c in pair}
        for c in need:
            for j in range(d.J):
                if d.allowed(c, j):
                    b[c][j] = pulp.LpVariable(f"b_{c}_{j}", cat="Binary")
                    p += n[c][j] <= d.kmax[c][j] * b[c][j]
    for j in range(d.J):
        p += pulp.lpSum(n[c][j] for c in range(d.C)) <= d.K
        for c1, c2 in d.incompatible:
            if b[c1][j] is not None and b[c2][j] is not None:
                p += b[c1][j] + b[c2][j] <= 1
    w = sym_weights(d, 1 if b is n else None, MILP_SYM_MAX)
    for j1, j2 in sym_pairs(d):
        p += pulp.lpSum(w[c] * n[c][j1] for c in range(d.C)) >= pulp.lpSum(w[c] * n[c][j2] for c in range(d.C))


# --- weighted routing ------------------------------------------------------------------------

def _weighted_cpsat(d: TPData, R: float, hint, time_limit, seed):
    """CP-SAT relaxation of "a support sustains R" (weighted routing); returns (status, b).

    Flows are measured in the CPU they cost: t_cj = a_cj x_cj S_j integer (S_j = 1e6 / cap_j
    units per point), so the capacity row is exact up to one unit per term; the conservation
    row sum_j x_cj = g_c R becomes sum_j t_cj q_cj >= L_c with q_cj = L_c / (a_cj g_c R S_j)
    rounded up and L_c chosen so that every q_cj >= 1e6. Rounding t up (capacity gets + C
    units) and q up keeps every real solution feasible: an infeasible answer is a proof."""
    from ortools.sat.python import cp_model

    deadline = _limit_deadline(time_limit)

    m = cp_model.CpModel()
    b = [[m.NewIntVar(0, 1 if d.allowed(c, j) else 0, f"b[{c},{j}]") for j in range(d.J)] for c in range(d.C)]
    S = [1e6 / max(d.cap[j], 1e-9) for j in range(d.J)]
    top = [math.ceil(d.cap[j] * S[j]) + d.C for j in range(d.J)]
    t = [[m.NewIntVar(0, top[j] if d.allowed(c, j) else 0, f"t[{c},{j}]") for j in range(d.J)] for c in range(d.C)]
    for c in range(d.C):
        m.Add(sum(b[c]) >= 1)
        for j in range(d.J):
            m.Add(t[c][j] <= top[j] * b[c][j])
        if R > 0 and d.gain[c] > 0:
            per = {j: d.a[c][j] * d.gain[c] * R * S[j] for j in range(d.J) if d.allowed(c, j)}
            L = 1e6 * max(per.values())
            m.Add(sum(math.ceil(L / per[j]) * t[c][j] for j in per) >= math.floor(L))
    _structure_cpsat(m, d, b, 1)
    for j in range(d.J):
        terms = [t[c][j] + math.floor(d.met[c][j] * S[j]) * b[c][j] for c in range(d.C) if d.allowed(c, j)]
        if terms:
            m.Add(sum(terms) <= top[j])
    if hint is not None:
        for c in range(d.C):
            for j in range(d.J):
                m.AddHint(b[c][j], hint[c][j])
    out, sol = core.run_cpsat(m, time_limit, seed, deadline=deadline)
    if out.status in ("optimal", "feasible"):
        return "feasible", [[sol.Value(b[c][j]) for j in range(d.J)] for c in range(d.C)]
    return out.status, None


def _weighted_milp(d: TPData, hint, hint_rate, time_limit, solver):
    """Direct MILP: max R, flows x_cj, support b_cj. Returns (Outcome, b)."""
    import pulp

    deadline = _limit_deadline(time_limit)

    rub = upper_bound(d)
    p = pulp.LpProblem("tp_weighted", pulp.LpMaximize)
    R = pulp.LpVariable("R", 0, rub)
    b = [[pulp.LpVariable(f"b_{c}_{j}", 0, 1 if d.allowed(c, j) else 0, cat="Integer") for j in range(d.J)]
         for c in range(d.C)]
    x = [[pulp.LpVariable(f"x_{c}_{j}", 0) for j in range(d.J)] for c in range(d.C)]
    p += R
    for c in range(d.C):
        p += pulp.lpSum(x[c]) == d.gain[c] * R
        p += pulp.lpSum(b[c]) >= 1
        for j in range(d.J):
            p += x[c][j] <= d.gain[c] * rub * b[c][j]
    for j in range(d.J):
        terms = [d.a[c][j] * x[c][j] + d.met[c][j] * b[c][j] for c in range(d.C) if d.allowed(c, j)]
        if terms:
            p += pulp.lpSum(terms) <= d.cap[j]
    _structure_pulp(p, d, b, b)
    warm = False
    if hint is not None:
        if solver == "cbc":
            for c in range(d.C):
                for j in range(d.J):
                    b[c][j].setInitialValue(hint[c][j])
            warm = True
        else:  # HiGHS via SciPy takes no start: the hint's rate becomes a valid cutoff
            p += R >= hint_rate * (1 - 1e-7)
    out = core.run_pulp(p, solver, time_limit, warm=warm, deadline=deadline)
    if out.status in ("optimal", "feasible"):
        out.values = {f"x_{c}_{j}": float(x[c][j].varValue or 0.0) for c in range(d.C) for j in range(d.J)}
        return out, [[int(round(b[c][j].varValue or 0)) for j in range(d.J)] for c in range(d.C)]
    return out, None


# --- even routing: a bound and a start from weighted routing ----------------------------------

def weighted_bound(d: TPData, time_limit: float | None):
    """The weighted-routing optimum bounds the even-routing one from above: an even placement
    with n_cj instances is a weighted placement with support b_cj = [n_cj > 0], and its even
    split is one of the weighted splits; its overheads n_cj MET_cj >= b_cj MET_cj. Solved by the
    weighted MILP (HiGHS); returns (proven upper bound or None, flow shares f[c][j] or None)."""
    out, b = _weighted_milp(d, None, 0.0, time_limit, "highs")
    bound = None
    if out.status == "optimal":
        bound = out.objective * (1 + 2 * core.MIP_REL_GAP)
    elif out.bound is not None and math.isfinite(out.bound):
        bound = out.bound
    shares = None
    if b is not None and out.values:
        shares = []
        for c in range(d.C):
            row = [out.values.get(f"x_{c}_{j}", 0.0) for j in range(d.J)]
            tot = sum(row)
            shares.append([v / tot for v in row] if tot > 0 else [float(x) / max(1, sum(b[c])) for x in b[c]])
    return bound, shares


def _rate_key(d: TPData, n: list[list[int]]) -> tuple:
    """Per-machine sustainable rates, ascending (the first is the plan's rate): comparing these
    tuples lets the local search leave plateaus of the bottleneck objective."""
    N = [sum(row) for row in n]
    out = []
    for j in range(d.J):
        slope = fixed = 0.0
        for c in range(d.C):
            if n[c][j]:
                slope += n[c][j] * d.a[c][j] * d.gain[c] / N[c]
                fixed += n[c][j] * d.met[c][j]
        room = d.cap[j] - fixed
        if room < -1e-9 * max(1.0, d.cap[j]):
            return (-1.0,)
        out.append(max(room, 0.0) / slope if slope > 0 else math.inf)
    return tuple(sorted(out))


def _split(d: TPData, c: int, f: list[float], N: int) -> list[int] | None:
    """N instances of c split over the machines by largest remainders of f_j N, within caps."""
    caps = [d.kmax[c][j] for j in range(d.J)]
    if sum(caps) < N:
        return None
    want = [f[j] * N if caps[j] else 0.0 for j in range(d.J)]
    row = [min(caps[j], int(math.floor(want[j]))) for j in range(d.J)]
    order = sorted(range(d.J), key=lambda j: -(want[j] - row[j]))
    while sum(row) < N:
        for j in order:
            if sum(row) < N and row[j] < caps[j]:
                row[j] += 1
    return row


def round_even(d: TPData, shares: list[list[float]], deadline: float | None) -> list[list[int]] | None:
    """An even-routing placement near a weighted split: per component the instance count N
    whose rounded split of the shares rates best (coordinate descent), then local search (move,
    add or remove one instance) on the sorted per-machine rates. A heuristic start only."""
    nmax = [min(d.nmax(c), 4 * d.J) for c in range(d.C)]
    n = [_split(d, c, shares[c], 1) or [0] * d.J for c in range(d.C)]

    def ok(m):
        return structurally_ok(d, m)

    best = _rate_key(d, n) if ok(n) else (-1.0,)
    for _sweep in range(3):
        changed = False
        for c in range(d.C):
            for N in range(1, nmax[c] + 1):
                row = _split(d, c, shares[c], N)
                if row is None or row == n[c]:
                    continue
                old = n[c]
                n[c] = row
                key = _rate_key(d, n) if ok(n) else (-1.0,)
                if key > best:
                    best, changed = key, True
                else:
                    n[c] = old
        if not changed:
            break
    if best[0] < 0:
        return None
    improved = True
    while improved:
        improved = False
        if deadline is not None and time.monotonic() > deadline:
            break
        for c in range(d.C):
            for j in range(d.J):
                for j2 in [None] + list(range(d.J)):
                    if j2 == j:
                        continue
                    for delta in ((-1, 1),) if j2 is not None else ((1, 0), (-1, 0)):
                        a, b_ = delta
                        if n[c][j] + a < 0 or (j2 is not None and n[c][j2] + b_ > d.kmax[c][j2]):
                            continue
                        n[c][j] += a
                        if j2 is not None:
                            n[c][j2] += b_
                        key = _rate_key(d, n) if ok(n) else (-1.0,)
                        if key > best:
                            best, improved = key, True
                        else:
                            n[c][j] -= a
                            if j2 is not None:
                                n[c][j2] -= b_
    return n if best[0] >= 0 else None


# --- even routing: exact re-optimisation at a fixed count vector (start polish) ---------------

def fixed_n_probe(d: TPData, N: list[int], R: float, time_limit: float | None = None, confirm: bool = False):
    """Is there a placement with exactly N_c instances of every component c that sustains R?
    With N fixed every instance's load R a_cj g_c / N_c + MET_cj is a constant, so this is a small
    integer program in the counts n_cj (SciPy's HiGHS): sum_j n_cj = N_c, per machine load <= cap_j
    and instances <= K, caps k_cj, incompatibilities through binaries. Returns (status, n) with
    status "feasible", "infeasible" or "unknown". A solution that is not finite or whose counts do
    not sum to N is "unknown". With ``confirm`` (where "infeasible" is part of a proof: the
    count-vector search) an infeasible verdict is checked again with HiGHS's presolve off,
    since a presolve reduction is where a false "infeasible" would come from."""
    return counts_probe(d, N, R, (), None, time_limit, confirm)


def counts_probe(d: TPData, N: list[int], R: float, free, caps: dict | None, time_limit: float | None = None,
                 confirm: bool = False):
    """:func:`fixed_n_probe` with the counts of the components in ``free`` left to the model: each
    chooses one count class k among ``caps`` (``class_caps`` at R; a class's u_cjk bound the
    instances on machine j) through binaries y_ck, with instances z_cjk, sum_j z_cjk = k y_ck and
    z_cjk <= u_cjk y_ck, each of load R a_cj g_c / k + MET_cj; the others keep N_c. With ``free``
    empty it is the fixed-count program. Returns (status, n) as :func:`fixed_n_probe`; a free
    component's count is sum_j n_cj of the placement returned (the neighbourhood search over
    count vectors, :func:`lns_counts`)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    C, J = d.C, d.J
    free = set(free)
    ub: list[float] = []
    expr: dict[tuple[int, int], list[int]] = {}  # (c, j) -> the columns whose sum is n_cj
    terms: dict[int, list[tuple[int, float]]] = {j: [] for j in range(J)}  # machine j's load
    ycol: dict[int, list[tuple[int, int, list]]] = {}  # free c -> (column of y_ck, k, its z columns)

    def new(u: float) -> int:
        ub.append(u)
        return len(ub) - 1

    for c in range(C):
        ks = sorted(k for (cc, k) in caps if cc == c) if c in free else [N[c]]
        if not ks:
            return "infeasible", None  # no count class of c sustains R
        for k in ks:
            zs = []  # (column, bound) of c's instances per machine in class k
            for j in range(J):
                u = caps[(c, k)][j] if c in free else min(d.kmax[c][j], k)
                if d.allowed(c, j) and u > 0:
                    i = new(float(u))
                    zs.append((i, u))
                    expr.setdefault((c, j), []).append(i)
                    terms[j].append((i, piece_weight(d, R, c, k, j)))
            if c in free:
                ycol.setdefault(c, []).append((new(1.0), k, zs))
    inc_c = sorted({c for pair in d.incompatible for c in pair})
    bcol = {(c, j): new(1.0) for c in inc_c for j in range(J) if (c, j) in expr}
    nv = len(ub)
    rows, lo, hi = [], [], []

    def row(entries, a, b):
        r = np.zeros(nv)
        for i, v in entries:
            r[i] += v
        rows.append(r)
        lo.append(a)
        hi.append(b)

    for c in range(C):
        if c not in free:
            row([(i, 1.0) for j in range(J) for i in expr.get((c, j), [])], N[c], N[c])
    for ys in ycol.values():
        row([(y, 1.0) for y, _, _ in ys], 1, 1)
        for y, k, zs in ys:
            for i, u in zs:
                row([(i, 1.0), (y, -float(u))], -np.inf, 0)
            row([(i, 1.0) for i, _ in zs] + [(y, -float(k))], 0, 0)
    for j in range(J):
        if terms[j]:
            row(terms[j], -np.inf, d.cap[j] * (1 + 1e-9) + 1e-9)
            row([(i, 1.0) for c in range(C) for i in expr.get((c, j), [])], -np.inf, d.K)
        for c1, c2 in d.incompatible:
            if (c1, j) in bcol and (c2, j) in bcol:
                row([(bcol[(c1, j)], 1.0), (bcol[(c2, j)], 1.0)], -np.inf, 1)
    for (c, j), b in bcol.items():
        top = min(d.kmax[c][j], max(k for _, k, _ in ycol[c]) if c in free else N[c])
        row([(i, 1.0) for i in expr[(c, j)]] + [(b, -float(top))], -np.inf, 0)
    w = sym_weights(d, None, MILP_SYM_MAX)
    for j1, j2 in sym_pairs(d):  # identical machines: count vectors in non-increasing lex order
        row([(i, float(w[c])) for c in range(C) if w[c] for i in expr.get((c, j1), [])]
            + [(i, -float(w[c])) for c in range(C) if w[c] for i in expr.get((c, j2), [])], 0, np.inf)
    opts = {"disp": False}
    if time_limit is not None:
        opts["time_limit"] = max(0.01, time_limit)
    cons = LinearConstraint(np.array(rows), lo, hi)
    bounds = Bounds(np.zeros(nv), np.array(ub))
    res = milp(np.zeros(nv), constraints=cons, integrality=np.ones(nv), bounds=bounds, options=opts)
    if res.status == 2 and confirm:
        res = milp(np.zeros(nv), constraints=cons, integrality=np.ones(nv), bounds=bounds,
                   options=opts | {"presolve": False})
    if res.status == 2:
        return "infeasible", None
    if res.x is None or not np.all(np.isfinite(res.x)):
        return "unknown", None
    n = [[0] * J for _ in range(C)]
    for (c, j), cols in expr.items():
        n[c][j] = sum(int(round(res.x[i])) for i in cols)
    if any(c not in free and sum(n[c]) != N[c] for c in range(C)) or not structurally_ok(d, n):
        return "unknown", None
    for c, ys in ycol.items():  # the count must be the class the model chose
        k = [k for y, k, _ in ys if res.x[y] > 0.5]
        if len(k) != 1 or sum(n[c]) != k[0]:
            return "unknown", None
    return "feasible", n


def best_for_counts(d: TPData, N: list[int], start: float, deadline: float | None, step: float = 1e-4,
                    probe_limit: float | None = None, confirm: bool = False):
    """The best rate with the count vector N, to a relative ``step``: probes at (best so far) x
    (1 + step), jumping to the exact rate of each placement found. Returns (rate, n, proven):
    ``proven`` = no placement with these counts sustains rate x (1 + step); ``probe_limit`` caps
    each probe's time (a probe stopped by it ends the search for N, unproven)."""
    best, best_n = start, None
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0.01:
            return best, best_n, False
        R = max(best, 0.0) * (1 + step) if best > 0 else 0.0
        st, n = fixed_n_probe(d, N, R, left if probe_limit is None else min(probe_limit, left or probe_limit), confirm)
        if st != "feasible":
            return best, best_n, st == "infeasible"
        r = even_rate(d, n)
        if r <= best:  # a rounding hair: count it as no progress
            return best, best_n, False
        best, best_n = r, n


def polish_counts(d: TPData, n: list[list[int]], deadline: float | None, stats: dict | None = None):
    """Descent over instance-count vectors: from the placement n, re-optimise the placement for
    its counts N exactly (:func:`best_for_counts`), then try the neighbours of N: one component's
    count set to another value its count class allows at the best rate (:func:`class_caps`,
    nearest first), then one component's count up by one and another's down by one; move to the
    first neighbour that rates better and start again, until none does or the deadline passes.
    A heuristic (it improves the start); the exact search proves the rest."""
    from ._tputenum import CountLP

    best = even_rate(d, n)
    N = [sum(row) for row in n]
    seen = {tuple(N)}
    step = 1e-4  # best_for_counts' relative step: its first probe is at best x (1 + step)
    r, m, _ = best_for_counts(d, N, best, deadline, step=step, probe_limit=POLISH_PROBE)
    if m is not None and r > best:
        best, n = r, m
    screen: dict = {}

    def hopeless(N2: list[int]) -> bool:
        """No placement with counts N2 sustains best x (1 + step), the first probe of
        best_for_counts, by the fill-capped fixed-count LP (_tputenum, the count-vector
        search's leaf test): that probe would be infeasible, so it is skipped. A speed-up
        only: if the LP fails, nothing is skipped."""
        R = best * (1 + step)
        try:
            if screen.get("R") != R:
                caps = class_caps(d, R)
                screen.update(R=R, caps=caps, lp=CountLP(d, R, caps) if not classless(d.C, caps) else None)
            lp, caps = screen["lp"], screen["caps"]
            if lp is None or any((c, N2[c]) not in caps for c in range(d.C)):
                return True
            for c in range(d.C):
                lp.fix(c, N2[c])
            return not lp.fill_feasible(N2)
        except Exception:  # noqa: BLE001
            screen.clear()
            return False

    def neighbours():
        caps = class_caps(d, best)
        for c in range(d.C):
            ks = sorted((k for (cc, k) in caps if cc == c and k != N[c]), key=lambda k: (abs(k - N[c]), k))
            for k in ks:
                yield [k if x == c else N[x] for x in range(d.C)]
        for c in range(d.C):
            for c2 in range(d.C):
                if c != c2 and N[c2] > 1:
                    N2 = [N[x] + (x == c) - (x == c2) for x in range(d.C)]
                    # a better N2 sustains more than best, so its count classes pass class_caps
                    # at best: the others need no probe
                    if (c, N2[c]) in caps and (c2, N2[c2]) in caps:
                        yield N2

    improved = True
    while improved:
        improved = False
        for N2 in neighbours():
            if deadline is not None and time.monotonic() > deadline:
                return n, best
            if any(N2[c] > d.nmax(c) for c in range(d.C)) or tuple(N2) in seen:
                continue
            seen.add(tuple(N2))
            if stats is not None:
                stats["vectors"] = stats.get("vectors", 0) + 1
            if hopeless(N2):
                if stats is not None:
                    stats["screened"] = stats.get("screened", 0) + 1
                continue
            r, m, _ = best_for_counts(d, N2, best, deadline, step=step, probe_limit=POLISH_PROBE)
            if m is not None and r > best:
                best, n, N, improved = r, m, N2, True
                break
    return n, best


def lns_counts(d: TPData, n: list[list[int]], deadline: float | None, seed: int = 0, stats: dict | None = None):
    """Neighbourhood search over count vectors (session 49): from the placement n with counts N,
    free the counts of one or two components at a time (every such subset, singletons first,
    each size in a seeded random order) and ask :func:`counts_probe` for a placement sustaining
    best x (1 + 10^-4) with the others' counts kept (each probe at most ``LNS_PROBE`` s); a
    placement found is rated exactly, its counts re-optimised (:func:`best_for_counts`), and the
    search starts again from it. It ends when every subset of the current N has been tried (none
    found a better placement within its time) or at the deadline. A heuristic: it improves the
    incumbent; a probe that ends "infeasible" proves only that its neighbourhood has no better
    placement. The placement returned is in :func:`canonical` order.

    Why: :func:`polish_counts` moves one count, or two by one each, at a time; the better plans
    of hetero 8 x 10 differ from the polished one in several counts, far apart (session 37). A
    probe with two components free decides a whole plane of count vectors at once."""
    import itertools
    import random

    rnd = random.Random(seed)
    best = even_rate(d, n)
    N = [sum(row) for row in n]
    step = 1e-4
    tried: set = set()
    while deadline is None or time.monotonic() < deadline:
        R = best * (1 + step)
        caps = class_caps(d, R)
        subsets = []
        for size in (1, 2):
            group = [S for S in itertools.combinations(range(d.C), size) if (tuple(N), S) not in tried]
            rnd.shuffle(group)
            subsets += group
        moved = False
        for S in subsets:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0.05:
                return n, best
            tried.add((tuple(N), S))
            st, m = counts_probe(d, N, R, S, caps, LNS_PROBE if left is None else min(LNS_PROBE, left))
            if stats is not None:
                stats["probes"] = stats.get("probes", 0) + 1
                stats[st] = stats.get(st, 0) + 1
            if st != "feasible":
                continue
            r = even_rate(d, m)
            if r <= best:
                continue
            N2 = [sum(row) for row in m]
            r2, m2, _ = best_for_counts(d, N2, r, deadline, step=step, probe_limit=POLISH_PROBE)
            if m2 is not None and r2 > r:
                r, m = r2, m2
            best, n, N, moved = r, canonical(d, m), N2, True
            if stats is not None:
                stats["moves"] = stats.get("moves", 0) + 1
            break
        if not moved:
            break
    return n, best


# --- the search --------------------------------------------------------------------------------

@dataclass
class Search:
    best_rate: float = -1.0
    best_n: list[list[int]] | None = None
    hi: float = math.inf
    steps: list[dict] = field(default_factory=list)


def _bisect(d: TPData, check, hint_n, deadline: float | None, search: Search, gallop_first: bool = False) -> bool:
    """Bisection on R with jumps to the exact rate of each placement found. ``check(R, hint,
    time_left)`` -> (status, n). Returns False when stopped by the deadline. ``gallop_first``:
    probe at best x (1 + TOL / 2) first and grow the step 4-fold while probes are feasible,
    bisecting after the first infeasible one (for a start that is often optimal: the polished
    even-routing incumbent; from weighted routing's greedy start it cost CP-SAT, measured). A
    galloping probe gets at most ``GALLOP_SHARE`` of the time left; one that runs out of it
    switches to bisection (the midpoint probes are easier and bring the bound down). After the
    first infeasible galloping probe, one probe at best x (1 + TOL / 2), the proof itself, with
    the same share (``PROOF_FIRST``): the gallop's plans are often optimal, and the bisection
    down to it cost tiny 5 x 5 eight infeasible probes of 2.5-5.6 s each (session 52); when it
    ends unknown (or finds a plan) the bisection goes on."""
    lo = max(search.best_rate, 0.0)
    gallop = TOL / 2 if gallop_first and search.best_n is not None and search.best_rate > 0 else None
    proof = False  # the next probe is the proof probe just above the incumbent
    while True:
        if search.best_n is not None and search.hi <= search.best_rate * (1 + TOL):
            return True
        if search.hi <= lo * (1 + TOL / 10):
            return True  # the probes are exhausted; the rounding slack decides the rest
        R = (lo + search.hi) / 2 if math.isfinite(search.hi) else max(2 * lo, 1.0)
        if gallop is not None:  # probe just above the incumbent first: it is often optimal
            R = min(R, max(search.best_rate, lo) * (1 + gallop))
        if proof:  # set only after a galloping probe, so there is an incumbent
            R = search.best_rate * (1 + TOL / 2)
        if search.best_n is not None:
            R = max(R, search.best_rate * (1 + TOL / 2))
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0.01:
            return False
        capped = (gallop is not None or proof) and left is not None
        proof = False
        try:
            st, n = check(R, search.best_n or hint_n, GALLOP_SHARE * left if capped else left)
        except BuildStopped:  # the probe's model was not built within its time: the probe is unknown
            st, n = "unknown", None
        search.steps.append({"R": R, "status": st})
        if st not in ("feasible", "infeasible") and capped:
            gallop = None  # a galloping (or proof) probe out of its share: bisect instead (its probes are easier)
            continue
        if st == "feasible":
            r = rate_of(d, n)
            if r > search.best_rate:
                search.best_rate, search.best_n = r, n
            lo = max(lo, R, r)
            if gallop is not None:
                gallop *= 4
        elif st == "infeasible":
            search.hi = R
            proof = PROOF_FIRST and gallop is not None  # once: the gallop ends here
            gallop = None
        else:
            return False


def solve_throughput(instance: Instance, backend: str, method: str, time_limit=None, seed=0,
                     hint: str | None = None, max_instances: int = 10, weighted_start: bool = True,
                     polish: bool = True, count_search: bool = True, weighted_cuts: bool = True,
                     lns: bool = False, highs_start: bool = False) -> Result:
    """Shared driver of exact.cpsat / exact.milp-cbc / exact.milp-highs for ``throughput``."""
    d = prepare(instance, max_instances)
    deadline = None if time_limit is None else time.monotonic() + time_limit
    details: dict = {"routing": d.routing, "max_instances": d.K}
    for c, cid in enumerate(d.comps):
        if not any(d.allowed(c, j) for j in range(d.J)):
            return Result(problem="throughput", method=method, status=Status.INFEASIBLE,
                          message=f"component {cid!r} has no machine it may run on (no profile for a machine type, or its pins)")
    search = Search(hi=upper_bound(d))
    hint_n = _hint_counts(instance, d, hint, method, details)
    if hint_n is not None:
        hint_n = canonical(d, hint_n)
        r = rate_of(d, hint_n)
        if r >= 0:
            search.best_rate, search.best_n = r, hint_n
            details["hint_rate"] = r
    if search.best_n is None:
        g = _greedy_start(d)
        if g is not None:
            g = canonical(d, g)
            search.best_rate, search.best_n = rate_of(d, g), g
    if d.routing == "even" and weighted_start:
        t0 = time.monotonic()
        left = None if deadline is None else max(0.05, WEIGHTED_SHARE * (deadline - t0))
        wb, shares = weighted_bound(d, left)
        if wb is not None:
            search.hi = min(search.hi, wb)
        if shares is not None:
            n = round_even(d, shares, None if deadline is None else t0 + 2 * left)
            if n is not None:
                n = canonical(d, n)
                r = even_rate(d, n)
                details["start_rate"] = r
                if r > search.best_rate:
                    search.best_rate, search.best_n = r, n
        details["weighted_bound"] = wb
        details["start_seconds"] = round(time.monotonic() - t0, 3)
    floor_rate, floor_n = search.best_rate, None
    if d.routing == "even" and polish and search.best_n is not None and 0 < search.best_rate < math.inf:
        floor_n = search.best_n
        t1 = time.monotonic()
        stop = t1 + (POLISH_MAX if deadline is None else max(0.0, POLISH_SHARE * (deadline - t1)))
        pstats: dict = {}
        n, r = polish_counts(d, search.best_n, stop, pstats)
        if r > search.best_rate:
            search.best_rate, search.best_n = r, canonical(d, n)
        details["polish"] = {"rate": r, "count_vectors": pstats.get("vectors", 0),
                             "screened": pstats.get("screened", 0), "seconds": round(time.monotonic() - t1, 3)}
    finished = True
    if (d.routing == "even" and count_search and search.best_n is not None and 0 < search.best_rate < math.inf
            and search.hi > search.best_rate * (1 + TOL)):
        try:
            _count_search_stage(d, search, deadline, details)
        except Exception as e:  # noqa: BLE001 - a speed-up only: its failure leaves the back end to prove
            details["count_search"] = {"error": f"{type(e).__name__}: {e}"[:300]}
    if (d.routing == "even" and lns and search.best_n is not None and 0 < search.best_rate < math.inf
            and search.hi > search.best_rate * (1 + TOL)):
        t2 = time.monotonic()
        stop = t2 + (LNS_MAX if deadline is None else max(0.0, LNS_SHARE * (deadline - t2)))
        lstats: dict = {}
        n, r = lns_counts(d, search.best_n, stop, seed, lstats)
        if r > search.best_rate:
            search.best_rate, search.best_n = r, n
        details["lns"] = {"rate": r, **lstats, "seconds": round(time.monotonic() - t2, 3)}
    try:
        if search.best_n is not None and search.hi <= search.best_rate * (1 + TOL):
            pass  # proven by the count-vector search: the back end's model has nothing left to do
        elif deadline is not None and time.monotonic() >= deadline:
            # the start and the polish used the time (their model builds are not cut): building the
            # back end's model as well took 3 s more on hetero 20 x 30 at a 5 s limit (session 26)
            finished = False
            details["backend_model"] = "not built: the time limit was reached before it"
        elif d.routing == "weighted" and backend != "cpsat":
            left = None if deadline is None else max(0.05, deadline - time.monotonic())
            out, b = _weighted_milp(d, search.best_n, max(search.best_rate, 0.0), left, backend)
            if b is not None:
                r = weighted_rate(d, b)
                if r > search.best_rate:
                    search.best_rate, search.best_n = r, b
            if out.status == "infeasible" and search.best_n is None:
                return _infeasible(method, "no support satisfies the instance caps and overheads (MILP proves it)")
            if out.status == "infeasible":  # the hint cutoff can make HiGHS's model infeasible: the hint is optimal
                search.hi = search.best_rate
            elif out.status == "optimal":
                search.hi = min(search.hi, max(search.best_rate, out.bound if out.bound is not None else search.best_rate))
            else:
                finished = False
                if out.bound is not None:
                    search.hi = min(search.hi, out.bound)
        elif d.routing == "even" and backend != "cpsat":
            if search.best_n is None or search.best_rate <= 0:
                first = _first_placement(d, lambda R, h, left: _even_milp(d, R, h, left, backend), deadline, search,
                                         method, details)
                if first is not None:
                    return first
            if search.best_rate <= 0:
                finished = _bisect(d, lambda R, h, left: _even_milp(d, R, h, left, backend), hint_n, deadline, search)
            else:
                left = None if deadline is None else max(0.05, deadline - time.monotonic())
                if backend == "highs" and floor_n is not None and not highs_start:
                    # without a start HiGHS must find a plan at least as good as the model's floor
                    # by itself; so it keeps the pre-polish floor (as before the polish), measured
                    # (through SciPy): the polished floor left it without a plan on tiny 8 x 10 and
                    # hetero 6 x 6
                    out, n = _even_milp_direct(d, floor_rate, search.hi, floor_n, left, backend)
                else:
                    if backend == "highs" and highs_start:
                        details["highs_start"] = {"start_rate": search.best_rate}
                    out, n = _even_milp_direct(d, search.best_rate, search.hi, search.best_n, left, backend,
                                               highs_start=highs_start)
                if n is not None:
                    r = even_rate(d, n)
                    if r > search.best_rate:
                        search.best_rate, search.best_n = r, n
                if out.status == "infeasible" and backend == "highs" and (
                        highs_start or (floor_n is not None and search.best_rate > floor_rate * (1 + 1e-6))):
                    finished = False  # the polished plan is in that model (no cutoff): numerics, not a proof
                elif out.status == "infeasible":  # only the hint's cutoff can do that: the hint is optimal
                    search.hi = search.best_rate
                elif out.status == "optimal":  # T' >= the solver's proven bound (HiGHS's dual bound, CBC's value)
                    t_lo = min(out.objective / (1 + 1e-7), out.bound if out.bound is not None else math.inf)
                    search.hi = max(search.best_rate, search.hi / t_lo)
                else:
                    finished = False
                    if out.bound is not None and out.bound > 0:
                        search.hi = min(search.hi, search.hi / out.bound)
        elif d.routing == "weighted" and weighted_cuts:  # CP-SAT over supports with cuts from the rate LP
            finished = _weighted_cuts_search(d, search, hint_n, deadline, seed, details)
            if finished == "infeasible":
                return _infeasible(method, "no support satisfies the caps and overheads (CP-SAT proves it)")
        else:
            if d.routing == "even":
                if backend == "cpsat":
                    def check(R, h, left):
                        return _even_cpsat(d, R, h, left, seed)
                else:
                    def check(R, h, left):
                        return _even_milp(d, R, h, left, backend)
            else:
                def check(R, h, left):
                    return _weighted_cpsat(d, R, h, left, seed)
            if search.best_n is None:
                first = _first_placement(d, check, deadline, search, method, details)
                if first is not None:
                    return first
            finished = _bisect(d, check, hint_n, deadline, search, gallop_first=d.routing == "even")
    except BuildStopped:  # the back end's model build reached the deadline: nothing to solve
        finished = False
        details["backend_model"] = "stopped: the time limit was reached while building it"
    details["steps"] = len(search.steps)
    if search.best_n is None:
        return Result(problem="throughput", method=method, status=Status.UNKNOWN, bound=search.hi if math.isfinite(search.hi) else None,
                      message=core.none_found_message("placement"), details=details)
    proven = search.hi <= search.best_rate * (1 + TOL) + 1e-12
    if not proven and finished and search.hi <= search.best_rate * (1 + 10 * TOL):
        proven = True  # the CP-SAT rounding slack; documented tolerance is 1e-5 relative (+ the slack)
    status = Status.OPTIMAL if proven else Status.FEASIBLE
    bound = max(search.hi, search.best_rate) if math.isfinite(search.hi) else None
    details["rate"] = search.best_rate
    msg = "" if proven else (f"stopped: {details['stopped']}; best placement so far, with the proven upper bound on the rate"
                             if "stopped" in details else
                             core.stop_message("best placement so far, with the proven upper bound on the rate"))
    return Result(problem="throughput", method=method, status=status, plan=make_plan(d, search.best_n, search.best_rate),
                  bound=bound, message=msg, details=details)


def _first_placement(d: TPData, check, deadline: float | None, search: Search, method: str, details: dict) -> Result | None:
    """A first placement from the back end's feasibility model at rate 0 (``check``, as for
    ``_bisect``), when no start gave one: None when one is found (it becomes the incumbent),
    else the Result to return: infeasible (proven by the model) or unknown."""
    left = None if deadline is None else deadline - time.monotonic()
    st, n = check(0.0, None, left)
    if st == "infeasible":
        return _infeasible(method, "the instances' fixed overheads (MET) or caps leave no placement, even at rate 0")
    if n is None:
        return Result(problem="throughput", method=method, status=Status.UNKNOWN,
                      message=core.none_found_message("placement"), details=details)
    search.best_rate, search.best_n = rate_of(d, n), n
    return None


def _weighted_cuts_search(d: TPData, search: Search, hint_n, deadline: float | None, seed: int, details: dict):
    """Weighted routing, CP-SAT: probes of ``_tputcuts.probe`` (CP-SAT over supports, each support
    that fails the probe rate cut off by a checked certificate from its LP; the cuts are kept for
    every later probe). Probe order: just above the incumbent b, at b (1 + s) with s = TOL / 2,
    growing 4-fold after each feasible probe and back to TOL / 2 after an infeasible one, never
    above the midpoint between b and the lowest refuted rate. A feasible probe returns a support
    whose exact LP rate reaches the probe (the new incumbent); an infeasible one is a proof. A
    probe with s > TOL / 2 gets at most ``GALLOP_SHARE`` of the time left; if it runs out, s goes
    back to TOL / 2. Returns True when the bound is within TOL of the incumbent, False when
    stopped, "infeasible" when no support exists at all."""
    from . import _tputcuts as BC

    pool: list = []
    cache: dict = {}
    stats: dict = {}
    details["weighted_cuts"] = stats

    def finish(out):
        stats.update(probes=len(search.steps), pool=len(pool))
        for k in ("master_s", "cut_s", "build_s"):
            stats[k] = round(stats.get(k, 0.0), 3)
        return out

    if search.best_n is None:
        st, b = BC.probe(d, 0.0, pool, hint_n, deadline, seed, stats, cache)
        search.steps.append({"R": 0.0, "status": st})
        if st == "infeasible":
            return finish("infeasible")
        if st != "feasible":
            return finish(False)
        search.best_rate, search.best_n = weighted_rate(d, b), b
    step = TOL / 2
    while True:
        if search.hi <= search.best_rate * (1 + TOL) + 1e-12:  # the driver's test (a rate 0 too)
            return finish(True)
        best = search.best_rate
        if best > 0:
            R = best * (1 + step)
            if math.isfinite(search.hi):
                R = min(R, (best + search.hi) / 2)
            R = max(R, best * (1 + TOL / 2))
        else:
            R = search.hi / 2 if math.isfinite(search.hi) else 1.0
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0.01:
            return finish(False)
        capped = step > TOL / 2 and left is not None
        stop = None if left is None else time.monotonic() + (GALLOP_SHARE * left if capped else left)
        st, b = BC.probe(d, R, pool, search.best_n, stop, seed, stats, cache)
        search.steps.append({"R": R, "status": st})
        if st == "feasible":
            r = weighted_rate(d, b)
            if r > search.best_rate:
                search.best_rate, search.best_n = r, b
            step *= WEIGHTED_GROWTH
        elif st == "infeasible":
            search.hi = min(search.hi, R)
            step = TOL / 2
        elif capped:
            step = TOL / 2  # a galloping probe out of its share: probe just above the incumbent
        else:
            if stats.get("rejected"):
                details["stopped"] = ("no certificate of the rate LP passed the exact check, so a support "
                                      "could not be cut off")
            return finish(False)


def _count_search_stage(d: TPData, search: Search, deadline: float | None, details: dict) -> None:
    """Even routing, all back ends: try to prove the incumbent by the count-vector search
    (``_tputenum.search`` at best x (1 + TOL)) when its size, estimated by random dives, fits
    in ``COUNT_SEARCH_SHARE`` of the time left (``COUNT_SEARCH_MAX`` s without a time limit).
    It may raise the incumbent; a proof sets ``search.hi`` to best x (1 + TOL). Otherwise the
    back end's own model goes on with the time left."""
    from . import _tputenum

    t0 = time.monotonic()
    budget = COUNT_SEARCH_MAX if deadline is None else max(0.0, COUNT_SEARCH_SHARE * (deadline - t0))
    if budget <= 0.05:
        return
    stats: dict = {}
    best, n, proven = _tputenum.search(d, search.best_rate, search.best_n, t0 + budget, step=TOL, stats=stats,
                                       max_lps=COUNT_SEARCH_LPS, dives=COUNT_SEARCH_DIVES, budget=budget,
                                       cost=COUNT_SEARCH_COST, max_range=COUNT_SEARCH_RANGE)
    if n is not None and best > search.best_rate:
        search.best_rate, search.best_n = best, canonical(d, n)
    if proven:
        search.hi = min(search.hi, search.best_rate * (1 + TOL))
    stats.update(proven=proven, seconds=round(time.monotonic() - t0, 3))
    details["count_search"] = stats


def _greedy_start(d: TPData) -> list[list[int]] | None:
    """One instance per component on the allowed machine with the most room left (overheads,
    caps and incompatibilities respected): a cheap first placement so that a time limit never
    leaves an exact method without a plan when one is this easy to find."""
    n = [[0] * d.J for _ in range(d.C)]
    fixed = [0.0] * d.J
    for c in sorted(range(d.C), key=lambda c: -d.gain[c]):
        best = None
        for j in range(d.J):
            if not d.allowed(c, j) or sum(n[x][j] for x in range(d.C)) >= d.K:
                continue
            if any(n[o][j] for pair in d.incompatible if c in pair for o in pair if o != c):
                continue
            room = d.cap[j] - fixed[j] - d.met[c][j] - d.a[c][j] * d.gain[c] * 1e-9
            if room >= 0 and (best is None or room > best[0]):
                best = (room, j)
        if best is None:
            return None
        n[c][best[1]] = 1
        fixed[best[1]] += d.met[c][best[1]]
    return n if structurally_ok(d, n) and even_rate(d, n) >= 0 else None


def _infeasible(method: str, why: str) -> Result:
    return Result(problem="throughput", method=method, status=Status.INFEASIBLE, message=why)


def _hint_counts(instance: Instance, d: TPData, hint: str | None, method: str, details: dict):
    if hint is None:
        return None
    if hint == method:
        raise InstanceError("options.hint", f"a method cannot hint itself ({hint!r})")
    from planner.api import solve

    try:
        r = solve(instance, "throughput", hint)
    except InstanceError as e:
        raise InstanceError("options.hint", f"cannot use {hint!r} as a hint: {e}") from None
    n = counts_from_plan(d, r.plan) if r.ok else None
    details["hint"] = {"method": hint, "status": r.status.value, "used": n is not None}
    return n


# --- brute force -------------------------------------------------------------------------------

MAX_EVEN_PLACEMENTS = 2_000_000_000  # raw count matrices; pruning makes the search far smaller
MAX_WEIGHTED_PAIRS = 14  # 2^14 supports, one LP each


def bruteforce_throughput(instance: Instance, time_limit=None, max_instances: int = 10) -> Result:
    """Exhaustive search. Even routing: every instance-count vector (N_c >= 1, total within the
    machines' caps; Nasiri's C(sum k_j, n) configurations), and for each every split of those
    counts over the machines, rated in closed form; a partial split is dropped only when its
    load at the best rate found so far already overloads a machine (it cannot beat it).
    Weighted routing: every support, rated by its LP."""
    d = prepare(instance, max_instances)
    method = "exact.bruteforce"
    deadline = None if time_limit is None else time.monotonic() + time_limit
    for c, cid in enumerate(d.comps):
        if not any(d.allowed(c, j) for j in range(d.J)):
            return _infeasible(method, f"component {cid!r} has no machine it may run on")
    if d.routing == "weighted":
        pairs = [(c, j) for c in range(d.C) for j in range(d.J) if d.allowed(c, j)]
        if len(pairs) > MAX_WEIGHTED_PAIRS:
            return Result(problem="throughput", method=method, status=Status.UNKNOWN,
                          message=f"too large for exhaustive search: {len(pairs)} (component, machine) pairs > {MAX_WEIGHTED_PAIRS}; use exact.cpsat")
        best, best_b, done = -1.0, None, True
        for mask in range(1, 1 << len(pairs)):
            if deadline is not None and (mask & 63) == 0 and time.monotonic() > deadline:
                done = False
                break
            b = [[0] * d.J for _ in range(d.C)]
            for k, (c, j) in enumerate(pairs):
                if mask >> k & 1:
                    b[c][j] = 1
            if not structurally_ok(d, b):
                continue
            r = weighted_rate(d, b)
            if r > best * (1 + 1e-12):
                best, best_b = r, b
        return _bf_result(d, best, best_b, done, {"supports": 1 << len(pairs)})
    raw = 1
    for j in range(d.J):
        raw *= _vectors_within(d.K, [d.kmax[c][j] for c in range(d.C)])
    if raw > MAX_EVEN_PLACEMENTS:
        return Result(problem="throughput", method=method, status=Status.UNKNOWN,
                      message=f"too large for exhaustive search: about {raw:.3g} count matrices > {MAX_EVEN_PLACEMENTS:.0e}; use exact.cpsat")
    return _bf_even(d, deadline)


def _vectors_within(total: int, caps: list[int]) -> int:
    """How many (x_c) with 0 <= x_c <= caps[c] and sum <= total (a small DP)."""
    ways = [1] + [0] * total
    for cap in caps:
        new = [0] * (total + 1)
        for s0, w in enumerate(ways):
            if w:
                for x in range(0, min(cap, total - s0) + 1):
                    new[s0 + x] += w
        ways = new
    return sum(ways)


def _bf_result(d, best, best_n, done, details) -> Result:
    method = "exact.bruteforce"
    if best_n is None or best < 0:
        if not done:
            return Result(problem="throughput", method=method, status=Status.UNKNOWN, message="time limit reached before any placement")
        return _infeasible(method, "exhaustive search: no placement fits the overheads and caps")
    details["rate"] = best
    return Result(problem="throughput", method=method, status=Status.OPTIMAL if done else Status.FEASIBLE,
                  plan=make_plan(d, best_n, best), bound=best if done else None, details=details,
                  message="" if done else "time limit reached; best placement so far")


def _compositions(total: int, caps: list[int]):
    """Every (x_0..x_{m-1}) with sum = total and 0 <= x_j <= caps[j]."""
    if not caps:
        if total == 0:
            yield ()
        return
    rest = sum(caps[1:])
    for x in range(max(0, total - rest), min(caps[0], total) + 1):
        for tail in _compositions(total - x, caps[1:]):
            yield (x,) + tail


def _bf_even(d: TPData, deadline) -> Result:
    """Count vectors N in order of total instances; for each, every split over the machines by
    depth-first search over components. Pruning, all at the best rate R found so far (a better
    placement must sustain more than R, and loads grow with the rate): a machine whose partial
    load at R exceeds its capacity; and the components still to place, each at its cheapest
    machine, not fitting in the machines' total room at R."""
    C, J = d.C, d.J
    nmax = [d.nmax(c) for c in range(C)]
    total_cap = sum(min(d.K, sum(d.kmax[c][j] for c in range(C))) for j in range(J))
    slope = [[d.a[c][j] * d.gain[c] if d.allowed(c, j) else 0.0 for j in range(J)] for c in range(C)]
    amin = [min(slope[c][j] for j in range(J) if d.allowed(c, j)) for c in range(C)]
    mmin = [min(d.met[c][j] for j in range(J) if d.allowed(c, j)) for c in range(C)]
    inc_map: dict[int, list[int]] = {c: [] for c in range(C)}
    for c1, c2 in d.incompatible:
        inc_map[c1].append(c2)
        inc_map[c2].append(c1)
    st = {"best": -1.0, "n": None, "vectors": 0, "leaves": 0, "stopped": False}
    fix = [0.0] * J
    slo = [0.0] * J
    used = [0] * J
    cur = [[0] * J for _ in range(C)]
    tail_min = [0.0] * (C + 1)  # per N: cheapest total load of components c.. at the best rate
    tail_frac = [0.0] * (C + 1)  # the same in fractions of a machine's capacity
    # heavy components first: their placements fail soonest
    order = sorted(range(C), key=lambda c: -(amin[c] + mmin[c]))

    def fits(j: int, R: float, have: bool) -> bool:
        return fix[j] + (R * slo[j] if have else 0.0) <= d.cap[j] * (1 + 1e-12) + 1e-12

    def place(pos: int, j: int, left: int, N: tuple) -> None:
        """Choose n[c][j] for c = order[pos], machine j, with ``left`` instances of c to place."""
        R = max(st["best"], 0.0)
        have = st["n"] is not None
        if pos == C:
            st["leaves"] += 1
            r = even_rate(d, cur)
            if r >= 0 and r > st["best"] * (1 + 1e-12):
                st["best"] = r
                st["n"] = [row[:] for row in cur]
            return
        c = order[pos]
        if j == J:
            if left:
                return
            room = sum(d.cap[jj] - fix[jj] - (R * slo[jj] if have else 0.0) for jj in range(J))
            frac = sum((d.cap[jj] - fix[jj] - (R * slo[jj] if have else 0.0)) / d.cap[jj] for jj in range(J) if d.cap[jj] > 0)
            if have and (tail_min[pos + 1] > room * (1 + 1e-12) + 1e-12 or tail_frac[pos + 1] > frac + 1e-12):
                return
            place(pos + 1, 0, N[order[pos + 1]] if pos + 1 < C else 0, N)
            return
        cap = min(d.kmax[c][j], d.K - used[j], left)
        if inc_map[c] and any(cur[o][j] for o in inc_map[c]):
            cap = 0
        rest = sum(min(d.kmax[c][jj], d.K - used[jj]) for jj in range(j + 1, J))
        lo = max(0, left - rest)
        per_fix, per_slo = d.met[c][j], slope[c][j] / N[c]
        for x in range(lo, cap + 1):
            if x:
                fix[j] += x * per_fix
                slo[j] += x * per_slo
                used[j] += x
                cur[c][j] = x
            if x == 0 or fits(j, R, have):
                place(pos, j + 1, left - x, N)
            if x:
                fix[j] -= x * per_fix
                slo[j] -= x * per_slo
                used[j] -= x
                cur[c][j] = 0
            if x and not fits_after(j, x, per_fix, per_slo, R, have):
                break  # more instances of c on j only add load

    def fits_after(j, x, per_fix, per_slo, R, have) -> bool:
        return fix[j] + x * per_fix + ((slo[j] + x * per_slo) * R if have else 0.0) <= d.cap[j] * (1 + 1e-12) + 1e-12

    vectors = [N for N in itertools.product(*[range(1, nmax[c] + 1) for c in range(C)]) if sum(N) <= total_cap]
    vectors.sort(key=sum)
    for N in vectors:
        st["vectors"] += 1
        if deadline is not None and st["vectors"] % 64 == 0 and time.monotonic() > deadline:
            st["stopped"] = True
            break
        R = max(st["best"], 0.0)
        for pos in range(C - 1, -1, -1):
            c = order[pos]
            tail_min[pos] = tail_min[pos + 1] + R * amin[c] + N[c] * mmin[c]
            tail_frac[pos] = tail_frac[pos + 1] + min((R * slope[c][j] + N[c] * d.met[c][j]) / d.cap[j]
                                                      for j in range(J) if d.allowed(c, j) and d.cap[j] > 0)
        if st["n"] is not None and tail_min[0] > sum(d.cap) * (1 + 1e-12) + 1e-12:
            continue  # spread ideally, these counts cannot beat the best rate
        place(0, 0, N[order[0]], N)
    return _bf_result(d, st["best"], st["n"], not st["stopped"],
                      {"count_vectors": len(vectors), "count_vectors_searched": st["vectors"], "placements_rated": st["leaves"]})


# --- registration --------------------------------------------------------------------------------

def _make(backend: str, name: str):
    def method(instance: Instance, problem: str, *, time_limit=None, seed=0, hint=None, max_instances=10,
               weighted_start=True, polish=True, count_search=True, weighted_cuts=True, lns=False, highs_start=False,
               **_other):
        return core.watched(lambda: solve_throughput(instance, backend, name, time_limit, seed, hint, max_instances,
                                                     bool(weighted_start), bool(polish), bool(count_search),
                                                     bool(weighted_cuts), bool(lns), bool(highs_start)))

    method.__name__ = f"throughput_{backend}"
    method.__doc__ = f"Exact throughput (Nasiri et al.) with {backend}: see the module docstring."
    return method


for _backend, _name in (("cpsat", "exact.cpsat"), ("cbc", "exact.milp-cbc"), ("highs", "exact.milp-highs")):
    # highs_start is read by HiGHS's direct MILP alone; the other two refuse it as unknown
    _opts = {k: v for k, v in OPTIONS.items() if k != "highs_start" or _backend == "highs"}
    register(_name, ["throughput"], source=SOURCE, kind="exact", options=_opts)(_make(_backend, _name))


@register("exact.bruteforce", ["throughput"], kind="exact", source="exhaustive enumeration (Nasiri et al.'s optimal scheduler)",
          options={})
def throughput_bruteforce(instance: Instance, problem: str, *, time_limit=None, seed=0, **_other) -> Result:
    """Exhaustive search for ``throughput`` (see :func:`bruteforce_throughput`); instances are
    capped at 10 per machine, as in the exact models' default."""
    return bruteforce_throughput(instance, time_limit)
