"""Rates through a topology: component rates, per-executor rates, traffic, CPU prediction,
performance-model lookup.

This is the one module that the evaluator shares with the solvers: it states how tuples
flow, so that every method and the checker agree on what a rate is.

Definitions (DESIGN.md, "Common ground"):

* A spout processes the topology's input rate ``R`` (``Topology.input_rate``, 1 tuple/s when
  absent, so that traffic is relative).
* An executor emits ``processed x selectivity`` tuples/s on each of its out-streams.
* What a target executor receives from a stream depends on the grouping: ``all`` gives every
  target executor the whole stream; ``global`` gives it all to executor 0; every other grouping
  (shuffle, fields, local_or_shuffle, direct, none, custom) splits it evenly over the target's
  executors. ``local_or_shuffle`` is treated as shuffle: its preference for the same worker
  depends on the placement, and the planner's rates do not.
* Traffic between two executors is what that gives, unless the topology carries a measured
  ``traffic`` matrix, which then wins.
"""

from __future__ import annotations

import math
from collections import defaultdict

from .model import Component, Instance, MachineProfile, PerfModel, PerfPoint, Topology

Executor = tuple[str, int]


def topo_order(topology: Topology) -> list[str]:
    """Component ids in a topological order (ties by declaration order)."""
    indeg = {c.id: 0 for c in topology.components}
    succ: dict[str, list[str]] = defaultdict(list)
    for s in topology.streams:
        indeg[s.target] += 1
        succ[s.source].append(s.target)
    ready = [c.id for c in topology.components if indeg[c.id] == 0]
    order: list[str] = []
    while ready:
        u = ready.pop(0)
        order.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    return order


def parallelism(topology: Topology, counts: dict[str, int] | None = None) -> dict[str, int]:
    """Executor counts: ``counts`` where given, else each component's ``parallelism``."""
    out = {c.id: c.parallelism for c in topology.components}
    if counts:
        out.update({k: v for k, v in counts.items() if k in out})
    return out


def input_rate_of(topology: Topology, input_rate: float | None = None) -> float:
    if input_rate is not None:
        return input_rate
    return topology.input_rate if topology.input_rate is not None else 1.0


def _inputs(topology: Topology) -> tuple[dict[str, str], dict[str, list]]:
    """(component kinds, in-streams of each component)."""
    kind = {c.id: c.kind for c in topology.components}
    incoming: dict[str, list] = defaultdict(list)
    for s in topology.streams:
        incoming[s.target].append(s)
    return kind, incoming


def component_gains(topology: Topology, counts: dict[str, int] | None = None) -> dict[str, float]:
    """Tuples/s processed by each component (all its executors together) per unit input rate."""
    par = parallelism(topology, counts)
    kind, incoming = _inputs(topology)
    gain: dict[str, float] = {}
    for cid in topo_order(topology):
        if kind[cid] == "spout" and not incoming[cid]:
            gain[cid] = 1.0
            continue
        g = 0.0
        for s in incoming[cid]:
            emitted = gain[s.source] * s.selectivity
            g += emitted * (par[cid] if s.grouping == "all" else 1.0)
        gain[cid] = g
    return gain


def component_rates(topology: Topology, input_rate: float | None = None, counts: dict[str, int] | None = None) -> dict[str, float]:
    """Tuples/s processed by each component at the given (or the topology's) input rate."""
    r = input_rate_of(topology, input_rate)
    return {c: g * r for c, g in component_gains(topology, counts).items()}


def executor_rates(topology: Topology, input_rate: float | None = None, counts: dict[str, int] | None = None) -> dict[Executor, float]:
    """Tuples/s processed by each executor."""
    par = parallelism(topology, counts)
    r = input_rate_of(topology, input_rate)
    gains = component_gains(topology, counts)
    kind, incoming = _inputs(topology)
    out: dict[Executor, float] = {}
    for cid, p in par.items():
        per = [0.0] * p
        if kind[cid] == "spout" and not incoming[cid]:
            per = [r / p] * p  # the spout's input splits over its executors
        for s in incoming[cid]:
            stream_rate = gains[s.source] * s.selectivity * r
            if s.grouping == "all":
                per = [x + stream_rate for x in per]
            elif s.grouping == "global":
                per[0] += stream_rate
            else:
                per = [x + stream_rate / p for x in per]
        for i, x in enumerate(per):
            out[(cid, i)] = x
    return out


