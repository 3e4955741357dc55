"""The instance model: topologies, clusters, profiles, performance models, users.

Everything a placement or allocation problem needs is one :class:`Instance`. Units and
Storm's defaults live here, once:

* CPU is in Storm points (100 = one core) for executors and nodes alike.
* Memory is in MB.
* Rates are tuples per second.
* Machine profiles give the execution time per tuple ``exec_ms`` (ms) and a fixed
  overhead ``overhead`` (CPU points) of one instance of a component on a machine type,
  so that an instance receiving ``r`` tuples/s uses ``r * exec_ms / 10 + overhead`` points.
* Performance models (Shukla and Simmhan) are measured on one slot: CPU and memory in
  percent of a slot above idle; a slot holds at most 100 % of each.

Bad input raises :class:`InstanceError`, which names the JSON path and the reason.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

# Storm's defaults (Config.java / defaults.yaml).
DEFAULT_CPU = 10.0  # topology.component.cpu.pcore.percent
DEFAULT_ONHEAP_MB = 128.0  # topology.component.resources.onheap.memory.mb
DEFAULT_OFFHEAP_MB = 0.0  # topology.component.resources.offheap.memory.mb
DEFAULT_MAX_HEAP_MB = 768.0  # topology.worker.max.heap.size.mb
# Sizes past any Storm cluster (Storm's largest published production clusters have about 2,000
# executors): an instance beyond them is a typo, and expanding it (a slot list, an executor list)
# would take the machine's memory before any method could say so. HTTP servers cap lower (--max-size).
MAX_EXECUTORS = 1_000_000  # executors in one instance, all topologies together
MAX_SLOTS = 1_000_000  # worker slots in one cluster
FIRST_PORT = 6700  # a slot count n stands for ports 6700 .. 6700 + n - 1, Storm's default numbering
MAX_SLOT_COUNT = 65536 - FIRST_PORT  # the ports up to 65535
DEFAULT_NODE_CPU = 400.0  # supervisor.cpu.capacity
DEFAULT_NODE_MEMORY_MB = 4096.0  # supervisor.memory.capacity.mb
DEFAULT_PORTS = tuple(range(FIRST_PORT, FIRST_PORT + 4))  # supervisor.slots.ports: 6700-6703
DEFAULT_RACK = "default-rack"

Grouping = Literal["shuffle", "local_or_shuffle", "fields", "all", "global", "direct", "none", "custom"]
Routing = Literal["even", "weighted"]


class InstanceError(ValueError):
    """Bad input: ``problems`` is a list of (json_path, reason)."""

    def __init__(self, problems: list[tuple[str, str]] | str, reason: str | None = None):
        if isinstance(problems, str):
            problems = [(problems, reason or "invalid")]
        self.problems = problems
        super().__init__("; ".join(f"{p}: {r}" for p, r in problems))

    @property
    def path(self) -> str:
        return self.problems[0][0]

    @property
    def reason(self) -> str:
        return self.problems[0][1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": "invalid_input",
            "detail": str(self),
            "path": self.path,
            "problems": [{"path": p, "reason": r} for p, r in self.problems],
        }


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


NonNeg = Field(ge=0)


class Component(_Base):
    """A spout or bolt; ``parallelism`` executors, each asking for the resources below."""

    id: str = Field(min_length=1)
    kind: Literal["spout", "bolt"] = "bolt"
    parallelism: int = Field(default=1, ge=1, le=MAX_EXECUTORS, description="executors (threads)")
    cpu: float = Field(default=DEFAULT_CPU, ge=0, description="CPU points per executor")
    memory_onheap_mb: float = Field(default=DEFAULT_ONHEAP_MB, ge=0)
    memory_offheap_mb: float = Field(default=DEFAULT_OFFHEAP_MB, ge=0)
    resources: dict[str, float] = Field(default_factory=dict, description="generic resources per executor, e.g. gpu")
    profile: str | None = Field(default=None, description="machine-profile key (throughput); default: the component id")
    perf_model: str | None = Field(default=None, description="performance-model name (slots); default: the component id")
    # placement constraints
    site: str | None = Field(default=None, description="pin every executor to nodes of this site")
    nodes: list[str] | None = Field(default=None, description="pin every executor to these nodes")
    max_per_node: int | None = Field(default=None, ge=1, description="at most k executors of this component per node")
    incompatible: list[str] = Field(
        default_factory=list,
        description="components never in the same worker as this one (symmetric); itself = one executor per worker",
    )

    @field_validator("resources")
    @classmethod
    def _nonneg_resources(cls, v: dict[str, float]) -> dict[str, float]:
        for k, x in v.items():
            if x < 0 or not math.isfinite(x):
                raise ValueError(f"resource {k!r} must be a finite number >= 0, got {x}")
        return v

    @property
    def memory_mb(self) -> float:
        return self.memory_onheap_mb + self.memory_offheap_mb


class Stream(_Base):
    """Tuples flowing from ``source`` to ``target``."""

    source: str
    target: str
    grouping: Grouping = "shuffle"
    selectivity: float = Field(default=1.0, ge=0, description="output tuples per input tuple")
    stream_id: str = "default"


class TrafficEntry(_Base):
    """A measured executor-to-executor rate (tuples/s); when present it wins over derived traffic."""

    source: str
    source_index: int = Field(ge=0)
    target: str
    target_index: int = Field(ge=0)
    rate: float = Field(ge=0)


class Topology(_Base):
    id: str = Field(min_length=1)
    components: list[Component] = Field(min_length=1)
    streams: list[Stream] = Field(default_factory=list)
    workers: int | None = Field(default=None, ge=1, description="topology.workers (number of worker slots asked for)")
    max_heap_mb: float = Field(default=DEFAULT_MAX_HEAP_MB, ge=0, description="topology.worker.max.heap.size.mb")
    input_rate: float | None = Field(default=None, ge=0, description="tuples/s into each spout (target rate for slots)")
    routing: Routing = Field(default="even", description="how a component's rate splits over its instances (throughput)")
    priority: int = Field(default=0, description="0 is most important; larger is less")
    owner: str | None = None
    submitted: float = Field(default=0.0, description="submission time, for ordering within a user")
    traffic: list[TrafficEntry] | None = None

    def component(self, cid: str) -> Component:
        for c in self.components:
            if c.id == cid:
                return c
        raise KeyError(cid)

    @property
    def component_ids(self) -> list[str]:
        return [c.id for c in self.components]

    @property
    def executor_count(self) -> int:
        return sum(c.parallelism for c in self.components)

    def executors(self) -> list[tuple[str, int]]:
        """(component, index) for every executor, sorted by component id then index (Storm's task order)."""
        return [(c.id, i) for c in sorted(self.components, key=lambda c: c.id) for i in range(c.parallelism)]


class Node(_Base):
    """A supervisor: worker slots (ports), CPU points, memory MB and optional attributes."""

    id: str = Field(min_length=1)
    slots: list[int] = Field(default_factory=lambda: list(DEFAULT_PORTS), description="worker ports; an int n means n ports from 6700")
    cpu: float = Field(default=DEFAULT_NODE_CPU, ge=0)
    memory_mb: float = Field(default=DEFAULT_NODE_MEMORY_MB, ge=0)
    type: str | None = Field(default=None, description="machine type (throughput profiles)")
    site: str | None = None
    cpu_mhz: float | None = Field(default=None, ge=0)
    resources: dict[str, float] = Field(default_factory=dict, description="generic resources, e.g. gpu")
    price: float | None = Field(default=None, ge=0, description="cost of using this node (VM price), slots problem")

    @field_validator("slots", mode="before")
    @classmethod
    def _slots(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("slots must be a port list or a count")
        if isinstance(v, int):
            if v < 0:
                raise ValueError(f"slot count must be >= 0, got {v}")
            if v > MAX_SLOT_COUNT:
                raise ValueError(f"slot count {v} is more than the ports {FIRST_PORT}-65535 can number "
                                 f"(at most {MAX_SLOT_COUNT}); give a port list for other ports")
            return list(range(FIRST_PORT, FIRST_PORT + v))
        return v

    @field_validator("slots")
    @classmethod
    def _unique_ports(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            raise ValueError("duplicate ports")
        if any(p < 0 for p in v):
            raise ValueError("ports must be >= 0")
        return sorted(v)

    @field_validator("resources")
    @classmethod
    def _nonneg_resources(cls, v: dict[str, float]) -> dict[str, float]:
        return Component._nonneg_resources(v)


class Rack(_Base):
    id: str = Field(min_length=1)
    nodes: list[Node] = Field(default_factory=list)


class Cluster(_Base):
    racks: list[Rack] = Field(min_length=1)

    @property
    def nodes(self) -> list[Node]:
        return [n for r in self.racks for n in r.nodes]

    def rack_of(self) -> dict[str, str]:
        return {n.id: r.id for r in self.racks for n in r.nodes}

    def node(self, nid: str) -> Node:
        for n in self.nodes:
            if n.id == nid:
                return n
        raise KeyError(nid)


class MachineProfile(_Base):
    """Cost of one instance of a component profile on a machine type (Nasiri et al.)."""

    profile: str = Field(description="component profile key (usually the component id)")
    machine_type: str
    exec_ms: float = Field(gt=0, description="execution time per tuple, ms")
    overhead: float = Field(default=0.0, ge=0, description="fixed CPU points per instance (MET)")


class PerfPoint(_Base):
    threads: int = Field(ge=1)
    rate: float | None = Field(default=None, ge=0, description="peak tuples/s on one slot; null = unbounded")
    cpu: float = Field(ge=0, description="CPU % of a slot")
    memory: float = Field(ge=0, description="memory % of a slot")


class PerfModel(_Base):
    """Threads on one slot -> (peak rate, CPU %, memory %), Shukla and Simmhan section 5."""

    name: str
    points: list[PerfPoint] = Field(min_length=1)
    interpolate: bool = Field(default=False, description="allow thread counts between modelled ones (linear)")

    @field_validator("points")
    @classmethod
    def _sorted_unique(cls, v: list[PerfPoint]) -> list[PerfPoint]:
        ts = [p.threads for p in v]
        if len(set(ts)) != len(ts):
            raise ValueError("duplicate thread counts")
        return sorted(v, key=lambda p: p.threads)


class User(_Base):
    id: str
    cpu: float = Field(default=0.0, ge=0, description="guaranteed CPU points")
    memory_mb: float = Field(default=0.0, ge=0, description="guaranteed memory MB")


class Params(_Base):
    """Problem parameters that are part of the statement (not a method's tuning)."""

    alpha: float = Field(
        default=1.0, ge=0, le=1,
        description="traffic problem: at most M(alpha) = ceil(E/S) + ceil(alpha (E - S + 1 - ceil(E/S))) executors per worker",
    )
    slot_usage: Literal["peak", "rate"] = Field(
        default="peak",
        description="slots problem: q threads of a task in a slot use the model's CPU/memory at q threads ('peak'), "
        "or that row scaled by the rate they take over their peak rate ('rate', Shukla and Simmhan's linear scale-down)",
    )


class Instance(_Base):
    name: str = "instance"
    description: str | None = None
    topologies: list[Topology] = Field(min_length=1)
    cluster: Cluster
    machine_profiles: list[MachineProfile] = Field(default_factory=list)
    perf_models: list[PerfModel] = Field(default_factory=list)
    users: list[User] = Field(default_factory=list)
    params: Params = Field(default_factory=Params)
    meta: dict[str, Any] = Field(default_factory=dict, description="generator, parameters, seed, source")

    @model_validator(mode="after")
    def _references(self) -> "Instance":
        check_references(self)
        return self

    # convenience -----------------------------------------------------------------------
    def topology(self, tid: str) -> Topology:
        for t in self.topologies:
            if t.id == tid:
                return t
        raise KeyError(tid)

    def profile(self, profile: str, machine_type: str | None) -> MachineProfile | None:
        for p in self.machine_profiles:
            if p.profile == profile and p.machine_type == machine_type:
                return p
        return None

    def perf_model(self, name: str) -> PerfModel | None:
        for m in self.perf_models:
            if m.name == name:
                return m
        return None

    @property
    def size(self) -> dict[str, int]:
        return {
            "topologies": len(self.topologies),
            "components": sum(len(t.components) for t in self.topologies),
            "executors": sum(t.executor_count for t in self.topologies),
            "racks": len(self.cluster.racks),
            "nodes": len(self.cluster.nodes),
            "slots": sum(len(n.slots) for n in self.cluster.nodes),
        }


class _RefError(ValueError):
    pass


def _dupes(ids: list[str]) -> list[int]:
    seen: set[str] = set()
    out = []
    for i, x in enumerate(ids):
        if x in seen:
            out.append(i)
        seen.add(x)
    return out


def check_references(inst: Instance) -> None:
    """Cross-field checks pydantic cannot express: ids, references, acyclicity."""
    problems: list[tuple[str, str]] = []
    for i in _dupes([t.id for t in inst.topologies]):
        problems.append((f"topologies[{i}].id", f"duplicate topology id {inst.topologies[i].id!r}"))
    for i in _dupes([r.id for r in inst.cluster.racks]):
        problems.append((f"cluster.racks[{i}].id", f"duplicate rack id {inst.cluster.racks[i].id!r}"))
    node_ids = []
    node_paths = []
    for ri, r in enumerate(inst.cluster.racks):
        for ni, n in enumerate(r.nodes):
            node_ids.append(n.id)
            node_paths.append(f"cluster.racks[{ri}].nodes[{ni}].id")
    for i in _dupes(node_ids):
        problems.append((node_paths[i], f"duplicate node id {node_ids[i]!r}"))
    if not node_ids:
        problems.append(("cluster.racks", "the cluster has no nodes"))
    slots = sum(len(n.slots) for n in inst.cluster.nodes)
    if slots > MAX_SLOTS:
        problems.append(("cluster.racks", f"the cluster has {slots:,} worker slots; the planner takes at most {MAX_SLOTS:,}"))
    executors = sum(t.executor_count for t in inst.topologies)
    if executors > MAX_EXECUTORS:
        problems.append(("topologies", f"the instance has {executors:,} executors; the planner takes at most {MAX_EXECUTORS:,}"))
    node_set = set(node_ids)
    sites = {n.site for n in inst.cluster.nodes if n.site}
    for i in _dupes([m.name for m in inst.perf_models]):
        problems.append((f"perf_models[{i}].name", f"duplicate performance model {inst.perf_models[i].name!r}"))
    for i in _dupes([u.id for u in inst.users]):
        problems.append((f"users[{i}].id", f"duplicate user id {inst.users[i].id!r}"))
    seen_prof: set[tuple[str, str]] = set()
    for i, p in enumerate(inst.machine_profiles):
        key = (p.profile, p.machine_type)
        if key in seen_prof:
            problems.append((f"machine_profiles[{i}]", f"duplicate profile for {key}"))
        seen_prof.add(key)

    for ti, t in enumerate(inst.topologies):
        base = f"topologies[{ti}]"
        cids = [c.id for c in t.components]
        for i in _dupes(cids):
            problems.append((f"{base}.components[{i}].id", f"duplicate component id {cids[i]!r}"))
        cset = set(cids)
        for ci, c in enumerate(t.components):
            for j, other in enumerate(c.incompatible):
                if other not in cset:
                    problems.append((f"{base}.components[{ci}].incompatible[{j}]", f"unknown component {other!r}"))
            if c.nodes is not None:
                for j, nid in enumerate(c.nodes):
                    if nid not in node_set:
                        problems.append((f"{base}.components[{ci}].nodes[{j}]", f"unknown node {nid!r}"))
            if c.site is not None and c.site not in sites:
                problems.append((f"{base}.components[{ci}].site", f"no node has site {c.site!r}"))
        for si, s in enumerate(t.streams):
            for end in ("source", "target"):
                if getattr(s, end) not in cset:
                    problems.append((f"{base}.streams[{si}].{end}", f"unknown component {getattr(s, end)!r}"))
            if s.source == s.target:
                problems.append((f"{base}.streams[{si}]", f"stream from {s.source!r} to itself makes a cycle"))
        # spouts receive no streams
        for si, s in enumerate(t.streams):
            if s.target in cset and t.component(s.target).kind == "spout":
                problems.append((f"{base}.streams[{si}].target", f"{s.target!r} is a spout; spouts take no input stream"))
        cyc = _find_cycle(cids, [(s.source, s.target) for s in t.streams if s.source in cset and s.target in cset])
        if cyc:
            problems.append((f"{base}.streams", "the streams form a cycle: " + " -> ".join(cyc)))
        if t.traffic:
            par = {c.id: c.parallelism for c in t.components}
            for ei, e in enumerate(t.traffic):
                for end, idx in (("source", e.source_index), ("target", e.target_index)):
                    comp = getattr(e, end)
                    if comp not in par:
                        problems.append((f"{base}.traffic[{ei}].{end}", f"unknown component {comp!r}"))
                    elif idx >= par[comp]:
                        problems.append((f"{base}.traffic[{ei}].{end}_index", f"{comp!r} has {par[comp]} executors; index {idx} is out of range"))
        if t.owner is not None and inst.users and t.owner not in {u.id for u in inst.users}:
            problems.append((f"{base}.owner", f"unknown user {t.owner!r}"))
    if problems:
        raise InstanceError(problems)


def _find_cycle(nodes: list[str], edges: list[tuple[str, str]]) -> list[str] | None:
    adj: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
    color: dict[str, int] = {}
    stack_path: list[str] = []

    def visit(u: str) -> list[str] | None:
        color[u] = 1
        stack_path.append(u)
        for v in adj.get(u, []):
            if color.get(v) == 1:
                return stack_path[stack_path.index(v):] + [v]
            if color.get(v) is None:
                found = visit(v)
                if found:
                    return found
        stack_path.pop()
        color[u] = 2
        return None

    for n in nodes:
        if color.get(n) is None:
            found = visit(n)
            if found:
                return found
    return None


def _loc_to_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "$"


def parse_instance(data: Any, where: str = "") -> Instance:
    """Validate a JSON-like object into an :class:`Instance`, raising :class:`InstanceError`."""
    if isinstance(data, Instance):
        return data
    if not isinstance(data, dict):
        raise InstanceError(where or "$", f"an instance must be a JSON object, got {type(data).__name__}")
    try:
        return Instance.model_validate(data)
    except InstanceError:
        raise
    except ValidationError as e:
        problems = []
        for err in e.errors():
            ctx_err = (err.get("ctx") or {}).get("error")
            if isinstance(ctx_err, InstanceError):
                problems.extend(ctx_err.problems)
                continue
            msg = err["msg"]
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, "):]
            if err["type"] == "extra_forbidden":
                msg = "unknown field"
            problems.append((_loc_to_path(err["loc"]), msg))
        raise InstanceError(problems) from None


def load_instance(path: str | Path) -> Instance:
    """Read and validate an instance JSON file."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InstanceError("$", f"cannot read {p}: {e.strerror or e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InstanceError("$", f"{p} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise InstanceError("$", f"{p} nests JSON too deeply to be an instance") from None
    return parse_instance(data)


def instance_schema() -> dict[str, Any]:
    return Instance.model_json_schema()
