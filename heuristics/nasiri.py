"""Nasiri, Nasehi, Divband, Goudarzi, "A scheduling algorithm to maximize storm throughput in
heterogeneous cluster", J Big Data 10, 103 (2023) (seed 002).

The ``throughput`` problem: heterogeneous machines, one worker each; choose each component's
instance count and each instance's machine; maximise the topology input rate such that no
machine's CPU, sum over its instances of IR x e / 10 + MET (section "CPU usage prediction",
formula 5; e in ms per tuple, CPU in points), exceeds its capacity.

* :func:`nasiri` -- FirstAssignment (Algorithm 1) + MaximizeThroughput (Algorithm 2).
* :func:`even_baseline` -- the paper's baseline: Storm's default round-robin scheduler on a
  given execution graph (by default the one Nasiri's algorithm finds), as in the paper's
  simulations, which first fix the instance counts and then compare placements only.
* :func:`search_space` -- the optimal scheduler's search-space size, C(sum k_j, n).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from planner import rates
from planner.model import Instance, InstanceError, Node, Topology
from planner.plan import Placement, Plan, Result, Status
from planner.registry import register

from .common import no_plan

SOURCE = "Nasiri et al., A scheduling algorithm to maximize storm throughput in heterogeneous cluster, J Big Data 2023"
EPS = 1e-9


def search_space(n: int, m: int, k: int | list[int]) -> int:
    """Configurations the paper's optimal (brute-force) scheduler checks: C(sum_j k_j, n).

    n components, m machines, machine j holding at most k_j tasks (``k`` one number for all
    machines or a list of m numbers). Section "Problem definition": n = 4, m = 3, k = 10
    gives C(30, 4) = 27,405.
    """
    ks = [k] * m if isinstance(k, int) else list(k)
    if len(ks) != m:
        raise ValueError(f"k has {len(ks)} entries for {m} machines")
    if n < 0 or any(x < 0 for x in ks):
        raise ValueError("n and k must be >= 0")
    return math.comb(sum(ks), n)


class _Model:
    """Per-instance CPU points under even routing: an instance of component c gets c's rate /
    count (``rates.executor_rates``), and costs rate x e / 10 + MET on its machine's type."""

    def __init__(self, instance: Instance, t: Topology, nodes: list[Node]):
        self.inst = instance
        self.t = t
        self.nodes = nodes
        self.cap = {n.id: n.cpu for n in nodes}
        self.prof = {}
        for c in t.components:
            for n in nodes:
                p = instance.profile(rates.profile_key(c), n.type)
                if p is not None:
                    self.prof[(c.id, n.id)] = p

    def unit_rates(self, counts: dict[str, int]) -> dict[tuple[str, int], float]:
        """Tuples/s into each instance per unit topology input rate."""
        return rates.executor_rates(self.t, 1.0, counts)

    def tcu(self, cid: str, i: int, nid: str, rate: float, unit: dict[tuple[str, int], float]) -> float:
        """Formula 5: TCU = IR x e / 10 + MET, for instance i of component cid on machine nid."""
        p = self.prof[(cid, nid)]
        return rate * unit[(cid, i)] * p.exec_ms / 10.0 + p.overhead

    def loads(self, counts: dict[str, int], where: dict[str, list[str]], rate: float) -> dict[str, float]:
        """CPU points per machine: where[c] lists the machine of each instance of c."""
        unit = self.unit_rates(counts)
        out = {n.id: 0.0 for n in self.nodes}
        for cid, machines in where.items():
            for i, nid in enumerate(machines):
                out[nid] += self.tcu(cid, i, nid, rate, unit)
        return out

    def over(self, loads: dict[str, float]) -> list[str]:
        return [n.id for n in self.nodes if loads[n.id] > self.cap[n.id] * (1 + EPS) + EPS]

    def sustainable(self, counts: dict[str, int], where: dict[str, list[str]]) -> float:
        """Largest rate with no machine over capacity (the closed form of even routing)."""
        unit = self.unit_rates(counts)
        slope: dict[str, float] = defaultdict(float)
        fixed: dict[str, float] = defaultdict(float)
        for cid, machines in where.items():
            for i, nid in enumerate(machines):
                p = self.prof[(cid, nid)]
                slope[nid] += unit[(cid, i)] * p.exec_ms / 10.0
                fixed[nid] += p.overhead
        r = math.inf
        for nid in set(slope) | set(fixed):
            room = self.cap[nid] - fixed[nid]
            if room < 0:
                return 0.0
            if slope[nid] > 0:
                r = min(r, room / slope[nid])
        return r


