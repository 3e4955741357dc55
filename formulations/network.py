"""Exact models for ``network``: minimise the Storm RAS network metric under the RAS limits.

For a stream (distinct downstream pair) u -> d of topology t, the metric adds, over every pair
of executors, 0 (same worker), 1 (same node), 2 (same rack) or 3 (elsewhere), and divides the
topology's sum by its executor count E_t. With counts per worker x, node y and rack z,

    sum over pairs = 3 n_u n_d - sum_r z[u,r] z[d,r] - sum_n y[u,n] y[d,n] - sum_w x[u,w] x[d,w],

because a pair in one worker is also in one node and one rack. The products are rewarded,
so :meth:`LinModel.product_upper` linearises each exactly (binary expansion of the factor with
the smaller bound). The same LinModel goes to CP-SAT, CBC and HiGHS (docs/formulations.md).
"""

from __future__ import annotations

from planner.plan import Result
from planner.registry import register

from ._rasmodel import OPTIONS, SOURCE, PlacementModel, Run, component_groups, method_runner


def network_objective(pm: PlacementModel) -> None:
    """Set ``pm.m``'s objective to the RAS network metric summed over topologies."""
    m = pm.m
    G = pm.groups
    index = {(g.ti, g.comp.id): k for k, g in enumerate(G)}
    for ti, t in pm.topos:
        e_t = float(t.executor_count)
        from planner import rates

        for u, downs in rates.downstream(t).items():
            for d in downs:
                ku, kd = index[(ti, u)], index[(ti, d)]
                nu, nd = G[ku].size, G[kd].size
                m.obj_const += 3.0 * nu * nd / e_t
                if len(pm.racks) == 1:
                    m.obj_const -= nu * nd / e_t  # one rack: every pair shares it
                else:
                    for ri in range(len(pm.racks)):
                        if (ku, ri) in pm.z and (kd, ri) in pm.z:
                            _reward(m, m.product_upper(pm.z[(ku, ri)], pm.z[(kd, ri)], f"R[{u},{d},{ri}]"), e_t)
                for ni in range(len(pm.nodes)):
                    if (ku, ni) in pm.y and (kd, ni) in pm.y:
                        _reward(m, m.product_upper(pm.y[(ku, ni)], pm.y[(kd, ni)], f"N[{u},{d},{ni}]"), e_t)
                for wi in range(len(pm.workers)):
                    if (ku, wi) in pm.x and (kd, wi) in pm.x:
                        _reward(m, m.product_upper(pm.x[(ku, wi)], pm.x[(kd, wi)], f"W[{u},{d},{wi}]"), e_t)


def _reward(m, expr: dict[int, float], e_t: float) -> None:
    for v, c in expr.items():
        m.objective[v] = m.objective.get(v, 0.0) - c / e_t


def solve_network(run: Run) -> Result:
    """Minimise the RAS network metric (component counts per worker/node/rack; exact linearisation)."""
    hint = run.hint_plan()
    groups = [g for ti, t in enumerate(run.instance.topologies) for g in component_groups(ti, t)]
    pm = PlacementModel(run.instance, run.problem, groups, sense="min", symmetry=run.symmetry, hint_plan=hint)
    network_objective(pm)
    return run.result(pm, run.solve(pm))


_make = method_runner(solve_network)
for _name in ("exact.cpsat", "exact.milp-cbc", "exact.milp-highs"):
    register(_name, ["network"], source=SOURCE, kind="exact", options=dict(OPTIONS),
             summary="exact model over component counts (CP-SAT / MILP)")(_make(_name))
