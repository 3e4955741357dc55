"""Exact models for ``feasibility`` and ``admission`` (Storm RAS multi-tenant).

``feasibility``: place every executor of every topology under the RAS limits (no objective;
any plan is optimal, objective 0 = no violation). ``admission``: each topology is placed whole
or not at all (binary a[t]; sum_w x[g,w] = s_g a[t]); maximise sum_t weight_t a[t] with
weight = max priority + 1 - priority (:func:`planner.problems.admission_weight`). Both use the
component-count PlacementModel; infeasibility is explained (see :func:`explain_infeasible`).
"""

from __future__ import annotations

from planner.plan import Result
from planner.problems import admission_weight
from planner.registry import register

from ._rasmodel import OPTIONS, SOURCE, PlacementModel, Run, component_groups, method_runner


def solve_feasibility_admission(run: Run) -> Result:
    """Place everything (feasibility) or the heaviest set of whole topologies (admission)."""
    # without a user hint, Storm's RAS plan seeds the model: the answer is never worse than RAS
    # (stopped early, CBC and HiGHS had returned weaker plans than RAS's, HiGHS even an empty one)
    groups = [g for ti, t in enumerate(run.instance.topologies) for g in component_groups(ti, t)]
    quick = run.quick_infeasible(PlacementModel(run.instance, run.problem, groups, symmetry=False, build=False))
    if quick is not None:
        return quick
    hint = run.start_plan("storm.ras")
    adm = run.problem == "admission"
    pm = PlacementModel(run.instance, run.problem, groups, sense="max" if adm else "min", symmetry=run.symmetry,
                        hint_plan=hint)
    if adm:
        maxp = max(t.priority for t in run.instance.topologies)
        pm.m.objective = {pm.a[ti]: float(admission_weight(t.priority, maxp)) for ti, t in pm.topos}
    sol = run.solve(pm)
    details = {"admitted": pm.admitted(sol.values)} if adm and sol.values is not None else {}
    return run.result(pm, sol, details=details)


_make = method_runner(solve_feasibility_admission)
for _name in ("exact.cpsat", "exact.milp-cbc", "exact.milp-highs"):
    register(_name, ["feasibility", "admission"], source=SOURCE, kind="exact", options=dict(OPTIONS),
             summary="exact model over component counts (CP-SAT / MILP)")(_make(_name))
