"""The `planner` command end to end, in a subprocess: outputs and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import tiny

REPO = __import__("pathlib").Path(__file__).resolve().parent.parent


def run(*args, stdin: str | None = None):
    return subprocess.run([sys.executable, "-m", "planner.cli", *args], input=stdin, capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def test_solve_shipped_instance_both_methods(tmp_path):
    for method in ("storm.even", "exact.bruteforce"):
        p = run("solve", "tiny-linear", "--problem", "network", "--method", method)
        assert p.returncode == 0, p.stderr
        res = json.loads(p.stdout)
        assert res["status"] in ("feasible", "optimal") and res["metrics"]["feasible"]
        assert f"{method} on network" in p.stderr
    out = tmp_path / "r.json"
    p = run("solve", "instances/tiny-linear.json", "-p", "network", "-m", "exact.bruteforce", "--out", str(out))
    assert p.returncode == 0 and p.stdout == ""
    e = run("evaluate", "tiny-linear", str(out))
    assert e.returncode == 0 and json.loads(e.stdout)["objective"] == json.loads(out.read_text())["objective"]


def test_exit_codes(tmp_path):
    bad = tmp_path / "bad.json"
    d = tiny()
    d["topologies"][0]["streams"].append({"source": "spout", "target": "ghost"})
    bad.write_text(json.dumps(d))
    p = run("solve", str(bad), "-p", "network", "-m", "storm.even")
    assert p.returncode == 2 and "topologies[0].streams[2].target" in p.stderr and "Traceback" not in p.stderr
    p = run("solve", "tiny-linear", "-p", "network", "-m", "no.such.method")
    assert p.returncode == 2 and "unknown method" in p.stderr
    p = run("solve", "tiny-linear", "-p", "warp", "-m", "storm.even")
    assert p.returncode == 2 and "unknown problem" in p.stderr
    p = run("solve", "tiny-linear", "-p", "network", "-m", "storm.even", "-o", "colour=1")
    assert p.returncode == 2 and "unknown option" in p.stderr
    p = run("solve", "tiny-linear", "-p", "network", "-m", "exact.cpsat", "-o", "symmetry=maybe")
    assert p.returncode == 2 and "options.symmetry" in p.stderr and "true or false" in p.stderr
    assert "Traceback" not in p.stderr
    # no feasible plan: every node too small
    d = tiny()
    for r in d["cluster"]["racks"]:
        for n in r["nodes"]:
            n["cpu"] = 10
    tight = tmp_path / "tight.json"
    tight.write_text(json.dumps(d))
    p = run("solve", str(tight), "-p", "network", "-m", "exact.bruteforce")
    assert p.returncode == 1 and json.loads(p.stdout)["status"] == "infeasible"
    p = run("solve", str(tight), "-p", "network", "-m", "storm.even")
    assert p.returncode == 1 and "node_cpu" in json.loads(p.stdout)["message"]


def test_stdin_instance_and_request():
    p = run("solve", "-", "-p", "network", "-m", "storm.even", stdin=json.dumps(tiny()))
    assert p.returncode == 0 and json.loads(p.stdout)["method"] == "storm.even"
    req = {"instance": tiny(), "problem": "traffic", "method": "exact.bruteforce", "time_limit": 30}
    p = run("solve", "-", stdin=json.dumps(req))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["status"] == "optimal"
    p = run("solve", "-", stdin="{oops")
    assert p.returncode == 2 and "not valid JSON" in p.stderr


def test_listings_and_help():
    p = run("methods")
    assert p.returncode == 0 and "storm.even" in p.stdout and "exact.bruteforce" in p.stdout
    ms = json.loads(run("methods", "--json").stdout)
    assert {"name", "problems", "source", "kind"} <= set(ms[0])
    p = run("instances")
    assert p.returncode == 0 and "tiny-linear" in p.stdout
    p = run("--help")
    assert p.returncode == 0 and "exit codes" in p.stdout
    p = run("problems")
    assert "network" in p.stdout and "throughput" in p.stdout


def test_out_into_a_missing_folder_makes_it_and_an_unwritable_path_is_named(tmp_path):
    out = tmp_path / "new" / "deeper" / "r.json"
    p = run("solve", "tiny-linear", "-p", "network", "-m", "storm.even", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["method"] == "storm.even"
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    p = run("solve", "tiny-linear", "-p", "network", "-m", "storm.even", "--out", str(blocker / "r.json"))
    assert p.returncode == 2 and str(blocker) in p.stderr and "Traceback" not in p.stderr
