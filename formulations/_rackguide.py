"""Rack guide: a start plan for ``network`` on clusters of several racks, from a division of
every topology's executors over the racks chosen by one CP-SAT model.

Why: on Storm's largeCluster03 with its ackers two topologies decide most of the metric.
TopologyName00047 needs more memory than a rack has, TopologyName00000 about four fifths of a
rack's CPU, and the cluster is 90 % full by CPU. Which rack takes how much of each, and where
the other 48 topologies go, is one decision; the plans of storm.ras, of the alignment packing
and of the topology search (which moves one topology at a time) split both topologies over the
racks far more than the racks' sums require (00047's pairs split over racks: 95,020 in the 60 s
plan, 38,976 in CP-SAT's division below at margin 1.0 and 52,200 at 0.94, 5 s each).

The same division, relaxed, is the joint rack cut (:func:`joint_rack_cut`): a lower bound on the
wide topologies' share of the metric's rack level with every topology on the racks at once.

The model (docs/formulations.md, *Rack guide*): per group (component) g and rack r with slots an
integer count z_gr in [0, min(size, the rack's nodes' caps summed)], sum_r z_gr = size_g; per
rack the CPU and memory of all groups within ``margin`` x the rack's sums, and each wide
topology's on-heap within its max heap x the rack's slots. Wide topologies (``wide``: CPU or
memory above GUIDE_FRAC of the smallest rack's) keep pairs within racks: maximise
sum over wide t of floor(SCALE / E_t) x sum over streams u -> d and racks r of z_ur z_dr (the
pairs they keep, weighted as the metric weights them). Every other topology is whole on one rack
(a Boolean per rack), or free where no rack takes it whole. The current plan's division is the
hint. It is a heuristic: rack sums are not nodes, so the margin leaves room for packing, and
a division the packing cannot realise is tried again at the next, smaller margin.

The plan: ``_alignpack.alignment_pack`` with each wide topology's executors held to their
rack (its first z_g,r1 executors on the first rack, and so on); the other topologies are packed
freely. The locality rule's packing is preferred (on largeCluster03 with its ackers it ends the
topology search 15-20 below the plain rule's); the first margin whose plain packing succeeds is
the fallback.
"""

from __future__ import annotations

import time


# a topology is wide when its CPU or memory is above this share of the smallest rack's
GUIDE_FRAC = 0.5
# the racks' sums are scaled by these, in turn, until the packing realises the division
GUIDE_MARGINS = (1.0, 0.97, 0.94, 0.91, 0.88)
# the model's counts at most (groups x racks; largeCluster03 1,584) and wide topologies at most:
# largeCluster01 and 02 (16 and 21 racks) have 10 and 15, and on largeCluster02 no division of the
# margins 1.0-0.91 packed (5.3 s of a 60 s solve spent for nothing); largeCluster03 has 2
GUIDE_VARS_MAX = 20_000
GUIDE_WIDE_MAX = 4
GUIDE_SCALE = 10**6
# the guide is not tried when the wide topologies' rack level in the plan is within this share of
# the plan's metric of the least known for it: then it has little to gain (largeCluster03
# without its ackers is above it: 14.7 over the joint cut's 0, of 223; the guide is tried there,
# 12-15 s of a 60 s solve, and its plan loses to the rack moves' by 20)
GUIDE_MIN_EXCESS = 0.02
GUIDE_WORKERS = 8


def wide(pm) -> list[int]:
    """Indices of the topologies with streams whose CPU or memory is above GUIDE_FRAC of the
    smallest rack's (racks with slots)."""
    from ._workercut import _rack_limits

    sums = [lims for _, lims in _rack_limits(pm, [], 1.0)]
    if len(sums) < 2:
        return []
    cpu = min(s[1] for s in sums)
    mem = min(s[2] for s in sums)
    have = {pm.groups[ku].ti for ku, _, _ in pm.stream_pairs()}
    dem: dict[int, list[float]] = {}
    for g in pm.groups:
        d = dem.setdefault(g.ti, [0.0, 0.0])
        d[0] += g.comp.cpu * g.size
        d[1] += g.comp.memory_mb * g.size
    return [ti for ti in sorted(have) if dem[ti][0] > GUIDE_FRAC * cpu or dem[ti][1] > GUIDE_FRAC * mem]


