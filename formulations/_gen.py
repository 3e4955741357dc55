"""Seeded random instances for the exact models' tests and benchmarks.

:func:`small_random` makes tiny instances (at most 6 executors, 5 slots) that exhaustive search
finishes, with every constraint the problems know appearing now and then; :func:`layered`
makes realistic layered topologies (spouts, then layers of bolts, shuffle streams between
consecutive layers) on a cluster of identical nodes, for the benchmarks.
"""

from __future__ import annotations

import random
from typing import Any


def small_random(problem: str, seed: int) -> dict[str, Any]:
    """A tiny instance dict for ``problem`` (network, traffic, feasibility, admission)."""
    rng = random.Random(f"{problem}-{seed}")
    multi = problem in ("feasibility", "admission") or (problem == "traffic" and rng.random() < 0.15)
    n_topo = rng.randint(2, 3) if multi else 1
    budget = 6
    racks = []
    n_nodes = rng.randint(2, 3)
    n_racks = rng.randint(1, min(2, n_nodes))
    slots_left = 5
    sites = ["east", "west"]
    nodes = []
    for i in range(n_nodes):
        s = rng.randint(1, 2) if slots_left - (n_nodes - i - 1) >= 2 else 1
        slots_left -= s
        node = {"id": f"n{i}", "slots": s, "cpu": rng.choice([30, 40, 60, 100]), "memory_mb": rng.choice([384, 512, 1024, 2048])}
        if rng.random() < 0.3:
            node["site"] = rng.choice(sites)
        if rng.random() < 0.15:
            node["resources"] = {"gpu": rng.choice([1, 2])}
        nodes.append(node)
    for r in range(n_racks):
        racks.append({"id": f"r{r}", "nodes": nodes[r::n_racks]})
    node_ids = [n["id"] for n in nodes]
    node_sites = sorted({n["site"] for n in nodes if "site" in n})
    topos = []
    for ti in range(n_topo):
        n_comp = rng.randint(1 if multi else 2, 3)
        comps = []
        for ci in range(n_comp):
            left = budget - sum(c["parallelism"] for t in topos for c in t["components"]) - sum(c["parallelism"] for c in comps)
            if left <= 0:
                break
            c = {"id": f"c{ci}", "kind": "spout" if ci == 0 else "bolt", "parallelism": rng.randint(1, min(3, left)),
                 "cpu": rng.choice([5, 10, 15]), "memory_onheap_mb": rng.choice([64, 128, 256]),
                 "memory_offheap_mb": rng.choice([0, 0, 64])}
            u = rng.random()
            if u < 0.1:
                c["max_per_node"] = rng.randint(1, 2)
            elif u < 0.17:
                c["incompatible"] = [c["id"]]
            elif u < 0.22 and node_sites:
                c["site"] = rng.choice(node_sites)
            elif u < 0.27:
                c["nodes"] = rng.sample(node_ids, rng.randint(1, len(node_ids)))
            elif u < 0.3:
                c["resources"] = {"gpu": 1}
            comps.append(c)
        if not comps:
            break
        streams = []
        groupings = ["shuffle", "shuffle", "fields", "all", "global"] if problem == "traffic" else ["shuffle"]
        for ci in range(1, len(comps)):
            src = rng.randrange(ci)
            streams.append({"source": comps[src]["id"], "target": comps[ci]["id"], "grouping": rng.choice(groupings),
                            "selectivity": rng.choice([0.5, 1.0, 2.0])})
        if len(comps) == 3 and rng.random() < 0.3 and not any(s["source"] == "c0" and s["target"] == "c2" for s in streams):
            streams.append({"source": "c0", "target": "c2", "selectivity": 1.0})
        if len(comps) >= 2 and rng.random() < 0.2:
            other = rng.randrange(1, len(comps))
            comps[other].setdefault("incompatible", []).append(comps[0]["id"])
        t = {"id": f"t{ti}", "components": comps, "streams": streams, "priority": rng.randint(0, 2),
             "max_heap_mb": rng.choice([256, 384, 768, 768]), "input_rate": rng.choice([1.0, 10.0])}
        if problem == "traffic":
            if rng.random() < 0.6:
                t["workers"] = rng.randint(1, 4)
            if rng.random() < 0.15:
                execs = [(c["id"], i) for c in comps for i in range(c["parallelism"])]
                t["traffic"] = [{"source": a[0], "source_index": a[1], "target": b[0], "target_index": b[1],
                                 "rate": float(rng.randint(1, 9))}
                                for a in execs for b in execs if a != b and rng.random() < 0.3]
        topos.append(t)
    inst = {"name": f"{problem}-{seed}", "topologies": topos, "cluster": {"racks": racks},
            "meta": {"generator": "formulations._gen.small_random", "seed": seed}}
    if problem == "traffic":
        inst["params"] = {"alpha": rng.choice([0.0, 0.5, 1.0])}
    return inst


