"""Traffic (Aniello et al.) exact phase 1 + 2 at scale: which sizes are proven within a limit.

Usage: PYTHONPATH=. python benchmarks/bench_traffic_scale.py [--limit 60]
       [--sizes 46x8x4,60x8x4,60x8x5,80x10x4,60x8x6,80x10x8,100x10x10,100x12x10]
       [--seeds 0,1,2,3] [--methods exact.cpsat]

Seeded layered instances (formulations._gen.layered, seed 0, 2 racks, 4 slots per node, W =
nodes). CP-SAT runs every size; CBC and HiGHS run the sizes CP-SAT proved (the configuration
model's proof does not depend on the backend until the integer master, so an unproven size
costs the full limit three times over). Prints a markdown table; ``phase 1 s`` is when
inter-node traffic was proven optimal, ``phase 2`` how the inter-worker tie-breaker ended,
``note`` the configuration model's stop reason. ``--seeds``: the solver seed (``planner.solve``'s
``seed``, which moves the seeding local search's start; the instance stays seed 0), one row per
seed and method; ``--methods`` narrows the back ends. ``--instance-seed``: the generator's seed
(``layered(..., seed)``; default 0, the instances of every earlier figure), for another topology
and rate matrix of the same size. ``--rss``: print the process's peak resident memory after
each row (``resource.getrusage``; a peak over the process so far, so run one size alone to read
one size's figure).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import planner
from formulations._gen import layered
from planner.model import parse_instance


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--sizes", default="46x8x4,60x8x4,60x8x5,80x10x4,60x8x6,80x10x8,100x10x10,100x12x10")
    ap.add_argument("--seeds", default="0", help="solver seeds, comma-separated (the instance is always seed 0)")
    ap.add_argument("--methods", default="exact.cpsat,exact.milp-cbc,exact.milp-highs")
    ap.add_argument("--instance-seed", type=int, default=0, help="the generator's seed (layered)")
    ap.add_argument("--rss", action="store_true", help="print the peak resident memory after each row")
    a = ap.parse_args()
    seeds = [int(x) for x in a.seeds.split(",")]
    if a.instance_seed:
        print(f"instances: layered(..., seed={a.instance_seed})")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| executors x components x nodes | method | seed | status | objective | bound | gap % | seconds | phase 1 s | phase 2 | incumbent from | note |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for size in a.sizes.split(","):
        e, c, n = map(int, size.split("x"))
        inst = parse_instance(layered(e, c, n, a.instance_seed, problem="traffic"))
        for m, seed in ((m, s) for m in a.methods.split(",") for s in seeds):
            t = time.perf_counter()
            r = planner.solve(inst, "traffic", m, time_limit=a.limit, seed=seed)
            dt = time.perf_counter() - t
            d = r.details
            obj = "-" if r.objective is None else f"{r.objective:.5g}"
            bd = "-" if r.bound is None else f"{r.bound:.5g}"
            gap = "-" if r.objective is None or r.bound is None else f"{100 * (r.objective - r.bound) / max(1e-9, abs(r.objective)):.2f}"
            src = "search" if "incumbent_search" in d else ("master" if d.get("incumbent_master") is not None else "-")
            note = d.get("enumeration", "")
            if "bp_nodes" in d:  # branch and price (branch traffic-bp): search size
                note = f"B&P {d['bp_nodes']} nodes, {d['bp_open']} open"
                if "incumbent_search" in d:  # the seeding search's value (intra-node: total - inter-node)
                    note += f"; search start {d['incumbent_search']:.6g}"
            print(f"| {size} | {m} | {seed} | {r.status.value} | {obj} | {bd} | {gap} | {dt:.2f} | {d.get('phase1_seconds', '-')} | "
                  f"{str(d.get('phase2', '-')).split(' (')[0]} | {src} | {note} |", flush=True)
            if a.rss:
                print(f"peak resident memory so far: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB", flush=True)
            if m == "exact.cpsat" and d.get("phase1") != "optimal" and len(seeds) == 1:
                break  # not proven by CP-SAT: the other backends would spend the limit too
    print()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
