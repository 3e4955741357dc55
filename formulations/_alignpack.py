"""Alignment packing: a start plan for the RAS problems when Storm's RAS finds none.

The exact methods of ``network``, ``feasibility`` and ``admission`` start from storm.ras's plan
(a plan that places everything proves feasibility at once). Storm's strategies place one
topology at a time; on Storm's largeCluster03 with its ackers every one of them fails on
TopologyName00047, whose 135 Bolt-0 executors ask for 12,288 MB each (a fifth of a node) once
the other topologies have spread over the nodes, and the exact models are too large to find a
plan in their time. Packing every executor of every topology at once, large ones first, each on
the node whose free resources it matches best, places all 2,174 executors.

The rule (ours; the matching score is the alignment score of multi-resource packing, Grandl et
al., "Multi-resource packing for cluster schedulers", SIGCOMM 2014, and the dot-product
heuristics of Panigrahy et al., "Heuristics for vector bin packing", Microsoft Research 2011):

* executors in decreasing order of size, size = cpu / mean node cpu + memory / mean node
  memory (on + off heap; topologies in instance order, components by id, executors by index on
  ties);
* each goes to the node, among those it fits, with the largest score
  sum_d (demand_d / capacity_d) x (free_d / capacity_d) over CPU, memory and the generic
  resources it asks for (capacity and free of that node; ties: the first node in rack order);
  with ``locality``, among the nodes where its topology already has a worker with the on-heap
  room, if there are any: on Storm's largeCluster03 with its ackers that uses 327 workers
  instead of 959 and gives a network metric of 962 instead of 1172, but each rule places some
  instances the other does not (of 1,000 random ones in tests/test_alignpack.py's family, 384
  with it, 386 without it, 394 by one or the other), so ``Run.packed_plan`` tries it first and
  then without it;
* on that node it joins a worker of its topology that has the on-heap room and no
  incompatible component (the one with least room left), else it takes the node's lowest free
  port.

It fits when the node has the CPU, memory, generic resources, pins and max-per-node room, and a
worker as above. No backtracking: an executor that fits nowhere ends the packing (None).
"""

from __future__ import annotations

import time

import numpy as np

from heuristics.common import FIT_EPS, ClusterState
from heuristics.storm import could_fit_mask
from planner.model import Instance
from planner.plan import Placement, Plan


