"""The worker-level local search alone (formulations/_networkls.py) on a seeded layered instance.

Usage: PYTHONPATH=. python benchmarks/network_local_search.py 100x10x10 2 [seed]
Runs search_network from the storm.ras plan for the given seconds and prints the storm.ras
metric, the search's metric, its seconds and the evaluator's verdict on its plan.
"""
import sys
import time
from collections import defaultdict

import planner
from formulations._gen import layered
from formulations._networkls import search_network
from formulations._rasmodel import PlacementModel, component_groups
from planner import rates
from planner.model import parse_instance

size = tuple(map(int, sys.argv[1].split("x")))
budget = float(sys.argv[2])
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
inst = parse_instance(layered(*size, 0))
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
ras = planner.solve(inst, "network", "storm.ras")
t = time.perf_counter()
value, plan = search_network(pm, edges, [ras.plan], budget, seed=seed)
m = planner.evaluate(inst, plan, "network")
print(sys.argv[1], "storm.ras", ras.objective, "search", round(const - value, 9), round(time.perf_counter() - t, 2),
      "evaluator", m["network_metric"], m["feasible"])
