"""The independent checker: hard-constraint violations and every metric of a plan.

It recomputes everything from the instance and the plan alone; it shares no code with any
solver beyond :mod:`planner.rates` (how tuples flow) and :mod:`planner.problems` (which
constraints a problem has). A plan is feasible for a problem when no constraint of that
problem is violated.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from . import problems as P
from . import rates
from .model import Instance, Topology
from .plan import Plan

EPS = 1e-6


def _le(a: float, b: float) -> bool:
    return a <= b + EPS * max(1.0, abs(b))


class _Checker:
    def __init__(self, instance: Instance, plan: Plan, constraints: frozenset[str]):
        self.inst = instance
        self.plan = plan
        self.cons = constraints
        self.violations: list[dict[str, Any]] = []

    def bad(self, constraint: str, where: str, detail: str) -> None:
        if constraint in self.cons:
            self.violations.append({"constraint": constraint, "where": where, "detail": detail})


def evaluate(instance: Instance, plan: Plan, problem: str | None = None) -> dict[str, Any]:
    """Check ``plan`` against ``problem``'s hard constraints and compute all metrics.

    Without a problem, the RAS hard limits and "every executor placed" are checked.
    Returns a dict with ``feasible``, ``violations`` (each {constraint, where, detail}),
    ``objective`` (when a problem is given) and the figures described in docs/architecture.md.
    """
    prob = P.get_problem(problem) if problem else None
    cons = prob.constraints if prob else (P.RAS_CONSTRAINTS | {P.ALL_PLACED})
    ck = _Checker(instance, plan, cons)
    inst = instance
    nodes = {n.id: n for n in inst.cluster.nodes}
    rack_of = inst.cluster.rack_of()
    topos = {t.id: t for t in inst.topologies}
    total_slots = sum(len(n.slots) for n in inst.cluster.nodes)
    counts_fixed = prob is None or prob.name not in ("throughput", "slots")

    # --- executor counts -----------------------------------------------------------------
    counts: dict[str, dict[str, int]] = {}
    for t in inst.topologies:
        c = {comp.id: comp.parallelism for comp in t.components}
        given = plan.counts(t.id)
        if given:
            for cid, k in given.items():
                if cid not in c:
                    ck.bad(P.ALL_PLACED, f"parallelism.{t.id}.{cid}", f"unknown component {cid!r}")
                elif k < 1:
                    ck.bad(P.ALL_PLACED, f"parallelism.{t.id}.{cid}", f"count {k} < 1")
                elif counts_fixed and k != c[cid]:
                    ck.bad(P.ALL_PLACED, f"parallelism.{t.id}.{cid}", f"count {k} differs from the fixed parallelism {c[cid]}")
                else:
                    c[cid] = k
        counts[t.id] = c
    for tid in (plan.parallelism or {}):
        if tid not in topos:
            ck.bad(P.ALL_PLACED, f"parallelism.{tid}", f"unknown topology {tid!r}")

    # --- placements -----------------------------------------------------------------------
    where: dict[tuple[str, str, int], tuple[str, int]] = {}
    for k, p in enumerate(plan.placements):
        loc = f"placements[{k}]"
        if p.topology not in topos:
            ck.bad(P.ALL_PLACED, loc, f"unknown topology {p.topology!r}")
            continue
        if p.component not in counts[p.topology]:
            ck.bad(P.ALL_PLACED, loc, f"unknown component {p.component!r} of {p.topology!r}")
            continue
        if p.executor >= counts[p.topology][p.component]:
            ck.bad(P.ALL_PLACED, loc, f"executor {p.executor} of {p.component!r}: only {counts[p.topology][p.component]} executors")
            continue
        key = (p.topology, p.component, p.executor)
        if key in where:
            ck.bad(P.ALL_PLACED, loc, f"executor {key} placed twice")
            continue
        if p.node not in nodes:
            ck.bad(P.SLOT_EXISTS, loc, f"unknown node {p.node!r}")
            continue
        if p.slot not in nodes[p.node].slots:
            ck.bad(P.SLOT_EXISTS, loc, f"node {p.node!r} has no port {p.slot}")
            continue
        where[key] = (p.node, p.slot)

    placed_by_topo: dict[str, int] = Counter(k[0] for k in where)
    scheduled: list[str] = []
    for t in inst.topologies:
        need = sum(counts[t.id].values())
        have = placed_by_topo.get(t.id, 0)
        if have == need:
            scheduled.append(t.id)
        elif P.WHOLE_TOPOLOGIES in cons:
            if have > 0:
                ck.bad(P.WHOLE_TOPOLOGIES, f"topology {t.id}", f"{have} of {need} executors placed: partially scheduled")
        else:
            ck.bad(P.ALL_PLACED, f"topology {t.id}", f"{need - have} of {need} executors not placed")

    # --- workers and node loads --------------------------------------------------------------
    worker_topos: dict[tuple[str, int], set[str]] = defaultdict(set)
    worker_execs: dict[tuple[str, int], list[tuple[str, str, int]]] = defaultdict(list)
    node_cpu: dict[str, float] = defaultdict(float)
    node_mem: dict[str, float] = defaultdict(float)
    node_res: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for key, w in where.items():
        t = topos[key[0]]
        comp = t.component(key[1])
        worker_topos[w].add(key[0])
        worker_execs[w].append(key)
        node_cpu[w[0]] += comp.cpu
        node_mem[w[0]] += comp.memory_mb
        for r, x in comp.resources.items():
            node_res[w[0]][r] += x
    for w, ts in worker_topos.items():
        if len(ts) > 1:
            ck.bad(P.ONE_TOPOLOGY_PER_WORKER, f"worker {w[0]}:{w[1]}", f"holds topologies {sorted(ts)}")
    for nid in node_cpu:
        n = nodes[nid]
        if not _le(node_cpu[nid], n.cpu):
            ck.bad(P.NODE_CPU, f"node {nid}", f"CPU {node_cpu[nid]:g} > capacity {n.cpu:g}")
        if not _le(node_mem[nid], n.memory_mb):
            ck.bad(P.NODE_MEMORY, f"node {nid}", f"memory {node_mem[nid]:g} MB > capacity {n.memory_mb:g} MB")
        for r, x in node_res[nid].items():
            if not _le(x, n.resources.get(r, 0.0)):
                ck.bad(P.GENERIC_RESOURCES, f"node {nid}", f"resource {r!r} {x:g} > capacity {n.resources.get(r, 0.0):g}")
    for w, execs in worker_execs.items():
        tid = execs[0][0]
        t = topos[tid]
        heap = sum(t.component(c).memory_onheap_mb for (tt, c, _) in execs if tt == tid)
        if not _le(heap, t.max_heap_mb):
            ck.bad(P.WORKER_HEAP, f"worker {w[0]}:{w[1]}", f"on-heap {heap:g} MB > max heap {t.max_heap_mb:g} MB of {tid!r}")

    # --- placement constraints ----------------------------------------------------------------
    for t in inst.topologies:
        per_node: dict[tuple[str, str], int] = Counter()
        per_worker: dict[tuple[str, int], Counter] = defaultdict(Counter)
        for (tid, cid, i), w in where.items():
            if tid != t.id:
                continue
            comp = t.component(cid)
            n = nodes[w[0]]
            if comp.site is not None and n.site != comp.site:
                ck.bad(P.PLACEMENT, f"{tid}/{cid}[{i}]", f"pinned to site {comp.site!r}, placed on {n.id!r} (site {n.site!r})")
            if comp.nodes is not None and n.id not in comp.nodes:
                ck.bad(P.PLACEMENT, f"{tid}/{cid}[{i}]", f"pinned to nodes {comp.nodes}, placed on {n.id!r}")
            per_node[(cid, n.id)] += 1
            per_worker[w][cid] += 1
        for (cid, nid), k in per_node.items():
            lim = t.component(cid).max_per_node
            if lim is not None and k > lim:
                ck.bad(P.PLACEMENT, f"{t.id}/{cid} on {nid}", f"{k} executors > max_per_node {lim}")
        for w, cc in per_worker.items():
            present = sorted(cc)
            for a_i, cid in enumerate(present):
                inc = t.component(cid).incompatible
                if cid in inc and cc[cid] > 1:
                    ck.bad(P.PLACEMENT, f"worker {w[0]}:{w[1]}", f"{cc[cid]} executors of {cid!r}, which is incompatible with itself")
                for other in present[a_i + 1:]:
                    if other in inc or cid in t.component(other).incompatible:
                        ck.bad(P.PLACEMENT, f"worker {w[0]}:{w[1]}", f"{cid!r} and {other!r} are incompatible")

    # --- traffic problem structure ---------------------------------------------------------------
    workers_of: dict[str, set[tuple[str, int]]] = defaultdict(set)
    nodes_of: dict[str, set[str]] = defaultdict(set)
    for (tid, _, _), w in where.items():
        workers_of[tid].add(w)
        nodes_of[tid].add(w[0])
    for t in inst.topologies:
        e = sum(counts[t.id].values())
        s_req = rates.workers_required(t, total_slots)
        if t.id in scheduled:
            used = len(workers_of[t.id])
            if used != s_req:
                ck.bad(P.WORKER_COUNT, f"topology {t.id}", f"uses {used} workers; min(W, E) = {s_req}")
            m = rates.max_per_worker(e, s_req, inst.params.alpha)
            for w in workers_of[t.id]:
                k = sum(1 for x in worker_execs[w] if x[0] == t.id)
                if k > m:
                    ck.bad(P.MAX_PER_WORKER, f"worker {w[0]}:{w[1]}", f"{k} executors > M(alpha={inst.params.alpha:g}) = {m}")
        per_node_slots: dict[str, set[int]] = defaultdict(set)
        for w in workers_of[t.id]:
            per_node_slots[w[0]].add(w[1])
        for nid, ss in per_node_slots.items():
            if len(ss) > 1:
                ck.bad(P.ONE_WORKER_PER_NODE, f"node {nid}", f"topology {t.id!r} uses {len(ss)} workers on one node")

    metrics: dict[str, Any] = {}

    # --- network metric -------------------------------------------------------------------------
    net_by_topo: dict[str, float] = {}
    for t in inst.topologies:
        net_by_topo[t.id] = _network_metric(t, counts[t.id], where, rack_of)
    metrics["network_metric"] = sum(net_by_topo.values())
    metrics["network_metric_by_topology"] = net_by_topo

    # --- traffic -------------------------------------------------------------------------------
    inter_node = inter_worker = inter_rack = total = 0.0
    for t in inst.topologies:
        tr = _traffic(t, counts[t.id], where, rack_of)
        inter_node += tr["inter_node"]
        inter_worker += tr["inter_worker"]
        inter_rack += tr["inter_rack"]
        total += tr["total"]
    metrics.update(
        inter_node_traffic=inter_node, inter_worker_traffic=inter_worker, inter_rack_traffic=inter_rack, total_traffic=total
    )

    # --- usage ---------------------------------------------------------------------------------
    used_workers = set(where.values())
    metrics["workers_used"] = len(used_workers)
    metrics["slots_used"] = len(used_workers)
    metrics["nodes_used"] = len({w[0] for w in used_workers})
    metrics["racks_used"] = len({rack_of[w[0]] for w in used_workers})
    metrics["executors_placed"] = len(where)
    metrics["node_utilisation"] = {
        nid: {
            "cpu": (node_cpu[nid] / nodes[nid].cpu) if nodes[nid].cpu > 0 else (math.inf if node_cpu[nid] > 0 else 0.0),
            "memory": (node_mem[nid] / nodes[nid].memory_mb) if nodes[nid].memory_mb > 0 else (math.inf if node_mem[nid] > 0 else 0.0),
        }
        for nid in sorted(node_cpu)
    }
    prices = [nodes[n].price for n in {w[0] for w in used_workers}]
    metrics["vm_cost"] = sum(p for p in prices if p is not None) if any(p is not None for p in prices) else None
    metrics["scheduled_topologies"] = scheduled
    metrics["unscheduled_topologies"] = [t.id for t in inst.topologies if t.id not in scheduled]
    maxp = max(t.priority for t in inst.topologies)
    metrics["admitted_weight"] = sum(P.admission_weight(topos[t].priority, maxp) for t in scheduled)
    if inst.users:
        metrics["user_guarantee_satisfaction"] = _guarantees(inst, scheduled)

    # --- throughput --------------------------------------------------------------------------------
    if prob is not None and prob.name == "throughput" or (prob is None and inst.machine_profiles):
        _throughput(ck, inst, plan, counts, where, nodes, metrics)

    # --- slots -------------------------------------------------------------------------------------
    if prob is not None and prob.name == "slots" or (prob is None and inst.perf_models):
        _slots(ck, inst, counts, where, metrics)

    metrics["violations"] = ck.violations
    metrics["violations_count"] = len(ck.violations)
    metrics["feasible"] = not ck.violations
    if prob is not None:
        metrics["problem"] = prob.name
        metrics["objective"] = metrics.get(prob.objective)
    return metrics


def _network_metric(t: Topology, counts: dict[str, int], where: dict, rack_of: dict[str, str]) -> float:
    """RAS network metric: sum over executor e and executor f of a downstream component of
    0 (same worker) / 1 (same node) / 2 (same rack) / 3 (other), divided by executors."""
    pos: dict[str, list[tuple[str, int] | None]] = {
        c: [where.get((t.id, c, i)) for i in range(k)] for c, k in counts.items()
    }
    total = 0.0
    for u, downs in rates.downstream(t).items():
        for d in downs:
            placed_d = [w for w in pos[d] if w is not None]
            by_worker = Counter(placed_d)
            by_node = Counter(w[0] for w in placed_d)
            by_rack = Counter(rack_of[w[0]] for w in placed_d)
            nd = len(placed_d)
            for w in pos[u]:
                if w is None:
                    continue
                sw = by_worker[w]
                sn = by_node[w[0]]
                sr = by_rack[rack_of[w[0]]]
                total += 1 * (sn - sw) + 2 * (sr - sn) + 3 * (nd - sr)
    n_exec = sum(counts.values())
    return total / n_exec if n_exec else 0.0


def _traffic(t: Topology, counts: dict[str, int], where: dict, rack_of: dict[str, str]) -> dict[str, float]:
    out = {"inter_node": 0.0, "inter_worker": 0.0, "inter_rack": 0.0, "total": 0.0}

    def add(r: float, a, b) -> None:
        out["total"] += r
        if a is None or b is None:
            return
        if a != b:
            out["inter_worker"] += r
        if a[0] != b[0]:
            out["inter_node"] += r
        if rack_of[a[0]] != rack_of[b[0]]:
            out["inter_rack"] += r

    if t.traffic:
        for (src, dst), r in rates.executor_traffic(t, None, counts).items():
            add(r, where.get((t.id, *src)), where.get((t.id, *dst)))
        return out
    ex = rates.executor_rates(t, None, counts)
    for s in t.streams:
        pv = counts[s.target]
        tgt = [where.get((t.id, s.target, j)) for j in range(pv)]
        placed = [w for w in tgt if w is not None]
        by_worker = Counter(placed)
        by_node = Counter(w[0] for w in placed)
        by_rack = Counter(rack_of[w[0]] for w in placed)
        for i in range(counts[s.source]):
            emit = ex[(s.source, i)] * s.selectivity
            if emit == 0:
                continue
            a = where.get((t.id, s.source, i))
            if s.grouping == "global":
                add(emit, a, tgt[0])
                continue
            per = emit if s.grouping == "all" else emit / pv
            out["total"] += per * pv
            if a is None:
                continue
            np_ = len(placed)
            out["inter_worker"] += per * (np_ - by_worker[a])
            out["inter_node"] += per * (np_ - by_node[a[0]])
            out["inter_rack"] += per * (np_ - by_rack[rack_of[a[0]]])
    return out


def _guarantees(inst: Instance, scheduled: list[str]) -> dict[str, float]:
    """Average over CPU and memory of allocated / guaranteed, per user (Storm RAS priority order)."""
    out = {}
    for u in inst.users:
        cpu = mem = 0.0
        for t in inst.topologies:
            if t.owner == u.id and t.id in scheduled:
                cpu += sum(c.cpu * c.parallelism for c in t.components)
                mem += sum(c.memory_mb * c.parallelism for c in t.components)
        parts = []
        if u.cpu > 0:
            parts.append(cpu / u.cpu)
        if u.memory_mb > 0:
            parts.append(mem / u.memory_mb)
        out[u.id] = sum(parts) / len(parts) if parts else math.inf
    return out


def _throughput(ck: _Checker, inst: Instance, plan: Plan, counts, where, nodes, metrics) -> None:
    """Sustainable input rate of a throughput plan (Nasiri et al.'s CPU model)."""
    even_rates: dict[str, float] = {}
    weighted_rates: dict[str, float] = {}
    loads_at_claim: dict[str, float] = {}
    for t in inst.topologies:
        unit = rates.executor_rates(t, 1.0, counts[t.id])
        slope: dict[str, float] = defaultdict(float)
        fixed: dict[str, float] = defaultdict(float)
        # (component, node) -> instances there, for the weighted LP
        groups: dict[tuple[str, str], int] = Counter()
        ok = True
        for (tid, cid, i), w in where.items():
            if tid != t.id:
                continue
            comp = t.component(cid)
            node = nodes[w[0]]
            prof = inst.profile(rates.profile_key(comp), node.type)
            if prof is None:
                ck.bad(P.THROUGHPUT_CAPACITY, f"{tid}/{cid}[{i}] on {node.id}", f"no machine profile for {rates.profile_key(comp)!r} on type {node.type!r}")
                ok = False
                continue
            slope[node.id] += unit[(cid, i)] * prof.exec_ms / 10.0
            fixed[node.id] += prof.overhead
            groups[(cid, node.id)] += 1
        if not ok:
            even_rates[t.id] = 0.0
            weighted_rates[t.id] = 0.0
            continue
        r_even = math.inf
        for nid in set(slope) | set(fixed):
            room = nodes[nid].cpu - fixed[nid]
            if room < -EPS:
                r_even = 0.0
            elif slope[nid] > 0:
                r_even = min(r_even, max(room, 0.0) / slope[nid])
        even_rates[t.id] = r_even
        weighted_rates[t.id] = _weighted_rate(inst, t, counts[t.id], groups, nodes)
        if plan.input_rate is not None:
            for nid in set(slope) | set(fixed):
                load = plan.input_rate * slope[nid] + fixed[nid] if t.routing == "even" else None
                if load is not None:
                    loads_at_claim[nid] = loads_at_claim.get(nid, 0.0) + load
            claimed_ok = plan.input_rate <= (r_even if t.routing == "even" else weighted_rates[t.id]) * (1 + 1e-6) + 1e-9
            if not claimed_ok:
                ck.bad(
                    P.THROUGHPUT_CAPACITY, f"topology {t.id}",
                    f"claimed input rate {plan.input_rate:g} exceeds the sustainable {t.routing} rate "
                    f"{(r_even if t.routing == 'even' else weighted_rates[t.id]):g}",
                )
    metrics["sustainable_rate_even"] = min(even_rates.values()) if even_rates else 0.0
    metrics["sustainable_rate_weighted"] = min(weighted_rates.values()) if weighted_rates else 0.0
    routing = {t.routing for t in inst.topologies}
    metrics["sustainable_rate"] = min(
        (even_rates[t.id] if t.routing == "even" else weighted_rates[t.id]) for t in inst.topologies
    )
    metrics["routing"] = routing.pop() if len(routing) == 1 else "mixed"
    metrics["claimed_rate"] = plan.input_rate
    if loads_at_claim:
        metrics["node_cpu_at_claimed_rate"] = loads_at_claim


def _weighted_rate(inst: Instance, t: Topology, counts: dict[str, int], groups: dict[tuple[str, str], int], nodes) -> float:
    """Best input rate when each component's rate may be split over its instances in any
    proportions (a capacity-aware grouping): an LP solved with HiGHS.

    max R  s.t.  sum_j x_cj = g_c R  (c),  sum_c x_cj e_cj / 10 + n_cj MET_cj <= cap_j  (j),
    x_cj >= 0, and x_cj = 0 where component c has no instance on node j.
    """
    # SciPy's HiGHS, not highspy: highspy's libhighs.so.1 and the one inside OR-Tools share a
    # soname but not a version, so loading both in one process fails (whichever comes second).
    from scipy.optimize import linprog

    gains = rates.component_gains(t, counts)
    keys = sorted(groups)
    col = {k: 1 + n for n, k in enumerate(keys)}  # column 0 is R
    nvar = 1 + len(keys)
    comps = {c for c, _ in keys}
    if any(c not in comps and gains.get(c, 0) > 0 for c in counts):
        return 0.0
    a_eq, b_eq, a_ub, b_ub = [], [], [], []
    for c in sorted(comps):
        row = [0.0] * nvar
        row[0] = -gains[c]
        for k in keys:
            if k[0] == c:
                row[col[k]] = 1.0
        a_eq.append(row)
        b_eq.append(0.0)
    for nid in sorted({n for _, n in keys}):
        row = [0.0] * nvar
        fixed = 0.0
        for k in keys:
            if k[1] != nid:
                continue
            prof = inst.profile(rates.profile_key(t.component(k[0])), nodes[nid].type)
            row[col[k]] = prof.exec_ms / 10.0
            fixed += groups[k] * prof.overhead
        room = nodes[nid].cpu - fixed
        if room < -EPS:
            return 0.0
        a_ub.append(row)
        b_ub.append(max(room, 0.0))
    cost = [0.0] * nvar
    cost[0] = -1.0
    res = linprog(cost, A_ub=a_ub or None, b_ub=b_ub or None, A_eq=a_eq or None, b_eq=b_eq or None,
                  bounds=[(0, None)] * nvar, method="highs")
    if res.status == 3:
        return math.inf
    if res.status != 0:
        return 0.0
    return float(res.x[0])


def _slots(ck: _Checker, inst: Instance, counts, where, metrics) -> None:
    """Per-slot CPU/memory from the performance models, and the supported input rate."""
    supported = math.inf
    usage: dict[str, dict[str, float]] = {}
    for t in inst.topologies:
        if t.input_rate is None:
            ck.bad(P.SLOT_MODEL, f"topology {t.id}", "no input_rate: the slots problem needs a target rate")
        unit = rates.executor_rates(t, 1.0, counts[t.id])
        groups: dict[tuple[str, int], Counter] = defaultdict(Counter)
        unit_load: dict[tuple[tuple[str, int], str], float] = defaultdict(float)
        for (tid, cid, i), w in where.items():
            if tid == t.id:
                groups[w][cid] += 1
                unit_load[(w, cid)] += unit[(cid, i)]
        for w, cc in sorted(groups.items()):
            cpu = mem = 0.0
            wname = f"{w[0]}:{w[1]}"
            for cid, q in sorted(cc.items()):
                comp = t.component(cid)
                model = rates.perf_model_for(inst, comp)
                if model is None:
                    ck.bad(P.SLOT_MODEL, f"{t.id}/{cid}", f"no performance model {comp.perf_model or cid!r}")
                    supported = 0.0
                    continue
                pt = rates.perf_at(model, q)
                if pt is None:
                    ck.bad(P.SLOT_MODEL, f"slot {wname}", f"{q} threads of {cid!r}: beyond its model (max {model.points[-1].threads})")
                    supported = 0.0
                    continue
                peak = rates.peak_rate(pt)
                per_unit = unit_load[(w, cid)]
                scale = 1.0
                if inst.params.slot_usage == "rate" and t.input_rate is not None and math.isfinite(peak) and peak > 0:
                    scale = per_unit * t.input_rate / peak
                cpu += pt.cpu * scale
                mem += pt.memory * scale
                if per_unit > 0:
                    supported = min(supported, peak / per_unit)
                    if t.input_rate is not None and not _le(per_unit * t.input_rate, peak):
                        ck.bad(P.SLOT_MODEL, f"slot {wname}", f"{q} threads of {cid!r} must take {per_unit * t.input_rate:g} tuples/s; model peak {peak:g}")
            usage[wname] = {"cpu": cpu, "memory": mem}
            if not _le(cpu, 100.0):
                ck.bad(P.SLOT_MODEL, f"slot {wname}", f"CPU {cpu:g} % > 100 %")
            if not _le(mem, 100.0):
                ck.bad(P.SLOT_MODEL, f"slot {wname}", f"memory {mem:g} % > 100 %")
    metrics["supported_rate"] = supported
    metrics["target_rate"] = min((t.input_rate for t in inst.topologies if t.input_rate is not None), default=None)
    metrics["slot_usage"] = usage
