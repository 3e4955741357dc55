"""Traffic phase 1: the configuration model's proof with a load-aware Lagrangian bound.

Why: intra-node traffic is quadratic in a node's content, so the configuration LP prefers full
nodes and mixes them with empty ones (60x8x6: 4.6 "full" nodes on average), while an integer
plan has a whole number of full nodes and one partly filled node. The LP bound is then several
per cent off (60x8x6: 883.4 against an optimum of 937.1) and the enumeration margin UB - z_inc
covers far too many columns.

The fix keeps one aggregate of the cover rows hard in the Lagrangian subproblem: every plan
places every executor, so the node loads sum to the total demand D (CPU, integer milli-points,
in levels of their gcd). With the master duals pi (convexity duals included), every plan has

    value = pi.b + sum_nodes rc(p_n) <= pi.b + max { sum_n h_f(n)(l_n) : sum_n l_n = D },

h_f(l) >= the best reduced cost of a column of family f with load l. h_f is an upper bound per
*load bin* (CP-SAT with the load in the bin, its proven objective bound plus the rounding error);
the maximum is a max-plus convolution over the nodes (dynamic programming over load levels).
Bins the optimum uses are split and priced again while that lowers the bound. This is never
weaker than the plain bound pi.b + sum_f count_f max_l h_f(l).

Proof: a column p of family f with load l can be in a plan worth >= z only if
rc(p) >= z - pi.b - R_f(D - l), R_f = the same maximum over every node but one of family f.
Per bin, all such columns are enumerated (CP-SAT, all solutions); the integer master over them
(and the incumbent's) is then exact: its optimum is the problem's optimum.
"""

from __future__ import annotations

import math
import time
from functools import reduce
from typing import Any

import numpy as np

from ._patterns import EPS, PatternModel, _scaled, _solve_cp, _rehint

NEG = -math.inf


def _maxplus(a: np.ndarray, h: np.ndarray, size: int) -> np.ndarray:
    """c[d] = max_l a[d - l] + h[l] for d < size."""
    out = np.full(size, NEG)
    for ell in np.nonzero(h > NEG)[0]:
        seg = a[: size - ell] + h[ell]
        np.maximum(out[ell:], seg, out=out[ell:])
    return out


