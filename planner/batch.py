"""Batch evaluation on Spark: many (instance, method) runs, one Parquet row each.

``planner batch --instances DIR|GENERATOR-SPEC --problem P --methods M1,M2 [--reference R]
--time-limit S --out RESULTS [--master URL]``

* **Work unit.** One run = one (instance, method) pair for the problem. Runs are grouped into
  Spark partitions (tasks) so that Spark's per-task cost is paid once per group and Python
  workers are reused: by default of decreasing size (each 1/(2 x cores) of the runs left, at
  most 256, at least 8), ``--chunk`` for a fixed size. Start-up loads the solver code into the
  Python workers (:func:`warm_up`). Inside a partition, runs go one after another and every
  solver object is built in the solver process.
* **Guard.** By default (``--isolation process``) each Python worker keeps one forked solver
  process (across its tasks) and sends it the runs over a pipe, two at a time (a big instance
  only when nothing is queued); it waits at most
  the hard limit (``time limit x 1.5 + 10 s`` unless ``--hard-limit`` says otherwise; none
  without either) for each answer, counted from when the process started that run. A run that
  overruns is killed (SIGKILL) and becomes a row with status ``unknown``; a run whose process
  dies (a crash, ``os._exit``, the OOM killer) becomes a row with status ``error``; an
  exception inside the method becomes an ``error`` row through :func:`planner.solve`. A fresh
  solver process is forked for the runs queued behind. ``--isolation none`` solves in the
  Spark worker itself (no wall-clock guard; exceptions are still caught), for trusted fast
  methods.
* **Results.** ``RESULTS/runs/part-*.parquet``: the raw rows, written by the tasks as they
  finish (every ``--flush-every`` rows or ``--flush-seconds``, and at each task's end), each
  file written under a hidden name and renamed into place, so a reader never sees half a file. ``RESULTS/
  results.parquet``: the rows de-duplicated by ``run_key`` with the gap-to-optimal columns,
  rewritten at the end of every invocation; :func:`load_results` recomputes it from the parts.
* **Resumable.** A run's key is (instance id, instance content digest, problem, method).
  Re-running with the same ``--out`` skips keys already in ``runs/``; a killed run loses at
  most the rows not yet flushed, which are then solved again.
* **Gap to optimal.** Per instance, against the ``--reference`` method's row when its status
  is ``optimal``; otherwise ``reference_status`` says why there is no gap.

``RESULTS`` must be a folder every executor can write (the local disk for ``local[*]`` and a
cluster on one machine, a shared file system otherwise). On a local master tasks return only
(run key, status); elsewhere they return whole rows, and rows that tasks could not write where
the driver sees them are written by the driver from the task results at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import math
import os
import platform
import shutil
import socket
import sys
import threading
import time
import uuid
import warnings
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from .model import Instance, InstanceError

# --------------------------------------------------------------------------------------------
# results schema

METRIC_COLUMNS = [
    "network_metric", "inter_node_traffic", "inter_worker_traffic", "workers_used", "nodes_used",
    "executors_placed", "sustainable_rate", "slots_used", "vm_cost", "admitted_weight",
    "racks_used", "supported_rate", "topologies_scheduled",
]
FEATURE_COLUMNS = [
    "topologies", "components", "executors", "streams", "racks", "nodes", "slots",
    "cpu_demand", "cpu_capacity", "memory_demand", "memory_capacity",
]


def _schema():
    import pyarrow as pa

    cols = [
        ("run_key", pa.string()), ("batch_id", pa.string()),
        ("instance_id", pa.string()), ("instance_digest", pa.string()), ("instance_source", pa.string()),
        ("generator", pa.string()), ("gen_seed", pa.int64()), ("gen_index", pa.int64()), ("gen_params", pa.string()),
    ]
    cols += [(c, pa.float64() if c.endswith(("demand", "capacity")) else pa.int64()) for c in FEATURE_COLUMNS]
    cols += [
        ("problem", pa.string()), ("method", pa.string()), ("method_kind", pa.string()), ("reference", pa.string()),
        ("time_limit", pa.float64()), ("hard_limit", pa.float64()), ("method_seed", pa.int64()),
        ("status", pa.string()), ("objective", pa.float64()), ("bound", pa.float64()), ("gap", pa.float64()),
        ("feasible", pa.bool_()), ("violations_count", pa.int64()),
        ("seconds", pa.float64()), ("wall_seconds", pa.float64()), ("message", pa.string()),
    ]
    cols += [(c, pa.float64()) for c in METRIC_COLUMNS]
    cols += [("host", pa.string()), ("pid", pa.int64()), ("isolation", pa.string()), ("finished_at", pa.float64()),
             ("versions", pa.string())]
    return pa.schema(cols)


# --------------------------------------------------------------------------------------------
# instances


@dataclass
class BatchInstance:
    """One instance of a batch: its id, content digest, JSON text and features."""

    id: str
    digest: str
    json: str
    source: str
    features: dict[str, Any]


def instance_features(inst: Instance) -> dict[str, Any]:
    """Size and load figures of an instance (the ``FEATURE_COLUMNS`` and generator meta)."""
    s = inst.size
    nodes = inst.cluster.nodes
    meta = inst.meta or {}
    return {
        "topologies": s["topologies"], "components": s["components"], "executors": s["executors"],
        "streams": sum(len(t.streams) for t in inst.topologies), "racks": s["racks"], "nodes": s["nodes"],
        "slots": s["slots"],
        "cpu_demand": float(sum(c.cpu * c.parallelism for t in inst.topologies for c in t.components)),
        "cpu_capacity": float(sum(n.cpu for n in nodes)),
        "memory_demand": float(sum(c.memory_mb * c.parallelism for t in inst.topologies for c in t.components)),
        "memory_capacity": float(sum(n.memory_mb for n in nodes)),
        "generator": meta.get("generator"),
        "gen_seed": meta.get("seed") if isinstance(meta.get("seed"), int) else None,
        "gen_index": meta.get("index") if isinstance(meta.get("index"), int) else None,
        "gen_params": json.dumps(meta.get("params"), sort_keys=True) if meta.get("params") is not None else None,
    }


def _batch_instance(inst: Instance, iid: str, source: str) -> BatchInstance:
    text = json.dumps(inst.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return BatchInstance(iid, hashlib.sha1(text.encode()).hexdigest()[:16], text, source, instance_features(inst))


def parse_generator_spec(spec: str) -> tuple[str, int, int, dict[str, Any]]:
    """``gen:KIND[:key=value,key=value,...]`` -> (kind, count, seed, params).

    ``count`` (default 10) and ``seed`` (default 0) are the batch's; the other keys are the
    generator's parameters (numbers and booleans as JSON, lists as ``a|b``). Example:
    ``gen:layered:count=50,seed=1,executors=20``.
    """
    from .generate import GENERATORS, parse_param_value

    parts = spec.split(":", 2)
    if len(parts) < 2 or parts[0] != "gen" or not parts[1]:
        raise InstanceError("--instances", f"expected a folder or gen:KIND[:key=value,...], got {spec!r}")
    kind = parts[1]
    if kind not in GENERATORS:
        raise InstanceError("--instances", f"unknown generator {kind!r}; known: {', '.join(GENERATORS)}")
    params: dict[str, Any] = {}
    if len(parts) == 3 and parts[2]:
        for kv in parts[2].split(","):
            if "=" not in kv:
                raise InstanceError("--instances", f"expected key=value in the generator spec, got {kv!r}")
            k, v = kv.split("=", 1)
            params[k.strip()] = parse_param_value(v.strip())
    count = params.pop("count", 10)
    seed = params.pop("seed", 0)
    if not isinstance(count, int) or count < 0:
        raise InstanceError("--instances", f"count must be an integer >= 0, got {count!r}")
    if not isinstance(seed, int):
        raise InstanceError("--instances", f"seed must be an integer, got {seed!r}")
    return kind, count, seed, params


def load_batch_instances(spec: str | Path | list[Instance]) -> list[BatchInstance]:
    """Instances of a batch: a folder of ``*.json`` files (id = file stem), a generator spec,
    or a list of Instances (id = name). Bad files raise InstanceError naming the file."""
    from .api import load_instance

    if isinstance(spec, list):
        out = [_batch_instance(i, i.name, "python") for i in spec]
    elif str(spec).startswith("gen:"):
        from .generate import generate

        kind, count, seed, params = parse_generator_spec(str(spec))
        out = [_batch_instance(i, i.name, str(spec)) for i in generate(kind, count, seed, **params)]
    else:
        d = Path(spec)
        if not d.is_dir():
            raise InstanceError("--instances", f"{d} is neither a folder nor a gen:KIND spec")
        files = sorted(d.glob("*.json"))
        if not files:
            raise InstanceError("--instances", f"no *.json instance files in {d}")
        out = []
        for f in files:
            try:
                inst = load_instance(f)
            except InstanceError as e:
                raise InstanceError([(f"{f.name}:{p}", r) for p, r in e.problems]) from None
            out.append(_batch_instance(inst, f.stem, str(f.resolve())))
    ids = [b.id for b in out]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InstanceError("--instances", f"two instances share the id {dup!r}")
    return out


def run_key(inst_id: str, digest: str, problem: str, method: str) -> str:
    """The identity of one run: re-running skips keys already present."""
    return f"{inst_id}|{digest}|{problem}|{method}"


# --------------------------------------------------------------------------------------------
# running one run (inside a Spark task)


def _num(x: Any) -> float | None:
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, (int, float)):
        return float(x)
    return None


def solve_to_dict(inst: Instance, problem: str, method: str, time_limit: float | None, seed: int) -> dict[str, Any]:
    """planner.solve, reduced to the row fields; never raises."""
    from .api import solve

    t0 = time.perf_counter()
    try:
        res = solve(inst, problem, method, time_limit=time_limit, seed=seed)
    except BaseException as e:  # InstanceError, or a method calling sys.exit
        if isinstance(e, KeyboardInterrupt):
            raise
        return {"status": "error", "message": f"{type(e).__name__}: {e}"[:2000], "seconds": time.perf_counter() - t0}
    m = res.metrics or {}
    out = {
        "status": res.status.value, "objective": _num(res.objective), "bound": _num(res.bound), "gap": _num(res.gap),
        "seconds": float(res.seconds), "message": (res.message or "")[:2000],
        "feasible": bool(m["feasible"]) if "feasible" in m else None,
        "violations_count": int(m["violations_count"]) if "violations_count" in m else None,
    }
    for c in METRIC_COLUMNS:
        out[c] = _num(m.get(c))
    if isinstance(m.get("scheduled_topologies"), (list, tuple)):
        out["topologies_scheduled"] = float(len(m["scheduled_topologies"]))
    return out


def _import_all(modules: Iterable[str]) -> None:
    for mod in modules:
        importlib.import_module(mod)


def _child_main(conn: Any, other_end: Any, imports: list[str]) -> None:
    """The solver process: receive (key, json or None, problem, method, limit, seed), reply a dict."""
    from .model import parse_instance

    other_end.close()  # else the pipe never reports EOF when the partition closes its end

    try:
        _import_all(imports)
    except BaseException as e:  # report on every run rather than dying silently
        err = f"cannot import {imports}: {type(e).__name__}: {e}"
    else:
        err = None
    cached_key, cached = None, None
    while True:
        try:
            key, text, problem, method, limit, seed = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        if err:
            reply: dict[str, Any] = {"status": "error", "message": err}
        else:
            try:
                if text is not None or key != cached_key:
                    cached, cached_key = parse_instance(json.loads(text)), key
                reply = solve_to_dict(cached, problem, method, limit, seed)
            except BaseException as e:
                reply = {"status": "error", "message": f"{type(e).__name__}: {e}"[:2000]}
        try:
            conn.send(reply)
        except (BrokenPipeError, OSError):
            os._exit(0)


# An instance longer than this is sent only when the solver process has nothing queued: a
# send that fills the pipe's buffer (over 100 kB on Linux) would wait for the process to
# finish its current run, and the hard limit could not be enforced meanwhile.
PIPELINE_MAX_CHARS = 16_000


class _Sandbox:
    """A forked solver process, replaced after a crash or a kill.

    One per Python worker (see ``_sandbox_for``), kept from task to task: it exits when its
    pipe closes, i.e. when the worker closes it or dies."""

    def __init__(self, imports: list[str]):
        self.imports = imports
        self.proc = None
        self.conn = None
        self.cached_key: str | None = None
        self.busy = False  # a run was sent and its answer not yet read

    def _start(self) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_child_main, args=(child, parent, self.imports), name="planner-solver")
        self.proc.start()
        child.close()
        self.conn = parent
        self.cached_key = None

    def _stop(self, kill: bool) -> int | None:
        if self.proc is None:
            return None
        if kill and self.proc.is_alive():
            self.proc.kill()
        try:
            self.conn.close()
        except OSError:
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        code = self.proc.exitcode
        self.proc = self.conn = None
        self.busy = False
        return code

    def run(self, key: str, text: str, problem: str, method: str, limit: float | None, seed: int,
            hard_limit: float | None) -> dict[str, Any]:
        """Solve one run (the instance's digest ``key`` and JSON ``text``); see ``solve_runs``."""
        run = {"instance_digest": key, "problem": problem, "method": method, "time_limit": limit,
               "method_seed": seed, "hard_limit": hard_limit}
        for _, res, _ in self.solve_runs([run], {key: text}, window=1):
            return res
        raise AssertionError("unreachable")

    def _send(self, run: dict[str, Any], texts: dict[str, str]) -> None:
        key = run["instance_digest"]
        self.conn.send((key, texts[key] if key != self.cached_key else None, run["problem"], run["method"],
                        run["time_limit"], run["method_seed"]))
        self.cached_key = key

    def solve_runs(self, runs: Iterable[dict[str, Any]], texts: dict[str, str], window: int = 2
                   ) -> Iterator[tuple[dict[str, Any], dict[str, Any], float]]:
        """Solve runs in order in the solver process; yields (run, result fields, wall seconds).

        Up to ``window`` runs are in the pipe at once, so the process starts the next run as
        soon as it answers one instead of waiting for this side to read the answer and send
        more. The process solves them one after another, so a run starts when the previous
        answer arrives (or when it is sent, if the pipe was empty), and its hard limit counts
        from then. A run with no answer by its hard limit: the process is killed, the run is
        ``unknown``. The process dies while solving: the run is ``error``. Either way the runs
        queued behind it are sent again to a fresh process."""
        if self.busy:  # a run abandoned by an interrupted task: its late answer is not for us
            self._stop(kill=True)
        todo = iter(runs)
        resend: deque[dict[str, Any]] = deque()  # runs whose process died before answering
        sent: deque[dict[str, Any]] = deque()  # in the pipe of the current process, in order
        t_head = time.perf_counter()  # when the first run in ``sent`` started
        try:
            while True:
                while len(sent) < window:
                    run = resend.popleft() if resend else next(todo, None)
                    if run is None:
                        break
                    if sent and run["instance_digest"] != self.cached_key and \
                            len(texts[run["instance_digest"]]) > PIPELINE_MAX_CHARS:
                        # a big instance could fill the pipe: sending it now could block this
                        # side, and with it the hard limit of the run being solved; wait
                        resend.appendleft(run)
                        break
                    if self.proc is None or not self.proc.is_alive():
                        if self.proc is not None:
                            if sent:  # the head run's answer will tell what happened
                                resend.appendleft(run)
                                break
                            self._stop(kill=True)
                        self._start()
                    try:
                        self._send(run, texts)
                    except (BrokenPipeError, OSError) as e:
                        if sent:
                            resend.appendleft(run)
                            break
                        code = self._stop(kill=True)
                        yield run, {"status": "error", "message": f"solver process unreachable ({e}; exit code {code})"}, 0.0
                        continue
                    if not sent:
                        t_head = time.perf_counter()
                    sent.append(run)
                    self.busy = True
                if not sent:
                    return
                run = sent[0]
                hard = run["hard_limit"]
                wait = None if hard is None else max(0.0, t_head + hard - time.perf_counter())
                if not self.conn.poll(wait):
                    self._stop(kill=True)
                    res = {"status": "unknown", "seconds": time.perf_counter() - t_head,
                           "message": f"killed: no answer within the hard limit of {hard:g} s "
                                      f"(time limit {run['time_limit']})"}
                else:
                    try:
                        res = self.conn.recv()
                    except (EOFError, OSError):
                        code = self._stop(kill=False)
                        res = {"status": "error", "seconds": time.perf_counter() - t_head,
                               "message": f"solver process died (exit code {code}) while solving"}
                sent.popleft()
                if self.proc is None:  # killed or dead: what was queued behind goes to a new process
                    resend.extendleft(reversed(sent))
                    sent.clear()
                self.busy = bool(sent)
                now = time.perf_counter()
                wall, t_head = now - t_head, now
                yield run, res, wall
        finally:
            if sent:  # abandoned mid-way (the task was interrupted)
                self._stop(kill=True)

    def close(self) -> None:
        if self.proc is not None:
            self._stop(kill=self.busy)


_SANDBOXES: dict[tuple[str, ...], _Sandbox] = {}


def _sandbox_for(imports: list[str]) -> _Sandbox:
    """This Python worker's solver process for these imports, kept across Spark tasks: a
    reused worker forks once, not once per task."""
    key = tuple(imports)
    if key not in _SANDBOXES:
        _SANDBOXES[key] = _Sandbox(list(imports))
    return _SANDBOXES[key]


def _write_part(rows: list[dict[str, Any]], out_dir: str, tag: str) -> str:
    """Write rows as one Parquet file under a hidden name, then rename it into place."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _schema()
    table = pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema=schema)
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    name = f"part-{tag}-{uuid.uuid4().hex[:8]}.parquet"
    tmp = d / f".tmp-{name}"
    pq.write_table(table, tmp)
    os.replace(tmp, d / name)
    return name


_LOADED: set[tuple[str, ...]] = set()


def load_solver_code(imports: list[str]) -> int:
    """Import the solver code into this (reused) Python worker, once per process, and freeze
    what it loaded out of the garbage collector's reach; returns the process id.

    Every forked solver process then starts with the code loaded, and the full collection
    that PySpark's daemon runs in a reused worker after every task no longer rescans the
    ~90,000 objects OR-Tools, pandas and pydantic leave behind (41 ms per task before, 0 after;
    see docs/benchmarks.md). ``gc.freeze`` only exempts objects
    that exist now; everything a run creates later is collected as usual."""
    import gc

    key = tuple(imports)
    if key in _LOADED:
        return os.getpid()
    _import_all(imports)
    try:
        # OR-Tools first: `import pulp` loads highspy, whose HiGHS build then breaks a later
        # OR-Tools import in the same process (undefined symbol); the reverse order works, and
        # the solver processes forked below inherit the loaded library.
        import ortools.sat.python.cp_model  # noqa: F401
    except ImportError:
        pass
    try:
        from . import api  # noqa: F401
        from .registry import list_methods

        list_methods()
    except Exception:  # a broken method module: each run reports it as an error row instead
        pass
    try:
        import pyarrow.parquet  # noqa: F401  (the part-file writer)
    except ImportError:
        pass
    gc.collect()
    gc.freeze()
    _LOADED.add(key)
    return os.getpid()


def warm_up(sc: Any, imports: list[str] | None = None) -> list[int]:
    """Start the executors' Python workers with the solver code loaded (one task per core),
    so that this fixed cost is paid at start-up rather than inside the first tasks of the
    job; returns the workers' process ids. Any worker it missed loads the code in its first
    task instead (slower, same result)."""
    imports = list(imports or [])
    n = max(1, sc.defaultParallelism)
    return sc.parallelize(range(n), n).mapPartitions(lambda it: [load_solver_code(imports)]).collect()


def run_partition(index: int, runs: Iterator[dict[str, Any]], ctx: dict[str, Any], instances: dict[str, str]
                  ) -> Iterator[dict[str, Any] | tuple[str, str]]:
    """Solve the runs of one partition in order, flushing rows to Parquet as they finish.

    Yields, per run, the whole row when ``ctx["return_rows"]`` is set (executors whose disk the
    driver may not see) or when its part file could not be written; otherwise only the
    acknowledgement ``(run_key, status)``: the row is in a part file the driver reads."""
    load_solver_code(ctx["imports"])
    sandbox = _sandbox_for(ctx["imports"]) if ctx["isolation"] == "process" else None
    parsed: dict[str, Instance] = {}
    pending: list[dict[str, Any]] = []
    done: list[dict[str, Any]] = []
    last_flush = time.monotonic()
    seq = 0
    host, pid = socket.gethostname(), os.getpid()

    def flush() -> None:
        nonlocal pending, last_flush, seq
        if not pending:
            return
        try:
            _write_part(pending, ctx["runs_dir"], f"{ctx['batch_id']}-{index:05d}-{seq:04d}")
        except OSError:  # the driver writes these rows from the task results
            done.extend(pending)
        else:
            done.extend(pending if ctx["return_rows"] else [(r["run_key"], r["status"]) for r in pending])
        seq += 1
        pending = []
        last_flush = time.monotonic()

    def solved() -> Iterator[tuple[dict[str, Any], dict[str, Any], float]]:
        if sandbox is not None:
            yield from sandbox.solve_runs(runs, instances)
            return
        from .model import parse_instance

        for run in runs:
            t0 = time.perf_counter()
            try:
                if run["instance_digest"] not in parsed:
                    parsed.clear()
                    parsed[run["instance_digest"]] = parse_instance(json.loads(instances[run["instance_digest"]]))
                res = solve_to_dict(parsed[run["instance_digest"]], run["problem"], run["method"],
                                    run["time_limit"], run["method_seed"])
            except Exception as e:
                res = {"status": "error", "message": f"{type(e).__name__}: {e}"[:2000]}
            yield run, res, time.perf_counter() - t0

    try:
        for run, res, wall in solved():
            row = {**run, **res, "wall_seconds": wall, "host": host, "pid": pid,
                   "isolation": ctx["isolation"], "finished_at": time.time(), "versions": ctx["versions"],
                   "batch_id": ctx["batch_id"]}
            pending.append(row)
            if len(pending) >= ctx["flush_every"] or time.monotonic() - last_flush >= ctx["flush_seconds"]:
                flush()
        flush()
    except BaseException:  # an interrupted task: no half-finished run left in the solver process
        if sandbox is not None:
            sandbox.close()
        raise
    yield from done


# --------------------------------------------------------------------------------------------
# reading results


def runs_dir(out: str | Path) -> Path:
    return Path(out) / "runs"


def read_runs(out: str | Path, columns: list[str] | None = None):
    """All raw rows under ``out/runs`` (a pandas DataFrame; empty with the schema when none)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = runs_dir(out)
    schema = _schema()
    files = sorted(f for f in d.glob("part-*.parquet")) if d.is_dir() else []
    tables = []
    for f in files:
        try:
            tables.append(pq.read_table(f, columns=columns, schema=schema if columns is None else None))
        except (OSError, pa.ArrowInvalid) as e:
            print(f"planner batch: skipping unreadable {f.name}: {e}", file=sys.stderr)
    if not tables:
        names = columns or schema.names
        return pa.schema([schema.field(n) for n in names]).empty_table().to_pandas()
    return pa.concat_tables(tables, promote_options="default").to_pandas()


def done_keys(out: str | Path) -> set[str]:
    df = read_runs(out, columns=["run_key"])
    return set(df["run_key"].tolist())


def add_gaps(df):
    """De-duplicate by run_key (first finished wins) and add ``optimum``, ``reference_status``,
    ``gap_to_optimal`` and ``at_optimum`` per row, against each row's reference method."""
    import pandas as pd

    from .plan import gap_to_optimal

    if df.empty:
        for c, v in (("optimum", float("nan")), ("reference_status", ""), ("gap_to_optimal", float("nan")),
                     ("at_optimum", False)):
            df[c] = pd.Series(dtype=type(v) if not isinstance(v, float) else "float64")
        return df
    df = df.sort_values(["finished_at"], kind="stable").drop_duplicates("run_key", keep="first").reset_index(drop=True)
    df["instance_key"] = df["instance_id"] + "|" + df["instance_digest"]
    ref_rows = {(r.instance_key, r.problem, r.method): r for r in df.itertuples(index=False)}
    opt, rstat, gaps, at_opt = [], [], [], []
    for r in df.itertuples(index=False):
        ref = r.reference if isinstance(r.reference, str) and r.reference else None
        o = None
        if ref is None:
            st = "no reference"
        else:
            rr = ref_rows.get((r.instance_key, r.problem, ref))
            if rr is None:
                st = f"reference {ref} not run"
            elif rr.status == "optimal" and rr.objective is not None and not math.isnan(rr.objective):
                st, o = "proven", float(rr.objective)
            else:
                st = f"reference {ref} {rr.status} (not proven)"
        g = None
        ok = r.status in ("optimal", "feasible") and r.objective is not None and not math.isnan(r.objective)
        if o is not None and ok:
            g = gap_to_optimal(float(r.objective), o)
        opt.append(o)
        rstat.append(st)
        gaps.append(g)
        at_opt.append(g is not None and g <= 1e-6)
    df["optimum"] = pd.array(opt, dtype="Float64").astype("float64")
    df["reference_status"] = rstat
    df["gap_to_optimal"] = pd.array(gaps, dtype="Float64").astype("float64")
    df["at_optimum"] = at_opt
    return df


def load_results(out: str | Path):
    """The results of a batch folder: raw rows de-duplicated, with the gap columns."""
    return add_gaps(read_runs(out))


def write_results(out: str | Path) -> int:
    """Rewrite ``out/results.parquet`` from the parts (atomically); returns its row count."""
    return len(_write_results(out))


def _write_results(out: str | Path):
    df = load_results(out)
    path = Path(out) / "results.parquet"
    tmp = Path(out) / ".results.parquet.tmp"
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return df


# --------------------------------------------------------------------------------------------
# Spark


def code_roots() -> list[str]:
    """Folders that hold the planner's packages (a checkout, or site-packages when installed)."""
    import planner

    return [str(Path(planner.__file__).resolve().parent.parent)]


def _code_zip(extra_modules: list[str]) -> str:
    """Zip the planner's packages (and extra modules) for executors that lack them."""
    import tempfile
    import zipfile

    root = Path(code_roots()[0])
    z = Path(tempfile.mkdtemp(prefix="planner-code-")) / "planner_code.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        for pkg in ("planner", "formulations", "heuristics", "instances"):
            base = root / pkg
            if not base.is_dir():
                continue
            for f in base.rglob("*"):
                if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".json", ".md"):
                    zf.write(f, f.relative_to(root))
        for mod in extra_modules:
            m = importlib.import_module(mod)
            f = Path(m.__file__)
            zf.write(f, Path(*mod.split(".")[:-1], f.name) if "." in mod else f.name)
    return str(z)


