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

Optionally the rescales are priced (``start``, ``up``, ``down``): the run's first superstep
runs at ``start`` executors (where the policy starts), the first superstep at a larger size takes ``up`` seconds more (fresh executors' cold
superstep, as measured), at a smaller size ``down`` more (``None``: one superstep at the new
size, the re-read cache) -- held by the new size's executors; ``light``, where given, prices a
release to one executor apart (:func:`~iterflow.loop.rescales.light_release`: it rebuilds
nothing at its barrier, the others rebuild their cached blocks). The wait for new executors to
register is still free, so this stays a bound: no real policy pays less.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from iterflow.loop.rescales import light_release

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


def _min_sum_switching(a: np.ndarray, b: np.ndarray, limit: float, start: int | None) -> np.ndarray | None:
    """As :func:`_min_sum`, where a column's values depend on the previous column's row too:
    ``a[k, prev, row]``; the first column is at the ``start`` row (any, when ``None``)."""
    if limit < 0:
        return None
    q = max(limit, 1e-12) / GRID
    units = np.floor(b / q).astype(np.int64)
    n_cols, n_rows = a.shape[0], a.shape[1]
    best = np.full((n_rows, GRID + 1), np.inf)  # best[row, c]: least Σa ending at row within c units
    if start is None:
        best[:, :] = 0.0  # no previous size: a[0, r, r] (no switch) is charged below
    else:
        best[start, :] = 0.0
    prev_pick = np.zeros((n_cols, n_rows, GRID + 1), dtype=np.int64)
    for k in range(n_cols):
        new = np.full((n_rows, GRID + 1), np.inf)
        for r in range(n_rows):
            cand = np.full((n_rows, GRID + 1), np.inf)
            for p in range(n_rows):
                if k == 0 and (p != r if start is None else r != start):
                    continue  # the first superstep runs at the start size: no rescale before it
                u = units[k, p, r]
                if u <= GRID:
                    cand[p, u:] = best[p, : GRID + 1 - u] + a[k, p, r]
            prev_pick[k, r] = np.argmin(cand, axis=0)
            new[r] = cand[prev_pick[k, r], np.arange(GRID + 1)]
        best = new
    r = int(np.argmin(best[:, GRID]))
    if not np.isfinite(best[r, GRID]):
        return None
    rows, c = np.zeros(n_cols, dtype=np.int64), GRID
    for k in range(n_cols - 1, -1, -1):
        rows[k] = r
        p = int(prev_pick[k, r, c])
        c -= units[k, p, r]
        r = p
    return rows


def _priced(E: np.ndarray, T: np.ndarray, up: float, down: float | None,
            light: float | None = None) -> np.ndarray:
    """Seconds of superstep ``k`` at row ``r`` after row ``p``: ``W[k, p, r]``."""
    n = len(E)
    W = np.repeat(T.T[:, None, :], n, axis=1)  # (supersteps, prev, row)
    for p in range(n):
        for r in range(n):
            if E[r] > E[p]:
                W[:, p, r] += up
            elif E[r] < E[p]:
                price = light if light is not None and light_release(int(E[p]), int(E[r])) else down
                W[:, p, r] += T[r] if price is None else price
    return W


def _bound(sizes: np.ndarray, T: np.ndarray, rows: np.ndarray | None,
           W: np.ndarray | None = None) -> Bound | None:
    if rows is None:
        return None
    k = np.arange(T.shape[1])
    if W is None:
        t = T[rows, k]
    else:
        t = W[k, np.concatenate([[rows[0]], rows[:-1]]), rows]
    return Bound(tuple(int(sizes[r]) for r in rows), float(t.sum()), float((sizes[rows] * t).sum()))


def _check(sizes: Sequence[int], T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    E, T = np.asarray(sizes, dtype=float), np.asarray(T, dtype=float)
    if T.ndim != 2 or T.shape[0] != len(E) or T.shape[1] == 0:
        raise ValueError(f"need one row of superstep times per size: {len(E)} sizes, times of shape {T.shape}")
    if not np.all(np.isfinite(T)) or np.any(T < 0):
        raise ValueError("superstep times must be finite and >= 0")
    return E, T


def _start_row(E: np.ndarray, start: int | None) -> int | None:
    if start is None:
        return None
    hit = np.flatnonzero(E == start)
    if not hit.size:
        raise ValueError(f"start {start} is not one of the sizes {E.astype(int).tolist()}")
    return int(hit[0])


def fastest(sizes: Sequence[int], T: np.ndarray, budget: float, *, start: int | None = None,
            up: float = 0.0, down: float | None = 0.0, light: float | None = None) -> Bound | None:
    """The shortest schedule with executor-seconds ``<= budget`` (``None``: none fits); rescales
    priced as the module docstring says (free by default)."""
    E, T = _check(sizes, T)
    if start is None and up == 0 and down == 0 and not light:
        return _bound(E, T, _min_sum(T, E[:, None] * T, budget))
    W = _priced(E, T, up, down, light)
    return _bound(E, T, _min_sum_switching(W, E[None, None, :] * W, budget, _start_row(E, start)), W)


def cheapest(sizes: Sequence[int], T: np.ndarray, deadline: float, *, start: int | None = None,
             up: float = 0.0, down: float | None = 0.0, light: float | None = None) -> Bound | None:
    """The schedule with the fewest executor-seconds ending within ``deadline`` (``None``: none
    does); rescales priced as the module docstring says (free by default)."""
    E, T = _check(sizes, T)
    if start is None and up == 0 and down == 0 and not light:
        return _bound(E, T, _min_sum(E[:, None] * T, T, deadline))
    W = _priced(E, T, up, down, light)
    return _bound(E, T, _min_sum_switching(E[None, None, :] * W, W, deadline, _start_row(E, start)), W)


def static_times(runs: dict[int, Sequence[Sequence[float]]]) -> tuple[list[int], np.ndarray]:
    """``T[size, superstep]``: the median over a size's runs of each superstep's seconds, cut to the
    fewest supersteps any run has (a job that converges runs the same supersteps at every size)."""
    sizes = sorted(runs)
    if not sizes or any(not runs[e] for e in sizes):
        raise ValueError("need at least one run per size")
    n = min(len(r) for e in sizes for r in runs[e])
    return sizes, np.array([np.median([list(r)[:n] for r in runs[e]], axis=0) for e in sizes])


def phased(sizes: Sequence[int], T: np.ndarray, *, base: int, down: float | None = 0.0) -> list[Bound]:
    """Every schedule of one size larger than ``base`` for the first ``k`` supersteps and ``base``
    for the rest (one release, priced ``down`` as above; ``base`` throughout included). Why: the per-superstep
    bound picks a size per superstep knowing each one's time, and on a noisy cluster it also
    picks the noise (stop 54's WCC: 3-2-3-3-3-3-1, superstep 2 a median run faster at 2). What a
    plan without that foresight runs is a phase at one size, then the baseline -- ``fastest``'s
    plans on WCC -- so a goal out of reach for every such schedule is out of reach for a policy."""
    E, T = _check(sizes, T)
    b, m = _start_row(E, base), T.shape[1]
    W = _priced(E, T, 0.0, down)  # only releases occur here
    return [_bound(E, T, np.full(m, b), W)] + [_bound(E, T, np.array([r] * k + [b] * (m - k)), W)
                                               for r in range(len(E)) if E[r] > E[b] for k in range(1, m)]
