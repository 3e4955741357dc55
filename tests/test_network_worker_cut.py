"""The worker cut (formulations/_workercut.py): a lower bound on a topology's cross-worker pairs.

Checked against exhaustive enumeration of every partition of the executors, and, through the
network bound it raises, against brute force's proven optima; and its use on Storm's
TopologyName00009 alone on largeCluster03, which no model proved before."""

from __future__ import annotations

import random
import time
import pytest

import planner
from formulations import _nodetable
from formulations import _workercut as W
from formulations._gen import small_random
from formulations._rasmodel import PlacementModel, component_groups
from formulations.network import count_bounds
from helpers import proven_small_network
from planner.model import parse_instance


def _partitions(items: list[int]):
    """Every set partition of ``items`` (lists of blocks)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _partitions(rest):
        yield [[first]] + part
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1:]


def _least_cut(d: dict) -> int | None:
    """The fewest weighted pairs split by a partition that every limit of ``d`` allows, by trying
    them all (None when none does)."""
    best = None
    for part in _partitions(list(range(d["E"]))):
        ok = True
        for block in part:
            if any((min(e, f), max(e, f)) in d["apart"] for e in block for f in block if e != f):
                ok = False
            for need, cap in d["rows"]:
                if sum(need[e] for e in block) > cap + 1e-9:
                    ok = False
            for members, k in d["limit"]:
                if sum(1 for e in block if e in members) > k:
                    ok = False
            if not ok:
                break
        if not ok:
            continue
        where = {e: i for i, block in enumerate(part) for e in block}
        cut = sum(w for (e, f), w in d["pairs"].items() if where[e] != where[f])
        best = cut if best is None else min(best, cut)
    return best


def _random_cut_data(rng: random.Random) -> dict:
    E = rng.randint(2, 7)
    pairs = {}
    for e in range(E):
        for f in range(e + 1, E):
            if rng.random() < 0.5:
                pairs[(e, f)] = rng.randint(1, 3)
    if not pairs:
        pairs[(0, 1)] = 1
    apart = {(e, f) for e in range(E) for f in range(e + 1, E) if rng.random() < 0.1}
    rows = [([float(rng.choice([0, 64, 128, 256])) for _ in range(E)], float(rng.choice([256, 384, 512]))),
            ([float(rng.choice([5, 10, 20])) for _ in range(E)], float(rng.choice([30, 40, 100])))]
    limit = []
    if rng.random() < 0.3:
        members = sorted(rng.sample(range(E), min(E, 3)))
        limit.append((members, rng.randint(1, 2)))
    return {"E": E, "pairs": pairs, "apart": apart, "rows": rows, "limit": limit,
            "executor": [("c", e) for e in range(E)]}


def test_worker_cut_is_the_least_cut_of_every_partition():
    """On 150 random cut models (up to 7 executors, with on-heap and CPU rows, pairs kept apart
    and a per-node limit), CP-SAT's proven cut equals the least cut over every partition that
    the limits allow, and its partition splits that many pairs and respects the limits; a model
    that no partition satisfies gives None."""
    rng = random.Random(7)
    proven = positive = none = 0
    for case in range(150):
        d = _random_cut_data(rng)
        ref = _least_cut(d)
        got = W.worker_cut(d, 10.0, threads=2)
        if ref is None:
            assert got is None, case
            none += 1
            continue
        assert got is not None and got["proven"], case
        assert got["cut"] == ref, (case, got["cut"], ref)
        where = {e: i for i, g in enumerate(got["groups"]) for e in g}
        assert sorted(where) == list(range(d["E"]))
        assert sum(w for (e, f), w in d["pairs"].items() if where[e] != where[f]) == got["found"] == ref
        for g in got["groups"]:
            for need, cap in d["rows"]:
                assert sum(need[e] for e in g) <= cap + 1e-9
        proven += 1
        positive += ref > 0
    assert proven >= 100 and positive >= 40, (proven, positive, none)
    # an executor above a worker's on-heap: no partition at all
    d = _random_cut_data(random.Random(1))
    d["rows"][0][0][0] = d["rows"][0][1] + 1.0
    assert _least_cut(d) is None and W.worker_cut(d, 5.0, threads=2) is None


def test_bound_with_cuts_never_exceeds_the_optimum():
    """network's bound with the worker cuts, and with the node cuts too, is at most brute
    force's proven optimum on random instances (heap, CPU, incompatibilities, max per node,
    pins), and above the bound without them on some (so the check has teeth)."""
    raised = raised_n = checked = 0
    for seed, inst, ref, pm in proven_small_network(80):
        cuts = {"W": {}, "N": {}}
        for ti, _ in pm.topos:
            for lvl in "WN":
                d = W.cut_data(pm, ti, lvl)
                if d is not None:
                    got = W.worker_cut(d, 10.0, threads=2)
                    if got is not None:
                        assert got["proven"]
                        cuts[lvl][ti] = got["cut"]
        b0 = sum(count_bounds(pm).values())
        b = sum(count_bounds(pm, cuts["W"]).values())
        bn = sum(count_bounds(pm, cuts["W"], node_cuts=cuts["N"]).values())
        assert b0 - 1e-12 <= b <= bn <= ref.objective + 1e-9, (seed, b0, b, bn, ref.objective)
        checked += 1
        raised += b > b0 + 1e-9
        raised_n += bn > b + 1e-9
    assert checked >= 50 and raised >= 5 and raised_n >= 10, (checked, raised, raised_n)


def test_exact_methods_agree_with_bruteforce_where_the_cut_raises_the_bound():
    """Where the cut raises the bound, the exact methods still reach brute force's optimum and
    their bound stays at or below it."""
    done = 0
    for seed in range(80):
        inst = parse_instance(small_random("network", seed))
        groups = [g for ti, t in enumerate(inst.topologies) for g in component_groups(ti, t)]
        pm = PlacementModel(inst, "network", groups, build=False)
        if all(W.cut_data(pm, ti) is None for ti, _ in pm.topos):
            continue
        ref = planner.solve(inst, "network", "exact.bruteforce")
        if ref.status.value != "optimal":
            continue
        for method in ("exact.cpsat", "exact.milp-highs"):
            r = planner.solve(inst, "network", method, time_limit=30)
            assert r.status.value == "optimal", (seed, method, r.message)
            assert r.objective == pytest.approx(ref.objective, abs=1e-9), (seed, method)
            assert r.bound <= ref.objective + 1e-9
            m = planner.evaluate(inst, r.plan, "network")
            assert m["feasible"] and m["network_metric"] == pytest.approx(r.objective, abs=1e-9)
        done += 1
    assert done >= 10, done


def test_cut_data_leaves_out_topologies_that_fit_one_worker():
    d = {"topologies": [{"id": "t", "max_heap_mb": 1024, "components": [
        {"id": "a", "parallelism": 2, "memory_onheap_mb": 128}, {"id": "b", "parallelism": 2, "memory_onheap_mb": 128}],
        "streams": [{"source": "a", "target": "b"}]}],
        "cluster": {"racks": [{"id": "r", "nodes": [{"id": "n0", "slots": 2, "cpu": 400, "memory_mb": 4096}]}]}}
    inst = parse_instance(d)
    pm = PlacementModel(inst, "network", component_groups(0, inst.topologies[0]), build=False)
    assert W.cut_data(pm, 0) is None  # 512 MB in one 1,024 MB worker: the cut is 0
    d["topologies"][0]["max_heap_mb"] = 300
    inst = parse_instance(d)
    pm = PlacementModel(inst, "network", component_groups(0, inst.topologies[0]), build=False)
    data = W.cut_data(pm, 0)
    got = W.worker_cut(data, 5.0, threads=2)
    # two executors per worker at most: the best split keeps an a with a b, twice (4 pairs, 2 kept)
    assert got["proven"] and got["cut"] == 2
    # the count cut's LP: contents (1, 1) twice keep 2 of the 4 pairs; one node holds them all
    assert W.count_cuts(pm, 0) == {"W": 2}
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=20)
    assert r.status.value == "optimal" and r.objective == pytest.approx(2 / 4)


@pytest.mark.slow  # slow tier since session 38 (6 s; the default suite took 778-788 s on its machine)
def test_topology_alone_on_storm_cluster_proven_by_the_cut(shared):
    """Storm's TopologyName00009 (35 executors, 3,872 MB of on-heap, 2,048 MB heap) alone on
    largeCluster03's nodes: every stream fits one worker, so the counting bound is 0 and no
    model proved the plan (feasible 0.657 / 0 at 30 s, session 29). The cut (23 pairs) proves it."""
    from planner.storm import load_cluster_dir

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / "largeCluster03", ackers="conf")
    t = next(t for t in inst.topologies if t.id == "TopologyName00009")
    one = inst.model_copy(update={"topologies": [t]})
    r = planner.solve(one, "network", "exact.cpsat", time_limit=30)
    assert r.status.value == "optimal", r.message
    assert r.objective == pytest.approx(23 / 35) and r.bound == pytest.approx(23 / 35, abs=1e-9)
    assert r.metrics["feasible"] and r.details["worker_cuts"]["proven"] == 1


@pytest.mark.slow  # slow tier since session 38 (21 s; the default suite took 778-788 s on its machine)
def test_node_cut_of_a_storm_topology_wider_than_a_node(shared):
    """Storm's TopologyName00001 (53 executors) needs 4.4 nodes' CPU of largeCluster03: the
    counting bound's node level is 4 pairs, its node cut is over 200 in 3 s here (237 proven as a
    bound in 20 s; the best grouping found splits 265), and the solve's bound rises with it."""
    from planner.storm import load_cluster_dir

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / "largeCluster03", ackers="conf")
    t = next(t for t in inst.topologies if t.id == "TopologyName00001")
    one = inst.model_copy(update={"topologies": [t]})
    pm = PlacementModel(one, "network", component_groups(0, t), build=False)
    from formulations.network import count_excess

    assert count_excess(pm)[0][1] == 4
    d = W.cut_data(pm, 0, "N")
    assert d["apart"] == set() and d["rows"][0][1] == 1100.0
    got = W.worker_cut(d, 10.0)  # 3 s found nothing in a clean-clone CI run on a slow machine
    assert got is not None and 200 <= got["cut"] <= got["found"]
    r = planner.solve(one, "network", "exact.cpsat", time_limit=10)
    assert r.metrics["feasible"] and r.bound <= r.objective + 1e-9
    assert r.bound >= (count_excess(pm)[0][0] + 200) / 53, r.bound  # 6.02 without the node cut


