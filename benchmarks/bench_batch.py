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
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.batch import run_batch, solve_to_dict, spark_context  # noqa: E402
from planner.generate import generate  # noqa: E402
from planner.model import parse_instance  # noqa: E402
from planner.registry import list_methods  # noqa: E402

WANTED = ["storm.even", "storm.ras", "exact.bruteforce", "heron.ffd", "heron.rcrr", "tstorm"]


def tree_cpu(root: int | None = None) -> float:
    """CPU seconds (user + system, including reaped children) of a process and all its living
    descendants, from /proc: on a machine shared with other work this is what our processes
    consumed, whatever the others did."""
    root = root or os.getpid()
    tick = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        parent[int(d)] = int(fields[1])
        cpu[int(d)] = sum(int(x) for x in fields[11:15]) / tick
    total, todo = 0.0, [root]
    while todo:
        p = todo.pop()
        total += cpu.get(p, 0.0)
        todo.extend(c for c, pp in parent.items() if pp == p)
    return total


def _pool_chunk(args):
    texts, methods, problem, limit = args
    out = []
    for t in texts:
        inst = parse_instance(json.loads(t))
        for m in methods:
            out.append(solve_to_dict(inst, problem, m, limit, 0)["status"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=int, default=1000)
    ap.add_argument("--methods", type=int, default=4, help="how many of the known methods to use")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--isolation", default="process", choices=["process", "none"])
    args = ap.parse_args()

    have = {m.name for m in list_methods()}
    methods = [m for m in WANTED if m in have][: args.methods]
    problem, limit = "network", 60.0
    insts = generate("layered", args.instances, seed=1, executors=6, nodes=3, slots=2, racks=2)
    texts = [json.dumps(i.model_dump(mode="json")) for i in insts]
    runs = len(insts) * len(methods)
    print(f"# {len(insts)} layered instances x {len(methods)} methods ({', '.join(methods)}) = {runs} runs, "
          f"{args.cores} cores, machine load {os.getloadavg()[0]:.1f}", flush=True)
    res = {}

    # serial loop: parse + solve + row, the same work a Spark task does per run
    t, c = time.perf_counter(), tree_cpu()
    statuses = []
    for text in texts:
        inst = parse_instance(json.loads(text))
        for m in methods:
            statuses.append(solve_to_dict(inst, problem, m, limit, 0)["status"])
    res["serial"] = time.perf_counter() - t
    res["serial_cpu"] = tree_cpu() - c
    print(f"serial loop: {res['serial']:.2f} s, {runs / res['serial']:.1f} runs/s", flush=True)

    # process pool: chunks of 25 instances
    t, c = time.perf_counter(), tree_cpu()
    with cf.ProcessPoolExecutor(args.cores) as ex:
        chunks = [(texts[i:i + 25], methods, problem, limit) for i in range(0, len(texts), 25)]
        pool_statuses = [s for part in ex.map(_pool_chunk, chunks) for s in part]
    res["pool"] = time.perf_counter() - t
    res["pool_cpu"] = tree_cpu() - c
    assert pool_statuses == statuses
    print(f"process pool ({args.cores}): {res['pool']:.2f} s incl. pool start, {runs / res['pool']:.1f} runs/s", flush=True)

    # Spark local
    t = time.perf_counter()
    sc = spark_context(f"local[{args.cores}]", "planner-bench")
    sc.parallelize(range(args.cores), args.cores).map(lambda x: x).collect()  # start the Python workers
    res["spark_startup"] = time.perf_counter() - t
    # per-task overhead: a job of empty tasks on the warm context
    n_empty = 200
    t, c = time.perf_counter(), tree_cpu()
    sc.parallelize(range(n_empty), n_empty).mapPartitions(lambda it: [sum(1 for _ in it)]).collect()
    res["empty_job"] = time.perf_counter() - t
    res["empty_job_cpu"] = tree_cpu() - c
    out = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    try:
        t, c = time.perf_counter(), tree_cpu()
        s = run_batch(insts, problem, methods, out, time_limit=limit, sc=sc, isolation=args.isolation,
                      progress_interval=30.0, stream=open(os.devnull, "w"))
        res["spark"] = time.perf_counter() - t
        res["spark_cpu"] = tree_cpu() - c
        res["spark_job"] = s.job_seconds
        assert s.complete and s.ran == runs, s
        import pandas as pd

        df = pd.read_parquet(out / "results.parquet")
        serial_by = dict(zip([(i.name, m) for i in insts for m in methods], statuses))
        mism = sum(serial_by[(r.instance_id, r.method)] != r.status for r in df.itertuples())
        assert mism == 0, f"{mism} Spark rows differ from the serial loop"
    finally:
        sc.stop()
        shutil.rmtree(out, ignore_errors=True)
    per_task_wall = res["empty_job"] / n_empty
    per_task_cpu = res["empty_job_cpu"] / n_empty
    per_run_cpu = (res["spark_cpu"] - res["serial_cpu"]) / runs
    est = res["serial_cpu"] / (res["spark_cpu"] / args.cores)
    print(f"serial CPU {res['serial_cpu']:.2f} s; pool CPU {res['pool_cpu']:.2f} s; Spark run_batch CPU (driver, JVM, "
          f"Python workers, solver processes) {res['spark_cpu']:.2f} s", flush=True)
    print(f"spark local[{args.cores}]: start-up {res['spark_startup']:.2f} s (context + Python workers); "
          f"run_batch {res['spark']:.2f} s (job {res['spark_job']:.2f} s), {runs / res['spark_job']:.1f} runs/s in the job; "
          f"measured speed-up over serial {res['serial'] / res['spark_job']:.2f}x (job), "
          f"{res['serial'] / res['spark']:.2f}x (whole run_batch); pool {res['serial'] / res['pool']:.2f}x", flush=True)
    print(f"spark per-task cost (empty tasks, {n_empty} on {args.cores} cores): {per_task_wall * 1000:.1f} ms wall, "
          f"{per_task_cpu * 1000:.1f} ms CPU per task; extra CPU per run in the batch job over the serial loop: "
          f"{per_run_cpu * 1000:.2f} ms (isolation={args.isolation}); speed-up if {args.cores} cores were free "
          f"(serial CPU / (Spark CPU / {args.cores})): {est:.2f}x (an estimate)", flush=True)
    print(json.dumps({k: round(v, 3) for k, v in res.items()}))


if __name__ == "__main__":
    main()
