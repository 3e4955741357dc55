"""Bounded load test of ``planner serve`` on loopback.

Starts its own server (``--port 0``, this checkout's code), runs N client threads that each
send M requests one after another (a fixed total: N x M), then stops the server. Reports
every status code seen, requests lost (no reply), throughput and latency percentiles, and
exits 1 if any request was lost or got a 5xx.

    PYTHONPATH=$PWD python benchmarks/bench_service_load.py --clients 8 --requests 50
    PYTHONPATH=$PWD python benchmarks/bench_service_load.py --clients 4 --requests 10 --method exact.bruteforce
    PYTHONPATH=$PWD python benchmarks/bench_service_load.py --clients 1 --requests 5 --method exact.cpsat --repo OLD

Before the load, the server's start-up (until it says it listens) and one request sent alone
(the first solve of a fresh solver process) are timed.

The machine it runs on may be shared; say so next to the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent


def start_server(workers: int, max_concurrent: int, repo: Path = REPO) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(repo) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "planner.cli", "serve", "--host", "127.0.0.1", "--port", "0",
                             "--workers", str(workers), "--max-concurrent", str(max_concurrent)],
                            cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, line.split("listening on ")[1].split()[0]


def percentile(sorted_xs: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_xs:
        return float("nan")
    k = max(0, min(len(sorted_xs) - 1, int(round(q / 100 * len(sorted_xs) + 0.5)) - 1))
    return sorted_xs[k]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=8, help="parallel client threads (N)")
    ap.add_argument("--requests", type=int, default=50, help="requests per client (M)")
    ap.add_argument("--workers", type=int, default=2, help="server solver processes")
    ap.add_argument("--max-concurrent", type=int, default=None, help="server admission bound (default: N, so none is refused)")
    ap.add_argument("--instance", default=str(REPO / "instances" / "tiny-linear.json"))
    ap.add_argument("--problem", default="network")
    ap.add_argument("--method", default="storm.even")
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--repo", default=str(REPO), help="the checkout whose server runs (default: this one), to "
                    "compare another commit's in the same run")
    args = ap.parse_args(argv)

    body = json.dumps({"instance": json.loads(Path(args.instance).read_text()), "problem": args.problem,
                       "method": args.method, "time_limit": args.time_limit}).encode()
    t_start = time.perf_counter()
    proc, url = start_server(args.workers, args.max_concurrent or args.clients, Path(args.repo))
    startup = time.perf_counter() - t_start  # until the server says it listens
    with httpx.Client(base_url=url, timeout=120) as h:  # one request alone first: a fresh process's cost
        t0 = time.perf_counter()
        first = h.post("/v1/solve", content=body, headers={"content-type": "application/json"})
        first_s = time.perf_counter() - t0
    latencies: list[float] = []
    codes: Counter = Counter()
    solve_status: Counter = Counter()
    lost: list[str] = []
    health: list[float] = []
    lock = threading.Lock()
    done = threading.Event()

    def client() -> None:
        with httpx.Client(base_url=url, timeout=120) as h:
            for _ in range(args.requests):
                t0 = time.perf_counter()
                try:
                    r = h.post("/v1/solve", content=body, headers={"content-type": "application/json"})
                except httpx.HTTPError as e:
                    with lock:
                        lost.append(f"{type(e).__name__}: {e}")
                    continue
                dt = time.perf_counter() - t0
                with lock:
                    latencies.append(dt)
                    codes[r.status_code] += 1
                    if r.status_code == 200:
                        solve_status[r.json()["status"]] += 1

    def prober() -> None:  # /healthz latency under load, 10 per second
        with httpx.Client(base_url=url, timeout=10) as h:
            while not done.is_set():
                t0 = time.perf_counter()
                h.get("/healthz")
                health.append(time.perf_counter() - t0)
                done.wait(0.1)

    try:
        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        probe = threading.Thread(target=prober)
        t0 = time.perf_counter()
        probe.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        done.set()
        probe.join()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()

    latencies.sort()
    health.sort()
    total = args.clients * args.requests
    out = {
        "clients": args.clients, "requests_per_client": args.requests, "total": total,
        "method": args.method, "workers": args.workers,
        "startup_s": round(startup, 2), "first_request_ms": round(1000 * first_s, 1), "first_status": first.status_code,
        "replies": len(latencies), "lost": len(lost), "status_codes": dict(sorted(codes.items())),
        "solve_status": dict(solve_status), "wall_s": round(wall, 3), "throughput_rps": round(len(latencies) / wall, 1),
        "p50_ms": round(1000 * percentile(latencies, 50), 1), "p99_ms": round(1000 * percentile(latencies, 99), 1),
        "max_ms": round(1000 * latencies[-1], 1) if latencies else None,
        "healthz_p50_ms": round(1000 * percentile(health, 50), 1), "healthz_max_ms": round(1000 * health[-1], 1) if health else None,
        "healthz_probes": len(health),
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:>20}: {v}")
    for e in lost[:5]:
        print("lost:", e, file=sys.stderr)
    bad = len(lost) + sum(n for c, n in codes.items() if c >= 500)
    if bad or len(latencies) != total:
        print(f"FAIL: {len(lost)} lost, {sum(n for c, n in codes.items() if c >= 500)} 5xx", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
