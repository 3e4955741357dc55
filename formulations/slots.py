"""Exact models for the ``slots`` problem (Shukla and Simmhan, model-driven scheduling).

Each component c has a performance model measured on one slot: q threads of c in one slot use
cpu(c, q) % and mem(c, q) % of the slot and sustain at most peak(c, q) tuples/s
(``rates.perf_at``: modelled rows, linear in between only when the model says ``interpolate``,
otherwise the conservative row; nothing beyond the largest modelled count). Choose the thread
count Q_c >= 1 of every component and how many of its threads go to each slot (q_cs) so that
the target input rate R is sustained: with even routing each thread of c receives rho_c / Q_c
(rho_c = tuples/s c processes at R), so a slot with q threads must take q rho_c / Q_c <=
peak(c, q); every slot's CPU and memory sums stay within 100 %. Minimise the slots used, then
the VM cost (sum of ``price`` over nodes with a used slot).

Two models (option ``model``). The default ("auto") is the configuration model of
``_slotpatterns`` (slot contents as patterns, a thread-count level per component), exact under
``slot_usage = "peak"`` and used when no component is pinned and none has ``max_per_node``;
it proves the Shukla micro-DAGs in seconds. Otherwise (or with ``model="assign"``) the
assignment model below. Under ``slot_usage = "rate"`` (usage scaled by rate taken / peak, so
by 1/Q_c) the exact methods run ``_slotsrate`` (share MILP, product CP-SAT model) seeded by the
peak-usage optimum, see ``_solve_rate`` and docs/formulations.md, "Slots", "Rate usage".

Assignment model: a binary v_csq says "slot s holds exactly q threads of c". The rate condition
q rho_c / Q_c <= peak(c, q) is  Q_c >= q rho_c / peak(c, q), i.e.  Q_c >= need_cq v_csq  with
need_cq = ceil(q rho_c / peak(c, q)), linear because Q_c = sum_{s,q} q v_csq is.
Both CP-SAT and the MILP build this same model (CPU and memory percentages are scaled by 10^4
and rounded up for CP-SAT, exact for data with up to four decimals and conservative otherwise).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from planner import rates
from planner.model import Instance, InstanceError
from planner.plan import Placement, Plan, Result, Status
from planner.registry import register

from . import _slotpatterns as _sp
from . import _slotsrate as _sr
from ._slotscommon import cover as _cover, cpsat_tail, cpsat_threads, incompatible_rows, max_per_node_rows
from ._slotscommon import price_weights as _price_weights, symmetry as _symmetry
from . import gap as core

OPTIONS = {"hint": None, "max_instances": 10, "model": "auto"}
SOURCE = "Shukla and Simmhan, model-driven scheduling (problem statement); exact models in docs/formulations.md"
PCT_SCALE = 10_000
# rate usage: the share of the time left for the plan search by bisection over slot counts that
# runs when the climb from the even-routing bound leaves its first count undecided
# (``_solve_rate``); 0 turns it off
PLAN_SEARCH_SHARE = 0.35
# the share of the time left for each count of ``plans_down`` (the plan search from the best
# count down, after the bisection), 0.25 before session 14
PLANS_DOWN_SHARE = 0.5
# the share of the time left for each count of the climb from the even-routing bound (0.75
# before session 9, 0.5 in sessions 9-40). Session 41, with a CPU hog beside the run, exact.cpsat at
# 60 s, two rounds alternating: seed 0's 7-task and seed 1's 15-task application cells at 100
# tuples/s proven at their bounds in 4 of 4 runs at 0.65 (21.4-27.2 s), in 0 of 4 at 0.5: the
# fixed-count search finds their plans 17-24 s into the check. The cost: less time for the
# plans above an undecided bound (seed 0's 15-task cell at 100: 23 slots in one run, 20-23 at 0.5)
CLIMB_SHARE = 0.65


@dataclass
class Option:
    """q threads of component c in one slot."""

    q: int
    cpu: float
    mem: float
    peak: float  # tuples/s
    need: int  # the least Q_c that lets a slot with q threads keep up


@dataclass
class SlotsData:
    topology_id: str
    comps: list[str]
    rho: list[float]  # tuples/s each component processes at the target rate
    options: list[list[Option]]  # per component, the thread counts a slot may hold
    slots: list[tuple[str, int]]
    slot_node: list[int]
    nodes: list[str]
    price: list[float]
    allowed: list[list[bool]]  # [c][s]
    max_per_node: list[int | None]
    incompatible: list[tuple[int, int]]
    node_ident: list[tuple]
    target: float

    @property
    def C(self) -> int:
        return len(self.comps)

    @property
    def S(self) -> int:
        return len(self.slots)


def prepare(instance: Instance, peak_usage_filter: bool = True) -> SlotsData:
    """Index the slots statement; InstanceError for bad input. ``peak_usage_filter`` drops
    thread counts whose modelled CPU or memory alone exceeds a slot."""
    if len(instance.topologies) != 1:
        raise InstanceError("topologies", f"the slots models place one topology; the instance has {len(instance.topologies)}")
    t = instance.topologies[0]
    if t.input_rate is None:
        raise InstanceError("topologies[0].input_rate", "the slots problem needs a target input rate")
    for si, s in enumerate(t.streams):
        if s.grouping in ("all", "global"):
            raise InstanceError(f"topologies[0].streams[{si}].grouping",
                                f"grouping {s.grouping!r} is not modelled by the exact slots models (threads share a rate evenly)")
    rho = rates.component_rates(t)
    nodes = sorted(instance.cluster.nodes, key=lambda n: n.id)
    slots, slot_node = [], []
    for k, n in enumerate(nodes):
        for p in n.slots:
            slots.append((n.id, p))
            slot_node.append(k)
    if not slots:
        raise InstanceError("cluster", "no node has a worker slot")
    comps, opts, allowed, mpn = [], [], [], []
    for ci, comp in enumerate(t.components):
        model = rates.perf_model_for(instance, comp)
        if model is None:
            raise InstanceError(f"topologies[0].components[{ci}].perf_model",
                                f"no performance model {comp.perf_model or comp.id!r} for component {comp.id!r}")
        top = model.points[-1].threads
        if comp.max_per_node is not None:
            top = min(top, comp.max_per_node)
        if comp.id in comp.incompatible:
            top = min(top, 1)
        row = []
        for q in range(1, top + 1):
            pt = rates.perf_at(model, q)
            if pt is None or (peak_usage_filter and (pt.cpu > 100 + 1e-9 or pt.memory > 100 + 1e-9)):
                continue
            peak = rates.peak_rate(pt)
            r = rho[comp.id]
            if r <= 0 or math.isinf(peak):
                need = 0
            elif peak <= 0:
                continue
            else:
                need = math.ceil(q * r / peak - 1e-9)
            row.append(Option(q, pt.cpu, pt.memory, peak, need))
        comps.append(comp.id)
        opts.append(row)
        allowed.append([(comp.site is None or nodes[slot_node[s]].site == comp.site)
                        and (comp.nodes is None or nodes[slot_node[s]].id in comp.nodes) for s in range(len(slots))])
        mpn.append(comp.max_per_node)
    idx = {c: i for i, c in enumerate(comps)}
    inc = set()
    for comp in t.components:
        for other in comp.incompatible:
            if other != comp.id:
                inc.add(tuple(sorted((idx[comp.id], idx[other]))))
    ident = [(n.price, n.site, len(n.slots), tuple(allowed[c][slot_node.index(k)] for c in range(len(comps))))
             for k, n in enumerate(nodes)]
    return SlotsData(t.id, comps, [rho[c] for c in comps], opts, slots, slot_node, [n.id for n in nodes],
                     [n.price or 0.0 for n in nodes], allowed, mpn, sorted(inc), ident, t.input_rate)


def _n_slots(q: dict[tuple[int, int], int]) -> int:
    """The slots a plan ``q`` ({(component, slot): threads}) uses."""
    return len({s for (_, s) in q})


def _pct(x: float) -> int:
    return math.ceil(x * PCT_SCALE - 1e-6)


def _no_option(d: SlotsData) -> str | None:
    for c, cid in enumerate(d.comps):
        if not d.options[c]:
            return f"component {cid!r}: no thread count fits one slot (CPU or memory > 100 %, or zero peak rate)"
        if not any(d.allowed[c]):
            return f"component {cid!r}: no slot satisfies its pins"
    return None


# --- the models -------------------------------------------------------------------------------

def _cpsat(d: SlotsData, hint, time_limit, seed):
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    v = {}
    u = [m.NewBoolVar(f"u[{s}]") for s in range(d.S)]
    w = [m.NewBoolVar(f"w[{k}]") for k in range(len(d.nodes))]
    Q = []
    for c in range(d.C):
        qmax = max(o.q for o in d.options[c]) * d.S
        Q.append(cpsat_threads(d, m, u, v, c, d.options[c], 1, qmax))
    for s in range(d.S):
        cpu = [_pct(o.cpu) * v[(c, s, o.q)] for c in range(d.C) for o in d.options[c] if (c, s, o.q) in v]
        mem = [_pct(o.mem) * v[(c, s, o.q)] for c in range(d.C) for o in d.options[c] if (c, s, o.q) in v]
        if cpu:
            m.Add(sum(cpu) <= 100 * PCT_SCALE)
            m.Add(sum(mem) <= 100 * PCT_SCALE)
        m.AddImplication(u[s], w[d.slot_node[s]])
        if cpu:  # a slot counts as used only when it holds a thread
            m.Add(u[s] <= sum(v[(c, s, o.q)] for c in range(d.C) for o in d.options[c] if (c, s, o.q) in v))
        else:
            m.Add(u[s] == 0)
        for c1, c2 in d.incompatible:
            both = [v[k] for k in v if k[1] == s and k[0] in (c1, c2)]
            a = [v[k] for k in v if k[1] == s and k[0] == c1]
            b = [v[k] for k in v if k[1] == s and k[0] == c2]
            if a and b:
                m.Add(sum(both) <= 1)
    big = cpsat_tail(d, m, v, u, w, d.options, hint)
    out, sol = core.run_cpsat(m, time_limit, seed)
    q = None
    if out.status in ("optimal", "feasible"):
        q = {(c, s): qq for (c, s, qq), x in v.items() if sol.Value(x)}
    return out, q, big


def _milp(d: SlotsData, hint, time_limit, solver):
    import pulp

    started = time.monotonic()
    if time_limit is not None:
        try:
            return _milp_build_and_solve(d, hint, time_limit, solver, started, pulp)
        except _OutOfTime:
            return core.Outcome("unknown", seconds=time.monotonic() - started), None, _price_weights(d)[1]
    return _milp_build_and_solve(d, hint, time_limit, solver, started, pulp)


class _OutOfTime(Exception):
    """The time limit ran out while the MILP was being built."""


def _milp_build_and_solve(d: SlotsData, hint, time_limit, solver, started, pulp):
    def check() -> None:
        if time_limit is not None and time.monotonic() - started > time_limit:
            raise _OutOfTime

    p = pulp.LpProblem("slots", pulp.LpMinimize)
    v = {}
    u = [pulp.LpVariable(f"u_{s}", cat="Binary") for s in range(d.S)]
    w = [pulp.LpVariable(f"w_{k}", cat="Binary") for k in range(len(d.nodes))]
    for c in range(d.C):
        terms = []
        for s in range(d.S):
            check()
            if not d.allowed[c][s]:
                continue
            for o in d.options[c]:
                v[(c, s, o.q)] = pulp.LpVariable(f"v_{c}_{s}_{o.q}", cat="Binary")
                terms.append(o.q * v[(c, s, o.q)])
            p += pulp.lpSum(v[(c, s, o.q)] for o in d.options[c]) <= u[s]
        Qc = pulp.lpSum(terms)
        p += Qc >= 1
        _cover(d, c, v, lambda e: p.addConstraint(e), pulp.lpSum)
        for o in d.options[c]:
            if o.need > 1:
                for s in range(d.S):
                    if (c, s, o.q) in v:
                        p += Qc >= o.need * v[(c, s, o.q)]
    for s in range(d.S):
        check()
        here = [(c, o) for c in range(d.C) for o in d.options[c] if (c, s, o.q) in v]
        p += pulp.lpSum(o.cpu * v[(c, s, o.q)] for c, o in here) <= 100 * u[s]
        p += pulp.lpSum(o.mem * v[(c, s, o.q)] for c, o in here) <= 100 * u[s]
        p += u[s] <= w[d.slot_node[s]]
        incompatible_rows(p, d, [(c, v[(c, s, o.q)]) for c, o in here])
    max_per_node_rows(p, d, v, [[o.q for o in d.options[c]] for c in range(d.C)])
    _symmetry(d, lambda e: p.addConstraint(e), u, w)
    pw, big = _price_weights(d)
    p += big * pulp.lpSum(u) + pulp.lpSum(pw[k] * w[k] for k in range(len(d.nodes)))
    warm = False
    if hint is not None:
        if solver == "cbc":
            for key, x in v.items():
                x.setInitialValue(1 if hint.get((key[0], key[1])) == key[2] else 0)
            used = {s for (_, s) in hint}
            for s in range(d.S):
                u[s].setInitialValue(1 if s in used else 0)
            for k in range(len(d.nodes)):
                w[k].setInitialValue(1 if any(d.slot_node[s] == k for s in used) else 0)
            warm = True
        else:  # HiGHS through SciPy takes no start: the hint's value becomes a cutoff
            hv = big * _n_slots(hint) + sum(pw[k] for k in {d.slot_node[s] for (_, s) in hint})
            p += big * pulp.lpSum(u) + pulp.lpSum(pw[k] * w[k] for k in range(len(d.nodes))) <= hv
    if time_limit is not None:
        # building the PuLP model counts against the limit; a budget spent on it is honest "unknown"
        time_limit = time_limit - (time.monotonic() - started)
        if time_limit <= 0.05:
            return core.Outcome("unknown", seconds=time.monotonic() - started), None, big
    out = core.run_pulp(p, solver, time_limit, warm=warm)
    # run_pulp reads CBC's 'infeasible' past its clock as unknown (gap.cbc_infeasible_is_proof)
    q = None
    if out.status in ("optimal", "feasible"):
        q = {(c, s): qq for (c, s, qq), x in v.items() if (x.varValue or 0) > 0.5}
    return out, q, big


# --- plans -------------------------------------------------------------------------------------

def make_plan(d: SlotsData, q: dict[tuple[int, int], int]) -> Plan:
    """Threads of c numbered slot by slot."""
    pl = []
    counts = {}
    for c, cid in enumerate(d.comps):
        i = 0
        for s in range(d.S):
            for _ in range(q.get((c, s), 0)):
                node, port = d.slots[s]
                pl.append(Placement(topology=d.topology_id, component=cid, executor=i, node=node, slot=port))
                i += 1
        counts[cid] = i
    return Plan(placements=pl, parallelism={d.topology_id: counts})


def _valid(d: SlotsData, q: dict[tuple[int, int], int]) -> bool:
    """Does ``q`` satisfy the model (used to vet a hint)?"""
    Q = [sum(x for (c, _), x in q.items() if c == cc) for cc in range(d.C)]
    if any(x < 1 for x in Q):
        return False
    opt = [{o.q: o for o in d.options[c]} for c in range(d.C)]
    for s in range(d.S):
        cpu = mem = 0.0
        for c in range(d.C):
            x = q.get((c, s), 0)
            if not x:
                continue
            if x not in opt[c] or not d.allowed[c][s] or Q[c] < opt[c][x].need:
                return False
            cpu += opt[c][x].cpu
            mem += opt[c][x].mem
        if cpu > 100 + 1e-9 or mem > 100 + 1e-9:
            return False
    return True


def _hint(instance, d: SlotsData, hint, method, details, check=None):
    """The plan of method ``hint`` as threads per (component, slot), when ``check`` (default:
    the peak-usage rule) accepts it; else None. Recorded in ``details["hint"]``."""
    if hint is None:
        return None
    if hint == method:
        raise InstanceError("options.hint", f"a method cannot hint itself ({hint!r})")
    from planner.api import solve

    try:
        r = solve(instance, "slots", hint)
    except InstanceError as e:
        raise InstanceError("options.hint", f"cannot use {hint!r} as a hint: {e}") from None
    q = None
    if r.ok and r.plan is not None:
        q = _plan_to_q(d, r.plan)
        if q is not None and not (check or _valid)(d, q):
            q = None
    details["hint"] = {"method": hint, "status": r.status.value, "used": q is not None}
    return q


def _plan_to_q(d: SlotsData, plan: Plan) -> dict[tuple[int, int], int] | None:
    """Threads per (component, slot) of a plan; None when it names an unknown component or slot."""
    ci = {c: k for k, c in enumerate(d.comps)}
    si = {sl: k for k, sl in enumerate(d.slots)}
    q: dict[tuple[int, int], int] = {}
    for p in plan.placements:
        key = (ci.get(p.component), si.get((p.node, p.slot)))
        if None in key:
            return None
        q[key] = q.get(key, 0) + 1
    return q


MODELS = ("auto", "patterns", "assign")


def solve_slots(instance: Instance, backend: str, method: str, time_limit=None, seed=0, hint=None,
                model: str = "auto") -> Result:
    """Shared driver of exact.cpsat / exact.milp-cbc / exact.milp-highs for ``slots``.

    ``model``: "patterns" (the configuration model of ``_slotpatterns``; needs no pins and no
    max_per_node), "assign" (the v_csq model above, any instance), "auto" (patterns when they
    apply). The time limit counts from this call: model building is inside it."""
    started = time.monotonic()
    if model not in MODELS:
        raise InstanceError("options.model", f"must be one of {', '.join(MODELS)}, got {model!r}")
    if instance.params.slot_usage == "rate":
        return _solve_rate(instance, backend, method, time_limit, seed, hint, model, started)
    d = prepare(instance)
    why = _no_option(d)
    if why:
        return Result(problem="slots", method=method, status=Status.INFEASIBLE, message=why)
    if model != "assign":
        why_not = _sp.applicable(d)
        if why_not is not None and model == "patterns":
            raise InstanceError("options.model", f"the pattern model does not apply: {why_not}; use 'assign' or 'auto'")
        if why_not is None:
            res = _solve_patterns(instance, d, backend, method, time_limit, seed, hint, started, model == "auto")
            if res is not None:
                return res
            # auto, too many slot contents: the assignment model, with the rest of the time
            if time_limit is not None:
                time_limit = max(0.1, time_limit - (time.monotonic() - started))
    details: dict = {"model": "assign"}
    hq = _hint(instance, d, hint, method, details)
    if backend == "cpsat":
        out, q, big = _cpsat(d, hq, time_limit, seed)
    else:
        out, q, big = _milp(d, hq, time_limit, backend)
        if q is None and out.status == "infeasible" and hq is not None:
            q, out.status = hq, "optimal"  # only the hint's cutoff can cut everything: the hint is optimal
    if out.status == "infeasible":
        return Result(problem="slots", method=method, status=Status.INFEASIBLE,
                      message="no thread allocation sustains the target rate within the slots (proven): "
                              "not enough slot CPU/memory for the models' peak rates")
    if q is None:
        return Result(problem="slots", method=method, status=Status.UNKNOWN, message=core.none_found_message("allocation"))
    slots_used = _n_slots(q)
    if out.bound is not None and out.status == "feasible":
        # the bound is on big * slots + cost with cost < big: slots >= ceil((bound - big + 1) / big)
        lb = _sr.slot_bound(out.bound, big)
        bound = float(min(slots_used, lb)) if lb is not None else None
    else:
        bound = float(slots_used)
    status = Status.OPTIMAL if out.status == "optimal" else Status.FEASIBLE
    msg = "" if status == Status.OPTIMAL else core.stop_message("best allocation so far, with the proven bound")
    details["vm_cost"] = sum(d.price[k] for k in {d.slot_node[s] for (_, s) in q})
    return Result(problem="slots", method=method, status=status, plan=make_plan(d, q), bound=bound, details=details,
                  message=msg)


def _solve_patterns(instance: Instance, d: SlotsData, backend: str, method: str, time_limit, seed, hint,
                    started: float, fallback: bool = False) -> Result | None:
    """The configuration model (``_slotpatterns``): exact under peak usage. None when there
    are too many slot contents and ``fallback`` lets the caller use the assignment model."""
    details: dict = {}
    hq = _hint(instance, d, hint, method, details)
    hint_contents = None
    if hq is not None:
        by_slot: dict[int, dict[int, int]] = {}
        for (c, s), x in hq.items():
            by_slot.setdefault(s, {})[c] = x
        hint_contents = list(by_slot.values())
    status, q, bound, info = _sp.solve(d, backend, time_limit, seed, started, hint_contents)
    details.update(info)
    if status == "too_many":
        if fallback:
            return None
        return Result(problem="slots", method=method, status=Status.UNKNOWN, details=details,
                      message=f"pattern model: {info['stopped']}; use model='assign'")
    if status == "infeasible":
        return Result(problem="slots", method=method, status=Status.INFEASIBLE, details=details,
                      message="no thread allocation sustains the target rate within the slots (proven): "
                              "not enough slot CPU/memory for the models' peak rates")
    if status == "error":
        return Result(problem="slots", method=method, status=Status.ERROR, details=details,
                      message=info.get("message", "solver error"))
    if q is None:
        return Result(problem="slots", method=method, status=Status.UNKNOWN, details=details,
                      message=core.none_found_message("allocation") + (f" ({info['stopped']})" if "stopped" in info else ""))
    if not _valid(d, q):
        return Result(problem="slots", method=method, status=Status.ERROR, details=details,
                      message="internal error: the pattern model returned an allocation that breaks the model")
    st = Status.OPTIMAL if status == "optimal" else Status.FEASIBLE
    msg = "" if st == Status.OPTIMAL else core.stop_message("best allocation so far, with the proven bound")
    details["vm_cost"] = sum(d.price[k] for k in {d.slot_node[s] for (_, s) in q})
    return Result(problem="slots", method=method, status=st, plan=make_plan(d, q),
                  bound=None if bound is None else float(bound), details=details, message=msg)


def _solve_rate(instance: Instance, backend: str, method: str, time_limit, seed, hint, model: str,
                started: float) -> Result:
    """Exact driver under ``params.slot_usage = "rate"`` (``_slotsrate``; docs/formulations.md,
    "Slots", "Rate usage"). Seeds: the hint (checked under rate usage) and a greedy plan
    (``_slotsrate.greedy``). Then the even-routing bound; with interchangeable slots the
    packing check climbs from it (each "infeasible" raises the bound; after an "unknown" the
    counts above are searched for a plan only). Where those have not settled the count, the
    peak-usage optimum (rate-feasible: its scale is <= 1, 40 % of the time left) joins the
    seeds. Then the relaxation (a bound valid for every plan the evaluator accepts); its plan
    is kept when the evaluator's rule accepts it, otherwise the restriction looks for a plan
    in the time left. With interchangeable slots, a slot-count search up from the bound then
    proves the slot count (relaxation on fewer slots infeasible) and takes the cheapest nodes
    for that count."""
    d = prepare(instance, peak_usage_filter=False)
    R = _sr.rows(d)
    for c, cid in enumerate(d.comps):
        if not R[c]:
            return Result(problem="slots", method=method, status=Status.INFEASIBLE,
                          message=f"component {cid!r}: no thread count fits one slot (unscaled CPU or memory > 100 %, or zero peak rate)")
        if not any(d.allowed[c]):
            return Result(problem="slots", method=method, status=Status.INFEASIBLE,
                          message=f"component {cid!r}: no slot satisfies its pins")
    deadline = None if time_limit is None else started + time_limit

    def left(share: float = 1.0):
        return None if deadline is None else max(0.0, (deadline - time.monotonic()) * share)

    details: dict = {"model": "rate-" + ("products" if backend == "cpsat" else "shares"), "slot_usage": "rate"}
    checked = lambda dd, qq: _sr.valid(dd, R, qq)  # noqa: E731
    seeds = []
    hq = _hint(instance, d, hint, method, details, check=checked)
    if hq is not None:
        seeds.append(hq)
    gq = _sr.greedy(d, R)
    details["greedy_seed"] = None if gq is None else _n_slots(gq)
    if gq is not None:
        seeds.append(gq)
    def peak_seed():
        """The peak-usage optimum (pattern or assignment model, 40 % of the time left), added
        to the seeds when it passes the rate rule."""
        peak_inst = instance.model_copy(update={"params": instance.params.model_copy(update={"slot_usage": "peak"})})
        pr = solve_slots(peak_inst, backend, method, None if deadline is None else left(0.4), seed, None, model)
        pq = _plan_to_q(d, pr.plan) if pr.plan is not None else None
        details["peak_seed"] = {"status": pr.status.value, "used": pq is not None and checked(d, pq),
                                "slots": None if pq is None else _n_slots(pq)}
        if details["peak_seed"]["used"]:
            seeds.append(pq)
        return pq if details["peak_seed"]["used"] else None

    if not seeds:  # the bounds below start from a seed's slot count
        peak_seed()
    pw, big = _price_weights(d)

    def obj(q) -> int:
        used = {s for (_, s) in q}
        return big * len(used) + sum(pw[k] for k in {d.slot_node[s] for s in used})

    def on_cheapest(q, n):
        """``q`` moved onto the cheapest nodes that hold ``n`` slots, when that passes the rate
        rule; else None."""
        nodes = _sp.cheapest_nodes(d, n)
        moved = _sr.remap(d, q, nodes) if nodes is not None else None
        return moved if moved is not None and checked(d, moved) else None

    def proven_count(q, n):
        """The result for plan ``q`` once no plan has fewer than its ``n`` slots."""
        details["vm_cost"] = sum(d.price[k] for k in {d.slot_node[s] for (_, s) in q})
        return Result(problem="slots", method=method, status=Status.OPTIMAL, plan=make_plan(d, q),
                      bound=float(n), details=details)

    def settle(n):
        """Once no plan has fewer than ``n`` slots (the best plan's count): the proven result, on
        the cheapest nodes for n slots when the plan moves there, or None when it does not."""
        moved = on_cheapest(best, n)
        return None if moved is None else proven_count(moved if obj(moved) <= obj(best) else best, n)

    best = min(seeds, key=obj) if seeds else None
    # the even-routing volume bound (least usage of each component within L slots): no plan
    # has fewer slots; computed up to the best seed's count less one (milliseconds to a second)
    n0 = None if best is None else _n_slots(best)
    lmax = d.S if n0 is None else min(d.S, n0 - 1)
    t_eb = time.monotonic()
    tables = _sr.usage_tables(d, R, lmax, None if deadline is None else t_eb + left(0.25))
    eb = _sr.even_bound(d, R, lmax, tables=tables) if tables is not None else None
    details["even_bound"] = {"slots": eb, "seconds": round(time.monotonic() - t_eb, 3)}
    if eb is not None and eb > d.S:
        return Result(problem="slots", method=method, status=Status.INFEASIBLE, details=details,
                      message="no thread allocation sustains the target rate within the slots "
                              "(proven under rate usage: the components' least usage exceeds every slot)")
    interchangeable = _sp.applicable(d) is None  # no pins, no max_per_node: any slot holds any content
    if n0 is not None and eb is not None and eb >= n0 and interchangeable:
        # the best seed's slot count is proven; the cheapest nodes holding n0 slots give the cost
        res = settle(n0)
        if res is not None:
            return res
    # the packing check from the bound up (before the full model: where the bound is tight it
    # proves the count, or finds a plan on exactly that many slots, in seconds)
    packed = {}  # slot count -> the packing check's answer there
    dps = {"L": lmax}  # the packing checks' DP tables, kept across counts (``_slotsrate.dp_tables``)

    def plan_search(lo: int, hi: int) -> None:
        """Plans by bisection over the slot counts lo..hi - 1 (hi: the best count), each count a
        fifth of the time left, at least 3 s, the whole search PLAN_SEARCH_SHARE (35 %) of it:
        a plan found becomes the incumbent and lowers hi, an undecided or infeasible count
        raises lo. A search, not a proof; only its "infeasible" answers are kept (``packed``).
        Its checks run the fixed-count search since session 41 (they left it out before)."""
        nonlocal best
        phase_end = time.monotonic() + left(PLAN_SEARCH_SHARE)
        probes = details.setdefault("plan_search", [])
        while lo < hi and phase_end - time.monotonic() > 0.5:
            mid = (lo + hi) // 2
            t_pk = time.monotonic()
            pk, qk = _sr.packing_check(d, R, tables, mid, min(phase_end, t_pk + max(3.0, left(0.2))), dp_cache=dps)
            probes.append({"slots": mid, "status": pk, "seconds": round(time.monotonic() - t_pk, 3)})
            if pk == "infeasible":
                packed[mid] = pk  # exactly mid slots: ``plans_down`` does not ask it again
            if pk == "feasible":
                if obj(qk) < obj(best):
                    best = qk
                hi = _n_slots(best)
            elif pk == "n/a":
                return
            else:  # unknown or infeasible: look above
                lo = mid + 1

    def checked_at(k: int, share: float):
        """The packing check at k slots with ``share`` of the time left (with its fixed-count
        plan search), its answer recorded (``packed``, ``details["packing"]``)."""
        t_pk = time.monotonic()
        pk, qk = _sr.packing_check(d, R, tables, k, None if deadline is None else t_pk + left(share), dp_cache=dps)
        packed[k] = pk
        details.setdefault("packing", []).append({"slots": k, "status": pk, "seconds": round(time.monotonic() - t_pk, 3)})
        return pk, qk

    def plans_down(floor: int) -> None:
        """Plans only, above the undecided count ``floor``: from the best count less one down,
        ``PLANS_DOWN_SHARE`` (half) of the time left each, with the packing check's fixed-count
        search, until a count gives no plan (an "infeasible" here proves nothing below it).
        Higher counts pack more easily: climbing up from the bound instead (before session 10)
        spent the time on the counts where plans are hardest. (Before session 14 a quarter of
        the time left and no fixed-count search: seed 0's 7-task application DAG at 100
        tuples/s then ended at 12 slots, its check at 11 given 4.7 s, where the check finds an
        11-slot plan in 6.8 s when given 10; docs/benchmarks.md, session 14.)"""
        nonlocal best
        k = _n_slots(best) - 1
        while k > floor and left() > 0.5:
            if packed.get(k) == "infeasible":  # the plan search found none there
                return
            pk, qk = checked_at(k, PLANS_DOWN_SHARE)
            if pk != "feasible":
                return
            if obj(qk) < obj(best):
                best = qk
            k = min(k, _n_slots(best)) - 1  # always down: the loop ends whatever obj says

    if interchangeable and n0 is not None and eb is not None:
        L = eb
        undecided = None  # the count the check left undecided: the bound stays there
        while L < _n_slots(best) and (deadline is None or left() > 0.5):
            # from the bound up while each count is proven infeasible: where the bound is tight
            # the check settles it within 2 s (every micro-DAG cell); ``CLIMB_SHARE`` of the
            # time left for each
            pk, qk = checked_at(L, CLIMB_SHARE)
            if pk == "feasible":  # exactly L slots, every count below excluded: optimal
                if obj(qk) < obj(best):
                    best = qk
                break
            if pk == "n/a":  # the check does not handle this instance: the same at every count
                undecided = L
                break
            if pk == "unknown":
                undecided = L
                # the counts above prove nothing now: plans only, first by bisection between
                # L + 1 and the best count (which left the greedy seed's 31 slots the answer on
                # the 15-task application DAG at 100 tuples/s when the counts above got a
                # quarter of the time left each, one by one from the bound, while the check
                # finds a 24-slot plan in 2.5 s), then from the best count down
                if deadline is not None and PLAN_SEARCH_SHARE > 0:
                    plan_search(L + 1, _n_slots(best))
                plans_down(L)
                break
            L += 1  # infeasible: no plan has exactly L slots (nor fewer): the bound rises
        eb = L if undecided is None else undecided  # no plan has fewer slots
        details["climb_bound"] = eb
        n1 = _n_slots(best)
        if eb >= n1:
            res = settle(n1)
            if res is not None:
                return res
    if "peak_seed" not in details and (deadline is None or left() > 1.0):
        # after the bound and the packing check (where those prove the count, the peak
        # model's time, up to 40 % of the limit, was lost: about 8 s of 20 on the
        # interpolated micro-DAGs at 200 tuples/s, which it did not solve)
        pq = peak_seed()
        if pq is not None and obj(pq) < obj(best):
            best = pq
            n1 = _n_slots(best)
            if eb is not None and eb >= n1 and interchangeable:
                res = settle(n1)
                if res is not None:
                    return res
    run = _sr.cpsat if backend == "cpsat" else _sr.milp
    args = dict(min_slots=eb or 0)
    def attempt(limit, relaxed, dd=d, start="best", cuts=None, min_slots=None):
        """One model; a solver that fails (CBC has exited abnormally on the Diamond micro-DAG's
        share model) proves nothing and finds nothing: say so and keep the seeds."""
        h = best if start == "best" else start
        extra = args if min_slots is None else args | {"min_slots": min_slots}
        try:
            if backend == "cpsat":
                return run(dd, R, h, limit, relaxed, seed=seed, cuts=cuts, **extra)[:2] + (None,)
            return run(dd, R, h, limit, relaxed, solver=backend, cuts=cuts, **extra)[:2] + (None,)
        except Exception as e:  # noqa: BLE001 - a solver's failure is reported, not raised
            return core.Outcome("unknown"), None, f"{type(e).__name__}: {e}"[:300]

    out, q, err = attempt(left(0.5 if interchangeable else 0.8), True)
    details["relaxation"] = {"status": out.status, "seconds": round(out.seconds, 3)} | ({"error": err} if err else {})
    proven = out.status in ("optimal", "cutoff")  # cutoff: nothing beats the seed given as a cutoff (MILP)
    if q is not None and checked(d, q):
        if best is None or obj(q) <= obj(best):
            best = q
    elif q is not None:
        # the relaxation's plan overuses a slot within its rounding slack: look for a plan
        # that keeps to 100 % (the restriction) in the time left
        details["relaxation"]["plan"] = "outside the evaluator's limit"
        o2, q2, err2 = attempt(left(), False)
        details["restriction"] = {"status": o2.status, "seconds": round(o2.seconds, 3)} | ({"error": err2} if err2 else {})
        if q2 is not None and checked(d, q2) and (best is None or obj(q2) < obj(best)):
            best = q2
        proven = proven and best is not None and out.objective is not None and obj(best) <= round(out.objective)
    descent = None
    if not proven and best is not None and out.status != "infeasible" and interchangeable:
        # Slots are interchangeable: "no plan with k slots" is the relaxation on the first k
        # slots being infeasible. Step up from the bound while time is left (small k are the
        # quick proofs): each infeasible k raises the bound; the first k with a plan that
        # passes is the optimal slot count; the cheapest node set holding n slots then gives
        # the cost.
        n = _n_slots(best)
        floor_ = max(_sr.volume_bound(d, R), eb or 0, _sr.slot_bound(out.bound, big) or 0)
        descent = {"steps": []}
        while floor_ < n and (deadline is None or left() > 0.2):
            # first the packing check (near-optimal distributions per component, then CP-SAT):
            # quick where the bound is tight; the relaxation on floor_ slots gets what is left
            t_pk = time.monotonic()
            # a count the climb checked keeps its answer: "infeasible" is a proof here too
            # (every count below floor_ is excluded), "unknown" is not asked again
            pk, qk = (packed[floor_] if packed[floor_] == "infeasible" else "unknown", None) if floor_ in packed \
                else _sr.packing_check(d, R, tables, floor_, None if deadline is None else t_pk + left(0.6), dp_cache=dps)
            if floor_ not in packed:
                descent["steps"].append({"slots": floor_, "packing": pk, "seconds": round(time.monotonic() - t_pk, 3)})
            if pk == "infeasible":
                floor_ += 1
                continue
            if pk == "feasible":  # a plan on floor_ slots, checked: the optimal count
                best, n = qk, floor_
                break
            if deadline is not None and left() <= 0.2:
                break
            dk = _sr.first_slots(d, floor_)
            # on floor_ slots (no plan has fewer): every slot is used, and each component's
            # least groups and usage within floor_ slots (component_cuts) are valid cuts
            ok, qk, _ = attempt(left(), True, dk, None, _sr.component_cuts(d, tables, floor_), floor_)
            descent["steps"].append({"slots": floor_, "status": ok.status})
            if ok.status == "infeasible":
                floor_ += 1
                continue
            if qk is not None and _sr.valid(dk, R, qk):
                best, n = qk, _n_slots(qk)  # n == floor_: nothing below is left
            break
        if floor_ >= n:
            moved = on_cheapest(best, n)
            if moved is not None and obj(moved) <= obj(best):
                best = moved
                proven = True
        descent["bound"] = floor_
        details["descent"] = descent
    if out.status == "infeasible":
        if best is not None:
            return Result(problem="slots", method=method, status=Status.ERROR, details=details,
                          message="internal error: the rate relaxation is infeasible but a seed plan passes the rate rule")
        return Result(problem="slots", method=method, status=Status.INFEASIBLE, details=details,
                      message="no thread allocation sustains the target rate within the slots (proven under rate usage)")
    vb = _sr.volume_bound(d, R)
    if best is None:
        lb = _sr.slot_bound(out.bound, big)
        return Result(problem="slots", method=method, status=Status.UNKNOWN, details=details,
                      bound=float(max(vb, eb or 0, lb or 0)),
                      message=core.none_found_message("allocation"))
    n = _n_slots(best)
    if proven:
        status, bound, msg = Status.OPTIMAL, float(n), ""
    else:
        lb = _sr.slot_bound(out.bound, big)
        bound = float(min(n, max(vb, eb or 0, lb or 0, descent["bound"] if descent else 0)))
        status = Status.FEASIBLE
        msg = core.stop_message("best allocation so far, with the proven bound")
        if err:
            msg = f"the solver failed ({err}): best seed allocation, with the proven bound"
    details["vm_cost"] = sum(d.price[k] for k in {d.slot_node[s] for (_, s) in best})
    return Result(problem="slots", method=method, status=status, plan=make_plan(d, best), bound=bound,
                  details=details, message=msg)


# --- brute force --------------------------------------------------------------------------------

MAX_LEAVES = 5_000_000


def _approx(n: int) -> str:
    """A count for a message: 3 significant digits, or a power of ten past float range."""
    return f"{n:.3g}" if n < 10**300 else f"10^{len(str(n)) - 1}"


def bruteforce_slots(instance: Instance, time_limit=None) -> Result:
    """Exhaustive search: every content of every slot (a thread count per component, within
    CPU and memory), slots of one node taken as a multiset; the rate check is done with
    ``rates.executor_rates`` on the full allocation. Minimises (slots used, VM cost)."""
    method = "exact.bruteforce"
    scaled = instance.params.slot_usage == "rate"  # usage x load/peak, checked at the leaves
    # under rate usage a row above 100 % may fit once scaled: keep it (the check used to run on
    # the peak-filtered rows first and called such instances infeasible)
    d = prepare(instance, peak_usage_filter=not scaled)
    why = _no_option(d)
    if why:
        return Result(problem="slots", method=method, status=Status.INFEASIBLE, message=why)
    t = instance.topologies[0]
    contents = [()]  # the empty slot first
    import itertools

    ranges = [[0] + [o.q for o in d.options[c]] for c in range(d.C)]
    combos = math.prod(len(r) for r in ranges)
    if combos > MAX_LEAVES:
        return Result(problem="slots", method=method, status=Status.UNKNOWN,
                      message=f"too large for exhaustive search: {_approx(combos)} slot contents to enumerate > {MAX_LEAVES:,}; use exact.cpsat")
    opt = [{o.q: o for o in d.options[c]} for c in range(d.C)]
    for combo in itertools.product(*ranges):
        if not any(combo):
            continue
        cpu = sum(opt[c][x].cpu for c, x in enumerate(combo) if x)
        mem = sum(opt[c][x].mem for c, x in enumerate(combo) if x)
        if not scaled and (cpu > 100 + 1e-9 or mem > 100 + 1e-9):
            continue
        if any(combo[a] and combo[b] for a, b in d.incompatible):
            continue
        contents.append(combo)
    contents[0] = tuple([0] * d.C)
    per_node = [sum(1 for s in range(d.S) if d.slot_node[s] == k) for k in range(len(d.nodes))]
    est = 1
    for k in range(len(d.nodes)):
        est *= math.comb(len(contents) + per_node[k] - 1, per_node[k])
    if est > MAX_LEAVES:
        return Result(problem="slots", method=method, status=Status.UNKNOWN,
                      message=f"too large for exhaustive search: about {_approx(est)} allocations > {MAX_LEAVES:,}; use exact.cpsat")
    deadline = None if time_limit is None else time.monotonic() + time_limit
    best = {"key": None, "alloc": None, "stopped": False, "leaves": 0}
    alloc = [0] * d.S
    pernode_c = [[0] * d.C for _ in range(len(d.nodes))]

    def leaf() -> None:
        best["leaves"] += 1
        Q = {d.comps[c]: sum(contents[alloc[s]][c] for s in range(d.S)) for c in range(d.C)}
        if any(x < 1 for x in Q.values()):
            return
        ex = rates.executor_rates(t, d.target, Q)
        nxt = {cid: 0 for cid in d.comps}
        for s in range(d.S):
            cpu = mem = 0.0
            for c, x in enumerate(contents[alloc[s]]):
                if not x:
                    continue
                cid = d.comps[c]
                load = sum(ex[(cid, i)] for i in range(nxt[cid], nxt[cid] + x))
                nxt[cid] += x
                o = opt[c][x]
                if load > o.peak * (1 + 1e-9) + 1e-9:
                    return
                f = load / o.peak if scaled and math.isfinite(o.peak) and o.peak > 0 else 1.0
                cpu += o.cpu * f
                mem += o.mem * f
            if cpu > 100 * (1 + 1e-9) or mem > 100 * (1 + 1e-9):
                return
        used = [s for s in range(d.S) if alloc[s]]
        key = (len(used), round(sum(d.price[k] for k in {d.slot_node[s] for s in used}), 9))
        if best["key"] is None or key < best["key"]:
            best["key"], best["alloc"] = key, list(alloc)

    def rec(s: int, used: int) -> None:
        if best["stopped"]:
            return
        if best["key"] is not None and used > best["key"][0]:
            return
        if s == d.S:
            leaf()
            if deadline is not None and best["leaves"] % 1000 == 0 and time.monotonic() > deadline:
                best["stopped"] = True
            return
        k = d.slot_node[s]
        top = alloc[s - 1] if s > 0 and d.slot_node[s - 1] == k else len(contents) - 1
        for ix in range(top, -1, -1):
            con = contents[ix]
            if ix and not all(d.allowed[c][s] for c, x in enumerate(con) if x):
                continue
            if any(x and d.max_per_node[c] is not None and pernode_c[k][c] + x > d.max_per_node[c] for c, x in enumerate(con)):
                continue
            alloc[s] = ix
            for c, x in enumerate(con):
                pernode_c[k][c] += x
            rec(s + 1, used + (1 if ix else 0))
            for c, x in enumerate(con):
                pernode_c[k][c] -= x
            alloc[s] = 0

    rec(0, 0)
    if best["alloc"] is None:
        if best["stopped"]:
            return Result(problem="slots", method=method, status=Status.UNKNOWN, message="time limit reached before any allocation")
        return Result(problem="slots", method=method, status=Status.INFEASIBLE,
                      message="exhaustive search: no allocation sustains the target rate")
    q = {(c, s): contents[best["alloc"][s]][c] for s in range(d.S) for c in range(d.C) if contents[best["alloc"][s]][c]}
    done = not best["stopped"]
    return Result(problem="slots", method=method, status=Status.OPTIMAL if done else Status.FEASIBLE, plan=make_plan(d, q),
                  bound=float(best["key"][0]) if done else None,
                  details={"leaves": best["leaves"], "vm_cost": best["key"][1]},
                  message="" if done else "time limit reached; best allocation so far")


# --- registration -------------------------------------------------------------------------------

def _make(backend: str, name: str):
    def method(instance: Instance, problem: str, *, time_limit=None, seed=0, hint=None, max_instances=10, model="auto",
               **_other):
        return core.watched(lambda: solve_slots(instance, backend, name, time_limit, seed, hint, model))

    method.__name__ = f"slots_{backend}"
    method.__doc__ = f"Exact slots allocation (Shukla and Simmhan) with {backend}: see the module docstring."
    return method


for _backend, _name in (("cpsat", "exact.cpsat"), ("cbc", "exact.milp-cbc"), ("highs", "exact.milp-highs")):
    register(_name, ["slots"], source=SOURCE, kind="exact", options=dict(OPTIONS))(_make(_backend, _name))


@register("exact.bruteforce", ["slots"], kind="exact", source="exhaustive enumeration of slot contents", options={})
def slots_bruteforce(instance: Instance, problem: str, *, time_limit=None, seed=0, **_other) -> Result:
    """Exhaustive search for ``slots`` (see :func:`bruteforce_slots`)."""
    return bruteforce_slots(instance, time_limit)


# --- Shukla and Simmhan's micro-DAGs ---------------------------------------------------------

SHUKLA_MODELS = {
    # threads -> (peak tuples/s, CPU %, memory %), one slot; ../shared/ALGORITHMS.md (authors' data)
    "blob": {1: (2, 6.73, 23.92), 2: (3, 6.63, 23.98), 20: (10, 14.69, 26.3), 30: (20, 54.18, 28.74), 50: (30, 76.73, 31.38)},
    "table": {1: (3, 1.02, 1.15), 2: (5, 2.04, 1.15), 10: (10, 11.22, 3.45), 40: (20, 26.53, 9.2), 50: (30, 38.78, 12.64),
              60: (40, 54.08, 16.09)},
    "parse": {1: (310, 84.69, 35.63)},
    "pi": {1: (105, 92.35, 2.07), 2: (110, 94.9, 3.53)},
    "batch": {1: (60000, 58.27, 11.95), 2: (50000, 51.84, 2.76)},
}


def shukla_micro_dag(dag: str, rate: float, nodes: int = 10, slots_per_node: int = 4, interpolate: bool = False,
                     price: float | None = 1.0) -> dict:
    """An instance (JSON-like dict) of Shukla and Simmhan's Linear, Diamond or Star micro-DAG at
    ``rate`` tuples/s, with the performance models of ALGORITHMS.md, on ``nodes`` identical VMs.
    Source and sink: one thread, 10 % CPU, 15 % / 20 % memory, no rate limit."""
    tasks = ["blob", "table", "pi", "parse", "batch"]
    comps = [{"id": "source", "kind": "spout"}] + [{"id": t} for t in tasks] + [{"id": "sink"}]
    if dag == "linear":
        chain = ["source", "blob", "table", "pi", "parse", "batch", "sink"]
        streams = [{"source": a, "target": b} for a, b in zip(chain, chain[1:])]
    elif dag == "diamond":
        streams = ([{"source": "source", "target": t} for t in ("blob", "table", "parse", "batch")]
                   + [{"source": t, "target": "pi"} for t in ("blob", "table", "parse", "batch")]
                   + [{"source": "pi", "target": "sink"}])
    elif dag == "star":  # two source-side tasks -> hub -> two sink-side tasks (planner.generate.SHAPES)
        edges = [("source", "blob"), ("source", "table"), ("blob", "parse"), ("table", "parse"), ("parse", "pi"),
                 ("parse", "batch"), ("pi", "sink"), ("batch", "sink")]
        streams = [{"source": a, "target": b} for a, b in edges]
    else:
        raise InstanceError("dag", f"unknown micro-DAG {dag!r}; linear, diamond or star")
    models = [{"name": t, "interpolate": interpolate,
               "points": [{"threads": q, "rate": r, "cpu": c, "memory": m} for q, (r, c, m) in sorted(SHUKLA_MODELS[t].items())]}
              for t in tasks]
    models += [{"name": "source", "points": [{"threads": 1, "rate": None, "cpu": 10, "memory": 15}]},
               {"name": "sink", "points": [{"threads": 1, "rate": None, "cpu": 10, "memory": 20}]}]
    ns = [{"id": f"vm{k:02d}", "slots": slots_per_node, "price": price} for k in range(nodes)]
    return {"name": f"shukla-{dag}-{rate:g}", "topologies": [{"id": dag, "input_rate": rate, "components": comps, "streams": streams}],
            "cluster": {"racks": [{"id": "r", "nodes": ns}]}, "perf_models": models,
            "meta": {"source": "Shukla and Simmhan, model-driven scheduling; models from ALGORITHMS.md"}}
