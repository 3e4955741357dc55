"""Configuration (pattern) model for ``slots`` under peak usage: slots as bins, slot contents
as patterns, thread counts as per-component levels. docs/formulations.md ("Slots") writes it down.

Why: the assignment model (v_csq) lets a component's threads spread thinly over many slots in
the LP, and its slots are interchangeable, so its bound stays 30-40 % below the optimum on the
Shukla micro-DAGs. Here a variable counts how many slots hold one *content* (a thread count per
component), the cutting-stock view whose LP bound is close to the optimum.

Exactness (``slot_usage = "peak"``): with even routing a group of q threads of c takes
q rho_c / Q_c, which fits its row iff Q_c >= need_cq = ceil(q rho_c / peak_cq). Choose per
component a *level* L (one of the distinct values max(1, need_cq)); at level L the groups
with need_cq <= L may be used and the component needs Q_c >= L threads in total. Any plan has
such a level (the largest need among its groups), and any solution of the model is a plan:
its Q_c >= L >= every need of its groups. CPU and memory of a group do not depend on Q_c, so
a content either fits a slot or not, whatever the levels.

Reductions that keep the optimum:
* groups dominated inside one component (another count q' > q with no more CPU, memory and
  need) are left out: swapping q for q' in any plan keeps it feasible and the slot count;
* only contents to which no absent component's group can be added are listed ("maximal");
  a slot may hold a group that is not counted, and such groups are dropped from the plan
  (dropping a group frees capacity and is never needed by the levels);
* counted groups of size q at level L are at most ceil(L / q) (more are never needed).

The model (integer x_p, binary y_cL, integer g_cqL):
  min sum_p x_p
  sum_L y_cL = 1                               (one level per component)
  sum_q q g_cqL >= L y_cL                      (enough threads at the chosen level)
  g_cqL <= ceil(L / q) y_cL                    (groups only at the chosen level)
  sum_L g_cqL <= sum_{p: p_c = q} x_p          (counted groups are in some slot)
  sum_p x_p <= number of slots
The disaggregated level rows describe the convex hull of each component's union of levels.

Applies when every slot is alike for every component: no pins (site, nodes) and no
``max_per_node``; incompatible pairs are honoured inside the contents. Slot count first;
then the VM cost is a min-cost cover of that many slots by nodes (a small exact DP), which is
exact because any slot can hold any content here.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ._linmodel import LinModel, solve_model


def applicable(d) -> str | None:
    """Why the pattern model does not apply to ``d`` (a SlotsData), or None."""
    if any(x is not None for x in d.max_per_node):
        return "a component has max_per_node"
    if not all(all(row) for row in d.allowed):
        return "a component is pinned to a site or nodes"
    return None


@dataclass
class Group:
    c: int
    q: int
    cpu: float
    mem: float
    need: int  # max(1, need_cq): the least level that allows this group


@dataclass
class PatternModel:
    model: LinModel
    groups: list[list[Group]]  # per component, the groups patterns may use
    patterns: list[tuple[int, ...]]  # per pattern, the group index per component (-1 = none)
    x: list[int]
    levels: list[list[int]]
    y: dict[tuple[int, int], int]  # (c, level index) -> var (absent when a single level)
    g: dict[tuple[int, int, int], int]  # (c, group index, level index) -> var
    build_seconds: float = 0.0


# CP-SAT: one worker with the full LP relaxation. On the Shukla micro-DAGs it proves each case in
# under 0.5 s, where the default 2-worker portfolio (no LP-heavy worker) stalls at bound 2 for 20 s.
CPSAT_PARAMS = {"linearization_level": 2}


MAX_PATTERNS = 100_000  # beyond this the listing stops and "auto" falls back to the assignment model


class OutOfTime(Exception):
    """The time limit ran out while the patterns were being listed."""


class TooMany(Exception):
    """More than MAX_PATTERNS maximal slot contents."""


def groups_of(d) -> list[list[Group]]:
    """Per component, the undominated groups whose need can be met within the cluster."""
    out = []
    for c in range(d.C):
        qmax = max(o.q for o in d.options[c])
        cap = d.S * qmax  # no plan has more threads of c
        gs = [Group(c, o.q, o.cpu, o.mem, max(1, o.need)) for o in d.options[c] if max(1, o.need) <= cap]
        keep = []
        for a in gs:
            dominated = any(b.q > a.q and b.cpu <= a.cpu + 1e-12 and b.mem <= a.mem + 1e-12 and b.need <= a.need for b in gs)
            if not dominated:
                keep.append(a)
        out.append(keep)
    return out


def enumerate_patterns(d, groups: list[list[Group]], deadline: float | None) -> list[tuple[int, ...]]:
    """Every maximal slot content: a group (or none) per component within 100 % CPU and memory,
    no incompatible pair, no absent component's group that would still fit, and no group that
    could be swapped for a bigger one of its component with no higher need and still fit."""
    C = d.C
    inc = [[False] * C for _ in range(C)]
    for a, b in d.incompatible:
        inc[a][b] = inc[b][a] = True
    order = sorted(range(C), key=lambda c: -max((g.cpu for g in groups[c]), default=0))  # heavy first: early pruning
    out: list[tuple[int, ...]] = []
    cur = [-1] * C
    eps = 1e-9
    steps = [0]

    # bigger[c][i]: groups of c with more threads and no higher need (a swap that keeps levels)
    bigger = [[[j for j, h in enumerate(groups[c]) if h.q > g.q and h.need <= g.need] for g in groups[c]]
              for c in range(C)]

    def fits_more(cpu: float, mem: float) -> bool:
        for c in range(C):
            if cur[c] != -1:
                i = cur[c]
                g = groups[c][i]
                if any(cpu - g.cpu + groups[c][j].cpu <= 100 + eps and mem - g.mem + groups[c][j].mem <= 100 + eps
                       for j in bigger[c][i]):
                    return True
                continue
            if any(inc[c][o] and cur[o] != -1 for o in range(C)):
                continue
            if any(cpu + g.cpu <= 100 + eps and mem + g.mem <= 100 + eps for g in groups[c]):
                return True
        return False

    def rec(k: int, cpu: float, mem: float) -> None:
        steps[0] += 1
        if deadline is not None and steps[0] % 2000 == 0 and time.monotonic() > deadline:
            raise OutOfTime
        if k == C:
            if any(x != -1 for x in cur) and not fits_more(cpu, mem):
                out.append(tuple(cur))
                if len(out) > MAX_PATTERNS:
                    raise TooMany
            return
        c = order[k]
        if not any(inc[c][o] and cur[o] != -1 for o in range(C)):
            for i, g in enumerate(groups[c]):
                if cpu + g.cpu <= 100 + eps and mem + g.mem <= 100 + eps:
                    cur[c] = i
                    rec(k + 1, cpu + g.cpu, mem + g.mem)
                    cur[c] = -1
        rec(k + 1, cpu, mem)

    rec(0, 0.0, 0.0)
    return out


def _kept(d, groups: list[list[Group]], c: int, q: int) -> int | None:
    """Index of a kept group of c that dominates (or is) the group of q threads."""
    o = next((o for o in d.options[c] if o.q == q), None)
    if o is None:
        return None
    need = max(1, o.need)
    for i, g in enumerate(groups[c]):
        if g.q >= q and g.cpu <= o.cpu + 1e-12 and g.mem <= o.mem + 1e-12 and g.need <= need:
            return i
    return None


def build(d, deadline: float | None = None, hint_contents: list[dict[int, int]] | None = None) -> PatternModel:
    """The pattern model of ``d``; ``hint_contents`` (one {component: threads} per used slot of
    a valid plan) becomes the model's hint (its contents are added as patterns if missing)."""
    t0 = time.monotonic()
    groups = groups_of(d)
    patterns = enumerate_patterns(d, groups, deadline)
    hint_pats: list[tuple[int, ...]] = []
    if hint_contents is not None:
        for content in hint_contents:
            pat = tuple(_kept(d, groups, c, content[c]) if c in content else -1 for c in range(d.C))
            if None in pat:  # cannot happen for a valid plan; no hint then
                hint_pats = []
                break
            hint_pats.append(pat)
    if hint_pats:
        known = set(patterns)
        for p in hint_pats:
            if p not in known:
                known.add(p)
                patterns.append(p)
    m = LinModel("min")
    x = [m.var(f"x{j}", 0, d.S) for j in range(len(patterns))]
    m.objective = {v: 1.0 for v in x}
    m.add({v: 1.0 for v in x}, hi=float(d.S), family="slots")
    levels = [sorted({g.need for g in groups[c]}) for c in range(d.C)]
    y: dict[tuple[int, int], int] = {}
    g: dict[tuple[int, int, int], int] = {}
    by_group: dict[tuple[int, int], list[int]] = {}
    for j, p in enumerate(patterns):
        for c, i in enumerate(p):
            if i != -1:
                by_group.setdefault((c, i), []).append(x[j])
    for c in range(d.C):
        one = len(levels[c]) == 1
        if not one:
            for li, L in enumerate(levels[c]):
                y[(c, li)] = m.var(f"y{c}_{L}", 0, 1)
            m.add({y[(c, li)]: 1.0 for li in range(len(levels[c]))}, 1.0, 1.0, family="level")
        for li, L in enumerate(levels[c]):
            row: dict[int, float] = {}
            for i, gr in enumerate(groups[c]):
                if gr.need > L or (c, i) not in by_group:
                    continue
                ub = min(d.S, math.ceil(L / gr.q))
                v = m.var(f"g{c}_{gr.q}_{L}", 0, ub)
                g[(c, i, li)] = v
                row[v] = float(gr.q)
                if not one:
                    m.add({v: 1.0, y[(c, li)]: -float(ub)}, hi=0.0, family="level")
            if one:
                m.add(row, lo=float(L), family="threads")
            else:
                row[y[(c, li)]] = -float(L)
                m.add(row, lo=0.0, family="threads")
        for i in range(len(groups[c])):
            cnt = {g[(c, i, li)]: 1.0 for li in range(len(levels[c])) if (c, i, li) in g}
            if cnt:
                for v in by_group[(c, i)]:
                    cnt[v] = cnt.get(v, 0.0) - 1.0
                m.add(cnt, hi=0.0, family="link")
    pm = PatternModel(m, groups, patterns, x, levels, y, g)
    if hint_pats:
        _set_hint(d, pm, hint_pats)
    pm.build_seconds = time.monotonic() - t0
    return pm


