"""``planner import storm|storm-ui`` and ``planner export storm``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..model import InstanceError

IMPORT_EPILOG = """\
examples:
  planner import storm ../shared/data/storm-largecluster/largeCluster03 --out lc03.json
      every *-stormcode.ser of the folder with its -stormconf.ser; the cluster from the
      folder's supervisors.json unless --supervisors names one; from the folder's own file,
      each supervisor also offers what Storm's TestLargeCluster gives it
      (network.resource.units = 50), as planner.storm.load_cluster_dir does
  planner import storm A-stormcode.ser B-stormcode.ser --supervisors cluster.yaml --out two.json
      chosen topologies (the conf is the sibling -stormconf.ser) on a storm.yaml-style cluster
  planner import storm DIR --ackers none --out user-only.json
      leave Storm's acker executors out, as Storm's TestLargeCluster does
  planner import storm-ui topology.json --ui-supervisors supervisors.json --visualization vis.json --out ui.json
      the Storm UI REST API: /api/v1/topology/:id, /api/v1/supervisor/summary and
      /api/v1/topology/:id/visualization (streams; optional)

cluster files (--supervisors): supervisors.json rows {count, rack, slots, memory_mb, cpu_percent},
a storm.yaml-style file (supervisor.cpu.capacity, supervisor.memory.capacity.mb,
supervisor.slots.ports, supervisor.scheduler.meta; several under `supervisors:`), or the UI's
supervisor summary JSON. Formats and field mapping: docs/storm.md.
"""

EXPORT_EPILOG = """\
example:
  planner solve lc03.json -p network -m storm.ras --out result.json
  planner export storm lc03.json result.json --out assignment.json

