"""Throughput and slots solves on instances past the goal sizes, against a short time limit
(session 26). Each case runs in a fresh interpreter (as `planner solve` would) with --repo's
code, so two checkouts can be compared in one run; it prints the wall time, the solve's own
time, the status, the objective and the bound.

A case is KIND:A:B:METHOD:
  hetero:C:M:METHOD    throughput, even routing, `gen_hetero` (medium scenario, 3 machine
                       types) with C components on M machines
  hetero-w:C:M:METHOD  the same instance with weighted routing
  app:T:P:METHOD       slots, `shukla-app` with T tasks and P source-to-sink paths at 100 tuples/s
  storm:K:A:METHOD     network on Storm's largeClusterK (K = 1, 2, 3; ../shared/data/storm-largecluster)
                       without ackers (A = 0) or with the ackers of its stormconf (A = 1)
  storm-topo:K:I:METHOD  network, TopologyNameI alone (its number, e.g. 4) on largeClusterK's nodes

Usage: python benchmarks/bench_time_limits.py [--limit 10] [--repo PATH] CASE ...
e.g.   python benchmarks/bench_time_limits.py --limit 10 hetero:20:30:exact.milp-highs app:21:6:exact.cpsat
       python benchmarks/bench_time_limits.py --limit 8 storm:1:0:exact.cpsat storm:3:1:exact.cpsat
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
CHILD = r'''
import sys, time, json
from planner.generate import gen_hetero, generate
from planner.api import solve
kind, a, b, method, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
if kind == "hetero":
    inst = next(gen_hetero(1, 1, scenarios=["medium"], components=a, machines=b, types=3))
    prob = "throughput"
elif kind == "hetero-w":
    inst = next(gen_hetero(1, 1, scenarios=["medium"], components=a, machines=b, types=3))
    for t in inst.topologies: t.routing = "weighted"
    prob = "throughput"
elif kind in ("storm", "storm-topo"):
    from planner.generate import default_storm_large_dir
    from planner.storm import load_cluster_dir
    data = default_storm_large_dir()  # $PLANNER_SHARED, beside the checkout, or /work/shared
    if data is None:
        raise SystemExit("../shared/data/storm-largecluster is absent (set PLANNER_SHARED)")
    inst = load_cluster_dir(data / f"largeCluster{a:02d}",
                            ackers="conf" if kind == "storm" and b else "none")
    if kind == "storm-topo":
        t = next(t for t in inst.topologies if t.id == f"TopologyName{b:05d}")
        inst = inst.model_copy(update={"topologies": [t]})
    prob = "network"
else:
    inst = generate("shukla-app", 1, 0, tasks=[a], paths=[b], rates=[100])[0]
    prob = "slots"
t0 = time.monotonic()
r = solve(inst, prob, method, time_limit=limit)
print(json.dumps({"s": round(time.monotonic() - t0, 1), "status": r.status.value, "obj": r.objective, "bound": r.bound, "msg": (r.message or "")[:160]}))
'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="+", help="KIND:A:B:METHOD (see above)")
    ap.add_argument("--limit", type=float, default=10.0, help="each solve's time limit, s (default 10)")
    ap.add_argument("--kill", type=float, default=300.0, help="kill a solve still running after this many s (300)")
    ap.add_argument("--repo", default=str(HERE), help="the checkout whose code runs (default: this one)")
    a = ap.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(Path(a.repo).resolve())}
    print(f"code: {a.repo}; limit {a.limit:g} s")
    print("| case | wall s | solve s | status | objective | bound |")
    print("|---|---|---|---|---|---|")
    for case in a.cases:
        try:
            kind, x, y, method = case.split(":")
        except ValueError:
            print(f"bad case {case!r}: KIND:A:B:METHOD", file=sys.stderr)
            return 2
        t0 = time.monotonic()
        try:
            p = subprocess.run([sys.executable, "-c", CHILD, kind, x, y, method, str(a.limit)], capture_output=True,
                               text=True, timeout=a.kill, env=env, cwd=a.repo)
        except subprocess.TimeoutExpired:
            print(f"| {case} | killed at {a.kill:g} | | | | |", flush=True)
            continue
        wall = time.monotonic() - t0
        lines = p.stdout.strip().splitlines()
        if p.returncode != 0 or not lines:
            print(f"| {case} | {wall:.1f} | | error: {p.stderr.strip().splitlines()[-1:]} | | |", flush=True)
            continue
        r = json.loads(lines[-1])
        fmt = lambda v: "" if v is None else f"{v:.6g}"  # noqa: E731
        print(f"| {case} | {wall:.1f} | {r['s']:.1f} | {r['status']} | {fmt(r['obj'])} | {fmt(r['bound'])} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
