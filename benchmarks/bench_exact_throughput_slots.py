"""Benchmark: time to proven optimality of the exact throughput and slots models (CP-SAT vs
CBC vs HiGHS), brute force vs CP-SAT where brute force finishes, and the GAP core on chu1997
types c and d with a 60 s limit. Prints markdown tables (docs/benchmarks.md).

    PYTHONPATH=$PWD python benchmarks/bench_exact_throughput_slots.py [--quick | --slots | --slots-rate]

``--slots`` runs only the slots table (about 4 minutes on the shared 2-core machine);
``--slots-interpolated`` the same micro-DAGs with interpolated task models (up to 9 minutes);
``--slots-rate`` the shipped shukla-* instances and the micro-DAGs under slot_usage='rate';
``--slots-rate-low`` the same at 10 and 25 tuples/s, where some Shukla pairs pass;
``--slots-app`` the application-style DAGs of generator shukla-app (``--limit``, ``--seed``);
``--slots-rate-200`` the shipped shukla-* at 200 tuples/s (as ``planner reproduce`` builds them)
and the micro-DAGs with interpolated task models at 200 tuples/s, under slot_usage='rate'.

Everything runs in one process, one solve at a time; CP-SAT uses 2 workers, CBC and HiGHS 1
thread. The machine is shared, so times are indicative; ratios come from one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import planner  # noqa: E402
from formulations.gap import read_orlib, solve_gap  # noqa: E402
from formulations.slots import shukla_micro_dag  # noqa: E402
from planner.plan import Status  # noqa: E402

SOLVERS = ["exact.cpsat", "exact.milp-cbc", "exact.milp-highs"]


def tp_instance(seed: int, comps: int, machines: int, routing: str = "even") -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_exact_throughput import tiny

    inst = tiny(seed, routing, comps, machines, per_node=10)
    for c in inst["topologies"][0]["components"]:
        c.pop("max_per_node")
    return inst


def cell(r) -> str:
    s = {"optimal": "opt", "feasible": "feas", "unknown": "none", "infeasible": "inf"}.get(r.status.value, r.status.value)
    gap = f", gap {r.gap:.1e}" if r.status == Status.FEASIBLE and r.gap is not None else ""
    return f"{r.seconds:.2f} s {s}{gap}"


def throughput(limit: float, sizes) -> None:
    print(f"\n### throughput, even routing (time limit {limit:g} s; max 10 instances per machine)\n")
    print("| components x machines | rate (best) | " + " | ".join(SOLVERS) + " | bruteforce | bruteforce / CP-SAT |")
    print("|---|---|" + "---|" * (len(SOLVERS) + 2))
    for comps, machines in sizes:
        inst = tp_instance(11, comps, machines)
        rs = [planner.solve(inst, "throughput", m, time_limit=limit) for m in SOLVERS]
        bf = planner.solve(inst, "throughput", "exact.bruteforce", time_limit=limit)
        best = max((r.objective for r in rs if r.ok), default=None)
        ratio = f"{bf.seconds / rs[0].seconds:.1f}" if bf.status == Status.OPTIMAL and rs[0].status == Status.OPTIMAL else "-"
        bfc = cell(bf) if bf.status != Status.UNKNOWN or "too large" not in bf.message else "refused (too large)"
        print(f"| {comps} x {machines} | {best:.1f} | " + " | ".join(cell(r) for r in rs) + f" | {bfc} | {ratio} |", flush=True)
    inst = planner.load_instance("nasiri-search-space")
    rs = [planner.solve(inst, "throughput", m) for m in SOLVERS]
    bf = planner.solve(inst, "throughput", "exact.bruteforce")
    print(f"| Nasiri example 4 x 3 (27,405 count vectors) | {bf.objective:.1f} | " + " | ".join(cell(r) for r in rs)
          + f" | {cell(bf)} | {bf.seconds / rs[0].seconds:.1f} |", flush=True)


from planner.reproduce import SHUKLA_PAIRS as PAIRS  # noqa: E402 - the five LSA/MBA x DSM/RSM/SAM pairs


def slots(limit: float, dags, rates_, assign: bool = True, interpolate: bool = False, tiny_: bool = True) -> None:
    """The pattern model (default ``model="auto"``) with each back end; the assignment model
    under CP-SAT for reference; the best Shukla pair (x = its plan fails the evaluator)."""
    kind = "interpolated models" if interpolate else "modelled rows only"
    print(f"\n### slots, Shukla micro-DAGs on 8 VMs x 4 slots, peak usage, {kind} (time limit {limit:g} s, model building included)\n")
    head = "| DAG | rate (tuples/s) | " + " | ".join(SOLVERS) + " | optimum: slots / VM cost | patterns"
    head += " | assignment model, CP-SAT: slots / bound" if assign else ""
    print(head + " | Shukla pairs: fewest slots (passes?) |")
    print("|---|---|" + "---|" * (len(SOLVERS) + 3 + (1 if assign else 0)))
    for dag in dags:
        for rate in rates_:
            inst = shukla_micro_dag(dag, rate, nodes=8, interpolate=interpolate)
            rs = [planner.solve(inst, "slots", m, time_limit=limit) for m in SOLVERS]
            opt = [r for r in rs if r.status == Status.OPTIMAL]
            best = f"{opt[0].objective:g} / {opt[0].metrics['vm_cost']:g}" if opt else "not proven"
            row = f"| {dag} | {rate} | " + " | ".join(cell(r) for r in rs) + f" | {best} | {rs[0].details.get('patterns', '-')}"
            if assign:
                a = planner.solve(inst, "slots", "exact.cpsat", time_limit=limit, model="assign")
                row += f" | {cell(a)}: {a.objective} / {a.bound}"
            hs = [planner.solve(inst, "slots", p) for p in PAIRS]
            hs = [h for h in hs if h.plan is not None]
            fewest = min(hs, key=lambda h: h.objective, default=None)
            passing = [h.objective for h in hs if h.metrics["feasible"]]
            hcell = "-" if fewest is None else f"{fewest.objective:g} ({'yes' if fewest.metrics['feasible'] else 'no'})"
            hcell += f"; passing plans: {len(passing)}/{len(PAIRS)}"
            print(row + f" | {hcell} |", flush=True)
    if not tiny_:
        return
    print("\nSmall random slots instances (2 nodes x 2 slots, 3 components), brute force vs CP-SAT (pattern model):\n")
    sys.path.insert(0, str(ROOT / "tests"))
    from test_exact_slots import tiny

    tot_bf = tot_cp = 0.0
    n = 0
    for seed in range(10):
        inst = tiny(seed)
        bf = planner.solve(inst, "slots", "exact.bruteforce")
        cp = planner.solve(inst, "slots", "exact.cpsat")
        if bf.status == Status.OPTIMAL:
            assert cp.status == Status.OPTIMAL and cp.objective == bf.objective, seed
            tot_bf += bf.seconds
            tot_cp += cp.seconds
            n += 1
    print(f"{n} instances solved by both: brute force {tot_bf:.2f} s, CP-SAT {tot_cp:.2f} s, ratio {tot_bf / tot_cp:.1f}")


def pair_cells(inst) -> str:
    """The Shukla pairs' cells: the best passing plan (slots, method; how many of the five
    pass) | the fewest slots of any pair's plan (does it pass?)."""
    hs = [planner.solve(inst, "slots", p) for p in PAIRS]
    hs = [h for h in hs if h.plan is not None]
    passing = [h for h in hs if h.metrics["feasible"]]
    bp = min(passing, key=lambda h: (h.objective, h.metrics["vm_cost"]), default=None)
    fewest = min(hs, key=lambda h: h.objective, default=None)
    bcell = "-" if bp is None else f"{bp.objective:g} ({bp.method})"
    fcell = "-" if fewest is None else f"{fewest.objective:g} ({'yes' if fewest.metrics['feasible'] else 'no'})"
    return f"{bcell} ({len(passing)}/{len(PAIRS)}) | {fcell}"


