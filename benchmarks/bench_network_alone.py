"""network for each topology of a Storm cluster alone on that cluster's nodes (session 30: the
worker cut).

A user placing one topology on an empty cluster asks this. Each topology of the cluster (with
Nimbus's ackers by default, as Storm runs them) up to --max-executors is taken alone, with the
cluster's racks and nodes unchanged, and solved by --method at --limit s in a fresh interpreter.
It prints per topology the executors, status, objective, bound and seconds, and the counts of
`optimal` at the end; --repo runs another checkout's code (a worktree of an older commit) so
the two compare in one run.

Usage: python benchmarks/bench_network_alone.py [--cluster largeCluster03] [--ackers conf|none]
           [--limit 10] [--max-executors 60] [--method exact.cpsat] [--repo PATH] [--shared PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, sys, time
from planner.storm import load_cluster_dir
from planner.api import solve
folder, ackers, tid, method, limit = sys.argv[1:6]
inst = load_cluster_dir(folder, ackers=ackers)
t = next(t for t in inst.topologies if t.id == tid)
one = inst.model_copy(update={"topologies": [t]})
t0 = time.monotonic()
r = solve(one, "network", method, time_limit=float(limit))
print(json.dumps({"s": time.monotonic() - t0, "status": r.status.value, "objective": r.objective, "bound": r.bound}))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cluster", choices=["largeCluster01", "largeCluster02", "largeCluster03"], default="largeCluster03")
    ap.add_argument("--ackers", choices=["none", "conf"], default="conf")
    ap.add_argument("--limit", type=float, default=10.0, help="each solve's time limit, s (default 10)")
    ap.add_argument("--max-executors", type=int, default=60, help="topologies up to this many executors (60)")
    ap.add_argument("--method", default="exact.cpsat")
    ap.add_argument("--repo", default=str(HERE), help="the checkout whose code runs (default: this one)")
    ap.add_argument("--shared", default=os.environ.get("PLANNER_SHARED", str(HERE.parent / "shared")))
    a = ap.parse_args(argv)
    folder = Path(a.shared) / "data" / "storm-largecluster" / a.cluster
    if not folder.is_dir():
        print(f"no {folder}: give --shared (the folder holding data/storm-largecluster)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    from planner.storm import load_cluster_dir

    inst = load_cluster_dir(folder, ackers=a.ackers)
    topos = sorted((t.executor_count, t.id) for t in inst.topologies if t.executor_count <= a.max_executors)
    env = {**os.environ, "PYTHONPATH": str(Path(a.repo).resolve())}
    print(f"code: {a.repo}; {a.cluster}, ackers={a.ackers}; each topology alone; {a.method} at {a.limit:g} s")
    print("| topology | executors | status | objective | bound | seconds |")
    print("|---|---|---|---|---|---|")
    proven = 0
    for e, tid in topos:
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-c", CHILD, str(folder), a.ackers, tid, a.method, str(a.limit)],
                           capture_output=True, text=True, env=env, cwd=a.repo)
        try:
            r = json.loads(p.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            print(f"| {tid} | {e} | failed: {p.stderr.strip().splitlines()[-1:]} | | | {time.monotonic() - t0:.1f} |")
            continue
        proven += r["status"] == "optimal"
        fmt = lambda v: "" if v is None else f"{v:.4g}"  # noqa: E731
        print(f"| {tid} | {e} | {r['status']} | {fmt(r['objective'])} | {fmt(r['bound'])} | {r['s']:.1f} |", flush=True)
    print(f"\n{proven} of {len(topos)} proven optimal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
