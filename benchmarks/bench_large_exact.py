"""Exact solves on Storm's large clusters against their time limit (sessions 24-26); any
method runs the same way (session 27 timed the heuristics: --cases traffic:aniello.online
network:heron.ffd network:heron.rcrr).

Each solve runs in a fresh interpreter (as `planner solve` would), on the instance that Storm's
TestLargeCluster schedules (`load_cluster_dir(..., ackers="none")`: 50 topologies, 1,414
executors, 743 groups, 80 nodes, 960 slots) or, with --ackers conf, with Nimbus's ackers (2,174
executors, 792 groups). --cluster largeCluster01 or largeCluster02 takes another of the three
(24,403 and 36,150 executors on 65,600 and 70,128 slots). It prints the wall time, the status,
the objective and the bound. A solve still running at --kill seconds is killed and reported so.

--repo runs another checkout's code (e.g. a worktree of an older commit) in the same run, so
the two can be compared as ratios on one machine.

Usage: python benchmarks/bench_large_exact.py [--limit 20] [--repo PATH] [--ackers none|conf]
           [--cluster largeCluster01|largeCluster02|largeCluster03] [--model auto|compact]
           [--cases network:exact.cpsat traffic:exact.cpsat ...] [--details]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, sys, time
from planner.storm import load_cluster_dir
from planner.api import solve
folder, ackers, problem, method, limit, model = sys.argv[1:7]
inst = load_cluster_dir(folder, ackers=ackers)
t0 = time.monotonic()
r = solve(inst, problem, method, time_limit=float(limit), **({} if model == "auto" else {"model": model}))
print(json.dumps({"solve_s": time.monotonic() - t0, "status": r.status.value, "objective": r.objective,
                  "bound": r.bound, "message": (r.message or "")[:160],
                  "details": {k: v for k, v in r.details.items() if k != "configuration"}}, default=str))
"""
CASES = ["network:exact.cpsat", "network:exact.milp-highs", "traffic:exact.cpsat", "feasibility:exact.cpsat",
         "admission:exact.cpsat"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=float, default=20.0, help="each solve's time limit, s (default 20)")
    ap.add_argument("--kill", type=float, default=300.0, help="kill a solve still running after this many s (300)")
    ap.add_argument("--repo", default=str(HERE), help="the checkout whose code runs (default: this one)")
    ap.add_argument("--ackers", choices=["none", "conf"], default="none")
    ap.add_argument("--cluster", choices=["largeCluster01", "largeCluster02", "largeCluster03"], default="largeCluster03")
    ap.add_argument("--cases", nargs="*", default=CASES, help="problem:method pairs")
    ap.add_argument("--model", choices=["auto", "compact"], default="auto",
                    help="the exact methods' option model (compact: always the compact model)")
    ap.add_argument("--shared", default=os.environ.get("PLANNER_SHARED", str(HERE.parent / "shared")))
    ap.add_argument("--details", action="store_true", help="print each solve's details (Result.details) too")
    a = ap.parse_args(argv)
    folder = Path(a.shared) / "data" / "storm-largecluster" / a.cluster
    if not folder.is_dir():
        print(f"no {folder}: give --shared (the folder holding data/storm-largecluster)", file=sys.stderr)
        return 2
    env = {**os.environ, "PYTHONPATH": str(Path(a.repo).resolve())}
    print(f"code: {a.repo}; {a.cluster}, ackers={a.ackers}; limit {a.limit:g} s; model={a.model}")
    print("| case | wall s | solve s | status | objective | bound |")
    print("|---|---|---|---|---|---|")
    notes = []
    for case in a.cases:
        problem, method = case.split(":")
        t0 = time.monotonic()
        # a session of its own, so that a kill takes the solver processes it started (CBC, the
        # HiGHS worker) with it: an orphaned CBC would run on beside the next cases
        p = subprocess.Popen([sys.executable, "-c", CHILD, str(folder), a.ackers, problem, method, str(a.limit), a.model],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=a.repo,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=a.kill)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            print(f"| {case} | killed at {a.kill:g} | | | | |", flush=True)
            continue
        wall = time.monotonic() - t0
        if p.returncode != 0 or not out.strip():
            print(f"| {case} | {wall:.1f} | | error: {err.strip().splitlines()[-1:]} | | |", flush=True)
            continue
        r = json.loads(out.strip().splitlines()[-1])
        fmt = lambda v: "" if v is None else f"{v:.6g}"  # noqa: E731
        print(f"| {case} | {wall:.1f} | {r['solve_s']:.1f} | {r['status']} | {fmt(r['objective'])} | {fmt(r['bound'])} |",
              flush=True)
        if r["message"]:
            notes.append(f"- {case}: {r['message']}")
        if a.details and r.get("details"):
            notes.append(f"- {case} details: {json.dumps(r['details'], default=str)}")
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
