"""Pieces the exact slots models share (``slots`` for peak usage, ``_slotsrate`` for rate usage):
integer node prices and the slot weight, the cover cut, slot/node symmetry, the MILPs'
incompatibility and max_per_node rows, and the start and end of both CP-SAT models (docs/formulations.md, "Slots")."""

from __future__ import annotations

import math


def price_weights(d) -> tuple[list[int], int]:
    """Integer node prices (10^-4 resolution) and the weight of one slot, which exceeds any cost."""
    pw = [round(p * 10_000) for p in d.price]
    return pw, sum(pw) + 1


def cover(d, c: int, v: dict, add, total=sum) -> None:
    """Redundant cut: the slots' peak rates cover the component's rate. The shares q_s / Q_c
    sum to 1 and each is at most peak_s / rho_c, so sum_s peak_s >= rho_c. It tightens the LP
    relaxation a lot; it removes no allocation."""
    if d.rho[c] <= 0 or any(math.isinf(o.peak) for o in d.options[c]):
        return
    terms = [(o.peak, v[(c, s, o.q)]) for s in range(d.S) for o in d.options[c] if (c, s, o.q) in v]
    if terms:
        top = max(pk for pk, _ in terms)
        scale = 1000.0 / top  # integer coefficients for CP-SAT: round the peaks up (still valid)
        add(total(math.ceil(pk * scale) * x for pk, x in terms) >= math.floor(d.rho[c] * scale))


def symmetry(d, add, u, w) -> None:
    """Slots of one node are interchangeable: use them in port order. Identical neighbouring
    nodes (price, site, slots, pins): use them in id order."""
    for s in range(d.S - 1):
        if d.slot_node[s] == d.slot_node[s + 1]:
            add(u[s] >= u[s + 1])
    for k in range(len(d.nodes) - 1):
        if d.node_ident[k] == d.node_ident[k + 1]:
            add(w[k] >= w[k + 1])


def cpsat_threads(d, m, u, v, c, rows, lo: int, hi: int):
    """What both CP-SAT slots models (``slots._cpsat`` and ``_slotsrate.cpsat``) start with, for component
    c: Q_c in [lo, hi], v[(c, s, q)] "slot s holds q threads of c" for each row (objects with
    ``.q`` and ``.need``) on each allowed slot, at most one q per slot, v implies the slot is
    used (u[s]) and Q_c >= need, Q_c = sum q v, and the cover cut ``cover``.
    Returns Q_c."""
    Qc = m.NewIntVar(lo, hi, f"Q[{c}]")
    terms = []
    for s in range(d.S):
        if not d.allowed[c][s]:
            continue
        vs = []
        for r in rows:
            x = m.NewBoolVar(f"v[{c},{s},{r.q}]")
            v[(c, s, r.q)] = x
            vs.append(x)
            terms.append(r.q * x)
            if r.need > 1:
                m.Add(Qc >= r.need).OnlyEnforceIf(x)
            m.AddImplication(x, u[s])
        if vs:
            m.AddAtMostOne(vs)
    m.Add(Qc == sum(terms))
    cover(d, c, v, lambda e: m.Add(e))
    return Qc


def cpsat_tail(d, m, v, u, w, rows, hint) -> int:
    """What both CP-SAT slots models (``slots._cpsat`` and ``_slotsrate.cpsat``) end with: max_per_node per
    node (``rows[c]``: objects with ``.q``), slot/node symmetry, the objective W slots + VM cost,
    and the hint (a {(c, s): q} allocation). Returns W."""
    for c in range(d.C):
        if d.max_per_node[c] is not None:
            for k in range(len(d.nodes)):
                terms = [r.q * v[(c, s, r.q)] for s in range(d.S) if d.slot_node[s] == k for r in rows[c] if (c, s, r.q) in v]
                if terms:
                    m.Add(sum(terms) <= d.max_per_node[c])
    symmetry(d, m.Add, u, w)
    pw, big = price_weights(d)
    m.Minimize(big * sum(u) + sum(pw[k] * w[k] for k in range(len(d.nodes))))
    if hint is not None:
        for key, x in v.items():
            m.AddHint(x, 1 if hint.get((key[0], key[1])) == key[2] else 0)
    return big


def incompatible_rows(p, d, here) -> None:
    """MILP rows of one slot: of two incompatible components, at most one option is used.
    ``here``: [(component, its option's binary)] of the slot."""
    import pulp

    for c1, c2 in d.incompatible:
        both = [x for c, x in here if c in (c1, c2)]
        if both:
            p += pulp.lpSum(both) <= 1


def max_per_node_rows(p, d, v, qs) -> None:
    """MILP rows: component c's threads on one node are at most its max_per_node.
    ``v[(c, s, q)]``: binary "slot s runs q threads of c"; ``qs[c]``: c's thread counts."""
    import pulp

    for c in range(d.C):
        if d.max_per_node[c] is not None:
            for k in range(len(d.nodes)):
                terms = [q * v[(c, s, q)] for s in range(d.S) if d.slot_node[s] == k for q in qs[c] if (c, s, q) in v]
                if terms:
                    p += pulp.lpSum(terms) <= d.max_per_node[c]
