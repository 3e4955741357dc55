"""Shukla and Simmhan, "Model-driven Scheduling for Distributed Stream Processing Systems"
(seed 004): allocation (how many threads per task, how many slots) and mapping (which slot
each thread goes to) driven by per-task performance models measured on one slot.

* Allocation: Linear Scaling Allocation, LSA (section 6.1, Algorithm 2) and Model Based
  Allocation, MBA (section 6.2, Algorithm 3). Both return threads per task, estimated CPU %
  and memory % per task, and rho = max(ceil(sum c / 100), ceil(sum m / 100)).
* VM acquisition (section 7.1): the cluster's nodes are the VM pool (a node with p ports is a
  VM of p slots, ``Node.price`` its price). Take as many of the largest VMs as fit within rho,
  then the smallest VM covering the remainder.
* Mapping: Default Storm Mapping, DSM (section 7.2, Algorithm 4), R-Storm Mapping, RSM
  (section 7.3, Algorithm 5) and Slot Aware Mapping, SAM (section 7.4, Algorithm 6).
* The experiments' rule (section 8.4): when a resource-aware mapping fails on rho slots,
  add one slot (acquire again for rho + 1) until it succeeds.

The registered methods are the pairs of section 8.5 for the ``slots`` problem:
``shukla.lsa+dsm``, ``shukla.lsa+rsm``, ``shukla.mba+dsm``, ``shukla.mba+rsm``,
``shukla.mba+sam``. A pair's plan is what the paper's scheduler would deploy; whether it
sustains the planned rate is for :mod:`planner.evaluate` to say (``supported_rate``). The
paper's point is that often it does not, so a plan judged infeasible is an expected outcome,
reported with the planned and the predicted rate in ``Result.details``.

Units: CPU and memory in percent of one slot (100 = a whole slot), as in the performance
models. Where an algorithm is written with fractions (1.00 = a slot: RSM's distance), the
code converts.

Readings of the paper that its text leaves open (see also the docstrings):

* Source and sink tasks (section 8.3) have a "static allocation" of one thread and fixed
  CPU/memory. In the instances they carry a model with an unbounded rate; a task whose
  single-thread rate is unbounded gets one thread and its modelled CPU/memory unscaled
  (Algorithms 2/3 would otherwise scale them by omega / infinity = 0).
* SAM's full-bundle test (Algorithm 6, line 8) is read as "a bundle MBA allocated as a full
  bundle remains", i.e. the bundles of Algorithm 3's while loop. Read literally
  (tau_i >= tau_hat_i), a task whose bundle is one thread (Parse XML, Batch write, source,
  sink) would take a whole exclusive slot for every thread, while MBA charged it a scaled-down
  share (Algorithm 3, line 23) and Algorithm 6 line 14 would drive its c_i below zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from planner import rates
from planner.evaluate import evaluate as _evaluate
from planner.model import Instance, InstanceError, Node, PerfModel, Topology
from planner.plan import Placement, Plan, Result, Status
from planner.registry import register

from .common import no_plan, topology_order
from .storm import even_slot_order

SOURCE = "Shukla and Simmhan, Model-driven Scheduling for Distributed Stream Processing Systems"
EPS = 1e-9
MAX_THREADS = 100_000  # per topology; beyond this an allocation is reported, not mapped

Thread = tuple[str, int]  # (task, index): the paper's r_i^k with k = index + 1
Slot = tuple[str, int]  # (node, port): the paper's s_j^l


class AllocationError(Exception):
    """The allocation cannot be computed (e.g. a model gives no rate for one thread)."""


class MappingError(Exception):
    """The mapping found no slot for a thread: "Error: Insufficient resources for task t_i"."""

    def __init__(self, task: str, reason: str):
        self.task = task
        super().__init__(f"insufficient resources for task {task!r}: {reason}")


# --------------------------------------------------------------------------------------------
# Allocation (section 6)
# --------------------------------------------------------------------------------------------

@dataclass
class Allocation:
    """What LSA or MBA returns for one topology: <tau_i, c_i, m_i> per task, and rho.

    ``cpu`` and ``memory`` are in percent of a slot. ``bundle`` is tau_hat_i (MBA: threads at
    the highest modelled peak rate; LSA: 1), ``full_bundles`` the number of bundles MBA's while
    loop allocated (each charged 100 %), ``partial_cpu``/``partial_memory`` the estimate of the
    remaining threads (the trailing partial bundle). ``one_cpu``/``one_memory`` are C_i(1) and
    M_i(1), what RSM charges per thread.
    """

    method: str
    topology: str
    input_rate: float
    order: list[str]
    rate: dict[str, float]
    threads: dict[str, int]
    cpu: dict[str, float]
    memory: dict[str, float]
    peak: dict[str, float]
    bundle: dict[str, int]
    full_bundles: dict[str, int]
    partial_cpu: dict[str, float]
    partial_memory: dict[str, float]
    one_cpu: dict[str, float]
    one_memory: dict[str, float]
    static: list[str] = field(default_factory=list)  # tasks given the static source/sink allocation

    @property
    def total_cpu(self) -> float:
        return sum(self.cpu.values())

    @property
    def total_memory(self) -> float:
        return sum(self.memory.values())

    @property
    def rho(self) -> int:
        """rho = max(ceil(sum_i c_i), ceil(sum_i m_i)) slots (section 6.2), at least 1."""
        return max(1, _ceil(self.total_cpu / 100.0), _ceil(self.total_memory / 100.0))

    def summary(self) -> dict[str, Any]:
        return {
            "allocation": self.method,
            "input_rate": self.input_rate,
            "task_rate": dict(self.rate),
            "threads": dict(self.threads),
            "est_cpu": {k: round(v, 6) for k, v in self.cpu.items()},
            "est_memory": {k: round(v, 6) for k, v in self.memory.items()},
            "est_cpu_total": round(self.total_cpu, 6),
            "est_memory_total": round(self.total_memory, 6),
            "bundle": dict(self.bundle),
            "full_bundles": dict(self.full_bundles),
            "rho": self.rho,
        }


def _ceil(x: float) -> int:
    return math.ceil(x - 1e-9)


def _topology(instance: Instance, topology: Topology | str | None) -> tuple[int, Topology]:
    if topology is None:
        if len(instance.topologies) != 1:
            raise InstanceError("topologies", "several topologies: name the one to allocate")
        return 0, instance.topologies[0]
    tid = topology if isinstance(topology, str) else topology.id
    for i, t in enumerate(instance.topologies):
        if t.id == tid:
            return i, t
    raise InstanceError("topology", f"unknown topology {tid!r}")


def _models(instance: Instance, ti: int, t: Topology) -> dict[str, PerfModel]:
    out: dict[str, PerfModel] = {}
    problems = []
    for ci, c in enumerate(t.components):
        m = rates.perf_model_for(instance, c)
        if m is None:
            problems.append((f"topologies[{ti}].components[{ci}].perf_model",
                             f"no performance model {c.perf_model or c.id!r} for task {c.id!r}"))
        else:
            out[c.id] = m
    if problems:
        raise InstanceError(problems)
    return out


def task_rates(topology: Topology, input_rate: float) -> dict[str, float]:
    """GetRate (section 6): omega_j = Omega for a source, else sum of omega_i x sigma_ij over
    in-edges. Computed per task (every task counted as one thread, so an ``all`` grouping does
    not multiply the stream)."""
    ones = {c.id: 1 for c in topology.components}
    return rates.component_rates(topology, input_rate, ones)


def _target(instance: Instance, ti: int, t: Topology, input_rate: float | None) -> float:
    if input_rate is not None:
        if not (input_rate >= 0 and math.isfinite(input_rate)):
            raise InstanceError("input_rate", f"must be a finite number >= 0, got {input_rate}")
        return float(input_rate)
    if t.input_rate is None:
        raise InstanceError(f"topologies[{ti}].input_rate", "the slots problem needs a target input rate")
    return float(t.input_rate)


def _one(model: PerfModel, task: str) -> tuple[float, float, float]:
    """(I(1), C(1), M(1)): the single-thread row (perf_at's estimate when 1 is not modelled)."""
    p = rates.perf_at(model, 1)
    if p is None:  # cannot happen for threads >= 1 unless the model is empty
        raise AllocationError(f"the model of {task!r} says nothing about one thread")
    return rates.peak_rate(p), p.cpu, p.memory


def _new_allocation(method: str, t: Topology, omega: float) -> Allocation:
    order = rates.topo_order(t)
    return Allocation(method=method, topology=t.id, input_rate=omega, order=order, rate={}, threads={},
                      cpu={}, memory={}, peak={}, bundle={}, full_bundles={}, partial_cpu={},
                      partial_memory={}, one_cpu={}, one_memory={})


def _static(a: Allocation, task: str, c1: float, m1: float) -> None:
    """Section 8.3: source and sink tasks get one thread and a static CPU/memory allocation."""
    a.threads[task] = 1
    a.cpu[task] = a.partial_cpu[task] = c1
    a.memory[task] = a.partial_memory[task] = m1
    a.bundle[task] = 1
    a.full_bundles[task] = 0
    a.static.append(task)


def _check_size(a: Allocation) -> None:
    n = sum(a.threads.values())
    if n > MAX_THREADS:
        raise AllocationError(f"{a.method.upper()} allocates {n} threads to {a.topology!r} (more than {MAX_THREADS})")


def lsa(instance: Instance, topology: Topology | str | None = None, input_rate: float | None = None) -> Allocation:
    """Linear Scaling Allocation, Shukla and Simmhan section 6.1, Algorithm 2.

    Per task: omega_bar = I(1); while omega >= omega_bar add a thread charged C(1), M(1) and
    take omega_bar off omega (lines 8-14); a trailing omega > 0 adds one more thread charged
    C(1) and M(1) scaled by omega / omega_bar (lines 15-20). The while loop is computed in
    closed form (k = floor(omega / omega_bar) iterations), which is the same arithmetic.
    A task with zero input rate gets one thread with no resources (Storm needs a thread; the
    paper does not cover it). Raises InstanceError (no model, no rate) or AllocationError.
    """
    ti, t = _topology(instance, topology)
    models = _models(instance, ti, t)
    omega_in = _target(instance, ti, t, input_rate)
    a = _new_allocation("lsa", t, omega_in)
    for task, omega in task_rates(t, omega_in).items():
        a.rate[task] = omega
    for task in a.order:
        omega = a.rate[task]
        bar, c1, m1 = _one(models[task], task)  # line 4: omega_bar = I_i(1)
        a.peak[task], a.one_cpu[task], a.one_memory[task] = bar, c1, m1
        if math.isinf(bar):
            _static(a, task, c1, m1)
            continue
        if bar <= 0:
            if omega > EPS:
                raise AllocationError(f"the model of {task!r} sustains no rate with one thread")
            bar = 1.0  # no rate to serve: the loop below adds nothing
        k = int(math.floor(omega / bar + 1e-9))  # lines 8-14, k iterations
        tau, c, m = k, k * c1, k * m1
        rest = omega - k * bar  # omega after the loop
        if rest > EPS * max(1.0, omega):  # lines 15-20
            tau += 1
            c += c1 * rest / bar
            m += m1 * rest / bar
        if tau == 0:
            tau = 1  # zero input rate: one idle thread
        a.threads[task], a.cpu[task], a.memory[task] = tau, c, m
        a.bundle[task] = 1
        a.full_bundles[task] = 0
        a.partial_cpu[task], a.partial_memory[task] = c, m
    _check_size(a)
    return a


def mba(instance: Instance, topology: Topology | str | None = None, input_rate: float | None = None) -> Allocation:
    """Model Based Allocation, Shukla and Simmhan section 6.2, Algorithm 3.

    Per task: omega_hat = the largest modelled peak rate, tau_hat = T(omega_hat) (lines 4-5);
    while omega >= omega_hat add a full bundle of tau_hat threads charged 100 % CPU and memory
    (lines 9-15); a trailing omega > 0 adds tau' = T(omega) threads charged C(tau'), M(tau')
    when tau' > 1, else C(1), M(1) scaled by omega / I(1) (lines 16-27). T takes the smallest
    modelled thread count whose peak covers the rate (rates.threads_for_rate).
    """
    ti, t = _topology(instance, topology)
    models = _models(instance, ti, t)
    omega_in = _target(instance, ti, t, input_rate)
    a = _new_allocation("mba", t, omega_in)
    for task, omega in task_rates(t, omega_in).items():
        a.rate[task] = omega
    for task in a.order:
        model = models[task]
        omega = a.rate[task]
        i1, c1, m1 = _one(model, task)
        a.one_cpu[task], a.one_memory[task] = c1, m1
        hat = max(rates.peak_rate(p) for p in model.points)  # line 4
        a.peak[task] = hat
        if math.isinf(i1):
            _static(a, task, c1, m1)
            continue
        if hat <= 0:
            if omega > EPS:
                raise AllocationError(f"the model of {task!r} sustains no rate with any thread count")
            hat = 1.0
        tau_hat = rates.threads_for_rate(model, hat)  # line 5
        assert tau_hat is not None
        a.bundle[task] = tau_hat
        k = int(math.floor(omega / hat + 1e-9))  # lines 9-15, k iterations
        tau, c, m = k * tau_hat, 100.0 * k, 100.0 * k
        rest = omega - k * hat
        pc = pm = 0.0
        if rest > EPS * max(1.0, omega):  # lines 16-27
            tau_p = rates.threads_for_rate(model, rest)  # line 17
            assert tau_p is not None  # rest < omega_hat, which some modelled count reaches
            tau += tau_p
            if tau_p > 1:  # lines 19-21
                pt = rates.perf_at(model, tau_p)
                pc, pm = pt.cpu, pt.memory
            else:  # lines 22-24
                if i1 <= 0:
                    raise AllocationError(f"the model of {task!r} sustains no rate with one thread")
                pc, pm = c1 * rest / i1, m1 * rest / i1
            c += pc
            m += pm
        if tau == 0:
            tau = 1
        a.threads[task], a.cpu[task], a.memory[task] = tau, c, m
        a.full_bundles[task] = k
        a.partial_cpu[task], a.partial_memory[task] = pc, pm
    _check_size(a)
    return a


def given_allocation(instance: Instance, threads: dict[str, int], topology: Topology | str | None = None,
                     input_rate: float | None = None) -> Allocation:
    """An allocation with thread counts fixed by the caller ("allocated by some allocation
    algorithm", as in the paper's Fig. 4), in the form the mappings take: per task the bundle
    tau_hat = T(omega_hat) of its model, floor(tau / tau_hat) full bundles charged 100 % each,
    and the remaining threads charged their modelled C and M (perf_at)."""
    ti, t = _topology(instance, topology)
    models = _models(instance, ti, t)
    omega_in = _target(instance, ti, t, input_rate) if (input_rate is not None or t.input_rate is not None) else 0.0
    a = _new_allocation("given", t, omega_in)
    a.rate = task_rates(t, omega_in)
    for task in a.order:
        if task not in threads:
            raise InstanceError(f"threads.{task}", "missing thread count")
        tau = threads[task]
        if isinstance(tau, bool) or not isinstance(tau, int) or tau < 1:
            raise InstanceError(f"threads.{task}", f"must be an integer >= 1, got {tau!r}")
        model = models[task]
        _, a.one_cpu[task], a.one_memory[task] = _one(model, task)
        hat = max(rates.peak_rate(p) for p in model.points)
        a.peak[task] = hat
        b = rates.threads_for_rate(model, hat) or 1
        k, r = divmod(tau, b)
        pc = pm = 0.0
        if r:
            pt = rates.perf_at(model, r)
            if pt is None:
                raise AllocationError(f"the model of {task!r} says nothing about {r} threads")
            pc, pm = pt.cpu, pt.memory
        a.threads[task], a.bundle[task], a.full_bundles[task] = tau, b, k
        a.partial_cpu[task], a.partial_memory[task] = pc, pm
        a.cpu[task], a.memory[task] = 100.0 * k + pc, 100.0 * k + pm
    return a


ALLOCATIONS: dict[str, Callable[..., Allocation]] = {"lsa": lsa, "mba": mba}


# --------------------------------------------------------------------------------------------
# VM acquisition (section 7.1)
# --------------------------------------------------------------------------------------------

def _vm_key(n: Node) -> tuple:
    return (n.price if n.price is not None else 0.0, n.id)


def acquire_vms(pool: list[Node], rho: int) -> list[Node] | None:
    """Section 7.1: as many VMs of the largest size p_hat as fit within rho (n x p_hat <= rho),
    then the smallest VM whose slots cover the remainder. The pool is finite here: when the
    largest VMs run out and no VM covers the remainder, repeat with the largest size left.
    Ties: cheaper first, then node id. Returns the VMs in acquisition order (the paper's
    v_1, v_2, ...), or None when the pool has fewer than rho slots."""
    avail = [n for n in pool if n.slots]
    if sum(len(n.slots) for n in avail) < rho:
        return None
    chosen: list[Node] = []
    rest = rho
    while rest > 0:
        p_hat = max(len(n.slots) for n in avail)
        big = sorted((n for n in avail if len(n.slots) == p_hat), key=_vm_key)
        take = big[: min(len(big), rest // p_hat)]
        chosen += take
        rest -= p_hat * len(take)
        avail = [n for n in avail if n not in take]
        if rest <= 0:
            break
        cover = sorted((n for n in avail if len(n.slots) >= rest), key=lambda n: (len(n.slots), *_vm_key(n)))
        if cover:
            chosen.append(cover[0])
            break
        if not take:  # nothing of the largest size fits in rest and nothing covers it: impossible
            return None  # (cannot happen: a VM of size p_hat > rest would cover it)
    return chosen


def vm_slots(vms: list[Node]) -> list[Slot]:
    """The acquired slots, VM by VM in acquisition order, ports ascending (s_1^1, s_1^2, s_2^1, ...)."""
    return [(n.id, p) for n in vms for p in n.slots]


# --------------------------------------------------------------------------------------------
# Mapping (section 7)
# --------------------------------------------------------------------------------------------

def threads_in_order(order: list[str], threads: dict[str, int]) -> list[Thread]:
    """Every thread, task by task in the given (topological) order: B^1..B^5, O^1, ..."""
    return [(task, k) for task in order for k in range(threads[task])]


def map_dsm(order: list[str], threads: dict[str, int], slots: list[Slot]) -> dict[Thread, Slot]:
    """Default Storm Mapping, section 7.2, Algorithm 4: the n-th thread goes to slot n mod |S|.

    Threads are listed task by task (``order``), slots as given; no resource check, so DSM
    never fails. (The paper's pseudo-code starts n at 1 with 0-based m = n mod |S|; its Fig. 4
    walk-through gives the first thread to the first slot, which is what this does.)
    """
    if not slots:
        raise MappingError(order[0] if order else "?", "no slot")
    return {r: slots[n % len(slots)] for n, r in enumerate(threads_in_order(order, threads))}


def _nwdist(a: Node, b: Node, rack_of: dict[str, str]) -> float:
    if a.id == b.id:
        return 0.0
    return 0.5 if rack_of.get(a.id) == rack_of.get(b.id) else 1.0


def map_rsm(alloc: Allocation, vms: list[Node], rack_of: dict[str, str] | None = None,
            w_cpu: float = 1.0, w_mem: float = 1.0, w_net: float = 1.0) -> tuple[dict[Thread, Slot], dict[Slot, dict[str, float]]]:
    """R-Storm Mapping as Shukla and Simmhan describe it, section 7.3, Algorithm 5.

    VMs start with C_j = M_j = p_j x 1.00 and each slot with M_j^l = 1.00 (line 2-3); the
    reference VM is the first (line 6). Sweeps over the tasks in topological order map one
    thread of each task with threads left (lines 7-24): VMs sorted by
    d = w_M (M_j - m_bar)^2 + w_C (C_j - c_bar)^2 + w_N NWDist(v_hat, v_j)
    (m_bar = M_i(1), c_bar = C_i(1) as fractions; NWDist 0 same VM, 0.5 same rack, 1 other);
    the first VM with C_j >= c_bar and a slot with M_j^l >= m_bar (first such port) takes the
    thread; the VM becomes the reference. CPU is checked per VM, memory per slot, as the paper
    says Storm does. Raises MappingError when no slot fits (line 16). Returns the mapping and
    RSM's own estimate of each used slot (threads x C(1), threads x M(1), in %).
    """
    rack_of = rack_of or {}
    cap_c = {n.id: float(len(n.slots)) for n in vms}
    cap_m = dict(cap_c)
    slot_m = {(n.id, p): 1.0 for n in vms for p in n.slots}
    left = {t: alloc.threads[t] for t in alloc.order}
    nxt = {t: 0 for t in alloc.order}
    est: dict[Slot, dict[str, float]] = {}
    out: dict[Thread, Slot] = {}
    if not vms:
        raise MappingError(alloc.order[0], "no VM acquired")
    ref = vms[0]
    while any(left.values()):
        for task in alloc.order:
            if left[task] == 0:
                continue
            cb, mb = alloc.one_cpu[task] / 100.0, alloc.one_memory[task] / 100.0
            ranked = sorted(vms, key=lambda v: w_mem * (cap_m[v.id] - mb) ** 2 + w_cpu * (cap_c[v.id] - cb) ** 2
                            + w_net * _nwdist(ref, v, rack_of))
            pick: Slot | None = None
            for v in ranked:
                if cap_c[v.id] + EPS < cb:
                    continue
                for p in v.slots:
                    if slot_m[(v.id, p)] + EPS >= mb:
                        pick = (v.id, p)
                        ref = v
                        break
                if pick:
                    break
            if pick is None:
                raise MappingError(task, f"no VM has {100 * cb:g} % CPU with a slot of {100 * mb:g} % memory free "
                                         f"({sum(left.values())} threads unmapped)")
            out[(task, nxt[task])] = pick
            nxt[task] += 1
            left[task] -= 1
            cap_c[pick[0]] -= cb
            cap_m[pick[0]] -= mb
            slot_m[pick] -= mb
            e = est.setdefault(pick, {"cpu": 0.0, "memory": 0.0})
            e["cpu"] += 100 * cb
            e["memory"] += 100 * mb
    return out, est


def map_sam(alloc: Allocation, vms: list[Node]) -> tuple[dict[Thread, Slot], dict[Slot, dict[str, float]]]:
    """Slot Aware Mapping, Shukla and Simmhan section 7.4, Algorithm 6.

    Every slot starts with C = M = 1.00 (100 %). Sweeps over the tasks in topological order
    (lines 6-28): a task with a full bundle left maps tau_hat threads to the next empty slot,
    looking in the last mapped VM first and then the following ones (GetNextFullSlot, line 9),
    and that slot is used up (lines 12-15); otherwise its remaining threads (the partial bundle)
    go together to the best-fit slot, the one with the smallest available CPU + memory that
    still holds the partial bundle's c_i and m_i (GetBestFitSlot, lines 17-24). Raises
    MappingError when no slot is found (lines 10, 19). A full bundle is one that MBA's while
    loop allocated (``alloc.full_bundles``); see the module docstring for why. Returns the
    mapping and SAM's own estimate of each used slot (in %).
    """
    slots = vm_slots(vms)
    if not slots:
        raise MappingError(alloc.order[0], "no VM acquired")
    vm_index = {n.id: i for i, n in enumerate(vms)}
    cap_c = {s: 100.0 for s in slots}
    cap_m = {s: 100.0 for s in slots}
    empty = set(slots)
    left = {t: alloc.threads[t] for t in alloc.order}
    full = {t: alloc.full_bundles.get(t, 0) for t in alloc.order}
    nxt = {t: 0 for t in alloc.order}
    est: dict[Slot, dict[str, float]] = {}
    out: dict[Thread, Slot] = {}
    last_vm = 0

    def next_full_slot() -> Slot | None:
        for d in range(len(vms)):
            v = vms[(last_vm + d) % len(vms)]
            for p in v.slots:
                if (v.id, p) in empty:
                    return (v.id, p)
        return None

    def give(task: str, n: int, s: Slot) -> None:
        for _ in range(n):
            out[(task, nxt[task])] = s
            nxt[task] += 1
        left[task] -= n

    while any(left.values()):
        for task in alloc.order:
            if left[task] == 0:
                continue
            b = alloc.bundle[task]
            if full[task] > 0 and left[task] >= b:  # line 8
                s = next_full_slot()  # line 9
                if s is None:
                    raise MappingError(task, f"no empty slot for a full bundle of {b} threads")
                give(task, b, s)
                full[task] -= 1
                cap_c[s] = cap_m[s] = 0.0  # line 15
                est[s] = {"cpu": 100.0, "memory": 100.0}
            else:  # lines 17-24: the partial bundle, all remaining threads
                need_c, need_m = alloc.partial_cpu[task], alloc.partial_memory[task]
                fits = [s for s in slots if cap_c[s] + EPS >= need_c and cap_m[s] + EPS >= need_m]
                if not fits:
                    raise MappingError(task, f"no slot has {need_c:g} % CPU and {need_m:g} % memory free "
                                             f"for {left[task]} threads")
                s = min(fits, key=lambda x: cap_c[x] + cap_m[x])  # first of the smallest (stable)
                give(task, left[task], s)
                cap_c[s] -= need_c
                cap_m[s] -= need_m
                e = est.setdefault(s, {"cpu": 0.0, "memory": 0.0})
                e["cpu"] += need_c
                e["memory"] += need_m
            empty.discard(s)
            last_vm = vm_index[s[0]]
    return out, est


# --------------------------------------------------------------------------------------------
# Allocation + acquisition + mapping, for the slots problem
# --------------------------------------------------------------------------------------------

MAPPINGS = ("dsm", "rsm", "sam")


def _check_options(opts: dict[str, Any]) -> None:
    for k in ("w_cpu", "w_mem", "w_net"):
        if k in opts:
            v = opts[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InstanceError(f"options.{k}", f"must be a finite number >= 0, got {v!r}")
    if "slot_order" in opts and opts["slot_order"] not in ("paper", "storm"):
        raise InstanceError("options.slot_order", f"must be 'paper' or 'storm', got {opts['slot_order']!r}")
    if "grow" in opts and not isinstance(opts["grow"], bool):
        raise InstanceError("options.grow", f"must be true or false, got {opts['grow']!r}")


def schedule(instance: Instance, allocation: str, mapping: str, *, grow: bool = True, slot_order: str = "paper",
             w_cpu: float = 1.0, w_mem: float = 1.0, w_net: float = 1.0, problem: str = "slots") -> Result:
    """Allocate (LSA or MBA), acquire VMs for rho slots (section 7.1), map (DSM, RSM or SAM).

    Topologies are scheduled one after the other (priority order), each on VMs of its own
    taken from what the previous ones left (the paper runs each dataflow on an exclusive
    cluster). A resource-aware mapping (RSM, SAM) that fails gets one more slot, with VMs
    acquired again for rho + 1, until it succeeds or the pool is exhausted (section 8.4;
    ``grow=False`` stops at the first failure). DSM maps over the first rho acquired slots
    (Storm's topology.workers = rho): ``slot_order='paper'`` lists them VM by VM (Fig. 4) and
    threads task by task in topological order; ``'storm'`` uses the EvenScheduler's
    interleaving and its (component id, index) executor order.
    """
    name = f"shukla.{allocation}+{mapping}"
    _check_options({"grow": grow, "slot_order": slot_order, "w_cpu": w_cpu, "w_mem": w_mem, "w_net": w_net})
    allocate = ALLOCATIONS[allocation]
    rack_of = instance.cluster.rack_of()
    pool = [n for n in instance.cluster.nodes if n.slots]
    placements: list[Placement] = []
    parallelism: dict[str, dict[str, int]] = {}
    per_topo: dict[str, dict[str, Any]] = {}
    for t in topology_order(instance):
        try:
            alloc = allocate(instance, t)
        except AllocationError as e:
            return no_plan(problem, name, f"{allocation.upper()} cannot allocate {t.id!r}: {e}")
        info = alloc.summary()
        rho = alloc.rho
        want = rho
        tried: set[tuple[str, ...]] = set()
        failures: list[str] = []
        found = None
        while True:
            vms = acquire_vms(pool, want)
            if vms is None:
                have = sum(len(n.slots) for n in pool)
                why = f"the VM pool has {have} free slots; {want} needed"
                if failures:
                    why = f"{mapping.upper()} failed up to {want - 1} slots (last: {failures[-1]}); {why}"
                return no_plan(problem, name, f"{t.id!r}: {why}", details={"topologies": {**per_topo, t.id: info}})
            key = tuple(n.id for n in vms)
            if key not in tried:
                tried.add(key)
                try:
                    if mapping == "dsm":
                        slots = vm_slots(vms)[:want]
                        if slot_order == "storm":
                            slots = even_slot_order(slots)
                            order = sorted(alloc.order)
                        else:
                            order = alloc.order
                        found = (map_dsm(order, alloc.threads, slots), None, vms)
                    elif mapping == "rsm":
                        m, est = map_rsm(alloc, vms, rack_of, w_cpu=w_cpu, w_mem=w_mem, w_net=w_net)
                        found = (m, est, vms)
                    else:
                        m, est = map_sam(alloc, vms)
                        found = (m, est, vms)
                    break
                except MappingError as e:
                    failures.append(f"{sum(len(n.slots) for n in vms)} slots: {e}")
            if not grow:
                return no_plan(problem, name, f"{t.id!r}: {mapping.upper()} failed on {rho} slots: {failures[-1]}",
                               details={"topologies": {**per_topo, t.id: info}})
            want += 1
        mp, est, vms = found
        pool = [n for n in pool if n not in vms]
        used = sorted(set(mp.values()))
        info.update({
            "vms": [{"node": n.id, "slots": len(n.slots), "price": n.price, "rack": rack_of.get(n.id)} for n in vms],
            "slots_acquired": sum(len(n.slots) for n in vms),
            "slots_asked": want,
            "extra_slots": want - rho,
            "mapping_failures": failures,
            "slots_used": len(used),
            "vm_cost": sum(n.price or 0.0 for n in vms),
        })
        if est is not None:
            info["est_slot_usage"] = {f"{s[0]}:{s[1]}": {k: round(v, 6) for k, v in u.items()} for s, u in sorted(est.items())}
        per_topo[t.id] = info
        parallelism[t.id] = dict(alloc.threads)
        placements += [Placement(topology=t.id, component=c, executor=k, node=s[0], slot=s[1])
                       for (c, k), s in sorted(mp.items())]
    plan = Plan(placements=placements, parallelism=parallelism)
    # The paper's "model predicted rate" (section 8.5): what the performance models say the
    # mapping sustains. api.solve judges the plan again, independently.
    m = _evaluate(instance, plan, problem)
    targets = [t.input_rate for t in instance.topologies if t.input_rate is not None]
    planned = min(targets) if targets else None
    predicted = m.get("supported_rate")
    details = {
        "allocation": allocation,
        "mapping": mapping,
        "planned_rate": planned,
        "predicted_rate": predicted,
        "sustains_planned_rate": bool(planned is not None and predicted is not None and predicted >= planned * (1 - 1e-6)),
        "rho": sum(v["rho"] for v in per_topo.values()),
        "slots_used": m.get("slots_used"),
        "slots_acquired": sum(v["slots_acquired"] for v in per_topo.values()),
        "topologies": per_topo,
    }
    msg = f"planned {planned:g} tuples/s; the models predict {predicted:g} for this mapping" if planned is not None and predicted is not None else ""
    return Result(problem=problem, method=name, status=Status.FEASIBLE, plan=plan, details=details, message=msg)


_PAIRS = [("lsa", "dsm"), ("lsa", "rsm"), ("mba", "dsm"), ("mba", "rsm"), ("mba", "sam")]
_SECTIONS = {"lsa": "6.1 Alg. 2", "mba": "6.2 Alg. 3", "dsm": "7.2 Alg. 4", "rsm": "7.3 Alg. 5", "sam": "7.4 Alg. 6"}
_OPTIONS = {"dsm": {"slot_order": "paper"}, "rsm": {"grow": True, "w_cpu": 1.0, "w_mem": 1.0, "w_net": 1.0},
            "sam": {"grow": True}}


def _make(allocation: str, mapping: str) -> Callable[..., Result]:
    def method(instance: Instance, problem: str, *, time_limit=None, seed=0, **options: Any) -> Result:
        return schedule(instance, allocation, mapping, problem=problem, **options)

    method.__name__ = f"{allocation}_{mapping}"
    method.__doc__ = (f"{allocation.upper()} allocation (section {_SECTIONS[allocation]}) + VM acquisition (7.1) + "
                      f"{mapping.upper()} mapping (section {_SECTIONS[mapping]}), {SOURCE}.")
    return method


for _a, _m in _PAIRS:
    register(f"shukla.{_a}+{_m}", ["slots"], source=f"{SOURCE}, sections {_SECTIONS[_a]}, 7.1, {_SECTIONS[_m]}",
             kind="heuristic", options=_OPTIONS[_m],
             summary=f"{_a.upper()} threads and slots, largest-VM-first acquisition, {_m.upper()} mapping")(_make(_a, _m))
