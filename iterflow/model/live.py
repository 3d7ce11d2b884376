"""The model the driver feeds during a run: task replay first, the learned curve as fallback.

:class:`~iterflow.model.replay.ReplayModel` predicts any scale-out from supersteps measured
at one (their task durations), corrected by measurements at other sizes;
:class:`~iterflow.model.resource.ResourceModel` (the curve over (scale-out, work), judged on
Bell's and Ellis' traces) needs three scale-outs before it can tell fixed from parallel time
and serves where no task durations are known (statistics from the status store, a warm start
from tables written before ``stage_tasks`` existed).
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from iterflow.loop.records import SuperstepRecord, epoch_ages, feeds_model, is_cold, model_rows
from iterflow.model.replay import ReplayModel
from iterflow.model.resource import ResourceModel


class LiveModel:
    """The loop's :class:`~iterflow.loop.ports.Model` (see the module docstring)."""

    def __init__(self, curve: ResourceModel | None = None, replay: ReplayModel | None = None) -> None:
        self._curve = curve if curve is not None else ResourceModel()
        self._unfed: list[tuple[Any, ...]] = []  # rows observed, not yet given to the curve
        self.replay = replay if replay is not None else ReplayModel()

    @property
    def curve(self) -> ResourceModel:
        """The curve, fed what was observed since it was last asked for, in one refit. Why not at
        each observation: it serves only where the replay has no task durations, and its
        cross-validated refit took ~4 ms of every barrier (WCC: ~0.1 s a run) for nothing."""
        if self._unfed:
            rows, self._unfed = self._unfed, []
            self._curve.observe_many(rows)
        return self._curve

    @property
    def fitted(self) -> bool:
        return self.replay.fitted or self.curve.fitted

    @property
    def contention(self) -> Any:
        """The cluster's task slow-down with scale-out the model replays with
        (:class:`~iterflow.model.contention.Contention`; ``none`` when nothing was learned)."""
        return self.replay.contention

    @property
    def source(self) -> str:
        return "task replay" if self.replay.fitted else "curve"

    @property
    def error_estimate_(self) -> float:
        if self.replay.fitted:
            r = np.array(list(self.replay.ratios().values()))
            return float(np.max(np.abs(r - 1.0))) if r.size > 1 else float("nan")
        return float(getattr(self.curve, "error_estimate_", float("nan")))

    def observe(self, scale_out: float, work: float, seconds: float, stage_tasks: Any = None) -> "LiveModel":
        self._unfed.append((scale_out, work, seconds))
        self.replay.observe(scale_out, work, seconds, stage_tasks)
        return self

    def observe_many(self, rows: Iterable[Sequence[Any]]) -> "LiveModel":
        """``(scale_out, work, seconds[, stage_tasks])`` rows (a warm start, a resume), one refit."""
        rows = list(rows)
        self._unfed += [tuple(r[:3]) for r in rows]
        self.replay.observe_many(rows)
        return self

    def predict_seconds(self, scale_out: float, work: float = 1.0, like: float | None = None) -> float:
        """``like``: the work of the earlier superstep this one repeats -- the task replay
        replays that superstep's own profiles (:meth:`~iterflow.model.replay.ReplayModel.nearest`);
        the curve has none."""
        if self.replay.fitted:
            return float(self.replay.predict_seconds(scale_out, work, like))
        return float(self.curve.predict_seconds(scale_out, work))

    def predict(self, X: Any) -> np.ndarray:
        X = np.asarray(X, float).reshape(-1, 2)
        return np.array([self.predict_seconds(m, w) for m, w in X])

    def predict_interval(self, scale_out: float, work: float = 1.0, alpha: float = 0.2) -> tuple[float, float]:
        model = self.replay if self.replay.fitted else self.curve
        return model.predict_interval(scale_out, work, alpha)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source,
                               "replay_ratios": {str(k): v for k, v in self.replay.ratios().items()}
                               if self.replay.fitted else {},
                               "contention": self.replay.contention.to_dict()}
        if self.curve.fitted:
            out["curve"] = self.curve.to_dict()
        return out


