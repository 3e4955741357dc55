"""benchmarks/goals.py: the verdicts it gives against a baseline, and one real cell run end to end
in its own interpreter (the cell's plan checked by the evaluator)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("goals", ROOT / "benchmarks" / "goals.py")
goals = importlib.util.module_from_spec(spec)
sys.modules["goals"] = goals  # dataclasses look their module up
spec.loader.exec_module(goals)


def row(status, objective, problem="network", **kw):
    return {"cell": "c", "method": "exact.cpsat", "problem": problem, "status": status, "objective": objective, **kw}


@pytest.mark.parametrize("base, now, want", [
    (row("optimal", 14.2), row("optimal", 14.2), "same"),
    (row("optimal", 14.2), row("optimal", 14.2 + 1e-9), "same"),
    (row("optimal", 14.2), row("optimal", 14.3), "DISAGREES"),
    (row("optimal", 14.2), row("feasible", 14.2), "regressed"),
    (row("optimal", 14.2), row("error", None), "regressed"),
    (row("feasible", 18.5), row("feasible", 18.4), "improved"),
    (row("feasible", 18.5), row("feasible", 18.6), "regressed"),
    (row("feasible", 18.5), row("optimal", 18.5), "improved"),
    (row("feasible", 18.5), row("unknown", None), "regressed"),
    (row("feasible", 9532.0, "throughput"), row("feasible", 9540.0, "throughput"), "improved"),
    (row("feasible", 9532.0, "throughput"), row("feasible", 9520.0, "throughput"), "regressed"),
    (row("infeasible", None), row("infeasible", None), "same"),
    (None, row("optimal", 5), "new"),
    (row("optimal", 5), row("optimal", 5, evaluator_ok=False), "PLAN FAILS"),
])
def test_verdicts(base, now, want):
    assert goals.verdict(base, now) == want


def test_every_cell_has_a_unique_key_and_a_known_problem():
    cells = goals.cells()
    keys = [c.key for c in cells]
    assert len(keys) == len(set(keys))
    assert {c.problem for c in cells} <= set(goals.SENSE)
    # the goal sizes of the issue are all there
    assert {f"network-s0/100x{k}x10" for k in range(5, 13)} <= set(keys)
    assert {f"traffic-s0/100x{k}x10" for k in range(5, 13)} <= set(keys)
    assert {"throughput-even/hetero8x10", "throughput-weighted/hetero8x10"} <= set(keys)


def test_select_by_group_cell_and_prefix():
    cells = goals.cells()
    assert {c.group for c in goals.select(cells, "slots*", "")} == {
        "slots-micro", "slots-micro-rate", "slots-shipped", "slots-app-s0", "slots-app-s1"}
    one = goals.select(cells, "network-s1/100x9x10", "")
    assert [c.key for c in one] == ["network-s1/100x9x10"]
    assert all(c.group != "gap" for c in goals.select(cells, "", "gap"))
    with pytest.raises(SystemExit, match="no cell or group named nope"):
        goals.select(cells, "nope", "")


def test_repeated_only_and_skip_add_up():
    """``--only`` given twice selects both (argparse kept only the last one: session 36 asked
    for network-s1 and one network-s0 cell, and got the one cell)."""
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "goals.py"), "--only", "network-s1",
                        "--only", "network-s0/100x12x10", "--skip", "network-s1/100x9x10", "--list"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    listed = [ln.split()[0] for ln in p.stdout.splitlines() if ln.strip()]
    assert listed == ["network-s0/100x12x10", "network-s1/100x10x10", "network-s1/100x11x10", "network-s1/100x12x10"]


@pytest.mark.slow  # slow tier since session 38 (4 s; the default suite took 619 s in a clean clone on its machine)
def test_one_cell_end_to_end_against_a_baseline(tmp_path):
    """A real solve in the child interpreter; the table compares it with a baseline that says
    otherwise, so the verdict and --check's exit code must follow."""
    base = tmp_path / "base.json"
    fake = row("optimal", 4.0, "slots", cell="slots-micro/linear-50", seconds=1.0)
    base.write_text(json.dumps({"commit": "x", "date": "d", "rows": [fake]}))
    out = tmp_path / "rows.jsonl"
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "goals.py"), "--only", "slots-micro/linear-50",
                        "--baseline", str(base), "--out", str(out), "--check"], capture_output=True, text=True, timeout=300)
    rows = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["status"] == "optimal" and rows[0]["evaluator_ok"] is True
    assert rows[0]["objective"] == 5  # the micro Linear DAG at 50 tuples/s: 5 slots (docs/benchmarks.md)
    assert "DISAGREES" in p.stdout and p.returncode == 1, p.stdout + p.stderr
    # recorded, the same run agrees with itself
    p2 = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "goals.py"), "--only", "slots-micro/linear-50",
                         "--baseline", str(base), "--out", str(out), "--record"], capture_output=True, text=True, timeout=300)
    assert p2.returncode == 0, p2.stderr
    recorded = json.loads(base.read_text())["rows"]
    assert [r["objective"] for r in recorded] == [5]


def test_repo_runs_the_other_checkouts_code(tmp_path):
    """``--repo`` runs each cell under each checkout in turn, with that checkout's code: a copy
    whose slots module fails on import gives an error row naming that failure, this checkout
    the real optimum, and each row says whose code it ran."""
    import shutil

    other = tmp_path / "other"
    for pkg in ("planner", "formulations", "heuristics", "instances"):
        shutil.copytree(ROOT / pkg, other / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    with open(other / "formulations" / "slots.py", "a") as f:
        f.write("\nraise RuntimeError('the other checkout was imported')\n")
    out = tmp_path / "rows.jsonl"
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "goals.py"), "--only", "slots-micro/linear-50",
                        "--repo", str(other), "--repo", str(ROOT), "--out", str(out), "--baseline",
                        str(tmp_path / "none.json")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert [r["status"] for r in rows] == ["error", "optimal"], rows
    assert "the other checkout was imported" in rows[0]["message"]
    assert rows[1]["objective"] == 5 and rows[1]["evaluator_ok"] is True
    assert rows[0]["repo"] == "unknown" and rows[1]["repo"] == goals._commit(ROOT)
    assert "the other checkout was imported" in p.stdout  # the message is printed beside the table


def test_shared_dir_honours_planner_shared(tmp_path, monkeypatch):
    """The GAP cells find ../shared where the tests do: $PLANNER_SHARED first."""
    (tmp_path / "data" / "gap").mkdir(parents=True)
    monkeypatch.setenv("PLANNER_SHARED", str(tmp_path))
    assert goals.shared_dir() == tmp_path
    monkeypatch.setenv("PLANNER_SHARED", str(tmp_path / "absent"))
    assert goals.shared_dir() != tmp_path / "absent"  # a folder without data/gap is passed over
