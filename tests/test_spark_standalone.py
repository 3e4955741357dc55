"""planner batch on a real Spark standalone master and worker on 127.0.0.1.

In its own module, after test_batch and test_reproduce (pytest runs modules in name order): the
test starts its own SparkContext, so it stops the shared embedded one (helpers.local_spark) that
those modules use, and that is best done once, after them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from planner.batch import load_results, run_batch
from planner.generate import generate, write_instances

from helpers import direct_results, same_value, spark_env, stop_local_spark


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def standalone(tmp_path):
    """A Spark standalone master and one worker (1 core, 1 GB) on 127.0.0.1, stopped after."""
    import pyspark

    stop_local_spark()  # one SparkContext per process: the test's own is the standalone master's

    home = Path(pyspark.__file__).resolve().parent
    cls = home / "bin" / "spark-class"
    env = {**spark_env(), "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
           "SPARK_WORKER_DIR": str(tmp_path / "work"), "SPARK_LOG_DIR": str(tmp_path / "logs"),
           "PYSPARK_PYTHON": sys.executable,
           # the daemons' JVMs without the C2 JIT compiler, as the planner runs its driver: on 2 cores
           # the master and worker came up in 5.1-5.7 s instead of 10.3-10.8 s (session 20)
           "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
    mport, mweb, wport, wweb = (_free_port() for _ in range(4))
    logs = tmp_path / "daemon-logs"
    logs.mkdir()
    procs = []
    try:
        procs.append(subprocess.Popen([str(cls), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                       "--port", str(mport), "--webui-port", str(mweb)], env=env,
                                      stdout=open(logs / "master.out", "w"), stderr=subprocess.STDOUT))
        url = f"spark://127.0.0.1:{mport}"
        procs.append(subprocess.Popen([str(cls), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                       "--port", str(wport), "--webui-port", str(wweb), "--cores", "1", "--memory", "1g"],
                                      env=env, stdout=open(logs / "worker.out", "w"), stderr=subprocess.STDOUT))
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{mweb}/json/", timeout=2) as r:
                    if json.load(r).get("aliveworkers", 0) >= 1:
                        break
            except OSError:
                pass
            except ValueError:
                # Spark 4.3's master UI can answer /json/ with its HTML front page (status 200) while it is
                # still starting (seen once in CI): not ready yet, ask again
                pass
            if time.time() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError("standalone Spark did not come up:\nmaster: " + (logs / "master.out").read_text()[-2000:]
                                   + "\nworker: " + (logs / "worker.out").read_text()[-2000:])
            time.sleep(0.25)
        yield url, f"http://127.0.0.1:{mweb}/json/"
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)


@pytest.mark.spark
def test_standalone_master_and_worker(standalone, tmp_path):
    url, status_url = standalone
    d = tmp_path / "inst"
    write_instances(generate("layered", 3, seed=4, executors=10, nodes=4), d)
    out = tmp_path / "out"
    s = run_batch(str(d), "network", ["storm.even"], out, reference=None, time_limit=10, master=url,
                  progress_interval=2.0)
    assert s.complete and s.ran == 3
    df = load_results(out).set_index("instance_id")
    direct = direct_results(d, "network", "storm.even", 10)
    for iid, res in direct.items():
        assert df.loc[iid, "status"] == res.status.value
        assert same_value(df.loc[iid, "objective"], res.objective)
    assert (df["isolation"] == "process").all()
    # the runs really went through the standalone master: it lists the finished application
    with urllib.request.urlopen(status_url, timeout=5) as r:
        apps = json.load(r)
    assert [a["name"] for a in apps.get("completedapps", []) + apps.get("activeapps", [])] == ["planner-batch"]
    assert (df["pid"] != os.getpid()).all()
