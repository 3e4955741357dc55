"""Benchmark: how far the exact even-routing throughput models prove optimality within a time
limit (default 60 s, model building included), on Nasiri-style ``hetero`` instances (3 machine
types, so groups of identical machines) and on ``tests/test_exact_throughput.py::tiny`` seed 11
(each machine of one of 3 types and 3 capacities, overheads 0, 1 or 5). Prints a markdown table
(docs/benchmarks.md, "throughput scaling"); "start (polished)" is the rate after the fixed-count
polish (branch tput-exact; -1 when the method ran without it).

    PYTHONPATH=$PWD python benchmarks/bench_throughput_scaling.py [--limit 60] [--quick]
        [--solvers exact.milp-cbc,exact.milp-highs,exact.cpsat]

One solve at a time; CP-SAT uses 2 workers, CBC and HiGHS 1 thread. Default run: 10 solves
(CBC and HiGHS) of at most about a minute each (under 10 minutes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import planner  # noqa: E402
from planner.generate import gen_hetero  # noqa: E402
from planner.plan import Status  # noqa: E402

SOLVERS = ["exact.milp-cbc", "exact.milp-highs"]  # --solvers adds exact.cpsat (it proves none of these)


def instance(family: str, comps: int, machines: int):
    if family == "hetero":
        return next(gen_hetero(1, 1, scenarios=["medium"], components=comps, machines=machines, types=3))
    from test_exact_throughput import tiny

    inst = tiny(11, "even", comps, machines, per_node=10)
    for c in inst["topologies"][0]["components"]:
        c.pop("max_per_node")
    return inst


def cell(r) -> str:
    s = {"optimal": "opt", "feasible": "feas", "unknown": "none", "infeasible": "inf"}.get(r.status.value, r.status.value)
    gap = f", gap {r.gap:.1e}" if r.status == Status.FEASIBLE and r.gap is not None else ""
    return f"{r.seconds:.1f} s {s}{gap}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="two small sizes, 10 s (a smoke run)")
    ap.add_argument("--solvers", default=",".join(SOLVERS), help="comma-separated methods")
    a = ap.parse_args()
    solvers = [m for m in a.solvers.split(",") if m]
    cases = [("hetero", 5, 5), ("hetero", 6, 6), ("hetero", 8, 10), ("tiny", 5, 5), ("tiny", 8, 10)]
    if a.quick:
        cases, a.limit = [("hetero", 4, 4), ("tiny", 4, 4)], 10.0
    t0 = time.time()
    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    print(f"| instance | components x machines | identical groups | weighted bound | start (rounded) | start (polished) | best rate | "
          + " | ".join(solvers) + " |")
    print("|---|---|---|---|---|---|---|" + "---|" * len(solvers))
    from formulations.throughput import prepare, sym_pairs

    for fam, comps, machines in cases:
        inst = instance(fam, comps, machines)
        d = prepare(planner.load_instance(inst))
        rs = [planner.solve(inst, "throughput", m, time_limit=a.limit) for m in solvers]
        best = max((r.objective for r in rs if r.ok), default=float("nan"))
        wb = next((r.details.get("weighted_bound") for r in rs if r.details.get("weighted_bound")), None)
        st = max((r.details.get("start_rate", -1) for r in rs), default=-1)
        po = max((r.details.get("polish", {}).get("rate", -1) for r in rs), default=-1)
        print(f"| {fam} | {comps} x {machines} | {len(sym_pairs(d))} pairs | {wb:.1f} | {st:.1f} | {po:.1f} | {best:.1f} | "
              + " | ".join(cell(r) for r in rs) + " |", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}; total wall time {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
