"""The placement model shared by ``network``, ``traffic``, ``feasibility`` and ``admission``.

Executors of one component that the objective cannot tell apart form a *group* (for the RAS
problems: the whole component; for ``traffic``: executors with identical traffic rows and
columns, see :func:`traffic_groups`). The model counts executors per group and worker,
``x[g,w]``, with per-node sums ``y[g,n]`` and per-rack sums ``z[g,r]``; it never has one
Boolean per executor unless the traffic makes every executor distinct. The hard limits are
those of :mod:`planner.problems` for the problem at hand. docs/formulations.md writes the
model down with these names.

Every row carries a constraint *family* (cpu, memory, heap, resources, slots, placement,
worker_count, max_per_worker); when a model is infeasible, :func:`explain_infeasible` says
which resource is short by simple counting and, failing that, which family, dropped alone,
makes the model feasible.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from planner import rates
from planner.model import Component, Instance, Topology
from planner.plan import Placement, Plan, Result, Status

from ._linmodel import LinModel, Solution, solve_model

BACKENDS = {"exact.cpsat": "cpsat", "exact.milp-cbc": "cbc", "exact.milp-highs": "highs"}
OPTIONS = {"hint": None, "symmetry": True, "threads": None, "model": "auto"}
SOURCE = "docs/formulations.md (component-count placement models; Storm RAS document, Aniello et al. 2013 section 3.2.2)"
RAS_PROBLEMS = ("network", "feasibility", "admission")
EPS = 1e-9


@dataclass
class Group:
    """Interchangeable executors (``members`` are executor indices of ``comp``) of topology ``ti``."""

    ti: int
    topo: Topology
    comp: Component
    members: list[int]

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def label(self) -> str:
        return f"{self.topo.id}/{self.comp.id}" + ("" if self.size == self.comp.parallelism else f"[{self.members[0]}..]")


def component_groups(ti: int, t: Topology) -> list[Group]:
    """One group per component (all its executors)."""
    return [Group(ti, t, c, list(range(c.parallelism))) for c in sorted(t.components, key=lambda c: c.id)]


def traffic_groups(ti: int, t: Topology) -> tuple[list[Group], dict[tuple[int, int], float]]:
    """Groups of executors with identical traffic, and the rate between one pair of executors
    of two groups (the same for every such pair, by construction), keyed by local group index.

    Executor i and j of a component are interchangeable when their outgoing rates (to each
    other executor) and incoming rates (from each) are equal. Shuffle, fields and all
    groupings keep a component whole; a ``global`` stream splits off executor 0; a measured
    matrix usually makes executors distinct (one group each). A component with traffic to
    itself is split into single executors.
    """
    # derived traffic: executors 0 and 1 of each component stand for all (``executor_traffic``'s
    # ``first``); executor 1's group then takes 1 .. p-1. Measured traffic: every executor.
    alike = not t.traffic
    tr = rates.executor_traffic(t, first=2 if alike else None)
    row: dict[tuple[str, int], dict] = defaultdict(dict)
    col: dict[tuple[str, int], dict] = defaultdict(dict)
    selfish: set[str] = set()
    for (a, b), r in tr.items():
        if r == 0:
            continue
        if a[0] == b[0]:
            selfish.add(a[0])
        row[a][b] = row[a].get(b, 0.0) + r
        col[b][a] = col[b].get(a, 0.0) + r
    groups: list[Group] = []
    for c in sorted(t.components, key=lambda c: c.id):
        p = min(c.parallelism, 2) if alike else c.parallelism
        if c.id in selfish:
            keys = {i: i for i in range(p)}
        else:
            keys = {
                i: (tuple(sorted((k, round(v, 12)) for k, v in row[(c.id, i)].items())),
                    tuple(sorted((k, round(v, 12)) for k, v in col[(c.id, i)].items())))
                for i in range(p)
            }
        by_key: dict[Any, list[int]] = {}
        for i in range(p):
            by_key.setdefault(keys[i], []).append(i)
        for members in by_key.values():
            if alike and members[-1] == 1:
                members = members + list(range(2, c.parallelism))
            groups.append(Group(ti, t, c, members))
    where = {(g.comp.id, i): k for k, g in enumerate(groups) for i in g.members}
    pair: dict[tuple[int, int], float] = {}
    seen: set[tuple[int, int]] = set()
    for (a, b), r in tr.items():
        if r == 0:
            continue
        ga, gb = where[a], where[b]
        if (ga, gb) in seen:
            continue
        seen.add((ga, gb))
        pair[(ga, gb)] = r  # the per-executor-pair rate
    return groups, pair


class _BuildStopped(Exception):
    """PlacementModel._build reached its deadline."""


def _places_all(instance: Instance, plan: Plan) -> bool:
    """Whether ``plan`` places every executor of every topology (each once)."""
    placed = {(p.topology, p.component, p.executor) for p in plan.placements}
    return len(placed) == sum(t.executor_count for t in instance.topologies)


def _clashes(t: Topology) -> set[tuple[str, str]]:
    """The component pairs (c, d), c <= d, that a worker of ``t`` may not hold together, either
    side naming the other incompatible; (c, c) for a component incompatible with itself."""
    out: set[tuple[str, str]] = set()
    for c in t.components:
        for d in c.incompatible:
            out.add((min(c.id, d), max(c.id, d)))
    return out


class PlacementModel:
    """Counts x[g,w] of group g on worker w, with the problem's hard limits.

    ``problem`` selects the limits: RAS problems (network, feasibility, admission) check
    node CPU, memory and generic resources, worker heap, one topology per worker and the
    placement constraints; ``traffic`` checks node CPU, placement, one topology per worker,
    exactly S_t workers per topology and at most M_t executors per worker. ``admission``
    makes each topology optional (binary a[t]).
    """

    def __init__(self, instance: Instance, problem: str, groups: list[Group], *, sense: str = "min",
                 symmetry: bool = True, hint_plan: Plan | None = None, build: bool = True,
                 deadline: float | None = None):
        self.inst = instance
        self.problem = problem
        self.groups = groups
        self.m = LinModel(sense)
        self.ras = problem in RAS_PROBLEMS
        self.topos = sorted({g.ti: g.topo for g in groups}.items())
        self.nodes = list(instance.cluster.nodes)
        rack_of = instance.cluster.rack_of()
        self.racks = sorted({rack_of[n.id] for n in self.nodes})
        self.node_rack = [self.racks.index(rack_of[n.id]) for n in self.nodes]
        self.workers: list[tuple[int, int]] = [(ni, p) for ni, n in enumerate(self.nodes) for p in n.slots]
        self.node_workers: list[list[int]] = [[] for _ in self.nodes]
        for wi, (ni, _) in enumerate(self.workers):
            self.node_workers[ni].append(wi)
        total_slots = len(self.workers)
        self.S = {ti: rates.workers_required(t, total_slots) for ti, t in self.topos}
        self.M = {ti: rates.max_per_worker(t.executor_count, self.S[ti], instance.params.alpha) for ti, t in self.topos}
        self.symmetry = symmetry
        self.node_classes = self._node_classes() if symmetry else []
        self.hx = self._hint_counts(hint_plan) if hint_plan is not None else None
        self.x: dict[tuple[int, int], int] = {}
        self.y: dict[tuple[int, int], int] = {}
        self.z: dict[tuple[int, int], int] = {}
        self.a: dict[int, int] = {}
        self.o: dict[tuple[int, int], int] = {}
        self.deadline = deadline  # a time.monotonic() instant: building stops there (``stopped``)
        self.stopped = False
        if build:  # build=False: only the sets and capacities (the pattern models use them)
            try:
                self._build()
            except _BuildStopped:
                self.stopped = True  # the model is incomplete: Run.solve will not hand it over

    # --- capacities ------------------------------------------------------------------------
    def node_cap(self, g: Group, ni: int) -> int:
        """Most executors of group g that node ni can hold on its own (pins, resources, limits)."""
        c, n = g.comp, self.nodes[ni]
        if not n.slots:
            return 0
        if c.site is not None and n.site != c.site:
            return 0
        if c.nodes is not None and n.id not in c.nodes:
            return 0
        cap = g.size

        def lim(need: float, have: float) -> int:
            return cap if need <= 0 else int(math.floor(have / need + EPS))

        cap = min(cap, lim(c.cpu, n.cpu))
        if self.ras:
            cap = min(cap, lim(c.memory_mb, n.memory_mb))
            for r, q in c.resources.items():
                cap = min(cap, lim(q, n.resources.get(r, 0.0)))
        if c.max_per_node is not None:
            cap = min(cap, c.max_per_node)
        return max(cap, 0)

    def stream_pairs(self):
        """(ku, kd, E_t) for every stream u -> d (distinct downstream pair) of every topology,
        by group index (network: one group per component)."""
        index = {(g.ti, g.comp.id): k for k, g in enumerate(self.groups)}
        for ti, t in self.topos:
            e_t = float(t.executor_count)
            for u, downs in rates.downstream(t).items():
                for d in downs:
                    yield index[(ti, u)], index[(ti, d)], e_t

    def worker_cap(self, g: Group, ni: int) -> int:
        cap = self.node_cap(g, ni)
        c = g.comp
        if self.ras and c.memory_onheap_mb > 0:
            cap = min(cap, int(math.floor(g.topo.max_heap_mb / c.memory_onheap_mb + EPS)))
        if c.id in c.incompatible:
            cap = min(cap, 1)
        if self.problem == "traffic":
            cap = min(cap, self.M[g.ti])
        return max(cap, 0)

    # --- symmetry --------------------------------------------------------------------------
    def _node_classes(self) -> list[list[int]]:
        """Nodes that every constraint and objective treats alike (same rack, capacities,
        slot count, site, pin membership), as lists of node indices with >= 2 members."""
        pins = [set(c.nodes) for _, t in self.topos for c in t.components if c.nodes is not None]
        cls: dict[Any, list[int]] = {}
        for ni, n in enumerate(self.nodes):
            key = (self.node_rack[ni], n.cpu, n.memory_mb if self.ras else 0, len(n.slots),
                   tuple(sorted(n.resources.items())) if self.ras else (), n.site, tuple(n.id in p for p in pins))
            cls.setdefault(key, []).append(ni)
        return [v for v in cls.values() if len(v) > 1]

    def _hint_counts(self, plan: Plan) -> dict[tuple[int, int], int]:
        """x[g,w] of a plan, permuted into the canonical order the symmetry rows demand."""
        gidx = {(g.topo.id, g.comp.id, i): k for k, g in enumerate(self.groups) for i in g.members}
        widx = {(self.nodes[ni].id, p): wi for wi, (ni, p) in enumerate(self.workers)}
        hx: dict[tuple[int, int], int] = defaultdict(int)
        for pl in plan.placements:
            k = gidx.get((pl.topology, pl.component, pl.executor))
            w = widx.get((pl.node, pl.slot))
            if k is not None and w is not None:
                hx[(k, w)] += 1
        if not self.symmetry:
            return dict(hx)
        wtot = defaultdict(int)
        for (k, w), v in hx.items():
            wtot[w] += v
        # identical nodes: heaviest first (node contents move with the node, slot by slot)
        node_map = {ni: ni for ni in range(len(self.nodes))}
        for cls in self.node_classes:
            order = sorted(cls, key=lambda ni: -sum(wtot[w] for w in self.node_workers[ni]))
            for dst, src in zip(cls, order):
                node_map[src] = dst
        wmap: dict[int, int] = {}
        for src_n, dst_n in node_map.items():
            src_ws = sorted(self.node_workers[src_n], key=lambda w: -wtot[w])  # heaviest slot first
            for dst_w, src_w in zip(self.node_workers[dst_n], src_ws):
                wmap[src_w] = dst_w
        return {(k, wmap[w]): v for (k, w), v in hx.items()}

    # --- the model -------------------------------------------------------------------------
    def _build(self) -> None:
        m, G, W = self.m, self.groups, self.workers
        hx = self.hx
        optional = self.problem == "admission"
        need_owner = len(self.topos) > 1 or self.problem == "traffic"
        # indices by topology and by worker: Storm's largeCluster03 (792 groups, 50 topologies,
        # 960 workers) spent most of 53 s scanning every group for each worker and topology
        topo_groups: dict[int, list[int]] = defaultdict(list)
        for k, g in enumerate(G):
            topo_groups[g.ti].append(k)
        hint_owner: set[tuple[int, int]] = set()
        if hx is not None:
            hint_owner = {(G[k].ti, wi) for (k, wi), v in hx.items() if v}
        for ti, t in self.topos:
            if optional:
                placed = None if hx is None else int(any(o[0] == ti for o in hint_owner))
                self.a[ti] = m.var(f"a[{t.id}]", 0, 1, placed)
            if need_owner:
                for wi in range(len(W)):
                    own = None if hx is None else int((ti, wi) in hint_owner)
                    self.o[(ti, wi)] = m.var(f"o[{t.id},{wi}]", 0, 1, own)
        # x, y, z and "every executor placed"
        self.worker_groups: list[list[int]] = [[] for _ in W]  # groups k with a variable x[k,w]
        for k, g in enumerate(G):
            self._check_clock()
            caps = [self.worker_cap(g, ni) for ni in range(len(self.nodes))]
            for wi, (ni, _) in enumerate(W):
                ub = caps[ni]
                if ub > 0:
                    self.x[(k, wi)] = m.var(f"x[{g.label},{wi}]", 0, ub, None if hx is None else hx.get((k, wi), 0))
                    self.worker_groups[wi].append(k)
            for ni in range(len(self.nodes)):
                ws = [self.x[(k, wi)] for wi in self.node_workers[ni] if (k, wi) in self.x]
                ub = min(self.node_cap(g, ni), caps[ni] * len(ws))
                if ub > 0:
                    hv = None if hx is None else sum(hx.get((k, wi), 0) for wi in self.node_workers[ni])
                    self.y[(k, ni)] = v = m.var(f"y[{g.label},{self.nodes[ni].id}]", 0, ub, hv)
                    m.add({v: 1.0, **{x: -1.0 for x in ws}}, 0.0, 0.0, family="definition")
            if len(self.racks) > 1:
                for ri in range(len(self.racks)):
                    ys = [self.y[(k, ni)] for ni in range(len(self.nodes)) if self.node_rack[ni] == ri and (k, ni) in self.y]
                    ub = min(g.size, sum(m.vars[v].ub for v in ys))
                    if ub > 0:
                        hv = None if hx is None else sum(hx.get((k, wi), 0) for wi, (ni, _) in enumerate(W) if self.node_rack[ni] == ri)
                        self.z[(k, ri)] = v = m.var(f"z[{g.label},{self.racks[ri]}]", 0, ub, hv)
                        m.add({v: 1.0, **{y: -1.0 for y in ys}}, 0.0, 0.0, family="definition")
            row = {self.x[(k, wi)]: 1.0 for wi in range(len(W)) if (k, wi) in self.x}
            if optional:
                row[self.a[g.ti]] = -float(g.size)
                m.add(row, 0.0, 0.0, family="all_placed")
            else:
                m.add(row, float(g.size), float(g.size), family="all_placed")
        # node resources
        for ni, n in enumerate(self.nodes):
            ks = [k for k in range(len(G)) if (k, ni) in self.y]
            if not ks:
                continue
            m.add({self.y[(k, ni)]: G[k].comp.cpu for k in ks}, hi=n.cpu, family="cpu")
            if self.ras:
                m.add({self.y[(k, ni)]: G[k].comp.memory_mb for k in ks}, hi=n.memory_mb, family="memory")
                for r in sorted({r for k in ks for r in G[k].comp.resources}):
                    m.add({self.y[(k, ni)]: G[k].comp.resources.get(r, 0.0) for k in ks}, hi=n.resources.get(r, 0.0),
                          family="resources")
            # max per node over the groups of one component
            by_comp: dict[tuple[int, str], list[int]] = defaultdict(list)
            for k in ks:
                by_comp[(G[k].ti, G[k].comp.id)].append(k)
            for (ti, cid), kk in by_comp.items():
                lim = G[kk[0]].comp.max_per_node
                if lim is not None and len(kk) > 1:
                    m.add({self.y[(k, ni)]: 1.0 for k in kk}, hi=float(lim), family="placement")
        # workers: heap, ownership, incompatibility, traffic structure
        clashes = {ti: _clashes(t) for ti, t in self.topos}
        for wi, (ni, _) in enumerate(W):
            self._check_clock()
            here = set(self.worker_groups[wi])
            for ti, t in self.topos:
                ks = [k for k in topo_groups[ti] if k in here]
                if not ks:
                    if (ti, wi) in self.o:
                        m.add({self.o[(ti, wi)]: 1.0}, hi=0.0, family="definition")
                    continue
                if self.ras and any(G[k].comp.memory_onheap_mb > 0 for k in ks):
                    m.add({self.x[(k, wi)]: G[k].comp.memory_onheap_mb for k in ks}, hi=t.max_heap_mb, family="heap")
                if (ti, wi) in self.o:
                    ov = self.o[(ti, wi)]
                    for k in ks:
                        xv = self.x[(k, wi)]
                        m.add({xv: 1.0, ov: -float(m.vars[xv].ub)}, hi=0.0, family="definition")
                    if self.problem == "traffic":
                        tot = {self.x[(k, wi)]: 1.0 for k in ks}
                        m.add({**tot, ov: -1.0}, lo=0.0, family="definition")
                        m.add({**tot, ov: -float(self.M[ti])}, hi=0.0, family="max_per_worker")
                if clashes[ti]:
                    self._incompatible(t, wi, ks, clashes[ti])
            owners = [self.o[(ti, wi)] for ti, _ in self.topos if (ti, wi) in self.o]
            if len(owners) > 1:
                m.add({v: 1.0 for v in owners}, hi=1.0, family="slots")
        if self.problem == "traffic":
            for ti, t in self.topos:
                m.add({self.o[(ti, wi)]: 1.0 for wi in range(len(W))}, float(self.S[ti]), float(self.S[ti]), family="worker_count")
        if self.symmetry:
            self._break_symmetry()

    def _check_clock(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _BuildStopped

    def _incompatible(self, t: Topology, wi: int, ks: list[int], clashes: set[tuple[str, str]]) -> None:
        """Rows keeping apart, on worker wi, the components of ``t`` that ``clashes`` names
        (pairs (c, d) with c <= d; (c, c): at most one executor of c)."""
        m, G = self.m, self.groups
        by_comp: dict[str, list[int]] = defaultdict(list)
        for k in ks:
            by_comp[G[k].comp.id].append(k)
        comps = sorted(by_comp)
        used: dict[str, int] = {}

        def used_var(cid: str) -> int:
            if cid not in used:
                xs = [self.x[(k, wi)] for k in by_comp[cid]]
                hv = None if self.hx is None else int(any(self.hx.get((k, wi), 0) for k in by_comp[cid]))
                b = m.var(f"b[{t.id}/{cid},{wi}]", 0, 1, hv)
                ub = sum(m.vars[v].ub for v in xs)
                m.add({**{v: 1.0 for v in xs}, b: -float(ub)}, hi=0.0, family="definition")
                used[cid] = b
            return used[cid]

        for i, c in enumerate(comps):
            if (c, c) in clashes and len(by_comp[c]) > 1:
                m.add({self.x[(k, wi)]: 1.0 for k in by_comp[c]}, hi=1.0, family="placement")
            for d in comps[i + 1:]:
                if (c, d) in clashes:
                    m.add({used_var(c): 1.0, used_var(d): 1.0}, hi=1.0, family="placement")

    def worker_total(self, wi: int) -> dict[int, float]:
        return {self.x[(k, wi)]: 1.0 for k in self.worker_groups[wi]}

    def _break_symmetry(self) -> None:
        """Slots of a node are interchangeable: executor totals do not increase along the
        port list. Identical nodes (same rack, capacities, slots, site, pins) likewise, by the
        node's executor total."""
        m = self.m
        for ni, ws in enumerate(self.node_workers):
            for w1, w2 in zip(ws, ws[1:]):
                row = self.worker_total(w1)
                for v, c in self.worker_total(w2).items():
                    row[v] = row.get(v, 0.0) - c
                if row:
                    m.add(row, lo=0.0, family="symmetry")
        for cls in self.node_classes:
            for n1, n2 in zip(cls, cls[1:]):
                row: dict[int, float] = {}
                for k in range(len(self.groups)):
                    if (k, n1) in self.y:
                        row[self.y[(k, n1)]] = row.get(self.y[(k, n1)], 0.0) + 1.0
                    if (k, n2) in self.y:
                        row[self.y[(k, n2)]] = row.get(self.y[(k, n2)], 0.0) - 1.0
                if row:
                    m.add(row, lo=0.0, family="symmetry")

    # --- reading a solution ----------------------------------------------------------------
    def plan(self, values: list[int]) -> Plan:
        """Executor indices of each group dealt to the workers in order of the counts."""
        out: list[Placement] = []
        for k, g in enumerate(self.groups):
            members = iter(g.members)
            for wi, (ni, port) in enumerate(self.workers):
                v = self.x.get((k, wi))
                if v is None:
                    continue
                for _ in range(values[v]):
                    out.append(Placement(topology=g.topo.id, component=g.comp.id, executor=next(members),
                                         node=self.nodes[ni].id, slot=port))
        return Plan(placements=out)

    def admitted(self, values: list[int]) -> list[str]:
        return [t.id for ti, t in self.topos if ti in self.a and values[self.a[ti]] == 1]


