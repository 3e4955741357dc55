"""The rack subproblems' row restriction by zero pattern (``TablePricer`` with a bound y <= z;
docs/formulations.md, "Pricing by table"), timed on the subproblems a real solve asks for.

Usage: PYTHONPATH=. python benchmarks/network_zero_pattern.py [SIZE, default 100x12x10] [N, default 1000] [LIMIT, default 60]

Runs one exact.cpsat network solve of the seeded layered instance SIZE with a recorder on
``TablePricer`` (the bounds y <= ybound of every rack subproblem priced from a node table, and
the table), then builds the first N recorded subproblems' pricers again, twice each way (alternated): with the
zero-pattern index (as the solve does) and with it switched off (the code prefix scan only).
Prints both times, how many subproblems each path served, the rows tested, and checks that both
give the same rows in the same order.
"""
import sys
import time

import numpy as np

import planner
from formulations import _nodetable as NT
from formulations._gen import layered
from planner.model import parse_instance

size = sys.argv[1] if len(sys.argv) > 1 else "100x12x10"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
limit = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
seen: list = []
init = NT.TablePricer.__init__


def recording(self, table, fi, conv, rowkey, ybound=None):
    if ybound is not None and len(seen) < N:
        seen.append((table, fi, conv, rowkey, dict(ybound)))
    init(self, table, fi, conv, rowkey, ybound)


NT.TablePricer.__init__ = recording
t = time.perf_counter()
r = planner.solve(parse_instance(layered(*map(int, size.split("x")), 0)), "network", "exact.cpsat", time_limit=limit)
print(f"{size}: {r.status.value} {r.objective} in {time.perf_counter() - t:.1f} s; {len(seen)} subproblems recorded")
NT.TablePricer.__init__ = init
if not seen:
    sys.exit("no rack subproblem was priced from a node table")


def build(zero: bool):
    out, t0 = [], time.perf_counter()
    for table, fi, conv, rowkey, yb in seen:
        if not zero:
            table.zero_rows = lambda zero, end: None  # instance attribute: the prefix scan only
        p = NT.TablePricer(table, fi, conv, rowkey, yb)
        out.append((p.idx, p.scan))  # the pricer itself (its values, a float per row) is dropped
        if not zero:
            del table.zero_rows
    return out, time.perf_counter() - t0


for table, *_ in seen:
    table.zero_index()  # built once, as in the solve (not timed)
times: dict = {True: [], False: []}
for zero in (True, False, True, False):  # alternated: the first pass pays for fresh memory
    got, sec = build(zero)
    times[zero].append(sec)
    if zero:
        with_zero = got
    else:
        prefix = got
    del got
s_zero, s_prefix = " and ".join(f"{x:.2f}" for x in times[True]), " and ".join(f"{x:.2f}" for x in times[False])
same = all(np.array_equal(a[0], b[0]) for a, b in zip(with_zero, prefix))
paths = {k: sum(p[1] == k for p in with_zero) for k in ("zero pattern", "prefix")}
print(f"zero-pattern index on : {s_zero} s for {len(seen)} subproblems ({paths['zero pattern']} by zero pattern, "
      f"{paths['prefix']} by prefix)")
print(f"prefix scan only      : {s_prefix} s")
print(f"rows kept per subproblem: mean {np.mean([len(p[0]) for p in prefix]):,.0f}; same rows, same order: {same}")

