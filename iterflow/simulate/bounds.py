"""What any adaptive policy could reach at best, from static runs measured superstep by superstep.

A policy picks one executor count per superstep. Given the measured time of every superstep at
every static size (``T[size, superstep]``), the best it could do -- knowing the future exactly,
rescaling for free, new executors as fast as warm ones -- is a choice of one size per superstep:

* ``fastest``: the shortest run whose executor-seconds stay within a budget;
* ``cheapest``: the fewest executor-seconds whose run ends within a deadline.

Both are a multiple-choice knapsack, solved exactly by dynamic programming over the constraint
rounded *down* to a grid: the feasible set only grows, so the result is never worse than the true
optimum. That makes it an upper bound on any real policy: when even this misses a goal, the
cluster's scaling -- not the policy -- rules the goal out, and the numbers say by how much.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

GRID = 4000  # constraint steps: rounding error at most limit / GRID per superstep


@dataclass(frozen=True)
class Bound:
    """The best schedule found: its executor count per superstep and its two totals."""

    sizes: tuple[int, ...]
    seconds: float
    executor_seconds: float

    @property
    def path(self) -> str:
        return "-".join(map(str, self.sizes))


def _min_sum(a: np.ndarray, b: np.ndarray, limit: float) -> np.ndarray | None:
    """Row index per column minimising ``Σ a`` with ``Σ b <= limit`` (``b`` rounded down to
    ``limit / GRID``), or ``None`` when no choice fits even so."""
    if limit < 0:
        return None
    q = max(limit, 1e-12) / GRID
    units = np.floor(b / q).astype(np.int64)
    n_rows, n_cols = a.shape
    best = np.zeros(GRID + 1)  # best[c]: least Σa so far within c units
    pick = np.zeros((n_cols, GRID + 1), dtype=np.int64)
    for k in range(n_cols):
        cand = np.full((n_rows, GRID + 1), np.inf)
        for r in range(n_rows):
            u = units[r, k]
            if u <= GRID:
                cand[r, u:] = best[: GRID + 1 - u] + a[r, k]
        pick[k] = np.argmin(cand, axis=0)
        best = cand[pick[k], np.arange(GRID + 1)]
    if not np.isfinite(best[GRID]):
        return None
    rows, c = np.zeros(n_cols, dtype=np.int64), GRID
    for k in range(n_cols - 1, -1, -1):
        rows[k] = pick[k, c]
        c -= units[rows[k], k]
    return rows


def _bound(sizes: np.ndarray, T: np.ndarray, rows: np.ndarray | None) -> Bound | None:
    if rows is None:
        return None
    t = T[rows, np.arange(T.shape[1])]
    return Bound(tuple(int(sizes[r]) for r in rows), float(t.sum()), float((sizes[rows] * t).sum()))


def _check(sizes: Sequence[int], T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    E, T = np.asarray(sizes, dtype=float), np.asarray(T, dtype=float)
    if T.ndim != 2 or T.shape[0] != len(E) or T.shape[1] == 0:
        raise ValueError(f"need one row of superstep times per size: {len(E)} sizes, times of shape {T.shape}")
    if not np.all(np.isfinite(T)) or np.any(T < 0):
        raise ValueError("superstep times must be finite and >= 0")
    return E, T


def fastest(sizes: Sequence[int], T: np.ndarray, budget: float) -> Bound | None:
    """The shortest schedule with executor-seconds ``<= budget`` (``None``: none fits)."""
    E, T = _check(sizes, T)
    return _bound(E, T, _min_sum(T, E[:, None] * T, budget))


def cheapest(sizes: Sequence[int], T: np.ndarray, deadline: float) -> Bound | None:
    """The schedule with the fewest executor-seconds ending within ``deadline`` (``None``: none does)."""
    E, T = _check(sizes, T)
    return _bound(E, T, _min_sum(E[:, None] * T, T, deadline))


def static_times(runs: dict[int, Sequence[Sequence[float]]]) -> tuple[list[int], np.ndarray]:
    """``T[size, superstep]``: the median over a size's runs of each superstep's seconds, cut to the
    fewest supersteps any run has (a job that converges runs the same supersteps at every size)."""
    sizes = sorted(runs)
    if not sizes or any(not runs[e] for e in sizes):
        raise ValueError("need at least one run per size")
    n = min(len(r) for e in sizes for r in runs[e])
    return sizes, np.array([np.median([list(r)[:n] for r in runs[e]], axis=0) for e in sizes])
