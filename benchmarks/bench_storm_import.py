"""Time to import each real Storm large cluster (all topologies + supervisors.json).

Run from the repo root:  PYTHONPATH=$PWD python benchmarks/bench_storm_import.py [--repeat 5]
Prints a Markdown table: per cluster, the median and best wall time of
planner.storm.load_cluster_dir (gunzip + Thrift decode + resource resolution + Instance
validation), the time to write the Instance as JSON, and the sizes.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.storm import load_cluster_dir  # noqa: E402
from tests.conftest import shared_dir  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    shared = shared_dir()
    if shared is None:
        print("../shared is not present; nothing to time", file=sys.stderr)
        return 1
    root = shared / "data" / "storm-largecluster"
    print(f"Python {platform.python_version()}, {platform.machine()}, best and median of {args.repeat} runs\n")
    print("| cluster | topologies | executors (with ackers) | nodes | import median s | import best s | instance JSON s | JSON MB |")
    print("|---|---|---|---|---|---|---|---|")
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            inst = load_cluster_dir(folder)
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        text = json.dumps(inst.model_dump(mode="json"))
        tj = time.perf_counter() - t0
        s = inst.size
        print(f"| {folder.name} | {s['topologies']} | {s['executors']:,} | {s['nodes']:,} | {statistics.median(times):.3f} "
              f"| {min(times):.3f} | {tj:.3f} | {len(text) / 1e6:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
