"""network on several topologies sharing a cluster (session 29: the topology search).

Each instance merges ``--topologies`` topologies of the ``layered`` generator (seed s, the
given executors and components each) onto the first one's cluster (``--nodes`` nodes, one
rack, ``--slots`` slots), every node's CPU and memory multiplied by the number of topologies.
Each solve runs in a fresh interpreter; ``--repo`` runs another checkout's code (a worktree of
an older commit) so the two compare in one run. It prints status, objective, bound, seconds
and the topology search's details.

Usage: python benchmarks/bench_network_multi.py [--seeds 4] [--executors 20] [--components 6]
           [--topologies 3] [--nodes 8] [--slots 4] [--limit 30] [--method exact.cpsat] [--repo PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from planner.generate import generate
from planner.model import parse_instance
from planner.api import solve
seed, E, C, T, nodes, slots, limit, method = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), \
    int(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8]), sys.argv[9]
parts = generate("layered", T, seed=seed, executors=E, components=C, nodes=nodes, racks=1, slots=slots)
data = parts[0].model_dump()
data["topologies"] = []
for k, p in enumerate(parts):
    t = p.model_dump()["topologies"][0]
    t["id"] = f"t{k}"
    data["topologies"].append(t)
for r in data["cluster"]["racks"]:
    for n in r["nodes"]:
        n["cpu"] *= T
        n["memory_mb"] *= T
r = solve(parse_instance(data), "network", method, time_limit=limit)
d = r.details.get("configuration") or r.details  # the configuration model's details, under the compact model's
print(json.dumps({"status": r.status.value, "objective": r.objective, "bound": r.bound, "seconds": r.seconds,
                  "search": d.get("topology_search"), "late": d.get("topology_search_late")}))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=4, help="generator seeds 0..N-1 (default 4)")
    ap.add_argument("--executors", type=int, default=20, help="executors per topology (20)")
    ap.add_argument("--components", type=int, default=6, help="components per topology (6)")
    ap.add_argument("--topologies", type=int, default=3, help="topologies per instance (3)")
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--limit", type=float, default=30.0, help="time limit of each solve, s (30)")
    ap.add_argument("--method", default="exact.cpsat")
    ap.add_argument("--repo", default=str(HERE), help="the checkout whose code runs (default: this one)")
    a = ap.parse_args(argv)
    print(f"code: {a.repo}; {a.topologies} x {a.executors} executors, {a.components} components; "
          f"{a.nodes} nodes; {a.method} at {a.limit:g} s")
    print("| seed | status | objective | bound | seconds | topology search |")
    print("|---|---|---|---|---|---|")
    for seed in range(a.seeds):
        cmd = [sys.executable, "-c", CHILD, a.repo, str(seed), str(a.executors), str(a.components), str(a.topologies),
               str(a.nodes), str(a.slots), str(a.limit), a.method]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=a.repo)
        if p.returncode != 0:
            print(f"| {seed} | failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode} | | | | |")
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        fmt = (lambda v: "-" if v is None else f"{v:.4g}")
        print(f"| {seed} | {r['status']} | {fmt(r['objective'])} | {fmt(r['bound'])} | {r['seconds']:.1f} | "
              f"{r['search'] or '-'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
