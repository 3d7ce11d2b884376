"""``efficiency``: the fewest executor-seconds with the run within a bound of static at the maximum.

Its own module beside :mod:`~iterflow.policies.rules` (``target``) and
:mod:`~iterflow.policies.fastest`: the default rule plans the rest of the run per superstep
(:func:`~iterflow.policies.plans.cheapest_plan`), the dual of ``fastest``'s plan; the rule it
replaced (``rule="knee"``) stays for runs recorded with it and for users who want executors
kept while they pay off.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iterflow.policies.base import AdaptivePolicy, Context, Predictor, Want
from iterflow.policies.core import History
from iterflow.policies.forecast import elapsed_seconds, last_run, mean_barrier
from iterflow.policies.plans import cheapest_plan

RULES = ("plan", "knee")


class EfficiencyPolicy(AdaptivePolicy):
    """The fewest executor-seconds with the whole run within ``1 + slowdown_bound`` of static at
    ``max_executors`` -- "release surplus executors without a notable slowdown".

    Rule ``plan`` (the default). At each barrier: ``whole`` = what the supersteps so far would
    have taken at the maximum (measured where they ran there, else predicted) plus the rest at
    the maximum (the forecast's work, :mod:`~iterflow.policies.forecast`, and the mean barrier);
    the rest may take ``(1 + slowdown_bound)·whole − elapsed``. The rule plans the rest per
    superstep, the cheapest plan within that (:func:`~iterflow.policies.plans.cheapest_plan`: one
    multiplier on time, so an executor is released first where it gains least per executor-second
    -- the marginal-gain threshold is the one that spends the bound), and asks for the plan's first
    size. Why the whole run and not each superstep: the bound is the user's on the job; held on
    the rest at every barrier (rule ``knee``) it kept WCC's tail at 3-4 executors where 2 run a
    superstep 10-27 % slower -- a slowdown the run could afford there, its heavy first supersteps
    having run at the maximum (stop 40: 4-20 % saved where the static medians allow 41-54 %).

    * Every plan prices its rescales (:meth:`transitions`: a scale-out's pause and cold
      supersteps, a release's relayout by its kind) from the size now, so a plan changes size
      only where the change pays, and a staircase (4 -> 3 -> 2) is priced twice.
    * A release plans within ``1 + slowdown_bound·(1 − band)`` (the dead band);
      :class:`~iterflow.policies.base.AdaptivePolicy` then checks it saves more executor-seconds
      than its price, after ``wait_count`` barriers. Sizes this run has not run are *not* padded
      as ``target`` pads them (:data:`~iterflow.policies.pads.UNSEEN_ERROR`): WCC's releases to
      them ran 0.99x their prediction, and the pad, 10 % of the rest on a bound of 10 %, left
      nothing to spend -- stop41w kept 4 to superstep 22 where the model read 3 at 1.07x of 4
      (20.5 s against 19.1 s) and the session's static-3 ran 1.05x. A release that runs slower
      than read is caught by the scale-out below. Where no plan fits the band, the fastest plan,
      its releases paid: a release there is faster as well as cheaper than keeping (stop46w20,
      its plans unpriced, released 4 -> 3 where the 7.5 s relayout made the run slower: +27 %).
    * Behind the bound (the rest at the current size over the full allowance) the rule scales
      out at once (urgent) to the first size of the cheapest plan within the allowance -- where
      no plan meets it, the fastest plan.
    * A fresh run with earlier runs of its input starts where the plan of a repeat of the last
      starts (:meth:`plan_start`).

    Rule ``knee``: release executors whose marginal speedup fell below ``threshold`` (and
    ``ideal_share`` of their ideal), within the bound held on the rest of the run (see
    :meth:`_knee`); ``threshold`` and ``ideal_share`` are that rule's only.
    """

    name = "efficiency"

    def __init__(self, *, rule: str = "plan", threshold: float = 0.05, ideal_share: float = 0.25,
                 slowdown_bound: float = 0.1, band: float = 0.2, **common: Any) -> None:
        if rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)} (got {rule!r})")
        if threshold <= 0 or slowdown_bound < 0 or not 0 <= band < 1 or not 0 <= ideal_share < 1:
            raise ValueError("need threshold > 0, 0 <= ideal_share < 1, slowdown_bound >= 0 and 0 <= band < 1")
        super().__init__(**common)
        self.rule, self.threshold, self.slowdown_bound, self.band = rule, threshold, slowdown_bound, band
        self.ideal_share = ideal_share

    def _want(self, ctx: Context) -> Want:
        return self._plan(ctx) if self.rule == "plan" else self._knee(ctx)

    def _plan(self, ctx: Context) -> Want:
        """Rule ``plan``: the first size of the cheapest plan of the rest within the whole run's bound."""
        E = np.arange(ctx.lo, self.max_executors + 1)
        fc, pred, cur = ctx.forecast, ctx.predictor, ctx.current
        S = pred.forecast_seconds(E, fc)
        R = S @ fc.weights  # the rest at each size kept throughout
        bars = mean_barrier(ctx.history) * fc.remaining
        elapsed = elapsed_seconds(ctx.history)
        whole = pred.ran_at(ctx.history, self.max_executors) + float(R[-1]) + bars
        k = int(np.clip(cur, E[0], E[-1])) - int(E[0])
        rest = float(R[k])

        def allowed(bound: float) -> float:
            """Seconds the rest's supersteps may take (barriers apart)."""
            return (1 + bound) * whole - elapsed - bars

        head = (f"the whole run at max {self.max_executors}: {whole:.1f}s predicted (bound "
                f"{1 + self.slowdown_bound:.2f}x = {(1 + self.slowdown_bound) * whole:.1f}s); elapsed {elapsed:.1f}s, "
                f"the ~{fc.remaining} supersteps left {rest:.1f}s at {cur} executors, "
                f"{'/'.join(f'{x:.1f}' for x in R)}s at {E[0]}..{E[-1]} ({fc.how}; {pred.note})")
        P, H, how = self.transitions(ctx.history, E)
        if rest > allowed(self.slowdown_bound):
            plan, t, c = cheapest_plan(S, E, fc.weights, allowed(self.slowdown_bound), prices=P, start=k, held=H)
            n = int(E[plan[0]])
            if n > cur:
                return Want(n, f"{head}: behind the bound; plan {n}..{int(E[plan[-1]])}: {t:.1f}s for {c:.0f} "
                               f"executor-seconds, its rescales priced ({how})", urgent=True)
            return Want(cur, f"{head}: behind the bound, and no plan starting above {cur} catches up "
                             f"(rescales priced: {how}); keep {cur}")
        goal = allowed(self.slowdown_bound * (1 - self.band))
        plan, t, c = cheapest_plan(S, E, fc.weights, goal, prices=P, start=k, held=H)
        n = int(E[plan[0]])
        if n < cur:
            fits = f"within {1 + self.slowdown_bound * (1 - self.band):.2f}x" if t <= goal else "the fastest plan"
            return Want(n, f"{head}; {fits}, its rescales priced ({how}): plan {n}..{int(E[plan[-1]])}, "
                           f"{t:.1f}s for {c:.0f} executor-seconds (now {cur * rest:.0f}); release to {n}")
        return Want(cur, f"{head}; the cheapest plan within the bound, its rescales priced ({how}), starts at {n}: "
                         f"keep {cur}")

    def plan_start(self, past: History, model: Any, max_iterations: int | None = None) -> Want | None:
        """The size to start at, from earlier runs of the input: with the model fitted on them,
        the run planned as a repeat of the last one (its work per superstep), the cheapest plan
        within the dead band of the bound from a free start, rescales priced
        (:meth:`transitions`); ``None`` (as configured) without a fitted model, where no
        plan fits, or with rule ``knee``. Why: started at the maximum, every release pays a
        relayout (~3-7 s on WCC R-MAT 20 on the emulated cluster, a quarter of the run), so stop
        46's runs could afford none in the heavy phase -- where static 2 ran within 1.07x of
        static 4 for half its executor-seconds (pareto_stop46w20b); the priced bound from the
        maximum saved 0 %."""
        super().plan_start(past, model, max_iterations)  # the last run's work: the forecast's repeat
        pred = Predictor(past, model, float(self.cores_per_executor)) if self.repeat and model is not None else None
        if self.rule != "plan" or pred is None or not pred.fitted:  # rule knee: as recorded with it
            return None
        fc = self._repeat_forecast(max_iterations, extend=True)
        works, weights = fc.works, fc.weights
        E = np.arange(self.min_executors, self.max_executors + 1)
        S = pred.forecast_seconds(E, fc)
        run = last_run(past)
        bars = mean_barrier(run) * works.size
        whole = float(S[-1] @ weights) + bars
        bound = 1 + self.slowdown_bound * (1 - self.band)
        P, H, how = self.transitions(run, E)  # the last run's releases, else the cluster's, else the prior
        plan, t, c = cheapest_plan(S, E, weights, bound * whole - bars, prices=P, held=H)
        n = int(E[plan[0]])
        if t > bound * whole - bars or n == self.start_executors:
            return None
        return Want(n, f"start at {n} executors, not {self.start_executors}: planned as a repeat of the last run "
                       f"({works.size} supersteps, {pred.note}), the cheapest plan within {bound:.2f}x of "
                       f"{whole:.1f}s at {self.max_executors}, rescales priced ({how}): plan {n}..{int(E[plan[-1]])}, "
                       f"{t + bars:.1f}s for {c:.0f} executor-seconds (at {self.max_executors}: "
                       f"{self.max_executors * whole:.0f})")

    def _knee(self, ctx: Context) -> Want:
        """Rule ``knee``: release executors whose marginal speedup fell below ``threshold``, within a
        runtime bound held on the rest of the run.

        ``t(e)`` is the predicted mean superstep of the rest of the run at ``e`` executors (the
        forecast's work per superstep, :mod:`~iterflow.policies.forecast`) and the *gain* of the
        ``e``-th executor is ``t(e−1)/t(e) − 1``. The rest of the run, not the next superstep alone:
        WCC's work collapses within two supersteps (23051 active vertices, then 1112, 69, 30, ...),
        and sized by the next superstep the rule released 4 -> 3 at barrier 4 and 3 -> 2 at barrier
        8, two releases each priced ~1 s on the emulated cluster; replayed by the simulator on stop
        37's WCC record (``pareto_stop37w``), sized by the forecast it releases 4 -> 2 at barrier 4
        (41.5 executor-seconds against 43.8); flat work (PageRank, k-means) decides as before. An executor pays
        off while its gain is at least ``threshold`` *and* at least ``ideal_share`` of what it
        would gain on linear scaling, ``1/(e−1)``: a fixed threshold alone depends on the scale (5 %
        is a tenth of the third executor's ideal 50 %, all of the 21st's 5 %) -- WCC's tail kept a
        third of 3 executors for predicted gains of -3 to 7 % around a 5 % threshold, where 2 ran
        its supersteps as fast (``pareto_stop36w``); ``ideal_share=0`` is the threshold alone. The
        wanted size is the larger of (a) the knee -- the fewest executors above which no further
        executor pays off -- and (b) the fewest executors with
        ``t(e) <= (1 + slowdown_bound)·t(max_executors)``. Holding (b) at every superstep keeps the
        whole run's predicted time within ``1 + slowdown_bound`` of static at the maximum.
        Dead band: adding executors needs a gain ``(1 + band)`` times that (or a broken bound,
        which is urgent); releasing them keeps ``t(e) <= (1 + slowdown_bound·(1 − band))·t(max)``.
        The rescale's price counts inside the bound: a size other than the current one pays its
        measured price (scale-out: :meth:`rescale_cost`; scale-in: :meth:`scale_in_cost`, one superstep
        until one was measured), spread over the forecast supersteps left -- so a release near the
        end, whose pause the run cannot win back, breaks the bound and is not made.
        """
        E = np.arange(self.min_executors, self.max_executors + 1)
        fc = ctx.forecast
        left = max(fc.remaining, 1)

        # the mean superstep of the rest of the run as forecast, not the next one alone
        S, n = ctx.predictor.forecast_seconds(E, fc), max(float(fc.weights.sum()), 1.0)
        t = S @ fc.weights / n
        t_max, tc = float(t[-1]), float(ctx.predictor.row(S, E, ctx.current, fc) @ fc.weights / n)
        gain = np.concatenate([[np.inf], t[:-1] / np.maximum(t[1:], 1e-12) - 1.0])
        # what the e-th executor must gain to pay off: the threshold, and its share of the ideal
        floor = np.maximum(self.threshold, self.ideal_share / np.maximum(E - 1, 1))
        up_price, _ = self.rescale_cost(ctx.history)
        down_price, _ = self.scale_in_prices(ctx.history, E, ctx.current)
        paid = t + np.where(E > ctx.current, up_price, np.where(E < ctx.current, down_price, 0.0)) / left

        def knee(factor: float) -> int:
            return int(E[np.flatnonzero(gain >= floor * factor)[-1]])

        def within(bound: float) -> int:
            ok = np.flatnonzero(paid <= (1 + bound) * t_max + 1e-12)
            return int(E[ok[0]]) if ok.size else int(E[-1])

        up = max(knee(1 + self.band), within(self.slowdown_bound))
        down = max(knee(1.0), within(self.slowdown_bound * (1 - self.band)))
        k = int(np.clip(ctx.current, E[0], E[-1])) - int(E[0])
        head = (f"a superstep of the ~{fc.remaining} left (mean of the forecast from work {fc.next_work:.4g}, "
                f"{ctx.predictor.note}): {tc:.2f}s at {ctx.current} executors, "
                f"{t_max:.2f}s at max {self.max_executors} (bound {1 + self.slowdown_bound:.2f}x = "
                f"{(1 + self.slowdown_bound) * t_max:.2f}s); executor #{E[k]} gains {gain[k]:.1%} "
                + (f"(threshold {self.threshold:.0%})" if E[k] < 2 or floor[k] <= self.threshold else
                   f"(pays off from {floor[k]:.1%}: {self.ideal_share:.0%} of its ideal {1 / (E[k] - 1):.0%})"))
        if up > ctx.current:
            urgent = tc > (1 + self.slowdown_bound) * t_max
            return Want(up, f"{head}; {up} executors: {t[up - E[0]]:.2f}s", urgent=urgent)
        if down < ctx.current:
            return Want(down, f"{head}; release to {down} executors: {t[down - E[0]]:.2f}s "
                              f"({t[down - E[0]] / t_max:.2f}x of max)")
        return Want(ctx.current, f"{head}; keep {ctx.current}")
