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
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

Plan = tuple[np.ndarray, float, float]  # executor index per sample, its time, its cost


def _family(S: np.ndarray, E: np.ndarray, weights: np.ndarray) -> Callable[[float], Plan]:
    """The plan at multiplier ``λ`` over ``S`` (predicted seconds, candidates ``E`` x samples,
    each sample standing for ``weights`` supersteps)."""
    cols = np.arange(S.shape[1])

    def at(lam: float) -> Plan:
        k = np.argmin(S * (1 + lam * E[:, None]), axis=0)
        t = S[k, cols]
        return k, float(t @ weights), float((E[k] * t) @ weights)
    return at


def _bisect(at: Callable[[float], Plan], ok: Callable[[Plan], bool], lo_ok: bool) -> Plan:
    """The plan at the ``λ`` where ``ok`` changes: cost falls and time grows with ``λ``, so
    ``ok`` holds on one side -- below it (``lo_ok``: a time allowance) or above (a budget)."""
    lo, hi = 0.0, 1.0
    while ok(at(hi)) is lo_ok and hi < 1e12:
        hi *= 10
    for _ in range(60):
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 1e6
        if ok(at(mid)) is lo_ok:
            lo = mid
        else:
            hi = mid
    return at(lo if lo_ok else hi)


def _or_constant(plan: Plan, S: np.ndarray, E: np.ndarray, weights: np.ndarray, limit: float, by: int) -> Plan:
    """``plan``, or one size kept for the whole rest where it does better by ``plan[by]`` (1: time,
    2: executor-seconds) within ``limit`` on the other of the two."""
    T = S @ weights
    measure = (T, E * T)
    ok = np.flatnonzero(measure[2 - by] <= limit)
    score = measure[by - 1]
    if not ok.size or score[ok].min() >= plan[by]:
        return plan
    i = int(ok[np.argmin(score[ok])])
    return np.full(S.shape[1], i), float(T[i]), float(E[i] * T[i])


def fastest_plan(S: np.ndarray, E: np.ndarray, weights: np.ndarray, b: float) -> Plan:
    """The fastest plan costing <= ``b`` executor-seconds (the cheapest where none does)."""
    at = _family(S, E, weights)
    b = b * (1 + 1e-9)  # the baseline's own plan costs exactly its budget
    best = at(0.0)
    if best[2] <= b:
        return best
    return _or_constant(_bisect(at, lambda p: p[2] <= b, lo_ok=False), S, E, weights, b, by=1)


def cheapest_plan(S: np.ndarray, E: np.ndarray, weights: np.ndarray, allowed: float) -> Plan:
    """The cheapest plan taking <= ``allowed`` seconds (the fastest, ``λ = 0``, where none does)."""
    at = _family(S, E, weights)
    allowed = allowed * (1 + 1e-9)
    fastest = at(0.0)
    if fastest[1] > allowed:
        return fastest
    return _or_constant(_bisect(at, lambda p: p[1] <= allowed, lo_ok=True), S, E, weights, allowed, by=2)