def _check_instance(instance: Instance, method: str, problem: str) -> tuple[Topology, list[Node]] | Result:
    if len(instance.topologies) != 1:
        return no_plan(problem, method, f"{method} schedules one topology (the paper's setting); the instance has "
                                        f"{len(instance.topologies)}")
    t = instance.topologies[0]
    nodes = sorted((n for n in instance.cluster.nodes if n.slots), key=lambda n: n.id)
    if not nodes:
        return no_plan(problem, method, "no node has a worker slot")
    missing = [f"{rates.profile_key(c)!r} on type {n.type!r}" for c in t.components for n in nodes
               if instance.profile(rates.profile_key(c), n.type) is None]
    if missing:
        raise InstanceError("machine_profiles", "the throughput problem needs a profile for every (component, machine "
                                                "type); missing: " + ", ".join(sorted(set(missing))[:5]))
    return t, nodes


def _allowed(t: Topology, cid: str, node: Node) -> bool:
    c = t.component(cid)
    if c.nodes is not None and node.id not in c.nodes:
        return False
    if c.site is not None and node.site != c.site:
        return False
    return True


def _plan(t: Topology, nodes: list[Node], counts: dict[str, int], where: dict[str, list[str]], rate: float) -> Plan:
    port = {n.id: n.slots[0] for n in nodes}
    pl = [Placement(topology=t.id, component=cid, executor=i, node=nid, slot=port[nid])
          for cid in sorted(where) for i, nid in enumerate(where[cid])]
    return Plan(placements=pl, parallelism={t.id: dict(counts)}, input_rate=rate)


def _num(name: str, v: Any, lo: float, strict: bool = True) -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or (v <= lo if strict else v < lo):
        raise InstanceError(f"options.{name}", f"must be a number {'>' if strict else '>='} {lo:g}, got {v!r}")
    return float(v)


@register("nasiri", ["throughput"], source=SOURCE + ", Algorithms 1 (FirstAssignment) and 2 (MaximizeThroughput)",
          kind="heuristic",
          options={"initial_rate": 1.0, "trace": False, "max_iterations": 100000, "max_instances_per_machine": None},
          summary="heterogeneity-aware: raise the input rate, add an instance of the hottest task's component")