def _plan_counts(pm, plan) -> dict[tuple[int, int], int]:
    """{(group index, rack index of pm.racks): executors of ``plan`` there}."""
    group_of = {(g.topo.id, g.comp.id): k for k, g in enumerate(pm.groups)}
    node_rack = {n.id: pm.node_rack[ni] for ni, n in enumerate(pm.nodes)}
    counts: dict[tuple[int, int], int] = {}
    for q in plan.placements:
        key = (group_of[(q.topology, q.component)], node_rack[q.node])
        counts[key] = counts.get(key, 0) + 1
    return counts


def rack_share(pm, plan, big: list[int]) -> float:
    """The wide topologies' (``big``) share of ``plan``'s metric at the rack level: their pairs
    split over racks, each divided by its topology's executors."""
    by: dict[int, dict[int, int]] = {}  # group: {rack: executors}
    for (k, r), c in _plan_counts(pm, plan).items():
        by.setdefault(k, {})[r] = c
    topos = dict(pm.topos)
    out = 0.0
    for ku, kd, e in pm.stream_pairs():
        if pm.groups[ku].ti in big:
            down = by.get(kd, {})
            kept = sum(c * down.get(r, 0) for r, c in by.get(ku, {}).items())
            out += (pm.groups[ku].size * pm.groups[kd].size - kept) / float(topos[pm.groups[ku].ti].executor_count)
    return out


def modelled(pm) -> tuple[list[int], str | None]:
    """(:func:`wide`, why the division model is not built, or None): past GUIDE_WIDE_MAX wide
    topologies or GUIDE_VARS_MAX counts."""
    big = wide(pm)
    counts = len(pm.groups) * len(_slot_racks(pm))
    if big and (len(big) > GUIDE_WIDE_MAX or counts > GUIDE_VARS_MAX):
        return big, f"{len(big)} wide topologies, {counts} counts (at most {GUIDE_WIDE_MAX} and {GUIDE_VARS_MAX})"
    return big, None


def _slot_racks(pm) -> list[int]:
    """The racks (indices of pm.racks) with a node with slots, in the order of
    ``_workercut._rack_limits``."""
    return sorted({pm.node_rack[ni] for ni, n in enumerate(pm.nodes) if n.slots})


def _division_model(pm, big: list[int], relax: bool, margin: float = 1.0, split: dict | None = None):
    """(model, z, racks, total, lim): the division of every group's executors over the racks with
    slots (z[r][k], ``racks`` indices of pm.racks), maximising the wide topologies' (``big``)
    weighted pairs kept within racks; ``total`` the weighted pairs of those topologies in all.
    Each group's count on a rack at most what the rack's nodes hold of it (``_rack_limits``), the
    racks' CPU and memory sums, and each wide topology's on-heap within its max heap x the rack's
    slots; ``lim`` the racks' (caps, limits) of ``_rack_limits``. ``relax``: a relaxation of
    every plan's division (coefficients rounded down, limits up, the other topologies free; its
    proven bound gives :func:`joint_rack_cut`); else the guide's model (coefficients up, limits x
    ``margin`` down, each other topology whole on one rack where some rack holds it whole).
    ``split``: {topology index: pairs every plan splits over racks} (its rack-level count cut),
    a row on that topology's pairs kept."""
    from ortools.sat.python import cp_model

    from ._workercut import _kept_pairs, _rack_limits, room_row

    ks = list(range(len(pm.groups)))
    topos = dict(pm.topos)
    racks = _slot_racks(pm)
    lim = _rack_limits(pm, ks, 1.0)  # in the order of pm.racks with slots, as ``racks``
    bigset = set(big)
    # the counts modelled: every group's, or, relaxed, the wide topologies' and one per (CPU,
    # memory) of the others' executors (free there, so only their sums matter: largeCluster03
    # with its ackers has 760 such groups)
    items: dict = {}  # key: (size, its caps by rack, CPU, memory)
    for k, g in enumerate(pm.groups):
        key = ("cls", g.comp.cpu, g.comp.memory_mb) if relax and g.ti not in bigset else k
        size, caps, _, _ = items.get(key, (0, [0] * len(lim), 0, 0))
        items[key] = (size + g.size, [c + min(hi[k], g.size) for c, (hi, _) in zip(caps, lim)], g.comp.cpu,
                      g.comp.memory_mb)
    m = cp_model.CpModel()
    zz = [{key: m.NewIntVar(0, min(it[1][r], it[0]), f"z{r}_{key}") for key, it in items.items()}
          for r in range(len(lim))]
    for key, it in items.items():
        m.Add(sum(zr[key] for zr in zz) == it[0])
    z = [[zr.get(k) for k in ks] for zr in zz]  # by group index (None for a group in a class)
    for ti, t in pm.topos if not relax else ():
        if ti in bigset:
            continue
        mine = [k for k in ks if pm.groups[k].ti == ti]
        fits = [r for r, (hi, _) in enumerate(lim) if all(hi[k] >= pm.groups[k].size for k in mine)]
        if not fits:
            continue  # free: no rack takes it whole
        y = {r: m.NewBoolVar(f"y{ti}_{r}") for r in fits}
        m.AddExactlyOne(y.values())
        for r in range(len(lim)):
            for k in mine:
                m.Add(z[r][k] == (pm.groups[k].size * y[r] if r in y else 0))
    for r, (_, (slots, cpu, mem)) in enumerate(lim):
        for j, cap in ((2, cpu), (3, mem)):
            room_row(m, [(it[j], zz[r][key]) for key, it in items.items() if it[j] > 0], cap, relax, margin)
        for ti in big:
            mine = [k for k in ks if pm.groups[k].ti == ti and pm.groups[k].comp.memory_onheap_mb > 0]
            if mine:
                room_row(m, [(pm.groups[k].comp.memory_onheap_mb, z[r][k]) for k in mine],
                         topos[ti].max_heap_mb * slots, relax)
    terms, total = [], 0
    for ti in big:
        w = GUIDE_SCALE // max(1, topos[ti].executor_count)
        streams: dict[tuple[int, int], int] = {}
        pairs = 0
        for ku, kd, _ in pm.stream_pairs():
            if pm.groups[ku].ti == ti:
                streams[(ku, kd)] = streams.get((ku, kd), 0) + 1
                pairs += pm.groups[ku].size * pm.groups[kd].size
        total += w * pairs
        mine = [t for zr in z for t in _kept_pairs(m, zr, [pm.groups[k].size for k in ks], streams)]
        if (least := (split or {}).get(ti, 0)) > 0:
            m.Add(sum(mine) <= pairs - least)
        terms += [w * t for t in mine]
    m.Maximize(sum(terms))
    return m, z, racks, total, lim


