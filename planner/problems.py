"""The problems as data: name, sense, objective, and which hard constraints apply.

Each problem is stated once here and in DESIGN.md; the evaluator checks exactly the
constraints listed, and every method (exact or heuristic) is judged against them.
"""

from __future__ import annotations

from dataclasses import dataclass


# Hard-constraint names, checked by planner.evaluate:
ALL_PLACED = "all_placed"  # every executor of every topology placed exactly once (parallelism counts)
SLOT_EXISTS = "slot_exists"  # node and port exist
ONE_TOPOLOGY_PER_WORKER = "one_topology_per_worker"
NODE_CPU = "node_cpu"  # executor CPU points on a node <= node cpu
NODE_MEMORY = "node_memory"  # on-heap + off-heap MB on a node <= node memory
WORKER_HEAP = "worker_heap"  # on-heap MB in one worker <= topology max heap
GENERIC_RESOURCES = "generic_resources"  # generic resources (gpu, ...) on a node <= node's
PLACEMENT = "placement"  # site and node pins, incompatible components, max per node
WORKER_COUNT = "worker_count"  # exactly min(W, E) workers per topology (traffic)
MAX_PER_WORKER = "max_per_worker"  # at most M(alpha) executors per worker (traffic)
ONE_WORKER_PER_NODE = "one_worker_per_node"  # a topology uses at most one worker per node (throughput)
THROUGHPUT_CAPACITY = "throughput_capacity"  # profiles exist; node CPU at the claimed rate <= capacity
SLOT_MODEL = "slot_model"  # perf models exist; per-slot CPU%, memory% <= 100; rate per slot <= model peak
WHOLE_TOPOLOGIES = "whole_topologies"  # a topology is placed entirely or not at all (admission)

RAS_CONSTRAINTS = frozenset(
    {SLOT_EXISTS, ONE_TOPOLOGY_PER_WORKER, NODE_CPU, NODE_MEMORY, WORKER_HEAP, GENERIC_RESOURCES, PLACEMENT}
)


@dataclass(frozen=True)
class Problem:
    name: str
    sense: str  # "min" or "max"
    objective: str  # the metrics key that is the objective
    constraints: frozenset[str]
    summary: str
    source: str


PROBLEMS: dict[str, Problem] = {
    p.name: p
    for p in [
        Problem(
            "network", "min", "network_metric", RAS_CONSTRAINTS | {ALL_PLACED},
            "place all executors under node CPU/memory, worker heap, slots; minimise the RAS network "
            "metric (0 same worker, 1 same node, 2 same rack, 3 other rack, per executor pair along "
            "each stream, divided by executors; summed over topologies)",
            "Storm RAS document, network metric comparison",
        ),
        Problem(
            "traffic", "min", "inter_node_traffic",
            frozenset({ALL_PLACED, SLOT_EXISTS, ONE_TOPOLOGY_PER_WORKER, NODE_CPU, PLACEMENT, WORKER_COUNT, MAX_PER_WORKER}),
            "exactly min(W, E) workers per topology, at most M(alpha) executors per worker, node CPU "
            "load <= capacity; minimise inter-node traffic (tuples/s), inter-worker traffic breaks ties",
            "Aniello, Baldoni, Querzoni, DEBS 2013, section 3.2.2",
        ),
        Problem(
            "throughput", "max", "sustainable_rate",
            frozenset({ALL_PLACED, SLOT_EXISTS, ONE_TOPOLOGY_PER_WORKER, ONE_WORKER_PER_NODE, PLACEMENT, THROUGHPUT_CAPACITY}),
            "choose instance counts (>= 1) and machines; maximise the input rate such that no machine's "
            "CPU (rate x e / 10 + MET per instance) exceeds its capacity; routing even or weighted",
            "Nasiri et al., J Big Data 2023",
        ),
        Problem(
            "slots", "min", "slots_used",
            frozenset({ALL_PLACED, SLOT_EXISTS, ONE_TOPOLOGY_PER_WORKER, PLACEMENT, SLOT_MODEL}),
            "choose thread counts and their slots so that the target input rate is sustained under the "
            "per-slot performance models; minimise slots used (then VM cost)",
            "Shukla and Simmhan, model-driven scheduling",
        ),
        Problem(
            "feasibility", "min", "violations_count", RAS_CONSTRAINTS | {ALL_PLACED},
            "place every executor of every topology under the RAS hard limits (objective 0 when feasible)",
            "Storm RAS multi-tenant",
        ),
        Problem(
            "admission", "max", "admitted_weight", RAS_CONSTRAINTS | {WHOLE_TOPOLOGIES},
            "place a subset of whole topologies under the RAS hard limits; maximise the priority weight "
            "of the placed ones, weight = (max priority + 1 - priority)",
            "Storm RAS multi-tenant (priorities)",
        ),
    ]
}


def get_problem(name: str) -> Problem:
    try:
        return PROBLEMS[name]
    except KeyError:
        raise KeyError(f"unknown problem {name!r}; known: {', '.join(PROBLEMS)}") from None


def admission_weight(priority: int, max_priority: int) -> int:
    return max_priority + 1 - priority