@contextlib.contextmanager
def spark_for(sc: Any, master: str, app_name: str = "planner-batch", imports: list[str] | None = None,
              conf: dict[str, str] | None = None):
    """``sc`` when the caller gives one (left running); else a SparkContext for ``master``
    (``spark_context``, with the ``imports`` modules' folders on the workers' path and, for a
    master that is not local, the planner's code and those modules shipped as a zip), stopped
    after the block."""
    if sc is not None:
        yield sc
        return
    imports = list(imports or [])
    extra = [str(Path(importlib.import_module(m).__file__).resolve().parent.parent if "." in m
                 else Path(importlib.import_module(m).__file__).resolve().parent) for m in imports]
    own = spark_context(master, app_name=app_name, conf=conf, extra_paths=extra)
    code_zip = None
    try:
        if not master.startswith("local"):
            code_zip = _code_zip(imports)
            own.addPyFile(code_zip)
        yield own
    finally:
        own.stop()
        if code_zip:
            shutil.rmtree(Path(code_zip).parent, ignore_errors=True)


class BatchError(Exception):
    """The batch could not go on for a reason outside the input (Spark went away); the CLI
    prints it in one line and exits 1."""


def check_master_reachable(master: str, timeout: float = 3.0) -> None:
    """Fail fast, with a clear message, when a standalone master (``spark://host:port``, or
    ``spark://h1:p1,h2:p2`` for several) accepts no TCP connection at any of its addresses;
    Spark itself would retry for a minute and then stop with a Java stack trace."""
    if not master.startswith("spark://"):
        return
    problems = []
    for hostport in master[len("spark://"):].split(","):
        host, _, port = hostport.strip().rpartition(":")
        host = host.strip("[]")  # spark://[::1]:7077
        if not host or not port.isdigit():
            raise InstanceError("--master", f"{master!r}: expected spark://HOST:PORT[,HOST:PORT...], got {hostport!r}")
        try:
            socket.create_connection((host, int(port)), timeout=timeout).close()
            return
        except OSError as e:
            problems.append(f"{host}:{port}: {e.strerror or e}")
    raise InstanceError("--master", f"cannot connect to the Spark master {master} ({'; '.join(problems)}); "
                        "start it (Spark's sbin/start-master.sh) or give another --master, e.g. local[*]")


