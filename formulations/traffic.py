"""Exact models for ``traffic`` (Aniello, Baldoni, Querzoni, DEBS 2013, section 3.2.2).

Each topology uses exactly S_t = min(W, E) workers, at most M_t(alpha) executors per worker,
node CPU <= capacity, placement constraints; minimise inter-node traffic, then (tie-breaker)
inter-worker traffic. Executors with identical traffic form a group (:func:`traffic_groups`;
shuffle/fields/all keep a component whole, ``global`` splits off executor 0, a measured matrix
usually gives one group per executor: the honest fall-back to per-executor variables). If r is
the rate between one executor of group g and one of group h,

    inter-node = sum_{g,h} r_gh (s_g s_h - sum_n y[g,n] y[h,n]),
    inter-worker = sum_{g,h} r_gh (s_g s_h - sum_w x[g,w] x[h,w]).

The products are rewarded, so they are linearised exactly by binary expansion
(:meth:`LinModel.product_upper`). The tie-breaker is lexicographic: phase 1 minimises
inter-node traffic; phase 2 (in the time left) fixes it at its optimum and minimises
inter-worker traffic. The reported objective and bound are inter-node (phase 1's); status
``optimal`` only when both phases are proven, ``feasible`` (bound = the phase-1 optimum, a note
in the message) when only phase 1 is.

Phase 1 first runs branch and price over node tables (:mod:`formulations._trafficbp`) when
the node classes' tables of count vectors fit a memory budget (``_trafficbp.TABLE_BYTES``,
2 GB, from the counted rows x bytes a row) and their estimated build time 30 % of the time
left, else the configuration
model of :mod:`formulations._patterns` (a node's group counts and worker count as one column,
proof by enumeration); both start from the node-level local search of
:mod:`formulations._trafficls`. After B&P, a non-free phase 2 looks for a free phase-1 optimum
(exactly among one-worker node contents, :func:`_one_worker_plan`, then by local search), then
enumerates every phase-1 optimum (:func:`formulations._trafficphase2.phase2_bp`). Phase 2 is free when the plan's inter-worker traffic equals
its inter-node traffic (its lower bound), or when every topology has one executor per worker
(:func:`_phase2_fixed`), else it runs on the configuration columns
(:mod:`formulations._trafficphase2`); the compact model above is the fall-back for both.
"""

from __future__ import annotations

import math
import time

from planner.plan import Result, Status
from planner.registry import register

from . import _patterns as patterns
from ._trafficls import NodeSearch, phase2_free_search, seed_traffic, work_budget
from ._trafficphase2 import phase2, phase2_bp, split_plan
from ._rasmodel import OPTIONS, SOURCE, Group, PlacementModel, Run, method_runner, traffic_groups


def traffic_pairs(run: Run) -> tuple[list[Group], dict[tuple[int, int], float]]:
    """Groups of all topologies and the summed rate per unordered pair of distinct groups."""
    groups: list[Group] = []
    pairs: dict[tuple[int, int], float] = {}
    for ti, t in enumerate(run.instance.topologies):
        gs, pr = traffic_groups(ti, t)
        off = len(groups)
        groups.extend(gs)
        for (a, b), r in pr.items():
            if a == b:
                continue  # a single executor to itself: never crosses a node
            key = (off + min(a, b), off + max(a, b))
            pairs[key] = pairs.get(key, 0.0) + r
    return groups, pairs


def _level_expr(pm: PlacementModel, pairs, level: str) -> tuple[dict[int, float], float]:
    """Linear expression (coefficients, constant) of inter-node ("node") or inter-worker traffic."""
    m, G = pm.m, pm.groups
    coefs: dict[int, float] = {}
    const = 0.0
    places = range(len(pm.nodes)) if level == "node" else range(len(pm.workers))
    var = pm.y if level == "node" else pm.x
    for (g, h), r in sorted(pairs.items()):
        const += r * G[g].size * G[h].size
        for p in places:
            if (g, p) in var and (h, p) in var:
                for v, c in m.product_upper(var[(g, p)], var[(h, p)], f"{level}[{g},{h},{p}]").items():
                    coefs[v] = coefs.get(v, 0.0) - r * c
    return coefs, const


