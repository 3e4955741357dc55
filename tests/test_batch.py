"""Generators, the Spark batch runner and the report.

Spark tests run real Spark: local mode in-process, a standalone master and worker started
here on 127.0.0.1, and a `planner batch` subprocess killed midway and restarted.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import planner
from planner.batch import load_results, read_runs, run_batch
from planner.cli import main
from planner.generate import _ras_random, _rng, generate, write_instances, RAS_DEFAULTS
from planner.model import InstanceError

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

from helpers import direct_results, local_spark, same_value, spark_env  # noqa: E402


# ---------------------------------------------------------------------------------------------
# generators


@pytest.mark.parametrize("kind", ["ras-random", "micro", "hetero", "layered", "shukla-app"])
def test_generators_deterministic_per_seed(kind):
    a = [i.model_dump(mode="json") for i in generate(kind, 4, seed=7)]
    b = [i.model_dump(mode="json") for i in generate(kind, 4, seed=7)]
    c = [i.model_dump(mode="json") for i in generate(kind, 4, seed=8)]
    assert a == b
    assert a != c
    # a longer batch starts with the same instances
    assert [i.model_dump(mode="json") for i in generate(kind, 6, seed=7)][:4] == a
    for inst in a:
        meta = inst["meta"]
        assert meta["generator"] == kind and meta["seed"] == 7 and isinstance(meta["params"], dict)
        assert meta["problems"]


def test_ras_random_follows_the_protocol():
    insts = generate("ras-random", 40, seed=3)
    assert len(insts) == 40
    for inst in insts:
        nodes = inst.cluster.nodes
        assert 1 <= len(inst.cluster.racks) <= 3
        assert 1 <= len(nodes) <= 6
        assert 1 <= sum(len(n.slots) for n in nodes) <= 2  # the port budget is at most 2
        assert sum(n.cpu for n in nodes) <= 8000 and sum(n.memory_mb for n in nodes) <= 80000
        (t,) = inst.topologies
        assert 0 <= t.max_heap_mb <= 80000
        assert 1 <= t.executor_count <= 5
        assert 1 <= sum(c.cpu for c in t.components) <= 1000
        assert 1 <= sum(c.memory_onheap_mb for c in t.components) <= 10000
        kinds = [c.kind for c in t.components]
        assert kinds == ["spout" if i % 2 == 0 else "bolt" for i in range(len(kinds))]
        bolts = [c.id for c in t.components if c.kind == "bolt"]
        for c in t.components:
            outs = [s.target for s in t.streams if s.source == c.id]
            if c.kind == "spout":
                assert len(outs) == (1 if bolts else 0) and all(o in bolts for o in outs)
            else:
                assert len(outs) <= 1 and all(o in bolts and o != c.id for o in outs)
        # kept instances are feasible: an exhaustive search finds a placement
        assert planner.solve(inst, "feasibility", "exact.bruteforce").status.value == "optimal"
    # dropped draws (gaps in meta.index) are exactly the infeasible ones
    kept = {i.meta["index"] for i in insts}
    dropped = [k for k in range(max(kept)) if k not in kept]
    assert dropped, "with these budgets some draws are infeasible"
    for k in dropped[:10]:
        data, _ = _ras_random(_rng("ras-random", 3, k), RAS_DEFAULTS)
        if not data["cluster"]["racks"][0]["nodes"]:
            continue
        data["meta"] = {}
        res = planner.solve(data, "feasibility", "exact.bruteforce")
        assert res.status.value == "infeasible"


def test_other_generators_fit_their_problems():
    for inst in generate("micro", 6, seed=1):
        assert inst.meta["shape"] in ("linear", "diamond", "star")
        assert {p.profile for p in inst.machine_profiles} == {c.id for c in inst.topologies[0].components}
        assert {m.name for m in inst.perf_models} == {c.id for c in inst.topologies[0].components}
    shapes = [i.meta["shape"] for i in generate("micro", 6, seed=1)]
    assert shapes == ["linear", "diamond", "star"] * 2
    for inst in generate("hetero", 3, seed=1):
        types = {n.type for n in inst.cluster.nodes}
        comps = {c.id for c in inst.topologies[0].components}
        assert {(p.profile, p.machine_type) for p in inst.machine_profiles} == {(c, t) for c in comps for t in types}
    for inst in generate("layered", 3, seed=1, executors=30, nodes=6):
        assert inst.size["executors"] == 30 and inst.size["nodes"] == 6
        assert inst.size["components"] == 10
        assert planner.solve(inst, "network", "storm.even").status.value in ("feasible", "infeasible")


def test_shukla_app_follows_the_papers_description():
    """shukla-app: the stated task counts and DAG selectivities (the sink's rate over the input
    rate), the five modelled tasks dealt in turn, one DAG per shape at every rate, the shipped
    69-slot Azure pool, rate usage."""
    from planner.rates import component_rates

    shipped_pool = sorted((n.type, len(n.slots), n.price, n.cpu, n.memory_mb)
                          for n in planner.load_instance("shukla-linear").cluster.nodes)
    insts = generate("shukla-app", 6, seed=2)
    assert [(i.meta["tasks"], i.meta["paths"], i.topologies[0].input_rate) for i in insts] == [
        (7, 2, 50.0), (11, 3, 50.0), (15, 4, 50.0), (7, 2, 100.0), (11, 3, 100.0), (15, 4, 100.0)]
    for k, inst in enumerate(insts):
        (t,) = inst.topologies
        logic = [c for c in t.components if c.id not in ("source", "sink")]
        assert len(logic) == inst.meta["tasks"]
        kinds = [c.perf_model for c in logic]
        per = [kinds.count(m) for m in ("blob", "table", "pi", "parse", "batchwrite")]
        assert sum(per) == len(logic) and max(per) - min(per) <= 1, per  # dealt in turn
        assert all(inst.perf_model(m) is not None for m in kinds + ["source", "sink"])
        r = component_rates(t)
        assert r["sink"] == pytest.approx(inst.meta["paths"] * t.input_rate)  # DAG selectivity 1:paths
        assert max(r[c.id] for c in logic) <= inst.meta["paths"] * t.input_rate + 1e-9
        assert sum(len(n.slots) for n in inst.cluster.nodes) == 69
        pool = sorted((n.type, len(n.slots), n.price, n.cpu, n.memory_mb) for n in inst.cluster.nodes)
        assert pool == shipped_pool  # the shipped shukla-* instances' VMs, one copy
        assert inst.params.slot_usage == "rate" and inst.meta["problems"] == ["slots"]
        if k >= 3:  # the same DAG at the other rate
            other = insts[k - 3].topologies[0]
            assert [(s.source, s.target) for s in t.streams] == [(s.source, s.target) for s in other.streams]
            assert [c.perf_model for c in t.components] == [c.perf_model for c in other.components]
    (big,) = generate("shukla-app", 1, seed=0, tasks=[5], paths=[2], rates=[20], pool_copies=2)
    assert sum(len(n.slots) for n in big.cluster.nodes) == 138
    # one value where a list is expected (``-P rates=80`` reaches the generator as the number 80)
    (one,) = generate("shukla-app", 1, seed=0, tasks=9, paths=2, rates=80)
    assert (one.meta["tasks"], one.meta["paths"], one.topologies[0].input_rate) == (9, 2, 80.0)
    for params, path in (({"paths": [2]}, "params.paths"), ({"tasks": [0], "paths": [1]}, "params.tasks"),
                         ({"tasks": [3], "paths": [60]}, "params.paths"), ({"rates": [0]}, "params.rates"),
                         ({"pool_copies": 0}, "params.pool_copies"), ({"colour": 1}, "params.colour"),
                         ({"tasks": "x|y", "paths": "2|2"}, "params.tasks"), ({"tasks": [2.5], "paths": [2]}, "params.tasks")):
        with pytest.raises(InstanceError) as e:
            generate("shukla-app", 1, seed=0, **params)
        assert e.value.path == path, params


def test_storm_large_without_the_storm_module_is_a_clear_error(monkeypatch):
    import planner.storm

    monkeypatch.delattr(planner.storm, "load_cluster_dir", raising=False)
    with pytest.raises(InstanceError) as e:
        generate("storm-large", 1)
    assert e.value.path == "generator.storm-large"


def test_storm_large_reads_the_real_cluster(shared):
    (inst,) = generate("storm-large", 1, folders="largeCluster03", data=str(shared / "data" / "storm-largecluster"))
    assert inst.meta["generator"] == "storm-large" and inst.meta["folder"] == "largeCluster03"
    assert len(inst.topologies) == 50 and len(inst.cluster.nodes) == 80  # README: 50 topologies, 80 supervisors
    assert sum(len(n.slots) for n in inst.cluster.nodes) == 960
    assert "admission" in inst.meta["problems"]
    with pytest.raises(InstanceError) as e:
        generate("storm-large", 1, folders="noSuchCluster", data=str(shared / "data" / "storm-largecluster"))
    assert e.value.path == "params.folders"


def test_generate_cli_and_bad_input(tmp_path, capsys):
    assert main(["generate", "layered", "--count", "3", "--seed", "2", "--out", str(tmp_path / "g"), "-P", "executors=12"]) == 0
    files = sorted((tmp_path / "g").glob("*.json"))
    assert len(files) == 3
    assert json.loads(files[0].read_text())["meta"]["params"]["executors"] == 12
    assert main(["generate", "layered", "--out", str(tmp_path / "h"), "-P", "executors=many"]) == 2
    assert "params.executors" in capsys.readouterr().err
    with pytest.raises(InstanceError) as e:
        generate("nope", 1)
    assert e.value.path == "generator"


def test_batch_rejects_bad_input_before_running(tmp_path):
    d = tmp_path / "inst"
    write_instances(generate("ras-random", 2, seed=1), d)
    with pytest.raises(InstanceError) as e:
        run_batch(str(d), "network", ["no.such.method"], tmp_path / "out")
    assert e.value.path == "--methods"
    with pytest.raises(InstanceError) as e:
        run_batch(str(d), "throughput", ["storm.even"], tmp_path / "out")
    assert e.value.path == "--methods"
    with pytest.raises(InstanceError) as e:
        run_batch("gen:layered:count=x", "network", ["storm.even"], tmp_path / "out")
    assert e.value.path == "--instances"
    (d / "broken.json").write_text('{"topologies": [], "cluster": {"racks": []}}')
    with pytest.raises(InstanceError) as e:
        run_batch(str(d), "network", ["storm.even"], tmp_path / "out")
    assert e.value.path.startswith("broken.json:")
    assert main(["batch", "--instances", str(d), "--problem", "network", "--methods", "storm.even", "--out",
                 str(tmp_path / "out")]) == 2


# ---------------------------------------------------------------------------------------------
# Spark


@pytest.fixture(scope="module")
def local_batch(tmp_path_factory):
    """A small batch on local Spark: 8 ras-random instances x (storm.even, exact.bruteforce)."""
    root = tmp_path_factory.mktemp("local-batch")
    inst_dir = root / "instances"
    write_instances(generate("ras-random", 8, seed=11), inst_dir)
    out = root / "results"
    s = run_batch(str(inst_dir), "network", ["storm.even"], out, reference="exact.bruteforce", time_limit=20,
                  master="local[2]", flush_every=3, progress_interval=1.0, sc=local_spark())
    return inst_dir, out, s


@pytest.mark.spark
def test_local_batch_rows_equal_direct_solve(local_batch):
    inst_dir, out, s = local_batch
    assert s.complete and s.total == 16 and s.ran == 16 and s.skipped == 0
    df = load_results(out)
    raw = read_runs(out)
    assert len(raw) == 16 and raw["run_key"].is_unique
    assert len(list((out / "runs").glob("part-*.parquet"))) >= 2  # flushed in chunks
    for method in ("storm.even", "exact.bruteforce"):
        direct = direct_results(inst_dir, "network", method, 20)
        rows = df[df["method"] == method].set_index("instance_id")
        assert sorted(rows.index) == sorted(direct)
        for iid, res in direct.items():
            r = rows.loc[iid]
            assert r["status"] == res.status.value, (iid, method)
            assert same_value(None if r["objective"] != r["objective"] else r["objective"], res.objective)
            assert same_value(None if r["bound"] != r["bound"] else r["bound"], res.bound)
            assert r["executors"] == planner.load_instance(str(inst_dir / f"{iid}.json")).size["executors"]
    # gaps: against the bruteforce optimum, per instance
    ref = df[df["method"] == "exact.bruteforce"].set_index("instance_id")["objective"]
    assert (df["reference_status"] == "proven").all()
    for r in df[df["method"] == "storm.even"].itertuples():
        if r.status in ("optimal", "feasible"):
            assert r.gap_to_optimal == pytest.approx(planner.plan.gap_to_optimal(r.objective, ref[r.instance_id]))
            assert r.objective >= ref[r.instance_id] - 1e-9  # nothing beats the optimum
        else:
            assert r.gap_to_optimal != r.gap_to_optimal  # NaN: no gap for a run without a plan
    # resumable: the same command again runs nothing and keeps every row
    s2 = run_batch(str(inst_dir), "network", ["storm.even"], out, reference="exact.bruteforce", time_limit=20,
                   master="local[2]")
    assert s2.skipped == 16 and s2.ran == 0 and len(read_runs(out)) == 16


@pytest.mark.spark
def test_report_from_results(local_batch, tmp_path):
    _, out, _ = local_batch
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    rep = tmp_path / "rep"
    import pandas as pd

    summ = pd.read_csv(rep / "summary.csv")
    assert set(summ["method"]) == {"storm.even", "exact.bruteforce"}
    bf = summ[summ["method"] == "exact.bruteforce"].iloc[0]
    assert bf["proven_optimal"] == 8 and bf["share_optimal"] == 1.0 and bf["gap_max"] == 0.0
    ev = summ[summ["method"] == "storm.even"].iloc[0]
    df = load_results(out)
    even = df[df["method"] == "storm.even"]
    assert ev["solved"] == even["status"].isin(["optimal", "feasible"]).sum()
    assert ev["share_optimal"] == pytest.approx(even["at_optimum"].sum() / 8)
    for name in ("network-objective-cdf.png", "network-gap.png", "network-time-vs-size.png"):
        assert (rep / name).stat().st_size > 5000
        assert name in (rep / "index.html").read_text()
    assert "| network | storm.even |" in (rep / "summary.md").read_text()
    assert main(["report", str(tmp_path / "nothing"), "--out", str(tmp_path / "r2")]) == 2


@pytest.mark.spark
def test_failing_method_gives_error_rows_and_the_batch_finishes(tmp_path):
    import batch_methods  # noqa: F401  (registers test.faulty in this process too)

    d = tmp_path / "inst"
    write_instances(generate("ras-random", 4, seed=5), d)
    # test.faulty keys on meta.index 0, 1, 2: renumber the four kept instances 0..3
    for k, f in enumerate(sorted(d.glob("*.json"))):
        data = json.loads(f.read_text())
        data["meta"]["index"] = k
        f.write_text(json.dumps(data))
    out = tmp_path / "out"
    s = run_batch(str(d), "network", ["test.faulty", "storm.even"], out, time_limit=1.0, hard_limit=4.0,
                  master="local[2]", imports=["batch_methods"], progress_interval=1.0,
                  sc=local_spark())
    assert s.complete
    df = load_results(out).set_index(["instance_id", "method"])
    assert len(df) == 8
    ids = sorted(f.stem for f in d.glob("*.json"))
    r0, r1, r2, r3 = (df.loc[(i, "test.faulty")] for i in ids)
    assert r0["status"] == "error" and "boom" in r0["message"]
    assert r1["status"] == "error" and "died" in r1["message"] and "7" in r1["message"]
    assert r2["status"] == "unknown" and "killed" in r2["message"] and 4.0 <= r2["wall_seconds"] < 30
    direct = planner.solve(str(d / f"{ids[3]}.json"), "network", "storm.even")
    assert r3["status"] == direct.status.value and same_value(r3["objective"], direct.objective)
    # the other method on the same instances is unaffected
    for i in ids:
        assert df.loc[(i, "storm.even")]["status"] in ("feasible", "infeasible")
    assert (df["reference_status"] == "no reference").all()


def test_solver_process_is_kept_and_an_abandoned_run_is_not_taken_for_the_next():
    """The solver process outlives a run (and a Spark task); a run abandoned mid-way (the task
    interrupted) must not hand its late answer to the next run."""
    import signal as sig

    import batch_methods  # noqa: F401
    from planner.batch import _Sandbox, _batch_instance

    a, b = generate("layered", 2, seed=3, executors=6, nodes=3)
    ba, bb = _batch_instance(a, "a", "t"), _batch_instance(b, "b", "t")
    want_a = planner.solve(a, "network", "storm.ras")
    sb = _Sandbox(["batch_methods"])
    try:
        r1 = sb.run(ba.digest, ba.json, "network", "storm.ras", 10, 0, 30)
        pid = sb.proc.pid
        r2 = sb.run(bb.digest, bb.json, "network", "storm.even", 10, 0, 30)
        assert sb.proc.pid == pid  # one process for both runs
        assert r1["status"] == want_a.status.value and same_value(r1["objective"], want_a.objective)
        want_b = planner.solve(b, "network", "storm.even")
        assert r2["status"] == want_b.status.value and same_value(r2["objective"], want_b.objective)

        def interrupt(*_):
            raise KeyboardInterrupt

        old = sig.signal(sig.SIGALRM, interrupt)
        sig.setitimer(sig.ITIMER_REAL, 0.1)
        try:
            with pytest.raises(KeyboardInterrupt):
                sb.run(bb.digest, bb.json, "network", "test.sleepy", 10, 0, 30)  # answers after 0.3 s
        finally:
            sig.setitimer(sig.ITIMER_REAL, 0)
            sig.signal(sig.SIGALRM, old)
        time.sleep(0.5)  # the abandoned answer is in the pipe by now
        r3 = sb.run(ba.digest, ba.json, "network", "storm.ras", 10, 0, 30)
        assert r3 == {**r1, "seconds": r3["seconds"]}  # a's answer, not b's late one
        assert sb.proc.pid != pid  # replaced, not asked again
    finally:
        sb.close()
    assert sb.proc is None


# slow tier since session 22 (the default suite took 598-619 s on that machine; 6 s; the kill and hang guards' other tests stay)
@pytest.mark.slow
def test_a_big_instance_does_not_block_the_hard_limit_of_the_run_before_it():
    """A run queued behind a hanging one must not stop the guard: an instance too big for the
    pipe's buffer waits until the pipe is empty instead of blocking the send."""
    import threading

    import batch_methods  # noqa: F401
    from planner.batch import PIPELINE_MAX_CHARS, _Sandbox, _batch_instance
    from planner.model import parse_instance

    data = generate("ras-random", 1, seed=5)[0].model_dump(mode="json")
    data["meta"]["index"] = 2  # test.faulty hangs on it
    hang = _batch_instance(parse_instance(data), "hang", "t")
    big_inst = generate("layered", 1, seed=1, executors=3000, nodes=100, slots=4)[0]
    big = _batch_instance(big_inst, "big", "t")
    assert len(big.json) > 300_000 > PIPELINE_MAX_CHARS  # more than a socket buffer holds
    runs = [{"instance_digest": hang.digest, "problem": "network", "method": "test.faulty", "time_limit": 1.0,
             "method_seed": 0, "hard_limit": 2.0},
            {"instance_digest": big.digest, "problem": "network", "method": "storm.even", "time_limit": 60.0,
             "method_seed": 0, "hard_limit": 120.0}]
    sb = _Sandbox(["batch_methods"])
    got: list = []
    th = threading.Thread(target=lambda: got.extend(sb.solve_runs(runs, {hang.digest: hang.json, big.digest: big.json})),
                          daemon=True)
    th.start()
    th.join(90)
    try:
        assert not th.is_alive(), "the guard was blocked behind a send"
        (r1, res1, wall1), (r2, res2, _) = got
        assert res1["status"] == "unknown" and "killed" in res1["message"] and 2.0 <= wall1 < 30
        assert res2["status"] == planner.solve(big_inst, "network", "storm.even").status.value
    finally:
        sb.close()


