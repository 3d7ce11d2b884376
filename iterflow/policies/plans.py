"""Per-superstep plans of the rest of a run: one executor count per forecast sample.

Why its own module: ``fastest`` wants the shortest plan within an executor-second budget and
``efficiency`` the cheapest plan within a runtime allowance. Both are the same family of plans --
each sample takes ``argmin t·(1 + λ·e)`` for one multiplier ``λ`` on executor-seconds (a
Lagrange relaxation: larger ``λ``, fewer executors where they gain least) -- searched from
opposite ends. A plan puts executors where they gain most per executor-second (WCC's heavy
first supersteps) and reduces to one count when the work is flat.

A multiplier's plans only reach the sizes on the lower convex hull of (time, executor-seconds):
on flat work with 16 executors at 16.25 s a superstep and ``1 + 10 % `` pads below it, the plans
jump from 16 to 9, skipping the 10 that fits the allowance. So each search also tries one size
for the whole rest and takes it where it does better (:func:`_or_constant`).

Rescales may be priced (``prices[p, r]``: seconds a change from size ``p`` to size ``r`` adds,
held by ``held[p, r]`` executors -- by default ``r``'s, a release's pause by those it leaves where
the policy says so; ``start``: the size now). Then the plan at ``λ`` is a shortest path
over (sample, size) -- :func:`_priced_family`, the policies' counterpart of the priced bound of
:mod:`iterflow.simulate.bounds` -- and a plan changes size only where the change pays: stop 46's
plans priced none, and ``fastest`` stepped down 3 -> 2 -> 1 (two releases at ~4-5 s each) where
one release to 1 was faster, and ``efficiency`` priced only the first of the releases it planned.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

Plan = tuple[np.ndarray, float, float]  # executor index per sample, its time, its cost


class Family:
    """The plans of one family: ``at(λ)`` one multiplier's, ``many(λs)`` several multipliers'
    in one pass over the samples (what :func:`_bisect` evaluates a round of at once: a Python
    loop of numpy steps costs per step, not per multiplier)."""

    def __init__(self, many: Callable[[np.ndarray], list[Plan]]) -> None:
        self.many = many

    def __call__(self, lam: float) -> Plan:
        return self.many(np.array([lam], float))[0]


def _family(S: np.ndarray, E: np.ndarray, weights: np.ndarray) -> Family:
    """The plan at multiplier ``λ`` over ``S`` (predicted seconds, candidates ``E`` x samples,
    each sample standing for ``weights`` supersteps)."""
    cols = np.arange(S.shape[1])

    def many(lams: np.ndarray) -> list[Plan]:
        K = np.argmin(S[None] * (1 + lams[:, None, None] * E[None, :, None]), axis=1)  # (λs, samples)
        out = []
        for k in K:
            t = S[k, cols]
            out.append((k, float(t @ weights), float((E[k] * t) @ weights)))
        return out
    return Family(many)


def _priced_family(S: np.ndarray, E: np.ndarray, weights: np.ndarray, prices: np.ndarray,
                   start: int | None, held: np.ndarray) -> Family:
    """As :func:`_family`, each change of size priced by ``prices[p, r]`` (seconds, held by
    ``held[p, r]`` executors), the first sample entered from row ``start`` (free where ``None``):
    at each ``λ`` the plan minimising ``Σ t·(1 + λ·e) + price·(1 + λ·held)``, by dynamic
    programming over the samples."""
    n, m = S.shape
    step = S * weights[None, :]  # (sizes, samples): a sample's seconds at each size

    def many(lams: np.ndarray) -> list[Plan]:
        L = lams.size
        scale = 1 + lams[:, None] * E[None, :]  # (λs, sizes)
        move = prices[None, :, :] * (1 + lams[:, None, None] * held[None, :, :])  # (λs, prev, next)
        best = step[None, :, 0] * scale if start is None else move[:, start] + step[None, :, 0] * scale
        back = np.zeros((m, L, n), dtype=np.int64)
        for j in range(1, m):
            through = best[:, :, None] + move  # (λs, prev, next)
            back[j] = np.argmin(through, axis=1)
            best = through.min(axis=1) + step[None, :, j] * scale  # the value at back[j]
        K = np.zeros((L, m), dtype=np.int64)
        K[:, -1] = np.argmin(best, axis=1)
        rows = np.arange(L)
        for j in range(m - 1, 0, -1):
            K[:, j - 1] = back[j, rows, K[:, j]]
        T, C = _priced_totals(K, step, E, prices, start, held)
        return [(k, float(t), float(c)) for k, t, c in zip(K, T, C)]
    return Family(many)


def _priced_totals(k: np.ndarray, step: np.ndarray, E: np.ndarray, prices: np.ndarray,
                   start: int | None, held: np.ndarray) -> tuple[Any, Any]:
    """Time and executor-seconds of plan ``k`` (or of each row of ``k``), its rescales' prices
    included (held by ``held``)."""
    t = step[k, np.arange(k.shape[-1])]
    first = k[..., :1] if start is None else np.full(k.shape[:-1] + (1,), start)
    prev = np.concatenate([first, k[..., :-1]], axis=-1)
    moved = prices[prev, k]
    t = t + moved
    return t.sum(axis=-1), (E[k] * t + (held[prev, k] - E[k]) * moved).sum(axis=-1)  # held beyond the new size


#: multipliers a round of :func:`_bisect` tries at once
ROUND = 15


def _bisect(at: Family, ok: Callable[[Plan], bool], lo_ok: bool) -> Plan:
    """The plan at the ``λ`` where ``ok`` changes: cost falls and time grows with ``λ``, so
    ``ok`` holds on one side -- below it (``lo_ok``: a time allowance) or above (a budget).
    Searched in rounds of :data:`ROUND` multipliers spread geometrically over the bracket (from
    ``λ = 0``: ``10^-6`` steps down from its top), to float precision."""
    lo, hi = 0.0, 1.0
    while bool(ok(at(hi))) is lo_ok and hi < 1e12:  # bool: a numpy limit makes ok() a numpy bool
        hi *= 10
    for _ in range(60):
        if lo > 0:
            if hi <= lo * (1 + 1e-15):
                break
            lams = lo * (hi / lo) ** (np.arange(1, ROUND + 1) / (ROUND + 1))
        else:
            lams = hi * 1e-6 ** np.arange(ROUND, 0, -1, dtype=float)
            if lams[0] == 0.0:
                break
        side = np.array([bool(ok(p)) is lo_ok for p in at.many(lams)])  # True: the lo side
        below = np.flatnonzero(side)
        if below.size:
            lo = float(lams[below[-1]])
        above = np.flatnonzero(~side)
        if above.size:
            hi = float(lams[above[0]])
    return at(lo if lo_ok else hi)


def _or_constant(plan: Plan, S: np.ndarray, E: np.ndarray, weights: np.ndarray, limit: float, by: int,
                 entry: tuple[np.ndarray, np.ndarray] | None = None) -> Plan:
    """``plan``, or one size kept for the whole rest where it does better by ``plan[by]`` (1: time,
    2: executor-seconds) within ``limit`` on the other of the two; ``entry``: each size's price
    of changing to it now, and the executors holding it."""
    T = S @ weights + (0.0 if entry is None else entry[0])
    C = E * T + (0.0 if entry is None else entry[0] * (entry[1] - E))  # held beyond the new size
    measure = (T, C)
    ok = np.flatnonzero(measure[2 - by] <= limit)
    score = measure[by - 1]
    if not ok.size or score[ok].min() >= plan[by]:
        return plan
    i = int(ok[np.argmin(score[ok])])
    return np.full(S.shape[1], i), float(T[i]), float(C[i])


def _plans(S: np.ndarray, E: np.ndarray, weights: np.ndarray, prices: np.ndarray | None,
           start: int | None, held: np.ndarray | None = None) -> tuple[Family, tuple[np.ndarray, np.ndarray] | None]:
    """The family of plans (priced where ``prices`` is given) and each size's entry price with
    the executors holding it."""
    if prices is None:
        return _family(S, E, weights), None
    prices = np.asarray(prices, float)
    n = len(E)
    if prices.shape != (n, n) or np.any(prices < 0) or not np.all(np.isfinite(prices)):
        raise ValueError(f"prices must be a finite, non-negative {n}x{n} matrix (got shape {prices.shape})")
    held = np.broadcast_to(np.asarray(E, float)[None, :], (n, n)) if held is None else np.asarray(held, float)
    if held.shape != (n, n) or np.any(held < 0) or not np.all(np.isfinite(held)):
        raise ValueError(f"held must be a finite, non-negative {n}x{n} matrix (got shape {held.shape})")
    if start is not None and not 0 <= start < n:
        raise ValueError(f"start must index one of the {n} sizes (got {start})")
    entry = None if start is None else (prices[start], held[start])
    return _priced_family(S, E, np.asarray(weights, float), prices, start, held), entry


def fastest_plan(S: np.ndarray, E: np.ndarray, weights: np.ndarray, b: float, *,
                 prices: np.ndarray | None = None, start: int | None = None,
                 held: np.ndarray | None = None) -> Plan:
    """The fastest plan costing <= ``b`` executor-seconds (the cheapest where none does);
    ``prices``/``start``: rescales priced (module docstring); ``held``: the executors holding
    each price (default: the new size's)."""
    at, entry = _plans(S, E, weights, prices, start, held)
    b = b * (1 + 1e-9)  # the baseline's own plan costs exactly its budget
    best = at(0.0)
    if best[2] <= b:
        return best
    return _or_constant(_bisect(at, lambda p: p[2] <= b, lo_ok=False), S, E, weights, b, by=1, entry=entry)


def cheapest_plan(S: np.ndarray, E: np.ndarray, weights: np.ndarray, allowed: float, *,
                  prices: np.ndarray | None = None, start: int | None = None,
                  held: np.ndarray | None = None) -> Plan:
    """The cheapest plan taking <= ``allowed`` seconds (the fastest, ``λ = 0``, where none does);
    ``prices``/``start``/``held``: rescales priced (module docstring, :func:`fastest_plan`)."""
    at, entry = _plans(S, E, weights, prices, start, held)
    allowed = allowed * (1 + 1e-9)
    fastest = at(0.0)
    if fastest[1] > allowed:
        return fastest
    return _or_constant(_bisect(at, lambda p: p[1] <= allowed, lo_ok=True), S, E, weights, allowed, by=2,
                        entry=entry)


def later_release(S: np.ndarray, E: np.ndarray, weights: np.ndarray, current: int, price: np.ndarray,
                  pad: np.ndarray, goal: float, allowed: np.ndarray | bool = True,
                  held: np.ndarray | None = None) -> tuple[int, int, float, float] | None:
    """The cheapest plan that keeps ``current`` executors for the next ``j >= 1`` samples and then
    releases to a smaller size for the rest: ``(j, size index, seconds, executor-seconds)``, or
    ``None`` where none finishes within ``goal`` (or ``current`` is no candidate).

    ``S``: seconds of a superstep of each sample at each size (sizes ``E`` x samples, each sample
    standing for ``weights`` supersteps); ``price``: a change from ``current`` to each size, held
    by ``held`` executors (default: that size); ``pad``: each size's finish padded (``1 +`` its
    error), on the part run after the release; ``allowed``: the sizes a release may go to.
    Why: ``target`` compared only one size for the whole rest, so a run ahead of its target released at once to the cheapest size
    that fits -- PageRank 3 -> 2 at barrier 2, a relayout that rebuilds the cached edges (~3 s) --
    where keeping 3 and releasing to one executor later (no rebuild) met the same target for
    fewer executor-seconds (the priced bound's plans, stop 56)."""
    here = np.flatnonzero(E == current)
    m = S.shape[1]
    if not here.size or m < 2:
        return None
    steps = S * np.asarray(weights, float)[None, :]
    head = np.cumsum(steps[here[0]])  # seconds of the first j samples at ``current``, j = 1..m
    tail = np.cumsum(steps[:, ::-1], axis=1)[:, ::-1]  # tail[i, j]: samples j.. at size i
    ok_size = (E < current) & np.asarray(allowed, bool)
    best = None
    for j in range(1, m):
        t = head[j - 1] + pad * (price + tail[:, j])
        c = current * head[j - 1] + E * tail[:, j] + (E if held is None else held) * price
        ok = np.flatnonzero(ok_size & (t <= goal))
        if ok.size:
            i = int(ok[np.argmin(c[ok])])
            if best is None or c[i] < best[3]:
                best = (j, i, float(t[i]), float(c[i]))
    return best
