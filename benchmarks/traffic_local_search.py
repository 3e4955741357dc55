"""The traffic seeding search (formulations/_trafficls.py) inside a real exact traffic solve.

Usage: PYTHONPATH=. python benchmarks/traffic_local_search.py 100x5x10 [--limit 60]
           [--gen-seed G] [--budget S] [--kicks K] [--method exact.cpsat]
Solves the seeded layered traffic instance (``layered(..., problem="traffic")``, the instances
of bench_traffic_scale.py) and reports, for the branch-and-price seeding search (the first
``seed_traffic`` call): its seconds, its kicks and every improvement of its best node plan as
(seconds, kicks, intra-node value); then the solve's status, objective, bound and the details
that say how phase 1 and phase 2 ended. ``--budget``: the search's seconds instead of the
solver's own; ``--kicks``: a budget of kicks instead of the solver's own (the seconds then a
cap); ``--search-seed``: its random seed. The kick counts at which a value is reached do not depend on the machine; the seconds do.
"""
import argparse
import time

import planner
from formulations import _trafficls, traffic
from formulations._gen import layered
from planner.model import parse_instance

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("size", help="executors x components x nodes, e.g. 100x5x10")
ap.add_argument("--limit", type=float, default=60.0, help="the solve's time limit in seconds")
ap.add_argument("--gen-seed", type=int, default=0, help="the layered generator's seed")
ap.add_argument("--budget", type=float, default=None, help="the seeding search's seconds (default: the solver's)")
ap.add_argument("--kicks", type=int, default=None, help="the seeding search's kicks (default: the solver's)")
ap.add_argument("--search-seed", type=int, default=None, help="the seeding search's random seed (default: the solver's)")
ap.add_argument("--method", default="exact.cpsat", help="exact.cpsat, exact.milp-cbc or exact.milp-highs")
args = ap.parse_args()
size = tuple(map(int, args.size.split("x")))
inst = parse_instance(layered(*size, args.gen_seed, problem="traffic"))

state = {"on": False, "kicks": 0, "best": None, "t0": 0.0, "trace": [], "calls": 0}
orig_kick, orig_value, orig_seed = _trafficls.NodeSearch.kick, _trafficls.NodeSearch.value, traffic.seed_traffic


def counted_kick(self, *a, **k):
    if state["on"]:
        state["kicks"] += 1
    return orig_kick(self, *a, **k)


def traced_value(self, Y):
    v = orig_value(self, Y)
    if state["on"] and (state["best"] is None or v > state["best"] + 1e-9):
        state["best"] = v
        state["trace"].append((round(time.perf_counter() - state["t0"], 3), state["kicks"], round(v, 4)))
    return v


def first_seed(pm, model, pairs, starts_plans, chosen, budget, seed=0, target=float("inf"), kicks=None):
    state["calls"] += 1
    if state["calls"] > 1:
        return orig_seed(pm, model, pairs, starts_plans, chosen, budget, seed, target, kicks=kicks)
    budget = args.budget if args.budget is not None else budget
    kicks = args.kicks if args.kicks is not None else kicks
    seed = args.search_seed if args.search_seed is not None else seed
    state.update(on=True, t0=time.perf_counter())
    try:
        out = orig_seed(pm, model, pairs, starts_plans, chosen, budget, seed, target, kicks=kicks)
    finally:
        state["on"] = False
        state["seconds"] = round(time.perf_counter() - state["t0"], 3)
        state["budget"], state["kick_budget"] = budget, kicks
    return out


_trafficls.NodeSearch.kick = counted_kick
_trafficls.NodeSearch.value = traced_value
traffic.seed_traffic = first_seed
t = time.perf_counter()
r = planner.solve(inst, "traffic", args.method, time_limit=args.limit)
took = time.perf_counter() - t
d = r.details
print(args.size, f"gen-seed {args.gen_seed}", args.method, f"search: budget {state.get('budget')} s,",
      f"kick budget {state.get('kick_budget')}, {state.get('seconds')} s, {state['kicks']} kicks,",
      f"best {state['best']}")
print("improvements (seconds, kicks, intra-node value):", state["trace"])
print("solve:", r.status.value, r.objective, r.bound, round(took, 2), "s;",
      {k: d.get(k) for k in ("incumbent_search", "phase1", "phase1_seconds", "phase2", "bp_nodes", "bp_root_bound",
                             "bp_conv_rows", "bp_conv", "bp_open", "bp_conv_tries", "bp_conv_seconds", "bp_polish", "bp_polish_gain")})
