"""Storm's TestLargeCluster, on our side: every topology of each real cluster is scheduled
fully by storm.ras, and the plan passes the evaluator. Like Storm's test, the executors are the
user components' (no ackers) and every supervisor offers network.resource.units = 50."""

from __future__ import annotations

import pytest

from planner import solve
from planner.plan import Status


@pytest.mark.parametrize("cluster, topologies, executors", [
    ("largeCluster03", 50, 1414),
    # slow tier: largeCluster02 since session 22 (6-9 s; the default suite took 598 s), largeCluster01
    # since session 38 (3.5 s; 619 s in a clean clone); largeCluster03 stays in the default run
    pytest.param("largeCluster01", 40, 24403, marks=pytest.mark.slow),
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


@pytest.mark.slow  # slow tier since session 38 (9 s; the default suite took 778-788 s on its machine)
def test_exact_solves_of_largecluster03_keep_their_time_limit(shared):
    """Storm's largeCluster03 as its test schedules it (1,414 executors, 743 groups, 960 slots):
    before session 24 the exact network solve ran 216 s under a 60 s limit and ended without a
    plan, feasibility and traffic built models for 15-30 s past a 20 s limit. Now each ends
    near its limit with an honest answer: a plan that passes the evaluator with a bound at most
    its objective, the start plan as feasibility's proof, or unknown."""
    import time

    from planner.storm import load_cluster_dir

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / "largeCluster03", ackers="none")
    limit = 8.0
    t0 = time.monotonic()
    r = solve(inst, "network", "exact.cpsat", time_limit=limit)
    wall = time.monotonic() - t0
    assert wall < 2 * limit + 5, wall  # 216 s at a 60 s limit before
    assert r.status == Status.FEASIBLE, r.message
    assert r.metrics["feasible"] and r.metrics["executors_placed"] == 1414
    # the counting bound (network.count_bound, 188.5): column generation reaches none here
    assert r.bound is not None and 150.0 <= r.bound <= r.objective + 1e-9, (r.bound, r.details.get("bound_from"))

    t0 = time.monotonic()
    f = solve(inst, "feasibility", "exact.cpsat", time_limit=limit)
    assert time.monotonic() - t0 < limit
    assert f.status == Status.OPTIMAL and f.metrics["feasible"] and f.details["plan_from"] == "storm.ras"

    t0 = time.monotonic()
    t = solve(inst, "traffic", "exact.cpsat", time_limit=limit)
    wall = time.monotonic() - t0
    assert wall < 2.0, wall  # 49 s at a 20 s limit before session 24, then unknown at the limit
    _traffic_counted(t, "TopologyName00001")


@pytest.mark.slow  # slow tier since session 38 (10 s; the default suite took 647 s in a clean clone on its machine after the first 15)
def test_exact_solves_of_largecluster01_keep_their_time_limit(shared):
    """Storm's largeCluster01 (24,403 executors on 65,600 slots): before session 26 the exact
    network solve failed (OverflowError on its rack box, then a 32 GB array in the local search)
    or ran minutes past its limit (a greedy fill, every node class's worker contents listed
    before column generation looked at its clock), and traffic spent 32 s listing executor
    pairs. Now, at an 8 s limit, network keeps storm.ras's plan with the counting bound and
    traffic is proven infeasible by counting at once (it ended unknown at its limit until
    session 27), each within the limit."""
    import time

    from planner.storm import load_cluster_dir

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / "largeCluster01", ackers="none")
    limit = 8.0
    t0 = time.monotonic()
    r = solve(inst, "network", "exact.cpsat", time_limit=limit)
    assert time.monotonic() - t0 < limit + 3, time.monotonic() - t0
    assert r.status == Status.FEASIBLE, r.message
    assert r.metrics["feasible"] and r.metrics["executors_placed"] == 24403
    assert r.bound is not None and 0 < r.bound <= r.objective + 1e-9
    det = r.details.get("configuration", r.details)
    assert det["local_search"].startswith("not run: 65,600 workers"), det

    t0 = time.monotonic()
    t = solve(inst, "traffic", "exact.cpsat", time_limit=limit)
    assert time.monotonic() - t0 < 2.0, time.monotonic() - t0
    _traffic_counted(t, "TopologyName00000")


def _traffic_counted(r, first: str) -> None:
    """traffic on Storm's clusters: some topology asks fewer workers (min(W, E) of them, each on
    one node) than its CPU needs nodes, so no plan exists; the counting proof says so before
    any model and names the first such topology."""
    assert r.status == Status.INFEASIBLE and r.details["proof"] == "counting", (r.status, r.message)
    assert f"worker count: topology {first} runs on exactly min(W, E) = " in r.message, r.message


def test_largecluster03_with_its_ackers_is_feasible(shared):
    """largeCluster03 with Nimbus's ackers (2,174 executors): every Storm strategy fails on
    TopologyName00047 (135 executors of 12,288 MB each, placed after the other topologies have
    spread), and the exact models are too large to find a plan (CP-SAT unknown after 900 s,
    session 27). The alignment packing, every executor of every topology at once, large ones
    first, places them all: feasibility and admission are proven at once (network: the next test)."""
    import time

    from planner.storm import load_cluster_dir

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / "largeCluster03", ackers="conf")
    assert inst.size["executors"] == 2174
    assert not solve(inst, "feasibility", "storm.ras").ok
    for problem in ("feasibility", "admission"):
        t0 = time.monotonic()
        r = solve(inst, problem, "exact.cpsat", time_limit=20)
        assert time.monotonic() - t0 < 10, time.monotonic() - t0
        assert r.status == Status.OPTIMAL and r.details["plan_from"] == "alignment packing", r.message
        assert r.metrics["feasible"] and r.metrics["executors_placed"] == 2174


@pytest.mark.slow  # slow tier since session 38 (18 s; the default suite took 778-788 s on its machine)
def test_largecluster03_with_its_ackers_gets_a_network_plan_better_than_the_packing(shared):
    """The same cluster's network problem: the packing's plan, then the topology search, which
    must improve on it."""
    from planner.storm import load_cluster_dir

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / "largeCluster03", ackers="conf")
    # 16 s: at 8 s this machine's topology search got 0.5 s and improved 0-1 topologies (session 37)
    n = solve(inst, "network", "exact.cpsat", time_limit=16)
    assert n.status == Status.FEASIBLE and n.metrics["feasible"], n.message
    assert n.bound is not None and 0 < n.bound <= n.objective + 1e-9
    # the packing's plan has metric 961.63 (959.63 after the local search); the topology search
    # (session 29) re-places topologies one at a time and must improve on it: how far it gets at
    # a limit is the machine's (at 8 s: 862.5 on session 29's machine, 943.3-947.2 on session 37's;
    # at 16 s there 887.8), a benchmark's matter
    assert n.details["topology_search"]["improved"] >= 1 and n.objective < 959.63 - 1e-6, n.details