def divide(pm, big: list[int], margin: float, deadline: float | None, hint: dict | None = None):
    """{group index: counts by rack (a list over ``racks``)} and ``racks`` (indices of
    pm.racks), the guide model's best division (:func:`_division_model`) within ``deadline``,
    or (None, racks) when it has none (infeasible, or none found in time). ``hint``: {(group
    index, rack index): count}."""
    from ortools.sat.python import cp_model

    from ._workercut import cpsat_until

    m, z, racks, _, _ = _division_model(pm, big, False, margin)
    if hint:
        for r, zr in enumerate(z):
            for k, v in enumerate(zr):
                m.AddHint(v, hint.get((k, racks[r]), 0))
    s = cpsat_until(deadline, GUIDE_WORKERS)
    if s is None or s.Solve(m) not in (cp_model.FEASIBLE, cp_model.OPTIMAL):
        return None, racks
    return {k: [int(s.Value(zr[k])) for zr in z] for k in range(len(pm.groups))}, racks


def joint_rack_cut(pm, big: list[int], deadline: float | None, split: dict | None = None) -> float | None:
    """A lower bound on sum over the wide topologies ``big`` of their pairs split over racks
    divided by their executors (their share of the metric's rack level), or None when CP-SAT
    gives none by ``deadline``: the relaxed division model (:func:`_division_model`), in which
    every plan's division is a solution, so GUIDE_SCALE x that sum is at least the weighted
    pairs in all less CP-SAT's proven bound on the most kept (weights floor(GUIDE_SCALE / E_t),
    at most GUIDE_SCALE / E_t). Unlike the rack-level count cut (``_workercut._rack_split``,
    each topology alone on the racks' sums) the racks hold every topology at once.
    Alike racks are interchangeable: their shares of the largest wide group (by memory) are
    ordered."""
    from ortools.sat.python import cp_model

    from ._workercut import cpsat_until, order_alike

    if not big:
        return None
    m, z, racks, total, lim = _division_model(pm, big, True, split=split)
    order_alike(m, z, lim, max((k for k, g in enumerate(pm.groups) if g.ti in big),
                               key=lambda k: (pm.groups[k].size * pm.groups[k].comp.memory_mb, -k)))
    # one worker with the full LP: largeCluster03 with its ackers proven in 2.9 s each time, where
    # 8 default workers took 4.1-7.7 s (4 workers: not within 15 s)
    s = cpsat_until(deadline, 1, 2)
    if s is None or s.Solve(m) not in (cp_model.FEASIBLE, cp_model.OPTIMAL):
        return None
    return max(0.0, (total - s.BestObjectiveBound()) / GUIDE_SCALE)


