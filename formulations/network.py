"""Exact models for ``network``: minimise the Storm RAS network metric under the RAS limits.

For a stream (distinct downstream pair) u -> d of topology t, the metric adds, over every pair
of executors, 0 (same worker), 1 (same node), 2 (same rack) or 3 (elsewhere), and divides the
topology's sum by its executor count E_t. With counts per worker x, node y and rack z,

    sum over pairs = 3 n_u n_d - sum_r z[u,r] z[d,r] - sum_n y[u,n] y[d,n] - sum_w x[u,w] x[d,w],

because a pair in one worker is also in one node and one rack. The products are rewarded,
so :meth:`LinModel.product_upper` linearises each exactly (binary expansion of the factor with
the smaller bound). The same LinModel goes to CP-SAT, CBC and HiGHS (docs/formulations.md).

That compact model is the fall-back. :func:`solve_network` first runs the configuration model
of :mod:`formulations._patterns` (node contents as columns, proven by reduced-cost
enumeration), whose LP bound does not suffer from fractional spreading.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from planner import rates
from planner.evaluate import evaluate
from planner.plan import Plan, Result
from planner.registry import register

from . import _patterns as patterns
from ._rasmodel import OPTIONS, SOURCE, PlacementModel, Run, _places_all, component_groups, method_runner, node_kinds


def network_objective(pm: PlacementModel, cuts: bool = True) -> None:
    """Set ``pm.m``'s objective to the RAS network metric summed over topologies, and add the
    density cuts (see :func:`_density_cuts`) unless ``cuts`` is False."""
    m = pm.m
    G = pm.groups
    index = {(g.ti, g.comp.id): k for k, g in enumerate(G)}
    for ti, t in pm.topos:
        e_t = float(t.executor_count)
        before = len(m.vars)
        for u, downs in rates.downstream(t).items():
            for d in downs:
                ku, kd = index[(ti, u)], index[(ti, d)]
                nu, nd = G[ku].size, G[kd].size
                m.obj_const += 3.0 * nu * nd / e_t
                if len(pm.racks) == 1:
                    m.obj_const -= nu * nd / e_t  # one rack: every pair shares it
                else:
                    for ri in range(len(pm.racks)):
                        if (ku, ri) in pm.z and (kd, ri) in pm.z:
                            _reward(m, m.product_upper(pm.z[(ku, ri)], pm.z[(kd, ri)], f"R[{u},{d},{ri}]"), e_t)
                for ni in range(len(pm.nodes)):
                    if (ku, ni) in pm.y and (kd, ni) in pm.y:
                        _reward(m, m.product_upper(pm.y[(ku, ni)], pm.y[(kd, ni)], f"N[{u},{d},{ni}]"), e_t)
                for wi in range(len(pm.workers)):
                    if (ku, wi) in pm.x and (kd, wi) in pm.x:
                        _reward(m, m.product_upper(pm.x[(ku, wi)], pm.x[(kd, wi)], f"W[{u},{d},{wi}]"), e_t)
        if cuts:
            _density_cuts(pm, ti, t, before)


def _density_cuts(pm: PlacementModel, ti: int, t, first_var: int) -> None:
    """Valid cuts: the co-location of one place holding k executors of topology t is at most
    k^2 (1 - 1/omega) / 2 (Motzkin-Straus; omega = clique number of t's undirected stream
    graph), so at most (K (1 - 1/omega) / 2) k when the place holds at most K executors.

    Applied per worker, node and rack to the sum of the product expressions placed there.
    """
    import networkx as nx

    m, G = pm.m, pm.groups
    g = nx.Graph()
    for u, downs in rates.downstream(t).items():
        for d in downs:
            g.add_edge(u, d)
    if g.number_of_edges() == 0:
        return
    omega = max(len(c) for c in nx.find_cliques(g))
    dens = (1.0 - 1.0 / omega) / 2.0
    ks = [k for k, gr in enumerate(G) if gr.ti == ti]
    # the objective's product terms of this topology, grouped by place
    by_place: dict[str, dict[int, float]] = {}
    for v, c in m.objective.items():
        if v < first_var or c >= 0:
            continue
        name = m.vars[v].name  # W[u,d,wi].q0 / N[...] / R[...] or .p
        key = name[0] + name[name.rfind(",") + 1:name.index("]")]
        by_place.setdefault(key, {})[v] = -c * t.executor_count
    for key, prod in by_place.items():
        level, place = key[0], int(key[1:])
        var = {"W": pm.x, "N": pm.y, "R": pm.z}[level]
        tot = {var[(k, place)]: 1.0 for k in ks if (k, place) in var}
        cap = min(sum(m.vars[v].ub for v in tot), _most_executors(pm, ks, level, place))
        row = dict(prod)
        for v, c in tot.items():
            row[v] = row.get(v, 0.0) - cap * dens * c
        m.add(row, hi=0.0, family="cut")


def _reward(m, expr: dict[int, float], e_t: float) -> None:
    for v, c in expr.items():
        m.objective[v] = m.objective.get(v, 0.0) - c / e_t


def solve_network(run: Run) -> Result:
    """Minimise the RAS network metric. First the start plan bettered by the local search, the
    worker cuts (which also raise the counting bound) and, with several topologies, the
    topology search; a plan at that bound is returned optimal at once. Then the configuration
    model (node and rack contents as columns, docs/formulations.md) in the first 3/4 of the
    time limit, then, if it has not proven its plan optimal, the compact count model seeded
    with its best plan (the better bound of the two is reported), or, when that model is too
    large for the time left, the late topology search and worker cuts. On one topology whose
    node tables are refused, the worker cuts take the configuration model's time before it
    (:func:`_cuts_first`)."""
    groups = [g for ti, t in enumerate(run.instance.topologies) for g in component_groups(ti, t)]
    base = PlacementModel(run.instance, run.problem, groups, sense="min", symmetry=run.symmetry, build=False)
    quick = run.quick_infeasible(base)
    if quick is not None:
        return quick
    own = count_bounds(base)  # by topology; the topology search orders by them
    run.floor = sum(own.values())
    if run.floor > 0.0:
        run.floor_from = "the counting bound (network.count_bound)"
    why = "model=compact" if run.pattern_off else patterns.applicable(base, "network")
    incumbent = None
    cuts = None  # the worker cuts' state (_worker_cuts)
    pat_bound = None
    cfg_infeasible = False
    cuts_done = False  # the cuts had the configuration model's time (_cuts_first): none late
    det: dict = {}
    if why is None:
        # the start plan first: it is the answer when the time runs out (at an 8 s limit,
        # Storm's largeCluster01 built its model past the limit, and storm.ras then had 0.1 s)
        seed = run.start_plan("storm.ras")
        edges, const = patterns.network_edges(base)
        best = None
        if seed is not None:
            m0 = evaluate(run.instance, seed, "network")
            best = (float(m0["network_metric"]), seed) if m0["feasible"] else None
        # the searches before the model's build: a plan at the counting bound needs no model
        best = _local_search(run, base, edges, const, seed, best, det)
        # one topology: its count cuts wait for the node tables (below), which prove such
        # instances where they are built; run first they took 6.6 s of a 60 s limit on
        # generator seed 1's 100x11x10, whose table then no longer fitted the time left
        # (proven in 10-15 s in session 28, feasible 19.11 / 18.82 at 60 s in session 34)
        one = len(run.instance.topologies) == 1
        cuts, got = _worker_cuts(run, base, None if best is None else best[1], own, det, counts=not one)
        best = got or best
        own = _raise_floor(run, cuts, own)
        if best is not None and not one:
            best = _rack_moves(run, best, own, det) or best
            guided = _rack_guide(run, base, best, own, det, cuts)
            if guided is not None and guided[0] < best[0] - FLOOR_TOL * max(1.0, best[0]):
                best = guided  # the topology search below goes on from it
            best = _topology_search(run, base, best[1], own, det) or best
        if best is not None and _at_floor(run, best[0]):
            return _floor_optimal(run, best[1], det, "the start plan", "none (the start plan meets the bound)")
        if best is not None and run.past(MODEL_END):
            # the searches before the model used its build time (Storm's largeCluster01 at 8 s:
            # they end at 6.5 s, and the model's build, seeding and rack search then ran to 11 s)
            det["model"] = f"not built: the searches before it used {MODEL_END:.0%} of the time limit"
            run.notes.append("configuration model not built (no time left for it)")
            incumbent = best[1]
            if one and not run.sub_solve:  # no node table either: its count cuts are the bound
                own, done = _deferred_count_cuts(run, base, cuts, own, best, det)
                if done is not None:
                    return done
        else:
            st = _configuration_stage(run, base, seed, best, cuts, own, det)
            if st.done is not None:
                return st.done
            incumbent, pat_bound, cfg_infeasible = st.incumbent, st.pat_bound, st.cfg_infeasible
            cuts, own, cuts_done, det = st.cuts, st.own, st.cuts_done, st.det
    hint = incumbent or run.hint_plan()
    if not run.compact_affordable(base, sum(1 for _ in base.stream_pairs())):
        if cfg_infeasible:
            return run.configuration_infeasible(det)
        if incumbent is not None and len(run.instance.topologies) > 1 and run.time_limit is not None \
                and not run.past(TOPO_LATE_END):
            # the time the compact model cannot use goes to whole sub-solves of the topology
            # search (Storm's largeCluster03 left 15 s of 60 unused)
            got = _topology_search(run, base, incumbent, own, det, whole=True, end=run.deadline(TOPO_LATE_END),
                                   key="topology_search_late", cuts=cuts)
            incumbent = incumbent if got is None else got[1]
        if cuts is not None and not cuts_done and incumbent is not None and run.time_limit is not None \
                and not run.past(TOPO_LATE_END):
            # the cuts not proven go on in the time left (a topology alone on a big cluster:
            # the configuration model's tables are too large, the compact model too)
            cuts, got = _worker_cuts(run, base, incumbent, own, det, state=cuts, end=run.deadline(TOPO_LATE_END),
                                     key="worker_cuts_late")
            incumbent = incumbent if got is None else got[1]
            _raise_floor(run, cuts, own)
            if got is not None and _at_floor(run, got[0]):
                return _floor_optimal(run, incumbent, det, "the plan")
        return run.compact_unaffordable(incumbent or hint, pat_bound, det, None if incumbent else f"the hint's plan ({run.hint})")
    if why is None and not cfg_infeasible:
        run.notes.append("compact model")
    pm = run.compact_model(groups, "min", hint, network_objective)
    res = run.merge_bound(run.result(pm, run.solve(pm)), pat_bound)
    if det:
        res.details["configuration"] = det
    if not res.ok and incumbent is not None and res.status.value == "unknown":
        return run.configuration_plan_kept(incumbent, pat_bound, {"model": "configuration"}, res.details, res.bound)
    return res


@dataclass
class _Stage:
    """What the configuration model stage (:func:`_configuration_stage`) leaves to the rest of
    :func:`solve_network`: its result when it ends the solve (``done``), else its plan, its
    bound (``pat_bound``), whether its LP proved the instance infeasible, and the worker cuts'
    state, the topologies' own bounds and the details as it changed them."""

    done: Result | None = None
    incumbent: Plan | None = None
    pat_bound: float | None = None
    cfg_infeasible: bool = False
    cuts: dict | None = None
    own: dict | None = None
    cuts_done: bool = False
    det: dict = field(default_factory=dict)


