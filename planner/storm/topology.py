"""Nimbus's serialized topologies (``*-stormcode.ser`` + ``*-stormconf.ser``) into a Topology.

``stormcode.ser`` is a Thrift binary ``StormTopology`` (gzip-compressed in the large-cluster
data; a raw, uncompressed payload is accepted too), ``stormconf.ser`` the topology's JSON
configuration (gzip or plain). The field mapping and what is dropped are described in
``docs/storm.md``; in short:

* spouts -> components of kind ``spout``, bolts -> ``bolt``; ``parallelism_hint`` (absent:
  1) -> ``parallelism``, as Storm's ``TestLargeCluster`` counts executors;
* each bolt's ``inputs`` map -> one stream per (source component, stream id) with the
  grouping mapped (``fields`` with no field names is Storm's global grouping);
* streams from Storm's system components (``__*``), a bolt's subscription to itself, and
  subscriptions that close a cycle are dropped (the instance model needs a DAG); every
  dropped stream is listed in the import info with its reason;
* resources follow Storm's ``NormalizedResourceRequest``: the component's ``json_conf``
  (legacy keys, overridden by ``topology.component.resources.map``) over the topology
  conf (its resources map, then the acker keys for ``__acker``, then the legacy keys),
  over Storm's defaults (``planner.model``);
* ackers -> a component ``__acker`` fed by every spout and bolt (see :func:`acker_count`).
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..model import (
    DEFAULT_CPU, DEFAULT_MAX_HEAP_MB, DEFAULT_OFFHEAP_MB, DEFAULT_ONHEAP_MB, MAX_EXECUTORS, Component, InstanceError,
    Stream, Topology,
)
from . import thrift as T

ACKER_ID = "__acker"
STORM_DEFAULT_PRIORITY = 29  # defaults.yaml topology.priority
CODE_SUFFIX = "-stormcode.ser"
CONF_SUFFIX = "-stormconf.ser"

# Storm config keys
K_CPU = "topology.component.cpu.pcore.percent"
K_ONHEAP = "topology.component.resources.onheap.memory.mb"
K_OFFHEAP = "topology.component.resources.offheap.memory.mb"
K_RESMAP = "topology.component.resources.map"
K_ACKER_CPU = "topology.acker.cpu.pcore.percent"
K_ACKER_ONHEAP = "topology.acker.resources.onheap.memory.mb"
K_ACKER_OFFHEAP = "topology.acker.resources.offheap.memory.mb"
K_ACKERS = "topology.acker.executors"
K_ACKERS_PER_WORKER = "topology.ras.acker.executors.per.worker"
K_WORKERS = "topology.workers"
K_MAX_HEAP = "topology.worker.max.heap.size.mb"
K_WORKER_HEAP = "worker.heap.memory.mb"
K_PRIORITY = "topology.priority"
K_USER = "topology.submitter.user"
K_TASKS = "topology.tasks"
K_MAX_TASK_PAR = "topology.max.task.parallelism"

# Storm's resource-name normalisation (ResourceNameNormalizer): legacy key -> normalised name
CPU, ONHEAP, OFFHEAP = "cpu.pcore.percent", "onheap.memory.mb", "offheap.memory.mb"
_NORMALISE = {K_CPU: CPU, K_ONHEAP: ONHEAP, K_OFFHEAP: OFFHEAP,
              "supervisor.cpu.capacity": CPU, "supervisor.memory.capacity.mb": "memory.mb"}
_NOT_GENERIC = {CPU, ONHEAP, OFFHEAP, "memory.mb"}

# Grouping union field id -> our grouping name (storm.thrift Grouping)
GROUPINGS = {1: "fields", 2: "shuffle", 3: "all", 4: "none", 5: "direct", 6: "custom", 7: "custom",
             8: "local_or_shuffle"}


class EmptyTopology(InstanceError):
    """A serialized topology with no spouts or bolts (Storm's test skips such files)."""


# ----------------------------------------------------------------------------- file reading
def read_bytes(path: Path, what: str) -> bytes:
    """File contents, gunzipped when they start with the gzip magic; errors name the file."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InstanceError(str(path), f"cannot read {what}: {e.strerror or e}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise InstanceError(str(path), f"corrupt gzip data in {what}: {e}") from None
    return raw


def read_conf(path: str | Path) -> dict[str, Any]:
    """A ``*-stormconf.ser`` (gzip-compressed JSON object, or plain JSON) as a dict."""
    p = Path(path)
    data = read_bytes(p, "topology config")
    try:
        conf = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InstanceError(str(p), f"topology config is not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise InstanceError(str(p), f"topology config is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(conf, dict):
        raise InstanceError(str(p), f"topology config must be a JSON object, got {type(conf).__name__}")
    return conf


def read_code(path: str | Path) -> dict[int, tuple[int, Any]]:
    """A ``*-stormcode.ser`` decoded as a generic Thrift struct (see :mod:`planner.storm.thrift`)."""
    p = Path(path)
    data = read_bytes(p, "serialized topology")
    try:
        return T.read_struct(data)
    except T.ThriftError as e:
        raise InstanceError(str(p), f"not a Thrift StormTopology: {e}") from None


# ----------------------------------------------------------------------------- helpers
class _Ctx:
    """Where we are, for error messages: the file and a path inside it."""

    def __init__(self, file: Path):
        self.file = file

    def fail(self, where: str, reason: str) -> InstanceError:
        return InstanceError(f"{self.file}: {where}" if where else str(self.file), reason)


def _field(ctx: _Ctx, st: dict, fid: int, ttype: int, where: str, default: Any = None, required: bool = False) -> Any:
    if fid not in st:
        if required:
            raise ctx.fail(where, f"missing required field {fid}")
        return default
    t, v = st[fid]
    if t != ttype:
        raise ctx.fail(where, f"field {fid} has thrift type {T.TYPE_NAMES.get(t, t)}, expected {T.TYPE_NAMES[ttype]}")
    return v


def _str(ctx: _Ctx, b: bytes, where: str) -> str:
    try:
        return T.text(b, where)
    except T.ThriftError as e:
        raise ctx.fail(where, str(e)) from None


def _number(ctx: _Ctx, value: Any, where: str) -> float:
    """A resource amount: a finite number >= 0 (numeric strings accepted, as the UI sends them)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ctx.fail(where, f"expected a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ctx.fail(where, f"expected a finite number >= 0, got {value!r}")
    return float(value)


def _int(ctx: _Ctx, value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ctx.fail(where, f"expected an integer, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
        raise ctx.fail(where, f"expected an integer, got {value!r}")
    return int(value)


def _normalise(ctx: _Ctx, m: Any, where: str) -> dict[str, float]:
    if m is None:
        return {}
    if not isinstance(m, dict):
        raise ctx.fail(where, f"expected a map of resource -> amount, got {type(m).__name__}")
    return {_NORMALISE.get(k, k): _number(ctx, v, f"{where}.{k}") for k, v in m.items()}


def default_resources(ctx: _Ctx, conf: dict[str, Any], component: str | None) -> dict[str, float]:
    """Storm's per-component defaults from the topology conf (NormalizedResourceRequest.getDefaultResources)."""
    out = _normalise(ctx, conf.get(K_RESMAP), K_RESMAP)
    if component == ACKER_ID:
        for key, name in ((K_ACKER_ONHEAP, ONHEAP), (K_ACKER_OFFHEAP, OFFHEAP), (K_ACKER_CPU, CPU)):
            if conf.get(key) is not None:
                out[name] = _number(ctx, conf[key], key)
    for key, name in ((K_CPU, CPU), (K_OFFHEAP, OFFHEAP), (K_ONHEAP, ONHEAP)):
        if name not in out and conf.get(key) is not None:
            out[name] = _number(ctx, conf[key], key)
    return out


def component_resources(ctx: _Ctx, json_conf: dict[str, Any], conf: dict[str, Any], component: str,
                        where: str) -> tuple[float, float, float, dict[str, float]]:
    """(cpu, on-heap MB, off-heap MB, generic) per executor of ``component``."""
    own: dict[str, float] = {}
    for key, name in ((K_ONHEAP, ONHEAP), (K_OFFHEAP, OFFHEAP), (K_CPU, CPU)):
        if json_conf.get(key) is not None:
            own[name] = _number(ctx, json_conf[key], f"{where}.json_conf.{key}")
    own.update(_normalise(ctx, json_conf.get(K_RESMAP), f"{where}.json_conf.{K_RESMAP}"))
    merged = default_resources(ctx, conf, component)
    merged.update(own)
    generic = {k: v for k, v in merged.items() if k not in _NOT_GENERIC}
    return (merged.get(CPU, DEFAULT_CPU), merged.get(ONHEAP, DEFAULT_ONHEAP_MB),
            merged.get(OFFHEAP, DEFAULT_OFFHEAP_MB), generic)


def acker_count(conf: dict[str, Any], user_onheap_mb: float, max_heap_mb: float, ctx: _Ctx | None = None) -> tuple[int, str]:
    """How many acker executors Nimbus would run, and why.

    ``topology.acker.executors`` when set (0 disables acking). When unset, Storm's Config
    documentation: under RAS, Nimbus uses the estimated worker count (total on-heap memory of
    the user executors / worker max heap, rounded up) times ``topology.ras.acker.executors.per.
    worker`` (default 1); without RAS, ``topology.workers``. RAS is assumed when the conf names
    a ``topology.scheduler.strategy`` or ``storm.scheduler`` is the ResourceAwareScheduler.
    """
    ctx = ctx or _Ctx(Path("conf"))
    n = _int(ctx, conf.get(K_ACKERS), K_ACKERS)
    if n is not None:
        if n < 0:
            raise ctx.fail(K_ACKERS, f"must be >= 0, got {n}")
        return n, f"{K_ACKERS}={n}"
    ras = bool(conf.get("topology.scheduler.strategy")) or str(conf.get("storm.scheduler", "")).endswith("ResourceAwareScheduler")
    if ras:
        per = _int(ctx, conf.get(K_ACKERS_PER_WORKER), K_ACKERS_PER_WORKER)
        per = 1 if per is None else per
        est = math.ceil(user_onheap_mb / max_heap_mb) if max_heap_mb > 0 else 1
        return est * per, f"unset: RAS estimate {est} workers x {per} per worker"
    w = _int(ctx, conf.get(K_WORKERS), K_WORKERS) or 1
    return w, f"unset: {K_WORKERS}={w}"


def _grouping(ctx: _Ctx, g: dict, where: str) -> tuple[str, str | None]:
    """(our grouping name, note) from a Thrift Grouping union."""
    if len(g) != 1:
        raise ctx.fail(where, f"a Grouping union must set exactly one field, found {sorted(g)}")
    (fid, (t, v)), = g.items()
    if fid == 1:
        if t != T.LIST:
            raise ctx.fail(where, f"fields grouping must be a list, got thrift type {T.TYPE_NAMES.get(t, t)}")
        return ("global", None) if len(v) == 0 else ("fields", None)
    if fid in GROUPINGS:
        return GROUPINGS[fid], None
    return "custom", f"unknown grouping field id {fid} treated as custom"


# ----------------------------------------------------------------------------- the import
def parse_topology(code: dict[int, tuple[int, Any]], conf: dict[str, Any], topology_id: str, *,
                   ackers: str = "conf", file: str | Path = "topology") -> tuple[Topology, dict[str, Any]]:
    """A decoded StormTopology + its conf -> (Topology, import info).

    ``ackers``: ``"conf"`` adds the ``__acker`` component Nimbus would run (see
    :func:`acker_count`); ``"none"`` leaves it out, as Storm's ``TestLargeCluster`` does (its
    executor map holds the user executors only, so RAS binds no ackers there).
    """
    if ackers not in ("conf", "none"):
        raise InstanceError("ackers", f"must be 'conf' or 'none', got {ackers!r}")
    ctx = _Ctx(Path(file))
    info: dict[str, Any] = {"name": conf.get("topology.name", topology_id), "dropped_streams": [], "notes": []}
    if conf.get("topology.scheduler.strategy"):
        info["scheduler_strategy"] = conf["topology.scheduler.strategy"]
    if 3 in code and code[3][1]:
        info["notes"].append(f"{len(code[3][1])} state spouts ignored (Storm schedules none)")

    # components -------------------------------------------------------------------------
    max_par = _int(ctx, conf.get(K_MAX_TASK_PAR), K_MAX_TASK_PAR)
    comps: list[Component] = []
    inputs: list[tuple[str, list]] = []
    tasks: dict[str, int] = {}
    seen: dict[str, str] = {}
    for fid, kind in ((1, "spout"), (2, "bolt")):
        where = "spouts" if fid == 1 else "bolts"
        entries = _field(ctx, code, fid, T.MAP, where, default=[])
        for key, spec in entries:
            if not isinstance(key, bytes) or not isinstance(spec, dict):
                raise ctx.fail(where, "expected map<string, struct>")
            cid = _str(ctx, key, f"{where} key")
            cw = f"{where}[{cid}]"
            if not cid:
                raise ctx.fail(where, "empty component id")
            if cid in seen:
                raise ctx.fail(cw, f"component id {cid!r} is used by a {seen[cid]} and a {kind}")
            if cid.startswith("__"):
                raise ctx.fail(cw, "component ids starting with '__' are reserved for Storm's system components")
            seen[cid] = kind
            common = _field(ctx, spec, 2, T.STRUCT, cw + ".common", required=True)
            hint = _field(ctx, common, 3, T.I32, cw + ".common.parallelism_hint", default=None)
            par = 1 if hint is None else hint
            if par < 1 or par > MAX_EXECUTORS:
                raise ctx.fail(cw + ".common.parallelism_hint", f"must be 1 .. {MAX_EXECUTORS:,}, got {par}")
            jraw = _field(ctx, common, 4, T.STRING, cw + ".common.json_conf", default=None)
            jconf: dict[str, Any] = {}
            if jraw is not None:
                try:
                    jconf = json.loads(_str(ctx, jraw, cw + ".json_conf"))
                except json.JSONDecodeError as e:
                    raise ctx.fail(cw + ".common.json_conf", f"not valid JSON: {e.msg}") from None
                if jconf is None:
                    jconf = {}
                if not isinstance(jconf, dict):
                    raise ctx.fail(cw + ".common.json_conf", "must be a JSON object")
            cpu, on, off, generic = component_resources(ctx, jconf, conf, cid, cw)
            comps.append(Component(id=cid, kind=kind, parallelism=par, cpu=cpu, memory_onheap_mb=on,
                                   memory_offheap_mb=off, resources=generic))
            ntasks = _int(ctx, jconf.get(K_TASKS), cw + ".json_conf." + K_TASKS)
            if ntasks is None:
                ntasks = par
                cmax = _int(ctx, jconf.get(K_MAX_TASK_PAR), cw + ".json_conf." + K_MAX_TASK_PAR) or max_par
                if cmax is not None:
                    ntasks = min(ntasks, cmax)
            if ntasks != par:
                tasks[cid] = ntasks
            inputs.append((cid, _field(ctx, common, 1, T.MAP, cw + ".common.inputs", default=[])))
    if not comps:
        raise EmptyTopology(str(ctx.file), "the topology has no spouts and no bolts (no executors); Storm's test skips it too")

    # streams ------------------------------------------------------------------------------
    kinds = {c.id: c.kind for c in comps}
    streams: list[Stream] = []
    dropped = info["dropped_streams"]
    for target, entries in inputs:
        for gsid, grouping in entries:
            w = f"{kinds[target]}s[{target}].common.inputs"
            if not isinstance(gsid, dict) or not isinstance(grouping, dict):
                raise ctx.fail(w, "expected map<GlobalStreamId, Grouping> (struct keys and values)")
            src = _str(ctx, _field(ctx, gsid, 1, T.STRING, w + ".componentId", required=True), w + ".componentId")
            sid = _str(ctx, _field(ctx, gsid, 2, T.STRING, w + ".streamId", required=True), w + ".streamId")
            gname, note = _grouping(ctx, grouping, f"{w}[{src}:{sid}].grouping")
            if note:
                info["notes"].append(f"{src}->{target} stream {sid}: {note}")
            rec = {"source": src, "target": target, "stream_id": sid, "grouping": gname}
            if src not in kinds:
                if src.startswith("__"):
                    dropped.append({**rec, "reason": "from a Storm system component"})
                    continue
                raise ctx.fail(w, f"{target!r} subscribes to unknown component {src!r}")
            if src == target:
                dropped.append({**rec, "reason": "a component subscribing to itself (self-loop)"})
                continue
            if kinds[target] == "spout":
                dropped.append({**rec, "reason": "input stream of a spout"})
                continue
            streams.append(Stream(source=src, target=target, grouping=gname, stream_id=sid))
    streams = _break_cycles(comps, streams, dropped)

    # topology-level conf ------------------------------------------------------------------
    workers = _int(ctx, conf.get(K_WORKERS), K_WORKERS)
    if workers is not None and workers < 1:
        workers = None
    if conf.get(K_MAX_HEAP) is not None:
        max_heap = _number(ctx, conf[K_MAX_HEAP], K_MAX_HEAP)
    elif conf.get(K_WORKER_HEAP) is not None:
        max_heap = _number(ctx, conf[K_WORKER_HEAP], K_WORKER_HEAP)
    else:
        max_heap = DEFAULT_MAX_HEAP_MB
    priority = _int(ctx, conf.get(K_PRIORITY), K_PRIORITY)
    owner = conf.get(K_USER)
    if owner is not None and not isinstance(owner, str):
        raise ctx.fail(K_USER, f"expected a string, got {owner!r}")

    info["user_executors"] = sum(c.parallelism for c in comps)
    if ackers == "conf":
        user_heap = sum(c.parallelism * c.memory_onheap_mb for c in comps)
        n, why = acker_count(conf, user_heap, max_heap, ctx)
        if n > MAX_EXECUTORS:
            raise ctx.fail("topology.acker.executors", f"{n:,} ackers ({why}): more than the planner takes, {MAX_EXECUTORS:,}")
        info["ackers"] = {"count": n, "source": why}
        if n > 0:
            cpu, on, off, generic = component_resources(ctx, {}, conf, ACKER_ID, ACKER_ID)
            user = [c.id for c in comps]
            comps.append(Component(id=ACKER_ID, kind="bolt", parallelism=n, cpu=cpu, memory_onheap_mb=on,
                                   memory_offheap_mb=off, resources=generic))
            for cid in user:
                sid = "__ack_init" if kinds[cid] == "spout" else "__ack_ack"
                streams.append(Stream(source=cid, target=ACKER_ID, grouping="fields", stream_id=sid))
    else:
        info["ackers"] = {"count": 0, "source": "left out (ackers='none', as Storm's TestLargeCluster)"}
    if tasks:
        info["tasks"] = tasks
    if not info["notes"]:
        del info["notes"]

    try:
        topo = Topology(id=topology_id, components=comps, streams=streams, workers=workers, max_heap_mb=max_heap,
                        priority=STORM_DEFAULT_PRIORITY if priority is None else priority, owner=owner)
    except ValidationError as e:  # a guard: the checks above should leave nothing for pydantic to refuse
        raise ctx.fail("", f"invalid topology: {e.errors()[0]['msg']}") from None
    return topo, info


def _break_cycles(comps: list[Component], streams: list[Stream], dropped: list[dict]) -> list[Stream]:
    """Drop the streams that close a cycle, found by a depth-first search from the spouts.

    Deterministic: roots are the spouts then the other components, by id; a component's out-
    streams are followed in (target, stream id) order. A stream into a component still on the
    search path is a back edge; removing every back edge leaves a DAG.
    """
    out: dict[str, list[int]] = {c.id: [] for c in comps}
    for i, s in enumerate(streams):
        out[s.source].append(i)
    for k in out:
        out[k].sort(key=lambda i: (streams[i].target, streams[i].stream_id))
    state: dict[str, int] = {}
    back: set[int] = set()
    roots = sorted(comps, key=lambda c: (c.kind != "spout", c.id))
    for root in roots:
        if root.id in state:
            continue
        state[root.id] = 1
        stack = [(root.id, iter(out[root.id]))]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                continue
            tgt = streams[nxt].target
            st = state.get(tgt)
            if st == 1:
                back.add(nxt)
            elif st is None:
                state[tgt] = 1
                stack.append((tgt, iter(out[tgt])))
    for i in sorted(back):
        s = streams[i]
        dropped.append({"source": s.source, "target": s.target, "stream_id": s.stream_id, "grouping": s.grouping,
                        "reason": "closes a cycle (the instance model needs a DAG)"})
    return [s for i, s in enumerate(streams) if i not in back]


def topology_id_of(code_path: str | Path) -> str:
    """``TopologyName00000`` from ``.../TopologyName00000-stormcode.ser`` (Storm's test does the same)."""
    name = Path(code_path).name
    for suffix in (CODE_SUFFIX, "code.ser", ".ser"):
        if name.endswith(suffix):
            return name[: -len(suffix)] or name
    return name


def load_topology_with_info(code_path: str | Path, conf_path: str | Path | None = None, *, ackers: str = "conf",
                            topology_id: str | None = None) -> tuple[Topology, dict[str, Any]]:
    """Like :func:`planner.storm.load_topology`, also returning the import info (dropped streams, tasks, ...)."""
    code_path = Path(code_path)
    if conf_path is None:
        name = code_path.name
        cand = code_path.with_name(name[: -len(CODE_SUFFIX)] + CONF_SUFFIX) if name.endswith(CODE_SUFFIX) else None
        conf_path = cand if cand is not None and cand.exists() else None
    conf = read_conf(conf_path) if conf_path is not None else {}
    code = read_code(code_path)
    tid = topology_id or topology_id_of(code_path)
    topo, info = parse_topology(code, conf, tid, ackers=ackers, file=code_path)
    info["files"] = [str(code_path)] + ([str(conf_path)] if conf_path is not None else [])
    return topo, info


# ----------------------------------------------------------------------------- writing
def topology_to_thrift(topo: Topology, tasks: dict[str, int] | None = None) -> bytes:
    """Encode a Topology as a Thrift ``StormTopology`` (ackers, a Storm system component, are left out).

    Each component gets an empty serialized-Java object, one ``default`` output stream, its
    parallelism hint, and a ``json_conf`` with its resources (and ``topology.tasks``).
    """
    tasks = tasks or {}
    spouts, bolts = [], []
    ins: dict[str, list] = {c.id: [] for c in topo.components}
    gid = {v: k for k, v in GROUPINGS.items() if k not in (6,)}
    for s in topo.streams:
        if s.target == ACKER_ID or s.source == ACKER_ID:
            continue
        if s.grouping == "global":
            g = {1: (T.LIST, (T.STRING, []))}
        elif s.grouping == "fields":
            g = {1: (T.LIST, (T.STRING, ["key"]))}
        elif s.grouping == "custom":
            g = {7: (T.STRING, b"")}
        else:
            g = {gid[s.grouping]: (T.STRUCT, {})}
        key = {1: (T.STRING, s.source), 2: (T.STRING, s.stream_id)}
        ins[s.target].append((key, g))
    for c in topo.components:
        if c.id == ACKER_ID:
            continue
        jc: dict[str, Any] = {K_CPU: c.cpu, K_ONHEAP: c.memory_onheap_mb, K_OFFHEAP: c.memory_offheap_mb,
                              K_TASKS: tasks.get(c.id, c.parallelism)}
        if c.resources:
            jc[K_RESMAP] = dict(c.resources)
        common = {
            1: (T.MAP, (T.STRUCT, T.STRUCT, ins[c.id])),
            2: (T.MAP, (T.STRING, T.STRUCT, [("default", {1: (T.LIST, (T.STRING, [])), 2: (T.BOOL, False)})])),
            3: (T.I32, c.parallelism),
            4: (T.STRING, json.dumps(jc, sort_keys=True)),
        }
        spec = {1: (T.STRUCT, {1: (T.STRING, b"")}), 2: (T.STRUCT, common)}
        (spouts if c.kind == "spout" else bolts).append((c.id, spec))
    return T.write_struct({1: (T.MAP, (T.STRING, T.STRUCT, spouts)), 2: (T.MAP, (T.STRING, T.STRUCT, bolts)),
                           3: (T.MAP, (T.STRING, T.STRUCT, []))})


def topology_conf(topo: Topology, ackers: int = 0) -> dict[str, Any]:
    """The topology-level Storm conf that :func:`parse_topology` reads back into ``topo``."""
    conf: dict[str, Any] = {"topology.name": topo.id, K_MAX_HEAP: topo.max_heap_mb, K_PRIORITY: topo.priority,
                            K_ACKERS: ackers}
    if topo.workers is not None:
        conf[K_WORKERS] = topo.workers
    if topo.owner is not None:
        conf[K_USER] = topo.owner
    return conf


def write_topology(topo: Topology, folder: str | Path, *, tasks: dict[str, int] | None = None) -> tuple[Path, Path]:
    """Write ``<id>-stormcode.ser`` and ``<id>-stormconf.ser`` (both gzip) into ``folder``.

    An ``__acker`` component becomes ``topology.acker.executors`` with its resources as the
    acker keys; everything else round-trips through :func:`load_topology_with_info`.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    acker = next((c for c in topo.components if c.id == ACKER_ID), None)
    conf = topology_conf(topo, acker.parallelism if acker else 0)
    if acker is not None:
        conf.update({K_ACKER_CPU: acker.cpu, K_ACKER_ONHEAP: acker.memory_onheap_mb,
                     K_ACKER_OFFHEAP: acker.memory_offheap_mb})
    code = folder / f"{topo.id}{CODE_SUFFIX}"
    cpath = folder / f"{topo.id}{CONF_SUFFIX}"
    code.write_bytes(gzip.compress(topology_to_thrift(topo, tasks), mtime=0))
    cpath.write_bytes(gzip.compress(json.dumps(conf, sort_keys=True).encode(), mtime=0))
    return code, cpath
