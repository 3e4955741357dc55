"""HiGHS (through PuLP) in a separate, persistent process.

OR-Tools and highspy each ship their own build of HiGHS; once one of them is loaded, importing
the other in the same process fails with an undefined-symbol ImportError (ortools 9.15 with
highspy, checked here). So ``exact.milp-highs`` never loads highspy in the caller's process:
:func:`solve_in_worker` sends the pickled :class:`LinModel` to a child (``_child.Child``) that
imports only PuLP and highspy, and reads the pickled :class:`Solution` back. The child lives as
long as the caller and serves one request at a time.
"""

from __future__ import annotations

import threading

from ._child import Child, serve

_child = Child("formulations._highs_worker:main")
_lock = threading.Lock()


def solve_in_worker(model, time_limit, threads, use_hint, deadline=None):
    """Solve ``model`` with HiGHS in the worker process; returns a Solution. ``deadline`` is a
    ``time.monotonic()`` instant: the child reads the same system-wide clock."""
    from ._linmodel import Solution

    with _lock:
        try:
            return _child.call((model, time_limit, threads, use_hint, deadline))
        except (EOFError, BrokenPipeError, OSError) as e:
            return Solution("error", message=f"HiGHS worker failed: {e}")


def _handle(request):
    from formulations._linmodel import Solution, _solve_pulp

    model, time_limit, threads, use_hint, deadline = request
    try:
        return _solve_pulp(model, "highs", time_limit, threads, use_hint, deadline)
    except Exception as e:  # noqa: BLE001 - reported to the caller as an error status
        return Solution("error", message=f"HiGHS: {type(e).__name__}: {e}")


def main() -> None:
    """Serve requests on stdin/stdout until the parent closes the pipe."""
    serve(_handle)