def _configuration_stage(run: Run, base: PlacementModel, seed: Plan | None, best, cuts: dict | None,
                         own: dict[int, float], det: dict) -> _Stage:
    """The configuration model of :func:`solve_network` (begun before ``MODEL_END`` of the
    limit): its build with the node tables, then, on one topology without a node table, the
    deferred count cuts and the rack division (or the worker cuts first, :func:`_cuts_first`);
    then the master seeded with the start plan's and the best plan's columns, solved with the
    rack search on several racks. ``best``: (metric, plan) or None."""
    pat_bound = None
    cuts_done = False
    pat, info, const = patterns.build_network(base, run.deadline(MODEL_END), run.threads)
    if _untabled(run, pat):
        # no node table: the count cuts are this topology's bound (seed 1's 100x12x10: 18.21)
        own, done = _deferred_count_cuts(run, base, cuts, own, best, det)
        if done is not None:
            return _Stage(done=done)
        got = _rack_division(run, base, best, det) if run.time_limit is not None else None
        if got is not None:
            best = got
            if _at_floor(run, best[0]):
                return _Stage(done=_floor_optimal(run, best[1], det, "the rack division's plan"))
    if _cuts_first(run, pat, cuts):
        # one topology whose node tables are refused: the configuration model's column
        # generation then has no exact node pricing and ended with no bound on every such
        # Storm topology measured (session 31), while a longer cut may prove one
        cuts, got = _worker_cuts(run, base, None if best is None else best[1], own, det, state=cuts,
                                 end=run.deadline(TOPO_LATE_END), key="worker_cuts_untabled")
        best = got or best
        own = _raise_floor(run, cuts, own)
        cuts_done = True
        if best is not None and _at_floor(run, best[0]):
            return _Stage(done=_floor_optimal(run, best[1], det, "the plan", "none (the plan meets the bound)"))
    start = None
    for plan in (seed, None if best is None else best[1]):  # their columns go to the master
        v = None if plan is None else patterns.seed_network(base, pat, info, plan)
        if v is not None and (start is None or v > start[0] + 1e-9):
            start = (v, plan)
    if len(info["racks"]) > 1:
        # once column generation has its bound, only the rack search can close the gap (the
        # compact model's bound is far weaker at these sizes): it may run to 95 % of the limit
        out = patterns.network_racks(base, pat, info, run.backend, run.threads, incumbent=start,
                                     search_deadline=run.deadline(0.95))
    else:
        out = patterns.run_patterns(pat, run.backend, run.threads)
        if out["chosen"] is not None:
            out["chosen"] = [(pat.families[c.family].name, c, v) for c, v in out["chosen"]]
        elif start is not None and out["status"] != "infeasible":
            out.update(status="feasible", value=start[0], chosen=start[1])
    det = {"model": "configuration", **det, **out.get("stats", {})}
    if info.get("tables"):
        det["node_tables"] = info["tables"]
    plan = None
    if out["chosen"] is not None:
        plan = out["chosen"] if isinstance(out["chosen"], Plan) else patterns.network_plan(base, out["chosen"])
    if out.get("bound") is not None and out["status"] != "infeasible":
        pat_bound = const - out["bound"]
    if out["status"] in ("feasible", "unknown") and plan is not None and run.floor > 0.0:
        m = evaluate(run.instance, plan, "network")
        if m["feasible"] and _at_floor(run, m["network_metric"]):
            # the model's plan meets the bound known without it (the worker cuts)
            run.notes.append(f"the plan meets {run.floor_from}")
            out = {**out, "status": "optimal"}
            pat_bound = max(pat_bound or 0.0, run.floor)
            det["bound_from"] = run.floor_from
    if out["status"] == "optimal":
        return _Stage(done=run.pattern_result(out, plan, bound=pat_bound, details=det))
    incumbent = plan
    cfg_infeasible = out["status"] == "infeasible"  # proven by its LP; the compact model explains it
    if not cfg_infeasible:
        run.notes.append("configuration model did not finish its proof")
    return _Stage(incumbent=incumbent, pat_bound=pat_bound, cfg_infeasible=cfg_infeasible, cuts=cuts, own=own,
                  cuts_done=cuts_done, det=det)


# the worker-level local search's budget of work: LS_KICKS_PER kicks per executor x node, within
# LS_KICKS_MIN..LS_KICKS_MAX (a count, so a slower machine runs the same search to the same plan)
LS_KICKS_PER = 0.3
LS_KICKS_MIN, LS_KICKS_MAX = 20, 600
# independent searches (seeds seed, seed + 1, ...: their own random fills and kicks), each with
# that budget of kicks, the best kept. One search's end depends on its random starts: seed 1's
# 100x9x10 ended at 33.37 with seed 0 and 32.01 with seed 1 (optimum 31.88), and at 33.37 its
# two-rack search gave up (session 28)
LS_RESTARTS = 2
# and its seconds, a cap only: LS_CAP_PER s per executor x node within 0.1-10 s, at most 1/10 of
# the time limit
LS_CAP_PER = 0.01


