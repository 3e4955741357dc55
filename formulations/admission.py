"""Exact models for ``feasibility`` and ``admission`` (Storm RAS multi-tenant).

``feasibility``: place every executor of every topology under the RAS limits (no objective;
any plan is optimal, objective 0 = no violation). ``admission``: each topology is placed whole
or not at all (binary a[t]; sum_w x[g,w] = s_g a[t]); maximise sum_t weight_t a[t] with
weight = max priority + 1 - priority (:func:`planner.problems.admission_weight`). Both use the
component-count PlacementModel; infeasibility is explained (see :func:`explain_infeasible`).
"""

from __future__ import annotations

from planner.plan import Result, Status
from planner.problems import admission_weight
from planner.registry import register

from ._rasmodel import OPTIONS, SOURCE, PlacementModel, Run, component_groups, method_runner


def solve_feasibility_admission(run: Run) -> Result:
    """Place everything (feasibility) or the heaviest set of whole topologies (admission)."""
    groups = [g for ti, t in enumerate(run.instance.topologies) for g in component_groups(ti, t)]
    base = PlacementModel(run.instance, run.problem, groups, symmetry=False, build=False)
    quick = run.quick_infeasible(base)
    if quick is not None:
        return quick
    # without a user hint, Storm's RAS plan seeds the model: the answer is never worse than RAS
    # (stopped early, CBC and HiGHS had returned weaker plans than RAS's, HiGHS even an empty one);
    # when it leaves executors out, the alignment packing's plan if that places them all
    hint = run.start_plan("storm.ras")
    adm = run.problem == "admission"
    source = run.start_source
    # a plan the evaluator passed is the certificate: every feasible plan is optimal for
    # feasibility, and one that admits every topology is for admission (Storm's largeCluster03:
    # 0.1 s, where building the model took longer than a 20 s limit)
    whole = hint is not None and (not adm or {p.topology for p in hint.placements} >= {t.id for t in run.instance.topologies})

    def certificate(*why: str) -> Result:
        what = "places every executor" if not adm else "admits every topology"
        return Result(problem=run.problem, method=run.method, status=Status.OPTIMAL, plan=hint,
                      message="; ".join(run.notes + [w for w in why if w] + [f"the start plan of {source} {what}: optimal"]),
                      details={"backend": run.backend, "plan_from": source})

    if whole and not run.pattern_off:  # option model="compact" solves the model all the same
        return certificate()
    maxp = max((t.priority for t in run.instance.topologies), default=0)
    weight = {ti: float(admission_weight(t.priority, maxp)) for ti, t in base.topos}
    if not run.compact_affordable(base, 0):
        why = "the model is too large to build in the time left"
        if whole:  # model="compact" asked for a model that cannot be built: the plan still proves it
            return certificate(why)
        if adm and hint is not None:
            return _hint_kept(run, hint, source, sum(weight.values()), why + "; optimality not proven")
        return Result(problem=run.problem, method=run.method, status=Status.UNKNOWN,
                      message="; ".join(run.notes + [f"{source} gave no plan to start from", why]),
                      details={"backend": run.backend})
    def objective(pm: PlacementModel) -> None:
        pm.m.objective = {pm.a[ti]: w for ti, w in weight.items()}

    pm = run.compact_model(groups, "max" if adm else "min", hint, objective if adm else None)
    sol = run.solve(pm)
    details = {"admitted": pm.admitted(sol.values)} if adm and sol.values is not None else {}
    res = run.result(pm, sol, details=details)
    if whole and res.status == Status.UNKNOWN:  # the model stopped without a plan; the start plan proves it
        return certificate(res.message)
    if adm and hint is not None and res.status == Status.UNKNOWN:
        return _hint_kept(run, hint, source, sum(weight.values()) if res.bound is None else res.bound,
                          "; ".join(x for x in (res.message, "time limit reached: best plan so far, optimality not proven") if x))
    return res


def _hint_kept(run: Run, plan, source: str, bound: float, why: str) -> Result:
    """Admission stopped before its model gave a plan: the start plan, feasible, with ``bound``
    (the weight of every topology, or the stopped model's)."""
    return Result(problem=run.problem, method=run.method, status=Status.FEASIBLE, plan=plan, bound=bound,
                  message="; ".join(x for x in [f"the start plan of {source} is kept", why] if x),
                  details={"backend": run.backend, "plan_from": source})


_make = method_runner(solve_feasibility_admission)
for _name in ("exact.cpsat", "exact.milp-cbc", "exact.milp-highs"):
    register(_name, ["feasibility", "admission"], source=SOURCE, kind="exact", options=dict(OPTIONS),
             summary="exact model over component counts (CP-SAT / MILP)")(_make(_name))
