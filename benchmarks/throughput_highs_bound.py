"""exact.milp-highs on even-routing throughput: its direct MILP through highspy (the default since
session 53) against the same model through SciPy's ``milp`` (the default before), in one process,
alternating per cell, each solve checked by the evaluator (``ok``). SciPy's ``milp`` returns no dual
bound when the time runs out before HiGHS finds a plan; highspy does. Prints one JSON line per
solve (``direct``: the direct MILP's status, bound on T' = R_ub / R and seconds).

    PYTHONPATH=$PWD python benchmarks/throughput_highs_bound.py hetero5x8,tiny8x6,hetero5x5 [--limit 60]

Cells are ``bench_throughput_scaling.py``'s FAMILYCxM shapes (hetero or tiny, C components on M
machines). docs/benchmarks.md, "throughput: every goal cell re-measured ... (session 53)".
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from bench_throughput_scaling import instance  # noqa: E402  (imports formulations from ROOT first)

import planner  # noqa: E402
from formulations import throughput as T  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cells", help="comma-separated FAMILYCxM, e.g. hetero5x8,tiny8x6")
    ap.add_argument("--limit", type=float, default=60.0)
    a = ap.parse_args()
    cells = [c for c in a.cells.split(",") if c]
    bad = [c for c in cells if not re.fullmatch(r"(hetero|tiny)\d+x\d+", c)]
    if bad:
        ap.error(f"not FAMILYCxM (hetero or tiny, e.g. hetero5x8): {', '.join(bad)}")
    run = T.core.run_pulp
    direct = T._even_milp_direct
    mode = {"path": "highspy", "last": None}

    def patched(d, r_lo, r_ub, hint, tl, solver, highs_start=False):
        if mode["path"] == "scipy":  # run_pulp's HiGHS path without highspy (and no start) is SciPy's milp
            T.core.run_pulp = lambda p, s, t, warm=False, deadline=None, highspy=False: run(p, s, t, deadline=deadline)
        try:
            out, n = direct(d, r_lo, r_ub, hint, tl, solver, highs_start)
        finally:
            T.core.run_pulp = run
        mode["last"] = [out.status, out.bound, round(out.seconds, 1)]
        return out, n

    T._even_milp_direct = patched
    for cell in cells:
        fam, c, m = re.fullmatch(r"(hetero|tiny)(\d+)x(\d+)", cell).groups()
        inst = instance(fam, int(c), int(m))
        for path in ("scipy", "highspy"):
            mode.update(path=path, last=None)
            r = planner.solve(inst, "throughput", "exact.milp-highs", time_limit=a.limit)
            print(json.dumps({"cell": cell, "path": path, "status": r.status.value, "plan": round(r.objective, 2),
                              "bound": round(r.bound, 2), "seconds": round(r.seconds, 1), "ok": r.metrics.get("feasible"),
                              "direct": mode["last"], "load": round(os.getloadavg()[0], 2)}), flush=True)


if __name__ == "__main__":
    main()