def _local_search(run: Run, base: PlacementModel, edges: dict, const: float, seed: Plan | None, best, det: dict):
    """The best (metric, plan) so far (``best``, or None) improved by the worker-level local
    search (``_networkls``), started from ``seed`` and greedy fills, LS_RESTARTS times with
    seeds run.seed, run.seed + 1, ... (the best kept). Its budget is work, not time:
    LS_KICKS_PER x executors x nodes kicks each, within LS_KICKS_MIN..LS_KICKS_MAX, with a cap in
    seconds (LS_CAP_PER x executors x nodes, within 0.1-10 s, at most 1/10 of the time limit)
    that a machine of the speed measured in docs/benchmarks.md does not reach. Its plan is used
    only when the evaluator finds it feasible with the metric the search computed. No
    optimality claim from the search."""
    from . import _networkls

    from ._trafficls import work_budget

    if _networkls.too_large(base):
        det["local_search"] = (f"not run: {len(base.workers):,} workers x {len(base.groups):,} groups is past "
                               f"its size limit (_networkls.SEARCH_WORK_MAX)")
        return best
    size = sum(g.size for g in base.groups) * len(base.nodes)
    kicks, budget = work_budget(size, run.time_limit, LS_KICKS_PER, (LS_KICKS_MIN, LS_KICKS_MAX), LS_CAP_PER, (0.1, 10.0))
    t0 = time.monotonic()
    found = None
    for r in range(LS_RESTARTS):
        left = budget - (time.monotonic() - t0)
        if r > 0 and (left <= 0 or found is not None and found[0] >= const - 1e-9):
            break
        # target: the metric is never below 0, so a plan at 0 ends the search (small instances
        # often have one; without the target they paid the whole budget)
        got = _networkls.search_network(base, edges, [seed], left, seed=run.seed + r, target=const, kicks=kicks)
        if got is not None and (found is None or got[0] > found[0] + 1e-9):
            found = got
    det["local_search_s"] = round(time.monotonic() - t0, 2)
    det["local_search_kick_budget"] = kicks
    if found is None:
        return best
    value, plan = found
    metrics = evaluate(run.instance, plan, run.problem)
    if not metrics.get("feasible") or abs(const - value - metrics["network_metric"]) > 1e-6 * max(1.0, abs(value)):
        run.notes.append("local search plan rejected by the evaluator")
        return best
    metric = float(metrics["network_metric"])
    det["local_search_objective"] = round(metric, 9)
    if best is not None and metric >= best[0] - 1e-9:
        return best
    return metric, plan


def _worker_cuts(run: Run, base: PlacementModel, plan: Plan | None, own: dict[int, float], det: dict,
                 state: dict | None = None, end: float | None = None, key: str = "worker_cuts",
                 counts: bool = True):
    """(state, (metric, plan) or None): lower bounds on the topologies' cross-worker pairs by their
    worker cuts, and on their cross-node pairs by their node cuts
    (:mod:`formulations._workercut`), as a state {"data": each modelled cut's data by key
    (topology index, "W" or "N"), "excess": :func:`count_excess`, "cuts": {key: its bound}
    (the count cuts' keys also (topology index, "R")),
    "own": :func:`count_bounds` with those cuts, "proven": the keys whose cut is the least,
    "found": {topology index: the best worker partition's groups of (component, executor
    index)}} (give it back, with ``end``, a monotonic instant, to go on with the cuts not
    proven); and ``plan`` bettered by the worker groupings (:func:`_cut_plans`; None without a
    feasible plan). Topologies go in order of their share of ``plan``'s metric above their own
    bound (``own``), those at it skipped; without a plan, the smallest first; a topology's
    worker cut before its node cut. Each cut is hinted with the plan's workers (nodes), so
    CP-SAT stops as soon as it proves the plan's cut the least. The first call (``state`` None)
    also runs the count cuts (:func:`_count_cuts`) in their own time (unless ``counts`` is False:
    one topology's wait for its node tables, :func:`solve_network`), or, in a sub-solve of the
    topology search, takes the whole solve's cuts (``run.known_cut``). Time: until ``end``, or
    CUT_SHARE of the time left, each cut its share by executors of the time left (at least
    CUT_MIN_S; without ``end`` at most CUT_EACH_S x the square of the topology's components /
    executors, which is each cut's time without a time limit)."""
    from . import _workercut

    t_start = time.monotonic()
    inst = run.instance
    if state is None:
        state = {"data": {(ti, lvl): d for ti, _ in base.topos for lvl in "WN"
                          if (d := _workercut.cut_data(base, ti, lvl)) is not None},
                 "excess": count_excess(base), "cuts": {}, "own": own, "proven": set(), "found": {}}
        if not run.sub_solve and counts:
            _count_cuts(run, base, state, det)
        known = {k: v for k, v in run.known_cut if k in state["data"] or v[0] > 0}
        if known:
            # a sub-solve of the topology search: the whole solve's cuts of this topology hold
            # here too (every plan of the sub-instance is one of the whole instance's), and a
            # proven one is not computed again
            for k, (cut, proven) in known.items():
                state["cuts"][k] = cut
                if proven:
                    state["proven"].add(k)
            state["own"] = _cut_bounds(base, state)
    own = state["own"]
    data = {k: d for k, d in state["data"].items() if k not in state["proven"]}
    if not data:
        return state, None
    t_cuts = time.monotonic()  # the executor cuts' time is counted from here (the count cuts have theirs)
    labels: dict[str, dict] = {}
    m = None
    if plan is not None:
        m = evaluate(inst, plan, "network")
        if not m["feasible"]:
            plan = m = None
        else:
            by = m["network_metric_by_topology"]
            for p in plan.placements:
                labels.setdefault(p.topology, {})[(p.component, p.executor)] = (p.node, p.slot)
    if plan is None:
        order = sorted(data, key=lambda k: (data[k]["E"], k))
    else:
        excess = {ti: by[inst.topologies[ti].id] - own.get(ti, 0.0) for ti, _ in data}
        order = sorted((k for k in data if excess[k[0]] > FLOOR_TOL * max(1.0, own.get(k[0], 0.0))),
                       key=lambda k: (-excess[k[0]], k))
    late = end is not None
    if end is None and run.time_limit is not None:
        end = t_cuts + CUT_SHARE * run.remaining()
    left_exec = sum(data[k]["E"] for k in order)
    stats = det.setdefault(key, {"modelled": len(state["data"]), "solved": 0, "proven": 0})
    for k in order:
        ti, lvl = k
        d = data[k]
        # early, at most CUT_EACH_S x (components / executors)^2: the cut model has a Boolean
        # per executor pair and no count of interchangeable executors, and proves few cuts where
        # components have several executors each (layered 30 x 6: none in 5 s), where the
        # configuration model, over counts, is the stronger and often proves the whole plan in
        # less than a second
        each = math.inf if late else _early_cap(d["C"], d["E"])
        if end is None:
            lim = each
        else:
            left = end - time.monotonic()
            # its share by executors of the time left (a cut proven early leaves its time to
            # the rest: on largeCluster03, 5 s each for the two largest left none for 22 others)
            lim = min(each, max(CUT_MIN_S, left * d["E"] / max(1, left_exec)), left)
        left_exec -= d["E"]
        if lim < CUT_MIN_S:
            continue
        where = labels.get(inst.topologies[ti].id)
        # the hint: each executor's worker, or its node for the node cut
        hint = None if where is None else [None if (w := where.get(x)) is None else w if lvl == "W" else w[0]
                                           for x in d["executor"]]
        try:
            got = _workercut.worker_cut(d, lim, run.threads, run.seed, hint)
        except Exception as e:  # a failed cut costs its time and its bound, not the solve
            what = "worker" if lvl == "W" else "node"
            run.notes.append(f"{what} cut of {inst.topologies[ti].id} failed ({type(e).__name__}: {e})")
            continue
        stats["solved"] += 1
        if got is None:
            continue
        state["cuts"][k] = max(got["cut"], state["cuts"].get(k, 0))
        if got["proven"]:
            state["proven"].add(k)
            stats["proven"] += 1
        if lvl == "W":
            state["found"][ti] = [[d["executor"][e] for e in grp] for grp in got["groups"]]
    before = count_bounds(base, excess=state["excess"])
    state["own"] = after = _cut_bounds(base, state)
    raised = {ti for ti, _ in state["cuts"]}
    stats["raised"] = sum(1 for ti in raised if after.get(ti, 0.0) > before.get(ti, 0.0) + 1e-12)
    stats["bound_gain"] = round(sum(after.values()) - sum(before.values()), 9)
    best = _cut_plans(run, plan, m, state["found"], det) if m is not None and state["found"] else None
    det[key + "_s"] = round(time.monotonic() - t_start, 2)
    return state, best