# --- running a model --------------------------------------------------------------------------

@dataclass
class Run:
    """What the three methods share: the backend, the clock, the options."""

    instance: Instance
    problem: str
    method: str
    time_limit: float | None
    threads: int | None
    hint: str | None
    symmetry: bool
    seed: int
    model: str = "auto"  # "auto": configuration model where it applies; "compact": never
    t0: float = field(default_factory=time.monotonic)
    notes: list[str] = field(default_factory=list)
    _hint: tuple = field(default=(), repr=False)  # hint_plan's answer, once asked: (plan or None,)
    floor: float = 0.0  # a bound of the metric known without a model (network: ``network.count_bound``)
    floor_from: str = "the metric's floor 0"
    start_source: str = ""  # the method whose plan start_plan returned
    # network's topology search sets these on its whole sub-solves (network._replace_topology):
    # the whole solve's worker and node cuts of the sub-instance's one topology, as
    # ((key, (cut, proven)), ...) with network._worker_cuts' keys
    known_cut: tuple = ()
    sub_solve: bool = False

    @property
    def backend(self) -> str:
        return BACKENDS[self.method]

    def remaining(self) -> float | None:
        if self.time_limit is None:
            return None
        return max(self.time_limit - (time.monotonic() - self.t0), 0.05)

    def deadline(self, share: float = 1.0) -> float | None:
        """The monotonic time by which (a ``share`` of) the method's work must end; model
        building counts."""
        return None if self.time_limit is None else self.t0 + share * self.time_limit

    def compact_affordable(self, pm: "PlacementModel", streams: int) -> bool:
        """Whether the time left can build the compact model (about 20,000 product terms a
        second here) and still solve; without a limit, always."""
        if self.time_limit is None:
            return True
        left = self.time_limit - (time.monotonic() - self.t0)
        terms = streams * (len(pm.workers) + len(pm.nodes) + len(pm.racks)) + len(pm.groups) * len(pm.workers)
        return left > 0.2 + 2.0 * terms / 20000.0

    def past(self, share: float) -> bool:
        """Whether ``share`` of the time limit is spent (never without a limit)."""
        return self.time_limit is not None and time.monotonic() >= self.deadline(share)

    def expired(self) -> bool:
        return self.past(1.0)

    @property
    def pattern_off(self) -> bool:
        return self.model == "compact"

    def pattern_result(self, out: dict, plan: Plan | None, bound: float | None, details: dict) -> Result:
        """A Result from the configuration model's outcome (status optimal only when proven)."""
        d = {"backend": self.backend, **details}
        msg = "; ".join(self.notes)
        if plan is not None and out["status"] in ("optimal", "feasible", "unknown"):
            st = Status.OPTIMAL if out["status"] == "optimal" else Status.FEASIBLE
            if st == Status.FEASIBLE:
                msg = "; ".join(x for x in (msg, "time limit reached: best plan so far, optimality not proven") if x)
                bound = self.floor_bound(bound, d)
            return Result(problem=self.problem, method=self.method, status=st, plan=plan, bound=bound, message=msg, details=d)
        return Result(problem=self.problem, method=self.method, status=Status.UNKNOWN,
                      message="; ".join(x for x in (msg, "time limit reached before a plan was found") if x), details=d)

    def floor_bound(self, bound: float | None, details: dict) -> float | None:
        """A stopped solve's bound, or, when no model got as far as one (a short time limit ends
        the configuration model's column generation and leaves the compact model too little
        time), or when a stopped MILP's dual bound is still below it, the floor of the problem's
        metric: network and traffic minimise costs that are never negative, so 0 is a valid
        bound (gap 1), or ``floor`` when the solve knows a higher one without a model (network:
        ``network.count_bound``, since session 24). Named in details ``bound_from``."""
        if self.problem in ("network", "traffic") and (bound is None or bound < max(0.0, self.floor)):
            details["bound_from"] = f"{self.floor_from} (no model reached a higher bound before the time limit)"
            return max(0.0, self.floor)
        return bound

    def configuration_plan_kept(self, plan: Plan, bound: float | None, details: dict, compact: dict,
                                compact_bound: float | None = None, source: str | None = None) -> Result:
        """The configuration model's ``plan`` (or, with ``source`` naming it, the compact model's
        start plan) as a feasible result, when the compact model after it gave none (stopped, or
        its CBC process died: said in the message, ``cbc_died`` kept from the compact solve's
        details ``compact``). Its bound: the better (higher, minimisation) of ``bound`` and the
        stopped compact model's ``compact_bound``."""
        died = compact.get("cbc_died")
        what = source or "the configuration model's plan"
        if died:
            self.notes.append(f"the compact model's CBC process died (a CBC fault); {what} is kept")
        elif source:
            self.notes.append(f"the compact model found no plan; {what} is kept")
        res = self.pattern_result({"status": "feasible"}, plan, bound=bound,
                                  details={**details, **({"cbc_died": died} if died else {})})
        return self.merge_bound(res, compact_bound, "compact model")

    def compact_unaffordable(self, plan: Plan | None, bound: float | None, details: dict,
                             source: str | None = None) -> Result:
        """The compact model is too large to build in the time left (``compact_affordable``):
        ``plan`` (the configuration model's, or the one ``source`` names) kept as feasible with
        ``bound``, else unknown; the model is not built."""
        why = "the compact model is too large to build in the time left"
        if plan is not None:
            if source:
                self.notes.append(f"{why}; {source} is kept")
            else:
                self.notes.append(why)
            return self.pattern_result({"status": "feasible"}, plan, bound=bound, details=details)
        return Result(problem=self.problem, method=self.method, status=Status.UNKNOWN,
                      message="; ".join(self.notes + [why + ", and no plan was found before"]),
                      details={"backend": self.backend, **details})

    def configuration_infeasible(self, details: dict) -> Result:
        """Infeasible, proven by the configuration model's LP (phase 1), when the compact model
        that would explain it is too large to build in the time left."""
        return Result(problem=self.problem, method=self.method, status=Status.INFEASIBLE,
                      details={"backend": self.backend, **details},
                      message="; ".join(self.notes + ["proven infeasible by the configuration model's LP; the compact "
                                                      "model, which would explain it, is too large to build in the time left"]))

    def merge_bound(self, res: Result, bound: float | None, source: str = "configuration model") -> Result:
        """A feasible result keeps the better (higher, minimisation) of its bound and ``bound``
        (from ``source``, then named in details ``bound_from``)."""
        if res.status == Status.FEASIBLE and bound is not None and (res.bound is None or bound > res.bound):
            res.bound = bound
            res.details["bound_from"] = source
        return res

    def heuristic_plan(self, method: str) -> Plan | None:
        """A quick start plan (judged by the evaluator), or None; not a user-visible hint."""
        from planner.api import solve

        lim = self.remaining()
        try:
            res = solve(self.instance, self.problem, method, seed=self.seed,
                        time_limit=None if lim is None else max(lim / 4, 0.1))
        except Exception:  # noqa: BLE001 - a start plan is optional
            return None
        return res.plan if res.ok and res.plan is not None else None

    def start_plan(self, default: str) -> Plan | None:
        """The start plan of a solve: the hint's (``hint_plan``, half the time left) when a hint
        is given, else the quick plan of heuristic ``default``; when that plan does not place
        every executor (none, or admission's partial one), the alignment packing's
        (``_alignpack``), if it does and passes the evaluator. None when neither has one;
        ``start_source`` names where the plan came from."""
        plan = self.hint_plan() if self.hint else self.heuristic_plan(default)
        self.start_source = self.hint or default
        if plan is not None and _places_all(self.instance, plan):
            return plan
        packed = self.packed_plan()
        if packed is None:
            return plan
        self.notes.append(f"start plan by alignment packing ({self.start_source} placed "
                          + ("nothing" if plan is None else "only part") + ")")
        self.start_source = "alignment packing"
        return packed

    def packed_plan(self) -> Plan | None:
        """``alignment_pack``'s plan (within a tenth of the time left), with the locality rule
        first and without it when that fails, when the evaluator passes it for this problem;
        None otherwise."""
        from planner.evaluate import evaluate

        from ._alignpack import alignment_pack

        lim = self.remaining()
        deadline = None if lim is None else time.monotonic() + lim / 10
        for locality in (True, False):
            plan, _ = alignment_pack(self.instance, deadline, locality)
            if plan is not None and evaluate(self.instance, plan, self.problem)["feasible"]:
                return plan
            if deadline is not None and time.monotonic() > deadline:
                break
        return None

    def hint_plan(self, share: float = 0.5) -> Plan | None:
        """The plan of method ``hint`` for the same problem, when it passes the evaluator.

        Solved once per run with ``share`` of the time left (network: half, its first
        incumbent; traffic asks for a quarter, the hint being one start of its seeding search
        among several); a second call (traffic's compact fall-back after branch and price,
        network's model after its rack search) returns the same answer instead of solving
        again with the share of what is left (a slow hint method took 1/2 + 1/4 of the limit)."""
        if not self.hint:
            return None
        if self._hint:
            return self._hint[0]
        from planner.api import solve  # the front door judges the plan; no solver internals

        lim = self.remaining()
        res = solve(self.instance, self.problem, self.hint, time_limit=None if lim is None else max(share * lim, 0.1), seed=self.seed)
        if res.ok and res.plan is not None:
            self.notes.append(f"hint from {self.hint} (objective {res.objective:g})")
            self._hint = (res.plan,)
            return res.plan
        self.notes.append(f"hint {self.hint} gave no feasible plan ({res.status.value}); solved without it")
        self._hint = (None,)
        return None

    def quick_infeasible(self, pm: PlacementModel) -> Result | None:
        """An INFEASIBLE Result when counting alone proves that no plan exists
        (``count_reasons``), before any model is built; None otherwise (and always for
        ``admission``, where the empty admission is a plan). Storm's largeCluster03 as imported
        has a bolt no node's memory holds: the network solve spent its whole time limit and
        more building models before (session 24)."""
        if self.problem == "admission":
            return None
        reasons = count_reasons(self, pm)
        if not reasons:
            return None
        return Result(problem=self.problem, method=self.method, status=Status.INFEASIBLE,
                      message="; ".join(self.notes + ["proven infeasible (by counting, before any model): " + "; ".join(reasons)]),
                      details={"backend": self.backend, "proof": "counting"})

    def compact_model(self, groups: list[Group], sense: str, hint: Plan | None,
                      objective: Callable[[PlacementModel], None] | None = None) -> PlacementModel:
        """The compact model of this run's problem, built until the run's deadline and seeded
        with ``hint``; ``objective`` then sets its objective (and any rows that go with it),
        unless the clock stopped the build: a stopped model is not solved (``solve``)."""
        pm = PlacementModel(self.instance, self.problem, groups, sense=sense, symmetry=self.symmetry, hint_plan=hint,
                            deadline=self.deadline())
        if objective is not None and not pm.stopped:
            objective(pm)
        return pm

    def solve(self, pm: PlacementModel) -> Solution:
        if pm.stopped or self.expired():  # building used the whole budget: do not start the solver
            return Solution("unknown", message="time limit reached while building the model")
        # the deadline cuts the limit to what is left (``gap.time_left``)
        return solve_model(pm.m, self.backend, self.time_limit, self.threads, use_hint=True, seed=self.seed,
                           deadline=self.deadline())

    def result(self, pm: PlacementModel, sol: Solution, plan: Plan | None = None, details: dict | None = None) -> Result:
        """A Result in the problem's units; infeasible models get an explanation."""
        d = {"backend": self.backend, "variables": len(pm.m.vars), "rows": len(pm.m.rows), **sol.details, **(details or {})}
        msg = "; ".join(self.notes + ([sol.message] if sol.message else []))
        if sol.status in ("optimal", "feasible"):
            plan = plan or pm.plan(sol.values)
            st = Status.OPTIMAL if sol.status == "optimal" else Status.FEASIBLE
            bound = sol.bound
            if st == Status.FEASIBLE:
                msg = "; ".join(x for x in (msg, "time limit reached: best plan so far, optimality not proven") if x)
                bound = self.floor_bound(bound, d)
            return Result(problem=self.problem, method=self.method, status=st, plan=plan, bound=bound,
                          message=msg, details=d)
        if sol.status == "infeasible":
            why = explain_infeasible(self, pm)
            return Result(problem=self.problem, method=self.method, status=Status.INFEASIBLE,
                          message="; ".join(x for x in (msg, "proven infeasible: " + why) if x), details=d)
        if sol.status == "unknown":
            return Result(problem=self.problem, method=self.method, status=Status.UNKNOWN, bound=sol.bound,
                          message=msg or "stopped", details=d)
        return Result(problem=self.problem, method=self.method, status=Status.ERROR, message=msg or "solver error", details=d)


