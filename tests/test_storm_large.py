"""Storm's TestLargeCluster, on our side: every topology of each real cluster is scheduled
fully by storm.ras, and the plan passes the evaluator. Like Storm's test, the executors are the
user components' (no ackers) and every supervisor offers network.resource.units = 50."""

from __future__ import annotations

import pytest

from planner import solve
from planner.plan import Status


@pytest.mark.parametrize("cluster, topologies, executors", [
    ("largeCluster03", 50, 1414),
    ("largeCluster01", 40, 24403),
    # slow tier since session 22 (6-9 s; the default suite took 598 s): the other two clusters
    # stay in the default run
    pytest.param("largeCluster02", 45, 36150, marks=pytest.mark.slow),
])
def test_storm_ras_schedules_every_topology(shared, cluster, topologies, executors):
    from planner.storm import load_cluster_dir

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / cluster, ackers="none")
    assert len(inst.topologies) == topologies and inst.size["executors"] == executors
    r = solve(inst, "feasibility", "storm.ras")
    assert r.status == Status.FEASIBLE, r.message
    assert r.metrics["feasible"] and r.metrics["executors_placed"] == executors
    assert sorted(r.metrics["scheduled_topologies"]) == sorted(t.id for t in inst.topologies)


def test_network_resource_units_are_storm_tests(shared):
    from planner.storm import STORM_TEST_SUPERVISOR_RESOURCES, load_cluster_dir

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / "largeCluster03", ackers="none")
    assert all(n.resources == STORM_TEST_SUPERVISOR_RESOURCES for n in inst.cluster.nodes)
    asks = {r for t in inst.topologies for c in t.components for r in c.resources}
    assert asks <= set(STORM_TEST_SUPERVISOR_RESOURCES)