def layered(executors: int, components: int, nodes: int, seed: int, *, racks: int = 2, slots: int = 4,
            problem: str = "network") -> dict[str, Any]:
    """A layered topology (1-2 spouts, then bolt layers; each bolt fed by 1-2 components of
    the previous layer) with ``executors`` executors over ``components`` components, on
    ``nodes`` identical nodes in ``racks`` racks. Resources leave about 30 % slack."""
    rng = random.Random(f"layered-{executors}-{components}-{nodes}-{seed}")
    n_layers = max(2, min(components, rng.randint(3, 4)))
    layer_of = sorted([0, 0] + [rng.randint(1, n_layers - 1) for _ in range(components - 2)])
    if components < 2:
        layer_of = [0]
    layer_of[1] = max(layer_of[1], 1) if components > 1 else 0
    layer_of = sorted(layer_of)
    par = [1] * components
    for _ in range(executors - components):
        par[rng.randrange(components)] += 1
    comps = []
    for i in range(components):
        comps.append({"id": f"c{i:02d}", "kind": "spout" if layer_of[i] == 0 else "bolt", "parallelism": par[i],
                      "cpu": rng.choice([10, 15, 20, 25]), "memory_onheap_mb": rng.choice([64, 128, 192]),
                      "memory_offheap_mb": 0})
    streams = []
    for i in range(components):
        if layer_of[i] == 0:
            continue
        prev = [j for j in range(components) if layer_of[j] < layer_of[i]]
        near = [j for j in prev if layer_of[j] == max(layer_of[p] for p in prev)]
        srcs = rng.sample(near, min(len(near), rng.randint(1, 2)))
        for j in srcs:
            streams.append({"source": comps[j]["id"], "target": comps[i]["id"], "grouping": "shuffle",
                            "selectivity": rng.choice([0.5, 1.0, 1.0, 2.0])})
    topo = {"id": "t", "components": comps, "streams": streams, "max_heap_mb": 768, "input_rate": 100.0}
    if problem == "traffic":
        topo["workers"] = nodes
    return {"name": f"layered-{executors}x{components}x{nodes}-{seed}", "topologies": [topo],
            "cluster": _sized_cluster([topo], 1.3, nodes, racks, slots),
            "meta": {"generator": "formulations._gen.layered", "seed": seed}}


def _sized_cluster(topos: list[dict[str, Any]], fill: float, nodes: int, racks: int, slots: int) -> dict[str, Any]:
    """``nodes`` identical nodes dealt over ``racks`` racks, whose total CPU and memory are
    ``fill`` x the topologies' demand (CPU rounded up to 10 points, memory to 64 MB per node)."""
    cpu = sum(c["cpu"] * c["parallelism"] for t in topos for c in t["components"])
    mem = sum(c["memory_onheap_mb"] * c["parallelism"] for t in topos for c in t["components"])
    node_cpu = int(cpu * fill / nodes / 10 + 1) * 10
    node_mem = int(mem * fill / nodes / 64 + 1) * 64
    rk = [{"id": f"r{r}", "nodes": []} for r in range(racks)]
    for n in range(nodes):
        rk[n % racks]["nodes"].append({"id": f"n{n:02d}", "slots": slots, "cpu": node_cpu, "memory_mb": node_mem})
    return {"racks": [r for r in rk if r["nodes"]]}


def multitenant(topologies: int, executors: int, components: int, nodes: int, seed: int, *, fill: float = 0.7,
                racks: int = 2, slots: int = 4) -> dict[str, Any]:
    """``topologies`` layered topologies (``executors`` and ``components`` each, as
    :func:`layered`, topology i at priority i) on ``nodes`` identical nodes whose total CPU and
    memory are ``fill`` x the sum of the topologies' demands: with fill < 1 not every topology
    fits, which is what ``admission`` decides; with fill >= 1.3 ``feasibility`` has a plan."""
    topos = []
    for i in range(topologies):
        t = layered(executors, components, nodes, seed * 1000 + i, racks=racks, slots=slots)["topologies"][0]
        t["id"] = f"t{i}"
        t["priority"] = i
        topos.append(t)
    return {"name": f"multitenant-{topologies}x{executors}x{components}x{nodes}-{seed}", "topologies": topos,
            "cluster": _sized_cluster(topos, fill, nodes, racks, slots),
            "meta": {"generator": "formulations._gen.multitenant", "seed": seed, "fill": fill}}