def test_a_failing_cut_costs_its_bound_not_the_solve(monkeypatch):
    """A cut that raises is named in the message, and the solve goes on to its plan and a
    bound without it."""
    def boom(*a, **k):
        raise RuntimeError("cut model broke")

    monkeypatch.setattr(W, "worker_cut", boom)
    # an instance whose optimum is above the counting bound, so the cut is tried
    inst = next(inst for _, inst, ref, pm in proven_small_network(80)
                if any(W.cut_data(pm, ti) is not None for ti, _ in pm.topos)
                and sum(count_bounds(pm).values()) < ref.objective - 1e-6)
    r = planner.solve(inst, "network", "exact.cpsat", time_limit=20)
    assert r.ok and r.metrics["feasible"]
    assert "worker cut of" in r.message and "cut model broke" in r.message


def _one_topology_needing_a_cut(n: int):
    """proven_small_network's instances of one topology with a worker cut modelled, whose
    optimum is above the counting bound (so no plan meets the bound without a cut)."""
    for seed, inst, ref, pm in proven_small_network(n):
        if len(inst.topologies) == 1 and W.cut_data(pm, 0) is not None \
                and sum(count_bounds(pm).values()) < ref.objective - 1e-9:
            yield seed, inst, ref, pm


@pytest.mark.slow  # slow tier since session 38 (8 s; the default suite took 778-788 s on its machine)
def test_cuts_take_the_configuration_models_time_when_no_node_table_is_built(monkeypatch):
    """One topology whose node tables are refused: the cuts not proven early run before column
    generation, until the late end (details "worker_cuts_untabled"), and the result still
    agrees with brute force. The tables are refused here by stubbing their builder, and the
    early cuts are given no time (CUT_SHARE 0), so only the new call can prove the bound."""
    import formulations._nodetable as NT
    import formulations.network as N

    monkeypatch.setattr(NT, "node_table", lambda *a, **k: None)
    monkeypatch.setattr(N, "CUT_SHARE", 0.0)
    done = 0
    for seed, inst, ref, pm in _one_topology_needing_a_cut(120):
        r = planner.solve(inst, "network", "exact.cpsat", time_limit=20)
        assert r.metrics["feasible"] and r.objective >= ref.objective - 1e-9, seed
        assert r.bound <= ref.objective + 1e-9, seed
        if "worker_cuts_untabled" in r.details:
            assert r.details["worker_cuts"]["solved"] == 0, seed  # the early call had no time
            assert r.details["worker_cuts_untabled"]["solved"] >= 1, seed
            assert r.status.value == "optimal" and r.objective == pytest.approx(ref.objective), (seed, r.message)
            done += 1
    assert done >= 10, done


