"""Cluster descriptions into a :class:`planner.model.Cluster`.

Three inputs, told apart by content (see ``docs/storm.md``):

* ``supervisors.json`` of the large-cluster data: a list of rows ``{count, rack, slots,
  memory_mb, cpu_percent}`` (optional ``site``, ``type``, ``resources``); row order is kept,
  node ids are ``<rack>-n<NNNN>`` numbered per rack from 0.
* a ``storm.yaml``-style file: Storm's supervisor keys (``supervisor.cpu.capacity``,
  ``supervisor.memory.capacity.mb``, ``supervisor.slots.ports``, ``supervisor.scheduler.meta``,
  ``supervisor.resources.map``) for one supervisor, or under ``supervisors:`` a list of them
  (top-level keys are defaults for every entry). Extra per-entry keys: ``id``, ``host``,
  ``rack``, ``count``.
* the Storm UI's ``/api/v1/supervisor/summary`` JSON (``{"supervisors": [{id, host,
  slotsTotal, totalCpu, totalMem, ...}]}``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from ..model import DEFAULT_NODE_CPU, DEFAULT_NODE_MEMORY_MB, DEFAULT_PORTS, DEFAULT_RACK, Cluster, InstanceError, Node, Rack

SUP_CPU = "supervisor.cpu.capacity"
SUP_MEM = "supervisor.memory.capacity.mb"
SUP_PORTS = "supervisor.slots.ports"
SUP_META = "supervisor.scheduler.meta"
SUP_RES = "supervisor.resources.map"
_ROW_KEYS = {"count", "rack", "slots", "memory_mb", "cpu_percent", "site", "type", "resources"}
_ENTRY_EXTRA = {"id", "host", "rack", "count"}


def _num(file: Any, where: str, v: Any, *, integer: bool = False, minimum: float = 0) -> float:
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise InstanceError(f"{file}: {where}", f"expected a number, got {v!r}") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < minimum:
        raise InstanceError(f"{file}: {where}", f"expected a finite number >= {minimum:g}, got {v!r}")
    if integer and v != int(v):
        raise InstanceError(f"{file}: {where}", f"expected an integer, got {v!r}")
    return int(v) if integer else float(v)


def _resources(file: Any, where: str, m: Any) -> dict[str, float]:
    if m is None:
        return {}
    if not isinstance(m, dict):
        raise InstanceError(f"{file}: {where}", "expected a map of resource -> amount")
    return {str(k): _num(file, f"{where}.{k}", v) for k, v in m.items()}


def _build(file: Any, racks: dict[str, list[Node]]) -> Cluster:
    if not any(racks.values()):
        raise InstanceError(str(file), "the cluster description has no supervisors")
    try:
        return Cluster(racks=[Rack(id=r, nodes=nodes) for r, nodes in racks.items() if nodes])
    except Exception as e:  # pydantic validation of ports etc.
        raise InstanceError(str(file), f"invalid cluster: {e}") from None


def supervisors_from_rows(rows: Any, file: Any = "supervisors.json") -> Cluster:
    """The large-cluster ``supervisors.json`` rows -> Cluster (node ids ``<rack>-n<NNNN>``)."""
    if not isinstance(rows, list):
        raise InstanceError(str(file), "supervisors.json must be a JSON list of rows {count, rack, slots, memory_mb, cpu_percent}")
    racks: dict[str, list[Node]] = {}
    for i, row in enumerate(rows):
        w = f"[{i}]"
        if not isinstance(row, dict):
            raise InstanceError(f"{file}: {w}", "each row must be an object")
        unknown = set(row) - _ROW_KEYS
        if unknown:
            raise InstanceError(f"{file}: {w}", f"unknown keys {sorted(unknown)}; known: {sorted(_ROW_KEYS)}")
        for k in ("count", "rack", "slots", "memory_mb", "cpu_percent"):
            if k not in row:
                raise InstanceError(f"{file}: {w}", f"missing {k!r}")
        count = _num(file, w + ".count", row["count"], integer=True)
        rack = row["rack"]
        if not isinstance(rack, str) or not rack:
            raise InstanceError(f"{file}: {w}.rack", "must be a non-empty string")
        slots = row["slots"]
        ports = (list(range(6700, 6700 + _num(file, w + ".slots", slots, integer=True)))
                 if not isinstance(slots, list) else [_num(file, w + ".slots", p, integer=True) for p in slots])
        mem = _num(file, w + ".memory_mb", row["memory_mb"])
        cpu = _num(file, w + ".cpu_percent", row["cpu_percent"])
        res = _resources(file, w + ".resources", row.get("resources"))
        nodes = racks.setdefault(rack, [])
        for _ in range(count):
            nodes.append(Node(id=f"{rack}-n{len(nodes):04d}", slots=list(ports), cpu=cpu, memory_mb=mem,
                              site=row.get("site"), type=row.get("type"), resources=res))
    return _build(file, racks)


def supervisors_from_yaml(data: Any, file: Any = "storm.yaml") -> Cluster:
    """A storm.yaml-style mapping (one supervisor, or ``supervisors:`` a list) -> Cluster."""
    if not isinstance(data, dict):
        raise InstanceError(str(file), "a storm.yaml must be a mapping of config keys")
    defaults = {k: v for k, v in data.items() if k != "supervisors"}
    entries = data.get("supervisors")
    if entries is None:
        entries = [{}]
    if not isinstance(entries, list) or not entries:
        raise InstanceError(f"{file}: supervisors", "must be a non-empty list of supervisor configs")
    racks: dict[str, list[Node]] = {}
    used: set[str] = set()
    for i, entry in enumerate(entries):
        w = f"supervisors[{i}]"
        if not isinstance(entry, dict):
            raise InstanceError(f"{file}: {w}", "each supervisor must be a mapping")
        conf = {**defaults, **entry}
        meta = conf.get(SUP_META) or {}
        if not isinstance(meta, dict):
            raise InstanceError(f"{file}: {w}.{SUP_META}", "must be a mapping")
        cpu = _num(file, f"{w}.{SUP_CPU}", conf.get(SUP_CPU, DEFAULT_NODE_CPU))
        mem = _num(file, f"{w}.{SUP_MEM}", conf.get(SUP_MEM, DEFAULT_NODE_MEMORY_MB))
        ports = conf.get(SUP_PORTS, list(DEFAULT_PORTS))
        if isinstance(ports, int) and not isinstance(ports, bool):
            ports = list(range(6700, 6700 + ports))
        if not isinstance(ports, list):
            raise InstanceError(f"{file}: {w}.{SUP_PORTS}", "must be a list of ports (or a count)")
        ports = [_num(file, f"{w}.{SUP_PORTS}", p, integer=True) for p in ports]
        res = _resources(file, f"{w}.{SUP_RES}", conf.get(SUP_RES))
        rack = str(entry.get("rack") or meta.get("rack") or DEFAULT_RACK)
        count = _num(file, f"{w}.count", entry.get("count", 1), integer=True, minimum=1)
        base = entry.get("id") or entry.get("host")
        cpu_mhz = meta.get("cpu_mhz")
        price = meta.get("price")
        for k in range(count):
            if base:
                nid = str(base) if count == 1 else f"{base}-{k}"
            else:
                nid = f"{rack}-n{len(racks.get(rack, [])):04d}"
            if nid in used:
                raise InstanceError(f"{file}: {w}", f"duplicate supervisor id {nid!r}")
            used.add(nid)
            racks.setdefault(rack, []).append(Node(
                id=nid, slots=ports, cpu=cpu, memory_mb=mem, site=meta.get("site"), type=meta.get("type"),
                cpu_mhz=None if cpu_mhz is None else _num(file, f"{w}.{SUP_META}.cpu_mhz", cpu_mhz),
                price=None if price is None else _num(file, f"{w}.{SUP_META}.price", price), resources=res))
    return _build(file, racks)


def supervisors_from_ui(data: Any, file: Any = "supervisor/summary") -> tuple[Cluster, list[str]]:
    """The UI's ``/api/v1/supervisor/summary`` -> (Cluster, notes). One rack (the UI shows none).

    ``totalCpu``/``totalMem`` absent, or 0 while ``schedulerDisplayResource`` is false (the UI
    then does not report resources), fall back to Storm's supervisor defaults, with a note.
    """
    if not isinstance(data, dict) or not isinstance(data.get("supervisors"), list):
        raise InstanceError(str(file), "expected the /api/v1/supervisor/summary object with a 'supervisors' list")
    shows = data.get("schedulerDisplayResource", True)
    nodes: list[Node] = []
    notes: list[str] = []
    seen: set[str] = set()
    for i, s in enumerate(data["supervisors"]):
        w = f"supervisors[{i}]"
        if not isinstance(s, dict):
            raise InstanceError(f"{file}: {w}", "must be an object")
        nid = s.get("id") or s.get("host")
        if not isinstance(nid, str) or not nid:
            raise InstanceError(f"{file}: {w}.id", "missing supervisor id")
        if nid in seen:
            raise InstanceError(f"{file}: {w}.id", f"duplicate supervisor id {nid!r}")
        seen.add(nid)
        slots = _num(file, f"{w}.slotsTotal", s.get("slotsTotal", len(DEFAULT_PORTS)), integer=True)
        vals = {}
        for key, default in (("totalCpu", DEFAULT_NODE_CPU), ("totalMem", DEFAULT_NODE_MEMORY_MB)):
            v = s.get(key)
            if v is None or (not shows and _num(file, f"{w}.{key}", v) == 0):
                notes.append(f"{nid}: {key} not reported; Storm's default {default:g} used")
                v = default
            vals[key] = _num(file, f"{w}.{key}", v)
        nodes.append(Node(id=nid, slots=slots, cpu=vals["totalCpu"], memory_mb=vals["totalMem"]))
    return _build(file, {DEFAULT_RACK: nodes}), notes


def load_supervisors(path: str | Path) -> Cluster:
    """A cluster file -> Cluster: supervisors.json rows, the UI supervisor summary, or storm.yaml style."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InstanceError(str(p), f"cannot read the cluster description: {getattr(e, 'strerror', None) or e}") from None
    if p.suffix.lower() in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise InstanceError(str(p), f"not valid YAML: {str(e).splitlines()[0]}") from None
        return supervisors_from_yaml(data, p)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InstanceError(str(p), f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if isinstance(data, dict) and isinstance(data.get("supervisors"), list) and all(
            isinstance(s, dict) and ("slotsTotal" in s or "host" in s) for s in data["supervisors"]):
        return supervisors_from_ui(data, p)[0]
    if isinstance(data, dict):
        return supervisors_from_yaml(data, p)  # the same keys written as JSON
    return supervisors_from_rows(data, p)
