"""Acceptance test of ``planner reproduce``: the quick mode on a small subset (the RAS study
with a handful of instances, and the Shukla study) through local Spark; checks the shape of
the outputs and that the page's figures are the ones in the results Parquet files."""

from __future__ import annotations

import dataclasses
import math
import re

import pandas as pd
import pytest

from helpers import local_spark
from planner import reproduce as rp

pytestmark = pytest.mark.filterwarnings("ignore")


def _small_ras(quick: bool):
    """The quick RAS plan with 3 instances instead of 20 (the generator is the same)."""
    (b,) = rp.plan_ras(quick)
    spec = b.instances.replace("count=20", "count=3")
    assert spec != b.instances
    return [dataclasses.replace(b, instances=spec, generator=spec)]


def _table(page: str, heading: str, first_col: str) -> list[dict[str, str]]:
    """The first Markdown table after ``heading`` whose first column is ``first_col``."""
    sec = page[page.index(heading):]
    lines = sec.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"| {first_col} |"))
    cols = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        rows.append(dict(zip(cols, [c.strip() for c in ln.strip("|").split("|")])))
    return rows


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("repro") / "results"
    mp = pytest.MonkeyPatch()
    mp.setitem(rp.PLANS, "ras", _small_ras)
    try:
        res = rp.reproduce(["ras", "shukla"], quick=True, out=out, master="local[2]", sc=local_spark())
    finally:
        mp.undo()
    return out, res["page"], res["page"].read_text()


def test_outputs_exist(made):
    out, page_path, page = made
    assert page_path == out.parent / "results.md"
    for f in ["ras/network-metric.csv", "ras/network-metric.md", "ras/section.md", "ras/study.json",
              "ras/random/results.parquet", "shukla/slots.csv", "shukla/fixed-20-slots.csv",
              "shukla/targets/results.parquet", "shukla/fixed-20/results.parquet"]:
        assert (out / f).is_file(), f
    for png in ["ras/network-metric-cdf.png", "ras/runtime.png", "shukla/slots.png"]:
        data = (out / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, png
        assert f"](results/{png})" in page  # linked from the page, relative to it
    # sections with the published claim, ours, and how it was made; unrun studies absent
    assert "## 1. RAS document" in page and "## 3. Shukla and Simmhan" in page
    assert "## 2. Nasiri" not in page
    assert page.count("Published (") == 2 and page.count("**How this was made.**") == 2
    assert "gen:ras-random:count=3,seed=1" in page


def test_ras_numbers_come_from_the_parquet(made):
    out, _, page = made
    df = pd.read_parquet(out / "ras" / "random" / "results.parquet")
    assert df["instance_id"].nunique() == 3
    rows = {r["method"].strip("`"): r for r in _table(page, "## 1. RAS", "method")}
    assert {"exact.bruteforce", "exact.cpsat", "storm.ras", "rstorm", "storm.ras-rr-doc", "storm.ras-old",
            "storm.ras-roundrobin"} <= set(rows)
    for m, r in rows.items():
        g = df[df["method"] == m]
        ok = g[g["status"].isin(["optimal", "feasible"])]
        assert r["ours (mean network metric)"] == rp.fmt(ok["objective"].mean()), m
        assert r["solved"] == f"{len(ok)}/3", m
        assert r["published"] == rp.fmt(rp._published_ras(m)), m
    assert rows["storm.ras"]["published"] == "0.01004" and rows["rstorm"]["published"] == "0.0719"
    # the optimum is proven by both exact methods, and they agree
    bf = df[(df["method"] == "exact.bruteforce") & (df["status"] == "optimal")].set_index("instance_id")["objective"]
    cp = df[(df["method"] == "exact.cpsat") & (df["status"] == "optimal")].set_index("instance_id")["objective"]
    assert len(bf) == 3 and len(cp) == 3
    assert all(math.isclose(bf[i], cp[i], abs_tol=1e-9) for i in bf.index)
    # no heuristic beats the proven optimum
    opt = bf.to_dict()
    h = df[df["status"].isin(["optimal", "feasible"])]
    assert all(r.objective >= opt[r.instance_id] - 1e-9 for r in h.itertuples())


def test_shukla_numbers_come_from_the_parquet(made):
    out, _, page = made
    df = pd.read_parquet(out / "shukla" / "targets" / "results.parquet")
    rows = _table(page, "## 3. Shukla", "DAG")
    assert len(rows) == 9
    for r in rows:
        inst = f"shukla-{r['DAG']}-r{r['rate']}"
        for pair in rp.SHUKLA_PAIRS:
            row = df[(df["instance_id"] == inst) & (df["method"] == pair)].iloc[0]
            cell = r[pair.removeprefix("shukla.")]
            if row["slots_used"] and row["slots_used"] == row["slots_used"]:
                ok = "ok" if row["status"] in ("optimal", "feasible") else "x"
                assert cell == f"{rp.fmt(row['slots_used'])} {ok}", (inst, pair)
            else:
                assert cell == "no plan"
    lin = {int(r["rate"]): r for r in rows if r["DAG"] == "linear"}
    assert lin[50]["published LSA / MBA"] == "7 / 4" and lin[200]["published LSA / MBA"] == "28 / 15"
    # the 20-slot table: planned = the largest grid rate with a plan, predicted = its supported_rate
    f = pd.read_parquet(out / "shukla" / "fixed-20" / "results.parquet")
    frows = _table(page, "Fixed 20-slot pool", "DAG")
    assert len(frows) == 15
    for r in frows:
        if r["planned rate"] == "no plan":
            continue
        inst = f"shukla-{r['DAG']}-r{r['planned rate']}-20slots"
        row = f[(f["instance_id"] == inst) & (f["method"] == "shukla." + r["pair"])].iloc[0]
        assert r["predicted"] == rp.fmt(row["supported_rate"])
        assert 0 < row["slots_used"] <= 20
        higher = f[(f["method"] == "shukla." + r["pair"]) & f["instance_id"].str.startswith(f"shukla-{r['DAG']}-r")
                   & (f["slots_used"].fillna(0) > 0)]
        rates = higher["instance_id"].map(lambda s: float(re.search(r"-r([0-9.]+)-", s).group(1)))
        assert rates.max() == float(r["planned rate"])


def test_unknown_study_is_bad_input(tmp_path):
    from planner.model import InstanceError

    with pytest.raises(InstanceError):
        rp.reproduce(["nope"], quick=True, out=tmp_path / "r")


def test_fmt():
    assert rp.fmt(None) == "-" and rp.fmt(float("nan")) == "-" and rp.fmt(0.0) == "0"
    assert rp.fmt(0.0068412) == "0.006841" and rp.fmt(12345.6) == "12346" and rp.fmt(3) == "3"
