"""Small instance builders shared by tests."""

from __future__ import annotations

import copy
import os
import random
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


def seeds(n: int, fast: int) -> list:
    """range(n) for parametrize, the seeds from ``fast`` on in the slow tier (the default suite
    keeps the first ones; its 10-minute budget on 2 cores)."""
    return [s if s < fast else pytest.param(s, marks=pytest.mark.slow) for s in range(n)]


def tiny(**over) -> dict:
    """spout(1) -> split(2) -> count(2) on 2 racks x 2 nodes x 2 slots."""
    d = {
        "name": "t",
        "topologies": [{
            "id": "wc", "workers": 2, "input_rate": 100,
            "components": [
                {"id": "spout", "kind": "spout", "parallelism": 1, "cpu": 50, "memory_onheap_mb": 256},
                {"id": "split", "parallelism": 2, "cpu": 50, "memory_onheap_mb": 256},
                {"id": "count", "parallelism": 2, "cpu": 50, "memory_onheap_mb": 256},
            ],
            "streams": [
                {"source": "spout", "target": "split"},
                {"source": "split", "target": "count", "grouping": "fields", "selectivity": 2},
            ],
        }],
        "cluster": {"racks": [
            {"id": "r1", "nodes": [{"id": "n1", "slots": 2, "cpu": 200, "memory_mb": 2048},
                                   {"id": "n2", "slots": 2, "cpu": 200, "memory_mb": 2048}]},
            {"id": "r2", "nodes": [{"id": "n3", "slots": 2, "cpu": 200, "memory_mb": 2048},
                                   {"id": "n4", "slots": 2, "cpu": 200, "memory_mb": 2048}]},
        ]},
    }
    d.update(over)
    return copy.deepcopy(d)


def random_instance(rng: random.Random, max_exec: int = 6, max_nodes: int = 3) -> dict:
    """A small random valid instance for the fixed-count problems (network, traffic, ...)."""
    ncomp = rng.randint(2, 4)
    comps = []
    for i in range(ncomp):
        comps.append({
            "id": f"c{i}", "kind": "spout" if i == 0 else "bolt",
            "parallelism": 1,
            "cpu": rng.choice([10, 20, 50]),
            "memory_onheap_mb": rng.choice([64, 128, 256]),
        })
    extra = max_exec - ncomp
    for _ in range(max(0, rng.randint(0, extra))):
        rng.choice(comps)["parallelism"] += 1
    streams = []
    for i in range(1, ncomp):
        src = rng.randrange(0, i)
        streams.append({"source": f"c{src}", "target": f"c{i}",
                        "grouping": rng.choice(["shuffle", "fields", "all", "global"]),
                        "selectivity": rng.choice([0.5, 1, 2])})
    nnodes = rng.randint(1, max_nodes)
    racks: dict[str, list] = {}
    for n in range(nnodes):
        racks.setdefault(f"r{rng.randint(0, 1)}", []).append(
            {"id": f"n{n}", "slots": rng.randint(1, 2), "cpu": rng.choice([100, 200, 400]), "memory_mb": rng.choice([512, 1024, 4096])})
    return {
        "name": "rand",
        "topologies": [{"id": "t", "workers": rng.randint(1, 3), "input_rate": rng.choice([1, 10, 100]),
                        "max_heap_mb": rng.choice([512, 768, 2048]), "components": comps, "streams": streams}],
        "cluster": {"racks": [{"id": k, "nodes": v} for k, v in sorted(racks.items())]},
    }


def perf_models(rnd: random.Random, cs: list[dict], rate: tuple[float, float], cpu: tuple[float, float],
                mem: tuple[float, float], cpu_growth: float) -> list[dict]:
    """Random tabulated performance models (1-3 thread counts, rate and usage growing with the
    threads) for the slots tests' generators, one per component of ``cs``."""
    models = []
    for c in cs:
        r, u, m, pts = rnd.uniform(*rate), rnd.uniform(*cpu), rnd.uniform(*mem), []
        for q in range(1, rnd.choice([1, 2, 3]) + 1):
            pts.append({"threads": q, "rate": round(r, 2), "cpu": round(u, 2), "memory": round(m, 2)})
            r *= rnd.uniform(1.1, 1.8)
            u *= rnd.uniform(1.0, cpu_growth)
            m *= rnd.uniform(1.0, 1.3)
        models.append({"name": c["id"], "points": pts, "interpolate": rnd.random() < 0.3})
    return models


# One embedded Spark (local[2]) for the tests that run batches in the test process: starting one
# costs about 10 s on a 2-core machine (the driver JVM, then Python workers loading the solver
# code), and the batch, failing-method and reproduce tests each started their own (session 20:
# the default tier was within 15 s of its 10-minute budget). run_batch and reproduce take the
# context (``sc=``) and leave it running, as they do for any caller's context. Only one
# SparkContext may live in a process: a test that starts its own (the standalone master's) first
# calls stop_local_spark(), and a later local_spark() starts a new one. conftest stops it at the end.
_LOCAL_SPARK: dict = {}


def local_spark():
    """The shared local[2] SparkContext, with tests/ on its workers' Python path."""
    from planner.batch import _spark_stopped, spark_context

    sc = _LOCAL_SPARK.get("sc")
    if sc is None or _spark_stopped(sc):
        sc = _LOCAL_SPARK["sc"] = spark_context("local[2]", app_name="planner-tests", extra_paths=[str(TESTS)])
    return sc


def stop_local_spark() -> None:
    sc = _LOCAL_SPARK.pop("sc", None)
    if sc is not None:
        sc.stop()


def spark_env() -> dict[str, str]:
    """This environment with the repository and tests/ on PYTHONPATH (for CLI runs and Spark daemons)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(TESTS)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def direct_results(inst_dir: Path, problem: str, method: str, time_limit: float) -> dict:
    """{instance id: Result} by calling planner.solve directly on each file."""
    import planner

    return {f.stem: planner.solve(str(f), problem, method, time_limit=time_limit) for f in sorted(inst_dir.glob("*.json"))}


def same_value(a, b) -> bool:
    """Both None, or equal to a relative 1e-9."""
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def proven_small_network(n: int):
    """(instance, brute force's optimal Result, its PlacementModel) for each of the seeds
    0..n-1 of ``small_random("network", seed)`` that brute force proves."""
    import planner
    from formulations._gen import small_random
    from formulations._rasmodel import PlacementModel, component_groups
    from planner.model import parse_instance

    for seed in range(n):
        inst = parse_instance(small_random("network", seed))
        ref = planner.solve(inst, "network", "exact.bruteforce")
        if ref.status.value != "optimal":
            continue
        groups = [g for ti, t in enumerate(inst.topologies) for g in component_groups(ti, t)]
        yield seed, inst, ref, PlacementModel(inst, "network", groups, build=False)
