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

    PYTHONPATH=$PWD python benchmarks/bench_throughput_scaling.py --shapes hetero5x6,hetero6x8,tiny7x8 \
        --solvers exact.milp-highs

(session 53) any size by --shapes FAMILYCxM (C components on M machines): the frontier of the
even-routing proofs between the 5 x 5 and 8 x 10 goal cells.

    PYTHONPATH=$PWD python benchmarks/bench_throughput_scaling.py --nasiri 3,6 --limit 10
        [--routings even,weighted] [--solvers exact.cpsat,exact.milp-cbc,exact.milp-highs]

    PYTHONPATH=$PWD python benchmarks/bench_throughput_scaling.py --weighted hetero8,tiny8 [--limit 60] [--repeat 3]
        [--solvers exact.cpsat,exact.cpsat-flows,exact.milp-cbc,exact.milp-highs]

(branch cpsat-weighted) the scaling instances with weighted routing; every plan is checked by
the evaluator.

    PYTHONPATH=$PWD python benchmarks/bench_throughput_scaling.py --partial-cuts hetero6 [--dives 40]
        [--rate R] [--seed 0] [--fill-budget 20000]

(branch tput-six) the Nasiri reproduction's instances (docs/results.md section 2, `planner
reproduce --quick`'s tp-small and tp-medium) with every exact method at the reproduction's 10 s.

    PYTHONPATH=$PWD python benchmarks/bench_throughput_scaling.py --relaxations [--limit 60]
        [--probe-limit 90] [--bp-limit 240]

(branch tput-bp) compares, on tiny 5 x 5, hetero 6 x 6 and hetero 8 x 10, the bounds on the
even-routing rate of the compact count-class LP and of the per-machine configuration LP
(formulations/_tputbp.py), with free count classes and with the count vector N of the best plan
fixed (exact.milp-highs within --limit), and runs the configuration branch and price
(``bp_probe``) once at the best rate x (1 + 1e-5) within --bp-limit. Bisection on the probe rate:
compact LP to 1e-4, configuration LP to 1e-3 (each probe at most --probe-limit seconds; a probe
stopped by it counts as "not refuted", so the bound printed stays valid), fixed-N to 2e-4.

    PYTHONPATH=$PWD python benchmarks/bench_throughput_scaling.py --enumeration [--cases hetero6,hetero8]
        [--dives 40] [--budget 150] [--partial-fill]
    PYTHONPATH=$PWD python benchmarks/bench_throughput_scaling.py --search tiny5,hetero6 [--search-limit 600]
        [--start-bp RATE]

    PYTHONPATH=$PWD python benchmarks/bench_throughput_scaling.py --bp-chain hetero8 [--limit 60]
        [--bp-limit 400] [--chain-total 1500] [--chain-polish 10] [--chain-start RATE]
        [--chain-save FILE] [--chain-from FILE]

(session 37) chains ``bp_probe`` as a plan search from exact.milp-highs's plan within --limit:
each probe at best x (1 + 1e-5) within --bp-limit; each plan found polished and checked by the
evaluator; stops at a probe that is not feasible or after --chain-total seconds of probes;
--chain-start sets the first probe's rate (the path of a probe depends on its rate).

    PYTHONPATH=$PWD python benchmarks/bench_throughput_scaling.py --bp-pricing hetero8 [--bp-limit 240]
        [--pricing-rate RATE] [--variants plain,root,box,greedy] [--sample 15]

(session 50) ``bp_probe`` at the best plan's rate x (1 + 1e-5), variants of the tree (see
``bp_pricing``): how long each takes to refute it, where the time goes, and how far a Lagrangian
bound of the pricing problem (the capacity row relaxed) is from its MILP optimum.

(branch tput-enum) measures whether a search over the count vector N could prove the best known
rates (formulations/_tputenum.py): on hetero 6 x 6 at R = 2644.87 x (1 + 1e-5) and hetero 8 x 10
at R = 9532.0 x (1 + 1e-5) (the best rates on record in docs/benchmarks.md; the probe rates
are inputs, --rate6 / --rate8), Knuth's estimate of how many partial and complete vectors
survive the compact count-class LP, how many complete ones survive the whole-instance fill
test and are not refuted by the fixed-count MILP, and the mean time of each test (at most
--dives dives or --budget seconds per instance). --search runs the search itself
(``_tputenum.search``) from the exact methods' start (weighted split rounded, then polished for
10 s; with --start-bp R, from the placement ``_tputbp.bp_probe`` finds at R), within
--search-limit seconds, and checks its plan with the evaluator.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

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


def _bp_note(r) -> str:
    """The branch-and-price plan search's part in a solve (session 37), when it ran."""
    bp = r.details.get("bp_search")
    if not bp:
        return ""
    if "error" in bp:
        return f" (bp_search error: {bp['error']})"
    return f" (bp_search {bp['start_rate']:.2f} -> {bp['rate']:.2f} in {bp['seconds']:.0f} s, {bp['found']} plans)"


def _bisect(feasible, lo: float, hi: float, tol: float) -> tuple[float, float]:
    """Largest probe not refuted in [lo, hi] to a relative tol: (last not refuted, first refuted)."""
    while hi / lo - 1 > tol:
        mid = (lo * hi) ** 0.5
        if feasible(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


def relaxations(limit: float, probe_limit: float, bp_limit: float) -> None:
    from formulations import _tputbp as BP
    from formulations.throughput import counts_from_plan, even_rate, prepare, upper_bound

    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    print("| instance | best rate (exact.milp-highs) | compact LP bound | configuration LP bound (free classes) "
          "| configuration LP bound (N of the best plan fixed) | bp_probe at best x (1 + 1e-5) | seconds |")
    print("|---|---|---|---|---|---|---|")
    t0 = time.time()
    for fam, comps, machines in [("tiny", 5, 5), ("hetero", 6, 6), ("hetero", 8, 10)]:
        t1 = time.time()
        inst = instance(fam, comps, machines)
        d = prepare(planner.load_instance(inst))
        r = planner.solve(inst, "throughput", "exact.milp-highs", time_limit=limit)
        n = counts_from_plan(d, r.plan)
        N = [sum(row) for row in n]
        best = even_rate(d, n)

        def pct(x: float) -> str:
            return f"{x:.1f} ({x / best - 1:+.2%})"

        _, compact = _bisect(lambda R: BP.compact_lp_feasible(d, R)[0], best, upper_bound(d), 1e-4)

        def config(R: float, fixed=None) -> bool:
            lp = BP.ConfigLP(d, R, fixed=fixed)
            return lp.run(time.monotonic() + probe_limit)[0] != "infeasible"

        clo, chi = _bisect(config, best, compact, 1e-3)
        _, fixed = _bisect(lambda R: config(R, {c: N[c] for c in range(d.C)}), best, best * 1.06, 2e-4)
        st = {}
        t2 = time.time()
        out, nn = BP.bp_probe(d, best * (1 + 1e-5), time.monotonic() + bp_limit, st)
        bp = f"{out} ({st['nodes']} nodes, {time.time() - t2:.0f} s" + (f", rate {even_rate(d, nn):.1f})" if nn else ")")
        cfg = pct(chi) if chi < compact else f"in [{clo:.1f}, {compact:.1f}]"
        print(f"| {fam} {comps} x {machines} | {best:.1f} ({r.status.value}), N = {N} | {pct(compact)} | {cfg} | {pct(fixed)} "
              f"| {bp} | {time.time() - t1:.0f} |", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}; total wall time {time.time() - t0:.0f} s")


SHAPES = {"hetero6": ("hetero", 6, 6), "hetero8": ("hetero", 8, 10), "tiny5": ("tiny", 5, 5), "hetero5": ("hetero", 5, 5),
          "tiny8": ("tiny", 8, 10)}


def enumeration(cases: list[str], rates: dict[str, float], dives: int, budget: float, partial_fill: bool) -> None:
    from formulations import _tputenum as EN
    from formulations.throughput import prepare

    print(f"load average at start: {os.getloadavg()[0]:.2f}; node LP capacities: "
          + ("whole-instance fill (CountLP.fill_caps)" if partial_fill else "cap_j") + "\n")
    print("| instance | probe rate R | classes (range product) | dives | est. vectors not cut by the LP, by depth "
          "| complete N: LP / + fill / not refuted by MILP | ms per LP / fill test / MILP | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    t0 = time.time()
    for name in cases:
        fam, comps, machines = SHAPES[name]
        d = prepare(planner.load_instance(instance(fam, comps, machines)))
        R = rates[name] * (1 + 1e-5)
        t1 = time.time()
        e = EN.estimate(d, R, dives, time.monotonic() + budget, partial_fill=partial_fill)
        if "depth" not in e:
            print(f"| {fam} {comps} x {machines} | {R:.2f} | a component has no class left: R is refuted |  |  |  |  |  |")
            continue
        depth = ", ".join(f"{x:.2g}" for x in e["depth"])
        print(f"| {fam} {comps} x {machines} | {R:.2f} | {e['classes']} ({e['range_product']:.2g}) | {e['dives']} | {depth} "
              f"| {e['leaves_lp']:.2g} / {e['leaves_fill']:.2g} / {e['leaves_milp']:.2g} ({e['milp_unknown']} unknown) "
              f"| {e['lp_ms']:.1f} ({e['lps']}) / {e['fill_ms']:.1f} ({e['fill_tests']}) / {e['milp_ms']:.0f} ({e['milps']}) "
              f"| {time.time() - t1:.0f} |", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}; total wall time {time.time() - t0:.0f} s")


def count_search(cases: list[str], limit: float, start_bp: float | None = None) -> None:
    """Run the count-vector search (formulations/_tputenum.py) from the exact methods' start: the
    weighted-routing bound's split rounded (round_even), then polish_counts for 10 s; or, with
    ``start_bp``, from the placement tput-bp's branch and price finds at that rate (bp_probe,
    at most 600 s)."""
    from formulations import _tputbp as BP
    from formulations import _tputenum as EN
    from formulations import throughput as T

    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    print("| instance | start | search: rate, status | nodes (LPs) | complete N: reached / cut by fill / refuted by MILP "
          "| incumbents | evaluator | seconds (start + search) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in cases:
        fam, comps, machines = SHAPES[name]
        inst = instance(fam, comps, machines)
        d = T.prepare(planner.load_instance(inst))
        t0 = time.time()
        if start_bp is not None:
            out, n = BP.bp_probe(d, start_bp, time.monotonic() + 600.0)
            if n is None:
                print(f"| {fam} {comps} x {machines} | bp_probe at {start_bp}: {out} |  |  |  |  |  |  |")
                continue
            r = T.even_rate(d, n)
        else:
            _, shares = T.weighted_bound(d, 20.0)
            n = T.canonical(d, T.round_even(d, shares, None))
            n, r = T.polish_counts(d, n, time.monotonic() + 10.0)
        t1 = time.time()
        st: dict = {}
        best, bn, proven = EN.search(d, r, n, time.monotonic() + limit, stats=st, probe_limit=5.0)
        t2 = time.time()
        ev = planner.evaluate(inst, T.make_plan(d, bn, best), "throughput")
        print(f"| {fam} {comps} x {machines} | {r:.2f} | {best:.2f}, {'proven' if proven else 'not proven'} "
              f"| {st['nodes']} ({st['lps']}) | {st['leaves']} / {st['fill_cut']} / {st['milp_refuted']} "
              f"({st['undecided']} undecided) | {st['incumbents']} | {'feasible' if ev['feasible'] else ev['violations']} "
              f"| {t1 - t0:.0f} + {t2 - t1:.0f} |", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


def bp_chain(case: str, start_limit: float, probe_limit: float, total: float, polish_s: float,
             first: float | None = None, save: str = "", start_from: str = "") -> None:
    """Chain tput-bp's branch and price as a plan search (session 37): from exact.milp-highs's
    plan within ``start_limit``, probe ``bp_probe`` at best x (1 + 1e-5) (at most
    ``probe_limit`` s each); each placement it returns is rated exactly, polished
    (``polish_counts``, at most ``polish_s`` s) and checked by the evaluator, and becomes the next
    best. Stops at a probe that is not feasible ("infeasible" is the probe's certified refutation:
    no even placement sustains that rate) or after ``total`` s of probes. ``first``: the first
    probe's rate instead (a probe's depth-first path depends on its rate). ``save``: a JSON file
    that gets every plan the chain accepts as it is found (its exact rate, its per-machine counts
    and the plan), so a long run loses nothing; ``start_from``: such a file, whose counts are the
    start instead of exact.milp-highs's plan (session 39: the proof probe just above a plan found
    in an earlier run)."""
    import json
    from formulations import _tputbp as BP
    from formulations import throughput as T

    fam, comps, machines = SHAPES[case]
    inst = instance(fam, comps, machines)
    d = T.prepare(planner.load_instance(inst))
    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    if start_from:
        try:
            saved = json.loads(Path(start_from).read_text())
            n, saved_case = saved["n"], saved["case"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"--chain-from {start_from}: not a file --chain-save wrote ({e})")
        if saved_case != case:
            raise SystemExit(f"--chain-from {start_from}: its plan is for {saved_case!r}, not {case!r}")
        if len(n) != len(d.comps) or any(len(row) != d.J for row in n):
            raise SystemExit(f"--chain-from {start_from}: its counts are not {len(d.comps)} x {d.J} ({case})")
        n = T.canonical(d, n)
        best = T.even_rate(d, n)
        ev = planner.evaluate(inst, T.make_plan(d, n, best), "throughput")
        if not ev["feasible"]:
            raise SystemExit(f"--chain-from {start_from}: its plan fails the evaluator: {ev['violations']}")
        print(f"{fam} {comps} x {machines}: start from {start_from}: {best!r} (evaluator: feasible)\n")
    else:
        r0 = planner.solve(inst, "throughput", "exact.milp-highs", time_limit=start_limit)
        if not r0.ok:
            raise SystemExit(f"exact.milp-highs found no plan in {start_limit} s: {r0.message}")
        n = T.canonical(d, T.counts_from_plan(d, r0.plan))
        best = T.even_rate(d, n)
        print(f"{fam} {comps} x {machines}: exact.milp-highs at {start_limit:.0f} s: {r0.status.value} {best:.2f}, "
              f"bound {r0.bound:.2f} ({r0.seconds:.1f} s)\n")
    print("| step | probe rate | bp_probe | boxes | seconds | rate found | polished | N | evaluator |")
    print("|---|---|---|---|---|---|---|---|---|")
    t0, step = time.monotonic(), 0
    while time.monotonic() - t0 < total:
        step += 1
        R = first if step == 1 and first is not None else best * (1 + 1e-5)
        st: dict = {}
        t1 = time.monotonic()
        out, nn = BP.bp_probe(d, R, t1 + min(probe_limit, total - (t1 - t0)), st)
        sec = time.monotonic() - t1
        if nn is None:
            print(f"| {step} | {R:.2f} | {out} | {st.get('nodes', 0)} | {sec:.1f} |  |  |  |  |", flush=True)
            break
        found = T.even_rate(d, nn)
        pn, pr = T.polish_counts(d, T.canonical(d, nn), time.monotonic() + polish_s)
        if pr < found:
            pn, pr = T.canonical(d, nn), found
        plan = T.make_plan(d, pn, pr)
        ev = planner.evaluate(inst, plan, "throughput")
        print(f"| {step} | {R:.2f} | {out} | {st.get('nodes', 0)} | {sec:.1f} | {found:.2f} | {pr:.2f} | "
              f"{[sum(row) for row in pn]} | {'feasible' if ev['feasible'] else ev['violations']} |", flush=True)
        if not ev["feasible"]:
            break
        best, n = pr, pn
        if save:
            Path(save).write_text(json.dumps({"case": case, "rate": pr, "n": [list(map(int, row)) for row in pn],
                                              "plan": plan.model_dump(mode="json")}, indent=1))
    print(f"\nbest {best:.2f} after {time.monotonic() - t0:.0f} s of probes; load average at end: {os.getloadavg()[0]:.2f}")


def nasiri(nodes: list[int], routings: list[str], limit: float, solvers: list[str]) -> None:
    """(branch tput-six) The Nasiri reproduction's instances (`planner reproduce --quick`, docs/results.md
    section 2: micro, seed 2, 3 instances, heterogeneous machines, one slot each) solved by each
    exact method within ``limit``, one solve at a time: status, rate, bound, seconds, and the
    stages' figures (polish, count-vector search) when the method reports them. ``exact.cpsat-flows``
    is exact.cpsat with weighted_cuts=False (branch cpsat-weighted)."""
    from planner.generate import generate
    from planner.reproduce import _with_routing

    t0 = time.time()
    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    print("| instance | machines | method | status | rate | bound | seconds | load | polish (rate, vectors, screened, s) "
          "| count search (range, estimate, LPs, proven, s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in nodes:
        base = generate("micro", 3, 2, clusters="heterogeneous", nodes=n, slots=1, racks=1)
        for routing in routings:
            for inst in _with_routing(base, routing):
                for m in solvers:
                    method, opts = (m, {}) if m != "exact.cpsat-flows" else ("exact.cpsat", {"weighted_cuts": False})
                    t = time.time()
                    r = planner.solve(inst, "throughput", method, time_limit=limit, **opts)
                    sec = time.time() - t
                    po = r.details.get("polish")
                    pol = (f"{po['rate']:.2f}, {po.get('count_vectors', 0)}, {po.get('screened', '-')}, {po['seconds']:.1f}"
                           if po else "-")
                    cs = r.details.get("count_search")
                    if cs:
                        est = f"{cs['estimate']:.3g}" if cs.get("estimate") is not None else "-"
                        csx = (f"{cs.get('range', float('nan')):.3g}, {est}, {cs.get('lps', 0) + cs.get('nodes', 0)}, "
                               f"{'skipped' if cs.get('skipped') else cs['proven']}, {cs['seconds']:.1f}")
                    else:
                        csx = "-"
                    obj = f"{r.objective:.2f}" if r.objective is not None else "-"
                    bd = f"{r.bound:.2f}" if r.bound is not None else "-"
                    print(f"| {inst.name} | {n} | {m} | {r.status.value} | {obj} | {bd} | {sec:.1f} | "
                          f"{os.getloadavg()[0]:.1f} | {pol} | {csx} |", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}; total wall time {time.time() - t0:.0f} s")


def weighted(cases: list[str], limit: float, solvers: list[str], repeat: int) -> None:
    """(branch cpsat-weighted) The scaling instances (SHAPES, and tiny8 = tiny 8 x 10) with routing
    set to weighted, solved by each method within ``limit``, ``repeat`` times each, one solve at a
    time. ``exact.cpsat-flows`` is exact.cpsat with weighted_cuts=False (the rounded integer-flow
    bisection of the branches before). Prints status, rate, bound, seconds, the load after the
    solve, and the cut loop's figures (probes, master solves, cuts, seconds in CP-SAT and in the
    LPs and certificates)."""
    from planner.reproduce import _with_routing

    shapes = dict(SHAPES, tiny8=("tiny", 8, 10))
    t0 = time.time()
    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    print("| instance | method | status | rate | bound | seconds | load | probes / master solves / cuts | CP-SAT s / LP+cut s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in cases:
        fam, comps, machines = shapes[name]
        inst = _with_routing([planner.load_instance(instance(fam, comps, machines))], "weighted")[0]
        for m in solvers:
            method, opts = (m, {}) if m != "exact.cpsat-flows" else ("exact.cpsat", {"weighted_cuts": False})
            for _ in range(repeat):
                t = time.time()
                r = planner.solve(inst, "throughput", method, time_limit=limit, **opts)
                sec = time.time() - t
                ev = planner.evaluate(inst, r.plan, "throughput") if r.plan is not None else None
                if ev is not None and not ev["feasible"]:
                    raise SystemExit(f"{m} on {name}: the plan fails the evaluator: {ev['violations']}")
                wc = r.details.get("weighted_cuts")
                cuts = f"{wc['probes']} / {wc['solves']} / {wc['cuts']}" if wc else "-"
                secs = f"{wc['master_s']:.1f} / {wc['cut_s']:.1f}" if wc else "-"
                obj = f"{r.objective:.2f}" if r.objective is not None else "-"
                bd = f"{r.bound:.2f}" if r.bound is not None else "-"
                print(f"| {fam} {comps} x {machines} weighted | {m} | {r.status.value} | {obj} | {bd} | {sec:.1f} | "
                      f"{os.getloadavg()[0]:.1f} | {cuts} | {secs} |", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}; total wall time {time.time() - t0:.0f} s")


def consistent_fill_caps(lp, fixed: dict[int, int], near: float = 1e-4, budget: int = 20000) -> list[float]:
    """(branch tput-six, measured only) As ``CountLP.fill_caps``, but a free component puts pieces
    of one class only on a machine (as in any placement: N_c is one number),
    ``_tputenum.best_fill_groups``; still a valid upper bound on a machine's load by whole
    instances at R. Sets each type's load row of ``lp`` to its fill; returns the fills (per type)."""
    import highspy

    from formulations._tputenum import best_fill_groups
    from formulations.throughput import CAP_SLACK, piece_weight

    d, R = lp.d, lp.R
    fills = []
    for t, r in lp.load_row.items():
        j = lp.types[t][0]
        groups = []
        for c in range(d.C):
            opts = [(piece_weight(d, R, c, k, j), lp.caps[(c, k)][j]) for (cc, k) in lp.by_comp[c]
                    if fixed.get(c, k) == k and lp.caps[(c, k)][j] > 0]
            if opts:
                groups.append(opts)
        fill = best_fill_groups(groups, d.cap[j], d.K, near=near, budget=budget)
        fills.append(fill)
        lp.h.changeRowBounds(r, -highspy.kHighsInf, len(lp.types[t]) * (fill * (1 + CAP_SLACK) + CAP_SLACK))
    return fills


def partial_cuts(case: str, R: float, dives: int, seed: int, budget: int) -> None:
    """(branch tput-six) Class-consistent fill capacities at partial count vectors
    (``consistent_fill_caps`` above): random dives down the CountLP's tree at R (components
    fewest classes first, descending into a random child the CountLP keeps); at each node, every
    child is tested by the CountLP and, if kept, by the same LP with each type's capacity
    replaced by its class-consistent fill; prints per depth the children tested, kept by the
    CountLP, and kept by both, and Knuth's estimates of the nodes each keeps; and the root fills."""
    import random as _random

    from formulations import _tputenum as EN
    from formulations.throughput import classless, prepare

    d = prepare(planner.load_instance(instance(*SHAPES[case])))
    caps = EN.search_classes(d, R)
    ks = {c: sorted(k for (cc, k) in caps if cc == c) for c in range(d.C)}
    if classless(d.C, caps):
        print("no classes at R")
        return
    order = sorted(range(d.C), key=lambda c: len(ks[c]))
    lp = EN.CountLP(d, R, caps)
    t0 = time.time()
    fills = consistent_fill_caps(lp, {}, budget=budget)
    caps_t = [d.cap[g[0]] for g in lp.types]
    root_ok = lp.feasible()
    lp.plain_caps()
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {case} at R = {R:.2f}; classes {len(caps)}; "
          f"root fills / caps per type: {[f'{f:.2f}/{c:.0f}' for f, c in zip(fills, caps_t)]}; root LP with them "
          f"{'feasible' if root_ok else 'INFEASIBLE'} ({time.time() - t0:.2f} s)")
    rng = _random.Random(seed)
    tested = [0] * d.C
    kept_lp = [0] * d.C
    kept_both = [0] * d.C
    est_lp = [0.0] * d.C
    est_both = [0.0] * d.C
    fill_s = 0.0
    for _ in range(dives):
        prod = 1.0
        N: dict[int, int] = {}
        for pos, c in enumerate(order):
            kids, both = [], 0
            for k in ks[c]:
                lp.fix(c, k)
                tested[pos] += 1
                if not lp.feasible():
                    continue
                kids.append(k)
                kept_lp[pos] += 1
                t = time.perf_counter()
                consistent_fill_caps(lp, {**N, c: k}, budget=budget)
                ok = lp.feasible()
                lp.plain_caps()
                fill_s += time.perf_counter() - t
                both += ok
            kept_both[pos] += both
            est_both[pos] += prod * both
            prod *= len(kids)
            est_lp[pos] += prod
            if not kids:
                break
            N[c] = rng.choice(kids)
            lp.fix(c, N[c])
        for c in order:
            lp.fix(c, None)
    print("\n| depth | children tested | kept by the CountLP | kept also by consistent fill | est. nodes kept by the LP | est. kept by both |")
    print("|---|---|---|---|---|---|")
    for pos in range(d.C):
        print(f"| {pos + 1} | {tested[pos]} | {kept_lp[pos]} | {kept_both[pos]} | {est_lp[pos] / dives:.3g} | "
              f"{est_both[pos] / dives:.3g} |")
    print(f"\n{dives} dives, {time.time() - t0:.0f} s ({fill_s:.0f} s in the fills and their LPs); load average "
          f"at end {os.getloadavg()[0]:.2f}")


def lns_variants(cases: list[str], limit: float, seeds: int, method: str) -> None:
    """The neighbourhood search over count vectors (option ``lns``, session 49) in whole solves:
    per case and seed, the code's default (no ``lns``), ``lns`` after the polish, ``lns`` in
    place of the polish, and the same with 1 s probes (``LNS_PROBE``), each checked by the
    evaluator."""
    from formulations import throughput as T

    print(f"load average at start: {os.getloadavg()[0]:.2f}; {method}, {limit:.0f} s\n")
    print("| case | seed | variant | status | rate / bound | seconds | lns stage: rate, seconds, moves, probes (unknown) |")
    print("|---|---|---|---|---|---|---|")
    variants = [("default (lns off)", {}, 2.0), ("polish, then lns", {"lns": True}, 2.0),
                ("lns, no polish", {"lns": True, "polish": False}, 2.0),
                ("lns, no polish, 1 s probes", {"lns": True, "polish": False}, 1.0)]
    probe = T.LNS_PROBE
    try:
        for case in cases:
            fam, comps, machines = SHAPES[case]
            inst = instance(fam, comps, machines)
            for seed in range(seeds):
                for name, opts, probe_s in variants:
                    T.LNS_PROBE = probe_s
                    r = planner.solve(inst, "throughput", method, time_limit=limit, seed=seed, **opts)
                    ev = planner.evaluate(inst, r.plan, "throughput") if r.plan is not None else {"feasible": False}
                    ln = r.details.get("lns")
                    stage = "" if ln is None else (f"{ln['rate']:.2f}, {ln['seconds']:.1f} s, {ln.get('moves', 0)}, "
                                                   f"{ln.get('probes', 0)} ({ln.get('unknown', 0)})")
                    bound = "-" if r.bound is None else f"{r.bound:.2f}"
                    print(f"| {case} | {seed} | {name} | {r.status.value}{'' if ev['feasible'] else ' (EVALUATOR REJECTS)'} "
                          f"| {r.objective or 0:.2f} / {bound} | {r.seconds:.1f} | {stage} |", flush=True)
    finally:
        T.LNS_PROBE = probe


def lagrangian_gap(prob: dict, grid: int = 401) -> tuple[float, float]:
    """A recorded pricing problem's Lagrangian bound: for mu >= 0 on the capacity row,
    P <= mu cap + max over configurations with at most K instances of sum (price - mu weight) n
    (a DP over instances; per component one class). Returns (the least bound on a grid of mu in
    [0, the best price per weight], that mu / the best price per weight)."""
    K, cap = prob["K"], prob["cap"]
    w, p, u, comp = (np.array(prob[x]) for x in ("w", "p", "u", "comp"))
    mus = np.linspace(0.0, float(np.max(p / w)), grid)
    D = np.zeros((grid, K + 1))  # D[:, m]: the best with at most m instances, components so far
    for c in sorted(set(comp.tolist())):
        sel = comp == c
        red = p[sel][None, :] - mus[:, None] * w[sel][None, :]  # per-instance reduced price, by mu
        new = D.copy()
        for n in range(1, K + 1):
            ok = u[sel] >= n
            if not ok.any():
                break
            g = n * red[:, ok].max(axis=1)
            for m in range(n, K + 1):
                new[:, m] = np.maximum(new[:, m], D[:, m - n] + g)
        D = new
    ub = mus * cap + D[:, K]
    i = int(np.argmin(ub))
    return float(ub[i]), float(mus[i] / mus[-1]) if mus[-1] > 0 else 0.0


def bp_pricing(case: str, rate: float, limit: float, sample: int, variants: list[str]) -> None:
    """(session 50) Where the branch and price's time goes: bp_probe at ``rate`` x (1 + 1e-5) for
    at most ``limit`` seconds per variant: ``plain`` (class_caps at the root, no box filter, the
    tree of sessions 37-49), ``root`` (lp_filter repeated to a fixpoint at the root), ``box``
    (that, and lp_filter in every box: bp_probe's default since session 50) and ``greedy`` (box,
    and greedy pricing first). Every MILP pricing problem is recorded (items, seconds, optimum);
    for the first variant's, a sample's Lagrangian bound (``lagrangian_gap``) is compared with
    the MILP's optimum."""
    from formulations import _tputbp as BP
    from formulations.throughput import class_caps, prepare

    fam, comps, machines = SHAPES[case]
    d = prepare(planner.load_instance(instance(fam, comps, machines)))
    R = rate * (1 + 1e-5)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {fam} {comps} x {machines}, R = {R:.3f}, at most "
          f"{limit:.0f} s a variant\n")
    print("| variant | root classes | answer | seconds | boxes | CG rounds (exact) | pricing s "
          "| master s | MILP pricings | items (median / max) | s per MILP pricing (median / 90 % / max) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    recorded: list[dict] = []
    first: list[dict] = []
    orig = BP.ConfigLP.price_milp

    def price_milp(lp, t, pi):
        j = lp.types[t][0]
        items = [i for i in range(len(lp.classes)) if pi[i] > 1e-12 and lp.caps[lp.classes[i]][j] > 0]
        t0 = time.perf_counter()
        out = orig(lp, t, pi)
        recorded.append({"K": d.K, "cap": d.cap[j] * (1 + BP.SLACK) + BP.SLACK, "sec": time.perf_counter() - t0,
                         "val": out[0], "comp": [lp.classes[i][0] for i in items],
                         "w": [lp._w(t, i) for i in items], "p": [float(pi[i]) for i in items],
                         "u": [lp.caps[lp.classes[i]][j] for i in items]})
        return out

    BP.ConfigLP.price_milp = price_milp
    try:
        for v in variants:
            t0 = time.monotonic()
            caps = class_caps(d, R)
            if v != "plain":
                caps = BP.filter_classes(d, R, caps)
            recorded.clear()
            st: dict = {}
            out, _ = BP.bp_probe(d, R, t0 + limit, st, caps=caps, box_filter=v in ("box", "greedy"), greedy=v == "greedy")
            secs = np.array([x["sec"] for x in recorded]) if recorded else np.zeros(1)
            items = [len(x["w"]) for x in recorded] or [0]
            print(f"| {v} | {len(caps)} | {out} | {time.monotonic() - t0:.1f} | {st['nodes']} "
                  f"| {st['iters']} ({st['exact_rounds']}) | {st['pricing_s']:.1f} | {st['lp_s']:.1f} | {len(recorded)} "
                  f"| {int(np.median(items))} / {max(items)} "
                  f"| {np.median(secs):.3f} / {np.percentile(secs, 90):.3f} / {secs.max():.3f} |", flush=True)
            if not first:
                first = list(recorded)
    finally:
        BP.ConfigLP.price_milp = orig
    if sample <= 0 or not first:
        return
    print(f"\nLagrangian bound of the capacity row against the MILP's optimum, {variants[0]}'s pricing problems "
          f"(every {max(1, len(first) // sample)}th by size):\n")
    print("| items | MILP optimum | Lagrangian bound | relative gap | best mu / largest price per weight |")
    print("|---|---|---|---|---|")
    ordered = sorted(first, key=lambda x: len(x["w"]))
    for x in ordered[::max(1, len(ordered) // sample)]:
        ub, mu = lagrangian_gap(x)
        print(f"| {len(x['w'])} | {x['val']:.6f} | {ub:.6f} | {(ub - x['val']) / max(x['val'], 1e-12):.2e} | {mu:.3f} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")

def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="two small sizes, 10 s (a smoke run)")
    ap.add_argument("--solvers", default=",".join(SOLVERS), help="comma-separated methods")
    ap.add_argument("--relaxations", action="store_true", help="compact against configuration LP bounds (tput-bp)")
    ap.add_argument("--probe-limit", type=float, default=90.0, help="--relaxations: seconds per configuration-LP probe")
    ap.add_argument("--bp-limit", type=float, default=240.0, help="--relaxations: seconds for the branch and price probe")
    ap.add_argument("--enumeration", action="store_true", help="size of a search over count vectors (tput-enum)")
    ap.add_argument("--cases", default="hetero6,hetero8", help="--enumeration: hetero6, hetero8, tiny5")
    ap.add_argument("--rate6", type=float, default=2644.87, help="--enumeration: probe rate / (1 + 1e-5), hetero 6 x 6")
    ap.add_argument("--rate8", type=float, default=9532.0, help="--enumeration: probe rate / (1 + 1e-5), hetero 8 x 10")
    ap.add_argument("--rate5", type=float, default=2672.31, help="--enumeration: probe rate / (1 + 1e-5), tiny 5 x 5")
    ap.add_argument("--dives", type=int, default=40, help="--enumeration: dives per instance")
    ap.add_argument("--budget", type=float, default=150.0, help="--enumeration: seconds per instance")
    ap.add_argument("--partial-fill", action="store_true", help="--enumeration: fill capacities in every node's LP")
    ap.add_argument("--search", default="", help="run the count-vector search on these cases (tiny5, hetero5, hetero6, hetero8)")
    ap.add_argument("--search-limit", type=float, default=600.0, help="--search: seconds per instance")
    ap.add_argument("--start-bp", type=float, default=None, help="--search: start from bp_probe's placement at this rate")
    ap.add_argument("--shapes", default="", help="default run: only these cases (hetero5, hetero6, hetero8, tiny5, tiny8), "
                    "or any size as FAMILYCxM, e.g. hetero7x8 (7 components on 8 machines; the frontier of session 53)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="default run: a method option for every solve (repeatable), e.g. bp_search=false")
    ap.add_argument("--bp-chain", default="", help="chain bp_probe as a plan search on this case (session 37)")
    ap.add_argument("--chain-total", type=float, default=1500.0, help="--bp-chain: seconds of probes in all")
    ap.add_argument("--chain-start", type=float, default=None, help="--bp-chain: the first probe's rate")
    ap.add_argument("--chain-save", default="", metavar="FILE",
                    help="--bp-chain: write every plan the chain accepts to this JSON file (rate, counts, plan)")
    ap.add_argument("--chain-from", default="", metavar="FILE",
                    help="--bp-chain: start from the counts a --chain-save file holds instead of exact.milp-highs")
    ap.add_argument("--chain-polish", type=float, default=10.0, help="--bp-chain: seconds of polish per plan found")
    ap.add_argument("--bp-pricing", default="", metavar="CASE",
                    help="where the branch and price's time goes, and its pricing's Lagrangian bound (session 50)")
    ap.add_argument("--pricing-rate", type=float, default=None,
                    help="--bp-pricing: probe rate / (1 + 1e-5) (default: the case's best plan known)")
    ap.add_argument("--sample", type=int, default=15, help="--bp-pricing: pricing problems whose bound is printed")
    ap.add_argument("--variants", default="plain,root,box,greedy", help="--bp-pricing: plain, root, box, greedy")
    ap.add_argument("--lns", default="", help="the neighbourhood search over count vectors in whole solves "
                    "(session 49): comma-separated cases, e.g. tiny8,hetero8; --repeat seeds, --solvers one method")
    ap.add_argument("--nasiri", default="", help="the Nasiri reproduction's micro instances on these machine counts (3,6)")
    ap.add_argument("--routings", default="even,weighted", help="--nasiri: routings")
    ap.add_argument("--weighted", default="", help="scaling cases with weighted routing (cpsat-weighted): "
                    "hetero5, hetero6, hetero8, tiny5, tiny8; --solvers may name exact.cpsat-flows")
    ap.add_argument("--repeat", type=int, default=1, help="--weighted: solves per case and method; --lns: seeds 0..N-1")
    ap.add_argument("--partial-cuts", default="", help="class-consistent fills at partial vectors (tput-six): a case")
    ap.add_argument("--rate", type=float, default=None, help="--partial-cuts: probe rate (default: the case's best x (1 + 1e-5))")
    ap.add_argument("--seed", type=int, default=0, help="--partial-cuts: dives' seed")
    ap.add_argument("--fill-budget", type=int, default=20000, help="--partial-cuts: search nodes per fill")
    a = ap.parse_args()
    if a.bp_chain:
        if a.bp_chain not in SHAPES:
            ap.error(f"--bp-chain: unknown case {a.bp_chain!r}; known: {', '.join(SHAPES)}")
        bp_chain(a.bp_chain, a.limit, a.bp_limit, a.chain_total, a.chain_polish, a.chain_start, a.chain_save,
                 a.chain_from)
        return
    if a.bp_pricing:
        best = {"hetero8": 9609.580624770366, "tiny8": 1866.1775261185103, "hetero6": 2644.8687, "tiny5": 2672.31}
        if a.bp_pricing not in SHAPES or (a.pricing_rate is None and a.bp_pricing not in best):
            ap.error(f"--bp-pricing: unknown case {a.bp_pricing!r} (or give --pricing-rate); known: {', '.join(best)}")
        variants = [v for v in a.variants.split(",") if v]
        if not variants or set(variants) - {"plain", "root", "box", "greedy"}:
            ap.error(f"--variants: choose from plain, root, box, greedy (got {a.variants!r})")
        bp_pricing(a.bp_pricing, a.pricing_rate or best[a.bp_pricing], a.bp_limit, a.sample, variants)
        return
    if a.lns:
        bad = [c for c in a.lns.split(",") if c not in SHAPES]
        if bad:
            ap.error(f"--lns: unknown case {bad[0]!r}; known: {', '.join(SHAPES)}")
        solver = a.solvers.split(",")[0] if a.solvers != ",".join(SOLVERS) else "exact.milp-highs"
        lns_variants(a.lns.split(","), a.limit, a.repeat, solver)
        return
    if a.partial_cuts:
        best = {"hetero6": a.rate6, "hetero8": a.rate8, "tiny5": a.rate5}
        R = a.rate if a.rate is not None else best[a.partial_cuts] * (1 + 1e-5)
        partial_cuts(a.partial_cuts, R, a.dives, a.seed, a.fill_budget)
        return
    if a.nasiri:
        nasiri([int(x) for x in a.nasiri.split(",") if x], [x for x in a.routings.split(",") if x], a.limit,
               [m for m in (a.solvers if a.solvers != ",".join(SOLVERS) else "exact.cpsat,exact.milp-cbc,exact.milp-highs").split(",") if m])
        return
    if a.weighted:
        names = [x for x in a.weighted.split(",") if x]
        known = set(SHAPES) | {"tiny8"}
        if set(names) - known:
            ap.error(f"--weighted: unknown case(s) {sorted(set(names) - known)}; known: {', '.join(sorted(known))}")
        weighted(names, a.limit, [m for m in (a.solvers if a.solvers != ",".join(SOLVERS)
                                              else "exact.cpsat,exact.milp-cbc,exact.milp-highs").split(",") if m], a.repeat)
        return
    if a.search:
        names = [x for x in a.search.split(",") if x]
        if set(names) - set(SHAPES):
            ap.error(f"--search: unknown case(s) {sorted(set(names) - set(SHAPES))}; known: {', '.join(SHAPES)}")
        count_search(names, a.search_limit, a.start_bp)
        return
    if a.enumeration:
        rates = {"hetero6": a.rate6, "hetero8": a.rate8, "tiny5": a.rate5}
        names = [x for x in a.cases.split(",") if x]
        if set(names) - set(rates):
            ap.error(f"--cases: unknown case(s) {sorted(set(names) - set(rates))}; known: {', '.join(rates)}")
        enumeration(names, rates, a.dives, a.budget, a.partial_fill)
        return
    if a.relaxations:
        relaxations(a.limit, a.probe_limit, a.bp_limit)
        return
    solvers = [m for m in a.solvers.split(",") if m]
    cases = [("hetero", 5, 5), ("hetero", 6, 6), ("hetero", 8, 10), ("tiny", 5, 5), ("tiny", 8, 10)]
    if a.quick:
        cases, a.limit = [("hetero", 4, 4), ("tiny", 4, 4)], 10.0
    if a.shapes:
        names = {f"{f}{c}": (f, c, m) for f, c, m in cases}
        want = [x for x in a.shapes.split(",") if x]
        for x in want:
            sized = re.fullmatch(r"(hetero|tiny)(\d+)x(\d+)", x)
            if sized and x not in names:
                names[x] = (sized[1], int(sized[2]), int(sized[3]))
        if set(want) - set(names):
            ap.error(f"--shapes: unknown case(s) {sorted(set(want) - set(names))}; known: {', '.join(names)}, "
                     "or FAMILYCxM with FAMILY hetero or tiny (e.g. hetero7x8)")
        cases = [names[x] for x in want]
    opts = {}
    for kv in a.option:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            ap.error(f"--option {kv!r}: expected KEY=VALUE")
        opts[k] = {"true": True, "false": False}.get(v.lower(), v)
    t0 = time.time()
    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    print("| instance | components x machines | identical groups | weighted bound | start (rounded) | start (polished) | best rate | "
          + " | ".join(solvers) + " |")
    print("|---|---|---|---|---|---|---|" + "---|" * len(solvers))
    from formulations.throughput import prepare, sym_pairs

    for fam, comps, machines in cases:
        inst = instance(fam, comps, machines)
        d = prepare(planner.load_instance(inst))
        rs = [planner.solve(inst, "throughput", m, time_limit=a.limit, **opts) for m in solvers]
        best = max((r.objective for r in rs if r.ok), default=float("nan"))
        wb = next((r.details.get("weighted_bound") for r in rs if r.details.get("weighted_bound")), None)
        st = max((r.details.get("start_rate", -1) for r in rs), default=-1)
        po = max((r.details.get("polish", {}).get("rate", -1) for r in rs), default=-1)
        print(f"| {fam} | {comps} x {machines} | {len(sym_pairs(d))} pairs | {wb:.1f} | {st:.1f} | {po:.1f} | {best:.1f} | "
              + " | ".join(f"{cell(r)}, {r.objective:.2f} / {r.bound:.2f}" + _bp_note(r) if r.ok and r.bound
                           else cell(r) for r in rs) + " |", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}; total wall time {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
