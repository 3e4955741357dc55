"""HiGHS (through PuLP) in a separate, persistent process.

OR-Tools and highspy each ship their own build of HiGHS; once one of them is loaded, importing
the other in the same process fails with an undefined-symbol ImportError (ortools 9.15 with
highspy, checked here). So ``exact.milp-highs`` never loads highspy in the caller's process:
:func:`solve_in_worker` sends the pickled :class:`LinModel` to a child that imports only PuLP
and highspy, and reads the pickled :class:`Solution` back. The child lives as long as the
caller and serves one request at a time.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import threading
from pathlib import Path

_proc: subprocess.Popen | None = None
_lock = threading.Lock()


def _send(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def _recv(stream):
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("HiGHS worker closed its pipe")
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(n))


def _start() -> subprocess.Popen:
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.Popen([sys.executable, "-c", "from formulations._highs_worker import main; main()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)


def solve_in_worker(model, time_limit, threads, use_hint):
    """Solve ``model`` with HiGHS in the worker process; returns a Solution."""
    global _proc
    from ._linmodel import Solution

    with _lock:
        for attempt in range(2):
            if _proc is None or _proc.poll() is not None:
                _proc = _start()
            try:
                _send(_proc.stdin, (model, time_limit, threads, use_hint))
                return _recv(_proc.stdout)
            except (EOFError, BrokenPipeError, OSError) as e:
                _proc = None
                if attempt == 1:
                    return Solution("error", message=f"HiGHS worker failed: {e}")
    return Solution("error", message="HiGHS worker failed")


def main() -> None:
    """Serve requests on stdin/stdout until the parent closes the pipe."""
    from formulations._linmodel import Solution, _solve_pulp

    inp = sys.stdin.buffer
    # The protocol gets a private copy of the pipe; fd 1 itself then points at stderr, so that
    # chatter from HiGHS's C++ (which writes to fd 1, not sys.stdout) cannot corrupt the pipe.
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    while True:
        try:
            model, time_limit, threads, use_hint = _recv(inp)
        except EOFError:
            return
        try:
            sol = _solve_pulp(model, "highs", time_limit, threads, use_hint)
        except Exception as e:  # noqa: BLE001 - reported to the caller as an error status
            sol = Solution("error", message=f"HiGHS: {type(e).__name__}: {e}")
        _send(out, sol)
