"""Rack-subproblem pricing of one network solve: the float copy of the rows against the table's
part codes (session 15's ``NodeTable.dot``; since session 21 ``NodeTable.sub_rc``, compiled).

Usage: PYTHONPATH=. python benchmarks/network_subproblem_pricing.py 100x12x10 [calls, default 200] [repeats, default 3]

Runs exact.cpsat on the seeded layered instance (no time limit), records the rows and duals of
the first ``calls`` reduced-cost computations of rack subproblems (``TablePricer.rc`` with a
bound), then prices them again both ways, alternately, and prints the seconds of each pass and
the largest difference between the two.
"""
import sys
import time

import numpy as np

import planner
from formulations import _nodetable as NT
from formulations._gen import layered
from planner.model import parse_instance

size = tuple(map(int, sys.argv[1].split("x")))
want = int(sys.argv[2]) if len(sys.argv) > 2 else 200
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
recs: list = []
tables: list = []
rc = NT.TablePricer.rc


def recording(self, duals, phase1=False):
    if not self.whole and len(recs) < want:
        recs.append((self.idx.copy(), np.array([duals.get(self.rowkey(k), 0.0) for k in range(self.t.K)])))
        if not tables:
            tables.append(self.t)
    return rc(self, duals, phase1)


NT.TablePricer.rc = recording
r = planner.solve(parse_instance(layered(*size, 0)), "network", "exact.cpsat")
print(f"{sys.argv[1]}: {r.status.value} {r.objective} in {r.seconds:.1f} s; {len(recs)} subproblem pricings recorded, "
      f"{sum(len(i) for i, _ in recs)} rows, parts {[g for g, _, _ in tables[0].part_codes()]}")
t = tables[0]


def copy(idx, pi):
    return t.value[idx] - t.Y[idx].astype(np.float64) @ pi


def parts(idx, pi):
    return t.sub_rc(pi, idx, t.value[idx], 0.0, False)


for _ in range(repeats):
    for name, f in (("float copy", copy), ("part codes", parts)):
        t0 = time.perf_counter()
        for idx, pi in recs:
            f(idx, pi)
        print(f"  {name}: {time.perf_counter() - t0:.3f} s", flush=True)
print("largest difference:", max(float(np.abs(copy(i, p) - parts(i, p)).max()) for i, p in recs))
