"""The rest of a run, as far as the records tell: remaining supersteps and their work.

* Remaining supersteps: the run's horizon (:class:`~iterflow.loop.plan.RunPlan`, the one rule
  the progress line and the report use too).
* Work per future superstep: the last work, decayed geometrically when ``log(work)`` falls over
  the window (a shrinking active set), otherwise flat.

Long horizons are summarised by at most ``samples`` points, each weighted by the supersteps it
stands for (the mean work of its chunk), so predicting a thousand supersteps costs no more than
predicting 64.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from iterflow.loop.plan import RunPlan, log_slope
from iterflow.loop.records import SuperstepRecord

History = Sequence[SuperstepRecord]


def elapsed_seconds(history: History) -> float:
    """Wall plus barrier seconds of the supersteps so far."""
    return sum(r.wall_seconds + r.barrier_seconds for r in history)


def mean_barrier(history: History) -> float:
    vals = [r.barrier_seconds for r in history if r.decided is not None]
    return float(np.mean(vals)) if vals else 0.0


@dataclass(frozen=True)
class Forecast:
    remaining: int
    works: np.ndarray    # work of each sample of the remaining supersteps, in order
    weights: np.ndarray  # supersteps each sample stands for (sums to ``remaining``)
    how: str             # where ``remaining`` came from, for reasons
    estimated: bool = True  # ``remaining`` from a convergence trend or a guess, not a known count

    @property
    def next_work(self) -> float:
        return float(self.works[0])


def forecast(history: History, plan: RunPlan, samples: int = 64) -> Forecast:
    """The remaining supersteps after the last of ``history`` and their forecast work."""
    h = plan.horizon(history)
    n, how = h.planning, h.how
    w_last = history[-1].ran.work
    w_last = w_last if w_last is not None and math.isfinite(w_last) and w_last > 0 else 1.0
    slope = log_slope([(float(r.superstep), r.ran.work) for r in history[-plan.window:]])
    if n == 0:
        return Forecast(0, np.array([w_last]), np.zeros(1), how, h.estimated)
    ks = np.arange(1, n + 1, dtype=float)
    if slope is not None and slope < -1e-6:
        works = w_last * np.exp(slope * ks)
        how += f"; work x{math.exp(slope):.2f}/superstep from {w_last:.4g}"
    else:
        works = np.full(n, w_last)
    chunks = np.array_split(np.arange(n), min(n, samples))
    return Forecast(n, np.array([works[c].mean() for c in chunks]),
                    np.array([float(c.size) for c in chunks]), how, h.estimated)
