"""The packing check's share MILP in a child process (``_slotsrate.ShareJob`` on
``_child.Job``): its plans pass the evaluator, a job no longer wanted ends its child at once,
one job runs at a time, and a dead child is answered by None and replaced."""

from __future__ import annotations

import time

import pytest

import planner
from formulations import _slotsrate as sr
from formulations.slots import make_plan, prepare, shukla_micro_dag


def _micro(dag: str, rate: int):
    inst = shukla_micro_dag(dag, rate, nodes=8)
    inst["params"] = {"slot_usage": "rate"}
    inst = planner.load_instance(inst)
    d = prepare(inst, peak_usage_filter=False)
    R = sr.rows(d)
    return inst, d, R


def _app_cell():
    """The 7-task application DAG at 50 tuples/s on 5 slots, its even-routing bound: the share
    MILP needs several seconds for its plan there."""
    from planner.generate import generate

    inst = generate("shukla-app", 1, seed=0)[0]
    d = prepare(planner.load_instance(inst), peak_usage_filter=False)
    R = sr.rows(d)
    return d, R, sr.usage_tables(d, R, 6)


@pytest.fixture(autouse=True)
def _no_job_left():
    yield
    assert sr.ShareJob.lock.acquire(blocking=False), "a test left a share job running"
    sr.ShareJob.lock.release()


def test_a_plan_from_the_child_passes_the_evaluator_and_matches_the_search_in_process():
    """Diamond at 50 tuples/s has a plan on 4 slots (its optimum): the child's share MILP finds
    one, on exactly 4 slots, and it passes the evaluator; so does the same search in this
    process."""
    inst, d, R = _micro("diamond", 50)
    tables = sr.usage_tables(d, R, 5)
    job = sr.ShareJob.start(d, R, tables, 4, time.monotonic() + 60)
    assert job is not None
    q = job.result()
    assert q is not None and len({s for _, s in q}) == 4
    ev = planner.evaluate(inst, make_plan(d, q), "slots")
    assert ev["feasible"], ev["violations"]
    here = sr.share_search(d, R, tables, 4, time.monotonic() + 60)
    assert here is not None and len({s for _, s in here}) == 4


def test_one_job_at_a_time_and_a_cancelled_job_ends_its_child():
    """While a job runs, a second start returns None (the caller then searches in its own
    process); cancel ends the child at once, and the next job starts a new one and answers."""
    d, R, tables = _app_cell()
    job = sr.ShareJob.start(d, R, tables, 5, time.monotonic() + 60)
    assert job is not None
    proc = job.job.child.proc
    assert sr.ShareJob.start(d, R, tables, 5, time.monotonic() + 60) is None
    t = time.monotonic()
    job.cancel()
    assert time.monotonic() - t < 5 and proc.poll() is not None, "the child still runs"
    assert job.result() is None and not job.found()
    inst, dm, Rm = _micro("diamond", 50)
    again = sr.ShareJob.start(dm, Rm, sr.usage_tables(dm, Rm, 5), 4, time.monotonic() + 60)
    assert again is not None and again.job.child.proc is not proc
    assert again.result() is not None


def test_a_child_that_dies_gives_no_plan_and_is_replaced():
    """A child killed from outside: the job answers None at once and frees the next job, which
    starts another child (that one answering is the cancel test's part)."""
    d, R, tables = _app_cell()
    job = sr.ShareJob.start(d, R, tables, 5, time.monotonic() + 60)
    assert job is not None
    proc = job.job.child.proc
    proc.kill()
    t = time.monotonic()
    assert job.result() is None and time.monotonic() - t < 5
    again = sr.ShareJob.start(d, R, tables, 5, time.monotonic() + 60)
    assert again is not None and again.job.child.proc is not proc and again.job.child.alive()
    again.cancel()


def test_an_answer_not_in_time_ends_the_child():
    """result() waits until the job's deadline and 1 s more; a child still solving then is
    ended (here the deadline is shortened after the start, so the child's own clock runs on)."""
    d, R, tables = _app_cell()
    job = sr.ShareJob.start(d, R, tables, 5, time.monotonic() + 60)
    assert job is not None
    proc = job.job.child.proc
    job.deadline = time.monotonic() + 0.5
    t = time.monotonic()
    assert job.result() is None
    assert 1.0 < time.monotonic() - t < 5 and proc.poll() is not None


def test_the_randomised_search_stops_when_another_search_has_a_plan():
    """``_search`` asks ``stop`` before every attempt: told at once, it makes none."""
    inst, d, R = _micro("star", 200)
    L = 12
    tables = sr.usage_tables(d, R, L + 1)
    room = sr.room_at(tables, L)
    dp = {c: sr._dp_sets(R, c, L, list(sr.EVEN_WEIGHTS)) for c in range(d.C) if sr.all_scaled(d, R, c)}
    lists, by_count, _ = sr.describe(R, tables, L, room, dp, time.monotonic() + 10)
    comps = sr.gather(d, R, lists, by_count)
    asked = []
    t = time.monotonic()
    assert sr._search(d, R, L, comps, by_count, time.monotonic() + 30, stop=lambda: asked.append(1) or True) is None
    assert asked == [1] and time.monotonic() - t < 1
    # and without the stop, the same search finds Star 200's plan on 12 slots (266 attempts)
    q = sr._search(d, R, L, comps, by_count, time.monotonic() + 60)
    assert q is not None and sr.valid(d, R, q)