def _spark_stopped(sc: Any) -> bool:
    """True when the SparkContext is gone (e.g. the standalone master gave up on the application)."""
    try:
        return bool(sc._jsc.sc().isStopped())
    except Exception:
        return True


def _log4j_option() -> str:
    """The driver JVM's option pointing Log4j at planner/log4j2.properties (start-up chatter
    off), or "" when the path has blanks (Spark would split the option there)."""
    f = Path(__file__).with_name("log4j2.properties")
    return f" -Dlog4j2.configurationFile={f.as_uri()}" if f.is_file() and not any(ch.isspace() for ch in str(f)) else ""


def spark_context(master: str, app_name: str = "planner-batch", conf: dict[str, str] | None = None,
                  extra_paths: list[str] | None = None):
    """A SparkContext for ``master`` with modest memory, no UI, Python workers reused and
    reached over Unix sockets, a driver JVM without the C2 JIT compiler, and the executors'
    Python seeing this interpreter and the planner's code. ``conf`` overrides any of these."""
    from pyspark import SparkConf, SparkContext

    check_master_reachable(master)  # every caller (batch, reproduce): a clear error, not a minute of retries
    pypath = [*code_roots(), *(extra_paths or []), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    loopback = master.startswith(("local", "spark://127.0.0.1", "spark://localhost"))
    if loopback:
        # keep an embedded or loopback Spark on 127.0.0.1: the JVM reads this before any conf
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    c = SparkConf().setMaster(master).setAppName(app_name)
    defaults = {
        "spark.driver.memory": "1g",
        "spark.executor.memory": "512m",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.python.worker.reuse": "true",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": os.pathsep.join(dict.fromkeys(pypath)),
        "spark.task.maxFailures": "2",
        # the driver JVM schedules and moves bytes; its C2 JIT compiler kept compiling through
        # the whole job (0.8-2 CPU s of a 4,000-run batch); C1 alone and the serial collector
        # cost about 0.1 s (docs/benchmarks.md). On a local master this JVM is the executor too.
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" + _log4j_option(),
        # JVM <-> Python worker over a Unix socket, not TCP on loopback: an empty task took
        # 51 ms over TCP on local[1] (each exchange waited on delayed ACKs), 12 ms this way
        "spark.python.unix.domain.socket.enabled": "true",
        "spark.driver.host": "127.0.0.1" if loopback else "",
        "spark.driver.bindAddress": "127.0.0.1" if loopback else "",
    }
    for k, v in defaults.items():
        if v:
            c.set(k, v)
    for k, v in (conf or {}).items():
        c.set(k, v)
    with warnings.catch_warnings():
        # PySpark imports its test helpers while converting the conf, and they warn that
        # PySpark's pandas features (pandas-on-Spark, Arrow UDFs) do not fully support
        # pandas 3. The planner uses neither: tasks are plain RDD functions, and pandas runs
        # in the driver only, on the rows read back from parquet. The suite passes on pandas 3.
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                                category=FutureWarning)
        sc = SparkContext(conf=c)
    sc.setLogLevel("ERROR")
    return sc


