"""Instance generators: reproducible families of instances for batch studies.

``planner generate KIND --count N --seed S --out DIR [--param KEY=VALUE ...]`` writes N
instance files; :func:`generate` does the same in Python. Every instance records
``meta = {generator, params, seed, index, problems}``: the generator's name, the parameters
it used (defaults filled in), the batch seed and the instance's index, so that
``generate(kind, ..., seed)`` re-creates it exactly. Instance ``i`` of a batch draws from its
own random stream seeded by ``(kind, seed, i)``, so adding instances never changes earlier ones.

Kinds (see docs/batch.md for the distributions):

* ``ras-random``: the RAS document's random protocol as ../shared/ALGORITHMS.md states it;
  instances without a feasible placement are dropped (decided by ``exact.bruteforce`` on the
  ``feasibility`` problem, which stops at the first feasible placement).
* ``micro``: Linear, Diamond and Star topologies (Shukla and Simmhan's shapes, the Storm
  micro-benchmark shapes) on homogeneous or heterogeneous clusters, with input rates, machine
  profiles (throughput) and performance models (slots).
* ``hetero``: Nasiri-style heterogeneous clusters, machine types with per-type profiles, in
  small, medium and large scenarios (throughput).
* ``layered``: random layered DAGs sized by executors and nodes (traffic, network scaling).
* ``shukla-app``: application-sized DAGs of Shukla and Simmhan's five modelled tasks (slots),
  built to the paper's description of its application DAGs (7-15 tasks, DAG selectivity
  1:2-1:4, 50 and 100 tuples/s) on the shipped Azure VM pool.
* ``storm-large``: the real Storm clusters of ../shared/data/storm-largecluster, read with
  ``planner.storm.load_cluster_dir`` (another module; imported lazily).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from .model import Instance, InstanceError, parse_instance

# ---------------------------------------------------------------------------------------------
# plumbing


def _rng(kind: str, seed: int, index: int) -> random.Random:
    """The random stream of instance ``index`` of a ``kind`` batch with ``seed`` (string seeds
    are hashed with SHA-512 by :mod:`random`, so this is stable across runs and platforms)."""
    return random.Random(f"planner.generate/{kind}/{seed}/{index}")


def _check_params(kind: str, given: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise InstanceError(f"params.{unknown[0]}", f"unknown parameter for {kind!r}; known: {', '.join(sorted(defaults))}")
    out = dict(defaults)
    for k, v in given.items():
        d = defaults[k]
        try:
            if isinstance(d, bool):
                v = v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes")
            elif isinstance(d, int) and d is not None:
                if isinstance(v, float) and not v.is_integer():
                    raise ValueError
                v = int(v)
            elif isinstance(d, float):
                v = float(v)
            elif isinstance(d, list) and isinstance(v, str):
                v = [x for x in v.split("|") if x]
            elif isinstance(d, list) and not isinstance(v, (list, tuple)):
                v = [v]  # one value (``-P rates=50`` reaches here as the number 50)
        except (TypeError, ValueError):
            raise InstanceError(f"params.{k}", f"expected a {type(d).__name__}, got {v!r}") from None
        out[k] = v
    return out


def _finish(data: dict[str, Any], kind: str, params: dict[str, Any], seed: int, index: int,
            problems: list[str], **extra: Any) -> Instance:
    data["meta"] = {"generator": kind, "params": params, "seed": seed, "index": index, "problems": problems, **extra}
    return parse_instance(data)


def _rack_layout(n_nodes: int, n_racks: int) -> list[int]:
    """Rack index of each node: nodes dealt round robin over the racks."""
    return [i % max(1, n_racks) for i in range(n_nodes)]


def _cluster(nodes: list[dict[str, Any]], racks: list[int], n_racks: int) -> dict[str, Any]:
    out = [{"id": f"rack-{r}", "nodes": [n for n, rr in zip(nodes, racks) if rr == r]} for r in range(n_racks)]
    return {"racks": [r for r in out if r["nodes"]]}


# ---------------------------------------------------------------------------------------------
# ras-random: the RAS document's random protocol

RAS_DEFAULTS: dict[str, Any] = {
    "max_racks": 3,
    "max_supervisors": 6,
    "max_ports": 2,
    "max_node_cpu": 8000,
    "max_node_memory": 80000,
    "max_heap": 80000,
    "max_executors": 5,
    "max_cpu": 1000,
    "max_memory": 10000,
    # "document": the executor budget is spent by the executors each component takes
    # (ALGORITHMS.md's wording); "storm-code": one unit per component, as Storm's
    # GenRandomTopology does, which allows up to 1+2+...+max_executors executors.
    "executor_budget": "document",
    "feasibility_time_limit": 30.0,
}


def _ras_random(rng: random.Random, p: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One draw of the protocol; returns (instance data, extra meta)."""
    # cluster
    n_racks = rng.randint(1, p["max_racks"])
    sup_left = rng.randint(1, p["max_supervisors"])
    ports_left = rng.randint(0, p["max_ports"])
    cpu_left = rng.randint(0, p["max_node_cpu"])
    mem_left = rng.randint(0, p["max_node_memory"])
    nodes: list[dict[str, Any]] = []
    racks: list[int] = []
    while sup_left > 0 and ports_left > 0 and cpu_left > 0 and mem_left > 0:
        ports = rng.randint(0, ports_left)
        cpu = rng.randint(0, cpu_left)
        mem = rng.randint(0, mem_left)
        nodes.append({"id": f"sup-{len(nodes)}", "slots": ports, "cpu": float(cpu), "memory_mb": float(mem)})
        racks.append(rng.randrange(n_racks))
        sup_left -= 1
        ports_left -= ports
        cpu_left -= cpu
        mem_left -= mem
    max_heap = rng.randint(0, p["max_heap"])
    # topology
    ex_left = rng.randint(1, p["max_executors"])
    cpu_left = rng.randint(1, p["max_cpu"])
    mem_left = rng.randint(1, p["max_memory"])
    comps: list[dict[str, Any]] = []
    spouts: list[str] = []
    bolts: list[str] = []
    while ex_left > 0 and cpu_left > 0 and mem_left > 0:
        k = rng.randint(1, ex_left)
        cpu = rng.randint(1, cpu_left)
        mem = rng.randint(1, mem_left)
        if len(comps) % 2 == 0:
            cid, kind = f"spout-{len(spouts)}", "spout"
            spouts.append(cid)
        else:
            cid, kind = f"bolt-{len(bolts)}", "bolt"
            bolts.append(cid)
        comps.append({"id": cid, "kind": kind, "parallelism": k, "cpu": float(cpu), "memory_onheap_mb": float(mem)})
        ex_left -= k if p["executor_budget"] == "document" else 1
        cpu_left -= cpu
        mem_left -= mem
    streams: list[tuple[str, str]] = []
    if bolts:
        for s in spouts:
            streams.append((s, bolts[rng.randrange(len(bolts))]))
    dropped = 0
    if len(bolts) > 1:
        for i, b in enumerate(bolts):
            while True:
                j = rng.randrange(len(bolts))
                if j != i:
                    break
            # the planner's topologies are acyclic: an edge that would close a cycle is left out
            if _reaches(bolts[j], b, streams):
                dropped += 1
            else:
                streams.append((b, bolts[j]))
    data = {
        "topologies": [{
            "id": "topo",
            "components": comps,
            "streams": [{"source": a, "target": b} for a, b in streams],
            "max_heap_mb": float(max_heap),
        }],
        "cluster": _cluster(nodes, racks, n_racks) if nodes else {"racks": [{"id": "rack-0", "nodes": []}]},
    }
    return data, {"racks_drawn": n_racks, "dropped_cyclic_streams": dropped}


