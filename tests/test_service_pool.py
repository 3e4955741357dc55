"""The solver pool's watchdog and the worker-side request handling, in-process (no HTTP):
the paths the server tests cannot reach deterministically."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from planner.service import Limits, ServiceError, SolverPool, handle, raw_size

TINY = (Path(__file__).resolve().parent.parent / "instances" / "tiny-linear.json").read_text()


def stuck_worker(conn, limits) -> None:
    """A worker that starts, takes a request and never answers (a method ignoring its limit)."""
    conn.send_bytes(b"ready")
    conn.recv_bytes()
    conn.recv_bytes()
    time.sleep(3600)


def test_watchdog_kills_an_overrunning_worker_and_replaces_it():
    limits = Limits(workers=1, max_time_limit=0.2, grace=0.2)  # hard timeout 0.4 s

    async def scenario():
        pool = SolverPool(limits, target=stuck_worker)
        pool.start(timeout=60)
        first_pid = pool.pids[0]
        t0 = time.perf_counter()
        with pytest.raises(ServiceError) as e:
            await pool.run("solve", b"{}")
        elapsed = time.perf_counter() - t0
        deadline = time.monotonic() + 60
        while pool.idle < 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        state = (pool.idle, pool.replaced, pool.pids)
        pool.close()
        return e.value, elapsed, first_pid, state

    err, elapsed, first_pid, (idle, replaced, pids) = asyncio.run(scenario())
    assert (err.status, err.error) == (504, "solve_timeout")
    assert 0.4 <= elapsed < 3.0
    assert idle == 1 and replaced == 1 and pids and first_pid not in pids


def test_handle_never_raises_and_reports_paths():
    limits = Limits(max_executors=100, max_nodes=10)
    status, _, body = handle("solve", b'{"instance": 1, "problem": "network", "method": "storm.even"}', limits)
    assert status == 422 and json.loads(body)["path"] == "instance"
    req = json.dumps({"instance": json.loads(TINY), "problem": "network", "method": "storm.even", "options": {"x": 1}})
    status, _, body = handle("solve", req.encode(), limits)
    assert (status, json.loads(body)["error"], json.loads(body)["path"]) == (422, "unknown_option", "options.x")
    status, headers, body = handle("solve", req.replace(', "options": {"x": 1}', "").encode(), limits)
    assert status == 200 and headers["X-Planner-Time-Limit"] == "60"
    assert json.loads(body)["status"] == "feasible"


@pytest.mark.parametrize("data, want", [
    ({"topologies": [{"components": [{"parallelism": 3}, {}]}], "cluster": {"racks": [{"nodes": [{}, {}]}, {"nodes": [{}]}]}}, (4, 3)),
    ({"topologies": [{"components": [{"parallelism": "3"}, {"parallelism": True}, {"parallelism": -5}]}]}, (0, 0)),
    ({"topologies": "x", "cluster": []}, (0, 0)),
    ([1, 2], (0, 0)),
])
def test_raw_size_counts_only_what_is_well_formed(data, want):
    assert raw_size(data) == want
