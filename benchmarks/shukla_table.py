"""The five Shukla and Simmhan pairs on the shipped micro-DAGs at 50, 100 and 200 tuples/s.

Prints a Markdown table: rho + slots added by the mapping / slots used / the evaluator's
predicted (supported) rate, "ok" when the evaluator accepts the plan at its target rate.
Run: PYTHONPATH=$PWD python benchmarks/shukla_table.py
"""

from __future__ import annotations

from planner import api
from planner.model import parse_instance

PAIRS = ["lsa+dsm", "lsa+rsm", "mba+dsm", "mba+rsm", "mba+sam"]


def main() -> None:
    print("| DAG | rate | " + " | ".join(PAIRS) + " |")
    print("|---|---|" + "---|" * len(PAIRS))
    for dag in ["linear", "diamond", "star"]:
        base = api.load_instance(f"shukla-{dag}").model_dump(mode="json")
        for rate in [50, 100, 200]:
            base["topologies"][0]["input_rate"] = rate
            inst = parse_instance(base)
            cells = []
            for p in PAIRS:
                r = api.solve(inst, "slots", "shukla." + p)
                t = r.details.get("topologies", {}).get(dag, {})
                if r.plan is None:
                    cells.append(f"rho {t.get('rho')}, no mapping")
                else:
                    cells.append(f"{t['rho']}+{t['extra_slots']} / {r.metrics['slots_used']} / "
                                 f"{r.details['predicted_rate']:.0f}" + (" ok" if r.ok else ""))
            print(f"| {dag} | {rate} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
