"""Re-measure every goal cell of the exact-formulations issue in one run, and say which cells
moved against a recorded baseline.

The goals (issue 3): network and traffic at 100 executors on 10 nodes with 5-12 components
(generator seeds 0, and 1 and 2 where the summary records them), slots on the Shukla
micro-DAGs at 50/100/200 tuples/s and on the application-style DAGs, throughput on 10 machines x
8 components with both routings, GAP chu1997 types c and d at 60 s. The separate benchmarks
measure each problem in depth; this one re-runs their goal instances (the same generators and
seeds) so that a change that slows or breaks one of them is seen, whichever problem the
change was for. Session 34 found seed 1's 100x11x10 no longer proven, six sessions after it
last was: nobody had re-run it.

Each cell runs in a fresh interpreter (``--one``), so no cell inherits another's memory or
threads; a cell that crashes or hangs past its limit + 120 s is a row with status ``error``,
and the run goes on. Every finished row is appended to ``--out`` (JSON lines) at once, so an
interrupted run keeps what it measured. Every plan is checked by the independent evaluator;
a plan it refuses is the verdict ``PLAN FAILS``.

Verdicts against the baseline (``benchmarks/goals_baseline.json``, written by ``--record``):
``same``; ``improved`` (a better status, or a better objective); ``regressed`` (a worse status
or objective); ``DISAGREES`` (both proven optimal with different objectives: a correctness
alarm, never noise). Seconds are shown beside the baseline's, as a ratio: the machines are
shared and their speed varies (docs/benchmarks.md), so time alone is never a verdict.

Usage:
    PYTHONPATH=. python benchmarks/goals.py                      # every group, each cell's back ends, compare
    PYTHONPATH=. python benchmarks/goals.py --only network,traffic --backends exact.cpsat,exact.milp-highs
    PYTHONPATH=. python benchmarks/goals.py --record             # write the baseline from this run
    PYTHONPATH=. python benchmarks/goals.py --list               # the cells, without running them
    PYTHONPATH=. python benchmarks/goals.py --check              # exit 1 if any cell regressed
    git worktree add /tmp/before HEAD~3                          # before and after, alternating, 3 rounds:
    PYTHONPATH=. python benchmarks/goals.py --only network-s1/100x11x10 --repo /tmp/before --repo . --repeat 3
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "benchmarks" / "goals_baseline.json"
SENSE = {"network": "min", "traffic": "min", "slots": "min", "throughput": "max", "gap": "min"}
RANK = {"optimal": 3, "infeasible": 3, "feasible": 2, "unknown": 1, "error": 0}
REL = 1e-6  # objectives closer than this (relative) are the same


@dataclass(frozen=True)
class Cell:
    """One goal instance: ``build`` names how ``instance()`` makes it."""

    group: str
    name: str
    problem: str
    build: tuple
    limit: float = 60.0
    methods: tuple = ("exact.cpsat",)  # run unless --backends names others

    @property
    def key(self) -> str:
        return f"{self.group}/{self.name}"


def cells() -> list[Cell]:
    """The goal cells, in the order they run (cheap groups first)."""
    out: list[Cell] = []
    for dag in ("linear", "diamond", "star"):
        for rate in (50, 100, 200):
            out.append(Cell("slots-micro", f"{dag}-{rate}", "slots", ("micro", dag, rate, False), 20.0))
            out.append(Cell("slots-micro-rate", f"{dag}-{rate}", "slots", ("micro", dag, rate, True), 20.0))
    for name in ("shukla-linear", "shukla-diamond", "shukla-star"):
        out.append(Cell("slots-shipped", name, "slots", ("shipped", name), 20.0))
    for size in range(5, 13):
        out.append(Cell("network-s0", f"100x{size}x10", "network", ("layered", 100, size, 10, 0, "network")))
    for size in (9, 10, 11, 12):
        out.append(Cell("network-s1", f"100x{size}x10", "network", ("layered", 100, size, 10, 1, "network")))
    for size in range(5, 13):
        out.append(Cell("traffic-s0", f"100x{size}x10", "traffic", ("layered", 100, size, 10, 0, "traffic")))
    for seed in (1, 2):
        for size in (5, 11, 12):
            out.append(Cell(f"traffic-s{seed}", f"100x{size}x10", "traffic", ("layered", 100, size, 10, seed, "traffic")))
    for routing in ("weighted", "even"):
        for fam, comps, machines in (("hetero", 5, 5), ("tiny", 5, 5), ("hetero", 8, 10), ("tiny", 8, 10)):
            # even routing: the MILPs are the back ends that prove it (CP-SAT's bisection proves
            # hetero 5 x 5 only; docs/formulations.md)
            out.append(Cell(f"throughput-{routing}", f"{fam}{comps}x{machines}", "throughput",
                            ("throughput", fam, comps, machines, routing),
                            methods=("exact.cpsat",) if routing == "weighted" else ("exact.cpsat", "exact.milp-highs")))
    for seed in (0, 1):
        for k in range(6):
            out.append(Cell(f"slots-app-s{seed}", f"{k:05d}", "slots", ("app", seed, k)))
    for name in ("c10100", "d10100", "d05200"):
        out.append(Cell("gap", name, "gap", ("gap", name), methods=("exact.cpsat", "exact.milp-highs")))
    return out


def shared_dir() -> Path | None:
    """../shared as the tests find it: $PLANNER_SHARED, beside the checkout, or /work/shared."""
    for cand in (os.environ.get("PLANNER_SHARED"), ROOT.parent / "shared", Path("/work/shared")):
        if cand and (Path(cand) / "data" / "gap").is_dir():
            return Path(cand)
    return None


def instance(build: tuple):
    """The instance of a cell (a dict, an Instance, or for GAP the parsed OR-Library problem)."""
    kind = build[0]
    if kind == "micro":
        from formulations.slots import shukla_micro_dag

        _, dag, rate, rate_usage = build
        inst = shukla_micro_dag(dag, rate, nodes=8)  # as benchmarks/bench_exact_throughput_slots.py
        if rate_usage:
            inst["params"] = {"slot_usage": "rate"}
        return inst
    if kind == "shipped":
        import planner

        return planner.load_instance(build[1])
    if kind == "layered":
        from formulations._gen import layered
        from planner.model import parse_instance

        _, e, c, n, seed, problem = build
        return parse_instance(layered(e, c, n, seed, problem=problem))
    if kind == "throughput":
        import formulations  # noqa: F401 - bound to this checkout's (or --repo's) code before the
        import planner       # benchmark module below puts its own checkout first on the path
        from planner.reproduce import _with_routing

        _, fam, comps, machines, routing = build
        sys.path.insert(0, str(ROOT / "benchmarks"))
        sys.path.insert(0, str(ROOT / "tests"))
        from bench_throughput_scaling import instance as tp_instance  # the scaling benchmark's instances

        inst = planner.load_instance(tp_instance(fam, comps, machines))
        return _with_routing([inst], routing)[0] if routing == "weighted" else inst
    if kind == "app":
        from planner.generate import generate

        _, seed, k = build
        return list(generate("shukla-app", k + 1, seed))[k]
    raise ValueError(f"unknown cell kind {kind!r}")


def run_one(cell: Cell, method: str) -> dict:
    """Solve one cell in this process and check the plan with the evaluator."""
    import planner

    row = {"cell": cell.key, "problem": cell.problem, "method": method, "limit": cell.limit}
    if cell.problem == "gap":
        return _run_gap(cell, method, row) | _code_of()
    inst = instance(cell.build)
    row.update(_code_of())
    t = time.perf_counter()
    r = planner.solve(inst, cell.problem, method, time_limit=cell.limit)
    row["seconds"] = round(time.perf_counter() - t, 2)
    row.update(status=r.status.value, objective=r.objective, bound=r.bound)
    if r.status.value == "error":  # the solver's own error (e.g. a missing module): the row says which
        row["message"] = (r.message or "")[:300]
    if r.plan is not None and r.status.value in ("optimal", "feasible"):
        ev = planner.evaluate(inst, r.plan, cell.problem)
        row["evaluator_ok"] = bool(ev["feasible"])
        if not ev["feasible"]:
            row["violations"] = [str(v) for v in ev["violations"]][:5]
    return row


def _code_of() -> dict:
    """The checkouts this process's ``planner`` and ``formulations`` were imported from (after the
    cell's instance was built: a benchmark module it imports puts its own checkout on the path)."""
    import formulations
    import planner

    return {"code": sorted({str(Path(m.__file__).resolve().parent.parent) for m in (planner, formulations)})}


