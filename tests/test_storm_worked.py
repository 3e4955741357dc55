"""Hand-worked examples for the three RAS-family strategies the sources describe only in words:
original R-Storm (`rstorm`), Storm's RoundRobinResourceAwareStrategy (`storm.ras-roundrobin`)
and the RAS document's round robin (`storm.ras-rr-doc`).

Each expected plan below was worked out by hand from the rules in ../shared/ALGORITHMS.md (the
steps are in the comments), not by running the code; the test then runs the method through
`planner.solve`, so the evaluator also judges the plan.
"""

from __future__ import annotations

import pytest

from planner.api import solve
from planner.model import parse_instance


def _inst(components, streams, racks, max_heap_mb=4096):
    return parse_instance({
        "name": "worked",
        "topologies": [{"id": "t", "workers": 8, "max_heap_mb": max_heap_mb,
                        "components": components, "streams": streams}],
        "cluster": {"racks": racks},
    })


def _where(result) -> dict[tuple[str, int], tuple[str, int]]:
    assert result.ok, (result.status, result.message)
    assert result.metrics["feasible"], result.metrics["violations"][:3]
    return {(p.component, p.executor): (p.node, p.slot) for p in result.plan.placements}


def test_rstorm_worked_example():
    """R-Storm: BFS task order, round robin over BFS ranks; first executor in the rack with most
    CPU + memory on the node nearest its request; then the node minimising
    sqrt((cpu_req - cpu_avail)^2 + (mem_req - mem_avail)^2 + d^2), d = 0 reference node,
    0.5 same rack, 1 other rack; the chosen node becomes the reference.

    Topology s(2) -> a(2) -> b(1), every executor 50 CPU and 500 MB. BFS: s, a, b; executors
    round robin over them: s0, a0, b0, s1, a1.
    Nodes: r1 = {n1: 400 CPU / 4000 MB, n2: 100 / 1000}, r2 = {n3: 300 / 3000}.

    * s0: rack totals r1 5500, r2 3300 -> r1; distance to n1 350^2 + 3500^2, to n2
      50^2 + 500^2 -> n2 (now 50 / 500). Reference n2.
    * a0: n2 is at distance 0 + 0 + 0 -> n2 (now 0 / 0).
    * b0: n2 has no CPU left. n1: 350^2 + 3500^2 + 0.5^2 = 12,372,500.25; n3: 250^2 + 2500^2
      + 1 = 6,312,501 -> n3 (250 / 2500). Reference n3.
    * s1: n1: 12,372,501; n3: 200^2 + 2000^2 = 4,040,000 -> n3 (200 / 2000).
    * a1: n1: 12,372,501; n3: 150^2 + 1500^2 = 2,272,500 -> n3.
    Within a node the lowest port that fits: every executor takes port 6700 of its node.
    Network metric: s->a pairs (s0,a0) 0, (s0,a1) 3, (s1,a0) 3, (s1,a1) 0; a->b pairs (a0,b0) 3,
    (a1,b0) 0; total 9 over 5 executors = 1.8.
    """
    c = {"cpu": 50, "memory_onheap_mb": 500}
    inst = _inst(
        [{"id": "s", "kind": "spout", "parallelism": 2, **c}, {"id": "a", "parallelism": 2, **c},
         {"id": "b", "parallelism": 1, **c}],
        [{"source": "s", "target": "a"}, {"source": "a", "target": "b"}],
        [{"id": "r1", "nodes": [{"id": "n1", "slots": 2, "cpu": 400, "memory_mb": 4000},
                                {"id": "n2", "slots": 2, "cpu": 100, "memory_mb": 1000}]},
         {"id": "r2", "nodes": [{"id": "n3", "slots": 2, "cpu": 300, "memory_mb": 3000}]}])
    r = solve(inst, "network", "rstorm")
    assert _where(r) == {("s", 0): ("n2", 6700), ("a", 0): ("n2", 6700), ("b", 0): ("n3", 6700),
                         ("s", 1): ("n3", 6700), ("a", 1): ("n3", 6700)}
    assert r.objective == pytest.approx(1.8)