# --------------------------------------------------------------------------------------------
# the batch


@dataclass
class BatchSummary:
    out: str
    total: int = 0
    skipped: int = 0
    ran: int = 0
    failed: int = 0
    seconds: float = 0.0
    startup_seconds: float = 0.0
    job_seconds: float = 0.0
    complete: bool = True
    message: str = ""
    by_status: dict[str, int] = field(default_factory=dict)


class _Progress(threading.Thread):
    """Prints runs done / failed / elapsed / estimate on stderr while the job runs, by reading
    the part files of this batch as they appear (and Spark's task counts)."""

    def __init__(self, out: str, batch_id: str, total: int, sc: Any, interval: float, stream: Any):
        super().__init__(daemon=True)
        self.out, self.batch_id, self.total, self.sc = out, batch_id, total, sc
        self.interval, self.stream = interval, stream
        self.stop_event = threading.Event()
        self.seen: dict[str, tuple[int, int]] = {}
        self.t0 = time.monotonic()

    def counts(self) -> tuple[int, int]:
        import pyarrow.parquet as pq

        for f in runs_dir(self.out).glob(f"part-{self.batch_id}-*.parquet"):
            if f.name in self.seen:
                continue
            try:
                st = pq.read_table(f, columns=["status"]).column("status").to_pylist()
            except Exception:
                continue
            self.seen[f.name] = (len(st), sum(s in ("error", "unknown") for s in st))
        return sum(a for a, _ in self.seen.values()), sum(b for _, b in self.seen.values())

    def line(self) -> str:
        done, failed = self.counts()
        el = time.monotonic() - self.t0
        est = f", about {el / done * (self.total - done):.0f} s left" if 0 < done < self.total else ""
        tasks = ""
        try:
            tr = self.sc.statusTracker()
            infos = [tr.getStageInfo(s) for s in tr.getActiveStageIds()]
            infos = [i for i in infos if i is not None]
            if infos:
                tasks = f"; Spark tasks {sum(i.numCompletedTasks for i in infos)}/{sum(i.numTasks for i in infos)}"
        except Exception:
            pass
        return f"planner batch: {done}/{self.total} runs done ({failed} error/unknown), {el:.1f} s elapsed{est}{tasks}"

    def run(self) -> None:
        while not self.stop_event.wait(self.interval):
            print(self.line(), file=self.stream, flush=True)