def explain_infeasible(run: Run, pm: PlacementModel) -> str:
    """Why no plan exists: a resource that is short in total (``count_reasons``), or the
    constraint family whose removal alone makes the model feasible (checked with short CP-SAT
    solves)."""
    reasons = count_reasons(run, pm)
    if reasons:
        return "; ".join(reasons)
    return _culprit_families(pm)


def node_kinds(pm: PlacementModel) -> list[list[int]]:
    """The nodes in groups alike in every limit a cap reads (CPU, memory, resources, site,
    having slots; each node its own when any component is pinned to nodes): one cap per group
    and kind instead of per node (80 identical nodes in Storm's largeCluster03). Made once per
    model (its nodes and groups are fixed when it is made) and shared by every caller, who
    only read it: rack_limits asked it once per rack, about 10 ms each on largeCluster01's
    65,600 nodes."""
    cached = pm.__dict__.get("_node_kinds")
    if cached is not None:
        return cached
    pinned = any(g.comp.nodes is not None for g in pm.groups)
    kinds: dict[Any, list[int]] = {}
    for ni, n in enumerate(pm.nodes):
        key = (n.cpu, n.memory_mb, tuple(sorted(n.resources.items())), n.site, bool(n.slots), n.id if pinned else None)
        kinds.setdefault(key, []).append(ni)
    out = list(kinds.values())
    pm.__dict__["_node_kinds"] = out
    return out


