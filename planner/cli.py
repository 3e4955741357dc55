"""The ``planner`` command.

Exit codes: 0 success, 1 no feasible plan (or the method failed), 2 bad input.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

from .model import InstanceError

# Modules that add sub-commands: each has add_parser(subparsers).
CLI_MODULES = [
    "planner.storm.cli",
    "planner.generate",
    "planner.batch",
    "planner.report",
    "planner.service",
    "planner.reproduce",
]

EPILOG = """\
examples:
  planner instances                                   list the shipped instances
  planner methods                                     list methods, their problems and sources
  planner solve ras-doc-five-racks --problem network --method storm.ras
  planner solve my.json --problem network --method exact.bruteforce --out result.json
  cat request.json | planner solve - > result.json   {instance, problem, method, ...} on stdin
  planner evaluate my.json result.json --problem network

exit codes: 0 success, 1 no feasible plan (or the method failed), 2 bad input
"""


def _dump(obj: Any, out: str | None) -> None:
    text = json.dumps(obj, indent=2, default=_jsonable)
    write_out(text, out)


def write_out(text: str, out: str | None) -> None:
    """Write `text` to the file `out` (its folder made if missing), or to stdout when `out` is None."""
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    else:
        sys.stdout.write(text + "\n")


def _jsonable(x: Any) -> Any:
    if isinstance(x, float):
        return None
    if hasattr(x, "model_dump"):
        return x.model_dump(mode="json")
    if isinstance(x, (set, frozenset)):
        return sorted(x)
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def result_json(res) -> dict:
    """A Result as JSON; infinities become strings so the output stays valid JSON."""
    return _finite(res.model_dump(mode="json"))


def _finite(x: Any) -> Any:
    if isinstance(x, float):
        if x != x:
            return "nan"
        if x in (float("inf"), float("-inf")):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def _parse_options(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in pairs or []:
        if "=" not in kv:
            raise InstanceError(f"--option {kv}", "expected KEY=VALUE")
        k, v = kv.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def cmd_solve(args: argparse.Namespace) -> int:
    from .api import load_instance, solve

    options = _parse_options(args.option)
    problem, method, time_limit, seed = args.problem, args.method, args.time_limit, args.seed
    if args.hint:
        options["hint"] = args.hint
    if args.instance == "-":
        raw = sys.stdin.buffer.read()
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as e:
            raise InstanceError("$", f"stdin is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
        except (RecursionError, ValueError) as e:  # nested too deeply; not UTF-8
            raise InstanceError("$", f"stdin is not valid JSON: {'nested too deeply' if isinstance(e, RecursionError) else e}") from None
        is_request = isinstance(data, dict) and "instance" in data
        if is_request:
            req = _check_request(data)
            data = req["instance"]
            problem = problem or req.get("problem")
            method = method or req.get("method")
            time_limit = time_limit if time_limit is not None else req.get("time_limit")
            seed = seed if seed is not None else req.get("seed")
            options = {**(req.get("options") or {}), **options}
        from .model import parse_instance

        try:
            inst = parse_instance(data)
        except InstanceError as e:
            if not is_request:
                raise
            raise InstanceError([("instance." + p if p != "$" else "instance", r) for p, r in e.problems]) from None
    else:
        inst = load_instance(args.instance)
    if time_limit is not None and not (time_limit > 0 and time_limit != float("inf")):
        raise InstanceError("time_limit", f"must be a finite number of seconds > 0, got {time_limit}")
    if not problem:
        raise InstanceError("problem", "missing: give --problem (network, traffic, throughput, slots, feasibility, admission)")
    if not method:
        raise InstanceError("method", "missing: give --method (see `planner methods`)")
    res = solve(inst, problem, method, time_limit=time_limit, seed=seed or 0, **options)
    _summary(res)
    _dump(result_json(res), args.out)
    return 0 if res.ok else 1


_REQUEST_FIELDS = {"instance": dict, "problem": str, "method": str, "time_limit": (int, float), "seed": int, "options": dict}


def _check_request(req: dict) -> dict:
    """A stdin request {instance, problem, method, time_limit, seed, options}: no unknown
    field, each present one of its JSON type (null allowed except for instance)."""
    for key, value in req.items():
        if key not in _REQUEST_FIELDS:
            raise InstanceError(key, f"unknown field; a request has {', '.join(_REQUEST_FIELDS)}")
        kind = _REQUEST_FIELDS[key]
        if value is None and key != "instance":
            continue
        if isinstance(value, bool) or not isinstance(value, kind):
            names = {dict: "an object", str: "a string", int: "an integer", (int, float): "a number"}
            raise InstanceError(key, f"must be {names[kind]}, got {type(value).__name__}")
    return req


def _summary(res) -> None:
    m = res.metrics or {}
    parts = [f"{res.method} on {res.problem}: {res.status.value}"]
    if res.objective is not None:
        parts.append(f"objective {res.objective:.6g}")
    if res.bound is not None:
        parts.append(f"bound {res.bound:.6g}")
    parts.append(f"{res.seconds:.3f} s")
    if m:
        parts.append(f"{m.get('executors_placed', 0)} executors on {m.get('workers_used', 0)} workers / {m.get('nodes_used', 0)} nodes")
    print("; ".join(parts), file=sys.stderr)
    if res.message:
        print(f"  {res.message}", file=sys.stderr)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .api import evaluate, load_instance, parse_plan

    inst = load_instance(args.instance)
    try:
        data = json.loads(Path(args.plan).read_text())
    except OSError as e:
        raise InstanceError("plan", f"cannot read {args.plan}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise InstanceError("plan", f"{args.plan} is not valid JSON: {e.msg} at line {e.lineno}") from None
    problem = args.problem or (data.get("problem") if isinstance(data, dict) else None)
    m = evaluate(inst, parse_plan(data), problem)
    _dump(_finite(m), args.out)
    n = len(m["violations"])
    print(f"{'feasible' if m['feasible'] else 'infeasible'}" + (f" ({n} violations)" if n else "")
          + (f"; objective {m['objective']:.6g}" if m.get("objective") is not None else ""), file=sys.stderr)
    for v in m["violations"][:10]:
        print(f"  {v['constraint']} at {v['where']}: {v['detail']}", file=sys.stderr)
    return 0 if m["feasible"] else 1


def cmd_methods(args: argparse.Namespace) -> int:
    from .registry import list_methods

    ms = list_methods()
    if args.json:
        _dump([{"name": m.name, "problems": list(m.problems), "kind": m.kind, "source": m.source,
                "options": m.options, "summary": m.summary} for m in ms], None)
        return 0
    w = max(len(m.name) for m in ms)
    for m in ms:
        print(f"{m.name:<{w}}  {m.kind:<9}  {','.join(m.problems):<40}  {m.source}")
    return 0


def cmd_instances(args: argparse.Namespace) -> int:
    from .instances import shipped

    items = shipped()
    if args.json:
        _dump(items, None)
        return 0
    w = max((len(i["name"]) for i in items), default=4)
    for i in items:
        print(f"{i['name']:<{w}}  {','.join(i['problems']):<28}  {i['description']}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from .model import instance_schema

    _dump(instance_schema(), args.out)
    return 0


def cmd_problems(args: argparse.Namespace) -> int:
    from .problems import PROBLEMS

    for p in PROBLEMS.values():
        print(f"{p.name:<12} {p.sense}imise {p.objective}: {p.summary} [{p.source}]")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="planner",
        description="Place stream-processing topologies (Storm: spouts, bolts, executors, workers) on clusters, "
        "exactly (CP-SAT, MILP) or with the published heuristics, and judge every plan with one evaluator.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("solve", help="solve one instance", formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Solve one instance and print the Result as JSON (a one-line summary goes to stderr).",
                       epilog=EPILOG)
    s.add_argument("instance", help="instance JSON file, a shipped instance name, or - for stdin "
                   "(an instance or a request {instance, problem, method, time_limit, seed, options})")
    s.add_argument("--problem", "-p", help="network | traffic | throughput | slots | feasibility | admission")
    s.add_argument("--method", "-m", help="a method name from `planner methods`")
    s.add_argument("--time-limit", type=float, default=None, help="seconds (exact methods return their best plan and bound)")
    s.add_argument("--seed", type=int, default=None, help="random seed for methods that draw (default 0)")
    s.add_argument("--hint", help="warm-start an exact method with this method's plan")
    s.add_argument("--option", "-o", action="append", metavar="KEY=VALUE", help="method option (JSON value), repeatable")
    s.add_argument("--out", help="write the Result JSON here instead of stdout")
    s.set_defaults(func=cmd_solve)

    e = sub.add_parser("evaluate", help="check a plan and compute its metrics")
    e.add_argument("instance")
    e.add_argument("plan", help="a plan JSON, or a Result JSON holding one")
    e.add_argument("--problem", "-p", help="check this problem's constraints (default: the Result's, else RAS limits)")
    e.add_argument("--out")
    e.set_defaults(func=cmd_evaluate)

    m = sub.add_parser("methods", help="list the methods with their problems and sources")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_methods)

    i = sub.add_parser("instances", help="list the shipped instances")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_instances)

    pr = sub.add_parser("problems", help="list the problems and what they optimise")
    pr.set_defaults(func=cmd_problems)

    sc = sub.add_parser("schema", help="print the instance JSON Schema")
    sc.add_argument("--out")
    sc.set_defaults(func=cmd_schema)

    for mod in CLI_MODULES:
        try:
            importlib.import_module(mod).add_parser(sub)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help()
        return 2
    try:
        return args.func(args)
    except InstanceError as e:
        print(f"planner: bad input: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("planner: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        if e.filename is None:
            raise
        # a file named on the command line that cannot be read or written
        print(f"planner: {e.strerror or e}: {e.filename}", file=sys.stderr)
        return 2
    except Exception as e:
        from .batch import BatchError  # planner batch and planner reproduce raise it

        if not isinstance(e, BatchError):
            raise
        print(f"planner: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