def alignment_pack(instance: Instance, deadline: float | None = None, locality: bool = True,
                   rack_of: dict | None = None) -> tuple[Plan | None, str]:
    """Every executor of every topology placed by the rule above: (plan, "") or (None, why).

    ``locality``: the nodes where the executor's topology already has a worker that can take
    it come before the others, whatever their scores. ``deadline`` (a ``time.monotonic()``
    instant) stops the packing with no plan."""
    st = ClusterState(instance)
    N = st.N
    if N == 0:
        return None, "the cluster has no nodes"
    cap_cpu = np.array([n.cpu for n in st.nodes], dtype=float)
    cap_mem = np.array([n.memory_mb for n in st.nodes], dtype=float)
    cap_res = st.res.copy()
    inv_cpu = np.divide(1.0, cap_cpu, out=np.zeros(N), where=cap_cpu > 0)
    inv_mem = np.divide(1.0, cap_mem, out=np.zeros(N), where=cap_mem > 0)
    inv_res = np.divide(1.0, cap_res, out=np.zeros_like(cap_res), where=cap_res > 0)
    mean_cpu = max(float(cap_cpu.mean()), FIT_EPS)
    mean_mem = max(float(cap_mem.mean()), FIT_EPS)

    items = []  # (size, order, topology, req, executor index)
    for t in instance.topologies:
        reqs = st.reqs(t)
        for c in sorted(t.components, key=lambda c: c.id):
            r = reqs[c.id]
            if r.onheap > t.max_heap_mb + FIT_EPS:
                return None, (f"{t.id}/{c.id}: an executor needs {r.onheap:g} MB on-heap, more than the "
                              f"topology's worker max heap {t.max_heap_mb:g} MB")
            for i in range(c.parallelism):
                items.append((r.cpu / mean_cpu + r.mem / mean_mem, len(items), t, r, i))
    items.sort(key=lambda it: (-it[0], it[1]))

    pinned: dict[tuple[str, str], np.ndarray] = {}  # site and node pins, per pinned component
    room: dict[str, np.ndarray] = {}  # per topology: the most on-heap room of its workers per node
    placements: list[Placement] = []
    for k, (_, _, t, r, idx) in enumerate(items):
        if deadline is not None and k % 256 == 0 and time.monotonic() > deadline:
            return None, f"stopped by the time limit after {k} of {len(items)} executors"
        if t.id not in room:
            room[t.id] = np.full(N, -1.0)
        # a pre-filter (storm.ras's: CPU, memory, resources, a free slot or a worker of the
        # topology), narrowed by the on-heap room and the pins; node_fits below decides
        fit = could_fit_mask(st, t.id, r) & ((st.free_slots > 0) | (room[t.id] >= r.onheap - FIT_EPS))
        if r.site is not None or r.nodes is not None:
            pin = pinned.get((t.id, r.id))
            if pin is None:
                pin = pinned[(t.id, r.id)] = np.array([(r.site is None or st.site[i] == r.site)
                                                       and (r.nodes is None or i in r.nodes) for i in range(N)])
            fit &= pin
        if rack_of is not None and (want := rack_of.get((t.id, r.id, idx))) is not None:
            fit &= st.node_rack == want
        cand = np.flatnonzero(fit)
        if cand.size == 0:
            return None, f"no node has room for {t.id}/{r.id}[{idx}] (placed {k} of {len(items)} executors)"
        score = r.cpu * inv_cpu[cand] * st.cpu[cand] * inv_cpu[cand] + r.mem * inv_mem[cand] * st.mem[cand] * inv_mem[cand]
        if r.res is not None:
            score = score + ((r.res * inv_res[cand]) * (st.res[cand] * inv_res[cand])).sum(axis=1)
        # nodes where the topology has a worker with the on-heap room first (with ``locality``),
        # then by score; equal keys keep rack order (lexsort is stable). A node whose workers
        # all refuse (incompatible) and has no free port gives way to the next.
        keys = (-score, ~(room[t.id][cand] >= r.onheap - FIT_EPS)) if locality else (-score,)
        for i in cand[np.lexsort(keys)]:
            i = int(i)
            port = _worker(st, t.id, r, i, t.max_heap_mb) if st.node_fits(t.id, r, i) else None
            if port is not None:
                break
        else:
            return None, f"no worker can take {t.id}/{r.id}[{idx}] (placed {k} of {len(items)} executors)"
        st.assign(t.id, r, idx, i, port)
        room[t.id][i] = max(t.max_heap_mb - st.heap[(i, p)] for p in _ports(st, t.id, i))
        placements.append(Placement(topology=t.id, component=r.id, executor=idx, node=st.node_ids[i], slot=port))
    return Plan(placements=placements), ""


def _ports(st: ClusterState, tid: str, i: int) -> list[int]:
    """The ports of node i that topology ``tid``'s workers hold."""
    return [p for p in st.ports[i] if st.owner.get((i, p)) == tid]


def _worker(st: ClusterState, tid: str, r, i: int, max_heap: float) -> int | None:
    """The port on node i for one executor: the topology's worker there with the least on-heap
    room that still takes it, else the lowest free port; None when neither exists."""
    best = None
    for p in _ports(st, tid, i):
        if st.slot_fits(tid, r, i, p, max_heap):
            left = max_heap - st.heap[(i, p)]
            if best is None or left < best[0]:
                best = (left, p)
    if best is not None:
        return best[1]
    if st.free_slots[i] > 0:
        return min(p for p in st.ports[i] if (i, p) not in st.owner)
    return None