def count_reasons(run: Run, pm: PlacementModel) -> list[str]:
    """The reasons no plan can exist that counting alone shows (each is a necessary condition
    of a plan that fails): a group no node can hold one executor of, a total demand above the
    cluster's capacity, more heap workers than slots, a group whose caps sum below its size.
    ``admission`` only gets the first kind (its topologies are optional). Milliseconds, no
    model: ``Run.quick_infeasible`` asks before building any."""
    G = pm.groups
    reasons: list[str] = []
    reps = [(nis[0], len(nis), sum(len(pm.nodes[ni].slots) for ni in nis)) for nis in node_kinds(pm)]
    ncaps = [[pm.node_cap(g, ni) for ni, _, _ in reps] for g in G]
    wcaps = [[pm.worker_cap(g, ni) for ni, _, _ in reps] for g in G]
    for k, g in enumerate(G):
        if max(wcaps[k], default=0) == 0:
            reasons.append(f"no node can hold one executor of {g.label} (CPU {g.comp.cpu:g}, memory {g.comp.memory_mb:g} MB, "
                           f"on-heap {g.comp.memory_onheap_mb:g} MB vs max heap {g.topo.max_heap_mb:g} MB, pins): "
                           + _no_node_because(pm, g))
    optional = run.problem == "admission"
    if not optional:
        slots = [n for n in pm.nodes if n.slots]
        for label, need, have in (
            ("CPU", sum(g.comp.cpu * g.size for g in G), sum(n.cpu for n in slots)),
            ("memory (MB)", sum(g.comp.memory_mb * g.size for g in G) if pm.ras else 0.0, sum(n.memory_mb for n in slots)),
        ):
            if need > have + 1e-9:
                reasons.append(f"total {label} demand {need:g} > capacity {have:g}")
        if pm.ras:
            for r in sorted({r for g in G for r in g.comp.resources}):
                need = sum(g.comp.resources.get(r, 0.0) * g.size for g in G)
                have = sum(n.resources.get(r, 0.0) for n in slots)
                if need > have + 1e-9:
                    reasons.append(f"total {r!r} demand {need:g} > capacity {have:g}")
            heap_workers = sum(
                math.ceil(sum(c.memory_onheap_mb * c.parallelism for c in t.components) / t.max_heap_mb - 1e-9)
                if t.max_heap_mb > 0 else 0 for _, t in pm.topos)
            if heap_workers > len(pm.workers):
                reasons.append(f"worker heap: at least {heap_workers} workers needed, {len(pm.workers)} slots exist")
        if run.problem == "traffic" and sum(pm.S.values()) > len(pm.workers):
            reasons.append(f"worker count: topologies need {sum(pm.S.values())} workers, {len(pm.workers)} slots exist")
        if run.problem == "traffic":
            short = _traffic_cpu_short(pm, slots)
            if short:
                reasons.append(short)
        for k, g in enumerate(G):
            cap_n = sum(c * nn for c, (_, nn, _) in zip(ncaps[k], reps))
            cap_w = sum(c * ns for c, (_, _, ns) in zip(wcaps[k], reps))
            if min(cap_n, cap_w) < g.size and max(wcaps[k], default=0) > 0:
                reasons.append(f"{g.label}: {g.size} executors but pins/max_per_node/incompatibility/limits allow at most {min(cap_n, cap_w)}")
    return reasons