def guided_plans(run, pm, best, deadline: float | None, each_s: float = 5.0, least: float | None = None):
    """(plan, info) from the rack guide, or (None, info): the model at each margin of
    GUIDE_MARGINS in turn (each with an equal share of the time before ``deadline``, or
    ``each_s`` without one), its division packed by ``alignment_pack`` with the wide topologies'
    executors held to their racks, until the locality rule's packing succeeds; else the first
    plain packing that did. ``best``: (metric, plan) of the current plan, whose division is the
    hint; not tried when its wide topologies' share of the metric's rack level
    (:func:`rack_share`) is within GUIDE_MIN_EXCESS of the metric of ``least`` (a lower bound
    on that share). ``info``: the wide topologies, the margins tried, the margin packed, or why
    it was skipped."""
    inst = run.instance
    big, why = modelled(pm)
    info: dict = {"wide": [dict(pm.topos)[ti].id for ti in big], "margins": []}
    if not big:
        return None, info
    if why:
        info["skipped"] = why
        return None, info
    plan = None if best is None else best[1]
    if plan is not None and least is not None:
        share = rack_share(pm, plan, big)
        info.update(rack_share=round(share, 6), least=round(least, 6))
        if share - least <= GUIDE_MIN_EXCESS * max(1.0, best[0]):
            info["skipped"] = (f"the wide topologies' rack level {share:.6g} is within {GUIDE_MIN_EXCESS:g} "
                               f"of the metric of {least:.6g}")
            return None, info
    hint = None if plan is None else _plan_counts(pm, plan)
    fallback = None
    for i, margin in enumerate(GUIDE_MARGINS):
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            break
        # an equal share of the time left for each margin still to try and one more for the
        # second, longer solve at the margin that packs
        end = now + each_s if deadline is None else now + (deadline - now) / (len(GUIDE_MARGINS) - i + 1)
        counts, racks = divide(pm, big, margin, end, hint)
        info["margins"].append(margin)
        if counts is None:
            break  # infeasible at this margin (so at every smaller one), or no division in time
        got, locality = _pack(inst, pm, big, counts, racks, deadline, fallback is None)
        if got is None:
            continue
        if not locality:
            fallback = (got, margin)
            continue
        info["packed"] = margin
        # the division again with the rest of the time, from the one that packed (on
        # largeCluster03 with its ackers CP-SAT's division at 1 s kept 65 of the wide
        # topologies' metric split over racks, at 3 s 56), kept if it packs too
        end = now + 2 * each_s if deadline is None else deadline
        again, racks = divide(pm, big, margin, end, {(k, racks[r]): c for k, cs in counts.items()
                                                      for r, c in enumerate(cs)})
        if again is not None and again != counts:
            better, locality = _pack(inst, pm, big, again, racks, deadline, False)
            if better is not None:
                info["second"] = True
                got = better
        return got, info
    if fallback is not None:
        info["packed"] = fallback[1]
        info["locality"] = False
        return fallback[0], info
    return None, info


def _pack(inst, pm, big: list[int], counts: dict, racks: list[int], deadline: float | None, plain: bool):
    """(plan, locality) of ``alignment_pack`` with the wide topologies' executors held to
    their racks by ``counts`` (:func:`divide`), the locality rule first, then (with ``plain``)
    without it; (None, False) when neither packs a plan the evaluator passes."""
    from planner.evaluate import evaluate

    from ._alignpack import alignment_pack

    cl_index = {r.id: i for i, r in enumerate(inst.cluster.racks)}  # ClusterState's rack order
    rack_of = {}
    for k, g in enumerate(pm.groups):
        if g.ti not in big:
            continue
        idx = 0
        for r, c in zip(racks, counts[k]):
            for _ in range(c):
                rack_of[(g.topo.id, g.comp.id, idx)] = cl_index[pm.racks[r]]
                idx += 1
    for locality in (True, False) if plain else (True,):
        got, _ = alignment_pack(inst, deadline, locality, rack_of)
        if got is not None and evaluate(inst, got, "network")["feasible"]:
            return got, locality
    return None, False