@pytest.mark.slow  # slow tier since session 38 (5 s; the default suite took 778-788 s on its machine)
def test_a_sub_solve_takes_the_whole_solves_proven_cut_without_computing_it(monkeypatch):
    """The topology search's whole sub-solves get the whole solve's cut of their topology
    (``Run.known_cut``): a proven one is not computed again and raises the sub-solve's floor
    from the start, and the result still agrees with brute force."""
    from formulations._rasmodel import Run
    from formulations.network import solve_network

    calls = []
    real = W.worker_cut
    monkeypatch.setattr(W, "worker_cut", lambda *a, **k: calls.append(1) or real(*a, **k))
    done = 0
    for seed, inst, ref, pm in _one_topology_needing_a_cut(120):
        known = {}
        for lvl in "WN":
            if (d := W.cut_data(pm, 0, lvl)) is not None:
                got = real(d, 10.0, threads=2)
                assert got is not None and got["proven"], seed
                known[lvl] = got["cut"]
        with_cut = sum(count_bounds(pm, {0: known["W"]}, node_cuts={0: known.get("N", 0)}).values())
        calls.clear()
        run = Run(inst, "network", "exact.cpsat", 20.0, None, None, True, 0)
        run.sub_solve = True
        run.known_cut = tuple(((0, lvl), (c, True)) for lvl, c in known.items())
        r = solve_network(run)
        assert not calls, seed  # the known proven cut is not computed again
        m = planner.evaluate(inst, r.plan, "network")
        assert r.status.value == "optimal" and m["feasible"], (seed, r.message)
        assert m["network_metric"] == pytest.approx(ref.objective), seed
        assert with_cut - 1e-9 <= r.bound <= ref.objective + 1e-9, seed
        done += 1
    assert done >= 10, done