def _count_cuts(run: Run, base: PlacementModel, state: dict, det: dict) -> None:
    """The count cuts (:func:`_workercut.count_cuts`: the LP over a topology's worker and node
    contents, and its least split over racks where no rack holds it) of each topology past the
    executor cuts' CUT_EXECUTORS_MAX executors or whose executor cuts get less than CUT_MIN_S
    early (elsewhere the executor cuts, exact minima over executors that leave out only pins,
    sites and generic resources, are as a rule the stronger), as the first values of the
    state's cuts (keys (topology index, "W", "N" or "R")), within COUNT_SHARE of the time left;
    details ``count_cuts``. Fewest components first (their
    contents are fewest: on Storm's largeCluster01 those of 2-6 components took 0.01-0.6 s each
    and gave nearly all the gain; those of 31-54 components reached the contents' cap in 0.1-0.8
    s and gave none), then the most executors."""
    from . import _workercut

    t0 = time.monotonic()
    end = None if run.time_limit is None else t0 + COUNT_SHARE * run.remaining()
    raised = 0
    # past the executor cuts, or where their early cap (CUT_EACH_S x (components / executors)^2)
    # leaves them less than CUT_MIN_S: few components of many executors each, where contents
    # are few and the executor model is weak (largeCluster01's TopologyName00018, 56 executors
    # in 3 components: +4.5 on its share by the count cut, no executor cut early)
    wide = [(ti, t) for ti, t in base.topos if t.executor_count > _workercut.CUT_EXECUTORS_MAX
            or _early_cap(len(t.components), t.executor_count) < CUT_MIN_S]
    for ti, t in sorted(wide, key=lambda x: (len(x[1].components), -x[1].executor_count, x[0])):
        if end is not None and time.monotonic() > end:
            break
        try:
            got = _workercut.count_cuts(base, ti, end)
        except Exception as e:  # a failed cut costs its bound, not the solve
            run.notes.append(f"count cut of {t.id} failed ({type(e).__name__}: {e})")
            continue
        for lvl, cut in got.items():
            if cut > state["excess"].get(ti, [0, 0, 0])["WNR".index(lvl)]:
                state["cuts"][(ti, lvl)] = max(cut, state["cuts"].get((ti, lvl), 0))
                raised += 1
    if state["cuts"]:
        state["own"] = _cut_bounds(base, state)
    if wide:
        det["count_cuts"] = {"raised": raised, "s": round(time.monotonic() - t0, 2)}
    _joint_cut(run, base, state, end, det)


def _joint_cut(run: Run, base: PlacementModel, state: dict, end: float | None, det: dict) -> None:
    """The joint rack cut (:func:`_rackguide.joint_rack_cut`: the wide topologies' least share
    of the metric's rack level when the racks hold every topology at once) of the wide
    topologies, at most GUIDE_WIDE_MAX of them, until ``end``; details ``joint_rack_cut``. Its
    gain over their own rack levels, state["joint_gain"], is added to the floor by
    :func:`_raise_floor`. Storm's largeCluster03 with its ackers: TopologyName00000
    and 00047, 39.12 where their rack-level count cuts give 28.51, proven in 2.9 s."""
    from . import _rackguide

    if len(base.topos) < 2:
        return  # alone on the racks: the rack-level count cut is the same model
    big, why = _rackguide.modelled(base)
    if not big or why:
        return
    t0 = time.monotonic()
    split = {ti: c for (ti, lvl), c in state["cuts"].items() if lvl == "R" and ti in big}
    try:
        got = _rackguide.joint_rack_cut(base, big, t0 + JOINT_FREE_S if end is None else end, split)
    except Exception as e:  # a failed cut costs its bound, not the solve
        run.notes.append(f"joint rack cut failed ({type(e).__name__}: {e})")
        return
    gain = 0.0
    if got is not None:
        # less the wide topologies' rack levels in their own bounds: the own bounds' levels
        # add, so only the excess is new
        gain = max(0.0, got - _rack_levels(base, state, big))
        state["joint_gain"] = gain
        state["joint_bound"] = got
    det["joint_rack_cut"] = {"bound": None if got is None else round(got, 6), "gain": round(gain, 6),
                             "s": round(time.monotonic() - t0, 2)}


def _rack_levels(base: PlacementModel, state: dict, tis: list[int]) -> float:
    """The topologies ``tis``' rack levels in their own bounds: the counting bound's pairs
    split over racks, or their rack-level count cuts where higher (the cuts' ``state``), each
    divided by its topology's executors."""
    execs = dict(base.topos)
    return sum(max(state["excess"].get(ti, [0, 0, 0])[2], state["cuts"].get((ti, "R"), 0))
               / float(execs[ti].executor_count) for ti in tis)


def _cut_bounds(base: PlacementModel, state: dict) -> dict[int, float]:
    """:func:`count_bounds` with the worker and node cuts of :func:`_worker_cuts`' state."""
    return count_bounds(base, {ti: c for (ti, lvl), c in state["cuts"].items() if lvl == "W"},
                        excess=state["excess"],
                        node_cuts={ti: c for (ti, lvl), c in state["cuts"].items() if lvl == "N"},
                        rack_cuts={ti: c for (ti, lvl), c in state["cuts"].items() if lvl == "R"})


def _cuts_first(run: Run, pat, cuts: dict | None) -> bool:
    """Whether the worker cuts not yet proven get the configuration model's time before it
    (until TOPO_LATE_END of the limit, the late cuts' end, so none after it): one topology, a time
    limit, and no node family priced by table (``pat``, :func:`patterns.build_network`). Then
    column generation prices nodes by heuristics and CP-SAT, and on the six Storm topologies
    alone that reached it (largeCluster03, 52-54 executors) it ended with no bound at 10, 30
    and 60 s, while each cut is restarted from nothing by every call, so one long call proves
    what two short ones do not (TopologyName00019's cut: 17 s)."""
    if cuts is None or run.time_limit is None or not set(cuts["data"]) - cuts["proven"]:
        return False
    return _untabled(run, pat)


def _untabled(run: Run, pat) -> bool:
    """One topology, not a sub-solve, and no node family of the configuration model ``pat``
    (:func:`patterns.build_network`) priced by table: that model has no exact node pricing, so
    the count cuts run (one topology's wait for the tables), then, with a time limit, the rack
    division (:func:`_rack_division`) and the cuts first (:func:`_cuts_first`)."""
    if run.sub_solve or len(run.instance.topologies) != 1:
        return False
    return not any(f.table is not None for f in pat.families if f.name.startswith("node"))


def _deferred_count_cuts(run: Run, base: PlacementModel, cuts: dict, own: dict[int, float], best, det: dict):
    """One topology's count cuts where no node table is built (:func:`_untabled`, or no model
    at all): (the own bounds raised by them, the optimal Result when ``best`` meets the floor,
    else None)."""
    _count_cuts(run, base, cuts, det)
    own = _raise_floor(run, cuts, own)
    if best is not None and _at_floor(run, best[0]):
        return own, _floor_optimal(run, best[1], det, "the plan")
    return own, None


def _raise_floor(run: Run, cuts: dict, own: dict[int, float]) -> dict[int, float]:
    """The own bounds by topology with the worker, node and count cuts (``cuts``, :func:`_worker_cuts`' state),
    whose sum with the joint rack cut's gain (:func:`_joint_cut`) becomes the solve's floor when a
    cut was found; ``own`` when none was."""
    if not cuts["cuts"] and not cuts.get("joint_gain"):
        return own
    gain = cuts.get("joint_gain", 0.0)
    run.floor = sum(cuts["own"].values()) + gain
    run.floor_from = "the counting bound with the worker and node cuts (network.count_bounds)"
    if gain > 0.0:
        run.floor_from += " and the joint rack cut"
    return cuts["own"]


def _floor_optimal(run: Run, plan: Plan, det: dict, what: str, model: str | None = None) -> Result:
    """``plan`` returned ``optimal``: its metric meets the solve's floor (:func:`_at_floor`),
    whose source is named in the message (``what`` meets it) and in details ``bound_from``
    (``model``: details ``model``, when no model was solved)."""
    run.notes.append(f"{what} meets {run.floor_from}")
    det = {**({"model": model} if model else {}), **det, "bound_from": run.floor_from}
    return run.pattern_result({"status": "optimal"}, plan, bound=max(0.0, run.floor), details=det)


