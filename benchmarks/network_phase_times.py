"""Phase timings of one exact.cpsat network solve of a seeded layered instance (branch net-ls).

Usage: PYTHONPATH=. python benchmarks/network_phase_times.py 100x10x10 60 [generator seed, default 0] [--table-stop=S]
Prints when the node tables, the seeds (storm.ras, then the local search), column generation
and the two-rack search started and ended (seconds from the solve's start), the result, its
details, and the pricing time per (family kind, pricing call's time cap, proven).
``--table-stop=S`` sets ``_nodetable.TABLE_STOP`` (the share of the time left past which a
node table's build is abandoned) for this run, to compare values on one machine.
"""
import functools
import sys
import time
from collections import defaultdict

import planner
from formulations import _nodetable as NT
from formulations import _patterns as P
from formulations._gen import layered
from planner.model import parse_instance

opts = [a for a in sys.argv[1:] if a.startswith("--")]
sys.argv[1:] = [a for a in sys.argv[1:] if not a.startswith("--")]
for o in opts:
    key, _, val = o.partition("=")
    if key != "--table-stop" or not val:
        sys.exit(f"unknown option {o!r}: the only option is --table-stop=S (a share, e.g. 0.8)")
    NT.TABLE_STOP = float(val)
size = tuple(map(int, sys.argv[1].split("x")))
inst = parse_instance(layered(*size, int(sys.argv[3]) if len(sys.argv) > 3 else 0))
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
r = planner.solve(inst, "network", "exact.cpsat", time_limit=float(sys.argv[2]))
d = {**r.details, **r.details.get("configuration", {})}
print(sys.argv[1], f"TABLE_STOP={NT.TABLE_STOP}", r.status.value, r.objective, r.bound, round(time.monotonic() - T0, 2), r.metrics["feasible"])
print({k: v for k, v in d.items() if k != "configuration"})
print("pricing (kind, cap, proven): (calls, s)", {k: (cnt[k], round(v, 2)) for k, v in acc.items()})