def test_count_cuts_never_exceed_the_optimum():
    """The bound with the count cuts (the LP over each topology's worker and node contents) is
    at most brute force's optimum on random instances, and above the counting bound on many
    (teeth). (The executor cut is no reference for it: that one leaves out pins, sites and
    resources, so it may be the lower.) A first version took every node kind's slots from its
    first node (node kinds do not look at slots) and claimed 0.8 where the optimum is 0.4."""
    checked = raised = racks = 0
    for seed, inst, ref, pm in proven_small_network(80):
        counts = {"W": {}, "N": {}, "R": {}}
        for ti, _ in pm.topos:
            for lvl, cut in W.count_cuts(pm, ti).items():
                counts[lvl][ti] = cut
        b0 = sum(count_bounds(pm).values())
        b = sum(count_bounds(pm, counts["W"], node_cuts=counts["N"], rack_cuts=counts["R"]).values())
        assert b0 - 1e-12 <= b <= ref.objective + 1e-9, (seed, b0, b, ref.objective)
        checked += 1
        raised += b > b0 + 1e-9
        racks += len(counts["R"])
    # the rack level (topologies no rack holds alone) on 8 of these: each above the counting
    # bound's rack level, 0 on all of them
    assert checked >= 50 and raised >= 20 and racks >= 5, (checked, raised, racks)


