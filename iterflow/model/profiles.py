"""One measured superstep as the task replay keeps it: its stages' task seconds, scheduled on
other slots (:class:`Profile`), and how task time follows work across supersteps (:class:`WorkCost`).

Why its own module: the replay model (:mod:`~iterflow.model.replay`), the cluster's calibration
profile (:mod:`~iterflow.cluster.profile`) and the contention fit read profiles; what the model
makes of many of them -- nearest profiles, corrections by measured size -- is the replay's.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Sequence

import numpy as np
from scipy.optimize import nnls

from iterflow.model.contention import Contention
from iterflow.model.tasks import makespan, recut
from iterflow.observe.stats import task_durations


@dataclass(frozen=True)
class Profile:
    """One measured superstep: its slots, work, wall time and per-stage task seconds."""

    slots: float
    work: float
    seconds: float
    stages: tuple[tuple[float, ...], ...]
    # what :meth:`_memo` keeps: the schedules computed and the contention they are for
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def parse(cls, slots: float, work: float, seconds: float, stage_tasks: str | Sequence[Any]) -> "Profile | None":
        """From ``Stats.stage_tasks`` (JSON ``[[id, submitted, completed, [ms, ...]], ...]``)."""
        rows = json.loads(stage_tasks) if isinstance(stage_tasks, str) else stage_tasks
        stages = tuple(tuple(t / 1e3 for t in task_durations(row)) for row in rows or () if row[3])
        if not stages or not slots > 0 or not seconds > 0:
            return None
        return cls(float(slots), float(work), float(seconds), stages)

    def in_tasks(self, slots: float, contention: Contention | None = None, follow: float | None = None) -> float:
        """Its stages' makespans at ``slots``; ``follow`` (a task's fixed seconds): with each
        stage's task count scaled to the slots, as the partition count follows the cores
        (:func:`~iterflow.model.tasks.resplit`)."""
        memo, key = self._memo(contention, slots, follow)
        if key not in memo:  # a barrier asks for every candidate size x forecast sample
            memo[key] = self._schedule(self.stages, key[0], self._cache["slowed"], follow)
        return memo[key]

    def scaled_in_tasks(self, slots: float, ratio: float, contention: Contention | None, follow: float) -> float:
        """:meth:`in_tasks` with each task's part above its fixed cost (``follow``, at most its
        stage's shortest task) times ``ratio``: linear between the stages with no work (``ratio``
        0) and as measured (:meth:`in_tasks`), each computed once per size."""
        memo, key = self._memo(contention, slots, follow)
        fixed_key = (*key, "fixed")
        if fixed_key not in memo:  # each stage's fixed cost found once (was once a task: quadratic in its tasks)
            memo[fixed_key] = self._schedule(tuple((min(follow, min(s, default=0.0)),) * len(s) for s in self.stages),
                                             key[0], self._cache["slowed"], follow)
        if key not in memo:
            memo[key] = self._schedule(self.stages, key[0], self._cache["slowed"], follow)
        fixed = memo[fixed_key]
        return max(fixed + ratio * (memo[key] - fixed), 0.0)

    def _memo(self, contention: Contention | None, slots: float, follow: float | None) -> tuple[dict[Any, float], tuple[int, float | None]]:
        """The schedules computed under ``contention`` (forgotten when another is asked for: a
        model replays under one at a time), and the key of ``slots`` and ``follow`` in them. Why
        not the contention in the key: hashing it (its per-size terms) at each of a barrier's
        ~10^4 look-ups cost more than the look-up."""
        c = self._cache
        if not c or c["by"] is not contention:
            c.update(by=contention, slowed=contention if contention is not None and not contention.none else None,
                     schedules={})
        return c["schedules"], (int(round(slots)), follow)

    def _schedule(self, stages: tuple[tuple[float, ...], ...], n: int, c: Contention | None,
                  follow: float | None) -> float:
        """``stages`` (this superstep's, or derived from them) re-cut to ``n`` slots where ``follow``
        says, slowed as ``c`` says, scheduled one stage after the other."""
        if follow is not None and n != int(round(self.slots)):
            stages = recut(stages, self.slots, n, follow)
        return sum(makespan(c.task(s, self.slots, n) if c else s, n) for s in stages)

    @cached_property
    def outside(self) -> float:
        """Seconds outside tasks, taken as fixed (never below 0)."""
        return max(0.0, self.seconds - self.in_tasks(self.slots))

    @cached_property
    def task_seconds(self) -> float:
        """All its tasks' seconds (what its work cost, wherever it ran)."""
        return float(sum(sum(s) for s in self.stages))

    def replay(self, slots: float, work: float | None = None, contention: Contention | None = None,
               cost: WorkCost | None = None, follow: float | None = None) -> float:
        """Its superstep at ``slots`` with ``work`` (the task time scaled as ``cost`` says, else
        in proportion); ``follow``: see :meth:`in_tasks`.

        Where the tasks follow the slots and task time follows work (``follow`` and ``cost``),
        each task keeps its fixed cost and only the rest is scaled by the work, then the stages
        are re-cut (:meth:`scaled_in_tasks`): scaled as a whole, a heavy superstep's tasks read
        at a tail's work kept the heavy one's task count's worth of fixed cost at every size, and
        stop 54w20's model read WCC's tail 1.6x slower on 1 executor than on 3 (0.40 s against
        0.25 s; static-1 ran it at 0.29 s, static-3 at 0.36 s)."""
        if follow is not None and cost is not None and work and self.work > 0:
            return self.outside + self.scaled_in_tasks(slots, work / self.work, contention, follow)
        if cost is not None and work:
            scale = cost.ratio(work, self.work)
        else:
            scale = (work / self.work) if work and self.work > 0 else 1.0
        return self.outside + self.in_tasks(slots, contention, follow) * scale


@dataclass(frozen=True)
class WorkCost:
    """Task seconds against work, ``a + b·work`` (least squares, both >= 0), fitted on the run's
    supersteps when their work spans at least ``2x``. Why not in proportion: WCC's "work" is the
    labels that changed, but every superstep joins the whole edge list -- its tail supersteps
    (20 labels) cost 1.3 s at 1 executor like one with 1,000, and a replay scaled by work read
    them ~free; ``target`` released 4 -> 1 for a tail it thought cost nothing."""

    a: float
    b: float

    @classmethod
    def fit(cls, profiles: Sequence[Profile]) -> "WorkCost | None":
        w = np.array([p.work for p in profiles], float)
        y = np.array([p.task_seconds for p in profiles], float)
        ok = (w > 0) & (y > 0)
        w, y = w[ok], y[ok]
        if w.size < 3 or w.max() < 2 * w.min():
            return None
        (a, b), _ = nnls(np.column_stack([np.ones_like(w), w]) / y[:, None], np.ones_like(y))  # relative error
        return cls(float(a), float(b)) if a + b > 0 else None

    def ratio(self, work: float, at: float) -> float:
        """Task time at ``work`` over task time at ``at``."""
        base = self.a + self.b * at
        return (self.a + self.b * work) / base if base > 0 else (work / at if at > 0 else 1.0)
