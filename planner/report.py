"""Summaries and pictures of a batch results folder: ``planner report RESULTS --out DIR``.

Writes ``summary.csv`` and ``summary.md`` (one row per problem and method), three kinds of
plot per problem (CDF of the objective per method, as the RAS document draws it; the
distribution of the gap to the proven optimum per method; solve time against instance size)
and ``index.html`` gathering them. Matplotlib runs with the Agg backend (no display needed).
"""

from __future__ import annotations

import argparse
import html
import math
import sys
from pathlib import Path
from typing import Any

from .model import InstanceError

SUMMARY_COLUMNS = [
    "problem", "method", "instances", "solved", "proven_optimal", "with_proven_reference", "gap_mean", "gap_median",
    "gap_p95", "gap_max", "share_optimal", "seconds_median", "errors",
]


def summarize(df) -> Any:
    """One row per (problem, method): ``instances`` runs; ``solved`` with a plan the evaluator
    accepts (status optimal or feasible); ``proven_optimal`` with status optimal;
    ``with_proven_reference`` instances whose reference optimum is proven; gap statistics over
    the solved runs on those instances; ``share_optimal`` = solved runs at the optimum (gap
    <= 1e-6) / instances with a proven reference; ``seconds_median`` of the solver's seconds;
    ``errors`` = runs with status error or unknown."""
    import pandas as pd

    rows = []
    for (problem, method), g in df.groupby(["problem", "method"], sort=True):
        proven = g[g["reference_status"] == "proven"]
        gaps = proven["gap_to_optimal"].dropna()
        n_ref = len(proven)
        rows.append({
            "problem": problem, "method": method, "instances": int(g["instance_key"].nunique()),
            "solved": int(g["status"].isin(["optimal", "feasible"]).sum()),
            "proven_optimal": int((g["status"] == "optimal").sum()),
            "with_proven_reference": n_ref,
            "gap_mean": float(gaps.mean()) if len(gaps) else math.nan,
            "gap_median": float(gaps.median()) if len(gaps) else math.nan,
            "gap_p95": float(gaps.quantile(0.95)) if len(gaps) else math.nan,
            "gap_max": float(gaps.max()) if len(gaps) else math.nan,
            "share_optimal": float(proven["at_optimum"].sum() / n_ref) if n_ref else math.nan,
            "seconds_median": float(g["seconds"].median()) if g["seconds"].notna().any() else math.nan,
            "errors": int(g["status"].isin(["error", "unknown"]).sum()),
        })
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def _md_table(df) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return "-" if math.isnan(v) else f"{v:.4g}"
        return str(v)

    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    for r in df.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v) for v in r) + " |")
    return "\n".join(lines)


