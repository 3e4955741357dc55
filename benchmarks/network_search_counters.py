"""One exact.cpsat network solve of a seeded layered instance with the rack search's counters.

Usage: PYTHONPATH=. python benchmarks/network_search_counters.py 60x8x6 table [limit, default 60]
       PYTHONPATH=. python benchmarks/network_search_counters.py 100x6x10 splits   (TWO_RACK_TABLE_LIMIT = 0:
       the two-rack search generates its splits with _splits_above even where a rack table fits)
Prints size, mode, status, objective, bound, seconds, whether the plan passed the evaluator, and
the two-rack search's details.
"""
import sys, time
import planner
from formulations import _patterns as P
from formulations._gen import layered
from planner.model import parse_instance
size = tuple(map(int, sys.argv[1].split("x")))
inst = parse_instance(layered(*size, 0))
if sys.argv[2] == "splits":
    P.TWO_RACK_TABLE_LIMIT = 0
t = time.perf_counter()
r = planner.solve(inst, "network", "exact.cpsat", time_limit=float(sys.argv[3]) if len(sys.argv) > 3 else 60)
d = {**r.details, **r.details.get("configuration", {})}  # nested when the compact model ran after
print(sys.argv[1], sys.argv[2], r.status.value, r.objective, r.bound, round(time.perf_counter() - t, 2), r.metrics["feasible"],
      {k: d.get(k) for k in ("two_rack_setup", "two_rack_splits", "two_rack_setup_s", "rack_lp_bounds", "rack_convolutions", "rack_convolution_s", "rack_tuples", "enumeration", "two_rack_splits_gave_up")})
