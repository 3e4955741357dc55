"""Time to proven optimality for network and traffic: configuration model (default) vs the
compact count model, CP-SAT vs CBC vs HiGHS; and brute force vs CP-SAT.

Usage: PYTHONPATH=. python benchmarks/bench_exact_network.py [--limit 20] [--sizes 8x5x2,12x5x3,20x5x4]
       [--compact exact.cpsat] [--tiny 20] [--problems network,traffic] [--cpsat-only 60x8x6,100x10x10]
       [--seed 0]   (the layered generator's seed for the size table; its size column names it when not 0)
       [--cluster ras-doc-five-racks]   (that shipped instance's cluster instead of the generated one)
Brute force against CP-SAT alone, on every placement problem:
       PYTHONPATH=. python benchmarks/bench_exact_network.py --sizes '' --tiny 40 --problems network,traffic,feasibility,admission
and on growing layered instances, up to where brute force gives up (3e6 assignments):
       PYTHONPATH=. python benchmarks/bench_exact_network.py --bf-sizes 6x3x2,8x4x2,8x5x2,10x5x2 --limit 120
Prints a markdown table (one row per instance, model and backend) and the brute-force/CP-SAT ratios.
``seconds`` is the wall time of planner.solve; for traffic ``phase 1 s`` is when inter-node
traffic was proven optimal (phase 2, the inter-worker tie-breaker, then runs in the time left).
"""

from __future__ import annotations

import argparse
import time

import planner
from formulations._gen import layered, small_random
from planner.api import load_instance
from planner.model import parse_instance

BACKENDS = ["exact.cpsat", "exact.milp-cbc", "exact.milp-highs"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=20.0)
    ap.add_argument("--sizes", default="8x5x2,12x5x3,16x5x4,20x5x4")
    ap.add_argument("--methods", default=",".join(BACKENDS), help="backends for the configuration model")
    ap.add_argument("--compact", default="exact.cpsat", help="backends for the compact model ('' for none)")
    ap.add_argument("--tiny", type=int, default=20)
    ap.add_argument("--problems", default="network,traffic",
                    help="problems for the size table; the brute-force ratios also take feasibility and admission")
    ap.add_argument("--seed", type=int, default=0, help="seed of the layered generator for the size table")
    ap.add_argument("--cluster", default="",
                    help="a shipped instance whose cluster replaces the generated one (the size's N then only seeds the "
                         "topology), e.g. ras-doc-five-racks: a small topology on a big cluster")
    ap.add_argument("--cpsat-only", default="", help="sizes run with exact.cpsat alone (configuration model), to keep the run short")
    ap.add_argument("--bf-sizes", default="",
                    help="layered sizes ExCxN on which brute force and exact.cpsat both run (time and ratio per instance)")
    a = ap.parse_args()
    if a.bf_sizes:
        bruteforce_sizes(a)
        return
    print("| problem | executors x components x nodes | model | method | status | objective | bound | seconds | phase 1 s |")
    print("|---|---|---|---|---|---|---|---|---|")
    runs = [("configuration", m) for m in a.methods.split(",") if m] + [("compact", m) for m in a.compact.split(",") if m]
    solo = [s for s in a.cpsat_only.split(",") if s]
    for problem in a.problems.split(","):
        for size in [s for s in a.sizes.split(",") if s] + solo:
            e, c, n = map(int, size.split("x"))
            d = layered(e, c, n, a.seed, problem=problem)
            if a.cluster:
                d["cluster"] = load_instance(a.cluster).model_dump(mode="json")["cluster"]
            inst = parse_instance(d)
            label = size if a.seed == 0 else f"{size} seed {a.seed}"
            if a.cluster:
                label += f" on {a.cluster}"
            for model, m in (runs if size not in solo else [("configuration", "exact.cpsat")]):
                t = time.perf_counter()
                r = planner.solve(inst, problem, m, time_limit=a.limit, model="auto" if model == "configuration" else "compact")
                dt = time.perf_counter() - t
                obj = "-" if r.objective is None else f"{r.objective:.4g}"
                bd = "-" if r.bound is None else f"{r.bound:.4g}"
                p1 = r.details.get("phase1_seconds", "-")
                print(f"| {problem} | {label} | {model} | {m} | {r.status.value} | {obj} | {bd} | {dt:.2f} | {p1} |", flush=True)
    if a.tiny <= 0:
        return
    print()
    print("| problem | instances | brute force total s | CP-SAT total s | ratio min / median / max |")
    print("|---|---|---|---|---|")
    for problem in a.problems.split(","):
        ratios, tb, tc = [], 0.0, 0.0
        for seed in range(a.tiny):
            inst = parse_instance(small_random(problem, 1000 + seed))
            t = time.perf_counter()
            b = planner.solve(inst, problem, "exact.bruteforce")
            db = time.perf_counter() - t
            t = time.perf_counter()
            r = planner.solve(inst, problem, "exact.cpsat")
            dc = time.perf_counter() - t
            if b.status.value != "optimal":
                continue
            assert r.status.value == "optimal" and abs(r.objective - b.objective) <= 1e-6 * max(1, b.objective)
            ratios.append(db / dc)
            tb += db
            tc += dc
        ratios.sort()
        if not ratios:
            print(f"| {problem} | 0 | - | - | - |")
            continue
        print(f"| {problem} | {len(ratios)} | {tb:.2f} | {tc:.2f} | {ratios[0]:.2f} / {ratios[len(ratios) // 2]:.2f} / {ratios[-1]:.2f} |")


def bruteforce_sizes(a) -> None:
    """Brute force against exact.cpsat on the seeded layered instances of ``--bf-sizes``: the
    same optimum is asserted, the ratio is brute force seconds / CP-SAT seconds."""
    print("| problem | executors x components x nodes | optimum | brute force s | exact.cpsat s | ratio |")
    print("|---|---|---|---|---|---|")
    for problem in a.problems.split(","):
        for size in [s for s in a.bf_sizes.split(",") if s]:
            e, c, n = map(int, size.split("x"))
            inst = parse_instance(layered(e, c, n, 0, problem=problem))
            t = time.perf_counter()
            b = planner.solve(inst, problem, "exact.bruteforce", time_limit=a.limit)
            db = time.perf_counter() - t
            t = time.perf_counter()
            r = planner.solve(inst, problem, "exact.cpsat", time_limit=a.limit)
            dc = time.perf_counter() - t
            if b.status.value != "optimal":
                print(f"| {problem} | {size} | - | {b.status.value} ({b.message[:60]}) | {dc:.2f} | - |", flush=True)
                continue
            assert r.status.value == "optimal" and abs(r.objective - b.objective) <= 1e-6 * max(1, b.objective), (r, b)
            print(f"| {problem} | {size} | {b.objective:.4g} | {db:.2f} | {dc:.2f} | {db / dc:.1f} |", flush=True)


if __name__ == "__main__":
    main()
