"""Time to proven optimality for the multi-tenant problems (`admission`, `feasibility`) against
instance size, CP-SAT vs CBC vs HiGHS, with Storm's RAS (storm.ras) beside them.

Instances: `formulations._gen.multitenant` (T layered topologies of E executors and C
components each, topology i at priority i, on N identical nodes in 2 racks of 4 slots; the
nodes' total CPU and memory are `--fill` x the topologies' demand, 0.7 for admission so that
not every topology fits, 1.3 for feasibility).

Usage: PYTHONPATH=. python benchmarks/bench_exact_admission.py [--limit 60]
       [--sizes 2x10x4x4,4x20x5x6,6x20x6x10,8x25x6x12,10x30x8x16] [--problems admission,feasibility]
Prints a markdown table; `weight` is the admitted priority weight (admission's objective,
maximised), `scheduled` the number of topologies placed.
"""

from __future__ import annotations

import argparse
import time

import planner
from formulations._gen import multitenant
from planner.model import parse_instance

METHODS = ["exact.cpsat", "exact.milp-cbc", "exact.milp-highs", "storm.ras"]
FILL = {"admission": 0.7, "feasibility": 1.3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=float, default=60.0, help="time limit per solve, seconds")
    ap.add_argument("--sizes", default="2x10x4x4,4x20x5x6,6x20x6x10,8x25x6x12,10x30x8x16",
                    help="TxExCxN: topologies x executors each x components each x nodes")
    ap.add_argument("--problems", default="admission,feasibility")
    ap.add_argument("--methods", default=",".join(METHODS))
    a = ap.parse_args()
    print("| problem | topologies x executors x components x nodes | executors | method | status | weight | bound | scheduled | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for problem in a.problems.split(","):
        for size in [s for s in a.sizes.split(",") if s]:
            t, e, c, n = map(int, size.split("x"))
            inst = parse_instance(multitenant(t, e, c, n, 0, fill=FILL[problem]))
            for m in a.methods.split(","):
                t0 = time.perf_counter()
                r = planner.solve(inst, problem, m, time_limit=a.limit)
                dt = time.perf_counter() - t0
                assert r.status.value not in ("optimal", "feasible") or r.metrics["feasible"], (m, r.message)
                w = r.metrics.get("admitted_weight") if r.plan is not None else None
                sched = len(r.metrics.get("scheduled_topologies") or []) if r.plan is not None else "-"
                bd = "-" if r.bound is None or problem != "admission" else f"{r.bound:g}"
                print(f"| {problem} | {size} | {t * e} | {m} | {r.status.value} | {'-' if w is None else f'{w:g}'} | {bd} "
                      f"| {sched}/{t} | {dt:.2f} |", flush=True)


if __name__ == "__main__":
    main()