def _traffic_cpu_short(pm: PlacementModel, nodes: list) -> str | None:
    """traffic's worker count, counted: a topology runs on exactly S = min(W, E) workers, so on
    at most S nodes, and its executors' CPU must fit in the S largest nodes' CPU. Storm's three
    real clusters fail this for 2-27 topologies (one with 1 worker asks 2,010,900 points of
    nodes of at most 3,600); the exact solves ran out their limit and answered unknown there."""
    caps = sorted((n.cpu for n in nodes), reverse=True)
    need: dict[int, float] = defaultdict(float)
    for g in pm.groups:
        need[g.ti] += g.comp.cpu * g.size
    short = []
    for ti, t in pm.topos:
        have = sum(caps[:pm.S[ti]])
        if need[ti] > have + EPS * max(1.0, have):
            short.append((t.id, pm.S[ti], need[ti], have))
    if not short:
        return None
    tid, s, need0, have0 = short[0]
    more = "" if len(short) == 1 else (f" (and {len(short) - 1} more topologies likewise: "
                                       + ", ".join(x[0] for x in short[1:6]) + (", ..." if len(short) > 6 else "") + ")")
    return (f"worker count: topology {tid} runs on exactly min(W, E) = {s} worker(s), so on at most {s} node(s), "
            f"whose CPU is at most {have0:g}; its executors ask {need0:g}{more}")


