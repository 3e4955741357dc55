"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


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
