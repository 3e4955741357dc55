"""Traffic phase 2 (inter-worker tie-breaker) on the configuration model's columns.

Once phase 1 is proven with optimum z1 (intra-node value), every plan worth z1 uses only node
columns p with rc_p >= maxrc_f - (UB - z1) (docs/formulations.md, "Proof by enumeration");
they are enumerated, so the phase-2 problem is an integer master over them:

    max sum_p w2(p) lambda_p   s.t. the master rows, sum_p v(p) lambda_p >= z1,

w2(p) = the most intra-worker traffic a split of the node's executors into exactly o_t(p)
non-empty workers of at most M_t executors can keep (per topology; a small CP-SAT model per
distinct content, proven optimal or phase 2 is not claimed). Inter-worker traffic =
sum r s s - sum_p w2 lambda. Status ``optimal`` only when that master is proven.
"""

from __future__ import annotations

import math
import time
from typing import Any


from .gap import cpsat_solver
from ._linmodel import LinModel, solve_model
from ._trafficls import class_nodes


def _per_topology(G, ys, os_):
    """A node column's content per topology with executors there: (split key, {group: count},
    workers o); the key names the split ``_split`` computes for it."""
    for ti, o in os_:
        yt = {k: q for k, q in ys if G[k].ti == ti}
        if yt:
            yield (ti, tuple(sorted(yt.items())), o), yt, o


def _dealt(pm, names: list[str], chosen, parts_of):
    """The plan of configuration columns ``chosen`` [(column, count)] dealt to their families'
    nodes (``names``: the families' names), each node's workers split by ``parts_of(key, yt,
    o)`` (a list of {group: count}, or None: no plan)."""
    from ._patterns import deal_workers

    free = class_nodes(pm, names)
    nodes = []
    for col, cnt in chosen:
        _, ys, os_ = col.payload
        parts = []
        for key, yt, o in _per_topology(pm.groups, ys, os_):
            got = parts_of(key, yt, o)
            if got is None:
                return None
            parts.extend(got)
        for _ in range(cnt):
            nodes.append((free[col.family].pop(0), parts))
    return deal_workers(pm, nodes)


def _split(pm, pairs, ti: int, ys: dict[int, int], o: int, deadline: float | None):
    """Best split of counts ys (groups of topology ti) into o workers: (value, [counts per worker]);
    None if not proven optimal in time or infeasible."""
    from ortools.sat.python import cp_model

    M = pm.M[ti]
    ks = sorted(ys)
    edges = [((a, b), r) for (a, b), r in pairs.items() if a in ys and b in ys]
    if o <= 1:
        if sum(ys.values()) > M:
            return None
        return sum(r * ys[a] * ys[b] for (a, b), r in edges), [dict(ys)]
    cm = cp_model.CpModel()
    x = {(k, w): cm.NewIntVar(0, ys[k], "") for k in ks for w in range(o)}
    for k in ks:
        cm.Add(sum(x[(k, w)] for w in range(o)) == ys[k])
    tot = []
    for w in range(o):
        t = sum(x[(k, w)] for k in ks)
        cm.Add(t >= 1)
        cm.Add(t <= M)
        tot.append(t)
    for w in range(1, o):
        cm.Add(tot[w] <= tot[w - 1])
    if not edges:
        obj_terms = []
        scale = 1.0
    else:
        scale = 1e9 / max(r for _, r in edges)
        obj_terms = []
        for (a, b), r in edges:
            for w in range(o):
                p = cm.NewIntVar(0, ys[a] * ys[b], "")
                cm.AddMultiplicationEquality(p, [x[(a, w)], x[(b, w)]])
                obj_terms.append((int(round(r * scale)), p, (a, b, w)))
        cm.Maximize(sum(c * p for c, p, _ in obj_terms))
    s = cpsat_solver()
    s.parameters.num_workers = 1
    left = None if deadline is None else deadline - time.monotonic()
    if left is not None:
        if left <= 0:
            return None
        s.parameters.max_time_in_seconds = left
    st = s.Solve(cm)
    if st != cp_model.OPTIMAL:
        return None
    parts = [{k: s.Value(x[(k, w)]) for k in ks if s.Value(x[(k, w)])} for w in range(o)]
    value = sum(r * part.get(a, 0) * part.get(b, 0) for (a, b), r in edges for part in parts)
    # rates are rounded to integers (scale 1e9 / max rate): the split found is optimal for the
    # rounded weights, so the true best beats it by at most twice the rounding error; claim it
    # only when that is below 1e-7 of its value (the tolerance of the phase-1 proof)
    if edges:
        err = sum(abs(int(round(r * scale)) / scale - r) * ys[a] * ys[b] for (a, b), r in edges)
        if 2 * err > 1e-7 * max(1.0, value):
            return None
    return value, parts