def _plots(df, out: Path) -> list[tuple[str, str, str]]:
    """Write the plots; returns (problem, title, file name) for each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    made = []

    def save(fig, ax, problem: str, kind: str, title: str, ylabel: str, caption: str) -> None:
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        name = f"{problem}-{kind}.png"
        fig.tight_layout()
        fig.savefig(out / name, dpi=100)
        plt.close(fig)
        made.append((problem, caption, name))

    for problem, g in df.groupby("problem", sort=True):
        methods = sorted(g["method"].unique())
        # CDF of the objective per method (solved runs)
        fig, ax = plt.subplots(figsize=(6, 4))
        for m in methods:
            v = np.sort(g[(g["method"] == m) & g["status"].isin(["optimal", "feasible"])]["objective"].dropna().to_numpy())
            if len(v):
                ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=f"{m} ({len(v)})")
        ax.set_xlabel(f"objective ({problem})")
        ax.legend(fontsize=8)
        save(fig, ax, problem, "objective-cdf", f"CDF of the objective, {problem}", "share of instances",
             "CDF of the objective per method")
        # gap distribution per method
        fig, ax = plt.subplots(figsize=(6, 4))
        data = [g[(g["method"] == m)]["gap_to_optimal"].dropna().to_numpy() for m in methods]
        if any(len(d) for d in data):
            ax.boxplot([d if len(d) else [np.nan] for d in data], showfliers=True)
            ax.set_xticks(range(1, len(methods) + 1), [f"{m}\n(n={len(d)})" for m, d in zip(methods, data)], fontsize=8)
        else:
            ax.text(0.5, 0.5, "no instance with a proven reference optimum", ha="center", va="center", transform=ax.transAxes)
        save(fig, ax, problem, "gap", f"Gap to optimal, {problem}", "gap to the proven optimum (relative)",
             "Gap to the proven optimum per method")
        # time against instance size
        fig, ax = plt.subplots(figsize=(6, 4))
        for m in methods:
            h = g[(g["method"] == m) & g["seconds"].notna()]
            ax.scatter(h["executors"], h["seconds"].clip(lower=1e-6), s=10, alpha=0.6, label=m)
        ax.set_yscale("log")
        ax.set_xlabel("executors")
        ax.legend(fontsize=8)
        save(fig, ax, problem, "time-vs-size", f"Time against instance size, {problem}", "solver seconds",
             "Solver time against executors")
    return made


def make_report(results: str | Path, out: str | Path) -> dict[str, Any]:
    """Build the report folder from a batch results folder; returns the summary and paths."""
    from .batch import load_results

    results = Path(results)
    if not (results / "runs").is_dir():
        raise InstanceError("RESULTS", f"{results} is not a batch results folder (no runs/ inside)")
    df = load_results(results)
    if df.empty:
        raise InstanceError("RESULTS", f"{results} holds no runs yet")
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InstanceError("--out", f"cannot create {out}: {e.strerror or e}") from None
    summary = summarize(df)
    summary.to_csv(out / "summary.csv", index=False)
    no_ref = df[df["reference_status"] != "proven"].groupby(["problem", "reference_status"])["instance_key"].nunique()
    md = ["# Batch report", "", f"Results: `{results}`; {len(df)} runs, {df['instance_key'].nunique()} instances.", "",
          _md_table(summary), ""]
    if len(no_ref):
        md += ["Instances without a proven reference optimum (no gap for them):", ""]
        md += [f"- {p}: {st}: {n}" for (p, st), n in no_ref.items()]
        md.append("")
    (out / "summary.md").write_text("\n".join(md))
    plots = _plots(df, out)
    page = ["<!doctype html><html><head><meta charset='utf-8'><title>planner batch report</title>",
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}img{max-width:600px;margin:6px}</style></head><body>",
            f"<h1>Batch report</h1><p>Results folder <code>{html.escape(str(results))}</code>: {len(df)} runs, "
            f"{df['instance_key'].nunique()} instances. Tables: <a href='summary.csv'>CSV</a>, "
            "<a href='summary.md'>Markdown</a>.</p>",
            summary.to_html(index=False, na_rep="-", float_format=lambda v: f"{v:.4g}")]
    if len(no_ref):
        page.append("<p>Instances without a proven reference optimum: " + "; ".join(
            f"{html.escape(p)}: {html.escape(st)}: {n}" for (p, st), n in no_ref.items()) + "</p>")
    for problem in sorted({p for p, _, _ in plots}):
        page.append(f"<h2>{html.escape(problem)}</h2>")
        for p, title, name in plots:
            if p == problem:
                page.append(f"<figure style='display:inline-block'><img src='{name}' alt='{html.escape(title)}'>"
                            f"<figcaption>{html.escape(title)}</figcaption></figure>")
    page.append("</body></html>")
    (out / "index.html").write_text("\n".join(page))
    return {"summary": summary, "plots": [out / n for _, _, n in plots], "index": out / "index.html"}


def cmd_report(args: argparse.Namespace) -> int:
    r = make_report(args.results, args.out)
    print(_md_table(r["summary"]))
    print(f"planner report: wrote {r['index']} and {len(r['plots'])} plots", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    """The ``planner report`` sub-command."""
    p = sub.add_parser("report", help="tables and plots from a batch results folder",
                       description="Summarise a `planner batch` results folder: summary.csv/.md, plots, index.html.")
    p.add_argument("results", help="the folder given to `planner batch --out`")
    p.add_argument("--out", required=True, help="folder for the report")
    p.set_defaults(func=cmd_report)
