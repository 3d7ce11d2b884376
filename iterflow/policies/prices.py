"""What a rescale costs, for every adaptive policy: learned from this run, earlier runs of the
program and of the cluster, or a prior -- and the checks that a rescale pays for itself.

Why one place: a scale-out's price (fresh JVMs registering and warming up) and a scale-in's
(the superstep after it moving or re-reading the removed executors' cached share) must be the
same figures for ``target``, ``efficiency`` and ``fastest`` (issue 13, item 4: one honest price,
for scale-in as for scale-out). :class:`RescalePrices` is mixed into
:class:`~iterflow.policies.base.AdaptivePolicy`, whose constructor sets the priors
(``rescale_seconds``, ``scale_in_seconds``) and the lists these methods learn into.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

import numpy as np

from iterflow.loop.records import records
from iterflow.loop.rescales import light_release, registration_delays, rescale_costs, rescale_parts
from iterflow.model.warmup import start_excess
from iterflow.policies.core import History

if TYPE_CHECKING:  # the rule's view of one barrier, defined with the mechanics that build it
    from iterflow.policies.base import Context


class Transitions(NamedTuple):
    """Every change a plan may make, priced (:meth:`RescalePrices.transitions`)."""

    prices: np.ndarray  # [p, r]: seconds the change from executors[p] to executors[r] adds
    held: np.ndarray  # [p, r]: the executors that hold them
    how: str


class RescalePrices:
    """The price of a rescale (see the module docstring). Expects the attributes
    :class:`~iterflow.policies.base.AdaptivePolicy` sets: ``rescale_seconds``,
    ``scale_in_seconds``, ``past_rescales``, ``past_scale_ins``, ``past_delays``,
    ``start_delays``, ``start_excess``."""

    rescale_seconds: float
    scale_in_seconds: float | None
    past_rescales: list[float]
    past_scale_ins: list[tuple[float, float]]  # (pause, cold) each: rescale_parts
    past_scale_in_kinds: dict[bool, list[tuple[float, float]]]
    cluster_scale_ins: list[tuple[float, float]]
    cluster_scale_in_kinds: dict[bool, list[tuple[float, float]]]
    past_delays: list[float]
    start_delays: list[float]
    start_excess: list[float]

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
        before keep its price high until its own decommissioned releases outnumber them. Every
        row's releases are kept too (``cluster_scale_ins``): the price of a program with none
        of its own, before the prior (:meth:`scale_in_cost`)."""
        rows = records(history)
        self.past_rescales = rescale_costs(rows, "up")
        own = rows if scale_ins is None else records(scale_ins)
        self.past_scale_in_kinds = {k: rescale_parts(own, "down", light=k) for k in (True, False)}
        self.past_scale_ins = self.past_scale_in_kinds[True] + self.past_scale_in_kinds[False]  # every release
        # any program's, by kind: the price before the prior
        self.cluster_scale_in_kinds = {k: rescale_parts(rows, "down", light=k) for k in (True, False)}
        self.cluster_scale_ins = self.cluster_scale_in_kinds[True] + self.cluster_scale_in_kinds[False]
        self.cluster_walls = _walls_by_size(rows)
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

    def scale_in_cost(self, history: History, light: bool | None = None) -> tuple[float | None, str]:
        """``(seconds, how)``: the median price of this run's scale-ins, else of earlier runs';
        ``(None, how)`` until one was measured: then the price is one superstep as this run's
        ran, at the new size (:meth:`scale_in_prices`) -- a release starts no executor, but the
        superstep after it reads the removed executors' cached share of the state, moved there
        (decommissioned) or recomputed (killed: 1.0 s after PageRank's 4 -> 3, 4.7 s after WCC's
        4 -> 1 in its tail); the prior is a cautious bound, decommissioned releases cost less
        (PageRank 4 -> 2: 0.3-0.5 s, `experiments/release_cost.py`).

        ``light``: the price of a release that is (True) or is not (False) a
        :func:`~iterflow.loop.rescales.light_release` -- one to a single executor, re-laid out
        lazily instead of rebuilding the cached inputs and state at the barrier (stop 49:
        PageRank 3 -> 1 1.80 s against 5.63 s, ``experiments/lazy_release.py``). Priced by the
        releases of its own kind; a light one with none measured by any release (a rebuilding
        one costs more: an upper bound); a rebuilding one with only light ones measured as one
        with none (they would under-price it) -- :func:`_by_kind`, for the program's own releases
        and the cluster's alike.

        With none of the program's own measured, the releases of other programs' runs on this
        cluster (:meth:`learn_rescales`' rows: its calibration job's) price it before the prior:
        a release's relayout re-builds the cached state whatever its size -- the calibration job's
        (6.4 MB) cost 3.2-5.3 s, WCC R-MAT 20's (31-59 MB) 3-7 s on the emulated cluster, where one
        superstep (the prior) read 0.8-1.3 s: stop47w20's plans, priced so, released where the
        release could not pay."""
        # the program's own (this run's, else earlier runs'), then -- by kind here too -- the
        # cluster's: the calibration job's releases to one executor cost 0.2-1.3 s, its rebuilding
        # ones 2.1-4.4 s (22 sessions' profiles); their median (2.7 s) priced a cold run's release
        # to one at three times its cost, and ``target`` released 3 -> 2 early where keeping 3 and
        # releasing to 1 later was cheaper (stop 57)
        price, how, _ = self._scale_in_priced(history, light)
        return price, how

    def _scale_in_priced(self, history: History,
                         light: bool | None) -> tuple[float | None, str, list[tuple[float, float]]]:
        """:meth:`scale_in_cost` with the measured releases behind it (``(pause, cold)`` each;
        ``[]`` where a prior prices it) -- what :meth:`transitions` splits into pause and cold."""
        found, how = self._scale_ins_found(history, light)
        if found:
            return float(np.median([pause + cold for pause, cold in found])), how, found
        if self.scale_in_seconds is not None:
            return self.scale_in_seconds, "prior", []
        return None, "prior: one superstep as this run's ran, at the new size", []

    def _scale_ins_found(self, history: History, light: bool | None) -> tuple[list[tuple[float, float]], str]:
        """The measured releases that price one of kind ``light`` (:meth:`scale_in_cost`), as
        ``(pause, cold)``, and where they came from; none: ``[]``."""
        here = {k: rescale_parts(history, "down", light=k) for k in (True, False)}
        mine = {k: here[k] or self.past_scale_in_kinds.get(k, []) for k in (True, False)}
        for kinds, every, said, others in (
                (mine, here[True] + here[False] or self.past_scale_ins, "measured over {n} {what}", False),
                (self.cluster_scale_in_kinds, self.cluster_scale_ins,
                 "learned from {n} {what} of other programs on this cluster", True)):
            found, what = _by_kind(kinds, every, light)
            if not found:
                continue
            how = said.format(n=len(found), what=what.format(s="s" if len(found) > 1 else ""))
            scale, why = self._program_scale(history) if others else (1.0, "")
            if scale < 1.0:
                found, how = [(p * scale, c * scale) for p, c in found], f"{how}, {why}"
            return found, how
        return [], ""

    def _program_scale(self, history: History) -> tuple[float, str]:
        """How much lighter this program's supersteps run than the other programs' whose releases
        price its first one: this run's median superstep at its size over theirs at that size,
        at most 1 (``(1.0, "")`` where either is unknown). Why: a release's pause copies the state
        and its cold superstep reads it back, both in proportion to the data a superstep moves;
        k-means' releases to one executor cost ~0.05 s (its centers live on the driver) where the
        calibration job's -- PageRank's 6 MB state -- cost 0.5-0.8 s, and priced at those,
        ``target`` kept k-means at 2 executors for 3-4 barriers more than its error pad asked
        (stop 79g); scaled, ``experiments/target_whatif.py`` over seventeen sessions (releases
        simulated at each program's own measured price) meets k-means' targets at <= 1.15x in
        152 of 170, not 149 (met 153, not 154; PageRank and WCC unchanged; stop 81). Never above
        1: WCC's heavy supersteps run 3x the calibration job's, and priced 3x its releases
        (1.0 s, measured 1.2 s) met 155 and 102 at <= 1.15x, not 153 and 104 -- its releases
        wait on the run's length, not on their price."""
        if not history:
            return 1.0, ""
        size = history[-1].executors
        theirs = self.cluster_walls.get(int(size))
        mine = [r.wall_seconds for r in history if r.executors == size and r.wall_seconds > 0]
        if not theirs or not mine:
            return 1.0, ""
        median = float(np.median(mine))
        scale = min(1.0, median / theirs)
        return scale, (f"scaled by {scale:.2f} (this run's median superstep at {size} over theirs, "
                       f"{median:.2f}s / {theirs:.2f}s)")

    def scale_in_prices(self, history: History, executors: Any, current: int) -> tuple[np.ndarray, str]:
        """The price of a scale-in from ``current`` to each of ``executors`` (:meth:`scale_in_cost`
        of its kind, light or rebuilding; the prior: the median superstep of this run so far, times
        ``current / e``). ``how``: of the first size's price."""
        E = np.asarray(executors, float).ravel()
        kinds = [light_release(current, int(e)) if e < current else None for e in E]
        priced = {kind: self.scale_in_cost(history, light=kind) for kind in dict.fromkeys(kinds or [None])}
        out = _release_seconds(priced, kinds, _median_wall(history), float(current), E)
        return out, priced[kinds[0] if kinds else None][1]

    def transitions(self, history: History, executors: Any) -> Transitions:
        """Every change from ``executors[p]`` to ``executors[r]`` a plan (:mod:`~iterflow.policies.
        plans`) may make, priced once from one read of the measured rescales:

        * ``prices[p, r]``: the seconds it adds -- a scale-out's :meth:`rescale_cost`, a scale-in's
          as :meth:`scale_in_prices` prices it (by its kind, light or rebuilding);
        * ``held[p, r]``: the executors that hold those seconds, as ``executor_seconds`` counts
          them -- a release's pause at the size it leaves, its cold supersteps at the size it
          goes to (the measured releases' median share of pause; none measured: all cold);
          every other change's at the new size. Why: plans that held a release's seconds at the
          new size priced stop69all's WCC 3 -> 1 at 1 x 0.9 s where it cost 3 x 0.65 s at the
          barrier and 1 x 1.15 s after it;
        * ``how``: where the prices came from."""
        up, up_how = self.rescale_cost(history)
        priced = {k: self._scale_in_priced(history, k) for k in (True, False)}
        before, after, light = _changes(executors)
        down = _release_seconds(priced, light, _median_wall(history), before, after)
        prices = np.where(after > before, up, np.where(after < before, down, 0.0))
        share = {k: _pause_share(found) for k, (_, _, found) in priced.items()}
        pause = np.where(after < before, np.where(light, share[True], share[False]), 0.0)
        held = after + pause * np.maximum(before - after, 0.0)
        said = {k: f"{v[0]:.1f}s" if v[0] is not None else "one superstep" for k, v in priced.items()}
        return Transitions(prices, held, f"a scale-out {up:.1f}s ({up_how}), a scale-in {said[True]} to one "
                                         f"executor / {said[False]} rebuilding ({priced[False][1]})")

    def transitions_from(self, history: History, current: int, executors: Any) -> Transitions:
        """:meth:`transitions` from ``current`` to each of ``executors``: one row, ``prices[r]``
        and ``held[r]`` (a policy choosing the next size, not planning a path)."""
        E = np.asarray(executors, float).ravel()
        t = self.transitions(history, np.append(E, float(current)))
        return Transitions(t.prices[-1, :-1], t.held[-1, :-1], t.how)

    def _unpaid_scale_in(self, ctx: Context, n: int) -> str | None:
        """Why a scale-in to ``n`` does not pay, or ``None`` when it does: the executor-seconds
        it saves over the forecast rest of the run must exceed its price as :meth:`transitions`
        holds it (its pause by the executors it leaves, its cold supersteps by the ``n`` left) --
        no release with a superstep left that cannot pay."""
        cur_t, new_t = ctx.predictor.total([ctx.current, n], ctx.forecast)
        price, held, how = self.transitions_from(ctx.history, ctx.current, [n])
        cost = float(price[0] * held[0])
        saved = float(ctx.current * cur_t - n * new_t)
        if saved > cost:
            return None
        return (f"scale-in to {n} would save ~{saved:.0f} executor-seconds over ~{ctx.forecast.remaining} "
                f"supersteps, not more than it costs (~{cost:.0f}: {float(price[0]):.1f}s held by "
                f"{float(held[0]):.1f} executors; {how}): keep {ctx.current}")