def _early_cap(components: int, executors: int) -> float:
    """An executor cut's time at most in the early call (also its time without a time limit):
    CUT_EACH_S x (components / executors)^2 (see :func:`_worker_cuts`)."""
    return CUT_EACH_S * (components / max(1, executors)) ** 2


def _at_floor(run: Run, metric: float) -> bool:
    """Whether a plan of this metric meets the solve's floor (FLOOR_TOL): it is optimal."""
    return metric <= run.floor + FLOOR_TOL * max(1.0, run.floor)


def _cut_plans(run: Run, plan: Plan, m: dict, found: dict[int, list], det: dict) -> tuple[float, Plan]:
    """(metric, plan): ``plan`` with topologies placed again by their worker cuts' partitions
    (``found``: {topology index: groups of (component, executor index)}): each group one
    worker, packed onto as few nodes as :meth:`Residuals.place` finds room on. A topology's new
    placement is kept when the evaluator passes it on its residual instance with a lower share
    of the metric, and the merged plan when it passes on the whole instance. Where the groups
    fit one node, the topology's share is the cut over its executors: at the bound, when the
    cut is proven. ``m``: ``plan``'s evaluation (feasible)."""
    inst = run.instance
    best = (float(m["network_metric"]), plan)
    by = dict(m["network_metric_by_topology"])
    resid = Residuals(inst, plan)
    kept = 0
    for ti, groups in found.items():
        tid = inst.topologies[ti].id
        try:
            new = resid.place(tid, groups)
            got = None if new is None else evaluate(resid.instance_for(tid), Plan(placements=new), "network")
        except Exception as e:  # a failed placement costs its time, not the solve
            run.notes.append(f"the worker cut's plan of {tid} failed ({type(e).__name__}: {e})")
            continue
        if got is None:
            continue
        if got["feasible"] and got["network_metric"] < by[tid] - FLOOR_TOL * max(1.0, by[tid]):
            resid.replace(tid, new)
            by[tid] = float(got["network_metric"])
            kept += 1
    det["cut_plans_kept"] = det.get("cut_plans_kept", 0) + kept
    if not kept:
        return best
    plan = resid.plan()
    m = evaluate(inst, plan, "network")
    if not m["feasible"] or abs(m["network_metric"] - sum(by.values())) > 1e-6 * max(1.0, m["network_metric"]):
        run.notes.append("the worker cuts' plan was rejected by the evaluator")
        return best
    return float(m["network_metric"]), plan


def _topology_search(run: Run, base: PlacementModel, plan: Plan, own: dict[int, float], det: dict, whole: bool = False,
                     end: float | None = None, key: str = "topology_search", cuts: dict | None = None):
    """``plan`` improved topology by topology, as (metric, plan), or None when the evaluator
    rejects ``plan``: each topology whose share of the metric is above its own counting bound
    (``own``, :func:`count_bounds` by topology index) is taken out and placed again, alone,
    on its residual instance (:class:`Residuals`: the nodes' CPU, memory and resources that
    the other topologies leave, and the ports none of them holds), starting from its current
    placement, so a sub-solve can only keep or better it. The topology's executors keep their
    ids, so the sub-plan replaces its old placement; the merged plan is kept when the
    evaluator finds it feasible and its metric lower.

    Without ``whole``, one pass of the local search on each sub-instance (``_local_search``,
    a fraction of a second each), within TOPO_SHARE of the time left (or until ``end``, a
    monotonic instant). With ``whole``, passes of this method's whole solve on each
    sub-instance (``solve_network``, which returns at once where its start meets the
    sub-instance's bound) until a pass gains nothing, at most TOPO_WHOLE_PASSES, each sub-solve
    its topology's share by executors of the time left before ``end`` (at least
    TOPO_SOLVE_MIN_S), or TOPO_FREE_S without a time limit: the late call, on the
    configuration model's plan, when the compact model is too large for the time left (whole
    sub-solves earlier took the configuration model's time on mid-sized instances and weakened
    its bounds). Order: the largest excess over the own bound first. A heuristic: no
    optimality claim from it; the early call's plan, like the local search's, becomes a column
    set of the configuration model (``seed_network``). ``key`` names its details; ``cuts``, the
    worker cuts' state (:func:`_worker_cuts`), gives each whole sub-solve its topology's cut, so
    a proven one is not computed again."""
    inst = run.instance
    t_start = time.monotonic()
    if end is None and run.time_limit is not None:
        end = t_start + TOPO_SHARE * run.remaining()
    m = evaluate(inst, plan, "network")
    if not m["feasible"]:
        return None
    start = (float(m["network_metric"]), plan)
    resid = Residuals(inst, plan)
    stats = {"local_searches": 0, "sub_solves": 0, "improved": 0}
    by = dict(m["network_metric_by_topology"])
    for npass in (range(1, 1 + TOPO_WHOLE_PASSES) if whole else [0]):
        order = sorted(((by[t.id] - own.get(ti, 0.0), ti) for ti, t in enumerate(inst.topologies)), reverse=True)
        order = [ti for excess, ti in order if excess > FLOOR_TOL * max(1.0, by[inst.topologies[ti].id])]
        left_exec = sum(inst.topologies[ti].executor_count for ti in order)
        gained = False
        for ti in order:
            t = inst.topologies[ti]
            left = None if end is None else end - time.monotonic()
            if npass == 0:
                lim = left
                if left is not None and left < TOPO_MIN_S:
                    break
            elif left is None:
                lim = TOPO_FREE_S
            else:
                # a whole sub-solve may overrun a short limit (2 s on largeCluster03): it ends
                # TOPO_SOLVE_MIN_S before the search's end, and is not started with less than that
                lim = min(max(TOPO_SOLVE_MIN_S, left * t.executor_count / max(1, left_exec)), left - TOPO_SOLVE_MIN_S)
                if lim < TOPO_SOLVE_MIN_S:
                    break
            left_exec -= t.executor_count
            mine = Plan(placements=list(resid.mine.get(t.id, [])))
            try:
                sub_inst = resid.instance_for(t.id, TOPO_NODES)
                # its cuts, keyed for the sub-instance, whose one topology is index 0
                known = () if cuts is None else tuple(((0, lvl), (c, (i, lvl) in cuts["proven"]))
                                                      for (i, lvl), c in cuts["cuts"].items() if i == ti)
                sub = _replace_topology(run, sub_inst, mine, by[t.id], npass == 0, lim, known)
            except Exception as e:  # a failed sub-solve costs its time, not the solve
                run.notes.append(f"topology search: {t.id}'s sub-solve failed ({type(e).__name__}: {e})")
                continue
            finally:
                stats["local_searches" if npass == 0 else "sub_solves"] += 1
            if sub is None:
                continue
            # the sub-plan is checked on its residual instance (what the others leave), the
            # merged plan once at the end
            got = evaluate(sub_inst, sub, "network")
            if got["feasible"] and got["network_metric"] < by[t.id] - FLOOR_TOL * max(1.0, by[t.id]):
                resid.replace(t.id, sub.placements)
                by[t.id] = float(got["network_metric"])
                stats["improved"] += 1
                gained = True
        if (npass > 0 and not gained) or (end is not None and end - time.monotonic() < TOPO_MIN_S):
            break
    det[key + "_s"] = round(time.monotonic() - t_start, 2)
    det[key] = stats
    if not stats["improved"]:
        return start
    plan = resid.plan()
    m = evaluate(inst, plan, "network")
    stats["objective"] = round(float(m["network_metric"]), 9)
    if not m["feasible"] or abs(m["network_metric"] - sum(by.values())) > 1e-6 * max(1.0, m["network_metric"]):
        run.notes.append("the topology search's plan was rejected by the evaluator")
        return start
    return float(m["network_metric"]), plan