def warm_start(model: Any, past: Sequence[SuperstepRecord], warmup: int | None = None) -> Any:
    """Feed ``model``, in one refit, the steady supersteps of earlier runs (``past``), past a
    warm-up of ``warmup`` supersteps an epoch (by default as ``past`` shows,
    :func:`~iterflow.model.warmup.warmup_supersteps`). The driver's warm start, which the
    simulator and the experiments replay."""
    if past:
        from iterflow.model.warmup import warmup_supersteps

        model.observe_many(model_rows(past, warmup_supersteps(past) if warmup is None else warmup))
    return model


# After a scale-in, the supersteps at the new size that run more than this above the model's
# prediction, one after the other from the release, are its transient (not the size's steady
# state), for at most SETTLE_MOST of them. Measured (stop 39, every scale-in of the WCC sessions
# since stop 34): a release in WCC's heavy phase ran its first supersteps 3.6-5.6x, 2.2-4.4x,
# 2.1-4.2x, 1.9-2.9x the static runs' same superstep before settling; in the tail 1.3-2.0x, then
# 1.0-1.3x. Fed to the model they made the smaller size look ~45 % slower (stop 38w: ``fastest``
# read its budget's baseline from them, the budget grew 23 -> 41 executor-seconds, and it scaled
# out for a budget that was not there). A transient falls from superstep to superstep; a ratio
# that holds or grows is the model's error, learned at once (:func:`_falling`, stop 59); one that
# keeps falling is learned after SETTLE_MOST supersteps.
SETTLE_TOL = 0.5
SETTLE_MOST = 5


def settling(record: SuperstepRecord, history: Sequence[SuperstepRecord]) -> bool:
    """Whether ``record`` follows a scale-in whose supersteps at the new size all ran cold so far
    (each has its ``cold_seconds``), fewer than :data:`SETTLE_MOST` of them: it may still be in
    the release's transient."""
    n, nxt = 0, record
    for k in range(len(history) - 1, 0, -1):
        prev, before = history[k], history[k - 1]
        if prev.superstep != nxt.superstep - 1 or prev.executors != record.executors \
                or prev.predicted.cold_seconds is None:
            return False
        n += 1
        if is_cold(prev, before):
            return before.executors > prev.executors and n < SETTLE_MOST
        nxt = prev
    return False


def _falling(ratio: float, prev: SuperstepRecord | None) -> bool:
    """Whether ``ratio`` (a superstep's time over the model's prediction) is below the previous
    superstep's, which ran cold at the same size against the same prediction: a transient
    falls from superstep to superstep; a ratio that holds or grows is the model's error at the
    size, to be learned. Measured (stop 59, ``experiments/settle_check.py``, 27 sessions since
    stop 50): of the releases whose supersteps ran 1.5x over the prediction for five in a row,
    none fell all the way -- k-means' 3 -> 1 in stop58all ran 1.24, 1.52, 2.23, 2.12, 1.67x a
    prediction of 0.525 s, which ``target``'s forecast used until the sixth superstep."""
    if prev is None or prev.predicted.cold_seconds is None or prev.wall_seconds <= prev.predicted.cold_seconds:
        return False
    return ratio < prev.wall_seconds / (prev.wall_seconds - prev.predicted.cold_seconds)


def feed(model: Any, record: SuperstepRecord, history: Sequence[SuperstepRecord], warmup: int,
         stage_tasks: Any, fitted: bool) -> float | None:
    """At a barrier: the cold excess of ``record`` over ``model``'s prediction (a cold superstep,
    part of its rescale's price; ``None`` when not cold or the model is not ``fitted``), then
    ``record`` fed to ``model`` when :func:`~iterflow.loop.records.feeds_model` admits it past a
    ``warmup`` of that many supersteps. After a scale-in, a superstep still in its transient
    (:func:`settling`, more than :data:`SETTLE_TOL` above the prediction) is cold too: priced, not
    fed. The driver's rule, which the simulator replays."""
    prev = history[-1] if history else None
    if fitted and (is_cold(record, prev) or settling(record, history)):
        predicted = model.predict_seconds(record.ran.cores, record.ran.work)
        if is_cold(record, prev):
            return max(0.0, record.wall_seconds - predicted)
        if record.wall_seconds > (1 + SETTLE_TOL) * predicted and _falling(record.wall_seconds / predicted, prev):
            return record.wall_seconds - predicted
    age = epoch_ages([*history[-warmup:], record])[-1]  # counted only as far as the rule looks
    if feeds_model(record, prev, age, warmup):
        model.observe(record.ran.cores, record.ran.work, record.wall_seconds, stage_tasks)
    return None
