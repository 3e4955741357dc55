"""The Storm UI REST API's JSON into an Instance.

* ``/api/v1/topology/:id``: ``id``, ``name``, ``owner``, ``workersTotal``, ``spouts`` (each
  ``spoutId``, ``executors``, ``tasks``), ``bolts`` (``boltId``, ...), ``configuration`` (the
  topology conf; values may arrive as strings). Per-component resources are read from optional
  ``requestedCpu``, ``requestedMemOnHeap``, ``requestedMemOffHeap`` (per executor, as the
  component page shows them), else from the conf's component defaults, else Storm's defaults.
* ``/api/v1/topology/:id/visualization``: a map component id -> ``{":type", ":inputs": [{
  ":component", ":stream", ":grouping"}]}`` (older UIs: a list of such objects with
  ``":component"``). It gives the streams; without it the topology has none.
* ``/api/v1/supervisor/summary``: the nodes (see :func:`planner.storm.cluster.supervisors_from_ui`).

System components (ids starting ``__``, shown with ``sys=true``) are dropped, except that an
``__acker`` bolt becomes our ``__acker`` component fed by every spout and bolt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..model import MAX_EXECUTORS, Component, Instance, InstanceError, Stream, Topology, parse_instance
from .cluster import supervisors_from_ui
from .topology import (
    ACKER_ID, K_MAX_HEAP, K_PRIORITY, K_WORKER_HEAP, K_WORKERS, STORM_DEFAULT_PRIORITY, _Ctx, _break_cycles, _int, _number,
    default_resources,
)

_GROUPING_NAMES = {"fields": "fields", "shuffle": "shuffle", "all": "all", "none": "none", "direct": "direct",
                   "custom_object": "custom", "custom_serialized": "custom", "local_or_shuffle": "local_or_shuffle",
                   "global": "global", "custom": "custom"}


def _load(obj: Any, what: str) -> tuple[Any, str]:
    """(JSON data, a name for errors) from a dict/list or a file path."""
    if isinstance(obj, (dict, list)):
        return obj, what
    p = Path(obj)
    try:
        return json.loads(p.read_text(encoding="utf-8")), str(p)
    except (OSError, UnicodeDecodeError) as e:
        raise InstanceError(str(p), f"cannot read {what}: {getattr(e, 'strerror', None) or e}") from None
    except json.JSONDecodeError as e:
        raise InstanceError(str(p), f"{what} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None


def _parse_conf_value(v: Any) -> Any:
    """UI configuration values may be JSON text ("5242880", "null", "[]"); decode those."""
    if isinstance(v, str):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return v


def _streams_from_visualization(vis: Any, name: str, comp_ids: set[str], notes: list[str]) -> list[Stream]:
    entries: list[tuple[str, dict]] = []
    if isinstance(vis, dict):
        for cid, body in vis.items():
            entries.append((cid, body))
    elif isinstance(vis, list):
        for i, body in enumerate(vis):
            if not isinstance(body, dict) or not isinstance(body.get(":component"), str):
                raise InstanceError(f"{name}: [{i}]", "each entry needs a ':component' id")
            entries.append((body[":component"], body))
    else:
        raise InstanceError(name, "visualization JSON must be an object keyed by component id")
    streams: list[Stream] = []
    for target, body in entries:
        if not isinstance(body, dict):
            raise InstanceError(f"{name}: {target}", "must be an object with ':inputs'")
        if target.startswith("__") or target not in comp_ids:
            continue
        inputs = body.get(":inputs") or []
        if not isinstance(inputs, list):
            raise InstanceError(f"{name}: {target}.:inputs", "must be a list")
        for j, inp in enumerate(inputs):
            w = f"{name}: {target}.:inputs[{j}]"
            if not isinstance(inp, dict) or not isinstance(inp.get(":component"), str):
                raise InstanceError(w, "needs ':component'")
            src, sid = inp[":component"], str(inp.get(":stream", "default"))
            g = str(inp.get(":grouping", "shuffle")).replace("-", "_").lower()
            if g not in _GROUPING_NAMES:
                raise InstanceError(w + ".:grouping", f"unknown grouping {g!r}")
            if src.startswith("__"):
                continue
            if src not in comp_ids:
                raise InstanceError(w, f"{target!r} subscribes to unknown component {src!r}")
            if src == target:
                notes.append(f"dropped self-loop {src}->{target} ({sid})")
                continue
            streams.append(Stream(source=src, target=target, grouping=_GROUPING_NAMES[g], stream_id=sid))
    return streams


def topology_from_ui(topology_json: Any, visualization_json: Any = None) -> tuple[Topology, dict[str, Any]]:
    """One ``/api/v1/topology/:id`` (+ its visualization) -> (Topology, import info)."""
    data, name = _load(topology_json, "topology JSON")
    if not isinstance(data, dict):
        raise InstanceError(name, "the /api/v1/topology/:id response must be a JSON object")
    ctx = _Ctx(Path(name))
    tid = data.get("id") or data.get("name")
    if not isinstance(tid, str) or not tid:
        raise InstanceError(f"{name}: id", "missing topology id")
    raw_conf = data.get("configuration") or {}
    if not isinstance(raw_conf, dict):
        raise InstanceError(f"{name}: configuration", "must be an object")
    conf = {k: _parse_conf_value(v) for k, v in raw_conf.items()}
    defaults = default_resources(ctx, conf, None)
    acker_defaults = default_resources(ctx, conf, ACKER_ID)
    comps: list[Component] = []
    ackers = 0
    info: dict[str, Any] = {"name": data.get("name", tid), "notes": []}
    for key, idkey, kind in (("spouts", "spoutId", "spout"), ("bolts", "boltId", "bolt")):
        lst = data.get(key, [])
        if not isinstance(lst, list):
            raise InstanceError(f"{name}: {key}", "must be a list")
        for i, c in enumerate(lst):
            w = f"{key}[{i}]"
            if not isinstance(c, dict) or not isinstance(c.get(idkey), str) or not c[idkey]:
                raise InstanceError(f"{name}: {w}", f"needs a {idkey!r}")
            cid = c[idkey]
            execs = _int(ctx, c.get("executors", 1), f"{w}.executors")
            if execs is None or execs < 1 or execs > MAX_EXECUTORS:
                raise InstanceError(f"{name}: {w}.executors", f"must be 1 .. {MAX_EXECUTORS:,}, got {c.get('executors')!r}")
            if cid == ACKER_ID:
                ackers = execs
                continue
            if cid.startswith("__"):
                info["notes"].append(f"system component {cid} dropped")
                continue
            if any(x.id == cid for x in comps):
                raise InstanceError(f"{name}: {w}", f"duplicate component id {cid!r}")
            res = dict(defaults)
            for field, rname in (("requestedCpu", "cpu.pcore.percent"), ("requestedMemOnHeap", "onheap.memory.mb"),
                                 ("requestedMemOffHeap", "offheap.memory.mb")):
                if c.get(field) is not None:
                    res[rname] = _number(ctx, c[field], f"{w}.{field}")
            comps.append(Component(id=cid, kind=kind, parallelism=execs, cpu=res.get("cpu.pcore.percent", 10.0),
                                   memory_onheap_mb=res.get("onheap.memory.mb", 128.0),
                                   memory_offheap_mb=res.get("offheap.memory.mb", 0.0),
                                   resources={k: v for k, v in res.items() if k not in
                                              ("cpu.pcore.percent", "onheap.memory.mb", "offheap.memory.mb", "memory.mb")}))
            tasks = _int(ctx, c.get("tasks"), f"{w}.tasks")
            if tasks is not None and tasks != execs:
                info.setdefault("tasks", {})[cid] = tasks
    if not comps:
        raise InstanceError(name, "the topology lists no spouts or bolts")
    ids = {c.id for c in comps}
    dropped: list[dict] = []
    if visualization_json is not None:
        vis, vname = _load(visualization_json, "visualization JSON")
        streams = _streams_from_visualization(vis, vname, ids, info["notes"])
    else:
        streams = []
        info["notes"].append("no visualization JSON: streams unknown, none imported")
    streams = [s for s in streams if not (s.target in ids and next(c for c in comps if c.id == s.target).kind == "spout")]
    streams = _break_cycles(comps, streams, dropped)
    if dropped:
        info["dropped_streams"] = dropped
    if ackers:
        user = list(comps)
        comps.append(Component(id=ACKER_ID, kind="bolt", parallelism=ackers,
                               cpu=acker_defaults.get("cpu.pcore.percent", 10.0),
                               memory_onheap_mb=acker_defaults.get("onheap.memory.mb", 128.0),
                               memory_offheap_mb=acker_defaults.get("offheap.memory.mb", 0.0)))
        for c in user:
            streams.append(Stream(source=c.id, target=ACKER_ID, grouping="fields",
                                  stream_id="__ack_init" if c.kind == "spout" else "__ack_ack"))
    info["ackers"] = {"count": ackers, "source": "__acker executors listed by the UI"}
    workers = _int(ctx, conf.get(K_WORKERS), K_WORKERS)
    if workers is None:
        workers = _int(ctx, data.get("workersTotal"), "workersTotal")
    heap = conf.get(K_MAX_HEAP, conf.get(K_WORKER_HEAP))
    priority = _int(ctx, conf.get(K_PRIORITY), K_PRIORITY)
    owner = data.get("owner") or conf.get("topology.submitter.user")
    topo = Topology(id=tid, components=comps, streams=streams, workers=workers if workers and workers > 0 else None,
                    max_heap_mb=768.0 if heap is None else _number(ctx, heap, K_MAX_HEAP),
                    priority=STORM_DEFAULT_PRIORITY if priority is None else priority,
                    owner=owner if isinstance(owner, str) and owner else None)
    if not info["notes"]:
        del info["notes"]
    return topo, info


def from_ui_json(topology_json: Any, supervisors_json: Any, visualization_json: Any = None) -> Instance:
    """Storm UI JSON (dicts or file paths) -> Instance.

    ``topology_json`` may be one ``/api/v1/topology/:id`` response or a list of them; then
    ``visualization_json`` is None or a list of the same length (None entries allowed).
    """
    tops = topology_json if isinstance(topology_json, list) else [topology_json]
    if visualization_json is None:
        viss: list[Any] = [None] * len(tops)
    elif isinstance(topology_json, list):
        if not isinstance(visualization_json, list) or len(visualization_json) != len(tops):
            raise InstanceError("visualization", "give one visualization per topology (a list of the same length)")
        viss = visualization_json
    else:
        viss = [visualization_json]
    sup, sname = _load(supervisors_json, "supervisor summary JSON")
    cluster, cnotes = supervisors_from_ui(sup, sname)
    topologies, infos = [], {}
    for t, v in zip(tops, viss):
        topo, info = topology_from_ui(t, v)
        topologies.append(topo)
        infos[topo.id] = info
    meta: dict[str, Any] = {"source": "storm-ui", "storm": {"topologies": infos}}
    if cnotes:
        meta["storm"]["cluster_notes"] = cnotes
    return parse_instance({"name": "storm-ui", "topologies": topologies, "cluster": cluster, "meta": meta})
