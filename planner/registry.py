"""Method name -> callable, with the problems it supports and its source.

A method is a function ``f(instance, problem, *, time_limit, seed, **options) -> Result``
registered with :func:`register` in its own module; the modules are listed once in
``METHOD_MODULES``. Method names come only from here: nothing is imported by a name the
user gives.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from .model import InstanceError

METHOD_MODULES = [
    "heuristics.storm",
    "heuristics.rstorm",
    "heuristics.site_aware",
    "heuristics.aniello",
    "heuristics.nasiri",
    "heuristics.shukla",
    "heuristics.peers",
    "formulations.bruteforce",
    "formulations.network",
    "formulations.traffic",
    "formulations.throughput",
    "formulations.slots",
    "formulations.admission",
]


@dataclass(frozen=True)
class MethodInfo:
    name: str
    func: Callable[..., Any]
    problems: tuple[str, ...]
    source: str
    kind: str  # "exact" or "heuristic"
    options: dict[str, Any] = field(default_factory=dict)  # option -> default
    summary: str = ""


_METHODS: dict[str, MethodInfo] = {}
_loaded = False


def register(name: str, problems: list[str] | tuple[str, ...], source: str, kind: str = "heuristic",
             options: dict[str, Any] | None = None, summary: str = "") -> Callable:
    """Decorator: make ``func`` the method ``name``. Re-registering a name extends its problems."""

    def deco(func: Callable) -> Callable:
        prev = _METHODS.get(name)
        probs = tuple(problems)
        opts = dict(options or {})
        if prev is not None and prev.func is not func:
            # one name may be served by several functions, one per problem
            _METHODS[name] = MethodInfo(name, _dispatch(prev, func, probs), _canonical(prev.problems + probs), prev.source or source,
                                        kind, {**prev.options, **opts}, prev.summary or summary)
        else:
            _METHODS[name] = MethodInfo(name, func, probs, source, kind, opts, summary or (func.__doc__ or "").strip().split("\n")[0])
        return func

    return deco


def option_error(info: MethodInfo, options: dict[str, Any]) -> tuple[str, str] | None:
    """The first option that ``info`` does not have, or whose value is not of its default's kind
    (a switch takes true or false, a count an integer, a weight a number; options whose default
    is a string or None are the methods' own to check): (option, message), or None. The API and
    the HTTP service both ask it, so ``-o lns=maybe`` is refused instead of read as true."""
    unknown = sorted(set(options) - set(info.options))
    if unknown:
        return unknown[0], f"unknown option for {info.name!r}; its options: {', '.join(sorted(info.options)) or 'none'}"
    for key in sorted(options):
        default, value = info.options[key], options[key]
        if isinstance(default, bool):
            ok, kind = isinstance(value, bool), "true or false"
        elif isinstance(default, int):
            ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
        elif isinstance(default, float):
            ok, kind = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
        else:
            continue
        if not ok:
            return key, f"option of {info.name!r} must be {kind} (its default is {default!r}), got {value!r}"
    return None


def _canonical(problems: tuple[str, ...]) -> tuple[str, ...]:
    """Problems in the order planner.problems lists them, whatever order modules registered in."""
    from .problems import PROBLEMS

    order = list(PROBLEMS)
    return tuple(sorted(dict.fromkeys(problems), key=lambda p: order.index(p) if p in order else len(order)))


def _dispatch(prev: MethodInfo, func: Callable, probs: tuple[str, ...]) -> Callable:
    def run(instance, problem, **kw):
        if problem in probs:
            return func(instance, problem, **kw)
        return prev.func(instance, problem, **kw)

    return run


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in METHOD_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


def get_method(name: str) -> MethodInfo:
    _load()
    try:
        return _METHODS[name]
    except KeyError:
        raise InstanceError("method", f"unknown method {name!r}; `planner methods` lists them") from None


def list_methods() -> list[MethodInfo]:
    _load()
    return sorted(_METHODS.values(), key=lambda m: m.name)