def _rack_moves(run: Run, best: tuple[float, Plan], own: dict[int, float], det: dict,
                end: float | None = None) -> tuple[float, Plan] | None:
    """``best`` (metric, plan) with topologies moved onto fewer racks, or None when no move
    gains: a topology A spread over more racks than it needs is taken out together with one other
    topology B; A is placed alone on the fewest racks that would hold it once B is gone (by CPU and
    memory left by the others), then B on what remains anywhere, each by the solve's start
    heuristic (``Run.start_plan``: storm.ras, else the alignment packing); the move is kept when the
    evaluator finds the merged plan feasible and better. The topology search, which moves one
    topology at a time, cannot make such a move: A's racks are full of B. Storm's largeCluster02:
    TopologyName00011 (793,450 CPU) spread over 4 racks, with TopologyName00045 filling the two
    racks that could hold it; moved, 8862.25 -> 8620.68.

    A: the topologies over two or more racks, the largest excess over their own bound (``own``)
    first, at most RACK_MOVE_TOPOLOGIES, none with a pinned or sited component; B: the
    RACK_MOVE_PARTNERS topologies with the most CPU. Within RACK_MOVE_SHARE of the time left (or
    until ``end``). A heuristic: no optimality claim."""
    inst = run.instance
    if len(inst.cluster.racks) < 2 or len(inst.topologies) < 2:
        return None
    t_start = time.monotonic()
    if end is None and run.time_limit is not None:
        end = t_start + RACK_MOVE_SHARE * run.remaining()
    rack_of = inst.cluster.rack_of()
    rids = [r.id for r in inst.cluster.racks]
    cap = {r.id: np.array([sum(n.cpu for n in r.nodes), sum(n.memory_mb for n in r.nodes)]) for r in inst.cluster.racks}
    need = {t.id: np.array([sum(c.cpu * c.parallelism for c in t.components),
                            sum(c.memory_mb * c.parallelism for c in t.components)]) for t in inst.topologies}
    comp = {(t.id, c.id): c for t in inst.topologies for c in t.components}
    metric, plan = best
    stats = {"tried": 0, "moved": 0}

    def uses(pl: Plan) -> dict[str, dict[str, np.ndarray]]:
        out: dict[str, dict[str, np.ndarray]] = {}
        for q in pl.placements:
            c = comp[(q.topology, q.component)]
            by_rack = out.setdefault(q.topology, {})
            r = rack_of[q.node]
            by_rack[r] = by_rack.get(r, 0.0) + np.array([c.cpu, c.memory_mb])
        return out

    m = evaluate(inst, plan, "network")
    if not m["feasible"]:
        return None
    by = dict(m["network_metric_by_topology"])
    index = {t.id: ti for ti, t in enumerate(inst.topologies)}
    use = uses(plan)
    movable = [t for t in inst.topologies if len(use.get(t.id, {})) >= 2
               and all(c.nodes is None and c.site is None for c in t.components)]
    movable.sort(key=lambda t: (-(by[t.id] - own.get(index[t.id], 0.0)), t.id))
    for a in movable[:RACK_MOVE_TOPOLOGIES]:
        if end is not None and time.monotonic() > end:
            break
        if by[a.id] - own.get(index[a.id], 0.0) <= FLOOR_TOL * max(1.0, by[a.id]):
            continue  # at its own bound (a move before may have put it there)
        now = len(use.get(a.id, {}))
        used = {r: sum((u.get(r, 0.0) for u in use.values()), np.zeros(2)) for r in rids}
        # the partners: the largest topologies by CPU, whose room A's racks most likely need
        partners = sorted((tid for tid in use if tid != a.id),
                          key=lambda tid: (-sum(float(v[0]) for v in use[tid].values()), tid))[:RACK_MOVE_PARTNERS]
        for b in partners:
            if end is not None and time.monotonic() > end:
                break
            free = {r: cap[r] - used[r] + use[a.id].get(r, 0.0) + use[b].get(r, 0.0) for r in rids}
            chosen, got = [], np.zeros(2)
            for r in sorted(rids, key=lambda r: (-float(free[r][0]), r)):
                if (got >= need[a.id]).all():
                    break
                chosen.append(r)
                got = got + np.maximum(free[r], 0.0)
            if not (got >= need[a.id]).all() or len(chosen) >= now:
                continue
            stats["tried"] += 1
            moved = _move_pair(run, plan, a.id, b, set(chosen), end)
            if moved is None:
                continue
            m2 = evaluate(inst, moved, "network")
            if m2["feasible"] and m2["network_metric"] < metric - FLOOR_TOL * max(1.0, metric):
                metric, plan = float(m2["network_metric"]), moved
                by = dict(m2["network_metric_by_topology"])
                use = uses(plan)
                stats["moved"] += 1
                break
    det["rack_moves_s"] = round(time.monotonic() - t_start, 2)
    det["rack_moves"] = stats
    return (metric, plan) if stats["moved"] else None


def _rack_guide(run: Run, base: PlacementModel, best: tuple[float, Plan], own: dict[int, float],
                det: dict, cuts: dict | None = None) -> tuple[float, Plan] | None:
    """A second plan beside ``best``: the rack guide's (:mod:`formulations._rackguide`: every
    topology's executors divided over the racks by one CP-SAT model, the wide topologies held
    to their racks by the alignment packing), bettered by the topology search (details
    ``topology_search_guided``), as (metric, plan); None when the guide does not apply (fewer
    than two racks, no topology wider than GUIDE_FRAC of a rack, a model past GUIDE_VARS_MAX
    counts, or ``best``'s wide topologies within ``_rackguide.GUIDE_MIN_EXCESS`` of the metric
    above the least rack level known for them: the joint rack cut's, else their own rack levels,
    from the cuts' state ``cuts``) or finds no packable division. The model gets GUIDE_SHARE of the time left, the
    search GUIDE_SEARCH_SHARE of what is left after it. Storm's largeCluster03 with its ackers
    at 60 s: 705-737, against 761-791 without the guide (docs/benchmarks.md, session 33). A
    heuristic: no optimality claim."""
    from . import _rackguide

    t0 = time.monotonic()
    end = None if run.time_limit is None else t0 + GUIDE_SHARE * run.remaining()
    try:
        least = None
        if cuts is not None:
            least = cuts.get("joint_bound")
            if least is None:
                least = _rack_levels(base, cuts, _rackguide.wide(base))
        plan, info = _rackguide.guided_plans(run, base, best, end, least=least)
    except Exception as e:  # a failed guide costs its time, not the solve
        run.notes.append(f"rack guide failed ({type(e).__name__}: {e})")
        return None
    if not info["wide"]:
        return None
    det["rack_guide"] = info
    got = None
    if plan is not None:
        search_end = None if run.time_limit is None else time.monotonic() + GUIDE_SEARCH_SHARE * run.remaining()
        got = _topology_search(run, base, plan, own, det, end=search_end, key="topology_search_guided")
        if got is not None:
            info["objective"] = round(got[0], 9)
    det["rack_guide_s"] = round(time.monotonic() - t0, 2)
    return got


def _rack_division(run: Run, base: PlacementModel, best: tuple | None, det: dict) -> tuple | None:
    """(metric, plan) better than ``best`` from the rack division (one topology wider than half
    a rack, :func:`_rackguide.divided_plan`: its executors divided over the racks keeping the
    most pairs within racks, each rack's part solved alone by this solve), or None; in
    DIVISION_SHARE of the time left. On generator seed 1's 100x12x10 the local search's plan
    is 18.82 and the division's 18.50 (session 34)."""
    from . import _rackguide

    why = _rackguide.divisible(run.instance, base)
    if why is not None:
        det["rack_division"] = {"skipped": why}
        return None
    t0 = time.monotonic()
    end = None if run.time_limit is None else t0 + DIVISION_SHARE * run.remaining()
    got, info = _rackguide.divided_plan(run, base, end, solve_network)
    info["s"] = round(time.monotonic() - t0, 2)
    det["rack_division"] = info
    if got is None:
        return None
    info["objective"] = round(got[0], 9)
    if best is not None and got[0] >= best[0] - FLOOR_TOL * max(1.0, best[0]):
        return None
    return got


def _move_pair(run: Run, plan: Plan, a: str, b: str, racks: set[str], end: float | None) -> Plan | None:
    """``plan`` with topology ``a`` placed again on ``racks`` only, with ``b`` out of the way,
    then ``b`` placed again anywhere on what is left (each by ``Run.start_plan`` on its residual
    instance), or None when either finds no plan that places all its executors."""
    res = Residuals(run.instance, Plan(placements=[q for q in plan.placements if q.topology != b]))
    sub = res.instance_for(a)
    sub = sub.model_copy(update={"cluster": sub.cluster.model_copy(update={
        "racks": [r for r in sub.cluster.racks if r.id in racks]})})
    for tid in (a, b):
        if tid == b:
            sub = res.instance_for(b)  # b is in no plan of ``res``: what all the others leave
        lim = None if end is None else max(0.1, end - time.monotonic())
        sub_run = Run(sub, "network", run.method, lim, run.threads, None, run.symmetry, run.seed, run.model)
        sub_run.sub_solve = True
        got = sub_run.start_plan("storm.ras")
        if got is None or not _places_all(sub, got):
            return None
        res.replace(tid, got.placements)
    return res.plan()


