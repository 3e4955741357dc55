"""The worker-level local search alone (formulations/_networkls.py) on a seeded layered instance.

Usage: PYTHONPATH=. python benchmarks/network_local_search.py 100x10x10 2 [seed]
           [--gen-seed G] [--kicks K] [--trace]
Runs search_network from the storm.ras plan for the given seconds and prints the storm.ras
metric, the search's metric, its seconds, the kicks it ran and the evaluator's verdict on its
plan. ``seed``: the search's random seed (default 0); ``--gen-seed``: the instance generator's
(default 0); ``--kicks``: a budget of kicks, the seconds then only a cap (as the exact network
solve runs it since session 16: ``network.LS_KICKS_PER`` per executor x node); ``--trace``:
also print (seconds, kicks, metric) at every improvement of the best plan (the kick counts at
which a metric is reached do not depend on the machine; the seconds do).
"""
import argparse
import time
from collections import defaultdict

import planner
from formulations._gen import layered
from formulations import _networkls
from formulations._networkls import search_network
from formulations._rasmodel import PlacementModel, component_groups
from planner import rates
from planner.model import parse_instance

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("size", help="executors x components x nodes, e.g. 100x10x10")
ap.add_argument("seconds", type=float, help="the search's time budget (a cap only with --kicks)")
ap.add_argument("seed", type=int, nargs="?", default=0, help="the search's random seed")
ap.add_argument("--gen-seed", type=int, default=0, help="the layered generator's seed")
ap.add_argument("--kicks", type=int, default=None, help="a budget of kicks (the seconds a cap only)")
ap.add_argument("--trace", action="store_true", help="print (seconds, kicks, metric) at every improvement")
args = ap.parse_args()
size = tuple(map(int, args.size.split("x")))
budget, seed = args.seconds, args.seed
inst = parse_instance(layered(*size, args.gen_seed))
groups = [g for ti, t in enumerate(inst.topologies) for g in component_groups(ti, t)]
pm = PlacementModel(inst, "network", groups, sense="min", build=False)
index = {(g.ti, g.comp.id): k for k, g in enumerate(pm.groups)}
edges, const = defaultdict(float), 0.0
for ti, t in pm.topos:
    for u, downs in rates.downstream(t).items():
        for d in downs:
            ku, kd = index[(ti, u)], index[(ti, d)]
            edges[(min(ku, kd), max(ku, kd))] += 1.0 / t.executor_count
            const += 3.0 * pm.groups[ku].size * pm.groups[kd].size / t.executor_count
kicks, trace, best, t0 = [0], [], [None], [0.0]
orig_kick, orig_value = _networkls.WorkerSearch.kick, _networkls.WorkerSearch.value


def counted_kick(self, *a, **k):
    kicks[0] += 1
    return orig_kick(self, *a, **k)


def traced_value(self, X):
    v = orig_value(self, X)
    if args.trace and (best[0] is None or v > best[0] + 1e-9):
        best[0] = v
        trace.append((round(time.perf_counter() - t0[0], 3), kicks[0], round(const - v, 4)))
    return v


_networkls.WorkerSearch.kick = counted_kick
_networkls.WorkerSearch.value = traced_value
ras = planner.solve(inst, "network", "storm.ras")
t0[0] = t = time.perf_counter()
value, plan = search_network(pm, edges, [ras.plan], budget, seed=seed, kicks=args.kicks)
took = time.perf_counter() - t
m = planner.evaluate(inst, plan, "network")
print(args.size, f"gen-seed {args.gen_seed}", "storm.ras", ras.objective, "search", round(const - value, 9), round(took, 2),
      "kicks", kicks[0], "evaluator", m["network_metric"], m["feasible"])
if args.trace:
    print("improvements (seconds, kicks, metric):", trace)