def _run_gap(cell: Cell, method: str, row: dict) -> dict:
    """A chu1997 instance as benchmarks/bench_exact_throughput_slots.py's GAP table reads it;
    the best known value of data.csv goes into the row (``known``)."""
    import csv

    from formulations.gap import read_orlib, solve_gap

    base = shared_dir()
    if base is None:
        row.update(status="skipped", message="../shared/data/gap is absent")
        return row
    with open(base / "data" / "gap" / "data.csv") as f:
        known = {r["Path"]: r for r in csv.DictReader(f)}
    name = cell.build[1]
    data = read_orlib(base / "data" / "gap" / "chu1997" / name)
    backend = {"exact.cpsat": "cpsat", "exact.milp-cbc": "cbc", "exact.milp-highs": "highs"}[method]
    t = time.perf_counter()
    res = solve_gap(data, "min", backend, time_limit=cell.limit)
    row["seconds"] = round(time.perf_counter() - t, 2)
    row.update(status=res.status, objective=res.value, bound=res.bound,
               known=float(known[f"chu1997/{name}"]["Best known solution value"]))
    if res.assign is not None:  # checked here, not by the solver: every item once, capacities, the cost
        load = [0] * data.m
        for j, i in enumerate(res.assign):
            load[i] += data.weight[i][j]
        cost = sum(data.cost[i][j] for j, i in enumerate(res.assign))
        over = [i for i in range(data.m) if load[i] > data.capacity[i]]
        row["evaluator_ok"] = len(res.assign) == data.n and not over and abs(cost - res.value) < 1e-6
        if not row["evaluator_ok"]:
            row["violations"] = [f"agents over capacity: {over}", f"cost {cost} against the value {res.value}"]
    return row