def _replace_topology(run: Run, sub_inst, mine: Plan, metric: float, quick: bool, lim: float | None,
                      cut: tuple = ()) -> Plan | None:
    """One topology's plan on its residual instance ``sub_inst``, better than its placement
    ``mine`` (of metric ``metric``), or None: by the local search alone (``quick``) or by the
    whole solve with ``mine`` as its start, within ``lim`` seconds, given the whole solve's
    cuts of the topology (``cut``: ((key, (cut, proven)), ...), keys as :func:`_worker_cuts`'
    for the sub-instance)."""
    sub_run = Run(sub_inst, "network", run.method, lim, run.threads, "its placement in the whole plan",
                  run.symmetry, run.seed, run.model)
    sub_run._hint = (mine,)
    sub_run.sub_solve = True
    sub_run.known_cut = cut
    if quick:
        groups = component_groups(0, sub_inst.topologies[0])
        sub_base = PlacementModel(sub_inst, "network", groups, sense="min", symmetry=run.symmetry, build=False)
        edges, const = patterns.network_edges(sub_base)
        got = _local_search(sub_run, sub_base, edges, const, mine, (metric, mine), {})
        return None if got[1] is mine else got[1]
    res = solve_network(sub_run)
    if res.plan is None or res.status.value not in ("optimal", "feasible"):
        return None
    return res.plan


class Residuals:
    """The residual instances of one plan, topology by topology, from one cluster state that
    holds the whole plan: a topology's residual instance is that topology alone on what the
    others leave (each node's free CPU, memory and generic resources, and the ports no other
    topology's worker holds; racks, sites and ids unchanged, so a sub-plan's placements are
    the whole plan's). :meth:`replace` swaps a topology's placements."""

    def __init__(self, instance, plan: Plan):
        from heuristics.common import ClusterState

        self.instance = instance
        self.st = ClusterState(instance)
        # each node's CPU and memory, for the free shares that rank nodes under a node cap
        self.cap_cpu = np.array([n.cpu for n in self.st.nodes], dtype=float) + 1e-12
        self.cap_mem = np.array([n.memory_mb for n in self.st.nodes], dtype=float) + 1e-12
        self.st.apply_placements(plan.placements)
        self.mine: dict[str, list] = {}
        for p in plan.placements:
            self.mine.setdefault(p.topology, []).append(p)

    def instance_for(self, tid: str, max_nodes: int | None = None):
        """Topology ``tid``'s residual instance; with ``max_nodes``, only the nodes that hold
        it and, up to that many in all, those with the most free room (the free shares of CPU
        plus memory, with a free port), racks that keep no node left out."""
        st = self.st
        t = self.instance.topology(tid)
        st.unassign_topology(t)
        try:
            keep = None
            if max_nodes is not None and st.N > max_nodes:
                own = {st.index[p.node] for p in self.mine.get(tid, [])}
                room = st.cpu / self.cap_cpu + st.mem / self.cap_mem
                free = [i for i in np.argsort(-room, kind="stable") if i not in own and st.free_slots[i] > 0]
                keep = own | set(int(i) for i in free[:max(0, max_nodes - len(own))])
            racks = []
            for r in self.instance.cluster.racks:
                nodes = []
                for n in r.nodes:
                    i = st.index[n.id]
                    if keep is not None and i not in keep:
                        continue
                    res = {k: max(0.0, float(st.res[i][j])) for j, k in enumerate(st.res_names) if k in n.resources}
                    nodes.append(n.model_copy(update={
                        "cpu": max(0.0, float(st.cpu[i])), "memory_mb": max(0.0, float(st.mem[i])), "resources": res,
                        "slots": [p for p in n.slots if (i, p) not in st.owner]}))
                if nodes or keep is None:
                    racks.append(r.model_copy(update={"nodes": nodes}))
        finally:
            st.apply_placements(self.mine.get(tid, []))
        cluster = self.instance.cluster.model_copy(update={"racks": racks})
        if keep is not None and any(c.nodes is not None for c in t.components):
            # pins name only the nodes kept (the topology's own nodes, where its pinned
            # executors are, are always kept)
            kept = {n.id for r in racks for n in r.nodes}
            t = t.model_copy(update={"components": [
                c if c.nodes is None else c.model_copy(update={"nodes": [n for n in c.nodes if n in kept]})
                for c in t.components]})
        return self.instance.model_copy(update={"topologies": [t], "cluster": cluster})

    def place(self, tid: str, groups: list[list[tuple[str, int]]]) -> list | None:
        """Placements of topology ``tid`` with each of ``groups`` (lists of (component,
        executor index)) as one worker, on what the other topologies leave, or None when some
        group finds no node: the groups go, the largest CPU first, onto the nodes already
        used, then onto the others by most free room, each into a free port of the first node
        whose free CPU, memory and resources take the whole group (pins and max per node
        checked too). The state is left as it was; the evaluator judges the result."""
        from planner.plan import Placement

        st = self.st
        t = self.instance.topology(tid)
        st.unassign_topology(t)
        try:
            reqs = st.reqs(t)
            room = st.cpu / self.cap_cpu + st.mem / self.cap_mem
            order = [int(i) for i in np.argsort(-room, kind="stable") if st.free_slots[i] > 0]
            used: list[int] = []
            out = []
            for grp in sorted(groups, key=lambda g: -sum(reqs[c].cpu for c, _ in g)):
                rs = [reqs[c] for c, _ in grp]
                if sum(r.onheap for r in rs) > t.max_heap_mb + 1e-9:
                    return None
                racks = {st.node_rack[i] for i in used}
                # the nodes used, then the others of their racks, then the rest (by free room)
                rest = sorted((i for i in order if i not in used), key=lambda i: st.node_rack[i] not in racks)
                for i in used + rest:
                    port = next((p for p in st.ports[i] if (i, p) not in st.owner), None)
                    if port is None or not self._group_fits(tid, rs, i):
                        continue
                    for (c, k), r in zip(grp, rs):
                        st.assign(tid, r, k, i, port)
                        out.append(Placement(topology=tid, component=c, executor=k, node=st.node_ids[i], slot=port))
                    if i not in used:
                        used.append(i)
                    break
                else:
                    return None
            return out
        finally:
            st.unassign_topology(t)
            st.apply_placements(self.mine.get(tid, []))

    def _group_fits(self, tid: str, rs: list, i: int) -> bool:
        st = self.st
        if sum(r.cpu for r in rs) > st.cpu[i] + 1e-9 or sum(r.mem for r in rs) > st.mem[i] + 1e-9:
            return False
        res = [r.res for r in rs if r.res is not None]
        if res and np.any(st.res[i] < sum(res) - 1e-9):
            return False
        per: dict[str, int] = {}
        for r in rs:
            per[r.id] = per.get(r.id, 0) + 1
            if r.site is not None and st.site[i] != r.site or r.nodes is not None and i not in r.nodes:
                return False
            if r.max_per_node is not None and st.node_comp[(i, tid, r.id)] + per[r.id] > r.max_per_node:
                return False
        return True

    def replace(self, tid: str, placements: list) -> None:
        self.st.unassign_topology(self.instance.topology(tid))
        self.mine[tid] = list(placements)
        self.st.apply_placements(self.mine[tid])

    def plan(self) -> Plan:
        return Plan(placements=[p for ps in self.mine.values() for p in ps])