def _set_hint(d, pm: PatternModel, hint_pats: list[tuple[int, ...]]) -> None:
    m = pm.model
    for v in range(len(m.vars)):
        m.hint[v] = 0
    pos = {p: j for j, p in enumerate(pm.patterns)}
    for p in hint_pats:
        m.hint[pm.x[pos[p]]] += 1
    for c in range(d.C):
        used = [pm.groups[c][p[c]] for p in hint_pats if p[c] != -1]
        level = max(gr.need for gr in used)
        li = pm.levels[c].index(level)
        if (c, li) in pm.y:
            m.hint[pm.y[(c, li)]] = 1
        total = 0
        for gr in sorted(used, key=lambda gr: -gr.q):  # count the largest groups until the level is met
            if total >= level:
                break
            i = pm.groups[c].index(gr)
            m.hint[pm.g[(c, i, li)]] += 1
            total += gr.q


def contents(d, pm: PatternModel, values: list[int]) -> list[dict[int, int]]:
    """Slot contents ({component: threads}) of a solution, uncounted groups dropped."""
    slots: list[dict[int, int]] = []
    for j, v in enumerate(pm.x):
        for _ in range(values[v]):
            slots.append({c: pm.groups[c][i].q for c, i in enumerate(pm.patterns[j]) if i != -1})
    for c in range(d.C):
        for i, gr in enumerate(pm.groups[c]):
            counted = sum(values[v] for (cc, ii, _), v in pm.g.items() if cc == c and ii == i)
            present = [s for s in slots if s.get(c) == gr.q]
            for s in present[: max(0, len(present) - counted)]:
                del s[c]
    return [s for s in slots if s]