def test_rstorm_network_weight_moves_the_choice():
    """With equal resource distances the network term decides. s goes to r1 (most CPU +
    memory) on n1, the node nearest its request (exactly 100 / 100), which it fills. a then
    chooses between n2 (same rack, d = 0.5) and n0 (other rack, d = 1), both 200 / 200: the
    network term picks n2; with the network weight set to 0 the tie falls to the smaller node
    id, n0."""
    c = {"cpu": 100, "memory_onheap_mb": 100}
    inst = _inst(
        [{"id": "s", "kind": "spout", "parallelism": 1, **c}, {"id": "a", "parallelism": 1, **c}],
        [{"source": "s", "target": "a"}],
        [{"id": "r1", "nodes": [{"id": "n1", "slots": 1, "cpu": 100, "memory_mb": 100},
                                {"id": "n2", "slots": 1, "cpu": 200, "memory_mb": 200}]},
         {"id": "r2", "nodes": [{"id": "n0", "slots": 1, "cpu": 200, "memory_mb": 200}]}])
    where = _where(solve(inst, "network", "rstorm"))
    assert where == {("s", 0): ("n1", 6700), ("a", 0): ("n2", 6700)}
    assert _where(solve(inst, "network", "rstorm", wn=0.0))[("a", 0)] == ("n0", 6700)


def test_ras_roundrobin_worked_example():
    """RoundRobinResourceAwareStrategy: nodes sorted once (COMMON keys); a cursor moves to the
    node after the one chosen, wraps, and returns to the first node when the component changes.

    Topology s(1) -> a(4), every executor 100 CPU / 100 MB. Connection-count scores: s 4, a 4;
    the tie goes to the id, so a first, with its neighbour s: a0, s0, a1, a2, a3.
    One rack: n1 300 CPU, n2 200, n3 100 (memory 3000 / 2000 / 1000). Sorted once by the
    average share of the rack's free resources: n1 (1/2), n2 (1/3), n3 (1/6).

    * a0: cursor at n1 -> n1; cursor n2.
    * s0: component changed, cursor back to n1 -> n1 (200 used); cursor n2.
    * a1: component changed, cursor n1 -> n1 (300 used, full); cursor n2.
    * a2: same component, cursor n2 -> n2; cursor n3.
    * a3: cursor n3 -> n3; cursor wraps to n1.
    """
    c = {"cpu": 100, "memory_onheap_mb": 100}
    inst = _inst(
        [{"id": "s", "kind": "spout", "parallelism": 1, **c}, {"id": "a", "parallelism": 4, **c}],
        [{"source": "s", "target": "a"}],
        [{"id": "r1", "nodes": [{"id": "n1", "slots": 1, "cpu": 300, "memory_mb": 3000},
                                {"id": "n2", "slots": 1, "cpu": 200, "memory_mb": 2000},
                                {"id": "n3", "slots": 1, "cpu": 100, "memory_mb": 1000}]}])
    where = _where(solve(inst, "network", "storm.ras-roundrobin"))
    assert where == {("a", 0): ("n1", 6700), ("s", 0): ("n1", 6700), ("a", 1): ("n1", 6700),
                     ("a", 2): ("n2", 6700), ("a", 3): ("n3", 6700)}