def nasiri(instance: Instance, problem: str, *, time_limit=None, seed=0, initial_rate=1.0, trace=False,
           max_iterations=100000, max_instances_per_machine=None) -> Result:
    """Nasiri et al. (2023), "Proposed algorithm": FirstAssignment then MaximizeThroughput.

    FirstAssignment (Algorithm 1): one instance per component (topological order) at the
    initial rate R0 (``initial_rate``), each on the machine where its predicted TCU
    (formula 5) is least among those with room for it (ties: most room left, then node id).

    MaximizeThroughput (Algorithm 2): Scale = 1, rate = R0. Loop: if no machine is over
    capacity, record (execution graph, rate) as the last stable state and raise the rate by
    rate / Scale. Otherwise take the hottest instance (highest TCU) on the first overloaded
    machine (node id order), add one instance of its component on the machine where, with
    all instances of that component re-split at the current rate, it fits with the most room
    left (ties: lower utilisation, node id) and lowers the overloaded machine's load (always
    so under shuffle, the paper's setting; under ``all`` or ``global`` groupings a new
    instance may relieve nothing, and is then not added); re-evaluate. If no machine can take
    it: stop when
    rate <= Scale, else double Scale and go back to the last stable state.

    Returns the last stable state: instance counts (``plan.parallelism``), one worker per
    machine (its first port) and ``plan.input_rate`` = the last stable rate. The paper routes
    tuples evenly (shuffle); under ``weighted`` routing the evaluator's sustainable rate is at
    least the even one, so the claim still holds. ``trace=True`` adds details.trace, one entry
    per iteration (rate, action, machine loads, counts). ``max_iterations`` and
    ``max_instances_per_machine`` (the paper's k_j; unlimited by default) bound the loop;
    hitting the iteration bound or the time limit ends the search at the last stable state,
    said in details.stop.
    """
    method = "nasiri"
    r0 = _num("initial_rate", initial_rate, 0.0)
    if not isinstance(max_iterations, int) or isinstance(max_iterations, bool) or max_iterations < 1:
        raise InstanceError("options.max_iterations", f"must be an integer >= 1, got {max_iterations!r}")
    if max_instances_per_machine is not None and (not isinstance(max_instances_per_machine, int)
                                                  or isinstance(max_instances_per_machine, bool) or max_instances_per_machine < 1):
        raise InstanceError("options.max_instances_per_machine", f"must be an integer >= 1, got {max_instances_per_machine!r}")
    chk = _check_instance(instance, method, problem)
    if isinstance(chk, Result):
        return chk
    t, nodes = chk
    model = _Model(instance, t, nodes)
    node_by_id = {n.id: n for n in nodes}

    # --- FirstAssignment (Algorithm 1) ---
    counts = {c.id: 1 for c in t.components}
    where: dict[str, list[str]] = {}
    unit = model.unit_rates(counts)
    used = {n.id: 0.0 for n in nodes}
    for cid in rates.topo_order(t):
        best = None
        for n in nodes:
            if not _allowed(t, cid, n):
                continue
            x = model.tcu(cid, 0, n.id, r0, unit)
            room = model.cap[n.id] - used[n.id] - x
            if room < -EPS:
                continue
            key = (x, -room, n.id)
            if best is None or key < best[0]:
                best = (key, n.id, x)
        if best is None:
            return no_plan(problem, method, f"FirstAssignment: no machine has room for component {cid!r} at the initial "
                                            f"rate {r0:g} tuples/s; lower initial_rate")
        where[cid] = [best[1]]
        used[best[1]] += best[2]

    # --- MaximizeThroughput (Algorithm 2) ---
    import time

    deadline = None if time_limit is None else time.perf_counter() + time_limit
    scale = 1.0
    rate = r0
    stable: tuple[dict[str, int], dict[str, list[str]], float] | None = None
    steps: list[dict[str, Any]] = []
    stop_reason = ""
    it = 0
    while True:
        it += 1
        if it > max_iterations:
            stop_reason = f"stopped after max_iterations = {max_iterations}; last stable state returned"
            break
        if deadline is not None and stable is not None and time.perf_counter() > deadline:
            stop_reason = f"stopped by the time limit ({time_limit:g} s); last stable state returned"
            break
        loads = model.loads(counts, where, rate)
        hot = model.over(loads)
        entry: dict[str, Any] = {"iteration": it, "rate": rate, "scale": scale,
                                 "loads": {k: round(v, 6) for k, v in loads.items()}} if trace else {}
        if not hot:
            stable = (dict(counts), {k: list(v) for k, v in where.items()}, rate)
            if trace:
                entry["action"] = f"stable; raise rate by {rate / scale:g}"
                entry["counts"] = dict(counts)
                steps.append(entry)
            rate = rate + rate / scale
            continue
        m0 = hot[0]
        unit = model.unit_rates(counts)
        inst_on = [(model.tcu(cid, i, m0, rate, unit), cid) for cid, ms in where.items() for i, nid in enumerate(ms) if nid == m0]
        _, hot_c = max(inst_on, key=lambda p: (p[0], p[1]))
        new_counts = dict(counts)
        new_counts[hot_c] += 1
        best = None
        for n in nodes:
            if not _allowed(t, hot_c, n):
                continue
            if max_instances_per_machine is not None and sum(ms.count(n.id) for ms in where.values()) >= max_instances_per_machine:
                continue
            trial = {k: list(v) for k, v in where.items()}
            trial[hot_c].append(n.id)
            after = model.loads(new_counts, trial, rate)
            room = model.cap[n.id] - after[n.id]
            if room < -EPS * max(1.0, model.cap[n.id]):
                continue
            if after[m0] >= loads[m0] - EPS:
                continue  # relieves nothing (all/global groupings): not a candidate
            key = (-room, after[n.id] / model.cap[n.id] if model.cap[n.id] > 0 else math.inf, n.id)
            if best is None or key < best[0]:
                best = (key, n.id)
        if best is not None:
            counts = new_counts
            where[hot_c].append(best[1])
            if trace:
                entry["action"] = f"machine {m0} over; add instance {counts[hot_c] - 1} of {hot_c!r} on {best[1]}"
                steps.append(entry)
            continue
        if rate <= scale:
            if trace:
                entry["action"] = f"machine {m0} over; no machine takes another {hot_c!r}; rate {rate:g} <= Scale {scale:g}: stop"
                steps.append(entry)
            stop_reason = f"rate {rate:g} <= Scale {scale:g}"
            break
        scale *= 2
        if trace:
            entry["action"] = f"machine {m0} over; no machine takes another {hot_c!r}; Scale -> {scale:g}, back to last stable state"
            steps.append(entry)
        counts = dict(stable[0])
        where = {k: list(v) for k, v in stable[1].items()}
        rate = stable[2]

    counts, where, rate = stable
    plan = _plan(t, nodes, counts, where, rate)
    loads = model.loads(counts, where, rate)
    details: dict[str, Any] = {
        "reached_rate": rate,
        "counts": counts,
        "machine_loads": loads,
        "machine_utilisation": {k: (v / node_by_id[k].cpu if node_by_id[k].cpu > 0 else None) for k, v in loads.items()},
        "iterations": it,
        "stop": stop_reason,
        "model_sustainable_rate": model.sustainable(counts, where),
    }
    if trace:
        details["trace"] = steps
    return Result(problem=problem, method=method, status=Status.FEASIBLE, plan=plan, details=details)