def slots_rate(limit: float, dags, rates_, shipped: bool = True, shipped_rate: float | None = None,
               interpolate: bool = False) -> None:
    """Under ``params.slot_usage = "rate"``: the shipped shukla-* instances (at their own input
    rate, or at ``shipped_rate`` built as ``planner reproduce``'s Shukla study builds them) and
    the micro-DAGs (8 VMs x 4 slots; modelled rows only unless ``interpolate``) with each back
    end; the peak-usage optimum each run started from (its seed); the Shukla pairs (fewest
    slots among passing plans)."""
    from planner.reproduce import _shukla_instance

    print(f"\n### slots under slot_usage='rate' (time limit {limit:g} s, model building and the peak seed included)\n")
    print("| instance | " + " | ".join(f"{m}: time status, slots / bound" for m in SOLVERS)
          + " | peak seed (slots) | Shukla pairs: best passing (passing / 5) | fewest slots of any pair (passes?) |")
    print("|---|" + "---|" * (len(SOLVERS) + 3))
    names = ("shukla-linear", "shukla-diamond", "shukla-star") if shipped else ()
    if shipped_rate is None:
        cases = [(name, planner.load_instance(name)) for name in names]
    else:  # exactly the instances of docs/results.md's Shukla study (input_rate replaced)
        cases = [(f"{name} at {shipped_rate:g}", _shukla_instance(name.removeprefix("shukla-"), shipped_rate)) for name in names]
    for dag in dags:
        for rate in rates_:
            inst = shukla_micro_dag(dag, rate, nodes=8, interpolate=interpolate)
            inst["params"] = {"slot_usage": "rate"}
            cases.append((f"micro {dag} {rate}" + (" interpolated" if interpolate else ""), inst))
    for name, inst in cases:
        rs = [planner.solve(inst, "slots", m, time_limit=limit) for m in SOLVERS]
        for r in rs:
            assert r.plan is None or r.metrics["feasible"], (name, r.method, r.metrics["violations"])
        cells = [f"{cell(r)}, {r.objective if r.objective is not None else '-'} / {r.bound if r.bound is not None else '-'}" for r in rs]
        seed = rs[0].details.get("peak_seed", {}).get("slots", "-")  # "-": proven before the peak seed ran
        pcells = pair_cells(inst)
        print(f"| {name} | " + " | ".join(cells) + f" | {seed} | {pcells} |", flush=True)


