"""``fastest``: the shortest runtime within a multiple of a baseline's executor-seconds.

Its own module (``target`` is :mod:`~iterflow.policies.rules`, ``efficiency``
:mod:`~iterflow.policies.efficiency`): it plans the rest of the run per superstep
(:func:`~iterflow.policies.plans.fastest_plan`, a multiplier on executor-seconds; ``efficiency``
searches the same plans from the other end); warm-up, cooldown, hysteresis and prices are
:class:`~iterflow.policies.base.AdaptivePolicy`'s, as for every rule.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from iterflow.loop.records import executor_seconds
from iterflow.policies.base import AdaptivePolicy, Context, Predictor, Want
from iterflow.policies.core import History
from iterflow.policies.plans import fastest_plan


# A release the full-budget plan asks for is not made while keeping the current size for the
# next forecast sample (one superstep; the first chunk of a long rest) and planning the rest
# within what is left is faster than the plan plus the release's price
# (:meth:`~iterflow.policies.prices.RescalePrices.scale_in_prices`: stop40w2's release in the
# heavy phase ran its next superstep 4.9 s at 1 executor, static-1 3.8 s) and over the budget
# by no more than the model's own error (HOLD_ERROR of it where none was measured; at most
# HOLD_ERROR_MOST). Why: the budget is a prediction of the baseline's rest; WCC's read 30.7,
# then 25.3 executor-seconds at consecutive barriers where static-1 ran 32.6 and 29.2, and
# ``fastest`` released 3 -> 1 in the heavy phase for an overshoot of ~0.2 executor-seconds;
# its next superstep ran 3.8 s at 1 executor where 3 run it in 1.0-1.4 s (stop40w: 1.25x
# static-1's executor-seconds and 3 % shorter).
HOLD_ERROR = 0.05
HOLD_ERROR_MOST = 0.1
# ... and only for a superstep heavier than the rest: the next one predicted at least HEAVY times
# the rest's mean at the release's size. In a flat tail holding one more superstep is always
# faster and a few tenths of an executor-second over, so each barrier held again: stop41w's
# `fastest` kept 3 executors four supersteps into WCC's tail (0.4-0.6 s each, where 1 runs
# them in 0.9 s), 1.27x static-1's executor-seconds for 15 % shorter; the release it held
# for was priced 4.1 s (one superstep as the run's median ran, at 1 executor).
HEAVY = 1.5


class FastestPolicy(AdaptivePolicy):
    """The shortest runtime for no more executor-seconds than ``budget`` × static at
    ``baseline_executors`` (``budget`` 1: "faster for the same executor-seconds"; 1.2: what
    the seed paper's "more resources for a shorter time" is judged at).

    Budget for the rest of the run = ``budget`` × (baseline × its predicted remaining time + what
    baseline would have spent so far) − what was spent (Σ executors × wall; a superstep run at the baseline
    counts its measured time on both sides). The policy plans the remaining supersteps
    (model-predictive: re-planned every barrier, only the first step is used): it minimises
    Σ t(e_k, w_k) subject to Σ e_k·t(e_k, w_k) <= budget by a Lagrange multiplier (each
    superstep takes argmin t·(1 + λ·e), λ bisected), which puts more executors where the work is
    large -- "more resources for a shorter time" -- and reduces to one count when work is flat.
    Dead band: scale out only to what a plan within ``c + (budget − c) / (1 + margin)`` starts
    with, ``c`` the cheapest plan's cost (the margin is taken from the part of the budget a
    choice can spend, not from the work every plan pays for); scale
    in when the plan within the full budget starts lower than now -- at once (urgent: waiting
    would spend the budget) -- unless the next superstep is heavier than the rest (:data:`HEAVY`)
    and keeping the size for it is faster and within the model's error of the budget
    (:data:`HOLD_ERROR`).
    """

    name = "fastest"

    def __init__(self, baseline_executors: int, *, budget: float = 1.0, margin: float = 0.2,
                 **common: Any) -> None:
        super().__init__(**common)
        if not (budget > 0 and math.isfinite(budget)):
            raise ValueError(f"budget must be a finite multiple > 0 of the baseline's executor-seconds (got {budget})")
        if not self.min_executors <= baseline_executors <= self.max_executors:
            raise ValueError(f"baseline_executors {baseline_executors} is outside "
                             f"[{self.min_executors}, {self.max_executors}]")
        if common.get("start_executors") is None:
            self.start_executors = int(baseline_executors)
        if margin < 0:
            raise ValueError(f"margin must be >= 0 (got {margin})")
        self.baseline_executors, self.margin, self.budget = int(baseline_executors), margin, float(budget)

    def _want(self, ctx: Context) -> Want:
        fc, pred, base = ctx.forecast, ctx.predictor, self.baseline_executors
        E = ctx.candidates
        S = pred.seconds(E, fc.works)  # (candidates, samples)
        t_base = float(pred.seconds([base], fc.works)[0] @ fc.weights)
        spent = sum(executor_seconds(r) for r in ctx.history)  # a rescale's wait and re-distribution included
        would = base * pred.ran_at(ctx.history, base)
        budget = self.budget * (base * t_base + would) - spent

        k_full, t_full, c_full = fastest_plan(S, E, fc.weights, budget)
        k_up, _, c_up = fastest_plan(S, E, fc.weights, self._within_margin(S, E, fc.weights, budget))
        first_full, first_up = int(E[k_full[0]]), int(E[k_up[0]])
        share = f"{self.budget:g}x " if self.budget != 1 else ""
        head = (f"executor-second budget {budget:.0f} for ~{fc.remaining} supersteps ({share}baseline {base}: "
                f"{t_base:.1f}s x {base}; {self.budget * would - spent:+.0f} saved so far; {fc.how}; {pred.note}); "
                f"plan {first_full}..{int(E[k_full[-1]])} executors: {t_full:.1f}s for {c_full:.0f} "
                f"executor-seconds")
        if first_up > ctx.current:
            # the rescale itself is spent at the new size: the plan must leave room for it
            pause, how = self.rescale_cost(ctx.history)
            if c_up + pause * first_up > budget:
                return Want(ctx.current, f"{head}; a scale-out to {first_up} would also spend ~{pause * first_up:.0f} "
                                         f"executor-seconds rescaling (~{pause:.1f}s, {how}), more than the "
                                         f"{max(budget - c_up, 0.0):.0f} the plan leaves: keep {ctx.current}")
            return Want(first_up, head)
        if first_full < ctx.current:
            held = self._held(S, E, fc.weights, budget, ctx.current)
            slack = min(pred.error if pred.error is not None else HOLD_ERROR, HOLD_ERROR_MOST) * max(budget, 0.0)
            prices, how = self.scale_in_prices(ctx.history, [first_full], ctx.current)
            price = float(prices[0])  # the release's; holding pays none
            at = int(k_full[0])
            rest = float(S[at, 1:] @ fc.weights[1:]) / max(float(fc.weights[1:].sum()), 1.0) if S.shape[1] > 1 else 0.0
            heavy = S.shape[1] > 1 and S[at, 0] >= HEAVY * rest
            if heavy and held is not None and held[0] < t_full + price and held[1] <= budget + slack:
                return Want(ctx.current, f"{head}; {ctx.current} for the next superstep (heavier than the rest: "
                                         f"{S[at, 0]:.1f}s against {rest:.1f}s at {first_full}) and the rest planned within "
                                         f"what is left: {held[0]:.1f}s for {held[1]:.0f} executor-seconds, faster "
                                         f"than the plan and its release ({price:.1f}s, {how}) and within "
                                         f"the model's error of the budget (+{slack:.0f}): keep {ctx.current}")
            straight = self._straight_down(ctx, S, E, fc.weights, budget, k_full, t_full, price)
            if straight is not None:
                return Want(straight[0], f"{head}; over budget at {ctx.current}; {straight[1]}", urgent=True)
            return Want(first_full, f"{head}; over budget at {ctx.current}", urgent=True)
        return Want(ctx.current, f"{head}; keep {ctx.current}")

    def _straight_down(self, ctx: Context, S: np.ndarray, E: np.ndarray, weights: np.ndarray, budget: float,
                       plan: np.ndarray, t_plan: float, price: float) -> tuple[int, str] | None:
        """``(size, why)`` where a plan stepping down twice (3 -> 2 now, 2 -> 1 at a later barrier)
        is slower, with both releases priced, than going to its last size at once and paying one;
        else ``None``. Why: the plan prices no rescale, and every release re-builds the cached
        blocks on the executors left (~3-5 s on WCC R-MAT 20, narrow or shuffled): stop46w20's
        ``fastest`` released 3 -> 2 at barrier 5 and 2 -> 1 at 6 (4.9 s and 4.1 s), where the
        priced bound goes 3 -> 1 once, 28 % shorter than static-1 against the run's 16 %."""
        sizes = E[plan]
        low, first = int(sizes[-1]), int(sizes[0])
        if low >= first or np.any(np.diff(sizes) > 0):
            return None
        row = int(np.flatnonzero(E == low)[0])
        t_low = float(S[row] @ weights)
        if low * t_low > budget:
            return None
        direct = float(self.scale_in_prices(ctx.history, [low], ctx.current)[0][0])
        then = float(self.scale_in_prices(ctx.history, [low], first)[0][0])
        if t_low + direct >= t_plan + price + then:
            return None
        return low, (f"the plan steps down twice ({ctx.current} -> {first} -> {low}): {t_plan:.1f}s + releases "
                     f"{price:.1f}s + {then:.1f}s against {t_low:.1f}s at {low} + one release {direct:.1f}s: "
                     f"straight to {low}")

    @staticmethod
    def _held(S: np.ndarray, E: np.ndarray, weights: np.ndarray, budget: float,
              current: int) -> tuple[float, float] | None:
        """Time and cost of the plan that keeps ``current`` for the first sample and plans the
        rest within what is left (``None`` where ``current`` is no candidate)."""
        at = np.flatnonzero(E == current)
        if not at.size:
            return None
        t0 = float(S[at[0], 0] * weights[0])
        if S.shape[1] == 1:
            return t0, current * t0
        _, t, c = fastest_plan(S[:, 1:], E, weights[1:], budget - current * t0)
        return t0 + t, current * t0 + c

    def _within_margin(self, S: np.ndarray, E: np.ndarray, weights: np.ndarray, budget: float) -> float:
        """What a scale-out may plan to spend: the cheapest plan's cost ``c`` plus the part of
        the budget a choice can spend, less the margin."""
        cheapest = float((E[:, None] * S).min(axis=0) @ weights)
        return cheapest + max(budget - cheapest, 0.0) / (1 + self.margin)

    def plan_start(self, past: History, model: Any, max_iterations: int | None = None) -> Want | None:
        """The size to start at, from earlier runs of the program: with the model fitted on them,
        the run is planned as a repeat of the last one (its supersteps' work, as many of them)
        and starts where the plan within the margin starts. Why: a run that starts at the
        baseline and scales out at a barrier pays the scale-out (fresh executors' cold
        supersteps, priced ~6 s on the emulated cluster) out of the same budget; WCC's plan
        puts its executors in the first supersteps, where the work is, and never paid for it
        from 1 executor (stop 28: "a scale-out to 4 would also spend ~28 executor-seconds").
        A run unlike the last corrects at its barriers, as any forecast."""
        super().plan_start(past, model, max_iterations)  # the last run's work: the forecast's repeat
        pred = Predictor(past, model, float(self.cores_per_executor)) if self.repeat else None
        if pred is None or not pred.fitted:
            return None
        works = self._repeat_works(max_iterations)
        E = np.arange(self.min_executors, self.max_executors + 1)
        weights = np.ones(works.size)
        S = pred.seconds(E, works)
        base = self.baseline_executors
        budget = self.budget * float(pred.seconds([base], works)[0] @ weights) * base
        k, t, c = fastest_plan(S, E, weights, self._within_margin(S, E, weights, budget))
        n = int(E[k[0]])
        if n == self.start_executors:
            return None
        return Want(n, f"start at {n} executors, not {self.start_executors}: planned as a repeat of the last run "
                       f"({works.size} supersteps, {pred.note}), {t:.1f}s for {c:.0f} executor-seconds within "
                       f"{self.budget:g}x baseline {base}'s {budget / self.budget:.0f}; plan {n}..{int(E[k[-1]])}")