@register("nasiri.even-baseline", ["throughput"],
          source=SOURCE + ", section Evaluation (baseline: Storm's default scheduler on the same execution graph)",
          kind="heuristic", options={"counts": None},
          summary="Storm's round robin over the machines, on Nasiri's (or given) instance counts; claims its even rate")
def even_baseline(instance: Instance, problem: str, *, time_limit=None, seed=0, counts=None) -> Result:
    """The paper's baseline (section "Largescale clusters evaluation": instance counts are fixed
    first by the proposed algorithm, then the placements are compared). Instances, sorted by
    (component, index) as Storm's EvenScheduler sorts executors, are dealt round robin over the
    machines (node id order), one worker per machine. ``counts`` ({component: count}) fixes
    the execution graph; by default it is the one :func:`nasiri` finds (with its defaults).
    The claimed rate is the largest rate at which no machine is over capacity under even
    routing; infeasible when some machine's fixed overheads alone exceed its capacity.
    """
    method = "nasiri.even-baseline"
    chk = _check_instance(instance, method, problem)
    if isinstance(chk, Result):
        return chk
    t, nodes = chk
    if counts is None:
        r = nasiri(instance, problem)
        if r.plan is None:
            return no_plan(problem, method, f"no execution graph: nasiri found none ({r.message})")
        cnt = dict(r.plan.parallelism[t.id])
    else:
        if not isinstance(counts, dict):
            raise InstanceError("options.counts", "counts must be {component: count}")
        cnt = {c.id: c.parallelism for c in t.components}
        for k, v in counts.items():
            if k not in cnt:
                raise InstanceError(f"options.counts.{k}", f"unknown component {k!r}")
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise InstanceError(f"options.counts.{k}", f"count must be an integer >= 1, got {v!r}")
            cnt[k] = v
    execs = [(cid, i) for cid in sorted(cnt) for i in range(cnt[cid])]
    where: dict[str, list[str]] = {cid: [] for cid in cnt}
    for j, (cid, i) in enumerate(execs):
        where[cid].append(nodes[j % len(nodes)].id)
    model = _Model(instance, t, nodes)
    rate = model.sustainable(cnt, where)
    if rate <= 0:
        return no_plan(problem, method, "round robin puts more fixed overhead (MET) on a machine than its capacity")
    if math.isinf(rate):
        rate = 0.0  # nothing costs CPU per tuple: any rate; claim none rather than infinity
    plan = _plan(t, nodes, cnt, where, rate)
    return Result(problem=problem, method=method, status=Status.FEASIBLE, plan=plan,
                  details={"reached_rate": rate, "counts": cnt, "machine_loads": model.loads(cnt, where, rate)})