def slots_app(limit: float, count: int = 6, seed: int = 0) -> None:
    """Application-style DAGs (``planner.generate`` kind ``shukla-app``, seed ``seed``: 7, 11
    and 15 modelled tasks with DAG selectivity 1:2, 1:3, 1:4, at 50 and 100 tuples/s, on the
    shipped 69-slot Azure pool, rate usage) with each back end; the even-routing bound and the
    greedy seed the exact driver started from; the Shukla pairs."""
    from planner.generate import generate

    print(f"\n### slots, application-style DAGs (shukla-app, seed {seed}; time limit {limit:g} s, model building included)\n")
    print("| instance | tasks, selectivity, rate | " + " | ".join(f"{m}: time status, slots / bound (VM $/h)" for m in SOLVERS)
          + " | even-routing bound | greedy seed | Shukla pairs: best passing (passing / 5) | fewest slots of any pair (passes?) |")
    print("|---|---|" + "---|" * (len(SOLVERS) + 4))
    for inst in generate("shukla-app", count, seed):
        rs = [planner.solve(inst, "slots", m, time_limit=limit) for m in SOLVERS]
        for r in rs:
            assert r.plan is None or r.metrics["feasible"], (inst.name, r.method, r.metrics["violations"])
        cells = [f"{cell(r)}, {r.objective if r.objective is not None else '-'} / {r.bound if r.bound is not None else '-'}"
                 + (f" ({r.metrics['vm_cost']:.3f})" if r.plan is not None else "") for r in rs]
        eb = rs[0].details.get("even_bound", {}).get("slots", "-")
        seed_n = rs[0].details.get("greedy_seed", "-")
        pcells = pair_cells(inst)
        t = inst.topologies[0]
        print(f"| {inst.name} | {inst.meta['tasks']}, 1:{inst.meta['paths']}, {t.input_rate:g} | " + " | ".join(cells)
              + f" | {eb} | {seed_n} | {pcells} |", flush=True)


