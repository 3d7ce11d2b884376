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
  its MLflow store), else the prior ``rescale_seconds``; :mod:`iterflow.policies.prices`);
* *prediction* -- with a fitted model (``model.fitted``), superstep times come from
  ``model.predict_seconds(cores, work)``; before that from ``time ∝ work / cores`` anchored
  at the last superstep (no serial part, no overhead), and the reason says so
  (:mod:`iterflow.policies.predictor`).

The rules themselves (``_want``, in :mod:`iterflow.policies.rules`,
:mod:`iterflow.policies.efficiency` and :mod:`iterflow.policies.fastest`) see a
:class:`~iterflow.policies.forecast.Forecast` of the rest of the run (remaining supersteps,
their work) and return the executor count they want.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from iterflow.loop.plan import RunPlan
from iterflow.loop.reconfig import Reconfiguration
from iterflow.loop.records import Layout
from iterflow.policies.core import History, PolicyBase
from iterflow.policies.forecast import Forecast, forecast, last_run, measured, repeated
from iterflow.policies.predictor import Predictor
from iterflow.policies.prices import RescalePrices

logger = logging.getLogger(__name__)

#: A release is predicted by replaying supersteps measured at other slots, re-cut to the new
#: count; from one size a task's fixed cost and its share of the work read the same
#: (:func:`~iterflow.model.tasks.task_fixed_cost`), and mistaking one for the other costs more the
#: further the slots shrink. At 480 cores (``experiments/simulate_480.py``) ``efficiency``
#: released 120 executors to 1 on a model that read WCC's tail tasks as fixed cost (0.67 s a
#: superstep predicted at 1, 5-53 s simulated) and ran 4.6x longer. So a release goes at most
#: this many times below the fewest slots measured, then learns the new size before the next:
#: the range the issue-13 cross-size check measures (1 <-> 4 executors); on the emulated
#: cluster (at most 4 executors) it never binds.
EXTRAPOLATE = 4.0


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


class AdaptivePolicy(RescalePrices, PolicyBase):
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
        self.past_scale_ins: list[tuple[float, float]] = []  # the scale-ins among them, (pause, cold) each
        self.past_scale_in_kinds: dict[bool, list[tuple[float, float]]] = {True: [], False: []}  # light or rebuilding ones
        self.cluster_scale_ins: list[tuple[float, float]] = []  # releases of any program's runs on this cluster
        self.cluster_scale_in_kinds: dict[bool, list[tuple[float, float]]] = {True: [], False: []}  # the same, by kind
        self.cluster_walls: dict[int, float] = {}  # their median superstep at each size: a release price's scale
        self.past_delays: list[float] = []  # seconds earlier runs' scale-outs took to register
        self.start_delays: list[float] = []  # seconds this cluster took to start executors (learn_start_delays)
        self.start_excess: list[float] = []  # a run's first supersteps over its steady one (learn_rescales)
        self.repeat: list[float] | None = None  # work per superstep of the earlier run this one repeats
        self.repeat_past: np.ndarray | None = None  # its supersteps as measured (forecast.measured)
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
        self.repeat_past = measured(run) if run else None
        return None

    def _repeat_works(self, max_iterations: int | None, extend: bool = False) -> np.ndarray:
        """The repeated run's work per superstep (:meth:`plan_start`), cut at this run's bound
        (``max_iterations``, the policy's own); ``extend``: where that bound is known (no
        tolerance) and longer than the repeated run, its last superstep's work up to it."""
        works = list(self.repeat or [])
        bound = min((b for b in (max_iterations, self.max_iterations) if b), default=None)
        if extend and bound is not None and self.tol is None and bound > len(works):
            works += works[-1:] * (bound - len(works))
        return np.array(works[:bound], float)

    def _repeat_forecast(self, max_iterations: int | None, extend: bool = False) -> Forecast:
        """The repeated run as a forecast of a whole run (a start's plan): :meth:`_repeat_works`,
        one sample a superstep, with its measured supersteps."""
        return repeated(self._repeat_works(max_iterations, extend), self.repeat_past, "a repeat of the last run")

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
        fc = forecast(history, plan or RunPlan(self.max_iterations, self.tol, self.window), repeat=self.repeat,
                      past=self.repeat_past)
        if fc.remaining == 0:
            return self._hold(i, cur, notes + [f"nothing left to rescale for ({fc.how})"])
        pred = Predictor(history, model, cpe, self.start_excess,
                         None if self.repeat_past is None else self.repeat_past[2])
        lo = self._release_floor(pred, cur, cpe)
        ctx = Context(history, i, cur, lo, max(hi, lo), pred, fc, self._coming(history, cur))
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
        if ctx.lo > self.min_executors and n == ctx.lo < cur:
            notes.append(f"a release goes no lower than {ctx.lo} executors from here: 1/{EXTRAPOLATE:g} of the fewest "
                         f"slots the model measured a superstep at ({pred.least_slots:g}), below which what one size "
                         "cannot tell apart -- a task's fixed cost or its share of the work -- decides the prediction")
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

    def _release_floor(self, pred: Predictor, cur: int, cpe: float) -> int:
        """The fewest executors a release may go to at this barrier: ``min_executors``, or
        :data:`EXTRAPOLATE` times fewer slots than the fewest the task replay measured a superstep
        at (never above ``cur``: the floor bounds a release, it asks for nothing)."""
        if pred.least_slots is None:
            return self.min_executors
        return int(min(cur, max(self.min_executors, math.ceil(pred.least_slots / cpe / EXTRAPOLATE))))

    @staticmethod
    def _coming(history: History, cur: int) -> int:
        """The executor count a scale-out asked at an earlier barrier is still starting towards
        (its executors not registered at the last barrier), else 0."""
        if len(history) < 2 or history[-2].actuated is None:
            return 0
        act = history[-2].actuated
        asked = act.executors_requested
        return int(asked) if act.executors_pending and asked is not None and asked > cur else 0

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
            # a release to the size most of the streak asked for (the upper median): one barrier's
            # reading, an early one made on less of the run or a transient dip, does not size it --
            # the least of the streak took WCC 4 -> 2 where its last two barriers asked for 1, and
            # the relayout to 2 cost 4-6 s where a release to 1 costs ~1 s (stop 63-64)
            target = n if up else sorted(self._streak, reverse=True)[(len(self._streak) - 1) // 2]
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

