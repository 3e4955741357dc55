"""Test-only methods for the batch tests, registered when this module is imported
(``planner batch --import batch_methods``, with tests/ on the Python path).

* ``test.faulty`` (network): misbehaves by the instance's ``meta.index``: 0 raises, 1 kills its
  own process with ``os._exit``, 2 hangs far past any time limit; other instances get
  Storm's EvenScheduler plan.
* ``test.sleepy`` (network): sleeps 0.3 s, then Storm's EvenScheduler plan (gives a batch
  enough duration to be killed midway).
"""

from __future__ import annotations

import os
import time

from heuristics.storm import even
from planner.registry import register


@register("test.faulty", ["network"], source="test only", kind="heuristic")
def faulty(instance, problem, *, time_limit=None, seed=0):
    """Raise, die or hang depending on meta.index; otherwise storm.even."""
    idx = (instance.meta or {}).get("index")
    if idx == 0:
        raise RuntimeError("boom: deliberate failure")
    if idx == 1:
        os._exit(7)
    if idx == 2:
        time.sleep(600)
    return even(instance, problem)


@register("test.sleepy", ["network"], source="test only", kind="heuristic")
def sleepy(instance, problem, *, time_limit=None, seed=0):
    """storm.even after 0.3 s."""
    time.sleep(0.3)
    return even(instance, problem)
