"""Runs per second of a batch: Spark local vs a serial loop vs a Python process pool.

Same machine, same run, same instances and methods. For each engine it prints the wall time
and runs/second; for Spark it separates the fixed start-up (SparkContext + first Python
worker) from the job, and measures the per-task overhead with a job of empty tasks.

    PYTHONPATH=$PWD python benchmarks/bench_batch.py --instances 1000 --cores 2

Instances: ``layered`` (6 executors, 3 nodes of 2 slots, 2 racks), problem ``network``,
methods storm.even, storm.ras, exact.bruteforce, heron.ffd (the first four of these that exist).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.batch import run_batch, solve_to_dict, spark_context, warm_up  # noqa: E402
from planner.generate import generate  # noqa: E402
from planner.model import parse_instance  # noqa: E402
from planner.registry import list_methods  # noqa: E402

WANTED = ["storm.even", "storm.ras", "exact.bruteforce", "heron.ffd", "heron.rcrr", "tstorm"]


def _proc_table() -> dict[int, tuple[int, float, float, str]]:
    """pid -> (parent pid, own CPU s, reaped children's CPU s, command line) from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        out[int(d)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick,
                       (int(fields[13]) + int(fields[14])) / tick, cmd)
    return out


ROLES = ("driver", "jvm", "python workers", "solver processes")


def cpu_by_role(root: int | None = None) -> dict[str, float]:
    """CPU seconds (user + system) of a process tree from /proc, split by role: on a machine
    shared with other work this is what our processes consumed, whatever the others did.

    The root is the driver (its Python threads: main, collect, progress). Its ``java`` child is
    the JVM; the JVM's children are PySpark daemons, whose children are the Python workers;
    anything below a worker is a solver process (``--isolation process``). A process's reaped
    children count for the role of those children (a worker's reaped solver processes count as
    solver processes). For a tree without a JVM (the serial loop, the pool) every descendant
    of the root counts as ``python workers``."""
    root = root or os.getpid()
    table = _proc_table()
    kids: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        kids.setdefault(ppid, []).append(pid)
    cpu = dict.fromkeys(ROLES, 0.0)
    own_role = {"driver": "driver", "jvm": "jvm", "daemon": "python workers", "worker": "python workers",
                "solver": "solver processes"}
    reaped_role = {"driver": "driver", "jvm": "python workers", "daemon": "python workers",
                   "worker": "solver processes", "solver": "solver processes"}
    below = {"jvm": "daemon", "daemon": "worker", "worker": "solver", "solver": "solver"}

    def walk(pid: int, level: str) -> None:
        _, own, reaped, _ = table[pid]
        cpu[own_role[level]] += own
        cpu[reaped_role[level]] += reaped
        for k in kids.get(pid, []):
            if level == "driver":  # the JVM, or a pool's worker processes
                walk(k, "jvm" if "java" in table[k][3].split(" ")[0] else "worker")
            else:
                walk(k, below[level])

    if root in table:
        walk(root, "driver")
    return cpu


def tree_cpu(root: int | None = None) -> float:
    """CPU seconds of a process and all its descendants (see cpu_by_role)."""
    return sum(cpu_by_role(root).values())


def _pool_chunk(args):
    texts, methods, problem, limit = args
    out = []
    for t in texts:
        inst = parse_instance(json.loads(t))
        for m in methods:
            out.append(solve_to_dict(inst, problem, m, limit, 0)["status"])
    return out


def _diff(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in ROLES}


