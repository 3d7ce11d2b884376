"""How much slower this cluster runs each task as a job scales out, learned from earlier runs.

Why: task replay (:mod:`iterflow.model.replay`) assumes a task takes as long on ``m`` slots as
it did on the slots it was measured on. On dedicated nodes that holds; where executors share
hardware (a node's disk or network, one box emulating a cluster, the driver on the same
cores) it does not: on the emulated cluster PageRank's summed task seconds per superstep grow
1.5x at 2 executors and 2.1x at 4 while the supersteps hardly shorten, so replay alone
predicted 25-60 % too fast. That slow-down is a property of the cluster, not of the job, so it
is learned from earlier runs of *any* program on the same cluster and applied to a job only
ever seen at one size:

    task seconds at m slots = task seconds at m0 slots x (m / m0) ** beta

``beta`` is fitted through the origin in log-log space over every (job, size) pair of the
earlier runs -- each job's median task seconds per unit of work at a size against its smallest
size -- weighted by the job's task seconds (a sub-second job's noise does not outvote a long
one). ``beta = 0`` (no run at two sizes yet) is plain replay.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from iterflow.loop.records import SuperstepRecord, model_rows

BETA_BOUNDS = (-0.5, 1.5)  # beyond these a fit says more about noise than about the cluster


@dataclass(frozen=True)
class Contention:
    """Task slow-down with scale-out: ``(to/from) ** beta`` (see the module docstring)."""

    beta: float = 0.0
    pairs: int = 0
    jobs: int = 0
    how: str = "none learned (no earlier job at two sizes): tasks taken to run as measured at any size"

    def factor(self, from_slots: float, to_slots: float) -> float:
        if not self.beta or not from_slots > 0 or not to_slots > 0:
            return 1.0
        return float((to_slots / from_slots) ** self.beta)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def task_seconds_per_work(history: Sequence[SuperstepRecord]) -> dict[float, list[tuple[float, float]]]:
    """``slots -> [(task seconds / work, task seconds)]`` over the supersteps that feed the
    model (steady state: not the first, not a cold one)."""
    from iterflow.model.replay import Profile

    out: dict[float, list[tuple[float, float]]] = {}
    for slots, work, seconds, stage_tasks in model_rows(history):
        prof = Profile.parse(slots, work, seconds, stage_tasks)
        if prof is None or not work > 0:
            continue
        total = float(sum(sum(s) for s in prof.stages))
        if total > 0:
            out.setdefault(slots, []).append((total / work, total))
    return out


def learn(jobs: Iterable[Sequence[SuperstepRecord]], bounds: tuple[float, float] = BETA_BOUNDS) -> Contention:
    """The cluster's ``beta`` from earlier runs, one record sequence per job (a program on one
    input: its runs at different sizes concatenated, superstep numbers restarting per run)."""
    num = den = 0.0
    pairs = used = 0
    for history in jobs:
        per = {s: v for s, v in task_seconds_per_work(history).items() if v}
        if len(per) < 2:
            continue
        used += 1
        base = min(per)
        v0 = float(np.median([r for r, _ in per[base]]))
        weight = float(np.median([t for _, t in per[base]]))
        for slots, vals in per.items():
            if slots == base:
                continue
            lr = math.log(float(np.median([r for r, _ in vals])) / v0)
            lb = math.log(slots / base)
            num, den, pairs = num + weight * lr * lb, den + weight * lb * lb, pairs + 1
    if not den > 0:
        return Contention()
    beta = float(min(max(num / den, bounds[0]), bounds[1]))
    return Contention(beta, pairs, used, f"learned over {pairs} size pair{'s' if pairs != 1 else ''} "
                                         f"of {used} earlier job{'s' if used != 1 else ''} on this cluster")
