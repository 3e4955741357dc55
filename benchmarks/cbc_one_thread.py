"""CBC's stalls with "threads 1": the CBC runs of exact.milp-cbc slots solves, timed with CBC
told one thread, no thread count (its serial code) and two threads (session 20).

Usage: PYTHONPATH=. python benchmarks/cbc_one_thread.py [--rounds 25] [--modes threads1,serial,threads2]

Each round solves the 12 small rate-usage slots instances of
tests/test_exact_slots_rate.py::test_rate_pins_max_per_node_incompatible
(``constrained_rate_tiny`` seeds 0-11) by exact.milp-cbc. Every CBC run goes
through PuLP's PULP_CBC_CMD, which this script wraps to set the thread count of the mode
(bypassing run_cbc's own rule, which since session 20 drops a count of 1). Prints per mode: CBC
runs, runs over 5 s, runs whose log shows CBC's threaded code ("Thread 0 used"), and wall time.
"""
import argparse
import time

import pulp

import planner
from formulations import gap
from tests.test_exact_slots_rate import constrained_rate_tiny

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--rounds", type=int, default=25, help="rounds over the 12 instances per mode")
ap.add_argument("--modes", default="threads1,serial,threads2", help="comma-separated: threads1, serial, threads2")
args = ap.parse_args()

REAL_CMD = pulp.PULP_CBC_CMD
REAL_RUN = gap.run_cbc


def measure(mode: str, rounds: int) -> None:
    threads = {"threads1": 1, "serial": None, "threads2": 2}[mode]
    stats = {"runs": 0, "over_5_s": 0, "threaded_log": 0}

    def cmd(**kw):
        kw.pop("threads", None)
        return REAL_CMD(threads=threads, **kw)

    def run(prob, *a, **k):
        t = time.perf_counter()
        text, sec = REAL_RUN(prob, *a, **k)
        stats["runs"] += 1
        stats["over_5_s"] += time.perf_counter() - t > 5
        stats["threaded_log"] += "Thread 0 used" in text
        return text, sec

    pulp.PULP_CBC_CMD = cmd
    gap.run_cbc = run
    import formulations._linmodel as LM
    LM.run_cbc = run
    try:
        t0 = time.perf_counter()
        for _ in range(rounds):
            for seed in range(12):
                planner.solve(constrained_rate_tiny(seed), "slots", "exact.milp-cbc")
        print(f"{mode:9s} {stats}  wall {time.perf_counter() - t0:.1f} s", flush=True)
    finally:
        pulp.PULP_CBC_CMD = REAL_CMD
        gap.run_cbc = REAL_RUN
        LM.run_cbc = REAL_RUN


for m in args.modes.split(","):
    measure(m.strip(), args.rounds)
