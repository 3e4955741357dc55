"""A lower bound for network on one topology over two or more racks of identical nodes, from
the division of its executors over the racks (session 34; measured only, not used by the
exact methods).

For a division a[k][r] (group k's executors on rack r) the metric's numerator is

    3 sum_s n_u n_d - sum_r sum_s a[u][r] a[d][r] - sum_r (KN(a_r) + KW(a_r)),

where s = (u, d) runs over the streams, KN(v) is the most pairs a rack holding the counts v
keeps inside nodes and KW(v) inside workers. For any prices pi >= 0 the Lagrangian gives
KN(v) <= pi.v + m_r max_p (keep(p) - pi.p) over every node content p (m_r nodes in the rack),
and KW likewise over worker contents with the rack's slots: cuts valid for every division. A
CP-SAT master over the divisions (the products exact) takes the cuts; each round solves the
per-rack content LPs at its division (columns p <= v first, then priced over every content,
which are enumerated: ``_node_vectors``, ``worker_contents``) and adds their dual cuts. The
master's proven bound is the bound at every round. The cuts' coefficients are rounded up, so
the bound stays valid.

Usage: PYTHONPATH=. python benchmarks/network_rack_division.py [--size 100x12x10] [--seed 1]
           [--rounds 40] [--plan-division c02=6,c10=10,...]
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter

import numpy as np
from ortools.sat.python import cp_model
from scipy.optimize import linprog

from formulations._gen import layered
from formulations._nodetable import _node_vectors, worker_contents
from formulations._rasmodel import PlacementModel, component_groups
from formulations._workercut import _values
from planner import rates
from planner.model import parse_instance

SCALE = 1000  # the cuts' coefficients in thousandths of a pair, rounded up


def content_cut(X: np.ndarray, kept: np.ndarray, v: np.ndarray, m: int, rounds: int = 30):
    """(pi, mu, LP value): the content LP max kept.l s.t. X^T l <= v, sum l <= m at ``v`` by
    column generation over the rows of X, and mu = max(0, max_p kept(p) - pi.p) over all of
    them, so kept pairs <= pi.v' + m mu for every v'. The count cuts' ``_workercut._contents_lp``
    is the same Lagrangian bound at one v, but returns the bound only; the cuts here need the
    prices for the other divisions."""
    K = X.shape[1]
    cols = set(np.flatnonzero(np.all(X <= v, axis=1)).tolist())
    pi, val = np.zeros(K), 0.0
    for _ in range(rounds):
        idx = np.array(sorted(cols))
        A = X[idx]
        r = linprog(-kept[idx], A_ub=np.vstack([A.T, np.ones(len(A))]), b_ub=np.concatenate([v, [m]]),
                    bounds=(0, None), method="highs")
        y = -r.ineqlin.marginals
        pi, val = np.maximum(y[:K], 0.0), -r.fun
        rc = kept - X @ pi - y[K]
        new = [j for j in np.argsort(-rc)[:200].tolist() if rc[j] > 1e-7 and j not in cols]
        if not new:
            break
        cols.update(new)
    return pi, max(0.0, float((kept - X @ pi).max())), val


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="100x12x10")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--plan-division", default="c02=6,c10=10,c05=6,c09=10,c04=4,c08=6",
                    help="a division's first rack (component=count), whose LP bound is printed (default: "
                         "the 18.82 plan's of seed 1's 100x12x10)")
    a = ap.parse_args()
    e, c, nn = map(int, a.size.split("x"))
    inst = parse_instance(layered(e, c, nn, a.seed, problem="network"))
    G = [g for ti, t in enumerate(inst.topologies) for g in component_groups(ti, t)]
    pm = PlacementModel(inst, "network", G, sense="min", symmetry=True, build=False)
    assert len(pm.topos) == 1, "one topology"
    assert len({(n.cpu, n.memory_mb, len(n.slots)) for n in pm.nodes}) == 1, "identical nodes"
    ids = [g.comp.id for g in G]
    S = [(ids.index(u), ids.index(d)) for u, ds in rates.downstream(inst.topologies[0]).items() for d in ds]
    K, R = len(G), len(pm.racks)
    n = np.array([g.size for g in G])
    t0 = time.monotonic()
    Y = _node_vectors(pm, 0, 50_000_000)[0].astype(np.float64)
    Q = worker_contents(pm, 0, 0, 500_000).astype(np.float64)
    streams = Counter(S)  # the count cuts' stream weights (_workercut._values)
    kY, kQ = _values(Y, streams), _values(Q, streams)
    racks = [[ni for ni in range(len(pm.nodes)) if pm.node_rack[ni] == r] for r in range(R)]
    assert len({len(rs) for rs in racks}) == 1, "racks of as many nodes"
    mN = [len(rs) for rs in racks]
    mW = [sum(len(pm.nodes[ni].slots) for ni in rs) for rs in racks]
    total = 3 * sum(int(n[u] * n[d]) for u, d in S)
    print(f"{a.size} seed {a.seed}: {len(Y)} node contents, {len(Q)} worker contents ({time.monotonic() - t0:.1f} s)")

    def lp_bound(div: np.ndarray) -> float:
        """The bound at one division (its LPs, not the cuts)."""
        out = float(total)
        for r in range(R):
            v = div[:, r].astype(float)
            out -= sum(v[u] * v[d] for u, d in S)
            out -= content_cut(Y, kY, v, mN[r])[2] + content_cut(Q, kQ, v, mW[r])[2]
        return out

    if a.plan_division and R == 2:
        first = dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in a.plan_division.split(","))
        d0 = np.array([first.get(i, 0) for i in ids])
        print(f"the LP bound at the given division: {lp_bound(np.stack([d0, n - d0], axis=1)) / e:.4f}")
    cuts: dict[str, list] = {"N": [], "W": []}
    for it in range(a.rounds):
        md = cp_model.CpModel()
        x = [[md.NewIntVar(0, int(n[k]), f"a{k}_{r}") for r in range(R)] for k in range(K)]
        for k in range(K):
            md.Add(sum(x[k]) == int(n[k]))
        for r, rs in enumerate(racks):
            md.Add(sum(x[k][r] * int(round(G[k].comp.cpu * 1000)) for k in range(K))
                   <= int(math.floor(sum(pm.nodes[ni].cpu for ni in rs) * 1000 + 1e-6)))
            md.Add(sum(x[k][r] * int(round(G[k].comp.memory_mb * 1000)) for k in range(K))
                   <= int(math.floor(sum(pm.nodes[ni].memory_mb for ni in rs) * 1000 + 1e-6)))
        for r in range(R - 1):  # the racks are alike: the first group's counts in order
            md.Add(x[0][r] >= x[0][r + 1])
        terms = []
        for r in range(R):
            for u, d in S:
                p = md.NewIntVar(0, int(n[u] * n[d]), "")
                md.AddMultiplicationEquality(p, [x[u][r], x[d][r]])
                terms.append(p * SCALE)
            for lvl, m in (("N", mN[r]), ("W", mW[r])):
                th = md.NewIntVar(0, SCALE * total, "")
                for pi, mu in cuts[lvl]:
                    md.Add(th <= sum(int(math.ceil(pi[k] * SCALE)) * x[k][r] for k in range(K))
                           + int(math.ceil(m * mu * SCALE)))
                terms.append(th)
        md.Maximize(sum(terms))
        s = cp_model.CpSolver()
        s.parameters.num_workers = 2
        s.parameters.max_time_in_seconds = 60
        st = s.Solve(md)
        if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            print(f"round {it}: master {s.StatusName(st)}")
            break
        bound = (total - s.BestObjectiveBound() / SCALE) / e
        div = np.array([[s.Value(x[k][r]) for r in range(R)] for k in range(K)])
        added = 0
        for r in range(R):
            v = div[:, r].astype(float)
            for lvl, X, kept, m in (("N", Y, kY, mN[r]), ("W", Q, kQ, mW[r])):
                pi, mu, _ = content_cut(X, kept, v, m)
                if pi @ v + m * mu < min((p @ v + m * u for p, u in cuts[lvl]), default=math.inf) - 1e-6:
                    cuts[lvl].append((pi, mu))
                    added += 1
        print(f"round {it}: {time.monotonic() - t0:.1f} s, bound {bound:.4f} ({s.StatusName(st)}), "
              f"first rack {div[:, 0].tolist()}, cuts added {added}", flush=True)
        if not added:
            break


if __name__ == "__main__":
    main()