def split_plan(pm, pairs, pat, chosen, deadline: float | None):
    """The phase-1 plan ``chosen`` (configuration columns and counts) with each node's
    executors of a topology split into its o_t workers by the best split (``_split``, proven)
    instead of evenly: when every node's split keeps all its intra-node traffic, the plan's
    inter-worker traffic equals its inter-node traffic, the least any plan has, which proves
    phase 2 at once (the caller checks that with the evaluator). None if a split is not proven
    in time or does not exist."""
    cache: dict = {}

    def parts_of(key, yt, o):
        if key not in cache:
            cache[key] = _split(pm, pairs, key[0], yt, o, deadline)
        return None if cache[key] is None else cache[key][1]

    return _dealt(pm, [f.name for f in pat.families], chosen, parts_of)


def phase2(run, pm, pat, pairs, out: dict, z1: float, const: float, cap: int = 20000) -> dict[str, Any] | None:
    """Phase 2 on the columns; returns {"plan", "proven", "inter_worker", "bound"} or None
    (not applicable, or out of time: the caller falls back to the compact model)."""
    if "lagrangian" not in out:
        return None
    ub, duals, maxrc = out["lagrangian"]
    scale = max(1.0, abs(ub))
    need = ub - z1 + 1e-7 * scale
    # complete the set of columns worth z1 (run_patterns enumerated down to maxrc - margin - 1e-7 scale)
    if out["stats"].get("margin", -math.inf) + 1e-7 * scale < need:
        pat.deadline = run.deadline(1.0)
        for fi in range(len(pat.families)):
            if not pat.enumerate(fi, duals, maxrc[fi] - need, cap):
                return None
    deadline = run.deadline(1.0)
    cand = [c for c in pat.cols if pat.rc(c, duals) >= maxrc[c.family] - need]
    G = pm.groups
    splits: dict[Any, tuple[float, list]] = {}

    def keys(c):
        _, ys, os_ = c.payload
        return _per_topology(G, ys, os_)

    def w2(c) -> tuple[float, bool]:
        """Intra-worker value of column c: exact when its splits are known, else the node's
        intra-node value (an upper bound: a split keeps at most the node's pairs)."""
        total, exact = 0.0, True
        for key, yt, o in keys(c):
            if key in splits:
                total += splits[key][0]
            elif o <= 1:
                splits[key] = _split(pm, pairs, key[0], yt, o, deadline)
                if splits[key] is None:
                    return math.nan, False
                total += splits[key][0]
            else:
                total += sum(r * yt.get(a, 0) * yt.get(b, 0) for (a, b), r in pairs.items())
                exact = False
        return total, exact

    # lazy: solve the master with upper bounds w2 <= v for unsplit columns; split the chosen
    # columns and solve again until every chosen column's value is exact (then the optimum of
    # the bounded master is attained, so it is the optimum)
    t_split = 0.0
    rounds = 0
    prev = None
    while True:
        rounds += 1
        vals = [w2(c) for c in cand]
        if any(math.isnan(v) for v, _ in vals):
            return None
        m = LinModel("max")
        lam = [m.var(f"lambda[{i}]", 0, pat.families[c.family].count, None if prev is None else prev[i])
               for i, c in enumerate(cand)]
        by_row: dict[Any, dict[int, float]] = {}
        for v, c in zip(lam, cand):
            for r, xv in c.coefs.items():
                by_row.setdefault(r, {})[v] = xv
        for r, rhs in pat.rows.items():
            m.add(by_row.get(r, {}), rhs, rhs, family="master")
        m.add({v: c.value for v, c in zip(lam, cand) if c.value}, lo=z1 - pat.value_const - 1e-9 * scale,
              family="lexicographic")
        m.objective = {v: w for v, (w, _) in zip(lam, vals) if w}
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return None
        sol = solve_model(m, run.backend, None if left is None else max(left, 0.05), run.threads,
                          use_hint=prev is not None)
        if sol.status not in ("optimal", "feasible") or sol.values is None:
            return None
        todo = [c for c, cnt in zip(cand, sol.values) if cnt > 0 for key, _, o in keys(c) if key not in splits]
        if not todo:
            break
        prev = list(sol.values)
        t = time.monotonic()
        for c in todo:
            for key, yt, o in keys(c):
                if key not in splits:
                    sp = _split(pm, pairs, key[0], yt, o, deadline)
                    if sp is None:
                        return None
                    splits[key] = sp
        t_split += time.monotonic() - t
    # the plan: each chosen column on a node of its family, executors split as computed
    plan = _dealt(pm, [f.name for f in pat.families], [(c, cnt) for c, cnt in zip(cand, sol.values) if cnt],
                  lambda key, yt, o: splits[key][1])
    intra_w = sol.objective
    bound = sol.bound if sol.bound is not None else None
    return {"plan": plan, "proven": sol.status == "optimal", "inter_worker": const - intra_w,
            "inter_worker_bound": None if bound is None else const - bound, "columns": len(cand),
            "splits": len(splits), "split_seconds": round(t_split, 3), "rounds": rounds}