def _no_node_because(pm: PlacementModel, g: Group) -> str:
    """Which of its limits no node with slots meets for one executor of g (or that each is met
    by some node, but never all by one)."""
    c = g.comp
    nodes = [n for n in pm.nodes if n.slots]
    if not nodes:
        return "no node has a worker slot"
    why = []
    if c.site is not None and not any(n.site == c.site for n in nodes):
        why.append(f"no node at site {c.site!r}")
    if c.nodes is not None and not any(n.id in c.nodes for n in nodes):
        why.append("no node with slots among its pinned nodes")
    if c.cpu > max(n.cpu for n in nodes) + EPS:
        why.append(f"CPU {c.cpu:g} > the most any node has, {max(n.cpu for n in nodes):g}")
    if pm.ras:
        if c.memory_mb > max(n.memory_mb for n in nodes) + EPS:
            why.append(f"memory {c.memory_mb:g} MB > the most any node has, {max(n.memory_mb for n in nodes):g} MB")
        if c.memory_onheap_mb > g.topo.max_heap_mb + EPS:
            why.append(f"on-heap {c.memory_onheap_mb:g} MB > the topology's max heap {g.topo.max_heap_mb:g} MB")
        for r, q in sorted(c.resources.items()):
            have = max(n.resources.get(r, 0.0) for n in nodes)
            if q > have + EPS:
                why.append(f"{r!r} {q:g} > the most any node has, {have:g}")
    return "; ".join(why) if why else "each limit is met by some node, but no node meets them all"


