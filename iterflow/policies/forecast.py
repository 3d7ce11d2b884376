"""The rest of a run, as far as the superstep table tells: remaining supersteps and their work.

* Remaining supersteps: ``max_iterations − i`` when known; from the convergence trend when the
  program reports a ``delta`` and a tolerance is known -- ``log(delta)`` is fitted linear in the
  superstep over the last ``window`` positive deltas (geometric convergence, as in PageRank or
  label propagation) and extrapolated from the last delta down to ``tol``; both known -> the
  smaller; 0 once ``max_iterations`` is reached or ``delta <= tol``. ``tol=None`` with integer deltas (counts of changed records: WCC, BFS) means "until
  none change", i.e. ``tol = 0.5``. Nothing usable (no bound, delta not shrinking) -> as many
  again as done so far (at least one), and the description says so.
* Work per future superstep: the last work, decayed geometrically when ``log(work)`` falls over
  the window (a shrinking active set), otherwise flat.

Long horizons are summarised by at most ``samples`` points, each weighted by the supersteps it
stands for (the mean work of its chunk), so predicting a thousand supersteps costs no more than
predicting 64.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

History = list[dict[str, Any]]


def num(x: Any) -> float | None:
    """A finite float, or None (history cells may be missing, None or NaN)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def elapsed_seconds(history: History) -> float:
    """Wall plus barrier seconds of the supersteps so far."""
    return sum((num(r.get("wall_seconds")) or 0.0) + (num(r.get("barrier_seconds")) or 0.0) for r in history)


def mean_barrier(history: History) -> float:
    vals = [v for v in (num(r.get("barrier_seconds")) for r in history) if v is not None]
    return float(np.mean(vals)) if vals else 0.0


@dataclass(frozen=True)
class Forecast:
    remaining: int
    works: np.ndarray    # work of each sample of the remaining supersteps, in order
    weights: np.ndarray  # supersteps each sample stands for (sums to ``remaining``)
    how: str             # where ``remaining`` came from, for reasons

    @property
    def next_work(self) -> float:
        return float(self.works[0])


def log_slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(y) against x over points with y > 0 (None below 3 points)."""
    pts = [(x, y) for x, y in points if y is not None and y > 0]
    if len(pts) < 3:
        return None
    x, y = np.array(pts, float).T
    if np.ptp(x) == 0:
        return None
    return float(np.polyfit(x, np.log(y), 1)[0])


def remaining_supersteps(history: History, max_iterations: int | None = None, tol: float | None = None,
                         window: int = 5, max_remaining: int = 10_000) -> tuple[int, str]:
    i = int(history[-1]["superstep"])
    known = max(max_iterations - i, 0) if max_iterations else None
    deltas = [(float(r["superstep"]), num(r.get("delta"))) for r in history[-window:]]
    deltas = [(x, d) for x, d in deltas if d is not None]
    t = tol
    if t is None and deltas and all(float(d).is_integer() for _, d in deltas):
        t = 0.5
    est, how = None, ""
    if t is not None and t > 0 and deltas:
        last = deltas[-1][1]
        slope = log_slope(deltas)
        if last <= t:
            est, how = 0, f"converged: delta {last:.3g} <= tol {t:g}"
        elif slope is not None and slope < -1e-6:
            est = max(1, math.ceil((math.log(t) - math.log(last)) / slope))
            how = f"delta x{math.exp(slope):.2f}/superstep reaches tol {t:g} in ~{est}"
    if est is not None and known is not None:
        n = min(est, known)
        how = f"{how}, max_iterations leaves {known}" if est > known else how
    elif est is not None:
        n = est
    elif known is not None:
        n, how = known, f"{known} left of max_iterations {max_iterations}"
    else:
        n, how = max(i, 1), f"remaining unknown, assuming {max(i, 1)} more (as many as done)"
    return int(min(n, max_remaining)), f"~{min(n, max_remaining)} supersteps left: {how}"


def forecast(history: History, *, max_iterations: int | None = None, tol: float | None = None,
             window: int = 5, samples: int = 64) -> Forecast:
    n, how = remaining_supersteps(history, max_iterations, tol, window)
    w_last = num(history[-1].get("work"))
    w_last = w_last if w_last is not None and w_last > 0 else 1.0
    slope = log_slope([(float(r["superstep"]), num(r.get("work"))) for r in history[-window:]])
    if n == 0:
        return Forecast(0, np.array([w_last]), np.zeros(1), how)
    ks = np.arange(1, n + 1, dtype=float)
    if slope is not None and slope < -1e-6:
        works = w_last * np.exp(slope * ks)
        how += f"; work x{math.exp(slope):.2f}/superstep from {w_last:.4g}"
    else:
        works = np.full(n, w_last)
    chunks = np.array_split(np.arange(n), min(n, samples))
    return Forecast(n, np.array([works[c].mean() for c in chunks]),
                    np.array([float(c.size) for c in chunks]), how)
