"""How much slower this cluster runs each task as a job scales out, learned from earlier runs.

Why: task replay (:mod:`iterflow.model.replay`) assumes a task takes as long on ``m`` slots as
it did on the slots it was measured on. On dedicated nodes that nearly holds; where executors
share hardware (one box emulating a cluster, the driver on the same cores, a node's disk or
network) it does not: on the emulated cluster a PageRank task took 31 ms at 1 executor and
66 ms at 4 while the supersteps hardly shortened, so replay alone predicted 25-60 % too fast.
That slow-down is a property of the cluster, not of the job, so it is learned from earlier
runs of *any* program on the same cluster and applied to a job only ever seen at one size.
Two terms, since both happen: a shared CPU stretches every task in proportion, remote shuffle
reads and a busier scheduler add a fixed cost to each task, per slot added:

    task at m slots = task at m0 slots x (m / m0) ** beta + overhead x (m − m0)

(never below a tenth of the measured task). Fitted by least squares on log task durations
over every (job, size) point of the earlier runs -- each job's median task duration at a size
against its smallest size -- on a grid of ``beta``; ``overhead`` in closed form per ``beta``
(0 from a single pair, which cannot tell the two terms apart).
With no job at two sizes it is plain replay (``beta = 0``, ``overhead = 0``).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from iterflow.loop.records import SuperstepRecord, model_rows

BETA_BOUNDS = (0.0, 1.5)  # sharing never makes a task faster; beyond 1.5 a fit says more about noise


@dataclass(frozen=True)
class Contention:
    """Task slow-down with scale-out (see the module docstring)."""

    beta: float = 0.0
    overhead: float = 0.0  # seconds added to each task per slot added
    pairs: int = 0
    jobs: int = 0
    how: str = "none learned (no earlier job at two sizes): tasks taken to run as measured at any size"

    @property
    def none(self) -> bool:
        return not self.beta and not self.overhead

    def factor(self, from_slots: float, to_slots: float) -> float:
        """The proportional part alone."""
        if not self.beta or not from_slots > 0 or not to_slots > 0:
            return 1.0
        return float((to_slots / from_slots) ** self.beta)

    def task(self, seconds: Any, from_slots: float, to_slots: float) -> Any:
        """Task duration(s) measured at ``from_slots`` as they would run at ``to_slots``."""
        if self.none or from_slots == to_slots:
            return seconds
        d = np.asarray(seconds, float)
        out = np.maximum(d * self.factor(from_slots, to_slots) + self.overhead * (to_slots - from_slots), 0.1 * d)
        return out.tolist() if out.ndim else float(out)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def task_seconds(history: Sequence[SuperstepRecord], warmup: int = 1) -> dict[float, list[float]]:
    """``slots -> [mean task seconds]`` over the supersteps that feed the model (steady state:
    past the ``warmup`` of each executor set, not a cold one)."""
    return row_task_seconds(model_rows(history, warmup))


def row_task_seconds(rows: Iterable[Sequence[Any]]) -> dict[float, list[float]]:
    """:func:`task_seconds` of model rows ``(slots, work, seconds, stage_tasks)``."""
    from iterflow.model.replay import Profile

    out: dict[float, list[float]] = {}
    for slots, work, seconds, stage_tasks in rows:
        prof = Profile.parse(slots, work, seconds, stage_tasks)
        tasks = [t for s in prof.stages for t in s] if prof is not None else []
        if tasks:
            out.setdefault(slots, []).append(float(np.mean(tasks)))
    return out


def learn(jobs: Iterable[Sequence[SuperstepRecord]], bounds: tuple[float, float] = BETA_BOUNDS) -> Contention:
    """The cluster's contention from earlier runs, one record sequence per job (a program on one
    input: its runs at different sizes concatenated, superstep numbers restarting per run)."""
    return fit([task_seconds(history) for history in jobs], bounds)


def fit(jobs: Iterable[dict[float, list[float]]], bounds: tuple[float, float] = BETA_BOUNDS) -> Contention:
    """:func:`learn` from ``slots -> [mean task seconds]`` per job (from records, or from the
    simulator's recorded steps where a table kept only quantile sketches)."""
    points = []  # (base slots, base task, slots, task), one per job and size above its smallest
    used = 0
    for seen in jobs:
        per = {s: float(np.median(v)) for s, v in seen.items() if v}
        if len(per) < 2:
            continue
        used += 1
        base = min(per)
        points += [(base, per[base], s, v) for s, v in per.items() if s != base and v > 0 and per[base] > 0]
    if not points:
        return Contention()
    b0, d0, m, d = (np.array(c, float) for c in zip(*points))
    best = (math.inf, 0.0, 0.0)
    for beta in np.round(np.arange(bounds[0], bounds[1] + 1e-9, 0.01), 2):
        scaled, extra = d0 * (m / b0) ** beta, m - b0
        # overhead minimising the squared relative error (d - scaled - o*extra) / d, kept >= 0;
        # one pair cannot tell the two terms apart: then the proportional one alone
        o = max(0.0, float(np.sum((d - scaled) * extra / d ** 2) / np.sum(extra ** 2 / d ** 2))) \
            if len(points) > 1 else 0.0
        pred = np.maximum(scaled + o * extra, 0.1 * d0)
        err = float(np.sum(np.log(pred / d) ** 2))
        if err < best[0] - 1e-12:
            best = (err, float(beta), o)
    _, beta, overhead = best
    return Contention(beta, overhead, len(points), used,
                      f"learned over {len(points)} size pair{'s' if len(points) != 1 else ''} of {used} "
                      f"earlier job{'s' if used != 1 else ''} on this cluster")
