"""How much a near-optimal incumbent alone changes the network rack search (branch net-ls).

Usage: PYTHONPATH=. python benchmarks/network_fed_incumbent.py 100x10x10 240 10
Runs the worker-level local search (_networkls.search_network) from the storm.ras plan for the
given seconds (last argument), then one exact.cpsat solve with that plan in place of the
storm.ras start (Run.heuristic_plan replaced), and prints the result and its search counters.
"""
import sys
import time
from collections import defaultdict

import planner
from formulations import _rasmodel
from formulations._gen import layered
from formulations._networkls import search_network
from formulations._rasmodel import PlacementModel, component_groups
from planner import rates
from planner.model import parse_instance

size = tuple(map(int, sys.argv[1].split("x")))
limit, budget = float(sys.argv[2]), float(sys.argv[3])
inst = parse_instance(layered(*size, 0))
groups = [g for ti, t in enumerate(inst.topologies) for g in component_groups(ti, t)]
pm = PlacementModel(inst, "network", groups, sense="min", build=False)
index = {(g.ti, g.comp.id): k for k, g in enumerate(pm.groups)}
edges = defaultdict(float)
for ti, t in pm.topos:
    for u, downs in rates.downstream(t).items():
        for d in downs:
            ku, kd = index[(ti, u)], index[(ti, d)]
            edges[(min(ku, kd), max(ku, kd))] += 1.0 / t.executor_count
ras = planner.solve(inst, "network", "storm.ras")
_, plan = search_network(pm, edges, [ras.plan], budget, seed=2)
print("incumbent", planner.evaluate(inst, plan)["network_metric"], "storm.ras", ras.objective, flush=True)
_rasmodel.Run.heuristic_plan = lambda self, method: plan
t = time.perf_counter()
r = planner.solve(inst, "network", "exact.cpsat", time_limit=limit)
d = {**r.details, **r.details.get("configuration", {})}
print(sys.argv[1], r.status.value, r.objective, r.bound, round(time.perf_counter() - t, 2), r.metrics["feasible"])
print({k: v for k, v in d.items() if k != "configuration"})