def test_count_cuts_priced_by_cp_sat_equal_the_enumerated_ones(monkeypatch):
    """Where the contents pass the enumeration's cap the LP's columns are priced by CP-SAT
    (:class:`_workercut._ModelPricer`); both reach the same LP optimum, so on random instances
    the priced cuts equal the enumerated ones level by level (the duals rounded down at 1e-6 can
    only lower the priced cut, which the assertion would see), and stay within brute force's
    optimum. Leaving out the dominated node kinds (``_maximal``) changes no cut."""
    pairs = compared = 0
    priced_calls = []
    real_call = W._ModelPricer.__call__

    def counted(self, y):
        priced_calls.append(self.apart)
        return real_call(self, y)

    for seed, inst, ref, pm in proven_small_network(60):
        for ti, _ in pm.topos:
            enum = W.count_cuts(pm, ti)
            with monkeypatch.context() as m:
                m.setattr(W, "COUNT_CONTENTS_MAX", 0)  # every level past the cap
                m.setattr(W._ModelPricer, "__call__", counted)
                priced = W.count_cuts(pm, ti)
            with monkeypatch.context() as m:
                m.setattr(W, "_maximal", lambda kinds: list(range(len(kinds))))
                every_kind = W.count_cuts(pm, ti)
            assert priced == enum == every_kind, (seed, ti, enum, priced, every_kind)
            pairs += len(enum)
            compared += 1
    assert compared >= 40 and pairs >= 40 and {True, False} <= set(priced_calls), (compared, pairs)


def test_maximal_kinds_drop_only_dominated_kinds():
    """A node kind with no more CPU, memory or slots than another and no larger cap of any group
    holds no content the other does not, so it is left out; kinds that each exceed the other
    somewhere are both kept."""
    doc = {"name": "kinds",
           "topologies": [{"id": "t", "max_heap_mb": 1000, "components": [
               {"id": "a", "parallelism": 6, "cpu": 50, "memory_onheap_mb": 300, "memory_offheap_mb": 0},
               {"id": "b", "parallelism": 6, "cpu": 30, "memory_onheap_mb": 200, "memory_offheap_mb": 0}],
               "streams": [{"source": "a", "target": "b"}]}],
           "cluster": {"racks": [{"id": "r", "nodes": [
               {"id": "big", "cpu": 400, "memory_mb": 4000, "slots": 2},
               {"id": "small", "cpu": 200, "memory_mb": 2000, "slots": 2},
               {"id": "wide", "cpu": 100, "memory_mb": 8000, "slots": 4}]}]}}
    inst = parse_instance(doc)
    t = inst.topologies[0]
    pm = PlacementModel(inst, "network", component_groups(0, t), build=False)
    ks = [k for k, g in enumerate(pm.groups) if g.ti == 0]
    kinds = [W._kind_limits(pm, ks, ni, 1000, True) for ni in (0, 1, 2)]
    assert W._maximal(kinds) == [0, 2]
    assert W._maximal([kinds[1], kinds[0]]) == [1]


