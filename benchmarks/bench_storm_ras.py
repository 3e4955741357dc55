"""Time storm.ras on Storm's large cases.

1. Storm's synthetic large case (TestResourceAwareScheduler.testLargeTopologiesOnLargeClusters):
   25 racks x 40 nodes x 66 slots of 4,700 CPU / 226,200 MB; 11 topologies of 5 spouts x 30 and
   40 bolts x 114 executors (bolt-i fed by spout-(i mod 5)), 88 CPU and 775 + 25 MB each, worker
   max heap 8,192 MB. Storm's Java must finish it in 30 s.
2. The real clusters of ../shared/data/storm-largecluster (whole cluster, every topology in
   priority order), when the Storm importer planner.storm.load_cluster_dir is importable.

Usage: PYTHONPATH=$PWD python benchmarks/bench_storm_ras.py [--synthetic-only] [--clusters 02 ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from planner.api import solve
from planner.model import parse_instance


def synthetic(multiplier: int = 1) -> dict:
    racks = [{"id": f"rack-{r}", "nodes": [{"id": f"r{r:03d}s{k:03d}", "slots": 66, "cpu": 4700, "memory_mb": 226200}
                                           for k in range(40)]} for r in range(25 * multiplier)]
    topos = []
    for i in range(11 * multiplier):
        comps = [{"id": f"spout-{j}", "kind": "spout", "parallelism": 30, "cpu": 88, "memory_onheap_mb": 775,
                  "memory_offheap_mb": 25} for j in range(5)]
        comps += [{"id": f"bolt-{j}", "parallelism": 114, "cpu": 88, "memory_onheap_mb": 775, "memory_offheap_mb": 25}
                  for j in range(40)]
        streams = [{"source": f"spout-{j % 5}", "target": f"bolt-{j}"} for j in range(40)]
        topos.append({"id": f"topology-{i:05d}", "components": comps, "streams": streams, "max_heap_mb": 8192})
    return {"name": f"storm-synthetic-large-x{multiplier}", "topologies": topos, "cluster": {"racks": racks}}


def run(inst, label: str, evaluate: bool = True) -> None:
    size = inst.size
    t0 = time.perf_counter()
    r = solve(inst, "feasibility", "storm.ras")
    wall = time.perf_counter() - t0
    sched = len(r.details.get("scheduled", []))
    print(f"{label}: {size['topologies']} topologies, {size['executors']} executors, {size['nodes']} nodes, "
          f"{size['racks']} racks: status {r.status.value}, {sched}/{size['topologies']} scheduled, "
          f"storm.ras {r.seconds:.2f} s, with the evaluator {wall:.2f} s", flush=True)
    if r.message:
        print("   ", r.message[:300])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--synthetic-only", action="store_true")
    ap.add_argument("--clusters", nargs="*", default=["01", "02", "03"])
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[1].parent / "shared"))
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    inst = parse_instance(synthetic())
    print(f"synthetic instance built in {time.perf_counter() - t0:.2f} s")
    run(inst, "synthetic 25x40x66, 11 x 4,710 executors")
    if a.synthetic_only:
        return 0
    try:
        from planner.storm import load_cluster_dir  # written by the Storm-formats work (issue 4)
    except ImportError:
        print("real clusters: skipped, planner.storm.load_cluster_dir is not available in this checkout")
        return 0
    data = Path(a.shared) / "data" / "storm-largecluster"
    if not data.is_dir():
        data = Path("/work/shared/data/storm-largecluster")
    for c in a.clusters:
        d = data / f"largeCluster{c}"
        if not d.is_dir():
            print(f"largeCluster{c}: not found under {data}")
            continue
        for ackers in ("none", "conf"):
            t0 = time.perf_counter()
            inst = load_cluster_dir(d, ackers=ackers)  # supervisors as Storm's TestLargeCluster makes them
            print(f"largeCluster{c} (ackers={ackers}) imported in {time.perf_counter() - t0:.2f} s")
            run(inst, f"largeCluster{c} ackers={ackers}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