def _culprit_families(pm: PlacementModel) -> str:
    """No single count explains it: which constraint family, dropped alone, restores feasibility?"""
    families = sorted({r.family for r in pm.m.rows} - {"definition", "linearisation", "symmetry", "all_placed"})
    culprits = []
    for f in families:
        sub = pm.m.without({f})
        sub.objective, sub.obj_const = {}, 0.0
        s = solve_model(sub, "cpsat", time_limit=2.0, threads=1)
        if s.status in ("optimal", "feasible"):
            culprits.append(f)
    if culprits:
        names = {"cpu": "node CPU", "memory": "node memory", "heap": "worker heap (max_heap_mb)", "resources": "generic resources",
                 "slots": "one topology per worker (slots)", "placement": "placement constraints",
                 "worker_count": "exactly min(W, E) workers", "max_per_worker": "at most M(alpha) executors per worker"}
        return "no plan satisfies the limits together; dropping any one of {" + ", ".join(names.get(c, c) for c in culprits) + \
            "} alone makes a plan possible"
    return "the limits together leave no plan (no single constraint family is to blame)"


def method_runner(problem_fn: Callable[[Run], Result]) -> Callable:
    """Wrap a problem function as a registered method body (options checked by the API)."""

    def make(method: str) -> Callable:
        def run(instance: Instance, problem: str, *, time_limit=None, seed=0, hint=None, symmetry=True, threads=None,
                model="auto") -> Result:
            if model not in ("auto", "compact"):
                from planner.model import InstanceError

                raise InstanceError("options.model", f"must be 'auto' or 'compact', not {model!r}")
            r = Run(instance, problem, method, time_limit, threads, hint, bool(symmetry), seed, model)
            return problem_fn(r)

        run.__name__ = f"{problem_fn.__name__}_{BACKENDS[method]}"
        run.__doc__ = problem_fn.__doc__
        return run

    return make
