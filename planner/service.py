"""The HTTP backend: ``planner serve``.

Other schedulers (a Storm ``IScheduler`` plugin, an operator's script) hand the planner an
instance over HTTP and get a :class:`planner.plan.Result` back. Endpoints:

* ``POST /v1/solve`` {instance, problem, method, time_limit, seed, options} -> Result
* ``POST /v1/evaluate`` {instance, plan, problem?} -> metrics
* ``POST /v1/storm/schedule`` {topology, supervisors, visualization?, method?, problem?, ...} -> Storm assignment
* ``GET /v1/methods``, ``GET /v1/schema/instance``, ``GET /healthz``, ``GET /openapi.json``

How it stays alive under abuse (docs/service.md says the same for users):

* The body is read by the event loop chunk by chunk and refused with 413 as soon as it passes
  ``max_body_bytes`` (an announced Content-Length over the limit is refused before reading).
* Everything that parses or computes (JSON decoding, validation, solving, evaluating) runs in
  a pool of solver *processes*, so a pure-Python method holding the GIL cannot delay
  ``/healthz``. Requests and replies cross the pipe as bytes (no pickle of user data).
* At most ``max_concurrent`` pool requests are admitted at once (``workers`` of them run, the
  rest wait for a free process); one more gets 429 with ``Retry-After``.
* ``time_limit`` is clamped to ``max_time_limit`` (a missing one becomes the cap); the applied
  value is in the ``X-Planner-Time-Limit`` header and in ``Result.details['service']``.
  A worker still busy ``max_time_limit + grace`` seconds after it took a request is killed and
  replaced, and the request gets 504.
* Instances over ``max_executors`` executors or ``max_nodes`` nodes get 422
  ``instance_too_large``; the count is taken from the raw JSON before validation, so a tiny
  body asking for a billion executors is refused cheaply.

Every error is JSON ``{error, detail, path}`` (``path`` is the JSON path in the request body,
``$`` when the error is about the request as a whole), sometimes with ``problems`` (every
(path, reason) of an invalid instance). Method names are looked up in the registry only.
"""

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MIB = 1024 * 1024


# --------------------------------------------------------------------------------------
# limits and errors
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """The server's limits; every one is a ``planner serve`` flag."""

    max_body_bytes: int = 16 * MIB
    max_executors: int = 50_000
    max_nodes: int = 5_000
    max_time_limit: float = 60.0
    max_concurrent: int = 4
    workers: int = 2
    grace: float = 10.0  # seconds a worker may run past max_time_limit before it is killed

    @property
    def hard_timeout(self) -> float:
        """Seconds after which a busy worker is killed (504)."""
        return self.max_time_limit + max(self.grace, 0.5 * self.max_time_limit)


class ServiceError(Exception):
    """An error reply: HTTP ``status`` and the body {error, detail, path, ...extra}."""

    def __init__(self, status: int, error: str, detail: str, path: str = "$", **extra: Any):
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.path = path
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"error": self.error, "detail": self.detail, "path": self.path, **self.extra}


def _json_bytes(obj: Any) -> bytes:
    """Strict JSON (no NaN/Infinity tokens): non-finite floats become strings, as the CLI does."""
    from .cli import _finite

    return json.dumps(_finite(obj), allow_nan=False, separators=(",", ":")).encode()


# --------------------------------------------------------------------------------------
# request documents (validated in the worker; also published in the OpenAPI document)
# --------------------------------------------------------------------------------------