def _reaches(a: str, b: str, edges: list[tuple[str, str]]) -> bool:
    """True when ``b`` is reachable from ``a`` (or a == b) along ``edges``."""
    seen, todo = {a}, [a]
    while todo:
        u = todo.pop()
        if u == b:
            return True
        for x, y in edges:
            if x == u and y not in seen:
                seen.add(y)
                todo.append(y)
    return False


def _ras_feasible(inst: Instance, time_limit: float) -> bool | None:
    """Exact feasibility by exhaustive search (``exact.bruteforce``, problem ``feasibility``):
    True / False, or None when the search could not decide (too large or out of time)."""
    from .api import solve
    from .plan import Status

    res = solve(inst, "feasibility", "exact.bruteforce", time_limit=time_limit)
    if res.status == Status.OPTIMAL:
        return True
    if res.status == Status.INFEASIBLE:
        return False
    return None


def gen_ras_random(count: int, seed: int, **params: Any) -> Iterator[Instance]:
    """The RAS document's random protocol (ALGORITHMS.md, "The document's random protocol").

    Draws are repeated (attempt index 0, 1, 2, ...) until ``count`` feasible instances are
    found; ``meta.index`` is the attempt index, so instance names have gaps where draws were
    dropped. Two points the protocol leaves open are fixed here and recorded in ``meta``:
    supervisors are drawn while every budget is still positive (Storm's GenRandomCluster), and
    a bolt-to-bolt stream that would close a cycle is left out (the planner's topologies are
    DAGs; Storm's generator allows cycles). Racks that received no supervisor are omitted.
    """
    p = _check_params("ras-random", params, RAS_DEFAULTS)
    if p["executor_budget"] not in ("document", "storm-code"):
        raise InstanceError("params.executor_budget", "expected 'document' or 'storm-code'")
    made, attempt = 0, 0
    max_attempts = max(1000, 200 * count)
    while made < count:
        if attempt >= max_attempts:
            raise InstanceError("params", f"ras-random: only {made} feasible instances in {attempt} draws")
        data, extra = _ras_random(_rng("ras-random", seed, attempt), p)
        data["name"] = f"ras-random-s{seed}-{attempt:05d}"
        i = attempt
        attempt += 1
        if not data["cluster"]["racks"][0]["nodes"]:
            continue  # no supervisor at all: nothing can be placed
        try:
            inst = _finish(data, "ras-random", p, seed, i, ["network", "feasibility"], **extra,
                           feasibility="exact.bruteforce")
        except InstanceError:
            continue  # cannot happen with the protocol's ranges; kept as a guard
        if _ras_feasible(inst, p["feasibility_time_limit"]) is True:
            made += 1
            yield inst