def test_count_cut_of_a_wide_storm_topology(shared):
    """Storm's largeCluster01 TopologyName00004 (200 executors in 2 components, past the
    executor cut's 60) needs more than one node: the counting bound's node level is 0, the
    count cut's 5,000 pairs (its LP over 5,150 node contents), which the solve's bound takes."""
    from planner.storm import load_cluster_dir
    from formulations.network import count_excess

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / "largeCluster01", ackers="none")
    t = next(t for t in inst.topologies if t.id == "TopologyName00004")
    one = inst.model_copy(update={"topologies": [t]})
    pm = PlacementModel(one, "network", component_groups(0, t), build=False)
    assert count_excess(pm)[0] == [9900, 0, 0]
    assert W.count_cuts(pm, 0) == {"W": 9900, "N": 5000}
    r = planner.solve(one, "network", "exact.cpsat", time_limit=10)
    assert r.metrics["feasible"] and r.bound >= (9900 + 5000) / 200 - 1e-9 and r.bound <= r.objective + 1e-9


@pytest.mark.slow  # slow tier since session 38 (6-11 s; the default suite took 778-788 s on its machine)
def test_priced_count_cut_of_a_storm_topology_past_the_cap(shared):
    """Storm's largeCluster01 TopologyName00023 (5,402 executors in 6 components) has more node
    contents than the enumeration's cap; priced by CP-SAT, its node-level count cut is 5,734,914
    pairs where the counting bound's node level is 5,131,025 (+111.8 on its share of the
    metric). Each pricing's bound is CP-SAT's proven one, so the cut is exact up to the duals'
    rounding."""
    from planner.storm import load_cluster_dir
    from formulations.network import count_excess

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / "largeCluster01", ackers="none")
    t = next(t for t in inst.topologies if t.id == "TopologyName00023")
    one = inst.model_copy(update={"topologies": [t]})
    pm = PlacementModel(one, "network", component_groups(0, t), build=False)
    assert count_excess(pm)[0][1] == 5131025
    got = W.count_cuts(pm, 0)
    assert got["W"] == 6052238 and abs(got["N"] - 5734914) <= 2, got


def test_rack_cut_of_a_storm_topology_wider_than_a_rack(shared):
    """Storm's largeCluster03 TopologyName00047 (976 executors in 17 components, 2.84 million MB
    of memory against a rack's 2.35 million) must span both racks; every stream alone fits a
    rack, so the counting bound's rack level is 0. The rack-level count cut is the least split
    of its counts over the two racks: 27,840 pairs (CP-SAT proves it with and without the rows
    that order the two alike racks: 0.1 s and about 12 s)."""
    from planner.storm import load_cluster_dir
    from formulations.network import count_excess

    inst = load_cluster_dir(shared / "data" / "storm-largecluster" / "largeCluster03", ackers="conf")
    t = next(t for t in inst.topologies if t.id == "TopologyName00047")
    one = inst.model_copy(update={"topologies": [t]})
    pm = PlacementModel(one, "network", component_groups(0, t), build=False)
    assert count_excess(pm)[0][2] == 0
    assert W.count_cuts(pm, 0, time.monotonic() + 60).get("R") == 27840


def test_solves_with_count_cuts_in_place_of_executor_cuts_agree_with_bruteforce(monkeypatch):
    """With the executor cuts' size limit at 0, every topology gets the count cuts in the solve
    instead (as the wide ones past 60 executors do): the exact methods still reach brute force's
    optimum, with a bound at or below it, and the count cuts raise the bound on some. The node
    tables are refused (their memory budget 0): since session 34 one topology's count cuts run
    only where the configuration model has no node table."""
    monkeypatch.setattr(W, "CUT_EXECUTORS_MAX", 0)
    monkeypatch.setattr(_nodetable, "TABLE_BYTES", 0)
    done = raised = 0
    for seed, inst, ref, pm in proven_small_network(60):
        r = planner.solve(inst, "network", "exact.cpsat", time_limit=20)
        assert r.status.value == "optimal" and r.objective == pytest.approx(ref.objective), (seed, r.message)
        assert r.bound <= ref.objective + 1e-9 and r.metrics["feasible"], seed
        assert "worker_cuts" not in r.details or r.details["worker_cuts"]["solved"] == 0, seed
        raised += r.details.get("count_cuts", {}).get("raised", 0) > 0
        done += 1
    assert done >= 40 and raised >= 10, (done, raised)