def _evaluated_within(run: Run, plan, metric: str, level: float, rel: float) -> bool:
    """The plan passes the evaluator with ``metric`` at most ``level`` (relative tolerance ``rel``)."""
    from planner.evaluate import evaluate

    m = evaluate(run.instance, plan, "traffic")
    return bool(m["feasible"]) and m[metric] <= level + rel * max(1.0, abs(level))


def _phase2_free(run: Run, plan, phase1: float) -> bool:
    """Phase 2 is proven without a model when the plan's inter-worker traffic equals its
    inter-node traffic, the phase-1 optimum: inter-worker >= inter-node >= that optimum for
    every plan (traffic crossing nodes crosses workers)."""
    return _evaluated_within(run, plan, "inter_worker_traffic", phase1, 1e-9)


PHASE2_FIXED = "optimal (one executor per worker: every plan has the same inter-worker traffic)"


def _phase2_fixed(base: PlacementModel) -> bool:
    """Every topology holds at most one executor per worker (M_t(alpha) = 1, i.e. S_t = min(W, E)
    = E: a small topology on a cluster with a slot per executor and no ``workers`` set), so in
    every feasible plan each executor has a worker of its own and the inter-worker traffic is
    all traffic between distinct executors: the same for every plan, so any phase-1 optimum is
    also phase 2's."""
    return all(m == 1 for m in base.M.values())


def _phase1_kept(run: Run, plan, phase1: float) -> bool:
    """The plan passes the evaluator with inter-node traffic at the phase-1 optimum."""
    return _evaluated_within(run, plan, "inter_node_traffic", phase1, 1e-7)


def _lexicographic(run: Run, details: dict, proven2: bool) -> None:
    """Status rule: ``optimal`` means both levels are proven (inter-node optimum, then the
    least inter-worker traffic among plans with it); with phase 1 proven and phase 2 not, the
    result is ``feasible`` with bound = the phase-1 optimum (gap 0 on the reported objective)."""
    details["phase1"] = "optimal"
    if not proven2:
        run.notes.append("inter-node traffic proven optimal; the inter-worker tie-breaker (phase 2) is not proven")


# the node-level search's budget of work (the B&P seeding search and the configuration model's
# improver): LS_KICKS_PER kicks per executor x node, within LS_KICKS_MIN..LS_KICKS_MAX, a count, so
# that a slower machine runs the same search to the same plan (as the network search's since
# session 16); its seconds are a cap only: LS_CAP_PER s per executor x node within 0.05-5 s, at
# most 1/10 of the time limit (100x..x10: 500 kicks, 1.9-2.7 s on sessions 15-18's machine, where
# the earlier 2 s budget ran 346-751 kicks by the number of components and the load). More search
# is not always better: a longer one once reached 100x10x10's optimum but its B&P tree grew 5-fold,
# and 100x8x10 then started from an optimum whose phase 2 is not free (docs/benchmarks.md)
LS_KICKS_PER = 0.5
LS_KICKS_MIN, LS_KICKS_MAX = 20, 600
LS_CAP_PER = 0.005


def _search_budget(run: Run, base: PlacementModel) -> tuple[int, float]:
    """The node-level search's (kicks, seconds cap) for this instance and time limit (the cap
    at least 0.05 s under any limit)."""
    kicks, cap = work_budget(len(base.nodes) * sum(g.size for g in base.groups), run.time_limit,
                             LS_KICKS_PER, (LS_KICKS_MIN, LS_KICKS_MAX), LS_CAP_PER, (0.05, 5.0))
    return kicks, max(0.05, cap)


def _bp_nodes(K: int, cols) -> list:
    """Configuration columns [(column, count)] as ``TrafficBP.set_incumbent``'s nodes."""
    nodes = []
    for col, cnt in cols:
        _, ys, os_ = col.payload
        y = [0] * K
        for k, q in ys:
            y[k] = q
        nodes.extend([(col.family, tuple(y), tuple(o for _, o in os_))] * cnt)
    return nodes


