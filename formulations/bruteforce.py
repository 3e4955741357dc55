"""Exhaustive search for tiny instances: the reference every exact model is checked against.

Depth-first enumeration of every assignment of executors to worker slots, pruned only by
the hard limits (so nothing feasible is skipped). Executors of one component are
interchangeable when their traffic is symmetric (no measured matrix, no ``global`` grouping
into the component), so their slot indices are enumerated in non-decreasing order; that
removes only permutations of identical executors. The objective is computed here from the
problem's definition, independently of the evaluator.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter, defaultdict

from planner import rates
from planner.model import Instance, Topology
from planner.plan import Placement, Plan, Result, Status
from planner.problems import admission_weight
from planner.registry import register

MAX_LEAVES = 3_000_000  # refuse above this many (symmetry-reduced) assignments


def _search_size(execs_by_comp: list[int], slots: int) -> int:
    # multisets of size k from `slots` slots, per component
    total = 1
    for k in execs_by_comp:
        total *= math.comb(slots + k - 1, k)
    return total


class _Search:
    def __init__(self, instance: Instance, problem: str, topos: list[Topology], deadline: float | None):
        self.inst = instance
        self.problem = problem
        self.topos = topos
        self.deadline = deadline
        self.nodes = {n.id: n for n in instance.cluster.nodes}
        self.rack = instance.cluster.rack_of()
        self.slots = [(n.id, p) for n in sorted(instance.cluster.nodes, key=lambda n: n.id) for p in n.slots]
        self.total_slots = len(self.slots)
        # executors in order, with their component object
        self.execs: list[tuple[Topology, str, int]] = []
        self.sym_prev: list[int | None] = []  # index of the previous interchangeable executor
        for t in topos:
            global_in = {s.target for s in t.streams if s.grouping == "global"}
            for c in sorted(t.components, key=lambda c: c.id):
                sym = not t.traffic and c.id not in global_in
                for i in range(c.parallelism):
                    self.sym_prev.append(len(self.execs) - 1 if (sym and i > 0) else None)
                    self.execs.append((t, c.id, i))
        self.best_obj: tuple | None = None
        self.best_assign: list[int] | None = None
        self.leaves = 0
        self.timed_out = False
        self.traffic = {t.id: rates.executor_traffic(t) for t in topos} if problem == "traffic" else {}
        self.down = {t.id: rates.downstream(t) for t in topos}

    # --- objective, computed from the definitions ---
    def objective(self, assign: list[int]) -> tuple | None:
        where: dict[tuple[str, str, int], tuple[str, int]] = {}
        for k, (t, c, i) in enumerate(self.execs):
            where[(t.id, c, i)] = self.slots[assign[k]]
        if self.problem in ("network",):
            total = 0.0
            for t in self.topos:
                s = 0
                for u, downs in self.down[t.id].items():
                    for d in downs:
                        for i in range(t.component(u).parallelism):
                            a = where[(t.id, u, i)]
                            for j in range(t.component(d).parallelism):
                                b = where[(t.id, d, j)]
                                if a == b:
                                    s += 0
                                elif a[0] == b[0]:
                                    s += 1
                                elif self.rack[a[0]] == self.rack[b[0]]:
                                    s += 2
                                else:
                                    s += 3
                total += s / t.executor_count
            return (total,)
        if self.problem == "traffic":
            inter_node = inter_worker = 0.0
            for t in self.topos:
                workers = {where[(t.id, c, i)] for (tt, c, i) in self.execs if tt is t}
                need = rates.workers_required(t, self.total_slots)
                if len(workers) != need:
                    return None
                m = rates.max_per_worker(t.executor_count, need, self.inst.params.alpha)
                per = Counter(where[(t.id, c, i)] for (tt, c, i) in self.execs if tt is t)
                if max(per.values()) > m:
                    return None
                for ((c, i), (d, j)), r in self.traffic[t.id].items():
                    a, b = where[(t.id, c, i)], where[(t.id, d, j)]
                    if a != b:
                        inter_worker += r
                    if a[0] != b[0]:
                        inter_node += r
            return (round(inter_node, 9), round(inter_worker, 9))
        return (0.0,)  # feasibility / admission: any feasible assignment

    def run(self) -> None:
        n = len(self.execs)
        assign = [-1] * n
        cpu = defaultdict(float)
        mem = defaultdict(float)
        res: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        heap = defaultdict(float)
        owner: dict[int, str] = {}
        owner_count = Counter()
        comp_node = Counter()
        comp_worker = Counter()
        check_cpu = self.problem != "traffic" or True
        check_mem = self.problem != "traffic"

        def rec(k: int) -> bool:
            if self.timed_out:
                return True
            if k == n:
                self.leaves += 1
                if self.deadline is not None and self.leaves % 2000 == 0 and time.monotonic() > self.deadline:
                    self.timed_out = True
                obj = self.objective(assign)
                if obj is not None and (self.best_obj is None or obj < self.best_obj):
                    self.best_obj = obj
                    self.best_assign = list(assign)
                    if self.problem in ("feasibility", "admission"):
                        return True  # any feasible plan will do
                return False
            t, cid, i = self.execs[k]
            comp = t.component(cid)
            start = assign[self.sym_prev[k]] if self.sym_prev[k] is not None else 0
            for s in range(start, len(self.slots)):
                node_id, _ = self.slots[s]
                node = self.nodes[node_id]
                if owner.get(s, t.id) != t.id:
                    continue
                if comp.site is not None and node.site != comp.site:
                    continue
                if comp.nodes is not None and node_id not in comp.nodes:
                    continue
                if comp.max_per_node is not None and comp_node[(t.id, cid, node_id)] >= comp.max_per_node:
                    continue
                if check_cpu and cpu[node_id] + comp.cpu > node.cpu + 1e-9:
                    continue
                if check_mem:
                    if mem[node_id] + comp.memory_mb > node.memory_mb + 1e-9:
                        continue
                    if heap[s] + comp.memory_onheap_mb > t.max_heap_mb + 1e-9:
                        continue
                    if any(res[node_id][r] + x > node.resources.get(r, 0.0) + 1e-9 for r, x in comp.resources.items()):
                        continue
                bad = False
                for other in t.components:
                    if comp_worker[(t.id, other.id, s)] and (other.id in comp.incompatible or cid in other.incompatible):
                        bad = True
                        break
                if bad:
                    continue
                assign[k] = s
                cpu[node_id] += comp.cpu
                mem[node_id] += comp.memory_mb
                heap[s] += comp.memory_onheap_mb
                for r, x in comp.resources.items():
                    res[node_id][r] += x
                owner[s] = t.id
                owner_count[s] += 1
                comp_node[(t.id, cid, node_id)] += 1
                comp_worker[(t.id, cid, s)] += 1
                stop = rec(k + 1)
                comp_worker[(t.id, cid, s)] -= 1
                comp_node[(t.id, cid, node_id)] -= 1
                owner_count[s] -= 1
                if owner_count[s] == 0:
                    del owner[s]
                for r, x in comp.resources.items():
                    res[node_id][r] -= x
                heap[s] -= comp.memory_onheap_mb
                mem[node_id] -= comp.memory_mb
                cpu[node_id] -= comp.cpu
                assign[k] = -1
                if stop:
                    return True
            return False

        rec(0)

    def placements(self) -> list[Placement]:
        assert self.best_assign is not None
        return [
            Placement(topology=t.id, component=c, executor=i, node=self.slots[s][0], slot=self.slots[s][1])
            for (t, c, i), s in zip(self.execs, self.best_assign)
        ]


@register("exact.bruteforce", ["network", "traffic", "feasibility", "admission"], kind="exact",
          source="exhaustive enumeration (the RAS document's 'optimal strategy' for tiny instances)",
          summary="exhaustive search over all placements; refuses instances too large to finish")
def bruteforce(instance: Instance, problem: str, *, time_limit=None, seed=0) -> Result:
    """Enumerate every placement (W^N up to interchangeable executors) and keep the best."""
    slots = sum(len(n.slots) for n in instance.cluster.nodes)
    sizes = [c.parallelism for t in instance.topologies for c in t.components]
    size = _search_size(sizes, slots) * (2 ** len(instance.topologies) if problem == "admission" else 1)
    if size > MAX_LEAVES:
        return Result(problem=problem, method="exact.bruteforce", status=Status.UNKNOWN,
                      message=f"too large for exhaustive search: about {size:.3g} assignments > {MAX_LEAVES:,}; use exact.cpsat")
    deadline = time.monotonic() + time_limit if time_limit else None
    if problem == "admission":
        return _admission(instance, deadline)
    s = _Search(instance, problem, list(instance.topologies), deadline)
    s.run()
    if s.best_assign is None:
        if s.timed_out:
            return Result(problem=problem, method="exact.bruteforce", status=Status.UNKNOWN, message="time limit reached before any feasible plan")
        return Result(problem=problem, method="exact.bruteforce", status=Status.INFEASIBLE,
                      message="exhaustive search: no placement satisfies the hard limits")
    status = Status.FEASIBLE if s.timed_out else Status.OPTIMAL
    return Result(problem=problem, method="exact.bruteforce", status=status, plan=Plan(placements=s.placements()),
                  bound=None if s.timed_out else s.best_obj[0], details={"leaves": s.leaves},
                  message="time limit reached; best plan so far" if s.timed_out else "")


def _admission(instance: Instance, deadline: float | None) -> Result:
    maxp = max(t.priority for t in instance.topologies)
    topos = list(instance.topologies)
    subsets = []
    for r in range(len(topos), -1, -1):
        for sub in itertools.combinations(topos, r):
            subsets.append((sum(admission_weight(t.priority, maxp) for t in sub), sub))
    subsets.sort(key=lambda x: -x[0])
    for w, sub in subsets:
        if not sub:
            return Result(problem="admission", method="exact.bruteforce", status=Status.OPTIMAL, plan=Plan(placements=[]), bound=0.0)
        s = _Search(instance, "admission", list(sub), deadline)
        s.run()
        if s.timed_out:
            return Result(problem="admission", method="exact.bruteforce", status=Status.UNKNOWN, message="time limit reached")
        if s.best_assign is not None:
            return Result(problem="admission", method="exact.bruteforce", status=Status.OPTIMAL,
                          plan=Plan(placements=s.placements()), bound=float(w))
    raise AssertionError("unreachable: the empty set is always feasible")