def _by_kind(kinds: dict[bool, list[tuple[float, float]]], every: list[tuple[float, float]],
             light: bool | None) -> tuple[list[tuple[float, float]], str]:
    """The releases that price one of kind ``light`` (:meth:`RescalePrices.scale_in_cost`), and
    what they are (``{s}``: the plural): those of its kind; a light one with none of its kind:
    ``every`` release (a rebuilding one costs more: an upper bound); a rebuilding one with none:
    none (light ones would under-price it); ``light=None``: ``every`` one."""
    if light is not None and kinds.get(light):
        return kinds[light], "scale-in{s} to one executor" if light else "rebuilding scale-in{s}"
    return ([] if light is False else every), "scale-in{s}"


def _walls_by_size(history: Any) -> dict[int, float]:
    """The median superstep wall of ``history``'s records at each executor count."""
    by: dict[int, list[float]] = {}
    for r in records(history):
        if r.wall_seconds > 0:
            by.setdefault(int(r.executors), []).append(r.wall_seconds)
    return {e: float(np.median(w)) for e, w in by.items()}


def _pause_share(found: list[tuple[float, float]]) -> float:
    """The median share of pause in measured releases' ``(pause, cold)`` (none: 0, all cold)."""
    return float(np.median([p / (p + c) if p + c > 0 else 0.0 for p, c in found])) if found else 0.0