prints, per topology, the worker slots {node, port, executors: [[start, end], ...]} with
Storm's task ids (numbered from 1 over the components sorted by id).
"""


def _write(obj: dict, out: str | None) -> None:
    from ..cli import write_out

    write_out(json.dumps(obj, indent=2), out)


def _summary(inst, out: str | None) -> None:
    s = inst.size
    skipped = (inst.meta.get("storm") or {}).get("skipped") or []
    print(f"imported {s['topologies']} topologies ({s['executors']} executors, {s['components']} components) "
          f"on {s['nodes']} nodes / {s['slots']} slots in {s['racks']} racks"
          + (f" -> {out}" if out else ""), file=sys.stderr)
    for sk in skipped:
        print(f"  skipped {sk['file']}: {sk['reason']}", file=sys.stderr)


def cmd_import_storm(args: argparse.Namespace) -> int:
    """Serialized topologies (a folder or files) + a cluster file -> instance JSON."""
    from . import STORM_TEST_SUPERVISOR_RESOURCES, give_resources, load_files, load_supervisors, topology_files
    from .topology import CODE_SUFFIX, CONF_SUFFIX

    pairs: list[tuple[Path, Path | None]] = []
    explicit = False
    sup = Path(args.supervisors) if args.supervisors else None
    for item in args.paths:
        p = Path(item)
        if p.is_dir():
            pairs.extend(topology_files(p))
            if sup is None and (p / "supervisors.json").exists():
                sup = p / "supervisors.json"
        elif p.name.endswith(CONF_SUFFIX):
            continue  # its code file names it
        elif p.exists():
            conf = p.with_name(p.name[: -len(CODE_SUFFIX)] + CONF_SUFFIX) if p.name.endswith(CODE_SUFFIX) else None
            pairs.append((p, conf if conf is not None and conf.exists() else None))
            explicit = True
        else:
            raise InstanceError(str(p), "no such file or directory")
    if not pairs:
        raise InstanceError(" ".join(args.paths), "no *-stormcode.ser files found")
    if sup is None:
        raise InstanceError("--supervisors", "give a cluster file (no supervisors.json beside the topologies)")
    cluster = load_supervisors(sup)
    if not args.supervisors:  # a folder's own supervisors.json: Storm's test's supervisors, as load_cluster_dir
        give_resources(cluster, STORM_TEST_SUPERVISOR_RESOURCES)
    name = args.name or (Path(args.paths[0]).name if len(args.paths) == 1 else "storm")
    inst = load_files(pairs, cluster, name=name, ackers=args.ackers, source=" ".join(args.paths),
                      require_conf=not explicit)
    _write(inst.model_dump(mode="json", exclude_defaults=False), args.out)
    _summary(inst, args.out)
    return 0


def cmd_import_ui(args: argparse.Namespace) -> int:
    """Storm UI REST JSON -> instance JSON."""
    from .ui import from_ui_json

    vis = args.visualization
    if vis and len(vis) != len(args.topology):
        raise InstanceError("--visualization", "give one --visualization per topology JSON, in the same order")
    inst = from_ui_json(list(args.topology), args.ui_supervisors, list(vis) if vis else None)
    _write(inst.model_dump(mode="json"), args.out)
    _summary(inst, args.out)
    return 0


def cmd_export_storm(args: argparse.Namespace) -> int:
    """Instance + Result (or plan) -> Storm-style assignment JSON."""
    from ..api import load_instance, parse_plan
    from .assignment import to_assignment

    inst = load_instance(args.instance)
    try:
        data = json.loads(Path(args.result).read_text())
    except OSError as e:
        raise InstanceError(str(args.result), f"cannot read: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise InstanceError(str(args.result), f"not valid JSON: {e.msg} at line {e.lineno}") from None
    if isinstance(data, dict) and data.get("plan", 0) is None:
        raise InstanceError(str(args.result), "the Result holds no plan (status %s)" % data.get("status"))
    out = to_assignment(inst, parse_plan(data))
    _write(out, args.out)
    n_workers = sum(len(t["workers"]) for t in out["topologies"].values())
    n_un = sum(len(t["unassigned"]) for t in out["topologies"].values())
    print(f"{len(out['topologies'])} topologies on {n_workers} workers; {n_un} executors unassigned", file=sys.stderr)
    return 0


def add_parser(subparsers) -> None:
    """Add ``import`` (storm, storm-ui) and ``export`` (storm) to the planner command."""
    imp = subparsers.add_parser("import", help="import Storm topologies and clusters into an instance",
                                description="Import Storm's own formats into an instance JSON.")
    isub = imp.add_subparsers(dest="import_format", metavar="FORMAT")
    s = isub.add_parser("storm", help="serialized topologies (*-stormcode.ser + *-stormconf.ser) and a cluster file",
                        description="Import Nimbus's serialized topologies and a cluster description.",
                        epilog=IMPORT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("paths", nargs="+", metavar="DIR_OR_FILES",
                   help="a folder of *-stormcode.ser/*-stormconf.ser pairs, or *-stormcode.ser files")
    s.add_argument("--supervisors", help="cluster file: supervisors.json, storm.yaml style, or UI supervisor summary "
                   "(default: supervisors.json in the folder)")
    s.add_argument("--ackers", choices=["conf", "none"], default="conf",
                   help="conf: add the __acker executors Nimbus would run (default); none: user executors only")
    s.add_argument("--name", help="instance name (default: the folder name)")
    s.add_argument("--out", help="write the instance JSON here instead of stdout")
    s.set_defaults(func=cmd_import_storm)

    u = isub.add_parser("storm-ui", help="Storm UI REST API JSON", epilog=IMPORT_EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="Import /api/v1/topology/:id responses with the supervisor summary.")
    u.add_argument("topology", nargs="+", help="/api/v1/topology/:id response file(s)")
    u.add_argument("--ui-supervisors", required=True, help="/api/v1/supervisor/summary response file")
    u.add_argument("--visualization", action="append",
                   help="/api/v1/topology/:id/visualization response, one per topology in order (gives the streams)")
    u.add_argument("--out", help="write the instance JSON here instead of stdout")
    u.set_defaults(func=cmd_import_ui)
    imp.set_defaults(func=lambda a: (imp.print_help(), 2)[1])

    exp = subparsers.add_parser("export", help="write a plan in Storm's assignment form",
                                description="Write a plan as Storm assigns it.")
    esub = exp.add_subparsers(dest="export_format", metavar="FORMAT")
    e = esub.add_parser("storm", help="worker slots with executor task ranges", epilog=EXPORT_EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="Print, per topology, the worker slots with executor task ranges [start, end].")
    e.add_argument("instance", help="instance JSON (e.g. from `planner import storm`)")
    e.add_argument("result", help="a Result JSON (from `planner solve`) or a plan JSON")
    e.add_argument("--out", help="write the assignment JSON here instead of stdout")
    e.set_defaults(func=cmd_export_storm)
    exp.set_defaults(func=lambda a: (exp.print_help(), 2)[1])
