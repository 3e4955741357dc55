"""Probe one slot count of an application-style DAG under rate usage: does a plan on exactly L
interchangeable slots exist, and which of the exact driver's routes decides it?
(docs/benchmarks.md, "slots: application-style DAGs, where the proofs stop (session 10)").

    PYTHONPATH=. python benchmarks/slots_app_probe.py --cell 1 --slots 8 --limit 60
    PYTHONPATH=. python benchmarks/slots_app_probe.py --cell 1 --routes fixed-random --tries 20 --limit 10
    PYTHONPATH=. python benchmarks/slots_app_probe.py --cell 1 --routes fixed-search --limit 25 --fixed-seeds 0,1,2

The instance is cell ``--cell`` (0-5) of ``planner generate shukla-app`` with ``--seed``
(default 0: cell 1 is the 11-task DAG at 50 tuples/s, bound 8). ``--slots`` defaults to the
even-routing bound. Routes, each with ``--limit`` seconds, one after another:

* ``check``: ``_slotsrate.packing_check`` (its searches, then the per-count models);
* ``share``: the share MILP on the first L slots with the component cuts (HiGHS; exact, so
  "infeasible" would be a proof for that back end);
* ``split``: ``_pack_split`` alone (one CP-SAT model per thread count of the component with
  the most counts), on the check's own descriptions;
* ``fixed-cpsat`` / ``fixed-highs``: every rate-scaled component's thread count fixed at its
  least-CPU count; a plain 0/1 packing (one binary per component, slot and row kept at that
  count, constant sizes) by CP-SAT (2 workers) or HiGHS. A probe, neither a relaxation nor a
  restriction of the question: a plan it finds is checked by the evaluator's rate rule;
* ``fixed-random``: ``fixed-cpsat`` on ``--tries`` random count vectors (each component's k-th
  cheapest count, k exponential with mean 2, the vector's CPU excess within the room; seeded),
  ``--limit`` seconds each, until one gives a plan;
* ``fixed-search``: ``_slotsrate.fixed_search`` itself (the packing check's fixed-count search:
  the least-CPU vector ``--least-tries`` times, then random vectors; the two forms of the
  thread sums alternating, or only the exact one with ``--exact-form-only``; each try of a
  vector afresh, or hinted with its tries' best near-packing with ``--fixed-hints``), ``--limit``
  seconds for each of the plan-search seeds ``--fixed-seeds`` (docs/benchmarks.md, "slots:
  seed 0's 11 tasks at 50 t/s has a plan at its bound ... (session 43)");
* ``anneal``: ``_slotsrate.anneal_pack`` (the fixed-count search's annealing, session 46) on the
  least-CPU count vector (components named in ``--pick`` at the counts given there), ``--limit`` seconds for each seed of ``--fixed-seeds``
  (docs/benchmarks.md, "slots: the least-CPU count vector annealed ... (session 46)");
* ``anneal-vectors``: ``_slotsrate.anneal_vectors`` (since session 47 the fixed-count search's
  annealing: a climb over count vectors from the least-CPU one, each scored by a short
  ``anneal_pack``), ``--limit`` seconds for each seed of ``--fixed-seeds`` (docs/benchmarks.md,
  "slots: seed 0's 15 tasks at 100 t/s has a plan at its bound ... (session 47)");
* ``compose``: ``_slotsrate.compose_search`` (since session 48 the fixed-count search's first
  step: one CP-SAT model over every component's tied thread counts at once, then with more
  counts), ``--limit`` seconds for each seed of ``--fixed-seeds``; ``--levels`` sets its levels
  (``--levels 0:1`` the ties alone) (docs/benchmarks.md, "slots: one model over the tied thread
  counts ... (session 48)");
* ``check-trace``: ``check`` with each of its searches timed (the listing, the randomised
  search, the share MILP, the fixed-count search, the per-count models): when each started and
  ended and what it returned; ``--shares R,S`` sets the randomised search's and the share
  MILP's shares of the time left (``_slotsrate.RANDOM_SHARE``, ``SHARE_MILP_SHARE``) for every
  route (docs/benchmarks.md, "slots: the packing check's time shares ... (session 17)");
* ``vectors``: how many thread-count vectors of the components described by thread count
  fit the CPU and memory room (the size of a search over them).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from formulations import _slotsrate as sr  # noqa: E402
from formulations.slots import prepare  # noqa: E402
from planner.generate import generate  # noqa: E402

CPU, MEM = (1.0, 0.0), (0.0, 1.0)


def setup(cell: int, seed: int, L: int | None):
    inst = list(generate("shukla-app", 6, seed))[cell]
    d = prepare(inst, peak_usage_filter=False)
    R = sr.rows(d)
    gq = sr.greedy(d, R)
    n0 = len({s for _, s in gq})
    tables = sr.usage_tables(d, R, max(n0 - 1, (L or 0) + 1), None)
    eb = sr.even_bound(d, R, n0 - 1, tables=tables)
    return inst, d, R, tables, eb, n0


def descriptions(d, R, tables, L):
    """The packing check's own descriptions at L (``describe``, ``gather``; the listing given
    5 s): (comps, by_count, counts of every scaled component, room)."""
    room = sr.room_at(tables, L)
    dp = {c: sr._dp_sets(R, c, L, list(sr.EVEN_WEIGHTS)) for c in range(d.C) if sr.all_scaled(d, R, c)}
    got = sr.describe(R, tables, L, room, dp, time.monotonic() + 5)
    if got is None:
        sys.exit(f"the thread counts at L = {L} could not be listed in 5 s")
    lists, by_count, counts = got
    return sr.gather(d, R, lists, by_count), by_count, counts, room


PICK: dict = {}  # ``--pick``: component -> thread count, in place of its least-CPU count


def least_pick(counts):
    """Every rate-scaled component at its least-CPU thread count (``fixed_pack``'s ``pick``),
    or at its ``--pick`` count."""
    out = {c: min(tc, key=lambda e: e[1]) for c, tc in counts.items()}
    for c, Q in PICK.items():
        out[c] = next(e for e in counts[c] if e[0] == Q)
    return out


def fixed_cpsat(d, R, L, comps, counts, limit):
    """The fixed-count 0/1 packing (``_slotsrate.fixed_pack``: exact thread sums, CP-SAT with two
    workers) with every rate-scaled component at its least-CPU count."""
    st, q = sr.fixed_pack(d, R, L, comps, least_pick(counts), limit)
    return st, q


def per_seed(seeds, find, digits: int = 2):
    """``find(seed)`` -> (plan or None, whether it passes the rate rule) for each seed: the
    outcome, one "seed: plan in T s" or "seed: none in T s" per seed, and the last plan that
    passes."""
    found, last = [], None
    for s in seeds:
        t = time.monotonic()
        q, ok = find(s)
        found.append(f"seed {s}: {'plan' if ok else 'none'} in {time.monotonic() - t:.{digits}f} s")
        last = q if ok else last
    n = sum("plan" in f for f in found)
    return f"{n} of {len(seeds)} seeds with a plan ({'; '.join(found)})", last


def annealings(d, R, L, comps, counts, room, seeds, limit: float, climb: bool = False):
    """``_slotsrate.anneal_pack`` on the least-CPU count vector (``climb``: ``anneal_vectors``,
    the climb over count vectors from it) for each seed in ``seeds``, ``limit`` seconds each
    (``per_seed``'s outcome and plan)."""
    def find(s):
        if climb:
            q = sr.anneal_vectors(d, R, L, counts, room, comps, limit, s)
        else:
            _, q = sr.anneal_pack(d, R, L, comps, least_pick(counts), limit, s)
        return q, q is not None and sr.valid(d, R, q)
    return per_seed(seeds, find)


def composes(d, R, L, comps, counts, room, seeds, limit: float):
    """``_slotsrate.compose_search`` for each seed in ``seeds``, ``limit`` seconds each
    (``per_seed``'s outcome and plan)."""
    def find(s):
        q = sr.compose_search(d, R, L, comps, counts, room, limit, s)
        return q, q is not None and sr.valid(d, R, q)
    return per_seed(seeds, find)


def fixed_highs(d, R, L, comps, counts, limit):
    import highspy
    import numpy as np

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(limit))
    h.setOptionValue("threads", 1)
    inf = highspy.kHighsInf
    x = {}
    load_c, load_m = [[] for _ in range(L)], [[] for _ in range(L)]

    def row(lo, hi, terms):
        h.addRow(lo, hi, len(terms), np.array([i for i, _ in terms], dtype=np.int32), np.array([a for _, a in terms], dtype=float))

    groups = sr.fixed_items(d, R, comps, least_pick(counts))
    if groups is None:
        return "unknown (a component with rows of mixed kinds)", None
    for c, (Q, items) in groups.items():
        allv = []
        for b in range(L):
            here = []
            for q, uc, um in items:
                i = x[(c, b, q)] = h.getNumCol()
                h.addVar(0, 1)
                h.changeColIntegrality(i, highspy.HighsVarType.kInteger)
                here.append((i, 1.0))
                allv.append((i, float(q)))
                load_c[b].append((i, uc))
                load_m[b].append((i, um))
            row(-inf, 1, here)
        row(Q, Q, allv) if Q is not None else row(1, 1, [(i, 1.0) for i, _ in allv])
    for b in range(L):
        row(-inf, 100 * (1 - 1e-7), load_c[b])
        row(-inf, 100 * (1 - 1e-7), load_m[b])
    for b in range(L - 1):
        row(0, inf, load_c[b] + [(i, -a) for i, a in load_c[b + 1]])
    h.run()
    st = h.getModelStatus()
    if st == highspy.HighsModelStatus.kInfeasible:
        return "infeasible", None
    if st != highspy.HighsModelStatus.kOptimal:
        return "unknown", None
    val = h.getSolution().col_value
    return "feasible", {(c, b): q for (c, b, q), i in x.items() if val[i] > 0.5}


def fixed_random(d, R, L, comps, counts, room, tries: int, limit: float):
    """``fixed_cpsat`` on random count vectors within the CPU room: (outcome, plan or None),
    the outcome counting the vectors by answer."""
    import random

    rng = random.Random(0)
    base = {c: sorted(tc, key=lambda e: e[1]) for c, tc in counts.items()}
    seen = {"infeasible": 0, "unknown": 0}
    for _ in range(tries):
        while True:
            pick = {c: tc[min(len(tc) - 1, int(rng.expovariate(0.5)))] for c, tc in base.items()}
            if sum(pick[c][1] - tc[0][1] for c, tc in base.items()) <= room[CPU]:
                break
        st, q = sr.fixed_pack(d, R, L, comps, pick, limit)
        if st == "feasible":
            return f"feasible after {sum(seen.values()) + 1} vectors", q
        seen[st] += 1
    return f"{seen['infeasible']} vectors infeasible, {seen['unknown']} unknown", None


def fixed_searches(d, R, L, comps, counts, room, seeds, limit: float, exact_only: bool):
    """``fixed_search`` for each plan-search seed in ``seeds``, ``limit`` seconds each: the
    outcome, one "seed: plan in T s" or "seed: none in T s" per seed, and the last plan found."""
    pack = sr.fixed_pack
    if exact_only:  # every try in the exact form (the search alternates exact / at-least)
        sr.fixed_pack = lambda d, R, L, comps, pick, limit, seed=0, at_least=False, keep=None: pack(
            d, R, L, comps, pick, limit, seed, False, keep=keep)
    try:
        def find(s):
            q = sr.fixed_search(d, R, L, comps, counts, room, time.monotonic() + limit, seed=s)
            return q, q is not None and sr.valid(d, R, q)
        return per_seed(seeds, find, 1)
    finally:
        sr.fixed_pack = pack


def vectors(by_count, room, cap: int = 10 ** 8) -> int:
    """Thread-count vectors of the components described by thread count whose CPU and memory
    excess over their least usage fits the room (counted up to ``cap``)."""
    ex = []
    for tc in by_count.values():
        lc, lm = min(e[1] for e in tc), min(e[2] for e in tc)
        ex.append(sorted(((e[1] - lc, e[2] - lm) for e in tc)))
    n = 0

    def rec(i, rc, rm):
        nonlocal n
        if n >= cap:
            return
        if i == len(ex):
            n += 1
            return
        for a, b in ex[i]:
            if a > rc + 1e-9:
                break
            if b <= rm + 1e-9:
                rec(i + 1, rc - a, rm - b)

    rec(0, room[CPU], room[MEM])
    return n


def traced_check(d, R, tables, L, deadline):
    """``packing_check`` with its searches timed: prints, for each one called, when it started
    and ended (seconds from the check's start) and its answer's kind."""
    names = ("describe", "_search", "share_search", "fixed_search", "_pack_split")
    saved = {n: getattr(sr, n) for n in names}
    t0 = time.monotonic()

    def timed(name, f):
        def g(*args, **kw):
            t = time.monotonic()
            r = f(*args, **kw)
            kind = r[0] if isinstance(r, tuple) and r and isinstance(r[0], str) else "none" if r is None else "found"
            print(f"|   {name} | {t - t0:.2f} -> {time.monotonic() - t0:.2f} | {kind} |", flush=True)
            return r
        return g

    for n in names:
        setattr(sr, n, timed(n, saved[n]))
    try:
        return sr.packing_check(d, R, tables, L, deadline)
    finally:
        for n, f in saved.items():
            setattr(sr, n, f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cell", type=int, default=1, help="cell of the shukla-app batch, 0-5 (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    ap.add_argument("--slots", type=int, default=None, help="the slot count L to probe (default: the even-routing bound)")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per route (default 60)")
    ap.add_argument("--routes", default="check,share,split,fixed-cpsat,fixed-highs,vectors",
                    help="comma-separated, from check, check-trace, compose, fixed-search, anneal, anneal-vectors, share, split, fixed-cpsat, fixed-highs, fixed-random, vectors")
    ap.add_argument("--pick", default="",
                    help="anneal, fixed-cpsat and fixed-highs: NAME=Q,... components at these thread counts instead of their "
                         "least-CPU ones (e.g. pi-1=6,pi-2=6); each must be one of the component's counts at L")
    ap.add_argument("--levels", default=None,
                    help="compose: EXTRA:TRIES,... the search's levels (counts beyond the ties per component, tries a "
                         f"round; default {','.join(f'{e}:{t}' for e, t in sr.COMPOSE_LEVELS)}, the code's)")
    ap.add_argument("--compose-lns", action="store_true",
                    help="compose: a level's tries after its first by CP-SAT's neighbourhood searches alone "
                         "(_slotsrate.COMPOSE_LNS, off in the code: no gain measured, session 48)")
    ap.add_argument("--tries", type=int, default=20, help="count vectors for fixed-random (default 20)")
    ap.add_argument("--fixed-seeds", default="0", help="fixed-search, compose, anneal and anneal-vectors: comma-separated seeds (default 0)")
    ap.add_argument("--least-tries", type=int, default=sr.FIXED_LEAST_TRIES,
                    help=f"fixed-search: tries of the least-CPU vector (default {sr.FIXED_LEAST_TRIES}, the code's)")
    ap.add_argument("--exact-form-only", action="store_true",
                    help="fixed-search: every try with the thread sums exact (the code alternates exact and at-least)")
    ap.add_argument("--fixed-hints", action="store_true",
                    help="fixed-search and check: each try of a vector starts from the best near-packing of the "
                    "vector's tries before, and stays on a vector while its overflow falls (_slotsrate.FIXED_HINTS, "
                    "off in the code: no gain measured, session 45)")
    ap.add_argument("--shares", default=None, help="R,S: the packing check's randomised-search and share-MILP "
                    f"shares of the time left (default {sr.RANDOM_SHARE},{sr.SHARE_MILP_SHARE})")
    a = ap.parse_args()
    if a.shares:
        try:
            sr.RANDOM_SHARE, sr.SHARE_MILP_SHARE = (float(x) for x in a.shares.split(","))
        except ValueError:
            ap.error(f"--shares takes two numbers, R,S (got {a.shares!r})")
    try:
        fixed_seeds = [int(x) for x in a.fixed_seeds.split(",")]
    except ValueError:
        ap.error(f"--fixed-seeds takes comma-separated integers (got {a.fixed_seeds!r})")
    if a.least_tries < 0:
        ap.error(f"--least-tries must be 0 or more (got {a.least_tries})")
    if a.levels:
        try:
            sr.COMPOSE_LEVELS = tuple(tuple(int(x) for x in lv.split(":")) for lv in a.levels.split(","))
            assert all(len(lv) == 2 and lv[0] >= 0 and lv[1] >= 1 for lv in sr.COMPOSE_LEVELS)
        except (ValueError, AssertionError):
            ap.error(f"--levels takes EXTRA:TRIES,... with EXTRA >= 0 and TRIES >= 1 (got {a.levels!r})")
    sr.COMPOSE_LNS = a.compose_lns
    sr.FIXED_LEAST_TRIES = a.least_tries
    sr.FIXED_HINTS = a.fixed_hints
    known = {"check", "check-trace", "compose", "fixed-search", "anneal", "anneal-vectors", "share", "split", "fixed-cpsat", "fixed-highs", "fixed-random", "vectors"}
    routes = [r for r in a.routes.split(",") if r]
    if not 0 <= a.cell <= 5 or not set(routes) <= known:
        ap.error(f"--cell must be 0-5 and --routes a list of {sorted(known)}")
    inst, d, R, tables, eb, n0 = setup(a.cell, a.seed, a.slots)
    L = a.slots or eb
    comps, by_count, counts, room = descriptions(d, R, tables, L)
    for item in filter(None, a.pick.split(",")):
        name, _, val = item.partition("=")
        c = d.comps.index(name) if name in d.comps else None
        if c is None or c not in counts or not val.isdigit():
            ap.error(f"--pick {item!r}: want NAME=Q with NAME a rate-scaled component of {sorted(d.comps[k] for k in counts)}")
        if all(e[0] != int(val) for e in counts[c]):
            ap.error(f"--pick {item!r}: {val} is not one of {name}'s thread counts at L = {L} "
                     f"({sorted(e[0] for e in counts[c])})")
        PICK[c] = int(val)
    print(f"{inst.name}: {inst.meta['tasks']} tasks, {inst.topologies[0].input_rate:g} tuples/s; greedy {n0} slots, "
          f"even-routing bound {eb}; probing L = {L}: room CPU {room[CPU]:.2f} %, memory {room[MEM]:.2f} %")
    print("described by thread count: " + ", ".join(f"{d.comps[c]} ({len(v)} counts)" for c, v in by_count.items()))
    print("| route | seconds | outcome |\n|---|---|---|")
    for r in routes:
        t = time.monotonic()
        if r == "check":
            st, q = sr.packing_check(d, R, tables, L, t + a.limit)
        elif r == "check-trace":
            st, q = traced_check(d, R, tables, L, t + a.limit)
        elif r == "share":
            dk = sr.first_slots(d, L)
            out, q, _ = sr.milp(dk, R, None, a.limit, True, solver="highs", cuts=sr.component_cuts(d, tables, L), min_slots=L)
            st = out.status if q is None else "feasible"
            q = None if q is None else q if sr.valid(dk, R, q) else {}  # its plan is on dk's slots
        elif r == "split":
            st, q = sr._pack_split(d, R, tables, L, comps, by_count, t + a.limit)
        elif r == "fixed-search":
            st, q = fixed_searches(d, R, L, comps, counts, room, fixed_seeds, a.limit, a.exact_form_only)
        elif r == "compose":
            st, q = composes(d, R, L, comps, counts, room, fixed_seeds, a.limit)
        elif r in ("anneal", "anneal-vectors"):
            st, q = annealings(d, R, L, comps, counts, room, fixed_seeds, a.limit, r == "anneal-vectors")
        elif r == "fixed-random":
            st, q = fixed_random(d, R, L, comps, counts, room, a.tries, a.limit)
        elif r == "vectors":
            n = vectors(by_count, room)
            st, q = (f"{n:,} vectors" if n < 10 ** 8 else "at least 100,000,000 vectors (counting stopped)"), None
        else:
            st, q = fixed_cpsat(d, R, L, comps, counts, a.limit) if r == "fixed-cpsat" else fixed_highs(d, R, L, comps, counts, a.limit)
        if q == {}:
            st += " (its plan fails the rate rule)"
        elif q is not None:
            st += f" (a plan on {len({s for _, s in q})} slots; passes the rate rule: {sr.valid(d, R, q)})"
        print(f"| {r} | {time.monotonic() - t:.1f} | {st} |", flush=True)


if __name__ == "__main__":
    main()
