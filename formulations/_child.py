"""A persistent Python child process that serves one request at a time over its pipes.

Two uses: ``_highs_worker`` (highspy, which cannot share a process with OR-Tools) and
``_slotsrate.ShareJob`` (the share MILP by SciPy's HiGHS beside the randomised search, a busy
Python loop: SciPy's HiGHS releases the GIL but takes it back so often that a busy Python
thread beside it made a 5.9 s solve take 22.7 s; in a child both run at full speed, and the
child can be stopped, which an in-process HiGHS cannot). ``Job`` is one request served while
the caller goes on with its own work.

The parent sends a pickled request on the child's stdin and reads the pickled answer from its
stdout, each framed by an 8-byte length. The child's fd 1 is pointed at stderr, so that chatter
from C++ (which writes to fd 1, not sys.stdout) cannot corrupt the pipe. The child exits when
the parent closes the pipe.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable


def send(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def recv(stream):
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the child process closed its pipe")
    (n,) = struct.unpack("<Q", head)
    data = stream.read(n)
    if len(data) < n:
        raise EOFError("the child process closed its pipe")
    return pickle.loads(data)


class Child:
    """The parent's handle: ``entry`` names the child's main, "module:function" (a function
    that calls :func:`serve`). Started on first use, again after it died or was killed."""

    def __init__(self, entry: str, env: dict[str, str] | None = None):
        self.entry = entry
        self.env = env or {}  # set in the child's environment
        self.proc: subprocess.Popen | None = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        if self.alive():
            return
        module, func = self.entry.split(":")
        root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.update(self.env)
        # run from root: ``python -c`` puts the working directory first on sys.path, where
        # another checkout's package would shadow this one
        self.proc = subprocess.Popen([sys.executable, "-c", f"from {module} import {func}; {func}()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=root)

    def submit(self, request) -> None:
        """Send a request (starting the child if needed); raises OSError if the pipe broke."""
        self.start()
        send(self.proc.stdin, request)

    def ready(self, timeout: float = 0.0) -> bool:
        """Whether the answer (or the child's end) can be read without waiting past ``timeout``
        seconds."""
        if not self.alive():
            return True
        r, _, _ = select.select([self.proc.stdout], [], [], max(0.0, timeout))
        return bool(r)

    def answer(self):
        """The answer to the last request (blocks); EOFError if the child died."""
        if self.proc is None:
            raise EOFError("no child process")
        return recv(self.proc.stdout)

    def call(self, request):
        """submit, then answer; one retry with a fresh child if the first one's pipe broke."""
        for attempt in range(2):
            try:
                self.submit(request)
                return self.answer()
            except (EOFError, BrokenPipeError, OSError):
                self.kill()
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def kill(self) -> None:
        """Stop the child at once (its request is dropped); the next use starts another."""
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
        self.proc = None


class Job:
    """One request to ``child`` answered while the caller goes on: ``start`` sends it (None
    when ``lock``, one per child, is held by another job, or no child can be started), ``done``
    polls, ``answer`` waits a bounded time, ``cancel`` (or an answer not in time) ends the
    child, so that its work stops at once; the next job starts another child."""

    def __init__(self, child: Child, lock: threading.Lock):
        self.child, self.lock = child, lock
        self.over = False
        self.value = None

    @classmethod
    def start(cls, child: Child, lock: threading.Lock, request) -> "Job | None":
        if os.name != "posix" or not lock.acquire(blocking=False):
            return None
        job = cls(child, lock)
        try:
            child.submit(request)
        except (OSError, ValueError):
            child.kill()
            job._end()
            return None
        return job

    def _end(self) -> None:
        self.over = True
        self.lock.release()

    def done(self) -> bool:
        """Whether the answer can be read now (never waits)."""
        return self.over or self.child.ready(0.0)

    def answer(self, wait: float):
        """The child's answer, waiting at most ``wait`` seconds; None when it gave none in
        time (the child is then ended) or died."""
        if not self.over:
            try:
                if self.child.ready(wait):
                    self.value = self.child.answer()
                else:
                    self.child.kill()
            except (EOFError, OSError):
                self.child.kill()
            self._end()
        return self.value

    def cancel(self) -> None:
        """Drop the job; a child still working on it is ended."""
        if not self.over:
            self.child.kill()
            self._end()


def serve(handle: Callable[[Any], Any]) -> None:
    """The child's loop: answer each request with ``handle(request)`` until the parent closes
    the pipe. ``handle`` reports its own errors in its answer."""
    inp = sys.stdin.buffer
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    while True:
        try:
            request = recv(inp)
        except EOFError:
            return
        send(out, handle(request))