# ---------------------------------------------------------------------------------------------
# micro: Linear, Diamond, Star

# Shukla and Simmhan's performance models (ALGORITHMS.md): threads -> (peak rate, CPU %, memory %).
SHUKLA_MODELS: dict[str, list[tuple[int, float | None, float, float]]] = {
    "blob": [(1, 2, 6.73, 23.92), (2, 3, 6.63, 23.98), (20, 10, 14.69, 26.3), (30, 20, 54.18, 28.74), (50, 30, 76.73, 31.38)],
    "table": [(1, 3, 1.02, 1.15), (2, 5, 2.04, 1.15), (10, 10, 11.22, 3.45), (40, 20, 26.53, 9.2), (50, 30, 38.78, 12.64),
              (60, 40, 54.08, 16.09)],
    "parse": [(1, 310, 84.69, 35.63)],
    "pi": [(1, 105, 92.35, 2.07), (2, 110, 94.9, 3.53)],
    "batchwrite": [(1, 60000, 58.27, 11.95), (2, 50000, 51.84, 2.76)],
    "source": [(1, None, 10.0, 15.0)],
    "sink": [(1, None, 10.0, 20.0)],
}

SHAPES: dict[str, list[tuple[str, str]]] = {
    "linear": [("source", "blob"), ("blob", "table"), ("table", "pi"), ("pi", "parse"), ("parse", "batchwrite"),
               ("batchwrite", "sink")],
    "diamond": [("source", "blob"), ("source", "table"), ("source", "parse"), ("source", "batchwrite"), ("blob", "pi"),
                ("table", "pi"), ("parse", "pi"), ("batchwrite", "pi"), ("pi", "sink")],
    # two source-side tasks -> hub -> two sink-side tasks (as the shipped shukla-star instance)
    "star": [("source", "blob"), ("source", "table"), ("blob", "parse"), ("table", "parse"), ("parse", "pi"),
             ("parse", "batchwrite"), ("pi", "sink"), ("batchwrite", "sink")],
}

# machine types for heterogeneous clusters: (CPU points, memory MB, speed factor, price)
MACHINE_TYPES: dict[str, tuple[float, float, float, float]] = {
    "small": (200.0, 4096.0, 1.0, 1.0),
    "medium": (400.0, 8192.0, 1.5, 2.0),
    "large": (800.0, 16384.0, 2.0, 4.0),
}

MICRO_DEFAULTS: dict[str, Any] = {
    "shapes": ["linear", "diamond", "star"],
    "clusters": ["homogeneous", "heterogeneous"],
    "nodes": 4,
    "racks": 2,
    "slots": 4,
    "max_parallelism": 3,
    "rates": [2.0, 5.0, 10.0, 20.0],
}


