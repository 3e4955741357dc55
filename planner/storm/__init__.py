"""Storm's own formats in and out.

* :func:`load_topology` reads Nimbus's ``*-stormcode.ser`` + ``*-stormconf.ser``;
* :func:`load_cluster_dir` reads a whole large-cluster folder (every topology + its
  ``supervisors.json``) into one Instance;
* :func:`load_supervisors` reads a cluster description (supervisors.json rows, storm.yaml
  style, or the UI's supervisor summary);
* :func:`from_ui_json` reads the Storm UI REST API's JSON;
* :func:`to_assignment` writes a plan as Storm assigns it (worker slots with task ranges).

Formats, field mapping and what is dropped: ``docs/storm.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..model import Cluster, Instance, InstanceError, Topology, parse_instance
from .assignment import task_ranges, to_assignment
from .cluster import load_supervisors
from .topology import CODE_SUFFIX, CONF_SUFFIX, EmptyTopology, load_topology_with_info, write_topology
from .ui import from_ui_json

__all__ = [
    "load_topology", "load_topology_with_info", "load_cluster_dir", "load_supervisors", "from_ui_json",
    "to_assignment", "task_ranges", "write_topology", "EmptyTopology",
]


def load_topology(code_path: str | Path, conf_path: str | Path | None = None, *, ackers: str = "conf") -> Topology:
    """One serialized topology -> Topology; ``conf_path`` defaults to the sibling ``-stormconf.ser``.

    ``ackers="conf"`` (default) adds the ``__acker`` component Nimbus would run;
    ``"none"`` leaves it out as Storm's TestLargeCluster does. Raises InstanceError naming the
    file on bad input, :class:`EmptyTopology` (an InstanceError) for a topology with no
    executors.
    """
    return load_topology_with_info(code_path, conf_path, ackers=ackers)[0]


def topology_files(folder: str | Path) -> list[tuple[Path, Path | None]]:
    """(code, conf) pairs of a folder, sorted by name; conf is None when missing."""
    d = Path(folder)
    if not d.is_dir():
        raise InstanceError(str(d), "not a directory")
    out = []
    for code in sorted(d.glob(f"*{CODE_SUFFIX}")):
        conf = code.with_name(code.name[: -len(CODE_SUFFIX)] + CONF_SUFFIX)
        out.append((code, conf if conf.exists() else None))
    return out


def load_files(codes: list[tuple[Path, Path | None]], cluster: Cluster, *, name: str = "storm",
               ackers: str = "conf", source: str = "", require_conf: bool = True) -> Instance:
    """Serialized topologies + a cluster -> Instance; empty topologies (and, with
    ``require_conf``, topologies without a conf, as Storm's test does) are skipped with their
    reason in ``meta["storm"]["skipped"]``. Without ``require_conf`` a missing conf means
    Storm's defaults."""
    topologies: list[Topology] = []
    infos: dict[str, Any] = {}
    skipped: list[dict[str, str]] = []
    for code, conf in codes:
        if conf is None and require_conf:
            skipped.append({"file": str(code), "reason": "no matching -stormconf.ser"})
            continue
        try:
            topo, info = load_topology_with_info(code, conf, ackers=ackers)
        except EmptyTopology as e:
            skipped.append({"file": str(code), "reason": e.reason})
            continue
        topologies.append(topo)
        infos[topo.id] = info
    if not topologies:
        raise InstanceError(source or name, "no topology with executors found")
    meta: dict[str, Any] = {"source": source or "storm", "storm": {"ackers": ackers, "topologies": infos,
                                                                   "skipped": skipped}}
    return parse_instance({"name": name, "topologies": topologies, "cluster": cluster, "meta": meta})


# Storm's TestLargeCluster gives every supervisor it synthesizes these generic resources
# (createSupervisorsWithRacks: resourceMap.put("network.resource.units", 50.0)); the folders'
# supervisors.json rows record the CPU/memory/slot distribution but not this constant.
STORM_TEST_SUPERVISOR_RESOURCES = {"network.resource.units": 50.0}


def give_resources(cluster, extra: dict[str, float]) -> None:
    """Every node of ``cluster`` gets the resources of ``extra`` it does not declare itself."""
    for node in cluster.nodes:
        node.resources = {**extra, **node.resources}


def load_cluster_dir(folder: str | Path, supervisors: str | Path | None = None, *, ackers: str = "conf",
                     supervisor_resources: dict[str, float] | None = None) -> Instance:
    """Every topology of a large-cluster folder + its cluster (``supervisors.json`` in the folder
    unless ``supervisors`` names another file) -> one Instance.

    The one ``largeCluster02`` topology with no executors is skipped (``meta["storm"]["skipped"]``
    says why), as Storm's test skips it. ``ackers="none"`` reproduces TestLargeCluster's
    executor set (user executors only). Every node gets ``supervisor_resources`` where it does
    not declare them; by default, when the folder's own supervisors.json is used, that is what
    Storm's test gives each supervisor (STORM_TEST_SUPERVISOR_RESOURCES).
    """
    d = Path(folder)
    sup = Path(supervisors) if supervisors is not None else d / "supervisors.json"
    cluster = load_supervisors(sup)
    extra = supervisor_resources if supervisor_resources is not None else (
        STORM_TEST_SUPERVISOR_RESOURCES if supervisors is None else {})
    give_resources(cluster, extra)
    return load_files(topology_files(d), cluster, name=d.name, ackers=ackers, source=str(d))
