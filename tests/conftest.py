"""Shared test fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Python's default is to cache compiled modules (__pycache__, ignored by git). Where the machine
# sets PYTHONDONTWRITEBYTECODE, every process the tests start (CLI runs, Spark's Python workers,
# the HiGHS and service workers) compiles the project's sources again: about 0.5 s each, 11 of
# the 32 s of tests/test_cli*.py on session 16's machine. The tests run with the default.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


def shared_dir() -> Path | None:
    """The steering repo's shared/ folder: $PLANNER_SHARED, else beside the repo, else /work/shared."""
    for cand in (os.environ.get("PLANNER_SHARED"), REPO.parent / "shared", Path("/work/shared")):
        if cand and Path(cand).is_dir() and (Path(cand) / "data").is_dir():
            return Path(cand)
    return None


@pytest.fixture
def shared() -> Path:
    d = shared_dir()
    if d is None:
        pytest.skip("../shared is not present")
    return d


def pytest_sessionfinish(session, exitstatus):
    from helpers import stop_local_spark  # the shared embedded Spark, if a test started it

    stop_local_spark()