def run_isolated(cell: Cell, method: str, repo: Path | None = None) -> dict:
    """``run_one`` in a fresh interpreter; a crash or a hang is an ``error`` row. ``repo``: a
    checkout whose code the child imports (its ``planner`` and ``formulations`` first on the
    path, so the generators too: they are seeded and have not changed since the goals were set),
    and the row names it (``repo``: its commit)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", cell.key, "--backends", method]
    code = ROOT if repo is None else repo
    env = dict(os.environ, PYTHONPATH=str(code) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t = time.perf_counter()
    tag = {} if repo is None else {"repo": _commit(repo)}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=cell.limit + 120, env=env)
    except subprocess.TimeoutExpired:
        return {"cell": cell.key, "problem": cell.problem, "method": method, "limit": cell.limit, **tag,
                "status": "error", "message": f"no answer within {cell.limit + 120:g} s",
                "seconds": round(time.perf_counter() - t, 2)}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"cell": cell.key, "problem": cell.problem, "method": method, "limit": cell.limit, **tag,
                "status": "error", "message": f"exit {p.returncode}: {tail[0][:300]}",
                "seconds": round(time.perf_counter() - t, 2)}
    row = {**json.loads(lines[-1]), **tag}
    if row.get("code") and row["code"] != [str(code.resolve())]:
        # a --repo comparison that ran another checkout's code would compare nothing
        return {"cell": cell.key, "problem": cell.problem, "method": method, "limit": cell.limit, **tag,
                "status": "error", "message": f"ran the code of {row['code']}, not of {code.resolve()}",
                "seconds": row.get("seconds")}
    return row


def verdict(base: dict | None, now: dict) -> str:
    """How ``now`` compares with the baseline row ``base`` of the same cell and method."""
    if now.get("evaluator_ok") is False:
        return "PLAN FAILS"
    if now["status"] == "skipped":
        return "skipped"
    if base is None:
        return "new"
    sense = SENSE[now["problem"]]
    b_rank, n_rank = RANK.get(base["status"], 0), RANK.get(now["status"], 0)
    bo, no = base.get("objective"), now.get("objective")
    if base["status"] == "optimal" and now["status"] == "optimal" and bo is not None and no is not None:
        if abs(bo - no) > REL * max(1.0, abs(bo)):
            return "DISAGREES"
        return "same"
    if n_rank < b_rank:
        return "regressed"
    if bo is not None and no is not None and abs(bo - no) > REL * max(1.0, abs(bo)):
        better = no < bo if sense == "min" else no > bo
        return "improved" if better else "regressed"
    if n_rank > b_rank:
        return "improved"
    if bo is not None and no is None:
        return "regressed"
    return "same"


def _fmt(x) -> str:
    if x is None:
        return "-"
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def table(rows: list[dict], base: dict[str, dict]) -> str:
    out = ["| cell | method | status | objective | bound | seconds | baseline: status, objective, seconds | time ratio | verdict |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = base.get(f"{r['cell']}|{r['method']}")
        bcell = "-" if b is None else f"{b['status']}, {_fmt(b.get('objective'))}, {_fmt(b.get('seconds'))}"
        ratio = "-"
        if b is not None and b.get("seconds") and r.get("seconds") and b["status"] == r["status"] == "optimal":
            ratio = f"{r['seconds'] / b['seconds']:.2f}"
        method = r["method"] + (f" @{r['repo']}" if r.get("repo") else "")
        out.append(f"| {r['cell']} | {method} | {r['status']} | {_fmt(r.get('objective'))} | {_fmt(r.get('bound'))} | "
                   f"{_fmt(r.get('seconds'))} | {bcell} | {ratio} | {verdict(b, r)} |")
    return "\n".join(out)


def load_baseline(path: Path) -> tuple[dict[str, dict], dict]:
    if not path.exists():
        return {}, {}
    data = json.loads(path.read_text())
    return {f"{r['cell']}|{r['method']}": r for r in data["rows"]}, {k: v for k, v in data.items() if k != "rows"}


@functools.lru_cache(maxsize=None)
def _commit(repo: Path = ROOT) -> str:
    """The short commit of ``repo`` (asked once per run: ``--repo`` tags every row with it)."""
    try:
        return subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def select(all_cells: list[Cell], only: str, skip: str) -> list[Cell]:
    """The cells whose group (or group/name) is in ``only`` (all when empty) and not in ``skip``."""
    def hit(c: Cell, names: set[str]) -> bool:
        return c.group in names or c.key in names or any(c.group.startswith(n.rstrip("*")) for n in names if n.endswith("*"))

    want = {s for s in only.split(",") if s}
    drop = {s for s in skip.split(",") if s}
    chosen = [c for c in all_cells if (not want or hit(c, want)) and not hit(c, drop)]
    unknown = [n for n in want | drop if not any(hit(c, {n}) for c in all_cells)]
    if unknown:
        groups = sorted({c.group for c in all_cells})
        raise SystemExit(f"goals.py: no cell or group named {', '.join(sorted(unknown))}; groups: {', '.join(groups)} "
                         "(a trailing * matches a prefix, e.g. slots*)")
    return chosen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Groups: " + ", ".join(sorted({c.group for c in cells()})) + ".")
    ap.add_argument("--only", action="append", default=[],
                    help="comma-separated groups or group/name cells (a trailing * matches a prefix); may be repeated")
    ap.add_argument("--skip", action="append", default=[], help="groups or cells to leave out; may be repeated")
    ap.add_argument("--backends", default="", help="comma-separated exact methods for every cell (default: each cell's "
                    "own, exact.cpsat, and exact.milp-highs beside it for even-routing throughput and GAP)")
    ap.add_argument("--baseline", type=Path, default=BASELINE, help=f"baseline file (default {BASELINE.relative_to(ROOT)})")
    ap.add_argument("--record", action="store_true", help="write this run's rows as the baseline (merged with its other cells)")
    ap.add_argument("--check", action="store_true", help="exit 1 if any cell regressed, disagrees or its plan fails")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "goals" / f"run-{time.strftime('%Y%m%dT%H%M%S')}.jsonl",
                    help="JSON lines, one row per finished cell (default results/goals/run-<time>.jsonl)")
    ap.add_argument("--repo", action="append", type=Path, default=[],
                    help="a checkout whose solver code the cells run (e.g. a git worktree of an older commit); "
                         "repeated, each cell runs under each in turn, so a before/after pair shares the machine's "
                         "moment (default: this checkout). A fresh worktree's first cells also compile its numba "
                         "kernels (cached in its __pycache__ after): warm it first, or use --repeat 2")
    ap.add_argument("--repeat", type=int, default=1, help="run the selection this many times, in rounds")
    ap.add_argument("--list", action="store_true", help="list the selected cells and exit")
    ap.add_argument("--one", default="", help=argparse.SUPPRESS)  # the child: one cell, one method, a JSON row on stdout
    a = ap.parse_args()
    backends = [m for m in a.backends.split(",") if m]
    every = cells()
    if a.one:
        cell = {c.key: c for c in every}[a.one]
        print(json.dumps(run_one(cell, (backends or list(cell.methods))[0])), flush=True)
        return
    for r in a.repo:
        if not (r / "planner" / "__init__.py").exists():
            raise SystemExit(f"goals.py: --repo {r}: no planner package there (give the root of a checkout)")
    if a.record and a.repo:
        raise SystemExit("goals.py: --record writes this checkout's baseline; it cannot be used with --repo")
    if a.repeat < 1:
        raise SystemExit(f"goals.py: --repeat {a.repeat}: give 1 or more")
    chosen = select(every, ",".join(a.only), ",".join(a.skip))
    if a.list:
        for c in chosen:
            print(f"{c.key}  ({c.problem}, limit {c.limit:g} s; {', '.join(backends or c.methods)})")
        return
    base, meta = load_baseline(a.baseline)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    t0 = time.time()
    load0 = os.getloadavg()[0]
    repos = [r.resolve() for r in a.repo] or [None]
    runs = [(c, m, r) for _ in range(a.repeat) for c in chosen for m in (backends or c.methods) for r in repos]
    total = len(runs)
    with open(a.out, "a") as sink:
        for i, (c, m, repo) in enumerate(runs, 1):
            r = run_isolated(c, m, repo)
            r["load"] = round(os.getloadavg()[0], 2)
            rows.append(r)
            sink.write(json.dumps(r) + "\n")
            sink.flush()
            v = verdict(base.get(f"{c.key}|{m}"), r)
            why = f" ({r['message']})" if r["status"] == "error" and r.get("message") else ""
            at = f" @{r['repo']}" if r.get("repo") else ""
            print(f"[{i}/{total}] {c.key} {m}{at}: {r['status']}{why} {_fmt(r.get('objective'))} / {_fmt(r.get('bound'))} "
                  f"in {_fmt(r.get('seconds'))} s - {v}", file=sys.stderr, flush=True)
    print(f"Commit {_commit()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {load0:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end; {time.time() - t0:.0f} s wall; rows in {a.out}")
    if meta:
        print(f"Baseline: commit {meta.get('commit')}, {meta.get('date')}")
    print()
    print(table(rows, base))
    for r in rows:
        if r.get("message") and r["status"] != "skipped":
            print(f"{r['cell']} {r['method']}: {r['message']}")
    verdicts = [verdict(base.get(f"{r['cell']}|{r['method']}"), r) for r in rows]
    counts = {v: verdicts.count(v) for v in sorted(set(verdicts))}
    print("\n" + ", ".join(f"{n} {v}" for v, n in counts.items()))
    if a.record:
        merged = dict(base)
        merged.update({f"{r['cell']}|{r['method']}": r for r in rows if r["status"] not in ("error", "skipped")})
        a.baseline.write_text(json.dumps({"commit": _commit(), "date": time.strftime("%Y-%m-%d", time.gmtime()),
                                          "rows": sorted(merged.values(), key=lambda r: (r["cell"], r["method"]))},
                                         indent=1) + "\n")
        print(f"baseline written: {a.baseline}")
    if a.check and any(v in ("regressed", "DISAGREES", "PLAN FAILS") for v in verdicts):
        sys.exit(1)


if __name__ == "__main__":
    main()
