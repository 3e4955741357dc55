"""Compiled inner loops (numba) of the network node table's DP (``_nodetable.NodeTable``).

Each loop is what a few numpy calls did over the same arrays (gathers, a compress, a maximum
and a scatter), fused into one pass with no temporaries; the values are the same float64
operations, so the tables are bit for bit those of the numpy code (tests). Compiled on first use
(about a second each, kept in ``__pycache__`` with ``cache=True``); ``nogil`` lets the DP's
threads run them in parallel.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def maxplus(Wn, Wp, tgt, src, c, fin):
    """Wn[t] = max(Wn[t], Wp[s] + c) over the pairs (t, s) whose source has fin[s] (fin empty:
    every pair)."""
    use = len(fin) > 0
    for i in range(len(tgt)):
        s = src[i]
        if use and not fin[s]:
            continue
        v = Wp[s] + c
        t = tgt[i]
        if v > Wn[t]:
            Wn[t] = v


@njit(cache=True, nogil=True)
def child_pairs(ptgt, psrc, col, pk, dec_k, W2, W1, c, fin):
    """A content's pairs from its parent's (the parent is the content less one unit of axis
    k): the parent's targets y with y_k >= pk (``col`` = axis k's counts by row), each source
    one step further down axis k (``dec_k``). With W2 non-empty, level 2 is applied to them at
    once (``maxplus`` with W1, c and fin)."""
    n = 0
    for i in range(len(ptgt)):
        if col[ptgt[i]] >= pk:
            n += 1
    tgt = np.empty(n, dtype=np.int32)
    src = np.empty(n, dtype=np.int32)
    upd = len(W2) > 0
    use = len(fin) > 0
    n = 0
    for i in range(len(ptgt)):
        t = ptgt[i]
        if col[t] >= pk:
            s = dec_k[psrc[i]]
            tgt[n] = t
            src[n] = s
            n += 1
            if upd and (not use or fin[s]):
                v = W1[s] + c
                if v > W2[t]:
                    W2[t] = v
    return tgt, src


@njit(cache=True, nogil=True)
def rows_within(rows, pos, packed, bp, guard, b, counts, values, codes):
    """The rows (ascending) whose counts are within a bound, with their values and part codes:
    row rows[i] sits at pos[i] of the zero-pattern order (``NodeTable.zero_index``), whose
    arrays ``packed`` (counts packed with guard bits; empty: ``counts``, a row per row, against
    b instead), ``values`` and ``codes`` (part codes, a row per row; may have no columns) are
    read there. Packed test (int64 fields): ((bp - y) & guard) == guard, bp the bound packed
    with the guards."""
    keep = np.empty(len(rows), dtype=np.int64)
    n = 0
    use_packed = len(packed) > 0
    na = len(b)
    for i in range(len(rows)):
        q = pos[i]
        if use_packed:
            ok = ((bp - packed[q]) & guard) == guard
        else:
            ok = True
            for a in range(na):
                if counts[q, a] > b[a]:
                    ok = False
                    break
        if ok:
            keep[n] = i
            n += 1
    idx = np.empty(n, dtype=rows.dtype)
    val = np.empty(n)
    P = codes.shape[1]
    out = np.empty((n, P), dtype=codes.dtype)
    for j in range(n):
        i = keep[j]
        q = pos[i]
        idx[j] = rows[i]
        val[j] = values[q]
        for p in range(P):
            out[j, p] = codes[q, p]
    return idx, val, out


@njit(cache=True, nogil=True)
def part_sums(pi, gflat, rflat, gstarts, starts):
    """Each part's sums pi . y over its radix box, laid out as session 15's numpy look-ups made
    them (index y_g0 + r_g0 (y_g1 + r_g1 (...)), the additions in the same order: from the
    part's last group to its first), part p's from ``starts[p]``; part p's groups and radices
    are gflat and rflat from gstarts[p] to gstarts[p + 1]."""
    S = np.empty(starts[-1])
    for p in range(len(starts) - 1):
        o = starts[p]
        S[o] = 0.0
        n = 1
        for gi in range(gstarts[p + 1] - 1, gstarts[p] - 1, -1):  # reversed(g)
            r = rflat[gi]
            w = pi[gflat[gi]]
            # new[a r + b] = old[a] + w b: written from the top down, in place
            for a in range(n - 1, -1, -1):
                base = S[o + a]
                for bb in range(r - 1, -1, -1):
                    S[o + a * r + bb] = base + w * bb
            n *= r
    return S


@njit(cache=True, nogil=True)
def sub_rc(val, codes, S, starts, conv, phase1):
    """Reduced costs of a rack subproblem's rows: val[i] - (sum over parts p of the part's sum
    at the row's code codes[i, p]) - conv (phase 1: 0 - (...) - conv), the parts added in order
    as numpy did."""
    out = np.empty(len(val))
    P = codes.shape[1]
    for i in range(len(val)):
        acc = S[starts[0] + codes[i, 0]]
        for p in range(1, P):
            acc += S[starts[p] + codes[i, p]]
        base = 0.0 if phase1 else val[i]
        out[i] = (base - acc) - conv
    return out


@njit(cache=True, nogil=True)
def _doubled(a):
    """a copied into an array twice as long (the rest unset)."""
    out = np.empty(2 * len(a), dtype=a.dtype)
    out[:len(a)] = a
    return out


@njit(cache=True, nogil=True)
def conv_level(st_rest, st_loss, rows, loss_f, enc_f, dt, m, guard, cap):
    """One node's step of ``rack_by_convolution`` over ``rows`` (in order, sorted by loss): for
    row r, the partial sums i < n with st_loss[i] <= dt - m loss_f[r] (st_loss ascending; n = 0
    ends the step, no later row fits) whose guarded rest st_rest[i] - enc_f[r] keeps every
    guard bit. Returns (i, r, rest) of every hit, row by row, i ascending within a row, and a
    status: 0 all rows read, 1 the step ended (n = 0), 2 more than ``cap`` hits after a row."""
    prev = np.empty(1024, dtype=np.int64)
    rr = np.empty(1024, dtype=rows.dtype)
    rest = np.empty(1024, dtype=np.int64)
    total = 0
    status = 0
    for j in range(len(rows)):
        r = rows[j]
        n = np.searchsorted(st_loss, dt - m * loss_f[r], side="right")
        if n == 0:
            status = 1
            break
        e = enc_f[r]
        for i in range(n):
            x = st_rest[i] - e
            if (x & guard) == guard:
                if total == len(prev):
                    prev, rr, rest = _doubled(prev), _doubled(rr), _doubled(rest)
                prev[total] = i
                rr[total] = r
                rest[total] = x
                total += 1
        if total > cap:
            status = 2
            break
    return prev[:total].copy(), rr[:total].copy(), rest[:total].copy(), status


@njit(cache=True, nogil=True)
def part_counts(codes, digits, gflat, gstarts, K):
    """The counts (n x K, int64) of rows given by their part codes (a row of them per row; part
    p holds groups gflat[gstarts[p]:gstarts[p + 1]]), each code's counts looked up in
    ``digits[p, code]`` (``NodeTable.part_codes``: a table of them, not two divisions a group)."""
    n = codes.shape[0]
    Y = np.zeros((n, K), dtype=np.int64)
    for i in range(n):
        for p in range(codes.shape[1]):
            c = codes[i, p]
            for gi in range(gstarts[p], gstarts[p + 1]):
                Y[i, gflat[gi]] = digits[p, c, gi - gstarts[p]]
    return Y


@njit(cache=True, nogil=True)
def _takes(use, i, q, dk, lim):
    """Does row i, with q more of the axis (demands dk), stay within every limit?"""
    for d in range(use.shape[1]):
        if use[i, d] + q * dk[d] > lim[d]:
            return False
    return True


@njit(cache=True, nogil=True)
def extend_axis(Y, use, k, cap, dk, lim, limit):
    """``_nodetable._node_vectors``'s step for axis k: for q = 0..cap in order, every row i
    (in order) with use[i] + q dk <= lim on every limit, copied with count q on axis k, and its
    use. Stops at the first q no row takes (uses only grow with q). Returns (Y', use', True),
    or empty arrays and False once the rows exceed ``limit``."""
    n, D = use.shape
    total = 0
    last = -1
    for q in range(cap + 1):
        c = 0
        for i in range(n):
            if _takes(use, i, q, dk, lim):
                c += 1
        if c == 0:
            break
        total += c
        last = q
        if total > limit:
            return np.empty((0, Y.shape[1]), dtype=Y.dtype), np.empty((0, D), dtype=use.dtype), False
    Y2 = np.empty((total, Y.shape[1]), dtype=Y.dtype)
    U2 = np.empty((total, D), dtype=use.dtype)
    t = 0
    for q in range(last + 1):
        for i in range(n):
            if _takes(use, i, q, dk, lim):
                Y2[t] = Y[i]
                Y2[t, k] = q
                for d in range(D):
                    U2[t, d] = use[i, d] + q * dk[d]
                t += 1
    return Y2, U2, True


@njit(cache=True, nogil=True)
def quad(Y, A):
    """y A y for each row y of Y (counts, any integer type) as float64, summed over k then l as
    numpy's einsum("ik,kl,il->i") does (bit for bit on the tables measured, session 21), with no
    float copy of Y."""
    n, K = Y.shape
    out = np.empty(n)
    for i in range(n):
        acc = 0.0
        for k in range(K):
            yk = float(Y[i, k])
            for l in range(K):
                acc += yk * A[k, l] * float(Y[i, l])
        out[i] = acc
    return out
