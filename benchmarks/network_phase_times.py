"""Phase timings of one exact.cpsat network solve of a seeded layered instance (branch net-ls).

Usage: PYTHONPATH=. python benchmarks/network_phase_times.py 100x10x10 60 [generator seed, default 0] [--table-stop=S]
Prints when the node tables, the seeds (storm.ras, then the local search), column generation
and the two-rack search started and ended (seconds from the solve's start), the result, its
details, and the pricing time per (family kind, pricing call's time cap, proven).
``--table-stop=S`` sets ``_nodetable.TABLE_STOP`` (the share of the time left past which a
node table's build is abandoned) for this run, to compare values on one machine.
"""
import argparse
import functools
import time
from collections import defaultdict

import planner
from formulations import _nodetable as NT
from formulations import _patterns as P
from formulations._gen import layered
from planner.model import parse_instance

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("size", help="executors x components x nodes, e.g. 100x12x10")
ap.add_argument("limit", type=float, help="the solve's time limit, seconds")
ap.add_argument("gen_seed", type=int, nargs="?", default=0, help="the layered generator's seed")
ap.add_argument("--table-stop", type=float, default=None, help="_nodetable.TABLE_STOP for this run (a share, e.g. 0.8)")
args = ap.parse_args()
if args.table_stop is not None:
    NT.TABLE_STOP = args.table_stop
size = tuple(map(int, args.size.split("x")))
inst = parse_instance(layered(*size, args.gen_seed))
T0 = time.monotonic()


def wrap(mod, name):
    f = getattr(mod, name)

    @functools.wraps(f)
    def g(*a, **k):
        t = time.monotonic()
        r = f(*a, **k)
        print(f"  {name}: {t - T0:.1f} -> {time.monotonic() - T0:.1f} s", flush=True)
        return r
    setattr(mod, name, g)


for mod, name in [(NT, "node_table"), (P, "build_network"), (P, "_two_rack_search"), (P, "seed_network")]:
    wrap(mod, name)
gen = P.PatternModel.generate


def generate(self, *a, **k):
    t = time.monotonic()
    r = gen(self, *a, **k)
    if len(self.families) > 2 or time.monotonic() - t > 1:  # the master's, not a rack subproblem's
        print(f"  generate ({len(self.families)} families): {t - T0:.1f} -> {time.monotonic() - T0:.1f} s", flush=True)
    return r


P.PatternModel.generate = generate
acc, cnt = defaultdict(float), defaultdict(int)
price = P.PatternModel.price


def priced(self, fi, duals, want=8, quick=None, phase1=False):
    t = time.monotonic()
    r = price(self, fi, duals, want, quick, phase1)
    key = (self.families[fi].name[:4], quick, r[2])
    acc[key] += time.monotonic() - t
    cnt[key] += 1
    return r


P.PatternModel.price = priced
T0 = time.monotonic()
r = planner.solve(inst, "network", "exact.cpsat", time_limit=args.limit)
d = {**r.details, **r.details.get("configuration", {})}
print(args.size, f"TABLE_STOP={NT.TABLE_STOP}", r.status.value, r.objective, r.bound, round(time.monotonic() - T0, 2), r.metrics["feasible"])
print({k: v for k, v in d.items() if k != "configuration"})
print("pricing (kind, cap, proven): (calls, s)", {k: (cnt[k], round(v, 2)) for k, v in acc.items()})