class LoadBound:
    """Bins, their reduced-cost bounds and the dynamic programme over node loads."""

    def __init__(self, model: PatternModel, pm, duals: dict, max_levels: int = 20000):
        self.model = model
        self.duals = duals
        G = pm.groups
        self.mcpu = [int(round(g.comp.cpu * 1000)) for g in G]
        self.ok = True
        self.gran = reduce(math.gcd, [c for c in self.mcpu if c > 0], 0)
        if self.gran == 0:
            self.ok = False
            return
        self.D = sum(c * g.size for c, g in zip(self.mcpu, G)) // self.gran
        from ._patterns import node_classes

        classes = {f"node{c[0]}": c for c in node_classes(pm, False)}
        self.cap = []  # per family: highest load level
        for f in model.families:
            n = pm.nodes[classes[f.name][0]]
            self.cap.append(min(self.D, int(math.floor(n.cpu * 1000 + 1e-6)) // self.gran))
        if self.D > max_levels:
            self.ok = False
            return
        self.const = sum(duals.get(r, 0.0) * rhs for r, rhs in model.rows.items())
        self.bins: list[list[tuple[int, int, float]]] = []  # per family: (lo, hi, H) with lo <= load level <= hi

    # --- pricing in a load range -------------------------------------------------------------
    def _model(self, fi: int, lo: int, hi: int):
        fam = self.model.families[fi]
        pr = fam.build()
        a, var = pr.rc_terms(self.duals)
        load = []
        for (r, terms) in pr.rows.items():
            if r[0] == "cover":
                for v, c in terms:
                    load.append((v, int(round(c)) * self.mcpu[r[1]]))
        expr = sum(c * v for v, c in load) if load else 0
        if load:
            pr.cm.Add(expr >= lo * self.gran)
            pr.cm.Add(expr <= hi * self.gran)
        elif lo > 0:
            return None
        return pr, a, var, -self.duals.get(fam.conv_row, 0.0)

    def price_bin(self, fi: int, lo: int, hi: int) -> float:
        """Upper bound on the best reduced cost of family fi with load level in [lo, hi]."""
        built = self._model(fi, lo, hi)
        if built is None:
            return NEG
        pr, a, var, const = built
        cp = pr.cp_model
        if not a:
            s, st = _solve_cp(pr.cm, self.model.left(), 1)
            return const if st in (cp.OPTIMAL, cp.FEASIBLE) else (NEG if st == cp.INFEASIBLE else math.inf)
        ia, scale, err = _scaled(a, pr.ubs)
        pr.cm.Maximize(sum(ia[k] * var[k] for k in ia))
        s, st = _solve_cp(pr.cm, min(self.model.left(), 10.0), self.model.threads)
        if st == cp.INFEASIBLE:
            return NEG
        if st not in (cp.OPTIMAL, cp.FEASIBLE):
            return math.inf
        return s.BestObjectiveBound() / scale + err + const

    def h(self, fi: int) -> np.ndarray:
        """h_f over load levels 0..cap (bins are a partition of the levels)."""
        out = np.full(self.cap[fi] + 1, NEG)
        for lo, hi, H in self.bins[fi]:
            out[lo:hi + 1] = H
        return out

    def dp(self, skip: int | None = None) -> np.ndarray:
        """best[d] = max sum of h over every node (but one of family ``skip``) with loads summing to d."""
        size = self.D + 1
        a = np.full(size, NEG)
        a[0] = 0.0
        for fi, f in enumerate(self.model.families):
            hf = self.h(fi)
            for _ in range(f.count - (1 if fi == skip else 0)):
                a = _maxplus(a, hf, size)
        return a

    def argmax_bins(self) -> set[tuple[int, int]]:
        """(family, bin index) used by one optimal load split (backtracking the DP)."""
        size = self.D + 1
        seq = [fi for fi, f in enumerate(self.model.families) for _ in range(f.count)]
        tables = [np.full(size, NEG)]
        tables[0][0] = 0.0
        hs = {fi: self.h(fi) for fi in set(seq)}
        for fi in seq:
            tables.append(_maxplus(tables[-1], hs[fi], size))
        used = set()
        d = self.D
        for i in range(len(seq), 0, -1):
            fi = seq[i - 1]
            hf = hs[fi]
            best, arg = NEG, None
            for ell in range(min(d, len(hf) - 1) + 1):
                v = tables[i - 1][d - ell] + hf[ell]
                if v > best:
                    best, arg = v, ell
            if arg is None:
                return used
            for bi, (lo, hi, _) in enumerate(self.bins[fi]):
                if lo <= arg <= hi:
                    used.add((fi, bi))
            d -= arg
        return used

    def bound(self, nbins: int = 8, deadline: float | None = None, rounds: int = 12) -> float:
        """The load-aware bound pi.b + DP(D); bins refined where the optimum sits."""
        for fi in range(len(self.model.families)):
            cap = self.cap[fi]
            edges = sorted({0, 1} | {int(round(cap * i / nbins)) for i in range(1, nbins + 1)})
            bins = [(0, 0)] + [(edges[i], edges[i + 1] - 1) for i in range(1, len(edges) - 1)]
            bins[-1] = (bins[-1][0], cap)
            self.bins.append([(lo, hi, self.price_bin(fi, lo, hi)) for lo, hi in bins if lo <= hi])
        best = float(self.dp()[self.D])
        for _ in range(rounds):
            if (deadline is not None and time.monotonic() > deadline) or best == NEG:
                break
            split = [(fi, bi) for fi, bi in self.argmax_bins() if self.bins[fi][bi][1] > self.bins[fi][bi][0]]
            if not split:
                break
            for fi, bi in sorted(split, key=lambda t: -t[1]):
                lo, hi, H = self.bins[fi][bi]
                mid = (lo + hi) // 2
                parts = [(lo, mid), (mid + 1, hi)]
                self.bins[fi][bi:bi + 1] = [(a, b, min(H, self.price_bin(fi, a, b))) for a, b in parts]
            best = min(best, float(self.dp()[self.D]))
        return self.const + best

    # --- enumeration ---------------------------------------------------------------------------
    def enumerate(self, z: float, cap: int) -> bool:
        """Every column that can be in a plan worth >= z; False if over ``cap`` per family or
        out of time."""
        model = self.model
        tol = 1e-7 * max(1.0, abs(z))
        for fi in range(len(model.families)):
            rest = self.dp(skip=fi)
            count = 0
            for lo, hi, H in self.bins[fi]:
                if H == NEG:
                    continue
                need = [z - self.const - rest[self.D - ell] for ell in range(lo, hi + 1) if self.D - ell >= 0
                        and rest[self.D - ell] > NEG]
                if not need:
                    continue
                thr = min(need) - tol
                if H < thr:
                    continue
                built = self._model(fi, lo, hi)
                if built is None:
                    continue
                pr, a, var, const = built
                if a:
                    ia, scale, err = _scaled(a, pr.ubs)
                    pr.cm.Add(sum(ia[k] * var[k] for k in ia) >= math.floor((thr - const - err) * scale) - 1)
                elif const < thr:
                    continue
                cp = pr.cp_model
                found: list = []
                over = [False]

                class CB(cp.CpSolverSolutionCallback):
                    def on_solution_callback(self):
                        found.append(pr.column(fi, self.Value))
                        if count + len(found) > cap:
                            over[0] = True
                            self.StopSearch()

                s, st = _solve_cp(pr.cm, model.left(), 1, enumerate_all=True, cb=CB())
                if over[0] or st not in (cp.OPTIMAL, cp.INFEASIBLE):
                    return False
                count += len(found)
                for c in found:
                    if model.add(c):
                        model.stats["columns_enumerated"] += 1
        return True


def run_traffic(model: PatternModel, pm, backend: str, threads: int | None, improve, cap: int = 20000) -> dict[str, Any]:
    """Column generation, incumbent (master and ``improve``), load-aware bound, enumeration,
    master: the result dict of :func:`formulations._patterns.run_patterns`."""
    out: dict[str, Any] = {"status": "unknown", "value": None, "bound": None, "chosen": None}
    ub, duals, maxrc = model.generate()
    out["stats"] = st = model.stats
    if ub is None:
        return out
    if ub == -math.inf:
        out["status"] = "infeasible"
        return out
    ub += model.value_const
    out["bound"] = ub
    scale = max(1.0, abs(ub))
    z = NEG
    m, sol = model.master(backend, threads)
    if sol.status in ("optimal", "feasible"):
        z = sol.objective
        out.update(status="feasible", value=z, chosen=model.chosen(sol.values))
        st["incumbent_master"] = z
    if improve is not None and not (sol.status == "optimal" and ub - z <= 1e-7 * scale):
        better = improve(out["chosen"], ub)
        if better is not None and better[0] > z + 1e-9 * scale:
            z = better[0]
            out.update(status="feasible", value=z, chosen=better[1])
            st["incumbent_search"] = z
    if z > NEG and ub - z <= 1e-7 * scale:
        out.update(status="optimal", bound=z)
        return out
    if z == NEG:
        return out  # no plan to measure the margin against (the compact model takes over)
    lb = LoadBound(model, pm, duals)
    if not lb.ok:
        st["load_bound"] = "not applicable (load levels)"
        return out
    t = time.monotonic()
    ub2 = lb.bound(deadline=model.deadline) + model.value_const
    st["load_bound_seconds"] = round(time.monotonic() - t, 3)
    st["load_bins"] = sum(len(b) for b in lb.bins)
    if model.left() <= 0:
        return out
    ub = min(ub, ub2)
    out["bound"] = ub
    st["bound_load_aware"] = ub2
    if ub - z <= 1e-7 * scale:
        out.update(status="optimal", bound=z)
        return out
    if not lb.enumerate(z - model.value_const, cap):
        st["enumeration"] = f"incomplete (over {cap} columns per family or time limit) at margin {ub - z:.4g}"
        return out
    st["columns"] = len(model.cols)
    st["margin"] = ub - z
    m, sol2 = model.master(backend, threads, hint=_rehint(model, out["chosen"]))
    if sol2.status in ("optimal", "feasible") and sol2.objective is not None and sol2.objective >= z - 1e-9 * scale:
        z = sol2.objective
        out.update(status="feasible", value=z, chosen=model.chosen(sol2.values))
    if sol2.status == "optimal":
        out.update(status="optimal", bound=z)
        return out
    # every plan worth more than z uses enumerated columns only: the master's bound covers them
    if sol2.bound is not None:
        out["bound"] = min(ub, max(z, sol2.bound))
    return out
