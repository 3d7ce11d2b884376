"""Superstep times a rule compares: the fitted model's, or ``time ∝ work / cores`` before it is fitted.

Why its own module: every rule asks the same two questions -- how long would the next superstep,
or the rest of the run, take at ``e`` executors -- and the answer must not depend on which model
the driver was given (a task-replay :class:`~iterflow.model.live.LiveModel`, a curve, a test's
fake). Before the model is fitted the last superstep is scaled by ``work / cores``, its cold
start divided out where earlier runs on the cluster measured one.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from iterflow.policies.core import History
from iterflow.policies.forecast import Forecast


# a repeated run's superstep read at most this many times its prediction either way: one
# superstep's stall (a GC pause, a lost task) is no property of the superstep
REPEAT_RATIO = 10.0


class Predictor:
    """Superstep times for candidate executor counts: the model, or ``time ∝ work/cores``."""

    def __init__(self, history: History, model: Any, cores_per_executor: float,
                 start_excess: Sequence[float] = (), repeat_works: np.ndarray | None = None) -> None:
        self.model, self.cpe = model, cores_per_executor
        # a repeated run's work per superstep (forecast.measured's third row): superstep i of this
        # run is superstep i of that one, its own profiles replayed (:meth:`_own`)
        self.repeat_works = repeat_works
        self.fitted = model is not None and bool(getattr(model, "fitted", hasattr(model, "X_")))
        self.error: float | None = None  # the fitted model's relative error, where it measured one
        # its sizes are the measured tasks scheduled on other slots (no curve extrapolated)
        self.replays = self.fitted and getattr(model, "source", None) == "task replay"
        # the fewest slots its replays measured a superstep at (None: not a task replay)
        self.least_slots: float | None = getattr(getattr(model, "replay", model), "least_slots", None) \
            if self.replays else None
        if self.fitted:
            err = getattr(model, "error_estimate_", None)
            self.error = float(err) if err is not None and np.isfinite(err) else None
            self.note = "model" + (f" (error ±{self.error:.0%})" if self.error is not None else "")
            return
        ref = next((r for r in reversed(history) if r.wall_seconds > 0), history[-1])
        self.t_ref = float(ref.wall_seconds)
        self.c_ref = float(ref.ran.cores or max(1.0, (ref.executors or 1) * self.cpe))
        self.w_ref = float(ref.ran.work or 1.0)
        self.note = (f"model not fitted yet: assuming time ∝ work/cores from superstep "
                     f"{ref.superstep} ({self.t_ref:.2f}s at {self.c_ref:g} cores")
        k = ref.superstep - 1  # a run's first supersteps, all at its first executors, run cold
        if 0 <= k < len(start_excess) and all(r.executors == ref.executors for r in history):
            self.t_ref /= start_excess[k]
            self.note += (f", taken as {self.t_ref:.2f}s steady: superstep {ref.superstep} of earlier runs on "
                          f"this cluster ran {start_excess[k]:.1f}x their steady state")
        self.note += ")"

    def seconds(self, executors: Any, works: Any) -> np.ndarray:
        """Predicted seconds, shape (len(executors), len(works))."""
        cores = np.asarray(executors, float).reshape(-1, 1) * self.cpe
        w = np.asarray(works, float).reshape(1, -1)
        if not self.fitted:
            return self.t_ref * (w / self.w_ref) * (self.c_ref / np.maximum(cores, 1e-9))
        return self._fitted(*np.broadcast_arrays(cores, w))

    def forecast_seconds(self, executors: Any, fc: Forecast) -> np.ndarray:
        """:meth:`seconds` of the forecast's samples; where it repeats an earlier run
        (``fc.past``), what its work does not say of a superstep -- a checkpoint, a state larger
        than the work (:func:`~iterflow.policies.forecast.measured`) -- is taken from that run:
        a task replay replays the superstep's own profiles at each size (``like``: its work in
        that run); any other model's prediction is scaled by that run's measured over predicted
        seconds there (at most :data:`REPEAT_RATIO` either way), the same at every size."""
        if fc.past is None or not self.fitted:
            return self.seconds(executors, fc.works)
        sec, cores, work = fc.past
        ok = np.isfinite(sec)
        own = ok & (fc.weights == 1) if self.replays else np.zeros_like(ok)  # one superstep: its own profiles
        cc = np.asarray(executors, float).reshape(-1) * self.cpe
        S = np.empty((cc.size, fc.works.size))
        S[:, ~own] = self.seconds(executors, fc.works[~own])  # each sample predicted once, one way
        for j in np.flatnonzero(own):
            S[:, j] = [self._own(c, fc.works[j], work[j]) for c in cc]
        ok &= ~own  # a chunk of several (a long horizon's sample), or a model without profiles
        if ok.any():
            at = self._fitted(cores[ok], work[ok])
            S[:, ok] *= np.clip(sec[ok] / np.maximum(at, 1e-12), 1 / REPEAT_RATIO, REPEAT_RATIO)
        return S

    def _fitted(self, cc: np.ndarray, ww: np.ndarray) -> np.ndarray:
        """The fitted model at cores ``cc`` and work ``ww`` (arrays of one shape)."""
        if callable(getattr(self.model, "predict", None)):
            try:
                out = np.asarray(self.model.predict(np.column_stack([cc.ravel(), ww.ravel()])), float)
                return out.reshape(cc.shape)
            except Exception:  # noqa: BLE001 - fall back to the documented scalar API
                pass
        flat = [self.model.predict_seconds(float(c), float(x)) for c, x in zip(cc.ravel(), ww.ravel())]
        return np.asarray(flat, float).reshape(cc.shape)

    def ran_at(self, history: History, e: int) -> float:
        """What the supersteps of ``history`` would have taken at ``e`` executors: their measured
        wall and barrier seconds where they ran at ``e``; else, the model fitted, their measured
        wall times the model's ratio of ``e`` to the size they ran at -- or, for the first
        superstep at a new size (cold, an excess a run at ``e`` would not pay), their work
        predicted at ``e``; before the model is fitted, time ∝ work/cores.

        Why the ratio and not the prediction: the model's level follows this run's latest
        supersteps, and one fast tail superstep moved WCC's predicted past at 4 executors by a
        fifth (10.0 -> 7.7 -> 11.0 s at barriers 6-8, stop 53w20b) while ``elapsed`` is measured:
        ``efficiency`` read itself behind its bound at barriers 7 and 12, its release to 1 never
        counted three barriers in a row, and it kept 3 (32 % saved where 3 -> 1 saves 57 %)."""
        out, prev = 0.0, None
        for r in history:
            if r.executors == e:
                out += r.wall_seconds
            elif not self.fitted:
                out += r.wall_seconds * (r.ran.cores or r.executors * self.cpe) / (e * self.cpe)
            else:
                at_e, there = self._pair(e, r)
                cold = prev is not None and prev.executors != r.executors
                out += float(at_e) if cold or not there > 0 else r.wall_seconds * float(at_e / there)
            out += r.barrier_seconds
            prev = r
        return out

    def _pair(self, e: int, r: Any) -> tuple[float, float]:
        """Superstep ``r`` predicted at ``e`` executors and at its own size: from its own
        profiles in the repeated run where there is one (a ratio the model's other supersteps
        do not move: at 480 simulated cores WCC's past at the baseline read 12.8 s less, then
        34 s more at consecutive barriers, its budget swinging by 1000 executor-seconds)."""
        w, i, rw = r.ran.work or 1.0, r.superstep - 1, self.repeat_works
        if not (self.replays and rw is not None and 0 <= i < len(rw) and np.isfinite(rw[i])):
            at_e, there = self.seconds([e, r.executors], [w])[:, 0]
            return float(at_e), float(there)
        return self._own(e * self.cpe, w, rw[i]), self._own(r.ran.cores or r.executors * self.cpe, w, rw[i])

    def _own(self, cores: float, work: float, like: float) -> float:
        """The task replay's seconds of a repeated superstep at ``cores``, from that superstep's
        own profiles (``like``: its work in the earlier run)."""
        return float(self.model.predict_seconds(float(cores), float(work), like=float(like)))

    def row(self, S: np.ndarray, executors: Any, e: int, fc: Forecast) -> np.ndarray:
        """Size ``e``'s seconds per sample: its row of ``S`` (:meth:`forecast_seconds` at
        ``executors``) where ``executors`` holds ``e``, else predicted -- a rule asking for its
        baseline or current size after all candidates does not predict a repeat's supersteps twice."""
        at = np.flatnonzero(np.asarray(executors, float).reshape(-1) == e)
        return S[at[0]] if at.size else self.forecast_seconds([e], fc)[0]

    def total(self, executors: Any, fc: Forecast, barrier: float = 0.0, *, current: int | None = None,
              delay: float = 0.0) -> np.ndarray:
        """Predicted remaining seconds for each executor count kept for the rest of the run.
        ``current``, ``delay``: executors above ``current`` register only ``delay`` seconds after
        they are asked for, so the work of those seconds runs at ``current`` (a scale-out asked
        with less of the run left than its executors take to start gains nothing)."""
        E = np.asarray(executors, float).reshape(-1)
        S = self.forecast_seconds(E, fc)
        t = S @ fc.weights + fc.remaining * barrier
        if current is None or delay <= 0 or not (E > current).any():
            return t
        tc = float(self.row(S, E, current, fc) @ fc.weights + fc.remaining * barrier)
        f = min(1.0, delay / tc) if tc > 0 else 1.0
        return np.where(E > current, f * tc + (1 - f) * t, t)