def _fmt(cpu: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in cpu.items() if abs(v) >= 0.005) or "0"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=int, default=1000)
    ap.add_argument("--methods", type=int, default=4, help="how many of the known methods to use")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--isolation", default="process", choices=["process", "none"])
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark configuration")
    args = ap.parse_args()

    have = {m.name for m in list_methods()}
    methods = [m for m in WANTED if m in have][: args.methods]
    problem, limit = "network", 60.0
    insts = generate("layered", args.instances, seed=1, executors=6, nodes=3, slots=2, racks=2)
    texts = [json.dumps(i.model_dump(mode="json")) for i in insts]
    runs = len(insts) * len(methods)
    print(f"# {len(insts)} layered instances x {len(methods)} methods ({', '.join(methods)}) = {runs} runs, "
          f"{args.cores} cores; load average at start {os.getloadavg()[0]:.2f}", flush=True)
    res: dict[str, float] = {}
    loads = {}

    # serial loop: parse + solve + row, the same work a Spark task does per run
    t, c = time.perf_counter(), cpu_by_role()
    statuses = []
    for text in texts:
        inst = parse_instance(json.loads(text))
        for m in methods:
            statuses.append(solve_to_dict(inst, problem, m, limit, 0)["status"])
    res["serial"] = time.perf_counter() - t
    res["serial_cpu"] = sum(_diff(cpu_by_role(), c).values())
    loads["serial"] = os.getloadavg()[0]
    print(f"serial loop: {res['serial']:.2f} s, {runs / res['serial']:.1f} runs/s, CPU {res['serial_cpu']:.2f} s"
          f" (load {loads['serial']:.2f})", flush=True)

    # process pool: chunks of 25 instances
    t, c = time.perf_counter(), cpu_by_role()
    with cf.ProcessPoolExecutor(args.cores) as ex:
        chunks = [(texts[i:i + 25], methods, problem, limit) for i in range(0, len(texts), 25)]
        pool_statuses = [s for part in ex.map(_pool_chunk, chunks) for s in part]
    res["pool"] = time.perf_counter() - t
    res["pool_cpu"] = sum(_diff(cpu_by_role(), c).values())
    loads["pool"] = os.getloadavg()[0]
    assert pool_statuses == statuses
    print(f"process pool ({args.cores}): {res['pool']:.2f} s incl. pool start, {runs / res['pool']:.1f} runs/s, "
          f"CPU {res['pool_cpu']:.2f} s (load {loads['pool']:.2f})", flush=True)

    # Spark local: the fixed start-up is the context and the Python workers with the solver
    # code loaded (what run_batch does before its job)
    t, c = time.perf_counter(), cpu_by_role()
    conf = dict(kv.split("=", 1) for kv in args.conf)
    sc = spark_context(f"local[{args.cores}]", "planner-bench", conf=conf)
    warm_up(sc)
    res["spark_startup"] = time.perf_counter() - t
    res["spark_startup_cpu"] = sum(_diff(cpu_by_role(), c).values())
    # Spark's cost per task: a job of empty tasks on the warm context
    n_empty = 200
    t, c = time.perf_counter(), cpu_by_role()
    sc.parallelize(range(n_empty), n_empty).mapPartitions(lambda it: [sum(1 for _ in it)]).collect()
    res["empty_job"] = time.perf_counter() - t
    empty_cpu = _diff(cpu_by_role(), c)
    res["empty_job_cpu"] = sum(empty_cpu.values())
    out = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    try:
        t, c = time.perf_counter(), cpu_by_role()
        s = run_batch(insts, problem, methods, out, time_limit=limit, sc=sc, isolation=args.isolation,
                      progress_interval=5.0, stream=open(os.devnull, "w"))
        res["spark"] = time.perf_counter() - t
        spark_cpu = _diff(cpu_by_role(), c)
        res["spark_cpu"] = sum(spark_cpu.values())
        res["spark_job"] = s.job_seconds
        loads["spark"] = os.getloadavg()[0]
        assert s.complete and s.ran == runs, s
        import pandas as pd

        df = pd.read_parquet(out / "results.parquet")
        serial_by = dict(zip([(i.name, m) for i in insts for m in methods], statuses))
        mism = sum(serial_by[(r.instance_id, r.method)] != r.status for r in df.itertuples())
        assert len(df) == runs and mism == 0, f"{mism} Spark rows differ from the serial loop"
        parts = len(list((out / "runs").glob("part-*.parquet")))
    finally:
        sc.stop()
        shutil.rmtree(out, ignore_errors=True)
    per_task_wall = res["empty_job"] / n_empty
    per_task_cpu = res["empty_job_cpu"] / n_empty
    per_run_cpu = (res["spark_cpu"] - res["serial_cpu"]) / runs
    per_run_core = (res["spark_job"] * args.cores - res["serial"]) / runs
    est = res["serial_cpu"] / (res["spark_cpu"] / args.cores)
    print(f"spark local[{args.cores}]: start-up {res['spark_startup']:.2f} s, CPU {res['spark_startup_cpu']:.2f} s "
          f"(context, JVM, Python workers with the solver code loaded)", flush=True)
    print(f"spark run_batch past start-up: {res['spark']:.2f} s (job {res['spark_job']:.2f} s, {parts} part files), "
          f"{runs / res['spark_job']:.1f} runs/s in the job (load {loads['spark']:.2f}); CPU {res['spark_cpu']:.2f} s: "
          f"{_fmt(spark_cpu)}", flush=True)
    print(f"speed-up over the serial loop, measured: Spark job {res['serial'] / res['spark_job']:.2f}x, whole run_batch "
          f"{res['serial'] / res['spark']:.2f}x; pool {res['serial'] / res['pool']:.2f}x", flush=True)
    print(f"Spark's cost per Spark task ({n_empty} empty tasks on {args.cores} cores): {per_task_wall * 1000:.1f} ms wall, "
          f"{per_task_cpu * 1000:.1f} ms CPU ({_fmt(empty_cpu)})", flush=True)
    print(f"added cost per (instance, method) run over the serial loop: {per_run_cpu * 1000:.2f} ms CPU "
          f"(isolation={args.isolation}); {per_run_core * 1000:.2f} ms of core time (job wall x {args.cores} cores - "
          f"serial wall, per run; includes idle cores and neighbours)", flush=True)
    print(f"speed-up if {args.cores} cores were free (serial CPU / (Spark CPU / {args.cores})): {est:.2f}x (an estimate)",
          flush=True)
    print(json.dumps({**{k: round(v, 3) for k, v in res.items()}, "spark_cpu_by_role": {k: round(v, 2) for k, v in
                      spark_cpu.items()}, "load": loads, "parts": parts}))


if __name__ == "__main__":
    main()