def _versions() -> str:
    from importlib import metadata

    v = {"python": platform.python_version()}
    for pkg in ("planner", "pyspark", "ortools", "pydantic"):
        try:
            v[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    import planner

    v["planner_code"] = getattr(planner, "__version__", "?")
    return json.dumps(v, sort_keys=True)


def plan_runs(instances: list[BatchInstance], problem: str, methods: list[str], reference: str | None,
              time_limit: float | None, hard_limit: float | None, seed: int) -> list[dict[str, Any]]:
    """Every run of the batch (reference first for each instance), as row stubs."""
    from .registry import get_method

    names = ([reference] if reference else []) + [m for m in methods if m != reference]
    kinds = {m: get_method(m).kind for m in names}
    runs = []
    for b in instances:
        for m in names:
            runs.append({
                "run_key": run_key(b.id, b.digest, problem, m), "instance_id": b.id, "instance_digest": b.digest,
                "instance_source": b.source, **b.features, "problem": problem, "method": m, "method_kind": kinds[m],
                "reference": reference, "time_limit": time_limit, "hard_limit": hard_limit, "method_seed": seed,
            })
    return runs


def validate_methods(problem: str, methods: list[str], reference: str | None) -> None:
    """Every method exists and solves ``problem``; else InstanceError naming the option."""
    from .problems import PROBLEMS
    from .registry import get_method

    if problem not in PROBLEMS:
        raise InstanceError("--problem", f"unknown problem {problem!r}; known: {', '.join(PROBLEMS)}")
    if not methods:
        raise InstanceError("--methods", "give at least one method")
    for opt, names in (("--methods", methods), ("--reference", [reference] if reference else [])):
        for m in names:
            try:
                info = get_method(m)
            except InstanceError:
                raise InstanceError(opt, f"unknown method {m!r}; `planner methods` lists them") from None
            if problem not in info.problems:
                raise InstanceError(opt, f"method {m!r} does not solve {problem!r}; it solves {', '.join(info.problems)}")


def run_batch(instances: str | Path | list[Instance], problem: str, methods: list[str], out: str | Path,
              reference: str | None = None, time_limit: float | None = 60.0, hard_limit: float | None = None,
              master: str = "local[*]", seed: int = 0, imports: list[str] | None = None,
              isolation: str = "process", chunk: int | None = None, flush_every: int = 500,
              flush_seconds: float = 5.0, progress_interval: float = 5.0, spark_conf: dict[str, str] | None = None,
              sc: Any = None, stream: Any = None) -> BatchSummary:
    """Run every pending (instance, method) pair on Spark and write the results folder.

    Bad input (instances, problem, methods, options) raises InstanceError before any work.
    A Spark job failure leaves the finished rows in place and returns ``complete=False``.
    """
    stream = stream or sys.stderr
    imports = list(imports or [])
    try:
        _import_all(imports)
    except ImportError as e:
        raise InstanceError("--import", f"cannot import {e.name or e}: {e}") from None
    validate_methods(problem, methods, reference)
    if isolation not in ("process", "none"):
        raise InstanceError("--isolation", "expected 'process' or 'none'")
    if time_limit is not None and time_limit <= 0:
        raise InstanceError("--time-limit", f"must be > 0, got {time_limit}")
    if hard_limit is None and time_limit is not None:
        hard_limit = 1.5 * time_limit + 10.0
    if chunk is not None and chunk < 1:
        raise InstanceError("--chunk", "must be >= 1")
    if flush_every < 1:
        raise InstanceError("--flush-every", "must be >= 1")
    out = Path(out).resolve()
    try:
        runs_dir(out).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InstanceError("--out", f"cannot create {out}: {e.strerror or e}") from None
    batch_instances = load_batch_instances(instances)
    all_runs = plan_runs(batch_instances, problem, methods, reference, time_limit, hard_limit, seed)
    have = done_keys(out)
    todo = [r for r in all_runs if r["run_key"] not in have]
    summary = BatchSummary(out=str(out), total=len(all_runs), skipped=len(all_runs) - len(todo))
    if todo and sc is None:
        check_master_reachable(master)  # before the invocation is logged as a batch
    batch_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    _log_invocation(out, batch_id, instances, problem, methods, reference, time_limit, master, len(todo), summary.skipped)
    print(f"planner batch: {len(all_runs)} runs ({len(batch_instances)} instances x {len(all_runs) // max(1, len(batch_instances))}"
          f" methods); {summary.skipped} already in {out}, {len(todo)} to run", file=stream, flush=True)
    t0 = time.monotonic()
    if todo:
        with spark_for(sc, master, imports=imports, conf=spark_conf) as ctx:
            try:
                try:
                    warm_up(ctx, imports)
                except Exception:  # e.g. --import missing on the executors: the job reports it per run
                    pass
                summary.startup_seconds = time.monotonic() - t0
                _run_on_spark(ctx, todo, batch_instances, out, batch_id, imports, isolation, chunk, flush_every,
                              flush_seconds, progress_interval, stream, summary)
            except Exception as e:
                if not _spark_stopped(ctx):
                    raise
                try:
                    _write_results(out)  # the finished rows in results.parquet too (they are in runs/)
                except Exception:
                    pass
                raise BatchError(f"Spark stopped the application at {master} before the batch finished "
                                 f"({type(e).__name__}); Spark's log above says why (for a standalone master: "
                                 f"is it still up, and does it have workers?). Finished runs are kept in {out}; "
                                 "run the same command again to resume.") from None
    summary.seconds = time.monotonic() - t0
    df = _write_results(out)  # de-duplicated by run_key
    n = len(df)
    keys = set(df["run_key"])
    missing = [r for r in all_runs if r["run_key"] not in keys]
    if missing:
        summary.complete = False
        summary.message = (summary.message + "; " if summary.message else "") + \
            f"{len(missing)} runs not finished; run the same command again to resume"
    mine = {r["run_key"] for r in all_runs}
    summary.by_status = df[df["run_key"].isin(mine)]["status"].value_counts().to_dict()
    print(f"planner batch: done in {summary.seconds:.1f} s (Spark start-up {summary.startup_seconds:.1f} s): {summary.ran} runs now,"
          f" {summary.skipped} skipped, {summary.failed} error/unknown; {n} rows in {out / 'results.parquet'}"
          + (f"; {summary.message}" if summary.message else ""), file=stream, flush=True)
    return summary


def partition_sizes(runs: int, cores: int, chunk: int | None = None, largest: int = 256) -> list[int]:
    """How many runs each Spark task gets, in the order Spark starts them.

    ``chunk`` given: that many each. Otherwise decreasing ("guided") sizes: each task takes
    1/(2 x cores) of the runs still unassigned, at most ``largest`` and at least ``smallest``
    (8, or fewer for small batches so that every core gets several tasks). Big tasks first
    pay Spark's per-task cost (about 30 ms) rarely; small tasks last let the cores finish
    together, since a core that ends early idles until the batch ends."""
    if runs <= 0:
        return []
    if chunk:
        return [chunk] * (runs // chunk) + ([runs % chunk] if runs % chunk else [])
    smallest = max(1, min(8, runs // (8 * cores)))
    sizes, left = [], runs
    while left > 0:
        n = min(left, largest, max(smallest, math.ceil(left / (2 * cores))))
        sizes.append(n)
        left -= n
    return sizes


def _run_on_spark(sc: Any, todo: list[dict[str, Any]], batch_instances: list[BatchInstance], out: Path, batch_id: str,
                  imports: list[str], isolation: str, chunk: int | None, flush_every: int, flush_seconds: float,
                  progress_interval: float, stream: Any, summary: BatchSummary) -> None:
    needed = {r["instance_digest"] for r in todo}
    texts = {b.digest: b.json for b in batch_instances if b.digest in needed}
    bc = sc.broadcast(texts)
    sizes = partition_sizes(len(todo), max(1, sc.defaultParallelism), chunk)
    n_parts = len(sizes)
    ctx = {"runs_dir": str(runs_dir(out)), "batch_id": batch_id, "imports": imports, "isolation": isolation,
           "flush_every": flush_every, "flush_seconds": flush_seconds, "versions": _versions(),
           # on a local master the driver reads the part files the tasks write: only acknowledgements
           # come back; elsewhere the executors' disk may be theirs alone, so whole rows come back
           "return_rows": not str(sc.master).startswith("local")}

    def task(index: int, it: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        return run_partition(index, it, ctx, bc.value)

    starts = [sum(sizes[:i]) for i in range(n_parts)]
    chunks = [todo[a:a + n] for a, n in zip(starts, sizes)]
    rdd = sc.parallelize(chunks, n_parts).flatMap(lambda c: c).mapPartitionsWithIndex(task)
    result: dict[str, Any] = {}

    def job() -> None:
        try:
            result["rows"] = rdd.collect()
        except BaseException as e:  # a failed Spark job must not lose the finished rows
            result["error"] = e

    prog = _Progress(str(out), batch_id, len(todo), sc, progress_interval, stream)
    t_job = time.monotonic()
    th = threading.Thread(target=job, daemon=True)
    th.start()
    prog.start()
    try:
        while th.is_alive():
            th.join(0.2)
    finally:
        prog.stop_event.set()
    summary.job_seconds = time.monotonic() - t_job
    print(prog.line(), file=stream, flush=True)
    rows = result.get("rows") or []
    if "error" in result:
        e = result["error"]
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        summary.complete = False
        summary.message = f"the Spark job failed ({type(e).__name__}: {first})"
        print(f"planner batch: {summary.message}; finished rows are kept", file=stream, flush=True)
    # whole rows come back when a task could not write them, or from executors whose disk the
    # driver may not see: write those the driver cannot find
    full = [r for r in rows if isinstance(r, dict)]
    if full:
        seen = done_keys(out)
        unseen = [r for r in full if r["run_key"] not in seen]
        if unseen:
            _write_part(unseen, str(runs_dir(out)), f"{batch_id}-driver")
    statuses = [r["status"] if isinstance(r, dict) else r[1] for r in rows]
    summary.ran = len(rows) if rows else len(done_keys(out) & {r["run_key"] for r in todo})
    summary.failed = sum(s in ("error", "unknown") for s in statuses)


def _log_invocation(out: Path, batch_id: str, instances: Any, problem: str, methods: list[str], reference: str | None,
                    time_limit: float | None, master: str, todo: int, skipped: int) -> None:
    """Append this invocation to ``out/batches.jsonl`` (what was asked, when, how much was left)."""
    rec = {"batch_id": batch_id, "time": time.time(), "instances": instances if isinstance(instances, str) else
           (str(instances) if isinstance(instances, Path) else "python list"), "problem": problem, "methods": methods,
           "reference": reference, "time_limit": time_limit, "master": master, "to_run": todo, "skipped": skipped}
    with open(out / "batches.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")


# --------------------------------------------------------------------------------------------
# CLI


def cmd_batch(args: argparse.Namespace) -> int:
    methods = [m.strip() for m in (args.methods or "").split(",") if m.strip()]
    conf = {}
    for kv in args.conf or []:
        if "=" not in kv:
            raise InstanceError(f"--conf {kv}", "expected KEY=VALUE")
        k, v = kv.split("=", 1)
        conf[k] = v
    s = run_batch(args.instances, args.problem, methods, args.out, reference=args.reference,
                  time_limit=args.time_limit, hard_limit=args.hard_limit, master=args.master, seed=args.seed,
                  imports=args.imports or [], isolation=args.isolation, chunk=args.chunk,
                  flush_every=args.flush_every, flush_seconds=args.flush_seconds,
                  progress_interval=args.progress_interval, spark_conf=conf)
    return 0 if s.complete else 1


def add_parser(sub: Any) -> None:
    """The ``planner batch`` sub-command."""
    b = sub.add_parser(
        "batch", help="solve many instances with several methods on Spark; results as Parquet",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run every (instance, method) pair on Spark (local[*] by default) and write one Parquet row per "
        "run to OUT/runs; re-running with the same --out skips finished runs.",
        epilog="GENERATOR-SPEC: gen:KIND[:key=value,...], e.g. gen:layered:count=50,seed=1,executors=20 "
        "(count and seed are the batch's, the rest the generator's parameters).\n"
        "example: planner batch --instances gen:ras-random:count=100,seed=1 --problem network "
        "--methods storm.even --reference exact.bruteforce --time-limit 10 --out results/ras")
    b.add_argument("--instances", required=True, metavar="DIR|GENERATOR-SPEC")
    b.add_argument("--problem", "-p", required=True)
    b.add_argument("--methods", "-m", required=True, help="comma-separated method names")
    b.add_argument("--reference", help="exact method whose proven optimum the gaps are measured against")
    b.add_argument("--time-limit", type=float, default=60.0, help="each run's time limit, seconds (the solver's own)")
    b.add_argument("--hard-limit", type=float, default=None,
                   help="wall-clock seconds after which a run is killed (default 1.5 x time limit + 10)")
    b.add_argument("--out", required=True, help="results folder (must be writable by every executor)")
    b.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    b.add_argument("--seed", type=int, default=0, help="seed passed to every method")
    b.add_argument("--import", dest="imports", action="append", metavar="MODULE",
                   help="import this module first (in the driver and every task), e.g. to register extra methods")
    b.add_argument("--isolation", choices=["process", "none"], default="process",
                   help="process: each partition solves in a forked process killed at the hard limit (default); "
                   "none: solve in the Spark worker, no wall-clock guard")
    b.add_argument("--chunk", type=int, default=None, help="runs per Spark task (default: decreasing sizes, at most 256; see docs/batch.md)")
    b.add_argument("--flush-every", type=int, default=500, help="write a part file after this many rows (default 500)")
    b.add_argument("--flush-seconds", type=float, default=5.0, help="... or after this many seconds (default 5), and at the end of each task")
    b.add_argument("--progress-interval", type=float, default=5.0, help="seconds between progress lines")
    b.add_argument("--conf", action="append", metavar="KEY=VALUE", help="extra Spark configuration, repeatable")
    b.set_defaults(func=cmd_batch)