# the rack moves (_rack_moves): topologies tried, partners per topology, the share of the time left
RACK_MOVE_TOPOLOGIES = 4
RACK_MOVE_PARTNERS = 3
RACK_MOVE_SHARE = 0.1
# the rack guide (_rack_guide): its model's share of the time left, then its topology search's
GUIDE_SHARE = 0.15
GUIDE_SEARCH_SHARE = 0.25
# the joint rack cut's time without a time limit (with one, the count cuts' share)
JOINT_FREE_S = 30.0
# one wide topology's rack division (_rack_division): this share of the time left
DIVISION_SHARE = 0.3
# plans within this relative distance of the counting bound are optimal; gains below it are none
FLOOR_TOL = 1e-9
# the topology search: its share of the time left, the least time left for a local search and
# for a whole sub-solve (sub-solves overrun short limits by up to 2 s on largeCluster03), a
# sub-solve's time without a time limit, and the passes of whole sub-solves at most
TOPO_SHARE = 0.4
TOPO_MIN_S = 0.3
TOPO_SOLVE_MIN_S = 1.0
TOPO_FREE_S = 10.0
TOPO_WHOLE_PASSES = 2
# the worker cuts (_worker_cuts): at most this share of the time left, each cut its share by
# executors of it, at least CUT_MIN_S and at most CUT_EACH_S x (components / executors)^2
CUT_SHARE = 0.2
CUT_EACH_S = 8.0
CUT_MIN_S = 0.2
# the count cuts (_count_cuts): at most this share of the time left, before the executor cuts
COUNT_SHARE = 0.15
# when the compact model is too large for the time left, the topology search's whole sub-solves
# go on until this share of the limit
TOPO_LATE_END = 0.9
# the configuration model is built until this share of the time limit, and not begun after it
MODEL_END = 0.75
# a sub-instance's nodes at most: those of the topology and the freest (Storm's largeCluster01
# has 1,312 nodes; its sub-instances' local searches took 7 s each and gained nothing)
TOPO_NODES = 100


_make = method_runner(solve_network)
for _name in ("exact.cpsat", "exact.milp-cbc", "exact.milp-highs"):
    register(_name, ["network"], source=SOURCE, kind="exact", options=dict(OPTIONS),
             summary="exact model over component counts (CP-SAT / MILP)")(_make(_name))


def count_bound(pm: PlacementModel) -> float:
    """The sum of :func:`count_bounds` over the topologies (a lower bound on the metric)."""
    return sum(count_bounds(pm).values())


def count_bounds(pm: PlacementModel, cuts: dict[int, int] | None = None,
                 excess: dict[int, list[int]] | None = None,
                 node_cuts: dict[int, int] | None = None,
                 rack_cuts: dict[int, int] | None = None) -> dict[int, float]:
    """{topology index: a lower bound on its share of the metric} (topologies without a stream
    are left out: their share is 0), from :func:`count_excess`'s pairs that every plan must
    separate at each level, divided by the topology's executor count. ``cuts`` ({topology
    index: a lower bound on its cross-worker pairs}, :func:`_worker_cuts`) replaces the worker
    level's count where it is higher, and ``node_cuts`` (the same for cross-node pairs) the
    node level's, ``rack_cuts`` the rack level's: a pair in two workers is counted at the worker
    level whether or not it is also in two nodes, so the levels add. ``excess``:
    :func:`count_excess` when already known."""
    execs = {ti: float(t.executor_count) for ti, t in pm.topos}
    out = {}
    for ti, (w, n, r) in (count_excess(pm) if excess is None else excess).items():
        w = max(w, (cuts or {}).get(ti, 0))
        n = max(n, (node_cuts or {}).get(ti, 0))
        r = max(r, (rack_cuts or {}).get(ti, 0))
        out[ti] = max(0.0, (w + n + r) / execs[ti] * (1.0 - 1e-12))
    return out


def count_excess(pm: PlacementModel) -> dict[int, list[int]]:
    """{topology index: [pairs in different workers, in different nodes, in different racks]},
    each a lower bound for every plan (topologies without a stream left out). A lower bound on
    the network metric without a model, from the formula of the module
    docstring: for each stream u -> d, sum_w x[u,w] x[d,w] <= n_u * (the most executors of d a
    worker holding one of u can hold beside it; 0 when u and d may not share a worker), and
    likewise per node (its caps, CPU, memory and resources) and per rack (the sum of its nodes'
    caps); each stream bounded alone, so the sum holds for every plan. It is 0 when every
    stream fits in one worker; it is what a big cluster gets when column generation reaches no
    bound (Storm's largeCluster03: 188.5, against storm.ras's 228.9)."""
    G = pm.groups
    kinds = [nis for nis in node_kinds(pm) if pm.nodes[nis[0]].slots]
    if not kinds:
        return {}
    reps = [pm.nodes[nis[0]] for nis in kinds]
    ncap = [[pm.node_cap(g, nis[0]) for nis in kinds] for g in G]
    wcap = [[pm.worker_cap(g, nis[0]) for nis in kinds] for g in G]

    def beside(ku: int, kd: int, level: str) -> int:
        """The most executors of kd beside one of ku in one worker or node (any node)."""
        gu, gd = G[ku].comp, G[kd].comp
        caps = wcap if level == "W" else ncap
        if level == "W" and (gd.id in gu.incompatible or gu.id in gd.incompatible):
            return 0
        best = 0
        for j, n in enumerate(reps):
            if caps[ku][j] == 0:
                continue  # no executor of u there
            cap = caps[kd][j]
            room = [(n.cpu, gu.cpu, gd.cpu)]
            if pm.ras:
                room.append((n.memory_mb, gu.memory_mb, gd.memory_mb))
                room += [(n.resources.get(r, 0.0), gu.resources.get(r, 0.0), q) for r, q in gd.resources.items()]
                if level == "W":
                    room.append((G[ku].topo.max_heap_mb, gu.memory_onheap_mb, gd.memory_onheap_mb))
            for have, used, need in room:
                if need > 0:
                    cap = min(cap, int(math.floor((have - used) / need + EPS_BOUND)))
            best = max(best, cap)
        return max(best, 0)

    kind_of = {ni: j for j, nis in enumerate(kinds) for ni in nis}
    racks: dict[int, list[int]] = {}
    for ni, j in kind_of.items():
        racks.setdefault(pm.node_rack[ni], []).append(j)

    def rack_most(k: int) -> int:
        return max(sum(ncap[k][j] for j in js) for js in racks.values())

    excess: dict[int, list[int]] = {}
    for ku, kd, e_t in pm.stream_pairs():
        nu, nd = G[ku].size, G[kd].size
        w = min(nu * nd, nu * beside(ku, kd, "W"), nd * beside(kd, ku, "W"))
        n = min(nu * nd, nu * beside(ku, kd, "N"), nd * beside(kd, ku, "N"))
        r = nu * nd if len(racks) == 1 else min(nu * nd, nu * rack_most(kd), nd * rack_most(ku))
        ex = excess.setdefault(G[ku].ti, [0, 0, 0])
        ex[0] += nu * nd - w
        ex[1] += nu * nd - n
        ex[2] += nu * nd - r
    return excess


EPS_BOUND = 1e-9


def _knap(sizes: list[tuple[float, int]], capacity: float) -> int:
    """Most items (demand, available count) that fit ``capacity``: fractional greedy, floored
    (an upper bound on the integer optimum)."""
    n, left = 0.0, capacity
    for dem, cnt in sorted(sizes):
        if dem <= 0:
            n += cnt
            continue
        take = min(cnt, left / dem)
        n += take
        left -= take * dem
        if take < cnt:
            break
    return int(math.floor(n + 1e-9))


def _most_executors(pm: PlacementModel, ks: list[int], level: str, place: int) -> int:
    """Upper bound on the executors (of the groups ``ks``) one worker / node / rack can hold."""
    G = pm.groups
    if level == "R":
        return sum(_most_executors(pm, ks, "N", ni) for ni in range(len(pm.nodes)) if pm.node_rack[ni] == place)
    ni = pm.workers[place][0] if level == "W" else place
    node = pm.nodes[ni]
    ub = {k: pm.worker_cap(G[k], ni) if level == "W" else pm.node_cap(G[k], ni) for k in ks}
    best = sum(ub.values())
    if level == "W":
        if pm.ras:
            best = min(best, _knap([(G[k].comp.memory_onheap_mb, ub[k]) for k in ks], G[ks[0]].topo.max_heap_mb))
        return best
    best = min(best, _knap([(G[k].comp.cpu, ub[k]) for k in ks], node.cpu))
    if pm.ras:
        best = min(best, _knap([(G[k].comp.memory_mb, ub[k]) for k in ks], node.memory_mb))
    wmax = max((_most_executors(pm, ks, "W", wi) for wi in pm.node_workers[ni]), default=0)
    return min(best, wmax * len(pm.node_workers[ni]))
