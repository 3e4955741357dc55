"""Time one network node table (node 0 of a seeded layered instance) with no time budget.

Usage: PYTHONPATH=. python benchmarks/network_node_table_time.py 100x10x10 [THREADS, default 1]
Prints whether it was built, its rows, seconds, the sum of its values and the covered rows
(the last two to compare builds of different commits). A solve builds its tables with its own
threads (2 by default, ``_nodetable.table_threads``); 1 here is the DP of before session 12's
threads.
"""
import time, sys
from formulations import _patterns as P
from formulations._nodetable import NodeTable
from formulations._gen import layered
from formulations._rasmodel import PlacementModel, component_groups
from planner.model import parse_instance
size = tuple(map(int, sys.argv[1].split("x")))
inst = parse_instance(layered(*size, 0))
groups = [g for ti, t in enumerate(inst.topologies) for g in component_groups(ti, t)]
pm = PlacementModel(inst, "network", groups, sense="min", symmetry=True, build=False)
_, info, _ = P.build_network(pm, None, 1, tables=False)
t = time.monotonic()
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
nt = NodeTable(pm, 0, info["edges"], threads=threads)
print(sys.argv[1], "threads", threads, "table", nt.ok, len(nt.Y), round(time.monotonic() - t, 2), "sum value", float(nt.value[nt.sel].sum()), int(nt.sel.sum()))
