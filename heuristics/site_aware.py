"""Site-aware scheduling for Storm (seed 003: "Enabling Site-Aware Scheduling for Apache Storm
in ExoGENI"), with the production fixes the post proposes: spread a component's executors over
its site's free slots, and fall back to the EvenScheduler for untagged components and for
whatever a site cannot hold.
"""

from __future__ import annotations


from planner.model import Instance
from planner.plan import Placement, Status
from planner.registry import register

from .common import all_slots, no_plan, plan_result, topology_order
from .storm import even_assign, even_slot_order


@register("site-aware", ["network", "feasibility"], source="Site-aware scheduling for Apache Storm in ExoGENI "
          "(seed 003), steps 1-3 and 'Scheduler for Production'",
          summary="site-tagged components on their site's slots; EvenScheduler for the rest")
def site_aware(instance: Instance, problem: str, *, time_limit=None, seed=0):
    """SiteAwareScheduler. Topologies in priority order. For each component tagged with a
    site (``Component.site``, matched against ``Node.site``, the supervisors'
    ``storm.scheduler.meta``), its executors are dealt round robin over the site's free slots
    (interleaved across the site's nodes as EvenScheduler does, at most one slot per
    executor), each tagged component taking slots no other component has taken. Untagged
    components, and tagged ones whose site has no free slot left, go to the EvenScheduler
    over the free slots of untagged nodes (all free slots if there are none). Like the
    seed's scheduler and EvenScheduler it checks no resources, so the evaluator judges the
    plan. ``details.not_honoured`` lists each component placed off its site, with the reason.
    """
    free = set(all_slots(instance))
    site_of = {n.id: n.site for n in instance.cluster.nodes}
    placements: list[Placement] = []
    not_honoured: list[dict] = []
    fallback: list[dict] = []
    missing: list[str] = []
    for t in topology_order(instance):
        untagged = []
        for c in sorted(t.components, key=lambda c: c.id):
            if c.site is None:
                untagged.append(c)
                continue
            site_slots = even_slot_order([s for s in free if site_of[s[0]] == c.site])
            if not site_slots:
                not_honoured.append({"topology": t.id, "component": c.id, "site": c.site,
                                     "reason": f"site {c.site!r} has no free slot; EvenScheduler fallback"})
                untagged.append(c)
                continue
            k = min(c.parallelism, len(site_slots))
            chosen = site_slots[:k]
            for i in range(c.parallelism):
                n, p = chosen[i % k]
                placements.append(Placement(topology=t.id, component=c.id, executor=i, node=n, slot=p))
            free -= set(chosen)
        if untagged:
            sub = t.model_copy(update={"components": untagged})
            pool = [s for s in free if site_of[s[0]] is None] or sorted(free)
            got = even_assign(instance, sorted(pool), sub)
            if not got:
                missing.append(t.id)
                continue
            placements.extend(got)
            free -= {(p.node, p.slot) for p in got}
            fallback.append({"topology": t.id, "components": [c.id for c in untagged],
                             "pool": "untagged nodes" if any(site_of[s[0]] is None for s in pool) else "all free slots"})
    details = {"not_honoured": not_honoured, "even_fallback": fallback}
    if missing:
        return no_plan(problem, "site-aware", f"no free slot left for topologies {missing}", details=details)
    msg = ""
    if not_honoured:
        msg = "not honoured: " + "; ".join(f"{d['topology']}/{d['component']} (site {d['site']}): {d['reason']}" for d in not_honoured)
    return plan_result(problem, "site-aware", placements, Status.FEASIBLE, message=msg, details=details)