@pytest.mark.spark
def test_kill_midway_then_resume_has_no_duplicates_or_losses(tmp_path):
    d = tmp_path / "inst"
    write_instances(generate("ras-random", 16, seed=9), d)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "planner.cli", "batch", "--instances", str(d), "--problem", "network",
           "--methods", "test.sleepy,storm.even", "--import", "batch_methods", "--time-limit", "10", "--out", str(out),
           "--master", "local[2]", "--flush-every", "1", "--chunk", "4", "--progress-interval", "1"]
    p = subprocess.Popen(cmd, env=spark_env(), cwd=str(tmp_path), start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=open(tmp_path / "first.err", "w"))
    deadline = time.time() + 120
    try:
        while True:
            n = len(list((out / "runs").glob("part-*.parquet"))) if (out / "runs").is_dir() else 0
            if n >= 4:
                break
            assert p.poll() is None, (tmp_path / "first.err").read_text()[-2000:]
            assert time.time() < deadline, "the batch never wrote rows"
            time.sleep(0.2)
    finally:
        os.killpg(p.pid, signal.SIGKILL)  # the whole session: driver, JVM, Python workers
        p.wait(30)
    time.sleep(1.0)  # let orphaned solver processes notice the closed pipe
    before = {f.name: f.read_bytes() for f in (out / "runs").glob("part-*.parquet")}
    kept = read_runs(out)
    assert 4 <= len(kept) < 32, "the kill must land midway"
    assert kept["run_key"].is_unique
    r = subprocess.run(cmd, env=spark_env(), cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"{len(kept)} already in" in r.stderr
    assert "Warning" not in r.stderr, r.stderr[-3000:]  # a user's run prints no Python warnings
    raw = read_runs(out)
    assert len(raw) == 32 and raw["run_key"].is_unique  # every run once: nothing lost, nothing twice
    assert set(kept["run_key"]) <= set(raw["run_key"])
    for name, data in before.items():  # finished rows are untouched
        assert (out / "runs" / name).read_bytes() == data
    assert len(load_results(out)) == 32


def test_generator_spec_gives_the_generated_instances():
    from planner.batch import load_batch_instances, parse_generator_spec

    assert parse_generator_spec("gen:layered:count=5,seed=3,executors=12,fields_share=0.5") == (
        "layered", 5, 3, {"executors": 12, "fields_share": 0.5})
    assert parse_generator_spec("gen:micro") == ("micro", 10, 0, {})
    got = load_batch_instances("gen:layered:count=5,seed=3,executors=12")
    want = generate("layered", 5, seed=3, executors=12)
    assert [b.id for b in got] == [i.name for i in want]
    assert [json.loads(b.json) for b in got] == [i.model_dump(mode="json") for i in want]
    assert all(b.features["executors"] == 12 and b.features["generator"] == "layered" for b in got)
    with pytest.raises(InstanceError) as e:
        parse_generator_spec("gen:nope:count=1")
    assert e.value.path == "--instances"


def test_unreachable_standalone_master_is_a_clear_error_at_once(tmp_path, capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    code = main(["batch", "--instances", "gen:ras-random:count=2,seed=1", "--problem", "network",
                 "--methods", "storm.even", "--out", str(tmp_path / "out"), "--master", f"spark://127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"--master: cannot connect to the Spark master spark://127.0.0.1:{port}" in err
    assert "Traceback" not in err
    assert time.monotonic() - t0 < 30  # no Spark start-up, no minute of retries
    assert not (tmp_path / "out" / "batches.jsonl").exists()  # not logged as a batch
    assert main(["batch", "--instances", "gen:ras-random:count=2,seed=1", "--problem", "network",
                 "--methods", "storm.even", "--out", str(tmp_path / "out"), "--master", "spark://nohostport"]) == 2
    assert "expected spark://HOST:PORT" in capsys.readouterr().err