def _polisher(run: Run, base: PlacementModel, pat, pairs, bp):
    """``TrafficBP.polish``: the node-level search (half the seeding search's kicks and seconds,
    at most 1/10 of the time left) from a B&P incumbent [(family, row, o, count)], read as the
    configuration model ``pat``'s columns; returns its best plan as set_incumbent's nodes, or
    None. None instead of a polisher when a node class has a node without slots (the search
    does not hold those)."""
    from ._trafficbp import bp_column

    ns = NodeSearch(base, pairs)
    held = set(ns.nodes)
    if any(ni not in held for fm in bp.fams for ni in fm.cls):
        return None
    kicks, cap = _search_budget(run, base)

    def polish(inc):
        Y = ns.from_columns(pat, [(bp_column(bp, f, i, o), cnt) for f, i, o, cnt in inc])
        if Y is None:
            return None
        left = run.remaining()
        budget = max(0.05, cap / 2 if left is None else min(cap / 2, 0.1 * left))
        best = ns.run([Y], budget, run.seed, kicks=max(1, kicks // 2))
        cols = None if best is None else ns.columns(pat, best[1])
        return None if cols is None else _bp_nodes(len(base.groups), cols)
    return polish


def _improver(run: Run, base: PlacementModel, pat, pairs):
    """The traffic local search as run_patterns' incumbent improver, with a bounded share of the time."""
    def improve(chosen, ub):
        left = pat.left()
        kicks, cap = _search_budget(run, base)
        budget = cap if math.isinf(left) else max(0.05, min(cap, 0.3 * left))
        return seed_traffic(base, pat, pairs, [], chosen, budget, run.seed, ub, kicks=kicks)
    return improve


def _branch_and_price(run: Run, base: PlacementModel, pairs):
    """Phase 1 by branch and price over node tables (``formulations._trafficbp``): returns
    (out, pat, const) in ``run_patterns``' format (``out["bp"]`` the search, whose tables
    phase 2 reuses), ``pat`` the configuration model holding the incumbent's columns (and
    table enumeration for phase 2), ``const`` the total pair traffic; or None when there are no
    pairs or a node class's table is refused: its CPU-feasible count vectors (counted before
    building, pins and max_per_node left out) x ``_Fam.row_bytes`` over its share of
    ``TABLE_BYTES`` (2 GB), or an estimated build time (``BUILD_RATE`` a vector) over 30 % of
    the time left."""
    from ._trafficbp import BPTable, TrafficBP, _TooBig, bp_column

    if not pairs:
        return None
    try:
        # ties are not kept here (enum_all): when phase 2 is free, as usual, they only cost
        # (60x8x4: 17 nodes instead of 2); phase2_bp searches again with the optimum as cut-off
        bp = TrafficBP(base, pairs, run.deadline(0.85))
    except _TooBig:
        return None
    pat, const = patterns.build_traffic(base, pairs, run.deadline(0.85), run.threads)
    if len(bp.tis) == 1:
        for fi, fam in enumerate(pat.families):
            fam.table = BPTable(bp, fi)
    # the seeding search gets the improver's budget (see _search_budget)
    kicks, budget = _search_budget(run, base)
    seeded = seed_traffic(base, pat, pairs, [run.hint_plan(0.25)] if run.hint else [], None, budget, run.seed,
                          kicks=kicks)
    if seeded is not None:
        bp.set_incumbent(_bp_nodes(len(base.groups), seeded[1]))
    bp.polish = _polisher(run, base, pat, pairs, bp)
    res = bp.run()
    stats = dict(bp.stats)
    if seeded is not None:
        stats["incumbent_search"] = seeded[0]
    out = {"status": res["status"], "value": res["value"], "bound": res["bound"], "chosen": None, "stats": stats, "bp": bp}
    if res["incumbent"] is not None:
        out["chosen"] = []
        for f, i, o, cnt in res["incumbent"]:
            out["chosen"].append((pat.stored(bp_column(bp, f, i, o)), cnt))
    if bp.root_lag is not None:
        lag, pi_eq, maxrc = bp.root_lag
        K, T = bp.K, len(bp.tis)
        duals = {("cover", k): float(pi_eq[k]) for k in range(K)}
        duals.update({("workers", ti): float(pi_eq[K + t]) for t, ti in enumerate(bp.tis)})
        duals.update({("conv", "node", fm.cls[0]): float(pi_eq[K + T + f]) for f, fm in enumerate(bp.fams)})
        out["lagrangian"] = (lag, duals, maxrc)
    return out, pat, const


def _one_worker_plan(run: Run, base: PlacementModel, pat, pairs, z1: float, phase1=None):
    """Phase 2 shortcut after branch and price: a plan worth the phase-1 optimum z1 (intra-node)
    whose nodes hold at most one worker per topology has inter-worker = inter-node traffic, the
    least any plan can have, so it proves phase 2. Sought by B&P over those columns only, with
    z1 as the cut-off (nodes that cannot reach it are pruned; the first plan found ends it).
    Returns (plan or None, whether the search completed without one: then no such optimum
    exists). ``phase1``: phase 1's search, whose full tables are filtered to the one-worker rows
    instead of building them."""
    from ._trafficbp import TrafficBP, _TooBig, bp_column

    left = None if run.time_limit is None else run.time_limit - (time.monotonic() - run.t0)
    deadline = None if left is None else time.monotonic() + 0.5 * left
    try:
        bp = TrafficBP(base, pairs, deadline, one_worker=True, cutoff=z1 - 2e-7 * max(1.0, abs(z1)),
                       fams=None if phase1 is None else phase1.fams)
    except _TooBig:
        return None, False
    bp.run()
    if not bp.found:
        return None, bp.complete
    chosen = []
    for f, i, o, cnt in bp.inc:
        chosen.append((pat.stored(bp_column(bp, f, i, o)), cnt))
    return patterns.traffic_plan(base, pat, chosen), False


def solve_traffic(run: Run) -> Result:
    """Minimise inter-node traffic (then inter-worker) with exactly min(W,E) workers per topology."""
    groups, pairs = traffic_pairs(run)
    details: dict = {"groups": len(groups), "phase2": "not run"}
    base = PlacementModel(run.instance, "traffic", groups, sense="min", symmetry=run.symmetry, build=False)
    quick = run.quick_infeasible(base)
    if quick is not None:
        return quick
    why = "model=compact" if run.pattern_off else patterns.applicable(base, "traffic")
    hint = None
    pat_bound = None
    hint_fallback = None
    cfg_infeasible = unproven = False
    if why is None:
        bpo = _branch_and_price(run, base, pairs)
        if bpo is not None and bpo[0]["chosen"] is None and not run.expired():
            bpo = None  # no plan found (B&P does not prove infeasibility): column generation's proof
        if bpo is not None:
            out, pat, const = bpo
            details.update({"model": "configuration", "phase1_method": "branch and price", **out["stats"]})
        else:
            pat, const = patterns.build_traffic(base, pairs, run.deadline(0.75), run.threads)
            out = patterns.run_patterns(pat, run.backend, run.threads, improve=_improver(run, base, pat, pairs) if pairs else None)
            details.update({"model": "configuration", **out.get("stats", {})})
        if out["chosen"] is not None:
            plan = patterns.traffic_plan(base, pat, out["chosen"])
            if (out["status"] == "optimal" and not pairs) or (out["status"] != "optimal" and (
                    run.expired() or not run.compact_affordable(base, len(pairs)))):
                return run.pattern_result(out, plan, bound=None if out["bound"] is None else const - out["bound"],
                                          details=details)
            if out["status"] == "optimal":
                hint = plan  # phase 1 proven: phase 2 (inter-worker) starts from it
                details["phase1_seconds"] = round(time.monotonic() - run.t0, 3)
                primary_value = const - out["value"]
        elif run.expired():
            return run.pattern_result(out, None, bound=None, details=details)
        cfg_infeasible = out["status"] == "infeasible"  # proven by its LP; the compact model explains it
        if out["status"] not in ("optimal", "infeasible"):
            run.notes.append("configuration model did not finish its proof")
            unproven = True
            if out.get("bound") is not None:
                pat_bound = const - out["bound"]
            hint_fallback = plan if out["chosen"] is not None else None
    if hint is not None:
        if _phase2_free(run, hint, primary_value):
            details["phase2"] = "optimal (inter-worker = inter-node traffic, its lower bound)"
            _lexicographic(run, details, True)
            return run.pattern_result(out, hint, bound=primary_value, details=details)
        if _phase2_fixed(base) and _phase1_kept(run, hint, primary_value):
            details["phase2"] = PHASE2_FIXED
            _lexicographic(run, details, True)
            return run.pattern_result(out, hint, bound=primary_value, details=details)
        left = None if run.time_limit is None else run.time_limit - (time.monotonic() - run.t0)
        p2s = split_plan(base, pairs, pat, out["chosen"], None if left is None else time.monotonic() + 0.2 * left)
        if p2s is not None and _phase2_free(run, p2s, primary_value):
            details["phase2"] = "optimal (the phase-1 plan's best splits keep all intra-node traffic)"
            _lexicographic(run, details, True)
            return run.pattern_result(out, p2s, bound=primary_value, details=details)
        if bpo is not None:
            # a phase-1 optimum with inter-worker = inter-node traffic proves phase 2: first the
            # exact search among one-worker node contents, then the local searches, which can
            # also find one with two workers on a node (contents without traffic between them),
            # with a short share when the exact search proved no one-worker optimum exists; both
            # before phase2_bp, which takes the rest of the limit (100x8x10: one-worker plan in
            # 4.6 s, phase2_bp not done in 50 s; 60x8x6: the local searches spent their whole
            # 30 % share, 14.6 s, finding none)
            p1w, none_one_worker = _one_worker_plan(run, base, pat, pairs, out["value"], phase1=out.get("bp"))
            if p1w is not None and _phase2_free(run, p1w, primary_value):
                details["phase2"] = "optimal (a phase-1 optimum with one worker per node and topology)"
                _lexicographic(run, details, True)
                return run.pattern_result(out, p1w, bound=primary_value, details=details)
            left = None if run.time_limit is None else run.time_limit - (time.monotonic() - run.t0)
            share, cap = (0.1, 6.0) if none_one_worker else (0.3, 60.0)
            p2f = phase2_free_search(base, pat, pairs, const, primary_value,
                                     time.monotonic() + (cap if left is None else share * left),
                                     lambda plan: _phase2_free(run, plan, primary_value), run.seed)
            if p2f is not None:
                details["phase2"] = "optimal (a phase-1 optimum found by search keeps all intra-node traffic)"
                _lexicographic(run, details, True)
                return run.pattern_result(out, p2f, bound=primary_value, details=details)
            p2b = phase2_bp(run, base, pairs, out["value"], const, phase1=out.get("bp"))
            if p2b is not None and _phase1_kept(run, p2b["plan"], primary_value):
                details["phase2"] = "optimal (every phase-1 optimum enumerated by branch and price)"
                details.update(inter_worker_bound=p2b["inter_worker_bound"], phase2_multisets=p2b["multisets"],
                               phase2_splits=p2b["splits"], phase2_bp_nodes=p2b["bp_nodes"])
                _lexicographic(run, details, True)
                return run.pattern_result(out, p2b["plan"], bound=primary_value, details=details)
        p2 = phase2(run, base, pat, pairs, out, out["value"], const)
        if p2 is not None:
            details["phase2"] = ("optimal" if p2["proven"] else "feasible") + " (configuration columns)"
            details["inter_worker_bound"] = p2["inter_worker_bound"]
            details.update(phase2_columns=p2["columns"], phase2_splits=p2["splits"], phase2_split_seconds=p2["split_seconds"],
                           phase2_rounds=p2["rounds"])
            _lexicographic(run, details, p2["proven"])
            return run.pattern_result({**out, "status": "optimal" if p2["proven"] else "feasible"}, p2["plan"],
                                      bound=primary_value, details=details)

        def phase2_objective(pm: PlacementModel) -> None:  # inter-node traffic held at its optimum
            primary, pconst = _level_expr(pm, pairs, "node")
            pm.m.add(primary, hi=primary_value - pconst + 1e-9 * max(1.0, abs(primary_value)), family="lexicographic")
            pm.m.objective, pm.m.obj_const = _level_expr(pm, pairs, "worker")

        pm = run.compact_model(groups, "min", hint, phase2_objective)
        sol2 = run.solve(pm)
        details["phase2"] = sol2.status
        best = hint
        if sol2.status in ("optimal", "feasible") and sol2.values is not None:
            details["inter_worker_bound"] = sol2.bound
            best = pm.plan(sol2.values)
        proven2 = sol2.status == "optimal"
        _lexicographic(run, details, proven2)
        return run.pattern_result({**out, "status": "optimal" if proven2 else "feasible"}, best,
                                  bound=primary_value, details=details)
    hint = hint_fallback or run.hint_plan(0.25)
    kept, kept_from = hint_fallback, None  # None: the configuration model's plan
    if hint_fallback is None and hint is not None:
        kept, kept_from = hint, f"the hint's plan ({run.hint})"
    elif hint is None and why is None:
        # the configuration model ended without a plan (its seeding search and branch and price
        # stopped by the clock: 6 s at 100x12x10 on a slow machine): a traffic-aware heuristic
        # (about 20 ms there) starts the compact model and is kept if that finds none either
        hint = kept = run.heuristic_plan("tstorm")
        kept_from = "the tstorm plan"
    if not run.compact_affordable(base, len(pairs)):
        # Storm's largeCluster03: 918,046 variables, built for 30 s past a 20 s limit (session 24)
        if cfg_infeasible:
            return run.configuration_infeasible(details)
        return run.compact_unaffordable(kept, pat_bound, details, kept_from)
    if unproven:
        run.notes.append("compact model")
    if kept_from == "the tstorm plan":
        kept_from = "the tstorm plan that started it"
        if hint is not None:
            run.notes.append("the configuration model found no plan; the compact model starts from tstorm's")
    def phase1_objective(pm: PlacementModel) -> None:
        pm.m.objective, pm.m.obj_const = _level_expr(pm, pairs, "node")

    pm = run.compact_model(groups, "min", hint, phase1_objective)
    m = pm.m
    sol = run.solve(pm)
    if sol.status == "optimal" and sol.values is not None and pairs:
        details["phase1_seconds"] = round(time.monotonic() - run.t0, 3)
        if _phase2_free(run, pm.plan(sol.values), sol.objective):
            details["phase2"] = "optimal (inter-worker = inter-node traffic, its lower bound)"
            _lexicographic(run, details, True)
            return run.result(pm, sol, details=details)
        if _phase2_fixed(base) and _phase1_kept(run, pm.plan(sol.values), sol.objective):
            details["phase2"] = PHASE2_FIXED
            _lexicographic(run, details, True)
            return run.result(pm, sol, details=details)
        # phase 2: keep inter-node traffic at its optimum, minimise inter-worker traffic
        primary, pconst = dict(m.objective), m.obj_const
        m.add(primary, hi=sol.objective - pconst + 1e-9 * max(1.0, abs(sol.objective)), family="lexicographic")
        m.hint = {k: v for k, v in enumerate(sol.values)}
        m.objective, m.obj_const = _level_expr(pm, pairs, "worker")
        sol2 = run.solve(pm)
        details["phase2"] = sol2.status
        proven2 = sol2.status == "optimal"
        _lexicographic(run, details, proven2)
        plan = pm.plan(sol2.values) if sol2.status in ("optimal", "feasible") and sol2.values is not None else None
        if plan is not None:
            details["inter_worker_bound"] = sol2.bound
        res = run.result(pm, sol, plan=plan, details=details)
        if not proven2:
            res.status = Status.FEASIBLE
        return res
    res = run.merge_bound(run.result(pm, sol, details=details), pat_bound)  # details hold the configuration stats
    if res.status == Status.UNKNOWN and kept is not None:
        return run.configuration_plan_kept(kept, pat_bound, details, sol.details, res.bound, source=kept_from)
    return res


_make = method_runner(solve_traffic)
for _name in ("exact.cpsat", "exact.milp-cbc", "exact.milp-highs"):
    register(_name, ["traffic"], source=SOURCE, kind="exact", options=dict(OPTIONS),
             summary="exact model over interchangeable-executor counts (CP-SAT / MILP)")(_make(_name))