def gen_micro(count: int, seed: int, **params: Any) -> Iterator[Instance]:
    """Linear, Diamond and Star topologies (ALGORITHMS.md, Shukla and Simmhan) on homogeneous
    or heterogeneous clusters; instance i takes shape ``shapes[i % len]`` and cluster kind
    ``clusters[(i // len(shapes)) % len]`` so that a batch covers every combination.

    Each component carries: parallelism uniform in 1..max_parallelism (source and sink 1), CPU
    uniform in {10, 20, ..., 60} points, on-heap memory uniform in {128, 192, 256} MB; streams
    are shuffle with selectivity 1. Machine profiles: per component a base execution time
    uniform in [0.5, 5] ms per tuple, divided by the machine type's speed factor and jittered
    by +-10 %; overhead uniform in [1, 5] points. Performance models: Shukla's measured ones
    (linear interpolation between modelled thread counts, as the shipped shukla-* instances).
    Input rate: uniform from ``rates``.
    """
    p = _check_params("micro", params, MICRO_DEFAULTS)
    for k, allowed in (("shapes", SHAPES), ("clusters", ("homogeneous", "heterogeneous"))):
        bad = [x for x in p[k] if x not in allowed]
        if bad or not p[k]:
            raise InstanceError(f"params.{k}", f"expected some of {', '.join(allowed)}, got {p[k]!r}")
    for k in ("nodes", "racks", "slots", "max_parallelism"):
        if p[k] < 1:
            raise InstanceError(f"params.{k}", "must be >= 1")
    for i in range(count):
        rng = _rng("micro", seed, i)
        shape = p["shapes"][i % len(p["shapes"])]
        ckind = p["clusters"][(i // len(p["shapes"])) % len(p["clusters"])]
        edges = SHAPES[shape]
        names = list(dict.fromkeys([a for a, _ in edges] + [b for _, b in edges]))
        comps = []
        for c in names:
            par = 1 if c in ("source", "sink") else rng.randint(1, p["max_parallelism"])
            comps.append({"id": c, "kind": "spout" if c == "source" else "bolt", "parallelism": par,
                          "cpu": float(10 * rng.randint(1, 6)), "memory_onheap_mb": float(rng.choice([128, 192, 256]))})
        types = ["medium"] * p["nodes"] if ckind == "homogeneous" else [rng.choice(list(MACHINE_TYPES)) for _ in range(p["nodes"])]
        nodes = []
        for j, ty in enumerate(types):
            cpu, mem, _, price = MACHINE_TYPES[ty]
            nodes.append({"id": f"node-{j}", "slots": p["slots"], "cpu": cpu, "memory_mb": mem, "type": ty, "price": price})
        profiles = []
        for c in names:
            base = rng.uniform(0.5, 5.0)
            for ty in sorted(set(types)):
                profiles.append({"profile": c, "machine_type": ty,
                                 "exec_ms": round(base / MACHINE_TYPES[ty][2] * rng.uniform(0.9, 1.1), 4),
                                 "overhead": round(rng.uniform(1.0, 5.0), 3)})
        perf = [{"name": c, "interpolate": True,
                 "points": [{"threads": t, "rate": r, "cpu": cu, "memory": m} for t, r, cu, m in SHUKLA_MODELS[c]]}
                for c in names]
        data = {
            "name": f"micro-s{seed}-{i:05d}",
            "description": f"{shape} topology on a {ckind} cluster",
            "topologies": [{"id": shape, "components": comps, "input_rate": float(rng.choice(p["rates"])),
                            "streams": [{"source": a, "target": b} for a, b in edges], "max_heap_mb": 1024.0}],
            "cluster": _cluster(nodes, _rack_layout(len(nodes), p["racks"]), p["racks"]),
            "machine_profiles": profiles,
            "perf_models": perf,
        }
        yield _finish(data, "micro", p, seed, i, ["network", "traffic", "throughput", "slots", "feasibility"],
                      shape=shape, cluster_kind=ckind)


# ---------------------------------------------------------------------------------------------
# shukla-app: application-sized DAGs of Shukla and Simmhan's five modelled tasks

# The VM pool of the shipped shukla-* instances (instances/README.md; seed 004, section 7.1):
# Azure D-series VMs, (type, slots, price $/h, count), 3.5 GB of memory per slot (a test
# checks it against instances/shukla-linear.json).
SHUKLA_POOL: list[tuple[str, int, float, int]] = [("D4", 8, 0.784, 6), ("D3", 4, 0.392, 3), ("D2", 2, 0.196, 3),
                                                  ("D1", 1, 0.098, 3)]
# the five modelled tasks (SHUKLA_MODELS less source and sink) in the order they are dealt over
# the vertices: the order fixes the generated instances (and the figures of docs/benchmarks.md)
SHUKLA_TASKS = ["blob", "table", "pi", "parse", "batchwrite"]

SHUKLA_APP_DEFAULTS: dict[str, Any] = {
    "tasks": [7, 11, 15],  # logic tasks per DAG (the paper's application DAGs: 7 to 15)
    "paths": [2, 3, 4],  # DAG selectivity 1:paths (the paper: 1:2 to 1:4), paired with tasks
    "rates": [50.0, 100.0],  # input rates (the paper ran its application DAGs at 50 and 100)
    "pool_copies": 1,  # copies of the shipped 69-slot VM pool
    "max_width": 4,  # most logic tasks in one layer
}


def _app_dag(rng: random.Random, n: int, paths: int, max_width: int, tries: int = 20000) -> list[tuple[int, int]]:
    """Edges of a layered DAG over logic tasks 0..n-1 plus source -1 and sink n, with exactly
    ``paths`` source-to-sink paths (the DAG's selectivity when every task has selectivity 1 and
    a task's output goes to all its successors). Layers: a random composition of n with parts
    of at most ``max_width``; the source feeds every task of the first layer, the last layer
    feeds the sink; every other task has 1 or 2 parents in the layer above and every task a
    child. Drawn again until the path count matches; InstanceError if ``tries`` draws miss."""
    for _ in range(tries):
        widths, left = [], n
        while left:
            w = rng.randint(1, min(max_width, left))
            widths.append(w)
            left -= w
        layers, k = [], 0
        for w in widths:
            layers.append(list(range(k, k + w)))
            k += w
        edges = [(-1, t) for t in layers[0]]
        for up, low in zip(layers, layers[1:]):
            for t in low:
                for par in rng.sample(up, min(len(up), rng.choice((1, 1, 2)))):
                    edges.append((par, t))
            for par in up:  # every task has a child
                if not any(a == par for a, _ in edges):
                    edges.append((par, rng.choice(low)))
        edges += [(t, n) for t in layers[-1]]
        count = {-1: 1}
        for t in range(n + 1):  # tasks are numbered layer by layer: parents come first
            count[t] = sum(count[a] for a, b in edges if b == t)
        if count[n] == paths:
            return edges
    raise InstanceError("params.paths", f"no layered DAG of {n} tasks with {paths} source-to-sink paths found "
                                        f"in {tries} draws; choose more tasks or fewer paths")


def gen_shukla_app(count: int, seed: int, **params: Any) -> Iterator[Instance]:
    """Application-sized DAGs for ``slots``, built to what Shukla and Simmhan's text says of
    their application DAGs (seed 004, section 8.3): 7 to 15 logic tasks, the five modelled
    tasks (Azure Blob, Azure Table, Pi, XML parse, batched file write) assigned to random
    vertices in turn, selectivity 1 per task, DAG selectivity 1:2 to 1:4, one source and one
    sink, input rates 50 and 100 tuples/s. The paper's DAGs themselves (Traffic, Finance, Grid;
    its Fig. 6) are an image not in the seed, so the structures here are our own draws, not
    theirs. Instance i takes (``tasks``, ``paths``)[i % len] and rate
    ``rates[(i // len) % len(rates)]``, the same DAG at every rate (drawn from the stream of
    index i % len); the cluster is ``pool_copies`` copies of the shipped
    shukla-* VM pool (Azure D-series, 69 slots, prices per hour), with ``slot_usage = "rate"``
    and interpolated task models as in the shipped instances.
    """
    p = _check_params("shukla-app", params, SHUKLA_APP_DEFAULTS)
    def numbers(k: str, kind: type) -> list:
        try:
            out = [kind(x) for x in p[k]]
        except (TypeError, ValueError):
            raise InstanceError(f"params.{k}", f"expected {kind.__name__}s (a list, or a|b on the command line), "
                                               f"got {p[k]!r}") from None
        if kind is int and any(float(x) != int(x) for x in p[k]):
            raise InstanceError(f"params.{k}", f"expected whole numbers, got {p[k]!r}")
        return out

    tasks, paths, rates = numbers("tasks", int), numbers("paths", int), numbers("rates", float)
    if not tasks or len(tasks) != len(paths):
        raise InstanceError("params.paths", f"expected one path count per entry of tasks ({len(tasks)}), got {len(paths)}")
    if any(t < 1 for t in tasks):
        raise InstanceError("params.tasks", "every DAG needs at least 1 task")
    if any(q < 1 for q in paths):
        raise InstanceError("params.paths", "every DAG has at least 1 source-to-sink path")
    if not rates or any(not r > 0 for r in rates):
        raise InstanceError("params.rates", f"expected positive input rates, got {p['rates']!r}")
    for k in ("pool_copies", "max_width"):
        if p[k] < 1:
            raise InstanceError(f"params.{k}", "must be >= 1")
    for i in range(count):
        # the DAG and its tasks come from the stream of its shape, so a DAG is the same at every rate
        rng = _rng("shukla-app", seed, i % len(tasks))
        n, q = tasks[i % len(tasks)], paths[i % len(tasks)]
        rate = rates[(i // len(tasks)) % len(rates)]
        edges = _app_dag(rng, n, q, p["max_width"])
        # the five tasks dealt in turn over the vertices in a random order
        order = list(range(n))
        rng.shuffle(order)
        kind = {v: SHUKLA_TASKS[k % len(SHUKLA_TASKS)] for k, v in enumerate(order)}
        names = {-1: "source", n: "sink"}
        seen: dict[str, int] = {}
        for v in range(n):
            seen[kind[v]] = seen.get(kind[v], 0) + 1
            names[v] = f"{kind[v]}-{seen[kind[v]]}"
        comps = [{"id": "source", "kind": "spout", "perf_model": "source"}]
        comps += [{"id": names[v], "kind": "bolt", "perf_model": kind[v]} for v in range(n)]
        comps.append({"id": "sink", "kind": "bolt", "perf_model": "sink"})
        nodes = []
        for copy in range(p["pool_copies"]):
            for ty, slots, price, cnt in SHUKLA_POOL:
                for k in range(cnt):
                    nodes.append({"id": f"{ty.lower()}-{copy}-{k + 1}", "type": ty, "slots": slots, "cpu": 100.0 * slots,
                                  "memory_mb": 3584.0 * slots, "price": price})
        perf = [{"name": c, "interpolate": True,
                 "points": [{"threads": t, "rate": r, "cpu": cu, "memory": m} for t, r, cu, m in SHUKLA_MODELS[c]]}
                for c in SHUKLA_TASKS + ["source", "sink"]]
        data = {
            "name": f"shukla-app-s{seed}-{i:05d}",
            "description": f"{n} modelled tasks, DAG selectivity 1:{q}, {rate:g} tuples/s (Shukla-style application DAG)",
            "topologies": [{"id": f"app{n}", "input_rate": rate, "components": comps,
                            "streams": [{"source": names[a], "target": names[b]} for a, b in edges]}],
            "cluster": _cluster(nodes, _rack_layout(len(nodes), 2), 2),
            "perf_models": perf,
            "params": {"slot_usage": "rate"},
        }
        yield _finish(data, "shukla-app", p, seed, i, ["slots"], tasks=n, paths=q)


# ---------------------------------------------------------------------------------------------
# hetero: Nasiri-style heterogeneous clusters

HETERO_SCENARIOS: dict[str, tuple[int, int, int]] = {
    # scenario: (components, machines, machine types)
    "small": (4, 3, 2),
    "medium": (6, 6, 3),
    "large": (10, 12, 4),
}

HETERO_DEFAULTS: dict[str, Any] = {
    "scenarios": ["small", "medium", "large"],
    "routing": "even",
    "min_selectivity": 0.5,
    "max_selectivity": 1.5,
    "components": 0,  # > 0: overrides the scenario's component count
    "machines": 0,  # > 0: overrides the scenario's machine count
    "types": 0,  # > 0: overrides the scenario's number of machine types
}


def gen_hetero(count: int, seed: int, **params: Any) -> Iterator[Instance]:
    """Nasiri-style instances for ``throughput``: one topology, machines of several types, a
    profile (exec_ms, overhead) per (component, machine type). Instance i takes scenario
    ``scenarios[i % len]`` (small: 4 components on 3 machines of 2 types; medium: 6 on 6 of 3;
    large: 10 on 12 of 4).

    Machine type t has CPU capacity uniform in {100, 200, 400, 800} points and a speed factor
    uniform in [0.5, 2]; every machine has one slot (Nasiri: one worker per machine). The
    topology is a random tree hanging from one spout (component k > 0 takes a parent uniform
    among 0..k-1), selectivity uniform in [min_selectivity, max_selectivity]. Profiles: base
    exec_ms uniform in [0.2, 2] per component, divided by the type's speed, jittered +-20 %;
    overhead (MET) uniform in [0.5, 3] points. ``components``, ``machines`` and ``types`` (when
    > 0) override the scenario's sizes (types at most machines).
    """
    p = _check_params("hetero", params, HETERO_DEFAULTS)
    bad = [s for s in p["scenarios"] if s not in HETERO_SCENARIOS]
    if bad or not p["scenarios"]:
        raise InstanceError("params.scenarios", f"expected some of {', '.join(HETERO_SCENARIOS)}, got {p['scenarios']!r}")
    if p["routing"] not in ("even", "weighted"):
        raise InstanceError("params.routing", "expected 'even' or 'weighted'")
    for k in ("components", "machines", "types"):
        if p[k] < 0:
            raise InstanceError(f"params.{k}", "must be >= 0 (0: the scenario's)")
    if not 0 <= p["min_selectivity"] <= p["max_selectivity"]:
        raise InstanceError("params.min_selectivity", "need 0 <= min_selectivity <= max_selectivity")
    for i in range(count):
        rng = _rng("hetero", seed, i)
        scen = p["scenarios"][i % len(p["scenarios"])]
        n_comp, n_mach, n_types = HETERO_SCENARIOS[scen]
        n_comp, n_mach, n_types = p["components"] or n_comp, p["machines"] or n_mach, p["types"] or n_types
        n_types = min(n_types, n_mach)
        types = {f"type-{t}": (float(rng.choice([100, 200, 400, 800])), rng.uniform(0.5, 2.0)) for t in range(n_types)}
        tnames = sorted(types)
        # every type gets at least one machine
        mtypes = tnames + [rng.choice(tnames) for _ in range(n_mach - n_types)]
        rng.shuffle(mtypes)
        nodes = [{"id": f"m-{j}", "slots": 1, "cpu": types[ty][0], "memory_mb": 16384.0, "type": ty} for j, ty in enumerate(mtypes)]
        comps = [{"id": f"c{k}", "kind": "spout" if k == 0 else "bolt"} for k in range(n_comp)]
        streams = [{"source": f"c{rng.randrange(k)}", "target": f"c{k}",
                    "selectivity": round(rng.uniform(p["min_selectivity"], p["max_selectivity"]), 3)} for k in range(1, n_comp)]
        profiles = []
        for c in comps:
            base = rng.uniform(0.2, 2.0)
            for ty in tnames:
                profiles.append({"profile": c["id"], "machine_type": ty,
                                 "exec_ms": round(base / types[ty][1] * rng.uniform(0.8, 1.2), 4),
                                 "overhead": round(rng.uniform(0.5, 3.0), 3)})
        data = {
            "name": f"hetero-s{seed}-{i:05d}",
            "description": f"Nasiri-style {scen} scenario: {n_comp} components, {n_mach} machines of {n_types} types",
            "topologies": [{"id": "topo", "components": comps, "streams": streams, "routing": p["routing"],
                            "input_rate": 100.0}],
            "cluster": {"racks": [{"id": "rack-0", "nodes": nodes}]},
            "machine_profiles": profiles,
        }
        yield _finish(data, "hetero", p, seed, i, ["throughput"], scenario=scen)


# ---------------------------------------------------------------------------------------------
# layered: random layered DAGs

LAYERED_DEFAULTS: dict[str, Any] = {
    "executors": 20,
    "components": 0,  # 0: executors // 3 (at least 2)
    "layers": 0,  # 0: round(sqrt(components)) (at least 2)
    "nodes": 8,
    "racks": 2,
    "slots": 4,
    "headroom": 1.5,  # cluster CPU and memory = headroom x demand
    "workers": 0,  # topology.workers; 0 leaves it unset (every slot)
    "fields_share": 0.3,
}


def gen_layered(count: int, seed: int, **params: Any) -> Iterator[Instance]:
    """Random layered DAGs for ``traffic`` and ``network`` scaling studies.

    Components are split over layers (layer 0 holds the spouts; each layer at least one
    component, the rest uniform); every component of layer l+1 takes 1 or 2 parents uniform
    from layer l, and every component of layer l without a child gets one in layer l+1.
    Parallelism: every component 1 executor plus the remaining executors dealt uniformly at
    random. Per executor: CPU uniform in {10, 20, ..., 100} points, on-heap memory uniform in
    {64, 96, ..., 256} MB. Streams: fields grouping with probability ``fields_share``, else
    shuffle; selectivity log-uniform in [0.5, 2]. Input rate uniform in [100, 1000] tuples/s.
    Cluster: ``nodes`` nodes of ``slots`` slots dealt over ``racks`` racks, each node's CPU and
    memory = headroom x total demand / nodes (CPU rounded up to 10 points, memory to 64 MB);
    worker max heap 1,024 MB.
    """
    p = _check_params("layered", params, LAYERED_DEFAULTS)
    for k in ("executors", "nodes", "racks", "slots"):
        if p[k] < 1:
            raise InstanceError(f"params.{k}", "must be >= 1")
    if p["headroom"] <= 0:
        raise InstanceError("params.headroom", "must be > 0")
    n_comp = p["components"] or max(2, p["executors"] // 3)
    if n_comp > p["executors"]:
        raise InstanceError("params.components", f"{n_comp} components need at least as many executors, got {p['executors']}")
    n_layers = p["layers"] or max(2, round(math.sqrt(n_comp)))
    n_layers = min(n_layers, n_comp)
    for i in range(count):
        rng = _rng("layered", seed, i)
        sizes = [1] * n_layers
        for _ in range(n_comp - n_layers):
            sizes[rng.randrange(n_layers)] += 1
        layers: list[list[str]] = []
        k = 0
        for s in sizes:
            layers.append([f"c{k + j}" for j in range(s)])
            k += s
        par = {c: 1 for layer in layers for c in layer}
        names = list(par)
        for _ in range(p["executors"] - n_comp):
            par[rng.choice(names)] += 1
        edges: set[tuple[str, str]] = set()
        for l in range(1, n_layers):
            for c in layers[l]:
                for parent in rng.sample(layers[l - 1], min(len(layers[l - 1]), rng.randint(1, 2))):
                    edges.add((parent, c))
            for parent in layers[l - 1]:
                if not any(a == parent for a, _ in edges):
                    edges.add((parent, rng.choice(layers[l])))
        comps = [{"id": c, "kind": "spout" if c in layers[0] else "bolt", "parallelism": par[c],
                  "cpu": float(10 * rng.randint(1, 10)), "memory_onheap_mb": float(32 * rng.randint(2, 8))} for c in names]
        streams = [{"source": a, "target": b, "grouping": "fields" if rng.random() < p["fields_share"] else "shuffle",
                    "selectivity": round(math.exp(rng.uniform(math.log(0.5), math.log(2.0))), 4)} for a, b in sorted(edges)]
        cpu_need = sum(c["cpu"] * c["parallelism"] for c in comps)
        mem_need = sum(c["memory_onheap_mb"] * c["parallelism"] for c in comps)
        node_cpu = 10.0 * math.ceil(p["headroom"] * cpu_need / p["nodes"] / 10.0)
        node_mem = 64.0 * math.ceil(p["headroom"] * mem_need / p["nodes"] / 64.0)
        nodes = [{"id": f"node-{j}", "slots": p["slots"], "cpu": node_cpu, "memory_mb": node_mem} for j in range(p["nodes"])]
        topo: dict[str, Any] = {"id": "topo", "components": comps, "streams": streams, "max_heap_mb": 1024.0,
                                "input_rate": float(rng.randint(100, 1000))}
        if p["workers"]:
            topo["workers"] = p["workers"]
        data = {
            "name": f"layered-s{seed}-{i:05d}",
            "description": f"layered DAG: {n_comp} components in {n_layers} layers, {p['executors']} executors, {p['nodes']} nodes",
            "topologies": [topo],
            "cluster": _cluster(nodes, _rack_layout(len(nodes), p["racks"]), p["racks"]),
        }
        yield _finish(data, "layered", p, seed, i, ["traffic", "network", "feasibility"])


# ---------------------------------------------------------------------------------------------
# storm-large: the real clusters

STORM_LARGE_DEFAULTS: dict[str, Any] = {"data": "", "folders": ["largeCluster01", "largeCluster02", "largeCluster03"]}


def default_storm_large_dir() -> Path | None:
    """../shared/data/storm-largecluster: $PLANNER_SHARED, beside the checkout, or /work/shared."""
    here = Path(__file__).resolve().parent.parent
    for cand in (os.environ.get("PLANNER_SHARED"), here.parent / "shared", Path("/work/shared")):
        if cand and (Path(cand) / "data" / "storm-largecluster").is_dir():
            return Path(cand) / "data" / "storm-largecluster"
    return None


def gen_storm_large(count: int, seed: int, **params: Any) -> Iterator[Instance]:
    """The real clusters of Storm's TestLargeCluster, one instance per folder (at most ``count``);
    the seed is recorded but draws nothing. Needs ``planner.storm.load_cluster_dir``."""
    p = _check_params("storm-large", params, STORM_LARGE_DEFAULTS)
    try:
        from .storm import load_cluster_dir  # type: ignore[attr-defined]
    except ImportError:
        raise InstanceError("generator.storm-large", "needs planner.storm.load_cluster_dir (the Storm formats module), "
                            "which this installation does not have yet") from None
    root = Path(p["data"]) if p["data"] else default_storm_large_dir()
    if root is None or not root.is_dir():
        raise InstanceError("params.data", f"storm-largecluster data not found ({p['data'] or 'set PLANNER_SHARED or data=DIR'})")
    for i, folder in enumerate(p["folders"][:count]):
        d = root / folder
        if not d.is_dir():
            raise InstanceError("params.folders", f"{d} is not a folder")
        inst = load_cluster_dir(d)
        data = inst.model_dump(mode="json", exclude_none=False)
        data["name"] = f"storm-large-{folder}"
        meta = dict(data.get("meta") or {})
        meta.pop("problems", None)
        yield _finish(data, "storm-large", {**p, "data": str(root)}, seed, i, ["feasibility", "admission", "network"],
                      folder=folder, **{k: v for k, v in meta.items() if k not in ("generator", "params", "seed", "index")})


# ---------------------------------------------------------------------------------------------
# front door

GENERATORS: dict[str, Callable[..., Iterator[Instance]]] = {
    "ras-random": gen_ras_random,
    "micro": gen_micro,
    "hetero": gen_hetero,
    "shukla-app": gen_shukla_app,
    "layered": gen_layered,
    "storm-large": gen_storm_large,
}


def generate(kind: str, count: int, seed: int = 0, **params: Any) -> list[Instance]:
    """``count`` instances of generator ``kind`` (deterministic per ``seed`` and ``params``)."""
    return list(iter_generate(kind, count, seed, **params))


def iter_generate(kind: str, count: int, seed: int = 0, **params: Any) -> Iterator[Instance]:
    """Like :func:`generate`, one instance at a time."""
    if kind not in GENERATORS:
        raise InstanceError("generator", f"unknown generator {kind!r}; known: {', '.join(GENERATORS)}")
    if not isinstance(count, int) or count < 0:
        raise InstanceError("count", f"must be an integer >= 0, got {count!r}")
    if not isinstance(seed, int):
        raise InstanceError("seed", f"must be an integer, got {seed!r}")
    return GENERATORS[kind](count, seed, **params)


def write_instances(instances: Iterator[Instance] | list[Instance], out: str | Path) -> list[Path]:
    """Write each instance to ``out/<name>.json``; returns the paths."""
    d = Path(out)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InstanceError("--out", f"cannot create {d}: {e.strerror or e}") from None
    paths = []
    for inst in instances:
        path = d / f"{inst.name}.json"
        path.write_text(json.dumps(inst.model_dump(mode="json", exclude_defaults=True), indent=1) + "\n")
        paths.append(path)
    return paths


def parse_param_value(v: str) -> Any:
    """``3`` -> 3, ``0.5`` -> 0.5, ``true`` -> True, anything else stays a string
    (lists are ``a|b|c`` and split by the generator)."""
    try:
        return json.loads(v)
    except json.JSONDecodeError:
        return v


def cmd_generate(args: argparse.Namespace) -> int:
    params = {}
    for kv in args.param or []:
        if "=" not in kv:
            raise InstanceError(f"--param {kv}", "expected KEY=VALUE")
        k, v = kv.split("=", 1)
        params[k] = parse_param_value(v)
    n = 0
    for _ in write_instances(iter_generate(args.kind, args.count, args.seed, **params), args.out):
        n += 1
    print(f"wrote {n} {args.kind} instances to {args.out}", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    """The ``planner generate`` sub-command."""
    g = sub.add_parser("generate", help="write a reproducible family of generated instances",
                       description="Generate instances (deterministic per seed). Kinds: " + ", ".join(GENERATORS) + ".")
    g.add_argument("kind", choices=list(GENERATORS))
    g.add_argument("--count", "-n", type=int, default=10)
    g.add_argument("--seed", "-s", type=int, default=0)
    g.add_argument("--out", required=True, help="folder for the instance files")
    g.add_argument("--param", "-P", action="append", metavar="KEY=VALUE",
                   help="generator parameter, repeatable (lists as a|b); see docs/batch.md")
    g.set_defaults(func=cmd_generate)