def cheapest_nodes(d, n: int) -> list[int] | None:
    """Nodes with at least ``n`` slots in total at least price (exact DP over slot counts);
    ties: fewer nodes, then lower indices."""
    per = [sum(1 for s in range(d.S) if d.slot_node[s] == k) for k in range(len(d.nodes))]
    INF = (math.inf, 0)
    best: list[tuple[float, int]] = [(0.0, 0)] + [INF] * n
    choice: list[list[int]] = [[]] + [[] for _ in range(n)]
    for k in range(len(d.nodes)):
        if per[k] == 0:
            continue
        for j in range(n, -1, -1):  # 0/1 knapsack: descending
            if best[j][0] == math.inf:
                continue
            t = min(n, j + per[k])
            cand = (round(best[j][0] + d.price[k], 9), best[j][1] + 1)
            if cand < best[t]:
                best[t] = cand
                choice[t] = choice[j] + [k]
    return choice[n] if best[n][0] != math.inf else None


def solve(d, backend: str, time_limit: float | None, seed: int, started: float,
          hint_contents: list[dict[int, int]] | None = None):
    """Build and solve; returns (status, q, slot bound, details); status "too_many" when the
    contents exceed MAX_PATTERNS. ``started`` is the monotonic time the call began: model
    building counts against ``time_limit``."""
    deadline = None if time_limit is None else started + time_limit
    try:
        pm = build(d, deadline, hint_contents)
    except OutOfTime:
        return "unknown", None, None, {"model": "patterns", "stopped": "while listing slot contents"}
    except TooMany:
        return "too_many", None, None, {"model": "patterns", "stopped": f"more than {MAX_PATTERNS:,} slot contents"}
    details = {"model": "patterns", "patterns": len(pm.patterns), "variables": len(pm.model.vars),
               "rows": len(pm.model.rows), "build_seconds": round(pm.build_seconds, 3)}
    left = None
    if deadline is not None:
        # every back end translates the model (CP-SAT proto, PuLP, the HiGHS worker's pipe)
        # outside the solver's clock: keep a margin for it, measured at 0.6-1.2 s for 31,000
        # nonzeros plus up to 0.5 s of start-up (2-core machine under load)
        margin = 0.3 + 4e-5 * sum(len(r.coefs) for r in pm.model.rows)
        left = deadline - time.monotonic() - margin
        if left <= 0.05:
            return "unknown", None, None, details | {"stopped": "while building the model"}
    sol = solve_model(pm.model, backend, left, threads=1, seed=seed, use_hint=hint_contents is not None,
                      cpsat_params=CPSAT_PARAMS)
    details["solver_seconds"] = round(sol.seconds, 3)
    if sol.status in ("infeasible", "unknown", "error"):
        return sol.status, None, None, details | ({"message": sol.message} if sol.message else {})
    cs = contents(d, pm, sol.values)
    nodes = cheapest_nodes(d, len(cs))
    if nodes is None:  # cannot happen: the model caps the slot count
        return "error", None, None, details | {"message": "more contents than slots"}
    free = [s for k in nodes for s in range(d.S) if d.slot_node[s] == k]
    q = {(c, free[j]): t for j, content in enumerate(cs) for c, t in content.items()}
    bound = None
    if sol.bound is not None:
        bound = min(len(cs), math.ceil(sol.bound - 1e-6))
    if sol.status == "optimal":
        bound = len(cs)
    return sol.status, q, bound, details