def test_ras_roundrobin_gives_up_without_backtracking():
    """Round robin places greedily and never undoes a choice; the backtracking RAS search does.

    Two unconnected spouts x(2) of 100 CPU and y(1) of 300 CPU; nodes n1 300 CPU, n2 200 (one
    slot each). Scores are 0 for both, so the order is by id: x0, x1, y0. Nodes sorted once:
    n1 (share 3/5), n2 (2/5).
    * x0 -> n1 (200 left); cursor n2.  * x1 -> n2 (100 left); cursor wraps to n1.
    * y0: component changed, cursor n1: 200 < 300; n2: 100 < 300 -> nowhere.
    The only plan is y on n1 and both x on n2, which storm.ras finds by backtracking.
    """
    inst = _inst(
        [{"id": "x", "kind": "spout", "parallelism": 2, "cpu": 100, "memory_onheap_mb": 10},
         {"id": "y", "kind": "spout", "parallelism": 1, "cpu": 300, "memory_onheap_mb": 10}],
        [],
        [{"id": "r1", "nodes": [{"id": "n1", "slots": 1, "cpu": 300, "memory_mb": 3000},
                                {"id": "n2", "slots": 1, "cpu": 200, "memory_mb": 2000}]}])
    r = solve(inst, "network", "storm.ras-roundrobin")
    assert r.status.value == "infeasible"
    assert "y[0]" in r.message
    where = _where(solve(inst, "network", "storm.ras"))
    assert where == {("y", 0): ("n1", 6700), ("x", 0): ("n2", 6700), ("x", 1): ("n2", 6700)}


def test_ras_rr_doc_worked_example():
    """The RAS document's round robin: the free slots listed by node id then port; executor i
    (Storm's task order: component id, then index) tries slots from index i onwards, wrapping,
    and takes the first that fits.

    One component a(4) of 100 CPU. Slots: [n1:6700, n1:6701, n2:6700]; n1 has 100 CPU, n2 300.
    * a0 (i = 0): n1:6700 fits -> n1:6700 (n1 full).
    * a1 (i = 1): n1:6701, n1 full; n2:6700 -> n2.
    * a2 (i = 2): n2:6700 -> n2 (100 left).
    * a3 (i = 3 = slot 0): n1:6700, n1:6701 full; n2:6700 -> n2.
    """
    inst = _inst(
        [{"id": "a", "kind": "spout", "parallelism": 4, "cpu": 100, "memory_onheap_mb": 10}],
        [],
        [{"id": "r1", "nodes": [{"id": "n1", "slots": 2, "cpu": 100, "memory_mb": 1000},
                                {"id": "n2", "slots": 1, "cpu": 300, "memory_mb": 3000}]}])
    where = _where(solve(inst, "network", "storm.ras-rr-doc"))
    assert where == {("a", 0): ("n1", 6700), ("a", 1): ("n2", 6700), ("a", 2): ("n2", 6700),
                     ("a", 3): ("n2", 6700)}


def test_ras_rr_doc_skips_slots_of_other_topologies():
    """A slot already holding another topology's worker is not in the list at all (so the
    index arithmetic is over the remaining slots). Topology `u` is placed first (higher
    priority) on n1:6700; `t`'s list is then [n1:6701, n2:6700] and its executors a0, a1 go
    to index 0 and 1."""
    c = {"cpu": 10, "memory_onheap_mb": 10}
    inst = parse_instance({
        "name": "two",
        "topologies": [
            {"id": "u", "priority": 0, "components": [{"id": "x", "kind": "spout", "parallelism": 1, **c}]},
            {"id": "t", "priority": 1, "components": [{"id": "a", "kind": "spout", "parallelism": 2, **c}]}],
        "cluster": {"racks": [{"id": "r1", "nodes": [
            {"id": "n1", "slots": 2, "cpu": 400, "memory_mb": 4000},
            {"id": "n2", "slots": 1, "cpu": 400, "memory_mb": 4000}]}]},
    })
    r = solve(inst, "feasibility", "storm.ras-rr-doc")
    assert r.ok and r.metrics["feasible"]
    where = {(p.topology, p.component, p.executor): (p.node, p.slot) for p in r.plan.placements}
    assert where == {("u", "x", 0): ("n1", 6700), ("t", "a", 0): ("n1", 6701), ("t", "a", 1): ("n2", 6700)}
