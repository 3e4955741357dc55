"""aniello.online's greedy (``heuristics.aniello._greedy_pairs``) keeps each item's traffic to
every bin up to date and compares cut costs in exact integers (session 27: summing every
neighbour for every candidate took 148 s on one topology of Storm's largeCluster01). This file
holds the rule written the plain way, as ALGORITHMS.md states it (each candidate's cut summed
over the neighbours, in floats, bins as lists), and checks that both give the same plan, the
same slots in the same order, on random instances of every shape the generators make."""

from __future__ import annotations

import math
from typing import Any

import pytest

import heuristics.aniello as A
from formulations._gen import layered, multitenant, small_random
from planner import solve
from planner.model import parse_instance


class _ListBins:
    def __init__(self, n: int, count_cap: list[int], load_cap: list[float]):
        self.items: list[list[Any]] = [[] for _ in range(n)]
        self.load = [0.0] * n
        self.count_cap = count_cap
        self.load_cap = load_cap
        self.where: dict[Any, int] = {}

    def can(self, k, n_items, load):
        return (len(self.items[k]) + n_items <= self.count_cap[k]
                and self.load[k] + load <= self.load_cap[k] + 1e-9 * max(1.0, abs(self.load_cap[k])))

    def least_loaded(self, n_items, load):
        ok = [k for k in range(len(self.items)) if self.can(k, n_items, load)]
        return min(ok, key=lambda k: (self.load[k], len(self.items[k]), k)) if ok else None

    def put(self, x, k, load):
        self.items[k].append(x)
        self.load[k] += load
        self.where[x] = k

    def take(self, x, load):
        k = self.where.pop(x)
        self.items[k].remove(x)
        self.load[k] -= load


def _plain_greedy(pairs, items, load, adj, bins, deadline=None) -> str | None:
    def cut_with(x, k, skip):
        return sum(w for y, w in adj.get(x, {}).items() if y != skip and y in bins.where and bins.where[y] != k)

    for a, b, _ in pairs:
        if a not in bins.where and b not in bins.where:
            k = bins.least_loaded(2, load[a] + load[b])
            if k is not None:
                bins.put(a, k, load[a])
                bins.put(b, k, load[b])
                continue
            k = bins.least_loaded(1, load[a])
            if k is None:
                return f"no room for {a}"
            bins.put(a, k, load[a])
            k2 = k if bins.can(k, 1, load[b]) else bins.least_loaded(1, load[b])
            if k2 is None:
                return f"no room for {b}"
            bins.put(b, k2, load[b])
            continue
        cand = sorted({bins.where[x] for x in (a, b) if x in bins.where})
        heavy = a if load[a] >= load[b] else b
        extra = bins.least_loaded(1, load[heavy])
        if extra is not None and extra not in cand:
            cand.append(extra)
        old = {x: bins.where[x] for x in (a, b) if x in bins.where}
        for x in old:
            bins.take(x, load[x])
        best = None
        for ka in cand:
            if not bins.can(ka, 1, load[a]):
                continue
            for kb in cand:
                if ka == kb:
                    if not bins.can(ka, 2, load[a] + load[b]):
                        continue
                elif not bins.can(kb, 1, load[b]):
                    continue
                cost = cut_with(a, ka, b) + cut_with(b, kb, a) + (adj.get(a, {}).get(b, 0.0) if ka != kb else 0.0)
                if best is None or cost < best[0] - 1e-12:
                    best = (cost, ka, kb)
        if best is None:
            for x in (a, b):
                k = old.get(x)
                if k is None or not bins.can(k, 1, load[x]):
                    k = bins.least_loaded(1, load[x])
                if k is None:
                    return f"no room for {x}"
                bins.put(x, k, load[x])
            continue
        bins.put(a, best[1], load[a])
        bins.put(b, best[2], load[b])
    for x in items:
        if x not in bins.where:
            k = bins.least_loaded(1, load[x])
            if k is None:
                return f"no room for {x}"
            bins.put(x, k, load[x])
    return None


def _instances():
    for seed in range(60):
        yield f"small_random {seed}", small_random("traffic", seed)
    for seed in range(12):
        d = layered(30 + 5 * seed, 4 + seed % 6, 4 + seed % 5, seed, problem="traffic")
        d.setdefault("params", {})["alpha"] = (0.0, 0.5, 1.0)[seed % 3]
        yield f"layered {seed}", d
    for seed in range(8):
        yield f"multitenant {seed}", multitenant(3, 40, 5, 8, seed)


def _slots(r):
    return None if r.plan is None else [(p.topology, p.component, p.executor, p.node, p.slot) for p in r.plan.placements]


@pytest.mark.parametrize("capacity", [None, "tight"])
def test_the_fast_greedy_gives_the_plain_rules_plan(capacity, monkeypatch):
    compared = placed = 0
    for name, d in _instances():
        inst = parse_instance(d)
        opts = {}
        if capacity == "tight":  # node capacity B at 60 % of each node's CPU: phase 2 must spread
            opts["capacity"] = {n.id: 0.6 * n.cpu for n in inst.cluster.nodes}
        fast = solve(inst, "traffic", "aniello.online", **opts)
        with monkeypatch.context() as mp:
            mp.setattr(A, "_Bins", _ListBins)
            mp.setattr(A, "_greedy_pairs", _plain_greedy)
            plain = solve(inst, "traffic", "aniello.online", **opts)
        assert fast.status == plain.status, (name, fast.message, plain.message)
        assert _slots(fast) == _slots(plain), name
        assert fast.message == plain.message, name
        if fast.objective is not None:
            assert math.isclose(fast.objective, plain.objective, rel_tol=1e-12, abs_tol=1e-9), name
        compared += 1
        placed += fast.plan is not None
    assert compared == 80 and placed >= (40 if capacity is None else 20), (compared, placed)


def test_the_online_scheduler_keeps_its_time_limit():
    """Stopped by its time limit, aniello.online returns no plan with status unknown and says
    where it stopped; with a current plan (section 3.2.1's rescheduling) that plan is kept.
    Without a limit the same instance gets a plan (with a node capacity B it can meet)."""
    inst = parse_instance(layered(60, 6, 6, 0, problem="traffic"))
    r = solve(inst, "traffic", "aniello.online", time_limit=1e-9)
    assert r.status.value == "unknown" and r.plan is None
    assert r.message.startswith("stopped by the time limit (1e-09 s) in phase 1 (executors to slots) of topology"), r.message
    whole = solve(inst, "traffic", "aniello.online", capacity=1e9)  # B past every node's CPU: a plan
    assert whole.plan is not None and whole.metrics["executors_placed"] == 60, whole.message
    kept = solve(inst, "traffic", "aniello.online", time_limit=1e-9, current_plan=whole.plan.model_dump())
    assert kept.details["rescheduled"] is False and _slots(kept) == _slots(whole)  # judged as it stands