def phase2_bp(run, pm, pairs, z1: float, const: float, phase1=None) -> dict[str, Any] | None:
    """Phase 2 after branch and price (one topology): every content multiset worth the phase-1
    optimum z1 (intra-node) is enumerated by B&P with cut-off z1 (``TrafficBP(enum_all=True)``:
    an integral node records its multiset and is split three ways on one of its contents,
    count <= c - 1, >= c + 1, = c, until all are fixed); for each, the best worker counts and
    splits: w2(y, o) = ``_split`` for o in lo..hi per node, and a dynamic programme over the
    nodes on sum o = S. The best over the multisets is the phase-2 optimum when the enumeration
    is complete and every split is proven; else None (the caller falls back). ``phase1``: phase
    1's search, whose node tables (read-only) this search reuses instead of building them again."""
    from ._trafficbp import TrafficBP, _TooBig

    if len(pm.topos) != 1:
        return None
    ti = pm.topos[0][0]
    scale = max(1.0, abs(z1))
    deadline = run.deadline(1.0)
    try:
        bp = TrafficBP(pm, pairs, deadline, cutoff=z1 - 2e-7 * scale, enum_all=True,
                       fams=None if phase1 is None else phase1.fams)
    except _TooBig:
        return None
    bp.run()
    if not bp.complete or not bp.plans:
        return None
    S = pm.S[ti]
    cache: dict = {}
    best = None
    for ms in bp.plans:
        nodes = []
        for (f, i), c in sorted(ms.items()):
            nodes.extend([(f, i)] * c)
        if sum(bp.fams[f].V[i] for f, i in nodes) < z1 - 1e-9 * scale:
            continue  # within the cut-off's tolerance but below the optimum
        # per node: {o: (w2, parts)}
        opts = []
        for f, i in nodes:
            fm = bp.fams[f]
            ys = {k: int(q) for k, q in enumerate(fm.Y[i]) if q > 0}
            lo, hi = int(fm.lo[i, 0]), int(fm.hi[i, 0])
            row = {}
            tot = sum(ys.values())
            for o in range(lo, hi + 1):
                if o and not (o <= tot <= o * pm.M[ti]):
                    continue  # no split into o non-empty workers of at most M_t executors
                key = (tuple(sorted(ys.items())), o)
                if key not in cache:
                    cache[key] = (0.0, []) if o == 0 else _split(pm, pairs, ti, ys, o, deadline)
                    if cache[key] is None:
                        return None
                row[o] = cache[key]
            opts.append(row)
        # DP over nodes: most intra-worker value with total workers w
        dp = {0: (0.0, [])}
        for row in opts:
            nxt: dict = {}
            for w, (val, ch) in dp.items():
                for o, (v2, _) in row.items():
                    if w + o <= S and (w + o not in nxt or val + v2 > nxt[w + o][0]):
                        nxt[w + o] = (val + v2, ch + [o])
            dp = nxt
        if S not in dp:
            continue
        val, ch = dp[S]
        if best is None or val > best[0]:
            best = (val, nodes, ch)
    if best is None:
        return None
    val, nodes, ch = best
    from ._patterns import deal_workers

    free = class_nodes(pm, [f"node{fm.cls[0]}" for fm in bp.fams])
    dealt = []
    for (f, i), o in zip(nodes, ch):
        ys = {k: int(q) for k, q in enumerate(bp.fams[f].Y[i]) if q > 0}
        dealt.append((free[f].pop(0), [] if o == 0 else cache[(tuple(sorted(ys.items())), o)][1]))
    return {"plan": deal_workers(pm, dealt), "proven": True, "inter_worker": const - val,
            "inter_worker_bound": const - val, "multisets": len(bp.plans), "splits": len(cache),
            "bp_nodes": bp.stats["bp_nodes"]}