class _Req(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SolveRequest(_Req):
    """POST /v1/solve."""

    instance: dict[str, Any] = Field(description="an Instance (GET /v1/schema/instance)")
    problem: str = Field(description="network | traffic | throughput | slots | feasibility | admission")
    method: str = Field(description="a name from GET /v1/methods")
    time_limit: float | None = Field(default=None, gt=0, allow_inf_nan=False,
                                     description="seconds; clamped to the server's cap, which also applies when absent")
    seed: int = Field(default=0, description="random seed for methods that draw")
    options: dict[str, Any] = Field(default_factory=dict, description="method options (GET /v1/methods lists them)")


class EvaluateRequest(_Req):
    """POST /v1/evaluate."""

    instance: dict[str, Any] = Field(description="an Instance")
    plan: dict[str, Any] = Field(description="a Plan {placements: [...]}, or a whole Result holding one")
    problem: str | None = Field(default=None, description="check this problem's constraints (default: the RAS limits)")


class StormScheduleRequest(_Req):
    """POST /v1/storm/schedule: Storm UI REST JSON in, a Storm-shaped assignment out."""

    topology: dict[str, Any] | list[dict[str, Any]] = Field(
        description="GET /api/v1/topology/:id of the Storm UI, or a list of them")
    supervisors: dict[str, Any] | list[Any] = Field(description="GET /api/v1/supervisor/summary of the Storm UI")
    visualization: dict[str, Any] | list[Any] | None = Field(
        default=None, description="GET /api/v1/topology/:id/visualization (the streams); one per topology when "
        "topology is a list (null entries allowed)")
    problem: str = Field(default="network")
    method: str | None = Field(default=None, description="default: storm.ras if registered, else storm.even")
    time_limit: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    seed: int = 0
    options: dict[str, Any] = Field(default_factory=dict)


class ErrorBody(BaseModel):
    """Every error reply."""

    error: str = Field(description="stable code: malformed_json, invalid_request, invalid_instance, unknown_method, ...")
    detail: str
    path: str = Field(description="JSON path in the request body; $ for the request as a whole")
    problems: list[dict[str, str]] | None = None


# --------------------------------------------------------------------------------------
# worker side: bytes in, (status, headers, bytes) out; runs in the solver processes
# --------------------------------------------------------------------------------------


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON")


def load_json(body: bytes) -> Any:
    """Decode a request body; anything that is not strict JSON is a 400 ``malformed_json``."""
    try:
        return json.loads(body, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise ServiceError(400, "malformed_json", f"the body is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise ServiceError(400, "malformed_json", "the body is not valid JSON: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ServiceError(400, "malformed_json", f"the body is not valid JSON: {e}") from None


def _validate(model: type[BaseModel], data: Any) -> Any:
    from .model import _loc_to_path

    if not isinstance(data, dict):
        raise ServiceError(422, "invalid_request", f"the body must be a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        errs = e.errors()
        problems = []
        for err in errs:
            msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
            problems.append({"path": _loc_to_path(err["loc"]), "reason": msg})
        first = problems[0]
        raise ServiceError(422, "invalid_request", "; ".join(f"{p['path']}: {p['reason']}" for p in problems),
                           first["path"], problems=problems) from None


def raw_size(data: Any) -> tuple[int, int]:
    """(executors, nodes) counted from an instance's raw JSON, ignoring malformed parts
    (validation reports those); used to refuse huge instances before validating them."""
    def items(x: Any) -> list:
        return x if isinstance(x, list) else []  # a number or an object where a list belongs: validation says so

    executors = nodes = 0
    if not isinstance(data, dict):
        return 0, 0
    for t in items(data.get("topologies")):
        if isinstance(t, dict):
            for c in items(t.get("components")):
                if isinstance(c, dict):
                    p = c.get("parallelism", 1)
                    if isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p) and p > 0:
                        executors += int(p)
    cluster = data.get("cluster")
    if isinstance(cluster, dict):
        for r in items(cluster.get("racks")):
            if isinstance(r, dict) and isinstance(r.get("nodes"), list):
                nodes += len(r["nodes"])
    return executors, nodes


def check_size(executors: int, nodes: int, limits: Limits, path: str = "instance") -> None:
    """422 ``instance_too_large`` naming the limit that is exceeded."""
    if executors > limits.max_executors:
        raise ServiceError(422, "instance_too_large",
                           f"the instance has {executors} executors; this server's limit is {limits.max_executors} "
                           f"executors x {limits.max_nodes} nodes (--max-size)", f"{path}.topologies",
                           limit={"executors": limits.max_executors, "nodes": limits.max_nodes})
    if nodes > limits.max_nodes:
        raise ServiceError(422, "instance_too_large",
                           f"the instance has {nodes} nodes; this server's limit is {limits.max_executors} "
                           f"executors x {limits.max_nodes} nodes (--max-size)", f"{path}.cluster.racks",
                           limit={"executors": limits.max_executors, "nodes": limits.max_nodes})


def _instance(data: dict[str, Any], limits: Limits, path: str = "instance"):
    from .model import InstanceError, parse_instance

    check_size(*raw_size(data), limits, path)
    try:
        inst = parse_instance(data)
    except InstanceError as e:
        probs = [(f"{path}." + p if p not in ("$", "") else path, r) for p, r in e.problems]
        raise ServiceError(422, "invalid_instance", "; ".join(f"{p}: {r}" for p, r in probs), probs[0][0],
                           problems=[{"path": p, "reason": r} for p, r in probs]) from None
    size = inst.size
    check_size(size["executors"], size["nodes"], limits, path)
    return inst


def _check_problem(problem: str | None, path: str = "problem") -> None:
    from .problems import PROBLEMS

    if problem is not None and problem not in PROBLEMS:
        raise ServiceError(422, "unknown_problem", f"unknown problem {problem!r}; known: {', '.join(PROBLEMS)}", path)


def _method(name: str, problem: str, options: dict[str, Any]):
    """The registry entry for ``name`` (never an import), checked against problem and options."""
    from .model import InstanceError
    from .registry import get_method, list_methods, option_error

    try:
        info = get_method(name)
    except InstanceError:
        known = ", ".join(m.name for m in list_methods())
        raise ServiceError(422, "unknown_method", f"unknown method {name!r}; known: {known}", "method") from None
    if problem not in info.problems:
        raise ServiceError(422, "method_problem_mismatch",
                           f"method {name!r} does not solve {problem!r}; it solves {', '.join(info.problems)}", "method")
    bad = option_error(info, options)
    if bad:
        key, msg = bad
        raise ServiceError(422, "unknown_option" if key not in info.options else "bad_option",
                           f"option {key!r}: {msg}", f"options.{key}")
    return info


def _clamp(time_limit: float | None, limits: Limits) -> float:
    return limits.max_time_limit if time_limit is None else min(time_limit, limits.max_time_limit)


def _run_solve(inst, problem: str, method: str, requested: float | None, seed: int, options: dict, limits: Limits):
    from .api import solve
    from .model import InstanceError

    applied = _clamp(requested, limits)
    _method(method, problem, options)
    try:
        res = solve(inst, problem, method, time_limit=applied, seed=seed, **options)
    except InstanceError as e:  # an option value the method rejects
        raise ServiceError(422, "invalid_request", str(e), e.path) from None
    res.details["service"] = {"time_limit_requested": requested, "time_limit_applied": applied}
    return res, applied


def handle_solve(body: bytes, limits: Limits) -> tuple[int, dict[str, str], bytes]:
    from .cli import result_json

    req = _validate(SolveRequest, load_json(body))
    _check_problem(req.problem)
    _method(req.method, req.problem, req.options)
    inst = _instance(req.instance, limits)
    res, applied = _run_solve(inst, req.problem, req.method, req.time_limit, req.seed, req.options, limits)
    return 200, {"X-Planner-Time-Limit": f"{applied:g}"}, _json_bytes(result_json(res))


def handle_evaluate(body: bytes, limits: Limits) -> tuple[int, dict[str, str], bytes]:
    from .api import evaluate, parse_plan
    from .model import InstanceError

    req = _validate(EvaluateRequest, load_json(body))
    _check_problem(req.problem)
    inst = _instance(req.instance, limits)
    try:
        plan = parse_plan(req.plan)
    except InstanceError as e:
        raise ServiceError(422, "invalid_plan", str(e), e.path,
                           problems=[{"path": p, "reason": r} for p, r in e.problems]) from None
    return 200, {}, _json_bytes(evaluate(inst, plan, req.problem))


def handle_storm_schedule(body: bytes, limits: Limits) -> tuple[int, dict[str, str], bytes]:
    """Storm UI JSON -> Instance (planner.storm.from_ui_json) -> solve -> planner.storm.to_assignment.

    The adapters belong to the Storm formats work; they are imported here, lazily, and their
    absence is a 501, not a crash.
    """
    from .cli import result_json
    from .model import InstanceError
    from .registry import list_methods

    req = _validate(StormScheduleRequest, load_json(body))
    if isinstance(req.topology, list) and isinstance(req.visualization, list):
        # the adapter reads a string as a file path: only JSON objects, lists or null get through
        for i, v in enumerate(req.visualization):
            if not (v is None or isinstance(v, (dict, list))):
                raise ServiceError(422, "invalid_request", "must be an object, a list or null", f"visualization[{i}]")
    try:
        from . import storm as storm_formats

        from_ui_json = storm_formats.from_ui_json
        to_assignment = storm_formats.to_assignment
    except (ImportError, AttributeError):
        raise ServiceError(501, "not_implemented",
                           "this build has no Storm UI adapters (planner.storm.from_ui_json / to_assignment); "
                           "convert to an instance yourself and use POST /v1/solve") from None
    _check_problem(req.problem)
    registered = {m.name for m in list_methods()}
    method = req.method or next((m for m in ("storm.ras", "storm.even") if m in registered), "storm.even")
    _method(method, req.problem, req.options)
    check_size(*_ui_size(req.topology, req.supervisors), limits, "topology")
    try:
        inst = from_ui_json(req.topology, req.supervisors, req.visualization)
    except InstanceError as e:
        probs = [(_storm_path(p), r) for p, r in e.problems]
        raise ServiceError(422, "invalid_storm_json", "; ".join(f"{p}: {r}" for p, r in probs), probs[0][0],
                           problems=[{"path": p, "reason": r} for p, r in probs]) from None
    size = inst.size
    check_size(size["executors"], size["nodes"], limits, "topology")
    res, applied = _run_solve(inst, req.problem, method, req.time_limit, req.seed, req.options, limits)
    out: dict[str, Any] = {"result": result_json(res), "assignment": None}
    if res.plan is not None and res.ok:
        out["assignment"] = to_assignment(inst, res.plan)
    return 200, {"X-Planner-Time-Limit": f"{applied:g}"}, _json_bytes(out)


_STORM_NAMES = {"topology JSON": "topology", "supervisor summary JSON": "supervisors", "visualization JSON": "visualization"}


def _storm_path(path: str) -> str:
    """The Storm adapter names its input ("topology JSON: spouts[0].executors"); make that a
    JSON path in this request ("topology.spouts[0].executors")."""
    for name, field in _STORM_NAMES.items():
        if path == name:
            return field
        if path.startswith(name + ": "):
            rest = path[len(name) + 2:]
            return field + ("" if rest.startswith("[") else ".") + rest
    return path


def _ui_size(topology: dict[str, Any] | list[dict[str, Any]], supervisors: Any) -> tuple[int, int]:
    """(executors, nodes) from Storm UI JSON: the sum of the spouts' and bolts' executors, and
    the number of supervisors; malformed parts count as 0 (the adapter reports them)."""
    executors = 0
    for topo in topology if isinstance(topology, list) else [topology]:
        for key in ("spouts", "bolts"):
            comps = topo.get(key) if isinstance(topo, dict) else None
            for c in comps if isinstance(comps, list) else []:  # not a list: the adapter says so
                if isinstance(c, dict):
                    n = c.get("executors")
                    if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                        executors += n
    sups = supervisors.get("supervisors") if isinstance(supervisors, dict) else supervisors
    return executors, len(sups) if isinstance(sups, list) else 0


HANDLERS = {"solve": handle_solve, "evaluate": handle_evaluate, "storm_schedule": handle_storm_schedule}


def handle(kind: str, body: bytes, limits: Limits) -> tuple[int, dict[str, str], bytes]:
    """Run one request; every failure becomes an error reply, never an exception."""
    try:
        return HANDLERS[kind](body, limits)
    except ServiceError as e:
        return e.status, {}, _json_bytes(e.body())
    except Exception as e:  # a bug: say so, keep the worker alive
        err = ServiceError(500, "internal", f"{type(e).__name__}: {e}")
        return 500, {}, _json_bytes(err.body())


def _warm_up() -> None:
    """Load, before the worker says it is ready, what the first exact solve would otherwise
    load inside its client's time limit: the compiled node-table kernels (numba reads them
    from its cache and sets up its CPU target, about 1 s), OR-Tools' LP helpers and SciPy's
    optimizers. Measured on 2026-11-28: a fresh worker's first network solve of tiny-linear
    took 1.3 s, the next ones 0.06 s. A tiny network solve does it; its Result is discarded."""
    import scipy.optimize  # noqa: F401  (throughput, slots and the GAP reader's LPs)

    from .api import load_instance, solve
    from .instances import shipped_path

    solve(load_instance(shipped_path("tiny-linear")), "network", "exact.cpsat", time_limit=10.0)


def _worker_main(conn, limits: Limits) -> None:
    """A solver process: import once, then answer (kind, body) frames until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server shuts workers down itself
    from .registry import list_methods

    list_methods()  # import every method module once, before the first request
    _warm_up()
    conn.send_bytes(b"ready")
    while True:
        try:
            kind = conn.recv_bytes().decode()
            body = conn.recv_bytes()
        except (EOFError, OSError):
            return
        status, headers, out = handle(kind, body, limits)
        try:
            conn.send_bytes(json.dumps({"status": status, "headers": headers}).encode())
            conn.send_bytes(out)
        except (BrokenPipeError, OSError):
            return


# --------------------------------------------------------------------------------------
# the pool of solver processes
# --------------------------------------------------------------------------------------


class _Overrun(Exception):
    pass


class _Worker:
    """One solver process and the parent's end of its pipe."""

    def __init__(self, ctx, limits: Limits, target=None):
        parent, child = ctx.Pipe(duplex=True)
        self.conn = parent
        self.proc = ctx.Process(target=target or _worker_main, args=(child, limits), daemon=True, name="planner-solver")
        self.proc.start()
        child.close()

    def wait_ready(self, timeout: float) -> bool:
        """True once the process says it has imported the methods; False if it does not in
        ``timeout`` seconds or dies first."""
        try:
            return self.conn.poll(timeout) and self.conn.recv_bytes() == b"ready"
        except (EOFError, OSError):
            return False

    def call(self, kind: str, body: bytes, timeout: float) -> tuple[int, dict[str, str], bytes]:
        """Blocking: send one request and wait for its reply (run in a thread)."""
        self.conn.send_bytes(kind.encode())
        self.conn.send_bytes(body)
        if not self.conn.poll(timeout):
            raise _Overrun()
        head = json.loads(self.conn.recv_bytes())
        out = self.conn.recv_bytes()
        return head["status"], head["headers"], out

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.join(5)
        finally:
            self.conn.close()


class SolverPool:
    """``size`` solver processes; requests wait for an idle one. A worker that overruns the
    hard timeout or dies is killed and replaced in the background."""

    def __init__(self, limits: Limits, target=None):
        """``target`` is the worker's main function (default :func:`_worker_main`); tests
        pass a misbehaving one to exercise the watchdog."""
        self.limits = limits
        self.target = target
        self.ctx = multiprocessing.get_context("spawn")
        self.size = limits.workers
        self._idle: asyncio.Queue[_Worker] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.replaced = 0
        self._closing = False
        self._all: set[_Worker] = set()
        self._busy: set[_Worker] = set()
        self._threads = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="planner-pool")

    def start(self, timeout: float = 180.0) -> None:
        """Start every worker and wait until each has imported the methods."""
        self._loop = asyncio.get_running_loop()
        self._idle = asyncio.Queue()
        workers = [_Worker(self.ctx, self.limits, self.target) for _ in range(self.size)]
        self._all.update(workers)
        for w in workers:
            if not w.wait_ready(timeout):
                self.close()
                raise RuntimeError("a solver process did not start (see its error above)")
            self._idle.put_nowait(w)

    @property
    def pids(self) -> list[int]:
        return sorted(w.proc.pid for w in list(self._all) if w.proc.pid is not None)

    @property
    def busy_pids(self) -> list[int]:
        return sorted(w.proc.pid for w in list(self._busy) if w.proc.pid is not None)

    @property
    def idle(self) -> int:
        return self._idle.qsize() if self._idle is not None else 0

    async def run(self, kind: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        assert self._idle is not None
        while True:
            w = await self._idle.get()
            if w.proc.is_alive():
                break
            self._replace(w)  # died while idle: replace it and take another
        self._busy.add(w)
        try:
            out = await asyncio.get_running_loop().run_in_executor(self._threads, w.call, kind, body, self.limits.hard_timeout)
        except _Overrun:
            self._replace(w)
            raise ServiceError(504, "solve_timeout",
                               f"the request ran {self.limits.hard_timeout:g} s (the time cap plus grace); its worker was stopped")
        except (EOFError, OSError) as e:
            self._replace(w)
            raise ServiceError(500, "worker_lost", f"the solver process died ({type(e).__name__}); it was replaced")
        finally:
            self._busy.discard(w)
        self._idle.put_nowait(w)
        return out

    def _replace(self, w: _Worker) -> None:
        self.replaced += 1
        loop = self._loop

        def spawn() -> None:
            self._all.discard(w)
            w.kill()
            for attempt in range(3):
                if self._closing:
                    return
                new = _Worker(self.ctx, self.limits, self.target)
                self._all.add(new)
                if new.wait_ready(180.0) and loop is not None and not self._closing:
                    loop.call_soon_threadsafe(self._idle.put_nowait, new)
                    return
                self._all.discard(new)
                new.kill()
                time.sleep(2.0 * (attempt + 1))
            print("planner serve: a solver process could not be restarted; the pool is smaller", file=sys.stderr)

        threading.Thread(target=spawn, daemon=True).start()

    def close(self) -> None:
        self._closing = True
        for w in list(self._all):
            w.kill()
        self._all.clear()
        self._threads.shutdown(wait=False, cancel_futures=True)


# --------------------------------------------------------------------------------------
# the ASGI app
# --------------------------------------------------------------------------------------


async def read_body(request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it passes ``limit`` bytes.

    A body announced (Content-Length) or streamed past the limit is drained up to 4 x limit
    without keeping it, so that the client can read the 413 instead of a reset connection;
    a bigger one is cut off.
    """
    too_big = ServiceError(413, "body_too_large", f"the request body exceeds this server's limit of {limit} bytes "
                           f"({limit / MIB:g} MiB, --max-body-mb)", limit_bytes=limit)
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            n = int(declared)
        except ValueError:
            raise ServiceError(400, "malformed_request", f"bad Content-Length {declared!r}") from None
        if n > limit:
            await _drain(request, 4 * limit)
            raise too_big
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            chunks.clear()
            await _drain(request, 4 * limit - size)
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


async def _drain(request, budget: int) -> None:
    from starlette.requests import ClientDisconnect

    try:
        async for chunk in request.stream():
            budget -= len(chunk)
            if budget < 0:
                return
    except (ClientDisconnect, RuntimeError):
        return


def create_app(limits: Limits | None = None, ready_message: str | None = None):
    """The FastAPI application with its solver pool (started and stopped by the lifespan);
    ``ready_message`` is printed on stdout once the pool is up."""
    from contextlib import asynccontextmanager

    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from . import __version__
    from .plan import Result

    limits = limits or Limits()
    pool = SolverPool(limits)
    state = {"in_flight": 0, "served": 0, "rejected": 0, "started": time.time()}
    cached: dict[str, bytes] = {}

    @asynccontextmanager
    async def lifespan(app):
        from .model import instance_schema
        from .registry import list_methods

        cached["methods"] = _json_bytes([
            {"name": m.name, "problems": list(m.problems), "kind": m.kind, "source": m.source,
             "options": m.options, "summary": m.summary} for m in list_methods()])
        cached["schema"] = _json_bytes(instance_schema())
        pool.start()
        if ready_message:
            print(ready_message, flush=True)
        try:
            yield
        finally:
            pool.close()

    app = FastAPI(title="planner", version=__version__, lifespan=lifespan,
                  description="Place Storm topologies on clusters, exactly or with published heuristics; "
                  "every plan is judged by one independent evaluator. Errors are {error, detail, path}.")

    err_responses = {s: {"model": ErrorBody} for s in (400, 413, 422, 429, 504)}

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError):
        headers = {"Retry-After": "1"} if exc.status == 429 else None
        return JSONResponse(exc.body(), status_code=exc.status, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse({"error": code, "detail": f"{request.method} {request.url.path}: {exc.detail}", "path": "$"},
                            status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception):
        return JSONResponse({"error": "internal", "detail": f"{type(exc).__name__}: {exc}", "path": "$"}, status_code=500)

    async def pooled(kind: str, request: Request) -> Response:
        body = await read_body(request, limits.max_body_bytes)
        if state["in_flight"] >= limits.max_concurrent:
            state["rejected"] += 1
            raise ServiceError(429, "too_many_requests",
                               f"{state['in_flight']} requests are in progress; this server admits {limits.max_concurrent} "
                               f"at once (--max-concurrent), {limits.workers} running (--workers); retry later")
        state["in_flight"] += 1

        async def job():
            try:
                return await pool.run(kind, body)
            finally:
                state["in_flight"] -= 1
                state["served"] += 1

        # shielded: a client that goes away does not leak the worker or the admission count
        status, headers, out = await asyncio.shield(asyncio.ensure_future(job()))
        return Response(out, status_code=status, headers=headers, media_type="application/json")

    def body_doc(model: type[BaseModel]) -> dict[str, Any]:
        return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}

    @app.post("/v1/solve", responses={200: {"model": Result}, **err_responses}, openapi_extra=body_doc(SolveRequest),
              summary="Solve an instance with one method; the plan is judged by the evaluator")
    async def solve_endpoint(request: Request) -> Response:
        return await pooled("solve", request)

    @app.post("/v1/evaluate", responses={200: {"description": "violations and metrics"}, **err_responses},
              openapi_extra=body_doc(EvaluateRequest), summary="Check a plan and compute its metrics")
    async def evaluate_endpoint(request: Request) -> Response:
        return await pooled("evaluate", request)

    @app.post("/v1/storm/schedule", responses={200: {"description": "{result, assignment}"}, 501: {"model": ErrorBody},
                                                **err_responses},
              openapi_extra=body_doc(StormScheduleRequest), summary="Storm UI REST JSON in, a Storm assignment out")
    async def storm_schedule_endpoint(request: Request) -> Response:
        return await pooled("storm_schedule", request)

    @app.get("/v1/methods", summary="The registered methods, their problems, options and sources")
    async def methods_endpoint() -> Response:
        return Response(cached["methods"], media_type="application/json")

    @app.get("/v1/schema/instance", summary="JSON Schema of an instance")
    async def schema_endpoint() -> Response:
        return Response(cached["schema"], media_type="application/json")

    @app.get("/healthz", summary="Liveness; answers while solves run")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "workers": limits.workers, "idle_workers": pool.idle, "in_flight": state["in_flight"],
                "served": state["served"], "rejected": state["rejected"], "workers_replaced": pool.replaced, "worker_pids": pool.pids,
                "busy_worker_pids": pool.busy_pids,
                "uptime_s": round(time.time() - state["started"], 3), "limits": asdict(limits)}

    return app


# --------------------------------------------------------------------------------------
# the CLI
# --------------------------------------------------------------------------------------


def _size_arg(text: str) -> tuple[int, int]:
    try:
        e, n = text.lower().split("x")
        e_i, n_i = int(e), int(n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected EXECUTORSxNODES such as 50000x5000, got {text!r}") from None
    if e_i < 1 or n_i < 1:
        raise argparse.ArgumentTypeError("both numbers must be >= 1")
    return e_i, n_i


def _positive(kind):
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not (v > 0) or (isinstance(v, float) and not math.isfinite(v)):
            raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
        return v

    return parse


def add_parser(subparsers) -> None:
    """Add ``planner serve`` (the planner.cli plug-in hook)."""
    d = Limits()
    s = subparsers.add_parser("serve", help="run the HTTP backend (FastAPI + uvicorn)",
                              description="Serve /v1/solve, /v1/evaluate, /v1/storm/schedule, /v1/methods, /healthz and "
                              "/openapi.json. Port 0 picks a free port; the chosen address is printed on stdout.")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--workers", type=_positive(int), default=d.workers,
                   help=f"solver processes: requests computed at once (default {d.workers})")
    s.add_argument("--max-body-mb", type=_positive(float), default=d.max_body_bytes / MIB,
                   help="largest request body in MiB; more gets 413 (default 16)")
    s.add_argument("--max-size", type=_size_arg, default=(d.max_executors, d.max_nodes), metavar="EXECxNODES",
                   help=f"largest instance: executors x nodes; more gets 422 (default {d.max_executors}x{d.max_nodes})")
    s.add_argument("--max-time-limit", type=_positive(float), default=d.max_time_limit, metavar="S",
                   help=f"time_limit cap in seconds; larger or absent limits are clamped to it (default {d.max_time_limit:g})")
    s.add_argument("--max-concurrent", type=_positive(int), default=None, metavar="K",
                   help="requests admitted at once (running + waiting for a worker); more get 429 (default 2 x workers)")
    s.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    s.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """Bind the socket ourselves (so port 0 works and the real port is printed), then run uvicorn."""
    import uvicorn

    workers = args.workers
    limits = Limits(max_body_bytes=int(args.max_body_mb * MIB), max_executors=args.max_size[0], max_nodes=args.max_size[1],
                    max_time_limit=args.max_time_limit, workers=workers,
                    max_concurrent=max(args.max_concurrent or 2 * workers, 1))
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as e:
        print(f"planner serve: cannot bind {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    sock.listen(1024)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    ready = (f"planner serve: listening on http://{shown}:{port} (pid {os.getpid()}, {workers} solver processes, "
             f"{limits.max_concurrent} admitted)")
    config = uvicorn.Config(create_app(limits, ready), log_level=args.log_level, timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])
    return 0
