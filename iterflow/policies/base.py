"""The mechanics every adaptive policy shares (issue 4): rescale executors at superstep barriers.

Shape after dask/distributed's ``deploy/adaptive_core.py``: a policy only *decides* (the
driver acts), every decision is appended to ``log`` as ``(superstep, "up"|"down"|"same",
reason)``, a change must be indicated at ``wait_count`` consecutive barriers before it is
made (hysteresis), and every answer is clamped to ``[min_executors, max_executors]``.

What :class:`AdaptivePolicy` adds to every rule:

* *warm-up* -- no change at barriers ``<= warmup`` (superstep 1 pays JIT and first reads);
* *cooldown* -- no change at the ``cooldown`` barriers after a rescale (new executors are
  cold, the state is re-read: those supersteps are noisy); an *urgent* change (the rule says
  which: a target missed even at the maximum, a broken bound, an exceeded budget) skips it
  and the hysteresis;
* *failed scale-out* -- if more executors were requested than became active (the last records'
  ``executors_requested`` > ``executors``), the reason says "scale-out to N got only M
  executors", the policy asks for no more than it has for ``backoff`` barriers (doubled on
  each repeated failure) and the run goes on;
* *rescale cost* -- a scale-out is made only if the time it is predicted to save over the
  rest of the run exceeds what a rescale costs (executor start + re-distribution: the median
  ``actuation_seconds + relayout_seconds`` measured in this run, else the median of earlier
  runs' rescales (:meth:`AdaptivePolicy.learn_rescales`, as ``iterflow run`` warm-starts from
  its MLflow store), else the prior ``rescale_seconds``);
* *prediction* -- with a fitted model (``model.fitted``), superstep times come from
  ``model.predict_seconds(cores, work)``; before that from ``time ∝ work / cores`` anchored
  at the last superstep (no serial part, no overhead), and the reason says so.

The rules themselves (``_want``, in :mod:`iterflow.policies.rules`) see a
:class:`~iterflow.policies.forecast.Forecast` of the rest of the run (remaining supersteps,
their work) and return the executor count they want.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from iterflow.loop.plan import RunPlan
from iterflow.loop.reconfig import Reconfiguration
from iterflow.loop.records import Layout, records, registration_delays, rescale_costs
from iterflow.model.warmup import start_excess
from iterflow.policies.core import History, PolicyBase
from iterflow.policies.forecast import Forecast, forecast, last_run

logger = logging.getLogger(__name__)


class Predictor:
    """Superstep times for candidate executor counts: the model, or ``time ∝ work/cores``."""

    def __init__(self, history: History, model: Any, cores_per_executor: float,
                 start_excess: Sequence[float] = ()) -> None:
        self.model, self.cpe = model, cores_per_executor
        self.fitted = model is not None and bool(getattr(model, "fitted", hasattr(model, "X_")))
        self.error: float | None = None  # the fitted model's relative error, where it measured one
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
        cc, ww = np.broadcast_arrays(cores, w)
        if callable(getattr(self.model, "predict", None)):
            try:
                out = np.asarray(self.model.predict(np.column_stack([cc.ravel(), ww.ravel()])), float)
                return out.reshape(cc.shape)
            except Exception:  # noqa: BLE001 - fall back to the documented scalar API
                pass
        flat = [self.model.predict_seconds(float(c), float(x)) for c, x in zip(cc.ravel(), ww.ravel())]
        return np.asarray(flat, float).reshape(cc.shape)

    def total(self, executors: Any, fc: Forecast, barrier: float = 0.0, *, current: int | None = None,
              delay: float = 0.0) -> np.ndarray:
        """Predicted remaining seconds for each executor count kept for the rest of the run.
        ``current``, ``delay``: executors above ``current`` register only ``delay`` seconds after
        they are asked for, so the work of those seconds runs at ``current`` (a scale-out asked
        with less of the run left than its executors take to start gains nothing)."""
        E = np.asarray(executors, float).reshape(-1)
        t = self.seconds(E, fc.works) @ fc.weights + fc.remaining * barrier
        if current is None or delay <= 0 or not (E > current).any():
            return t
        tc = float(self.seconds([current], fc.works)[0] @ fc.weights + fc.remaining * barrier)
        f = min(1.0, delay / tc) if tc > 0 else 1.0
        return np.where(E > current, f * tc + (1 - f) * t, t)


@dataclass
class Context:
    """What a rule sees at one barrier."""

    history: History
    superstep: int
    current: int
    lo: int
    hi: int  # max_executors, or fewer while backing off after a failed scale-out
    predictor: Predictor
    forecast: Forecast
    coming: int = 0  # executors a scale-out asked at an earlier barrier is still starting (0: none)

    @property
    def candidates(self) -> np.ndarray:
        return np.arange(self.lo, self.hi + 1)


@dataclass
class Want:
    """The executor count a rule wants and why. ``urgent``: at once, past warm-up, hysteresis and
    cooldown (a target out of reach, a broken bound, an exceeded budget). ``prompt``: past
    warm-up and hysteresis only (a forecast that misses a target: waiting for it to be
    confirmed only makes the miss larger). ``priced``: the rule already counted the rescale's
    price in the sizes it compared, so the generic "does it pay" check does not apply twice."""

    executors: int
    reason: str
    urgent: bool = False
    prompt: bool = False
    priced: bool = False


class AdaptivePolicy(PolicyBase):
    """Common mechanics of the adaptive policies (see the module docstring)."""

    name = "adaptive"

    def __init__(self, *, max_executors: int, min_executors: int = 1, cores_per_executor: int = 1,
                 start_executors: int | None = None, wait_count: int = 3, cooldown: int = 1,
                 warmup: int = 1, backoff: int = 3, max_iterations: int | None = None,
                 tol: float | None = None, window: int = 5, rescale_seconds: float = 10.0,
                 scale_in_seconds: float | None = None) -> None:
        if not 1 <= min_executors <= max_executors:
            raise ValueError(f"need 1 <= min_executors <= max_executors (got {min_executors}, {max_executors})")
        if start_executors is not None and not min_executors <= start_executors <= max_executors:
            raise ValueError(f"start_executors {start_executors} is outside [{min_executors}, {max_executors}]")
        if cores_per_executor < 1 or wait_count < 1 or backoff < 1 or cooldown < 0 or warmup < 0:
            raise ValueError("cores_per_executor, wait_count and backoff must be >= 1; cooldown, warmup >= 0")
        if max_iterations is not None and max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1 (got {max_iterations})")
        self.min_executors, self.max_executors = int(min_executors), int(max_executors)
        self.cores_per_executor = cores_per_executor
        self.start_executors = int(start_executors if start_executors is not None else max_executors)
        self.wait_count, self.cooldown, self.warmup, self.backoff = wait_count, cooldown, warmup, backoff
        self.max_iterations, self.tol, self.window = max_iterations, tol, window
        if not rescale_seconds >= 0:
            raise ValueError(f"rescale_seconds must be >= 0 (got {rescale_seconds})")
        self.rescale_seconds = float(rescale_seconds)
        if scale_in_seconds is not None and not scale_in_seconds >= 0:
            raise ValueError(f"scale_in_seconds must be >= 0 (got {scale_in_seconds})")
        self.scale_in_seconds = scale_in_seconds  # the prior of a scale-in; None: one superstep
        self.past_rescales: list[float] = []  # pauses of earlier runs' rescales (learn_rescales)
        self.past_scale_ins: list[float] = []  # the scale-ins among them
        self.past_delays: list[float] = []  # seconds earlier runs' scale-outs took to register
        self.start_delays: list[float] = []  # seconds this cluster took to start executors (learn_start_delays)
        self.start_excess: list[float] = []  # a run's first supersteps over its steady one (learn_rescales)
        self.repeat: list[float] | None = None  # work per superstep of the earlier run this one repeats
        super().__init__()
        self._streak: list[int] = []          # wants of the consecutive barriers indicating one direction
        self._streak_up: bool | None = None
        self._asked: tuple[int, int] | None = None  # (barrier, executors) of the last change asked for
        self._failure: dict[str, int] | None = None
        self._failures = 0

    # -- the rule (subclasses) ----------------------------------------------------------------
    def _want(self, ctx: Context) -> Want:
        raise NotImplementedError

    def plan_start(self, past: History, model: Any, max_iterations: int | None = None) -> Want | None:
        """Remember the work per superstep of the last of ``past`` (the runs this fresh one
        repeats): the forecast takes the horizon from it where the run's own is a guess or a
        trend (:func:`~iterflow.policies.forecast.forecast`). Starts as configured."""
        run = last_run(past)
        self.repeat = [r.ran.work if r.ran.work and math.isfinite(r.ran.work) else 1.0 for r in run] or None
        return None

    # -- the barrier -----------------------------------------------------------------------------
    def decide(self, history: History, model: Any = None, *, layout: Layout | None = None,
               plan: RunPlan | None = None) -> Reconfiguration:
        if not history:
            return Reconfiguration.none("no superstep yet")
        last = history[-1]
        i, cur = last.superstep, last.executors
        cores = last.ran.cores
        cpe = cores / cur if cur > 0 and cores else float(self.cores_per_executor)
        notes, hi = self._check_scale_out(history, i, cur)
        if cur > self.max_executors or (cur < self.min_executors and hi > cur):
            n = min(max(cur, self.min_executors), self.max_executors)
            return self._act(i, cur, n, notes + [f"{cur} executors is outside "
                                                 f"[{self.min_executors}, {self.max_executors}]"])
        if cur < self.min_executors:
            return self._hold(i, cur, notes + [f"{cur} executors, below min_executors {self.min_executors}"])
        fc = forecast(history, plan or RunPlan(self.max_iterations, self.tol, self.window), repeat=self.repeat)
        if fc.remaining == 0:
            return self._hold(i, cur, notes + [f"nothing left to rescale for ({fc.how})"])
        ctx = Context(history, i, cur, self.min_executors, max(hi, self.min_executors),
                      Predictor(history, model, cpe, self.start_excess), fc, self._coming(history, cur))
        want = self._want(ctx)
        if ctx.coming and want.executors < ctx.coming:
            # the forecast no longer needs what is still starting: withdraw it (a standalone
            # master starts executors at once; the loop removes any that register late). Not
            # below the current size: a release goes through the rule's own checks next time
            n = int(max(min(want.executors, ctx.hi), cur))
            self._streak, self._asked = [], (i, n)
            return self._record(i, cur, Reconfiguration(
                reason="; ".join(notes + [want.reason, f"withdraw the scale-out to {ctx.coming}: {n} executors"]),
                executors=n))
        if ctx.coming and want.executors == ctx.coming:
            # already asked for and still starting: asking again changes nothing
            self._streak = []
            return self._hold(i, cur, notes + [want.reason, f"waiting for the {ctx.coming} executors "
                                                            f"already asked for"])
        if i <= self.warmup and not ((want.urgent or want.prompt) and want.executors > cur):
            # a warm-up superstep says little of the steady state -- except that a scale-out
            # to meet a target cannot wait: waiting would only cost more
            return self._hold(i, cur, notes + [f"warm-up superstep {i}: keep {cur} executors"])
        n = int(min(max(want.executors, ctx.lo), ctx.hi if want.executors > cur else self.max_executors))
        notes.append(want.reason)
        unpaid = None if want.priced else \
            self._unpaid_scale_out(ctx, n) if n > cur else self._unpaid_scale_in(ctx, n) if n < cur else None
        if unpaid:
            self._streak = []
            return self._hold(i, cur, notes + [unpaid])
        since = self._last_change(history)
        if n != cur and 0 <= i - since < self.cooldown and not want.urgent:
            self._streak = []
            return self._hold(i, cur, notes + [f"cooldown: superstep {since} was the first after a "
                                               f"rescale, so no change to {n} yet"])
        now = "urgent" if want.urgent else "at once" if want.prompt else ""
        return self._hysteresis(i, cur, n, now, notes)

    @staticmethod
    def _coming(history: History, cur: int) -> int:
        """The executor count a scale-out asked at an earlier barrier is still starting towards
        (its executors not registered at the last barrier), else 0."""
        if len(history) < 2 or history[-2].actuated is None:
            return 0
        act = history[-2].actuated
        asked = act.executors_requested
        return int(asked) if act.executors_pending and asked is not None and asked > cur else 0

    def rescale_cost(self, history: History) -> tuple[float, str]:
        """Wall seconds one rescale costs (its pause at the barrier, re-distributing the state,
        the cold supersteps after it): the median of the rescales in ``history``, else of
        earlier runs' (:meth:`learn_rescales`), else the prior ``rescale_seconds``. The wait
        for a scale-out's executors is the registration delay (:meth:`registration_delay`),
        not part of this price. The prior stays 10 s: one superstep (~1.2 s), tried on the full
        PageRank input here, let ``target`` scale out from a cold start, and that scale-out
        cost 21 s of registration and 17 s of cold supersteps (fresh 0.5-core JVMs) in a 17 s
        job, against the 10 s prior's keeping 1 executor (``experiments/results/pareto_full_pagerank_prior*``)."""
        seen = rescale_costs(history, "up")  # a scale-in starts no JVM: its price is scale_in_cost's
        if seen:
            return float(np.median(seen)), f"measured over {len(seen)} rescale{'s' if len(seen) > 1 else ''}"
        if self.past_rescales:
            n = len(self.past_rescales)
            return float(np.median(self.past_rescales)), f"learned from {n} rescale{'s' if n > 1 else ''} of earlier runs"
        return self.rescale_seconds, "prior"

    def registration_delay(self, history: History) -> tuple[float, str]:
        """Seconds from a scale-out's request to its executors' registration: the median of this
        run's, else of earlier runs' (:meth:`learn_rescales`), else of the executors this
        cluster started for the application before the run (:meth:`learn_start_delays`), else 0
        (unknown: no reason to wait)."""
        seen, where = registration_delays(history), "seen"
        if not seen:
            seen, where = (self.past_delays, "seen in earlier runs") if self.past_delays else \
                (self.start_delays, "executor starts of this cluster")
        if not seen:
            return 0.0, "registration delay not measured yet"
        delay = float(np.median(seen))
        return delay, f"executors register ~{delay:.1f}s after asked ({len(seen)} {where})"

    def learn_start_delays(self, delays: Sequence[float]) -> None:
        """Remember how long this cluster took to start executors before the run (measured live
        by the actuator): the registration delay of a cold start, with no earlier run's record."""
        self.start_delays = [float(d) for d in delays]

    def learn_rescales(self, history: Any, scale_ins: Any = None) -> int:
        """Remember the rescales of earlier runs' records (or table rows, or a DataFrame) as the
        cost of this run's first rescale: a fixed prior is wrong on most clusters (10 s where
        executors start in 3 s; 25 s on slow emulated nodes); and how much slower than steady a
        run's first supersteps ran (:func:`~iterflow.model.warmup.start_excess`), which the
        forecast divides out before the model is fitted. Returns how many rescales.

        ``scale_ins``: the records whose releases price this run's (default ``history``). A
        scale-out's price -- fresh JVMs registering and warming up -- is the cluster's, learned
        from any program's runs; a scale-in's is the superstep after it moving (decommissioned,
        iterflow's default) or re-reading (killed) the removed executors' cached share of *this
        program's* data, so the driver gives only the program's own earlier runs here. Measured
        on the emulated cluster with kills (stop 27): the calibration job's 4 -> 2 cost 0.4 s,
        PageRank's 4 -> 2 1.2-1.8 s and WCC's 1.8-2.3 s; priced at the calibration's, ``target``
        released early and met 8 and 6 of 10 targets (9 and 8 priced at one superstep).
        Decommissioned, PageRank's 4 -> 2 costs 0.3-0.5 s (stop 28); a program's records from
        before keep its price high until its own decommissioned releases outnumber them."""
        rows = records(history)
        self.past_rescales = rescale_costs(rows, "up")
        self.past_scale_ins = rescale_costs(rows if scale_ins is None else records(scale_ins), "down")
        self.past_delays = registration_delays(rows)
        self.start_excess = start_excess(rows)
        return len(self.past_rescales)

    def _unpaid_scale_out(self, ctx: Context, n: int) -> str | None:
        """Why a scale-out to ``n`` does not pay for itself, or ``None`` when it does: the time
        it saves over the forecast rest of the run must exceed what the rescale costs (new
        executors start, the state is re-distributed); short tails are not worth it."""
        cost, how = self.rescale_cost(ctx.history)
        delay, late = self.registration_delay(ctx.history)
        cur_t, new_t = ctx.predictor.total([ctx.current, n], ctx.forecast, current=ctx.current, delay=delay)
        gain = float(cur_t - new_t)
        if gain > cost:
            return None
        return (f"scale-out to {n} would save ~{gain:.1f}s over ~{ctx.forecast.remaining} supersteps "
                f"({late}), not more than a rescale costs (~{cost:.1f}s, {how}): keep {ctx.current}")

    def scale_in_cost(self, history: History) -> tuple[float | None, str]:
        """``(seconds, how)``: the median price of this run's scale-ins, else of earlier runs';
        ``(None, how)`` until one was measured: then the price is one superstep as this run's
        ran, at the new size (:meth:`scale_in_prices`) -- a release starts no executor, but the
        superstep after it reads the removed executors' cached share of the state, moved there
        (decommissioned) or recomputed (killed: 1.0 s after PageRank's 4 -> 3, 4.7 s after WCC's
        4 -> 1 in its tail); the prior is a cautious bound, decommissioned releases cost less
        (PageRank 4 -> 2: 0.3-0.5 s, `experiments/release_cost.py`)."""
        seen = rescale_costs(history, "down") or self.past_scale_ins
        if seen:
            return float(np.median(seen)), f"measured over {len(seen)} scale-in{'s' if len(seen) > 1 else ''}"
        if self.scale_in_seconds is not None:
            return self.scale_in_seconds, "prior"
        return None, "prior: one superstep as this run's ran, at the new size"

    def scale_in_prices(self, history: History, executors: Any, current: int) -> tuple[np.ndarray, str]:
        """The price of a scale-in from ``current`` to each of ``executors`` (:meth:`scale_in_cost`;
        the prior: the median superstep of this run so far, times ``current / e``)."""
        cost, how = self.scale_in_cost(history)
        E = np.asarray(executors, float)
        if cost is not None:
            return np.full(E.shape, cost, float), how
        walls = [r.wall_seconds for r in history if r.wall_seconds > 0]
        return (float(np.median(walls)) if walls else 0.0) * current / np.maximum(E, 1.0), how

    def _unpaid_scale_in(self, ctx: Context, n: int) -> str | None:
        """Why a scale-in to ``n`` does not pay, or ``None`` when it does: the executor-seconds
        it saves over the forecast rest of the run must exceed its price (:meth:`scale_in_cost`:
        mostly the cold superstep after it, run by the ``n`` left) -- no release with a
        superstep left that cannot pay."""
        cur_t, new_t = ctx.predictor.total([ctx.current, n], ctx.forecast)
        price, how = self.scale_in_prices(ctx.history, [n], ctx.current)
        held = float(price[0]) * n
        saved = float(ctx.current * cur_t - n * new_t)
        if saved > held:
            return None
        return (f"scale-in to {n} would save ~{saved:.0f} executor-seconds over ~{ctx.forecast.remaining} "
                f"supersteps, not more than it costs (~{held:.0f}: {float(price[0]):.1f}s, {how}, "
                f"at {n} executors): keep {ctx.current}")

    def _hysteresis(self, i: int, cur: int, n: int, now: str, notes: list[str]) -> Reconfiguration:
        """Make a change indicated at ``wait_count`` consecutive barriers, or at once when
        ``now`` says why (``urgent``, ``at once``)."""
        if n == cur:
            self._streak = []
            return self._hold(i, cur, notes)
        up = n > cur
        if self._streak_up is not up:
            self._streak = []
        self._streak_up = up
        self._streak.append(n)
        if now or len(self._streak) >= self.wait_count:
            target = n if up else max(self._streak)  # scale in by the least the streak asked for
            notes.append(now or f"indicated at {len(self._streak)} consecutive barriers")
            return self._act(i, cur, target, notes)
        return self._hold(i, cur, notes + [f"{'up' if up else 'down'} to {n} indicated "
                                           f"{len(self._streak)}/{self.wait_count} barriers"])

    def _last_change(self, history: History) -> int:
        """The first superstep run at the current size (from the history or from our own ask)."""
        since = 0
        for prev, row in zip(history[-2::-1], history[::-1]):
            if prev.executors != row.executors:
                since = row.superstep
                break
        if self._asked is not None:
            since = max(since, self._asked[0] + 1)
        return since

    def _check_scale_out(self, history: History, i: int, cur: int) -> tuple[list[str], int]:
        """Notice a scale-out that got fewer executors than asked; returns (notes, ceiling)."""
        seen = self._requested_vs_active(history)
        f = self._failure
        lost = history[-1].executors_lost
        if lost > 0:
            # Capacity lost to a fault is not a refused request: decide for what is left and
            # leave the backoff alone (asking again may well be granted on another worker).
            note = f"lost {lost} executor{'s' if lost > 1 else ''} in superstep {i}: deciding for the {cur} left"
            return [note], self.max_executors
        if seen is not None and seen[0] > seen[1]:
            asked, got = seen
            repeat = f is not None and self._asked is not None and self._asked[0] >= f["at"]
            if f is None or repeat:
                self._failures += 1
                wait = self.backoff * 2 ** min(self._failures - 1, 4)
                f = self._failure = {"asked": asked, "got": got, "at": i, "retry_at": i + wait}
                logger.warning("scale-out to %d got only %d executors; backing off %d supersteps",
                               asked, got, wait)
        elif f is not None and (cur >= f["asked"] or (seen is not None and self._asked is not None
                                                      and self._asked[0] >= f["at"])):
            self._failure, self._failures, f = None, 0, None  # granted late, or a retry succeeded
        if f is None:
            return [], self.max_executors
        if i < f["retry_at"]:
            ceiling = min(max(f["got"], cur), self.max_executors)
            return [f"scale-out to {f['asked']} got only {f['got']} executors (superstep {f['at']}); "
                    f"asking for no more than {ceiling} before superstep {f['retry_at']}"], ceiling
        return [f"scale-out to {f['asked']} got only {f['got']} executors earlier; may retry"], self.max_executors

    def _requested_vs_active(self, history: History) -> tuple[int, int] | None:
        """(requested, active) for the latest request the rows (or our own log) show."""
        last = history[-1]
        active = last.executors
        for row in history[:-3:-1]:
            req = row.actuated.executors_requested if row.actuated is not None else None
            if req is not None and row.actuated.executors_pending:
                return None  # still registering while supersteps run: not refused (yet)
            if req is not None:
                if row is last:
                    active = int(row.actuated.executors_active or active)
                return int(req), active
        if self._asked is not None and self._asked[0] == last.superstep - 1:
            return self._asked[1], active
        return None

    def _hold(self, i: int, cur: int, notes: list[str]) -> Reconfiguration:
        return self._record(i, cur, Reconfiguration(reason="; ".join(notes)))

    def _act(self, i: int, cur: int, n: int, notes: list[str]) -> Reconfiguration:
        self._streak, self._asked = [], (i, n)
        verb = "scale out" if n > cur else "scale in"
        return self._record(i, cur, Reconfiguration(reason="; ".join(notes + [f"{verb} {cur} -> {n}"]),
                                                    executors=n))

    def _record(self, i: int, cur: int, r: Reconfiguration) -> Reconfiguration:
        return self._logged(i, cur, r)