def _median_wall(history: History) -> float:
    """The median superstep so far (0 before any): the prior's unit for a release."""
    walls = [r.wall_seconds for r in history if r.wall_seconds > 0]
    return float(np.median(walls)) if walls else 0.0


def _changes(executors: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every change between two of ``executors``: the size before (rows ``p``) and after (columns
    ``r``), and whether a release from one to the other is
    :func:`~iterflow.loop.rescales.light_release` (:meth:`RescalePrices.transitions`)."""
    E = np.asarray(executors, float).ravel()
    before, after = np.meshgrid(E, E, indexing="ij")  # (p, r)
    light = np.array([[light_release(int(a), int(b)) for b in E] for a in E], dtype=bool).reshape(before.shape)
    return before, after, light


def _release_seconds(priced: dict, kinds: Any, superstep: float, before: Any, after: Any) -> np.ndarray:
    """A release's seconds by its kind (``priced[kind]``: :meth:`RescalePrices.scale_in_cost`),
    where none was measured the prior: one superstep, ``superstep · before / after``."""
    kinds = np.asarray(kinds, dtype=object)
    before, after = np.broadcast_arrays(np.asarray(before, float), np.asarray(after, float))
    prior = superstep * before / np.maximum(after, 1.0)
    measured = np.array([priced[k][0] if priced.get(k, (None,))[0] is not None else np.nan
                         for k in kinds.ravel()], float).reshape(kinds.shape)
    return np.where(np.isnan(measured), prior, measured)
