"""``planner solve -`` end to end, in a subprocess: the protocol for schedulers that call the
planner as a child process (instance or request on stdin, Result on stdout, exit code)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planner.api import evaluate as local_evaluate

REPO = Path(__file__).resolve().parent.parent
TINY = json.loads((REPO / "instances" / "tiny-linear.json").read_text())


def run(stdin: bytes | str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([sys.executable, "-m", "planner.cli", "solve", "-", *args], input=data, capture_output=True,
                          env=env, cwd=REPO, timeout=120)


def test_instance_on_stdin_with_flags():
    p = run(json.dumps(TINY), "--problem", "network", "--method", "exact.bruteforce", "--time-limit", "10")
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["status"] == "optimal" and res["method"] == "exact.bruteforce"
    assert res["objective"] == pytest.approx(local_evaluate(TINY, res["plan"], "network")["objective"])
    assert b"optimal" in p.stderr  # the one-line summary goes to stderr, stdout stays pure JSON


def test_full_request_on_stdin():
    req = {"instance": TINY, "problem": "network", "method": "storm.even", "time_limit": 5, "seed": 3, "options": {}}
    p = run(json.dumps(req))
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert (res["problem"], res["method"], res["status"]) == ("network", "storm.even", "feasible")
    assert len(res["plan"]["placements"]) == 5


def test_flags_override_the_request():
    req = {"instance": TINY, "problem": "network", "method": "no.such.method"}
    p = run(json.dumps(req), "--method", "storm.even")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["method"] == "storm.even"


@pytest.mark.parametrize("stdin, where", [
    ("{bad", "not valid JSON"),
    ("", "not valid JSON"),
    ("[" * 100_000, "nested too deeply"),
    (b"\xff\xfe\x00", "not valid JSON"),
])
def test_malformed_json_exits_2(stdin, where):
    p = run(stdin, "--problem", "network", "--method", "storm.even")
    assert p.returncode == 2
    assert p.stdout == b""
    assert b"planner: bad input" in p.stderr and where.encode() in p.stderr
    assert b"Traceback" not in p.stderr


def test_unknown_method_exits_2():
    p = run(json.dumps({"instance": TINY, "problem": "network", "method": "os.system"}))
    assert p.returncode == 2
    assert b"unknown method 'os.system'" in p.stderr


@pytest.mark.parametrize("field, value, message", [
    ("options", "x", "options: must be an object"),
    ("time_limit", "x", "time_limit: must be a number"),
    ("time_limit", -1, "time_limit: must be a finite number"),
    ("seed", "x", "seed: must be an integer"),
    ("metod", "storm.even", "metod: unknown field"),
    ("instance", [1], "instance: must be an object"),
])
def test_bad_request_fields_exit_2(field, value, message):
    req = {"instance": TINY, "problem": "network", "method": "storm.even", field: value}
    p = run(json.dumps(req))
    assert p.returncode == 2, p.stderr
    assert message.encode() in p.stderr and b"Traceback" not in p.stderr


def test_nan_time_limit_exits_2():
    text = json.dumps({"instance": TINY, "problem": "network", "method": "storm.even"})[:-1] + ', "time_limit": NaN}'
    p = run(text)
    assert p.returncode == 2 and b"time_limit" in p.stderr


def test_invalid_instance_in_request_names_its_path():
    inst = json.loads(json.dumps(TINY))
    inst["topologies"][0]["components"][0]["parallelism"] = 0
    p = run(json.dumps({"instance": inst, "problem": "network", "method": "storm.even"}))
    assert p.returncode == 2
    assert b"instance.topologies[0].components[0].parallelism" in p.stderr


def test_no_feasible_plan_exits_1():
    inst = json.loads(json.dumps(TINY))
    for r in inst["cluster"]["racks"]:
        for n in r["nodes"]:
            n["cpu"] = 10  # 50-point executors fit nowhere
    p = run(json.dumps({"instance": inst, "problem": "network", "method": "exact.bruteforce"}))
    assert p.returncode == 1, p.stderr
    assert json.loads(p.stdout)["status"] == "infeasible"