def executor_traffic(
    topology: Topology, input_rate: float | None = None, counts: dict[str, int] | None = None,
    first: int | None = None,
) -> dict[tuple[Executor, Executor], float]:
    """Tuples/s from executor to executor (directed). Measured traffic wins when present.
    ``first``: derived traffic only between executors of index below it (their rates are the
    whole topology's): executors 1 .. p-1 of a component are alike (only a ``global`` stream
    singles out executor 0), so ``first=2`` holds every distinct rate without the pu x pv pairs
    (6.1 million in one topology of Storm's largeCluster01)."""
    if topology.traffic:
        out: dict[tuple[Executor, Executor], float] = defaultdict(float)
        for e in topology.traffic:
            out[((e.source, e.source_index), (e.target, e.target_index))] += e.rate
        return dict(out)
    par = parallelism(topology, counts)
    ex = executor_rates(topology, input_rate, counts)
    out = defaultdict(float)
    for s in topology.streams:
        pu, pv = par[s.source], par[s.target]
        nv = pv if first is None else min(pv, first)
        for i in range(pu if first is None else min(pu, first)):
            emit = ex[(s.source, i)] * s.selectivity
            if emit == 0:
                continue
            if s.grouping == "all":
                for j in range(nv):
                    out[((s.source, i), (s.target, j))] += emit
            elif s.grouping == "global":
                out[((s.source, i), (s.target, 0))] += emit
            else:
                for j in range(nv):
                    out[((s.source, i), (s.target, j))] += emit / pv
    return dict(out)


def component_traffic(topology: Topology, input_rate: float | None = None, counts: dict[str, int] | None = None) -> dict[tuple[str, str], float]:
    """Total tuples/s from component to component (summed over executor pairs)."""
    out: dict[tuple[str, str], float] = defaultdict(float)
    for ((a, _), (b, _)), r in executor_traffic(topology, input_rate, counts).items():
        out[(a, b)] += r
    return dict(out)


def downstream(topology: Topology) -> dict[str, list[str]]:
    """Distinct directly-downstream components of each component, in declaration order."""
    out: dict[str, list[str]] = {c.id: [] for c in topology.components}
    for s in topology.streams:
        if s.target not in out[s.source]:
            out[s.source].append(s.target)
    return out


# --- throughput model (Nasiri et al.) ---------------------------------------------------

def instance_cpu(rate: float, profile: MachineProfile) -> float:
    """CPU points of one instance receiving ``rate`` tuples/s: rate x e / 10 + MET."""
    return rate * profile.exec_ms / 10.0 + profile.overhead


def profile_key(component: Component) -> str:
    return component.profile or component.id


# --- performance models (Shukla and Simmhan) --------------------------------------------

def perf_model_for(instance: Instance, component: Component) -> PerfModel | None:
    return instance.perf_model(component.perf_model or component.id)


def perf_at(model: PerfModel, threads: int) -> PerfPoint | None:
    """Performance of ``threads`` threads of a task on one slot.

    A modelled thread count gives its row. Between two modelled counts, with
    ``interpolate``, the row is linear in the thread count; without it, the estimate is
    conservative: the peak rate of the nearest modelled count below (0 if none) and the
    CPU and memory of the nearest modelled count above. Beyond the largest modelled count
    there is no estimate (None): the model says nothing about it.
    """
    if threads < 1:
        return None
    pts = model.points
    for p in pts:
        if p.threads == threads:
            return p
    if threads > pts[-1].threads:
        return None
    above = next(p for p in pts if p.threads > threads)
    below = None
    for p in pts:
        if p.threads < threads:
            below = p
    if model.interpolate and below is not None:
        f = (threads - below.threads) / (above.threads - below.threads)

        def lin(a: float | None, b: float | None) -> float | None:
            if a is None or b is None:
                return None if (a is None and b is None) else (a if b is None else b)
            return a + f * (b - a)

        return PerfPoint(threads=threads, rate=lin(below.rate, above.rate), cpu=lin(below.cpu, above.cpu), memory=lin(below.memory, above.memory))
    rate = below.rate if below is not None else 0.0
    return PerfPoint(threads=threads, rate=rate, cpu=above.cpu, memory=above.memory)


def peak_rate(point: PerfPoint | None) -> float:
    if point is None:
        return 0.0
    return math.inf if point.rate is None else point.rate


def threads_for_rate(model: PerfModel, omega: float) -> int | None:
    """T(omega): the smallest modelled thread count whose peak rate covers ``omega`` on one slot."""
    for p in model.points:
        if peak_rate(p) >= omega - 1e-9:
            return p.threads
    return None


# --- traffic problem (Aniello et al.) ---------------------------------------------------

def workers_required(topology: Topology, total_slots: int) -> int:
    """S = min(W, E): W is ``topology.workers``, or every slot of the cluster when unset."""
    w = topology.workers if topology.workers is not None else total_slots
    return max(1, min(w, topology.executor_count))


def max_per_worker(executors: int, workers: int, alpha: float) -> int:
    """M(alpha) = ceil(E/S) + ceil(alpha ((E - S + 1) - ceil(E/S))) (Aniello et al., section 3)."""
    base = math.ceil(executors / workers)
    return base + math.ceil(alpha * ((executors - workers + 1) - base) - 1e-12)