def gap(limit: float, names) -> None:
    import csv

    shared = ROOT.parent / "shared" if (ROOT.parent / "shared").is_dir() else Path("/work/shared")
    base = shared / "data" / "gap"
    with open(base / "data.csv") as f:
        known = {r["Path"]: r for r in csv.DictReader(f)}
    print(f"\n### GAP (minimisation), chu1997, time limit {limit:g} s\n")
    print("| instance | m x n | best known | CP-SAT value / bound / time | HiGHS value / bound / time |")
    print("|---|---|---|---|---|")
    for name in names:
        d = read_orlib(base / "chu1997" / name)
        row = []
        for s in ("cpsat", "highs"):
            r = solve_gap(d, "min", s, time_limit=limit)
            gp = f" (gap {(r.value - r.bound) / r.value:.2%})" if r.value and r.bound else ""
            row.append(f"{r.value:.0f} / {r.bound:.1f} / {r.seconds:.1f} s {r.status}{gp}" if r.value else f"{r.status} {r.seconds:.1f} s")
        print(f"| {name} | {d.m} x {d.n} | {known['chu1997/' + name]['Best known solution value']} | " + " | ".join(row) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes and limits (a smoke run)")
    ap.add_argument("--slots", action="store_true", help="only the slots table (Linear/Diamond/Star x 50/100/200)")
    ap.add_argument("--slots-interpolated", action="store_true",
                    help="only the slots table with interpolated task models (the shipped instances' setting)")
    ap.add_argument("--slots-rate", action="store_true",
                    help="only the slots table under slot_usage='rate' (shipped shukla-* and micro-DAGs, up to 13 minutes)")
    ap.add_argument("--slots-rate-200", action="store_true",
                    help="under slot_usage='rate' at 200 tuples/s: the shipped shukla-* as planner reproduce's Shukla "
                         "study builds them, and the micro-DAGs with interpolated task models")
    ap.add_argument("--slots-rate-low", action="store_true",
                    help="the micro-DAGs under slot_usage='rate' at 10 and 25 tuples/s, where Shukla pairs' plans pass")
    ap.add_argument("--slots-app", action="store_true",
                    help="application-style DAGs (generator shukla-app: 7/11/15 tasks at 50 and 100 tuples/s) under "
                         "slot_usage='rate', each back end at --limit (default 60 s)")
    ap.add_argument("--limit", type=float, default=None, help="time limit per solve for --slots-app (default 60)")
    ap.add_argument("--seed", type=int, default=0, help="generator seed for --slots-app (default 0)")
    a = ap.parse_args()
    t0 = time.time()
    def with_load(run, *args, **kw):
        """One table between the load averages at its start and end (the machine is shared)."""
        print(f"load average at start: {os.getloadavg()[0]:.2f}")
        run(*args, **kw)
        print(f"load average at end: {os.getloadavg()[0]:.2f}")

    dags = ["linear", "diamond", "star"]
    if a.slots_app:
        with_load(slots_app, a.limit or 60.0, seed=a.seed)
    elif a.slots_rate_200:
        with_load(slots_rate, 20, dags, [200], shipped_rate=200, interpolate=True)
    elif a.slots_rate_low:
        with_load(slots_rate, 20, dags, [10, 25], shipped=False)
    elif a.slots_rate:
        with_load(slots_rate, 20, dags, [50, 100, 200])
    elif a.slots_interpolated:
        with_load(slots, 20, dags, [50, 100, 200], assign=False, interpolate=True, tiny_=False)
    elif a.slots:
        with_load(slots, 20, dags, [50, 100, 200])
    elif a.quick:
        throughput(5, [(3, 3), (4, 4)])
        slots(5, ["linear"], [50])
        gap(5, ["c05100"])
    else:
        throughput(30, [(3, 3), (4, 4), (5, 5), (6, 8), (8, 10)])
        slots(20, ["linear", "diamond", "star"], [50, 100, 200])
        gap(60, ["c10100", "d10100", "d05200"])
    print(f"\ntotal wall time {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