def rack_instance(inst, rack_id: str, counts: dict[str, int]):
    """The one topology of ``inst`` with ``counts`` executors of each component (those with none
    left out, with their streams and incompatibilities) on the rack ``rack_id`` alone: the
    instance whose plans are one rack's part of a plan of ``inst`` for that division. Its
    network metric times its executors is the pairs that part splits over workers and nodes."""
    t = inst.topologies[0]
    keep = {c.id for c in t.components if counts.get(c.id, 0) > 0}
    comps = [c.model_copy(update={"parallelism": counts[c.id],
                                  "incompatible": [x for x in c.incompatible if x in keep]})
             for c in t.components if c.id in keep]
    streams = [s for s in t.streams if s.source in keep and s.target in keep]
    topo = t.model_copy(update={"components": comps, "streams": streams, "traffic": None})
    racks = [r for r in inst.cluster.racks if r.id == rack_id]
    return inst.model_copy(update={"topologies": [topo], "cluster": inst.cluster.model_copy(update={"racks": racks})})


def divisible(inst, pm) -> str | None:
    """Why :func:`divided_plan` does not apply, or None: one topology on several racks with
    slots, wide (:func:`wide`), with no executor pinned to nodes or a site (a rack's instance
    would drop the pin's nodes) and no measured traffic (its indices are the whole topology's)."""
    if len(inst.topologies) != 1 or len(_slot_racks(pm)) < 2:
        return "not one topology on several racks"
    t = inst.topologies[0]
    if any(c.nodes or c.site for c in t.components) or t.traffic:
        return "pinned executors or measured traffic"
    if not wide(pm):
        return "the topology is not wide"
    return None


def divided_plan(run, pm, deadline: float | None, solve, each_s: float = 10.0) -> tuple[tuple | None, dict]:
    """((metric, plan) or None, info): one topology's plan from a division of its executors
    over the racks (:func:`divide`, its pairs kept within racks most), each rack's part solved
    alone by ``solve`` (the network solve of a :class:`Run` on :func:`rack_instance`; on the
    racks measured each part was proven) and the parts put together. A division whose racks do not all get a plan
    is tried again at the next margin of GUIDE_MARGINS. Time: until ``deadline`` (``each_s`` a
    rack solve without one), each rack's solve its share by executors of the time left."""
    from planner.evaluate import evaluate
    from planner.plan import Placement, Plan

    from ._rasmodel import Run

    inst = run.instance
    info: dict = {"margins": []}
    for margin in GUIDE_MARGINS:
        now = time.monotonic()
        if deadline is not None and deadline - now < 1.0:
            info["stopped"] = "time"
            break
        counts, racks = divide(pm, [0], margin, None if deadline is None else now + 0.2 * (deadline - now))
        info["margins"].append(margin)
        if counts is None:
            break  # infeasible at this margin (so at every smaller one), or no division in time
        by_rack = [{} for _ in racks]
        for k, g in enumerate(pm.groups):
            for r, c in enumerate(counts[k]):
                by_rack[r][g.comp.id] = by_rack[r].get(g.comp.id, 0) + c
        left_exec = sum(sum(v.values()) for v in by_rack)
        placements, offset, parts = [], {}, []
        for r, v in zip(racks, by_rack):
            execs = sum(v.values())
            if not execs:
                continue
            lim = None if deadline is None else max(0.5, (deadline - time.monotonic()) * execs / left_exec)
            left_exec -= execs
            sub = rack_instance(inst, pm.racks[r], v)
            sub_run = Run(sub, "network", run.method, each_s if lim is None else lim, run.threads, None,
                          run.symmetry, run.seed, run.model)
            sub_run.sub_solve = True
            res = solve(sub_run)
            got = None if res.plan is None or res.status.value not in ("optimal", "feasible") else \
                evaluate(sub, res.plan, "network")
            if got is None or not got["feasible"]:
                parts = None
                break
            parts.append((pm.racks[r], res.status.value, round(got["network_metric"] * execs, 6)))
            for p in res.plan.placements:
                placements.append(Placement(topology=p.topology, component=p.component,
                                            executor=p.executor + offset.get(p.component, 0), node=p.node,
                                            slot=p.slot))
            for c, q in v.items():
                offset[c] = offset.get(c, 0) + q
        if parts is None:
            continue
        plan = Plan(placements=placements)
        m = evaluate(inst, plan, "network")
        if not m["feasible"]:
            continue
        info.update(margin=margin, racks=parts)
        return (float(m["network_metric"]), plan), info
    return None, info
