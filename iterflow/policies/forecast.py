"""The rest of a run, as far as the records tell: remaining supersteps and their work.

* Remaining supersteps: the run's horizon (:class:`~iterflow.loop.plan.RunPlan`, the one rule
  the progress line and the report use too).
* Work per future superstep: the last work, decayed geometrically when ``log(work)`` falls over
  the window (a shrinking active set), otherwise flat.
* A trend's count that the last :data:`CONFIRM` barriers read one more, two more, ... is
  ``confirmed``: the rules treat it as known (no horizon pad, a release at once).
* A trend's count not confirmed is at least the longest reading of the last ``window``
  barriers, counted down (:func:`_earlier`): a shrinking job's trend reads short right
  after its work collapses. WCC's read 2, 18, 29, 1, 3, 2, 3, 6, 27 left at its first barriers
  where 31, 30, 29, 28, ... were: the 29 was right, and the 1-6 after it released executors for
  a tail read as 1-6 supersteps that ran 24-28 more. That is the cautious count; the count
  ``expected`` beside it is the trend's own reading, at least as many again as done (the guess
  with no trend): WCC's heavy phase read 45 and 57 left (a geometric fit of its first deltas)
  where 30 and 29 were, and the cautious count held 52-56 left through barrier 9 while 28-24 were.
* A run that repeats an earlier one (the same program, input and cluster: ``repeat``, the earlier
  run's work per superstep) takes both from it where its own horizon is a guess or a trend:
  WCC's trend read 2, 18, 29, 1, 3, 2, 3, 6, 27 supersteps left at its first barriers, where
  the earlier run of the same graph knew 33.

Long horizons are summarised by at most ``samples`` points, each weighted by the supersteps it
stands for (the mean work of its chunk), so predicting a thousand supersteps costs no more than
predicting 64.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from iterflow.loop.plan import RunPlan, log_slope
from iterflow.loop.records import SuperstepRecord, split_runs

History = Sequence[SuperstepRecord]
# barriers whose trend counted down one by one to this one's reading: the count is taken as
# known (WCC's tail read 27, 22, 21, 20, ... left -- exact from the second reading on -- after
# 1, 3, 2, 3, 6 right after its collapse, where 28-24 were left)
CONFIRM = 2


def elapsed_seconds(history: History) -> float:
    """Wall plus barrier seconds of the supersteps so far."""
    return sum(r.wall_seconds + r.barrier_seconds for r in history)


def mean_barrier(history: History) -> float:
    vals = [r.barrier_seconds for r in history if r.decided is not None]
    return float(np.mean(vals)) if vals else 0.0


@dataclass(frozen=True)
class Forecast:
    remaining: int
    works: np.ndarray    # work of each sample of the remaining supersteps, in order
    weights: np.ndarray  # supersteps each sample stands for (sums to ``remaining``)
    how: str             # where ``remaining`` came from, for reasons
    estimated: bool = True  # ``remaining`` from a convergence trend or a guess, not a known count
    confirmed: bool = False  # a trend's count the last CONFIRM barriers counted down to, one by one
    expected: "Forecast | None" = None  # where ``remaining`` is the cautious count: the likely one
    # a repeat's own supersteps, each sample's (seconds, cores, work) as the earlier run measured
    # them (NaN seconds: none steady there), shape (3, samples): see :func:`measured`
    past: np.ndarray | None = None

    @property
    def next_work(self) -> float:
        return float(self.works[0])

    @property
    def likely(self) -> "Forecast":
        """The forecast with the expected count (itself where the count was not made cautious)."""
        return self.expected if self.expected is not None else self


def measured(run: History) -> np.ndarray:
    """``(seconds, cores, work)`` of each superstep of an earlier ``run`` (shape (3, len(run))),
    seconds NaN where the superstep is no steady reading: the first at a new size (a rescale's
    cold superstep, priced apart) or one without its work or cores.

    Why a repeat keeps them: the model predicts a superstep from its work, and a superstep's
    seconds do not follow its work alone -- WCC's checkpointing supersteps (every tenth) ran
    2.5-3x the tail's others at the same work (static-1: 1.07-1.22 s against ~0.42 s), and at 480
    simulated cores, its labels' state ×480, 5-7 s against ~1 s at 12 executors: ``fastest``'s
    forecast read the tail at 3 executors 66 s where it ran 156 s, and released into it. The
    earlier run's superstep itself -- its own profiles replayed, or its measured over predicted
    seconds -- carries that to any size
    (:meth:`~iterflow.policies.predictor.Predictor.forecast_seconds`)."""
    out = np.full((3, len(run)), np.nan)
    prev = None
    for j, r in enumerate(run):
        cores, work = r.ran.cores or None, r.ran.work
        if cores and work and math.isfinite(work) and work > 0 and r.wall_seconds > 0:
            out[1, j], out[2, j] = cores, work
            if prev is None or prev.executors == r.executors:
                out[0, j] = r.wall_seconds
        prev = r
    return out


def forecast(history: History, plan: RunPlan, samples: int = 64, repeat: Sequence[float] | None = None,
             past: np.ndarray | None = None) -> Forecast:
    """The remaining supersteps after the last of ``history`` and their forecast work
    (``repeat``: the work per superstep of an earlier run this one repeats; ``past``: its
    :func:`measured` supersteps)."""
    h = plan.horizon(history)
    n, how = h.planning, h.how
    w_last = history[-1].ran.work
    w_last = w_last if w_last is not None and math.isfinite(w_last) and w_last > 0 else 1.0
    i = history[-1].superstep
    if repeat is not None and h.estimated and len(repeat) > i:
        works = np.asarray(repeat[i:], float)[:h.bound]  # what the earlier run did next
        ref = float(repeat[i - 1]) if i >= 1 else 0.0
        works = works * (w_last / ref) if ref > 0 else works  # at this run's scale
        how = (f"~{works.size} supersteps left as the earlier run of this input ran ({len(repeat)} "
               f"supersteps; the trend: {how.split(': ', 1)[-1]})")
        return _sampled(works, samples, how, True, past=None if past is None else past[:, i:])
    slope = log_slope([(float(r.superstep), r.ran.work) for r in history[-plan.window:]])
    active = _active_set(history, plan.window)
    if active is not None:
        # the next superstep's work is known at this barrier; the rest falls as the deltas do
        slope = log_slope([(float(r.superstep), r.ran.delta) for r in history[-plan.window:]])
        slope = slope if slope is not None and slope < 0 else 0.0
        w_last = active * float(history[-1].ran.delta) * math.exp(-slope)  # _works' first is w_last·e^slope
    if n == 0:
        return Forecast(0, np.array([w_last]), np.zeros(1), how, h.estimated)
    trend = h.estimated and h.left is not None
    earlier = _earlier(history, plan, max(plan.window, CONFIRM)) if trend else []
    confirmed = trend and _counted_down(history, earlier, n)
    expected = None
    if trend and not confirmed:
        longest = max((x for x in earlier[:plan.window] if x is not None), default=0)
        likely = n
        if longest > n:
            likely = min(max(n, i), longest)
            n = longest if h.bound is None else min(longest, h.bound)
            how = (f"~{n} supersteps left: the longest reading of the last {plan.window} barriers, counted "
                   f"down (now: {how.split('left: ', 1)[-1]})")
        if likely < n:
            expected = _sampled(_works(likely, w_last, slope), samples, f"~{likely} expected", True)
            how += f"; ~{likely} expected (the trend's reading, at least as many again as done)"
    works = _works(n, w_last, slope)
    if active is not None:
        how += f"; work {works[0]:.4g} next (the last delta's {active:g}x)" + \
            (f", then x{math.exp(slope):.2f}/superstep as the deltas" if slope < -1e-6 else "")
    elif slope is not None and slope < -1e-6:
        how += f"; work x{math.exp(slope):.2f}/superstep from {w_last:.4g}"
    if confirmed:
        how += f"; counted down to at the last {CONFIRM} barriers: taken as known"
    return replace(_sampled(works, samples, how, h.estimated, confirmed), expected=expected)


def _active_set(history: History, window: int) -> float | None:
    """``c`` where every superstep of the last ``window`` did ``c`` times the work of the delta
    before it (within 1 %), else ``None``: a program whose work is its active set -- WCC's
    superstep joins the labels the last one changed. Its next superstep's work is then known at
    the barrier, and the rest falls as the deltas do. Forecast flat from the last work, WCC's
    heavy phase read 57 supersteps of 3.4e5 labels each at barrier 4 (~250 s at any size) where
    the next had 1.1e5 and the 28 after it 4e3 and fewer, and ``target``, out of reach by
    that reading, went 3 -> 1 as "the earliest finish" (stop64all)."""
    rows = history[-(window + 1):]
    ratios = [r.ran.work / prev.ran.delta for prev, r in zip(rows, rows[1:])
              if r.ran.work is not None and prev.ran.delta is not None and r.ran.work > 0 and prev.ran.delta > 0]
    if len(ratios) < 3 or len(ratios) < len(rows) - 1 or history[-1].ran.delta is None or not history[-1].ran.delta > 0:
        return None
    c = float(np.median(ratios))
    return c if all(abs(x / c - 1) <= 0.01 for x in ratios) else None


def _works(n: int, w_last: float, slope: float | None) -> np.ndarray:
    """The work of the next ``n`` supersteps: decayed by the window's ``slope`` of log work
    where it falls (a shrinking active set), else flat."""
    if slope is not None and slope < -1e-6:
        return w_last * np.exp(slope * np.arange(1, n + 1, dtype=float))
    return np.full(n, w_last)


def _earlier(history: History, plan: RunPlan, back: int) -> list[int | None]:
    """The counts of supersteps left the trend read at each of the last ``back`` barriers before
    this one, latest first, minus the supersteps run since (``None``: no count read there)."""
    last = history[-1].superstep
    recent = history[-(plan.window + back):]  # a full window of deltas behind each reading
    deltas = [(r.superstep, r.ran.delta) for r in recent]
    out: list[int | None] = []
    for k in range(1, min(back, len(recent) - 1) + 1):
        left = plan.remaining(recent[-1 - k].superstep, deltas[:-k]).left
        out.append(None if left is None else left - (last - recent[-1 - k].superstep))
    return out


def _counted_down(history: History, earlier: list[int | None], n: int) -> bool:
    """Whether the trend read ``n`` plus the supersteps run since, at each of the last
    :data:`CONFIRM` barriers (a countdown: WCC's labels on a path, one a superstep), not a
    reading that jumps or a guess. Any trend that holds counts down (the readings share most of
    their window); the evidence it is then right is WCC's straight line."""
    return len(history) > CONFIRM and len(earlier) >= CONFIRM and all(x == n for x in earlier[:CONFIRM])


def repeated(works: np.ndarray, past: np.ndarray | None, how: str) -> Forecast:
    """A whole run planned as a repeat (a policy's start): ``works`` one sample a superstep, with
    the repeated run's :func:`measured` supersteps where it has them (none past its length)."""
    return _sampled(works, max(works.size, 1), how, True, past=past)


def _sampled(works: np.ndarray, samples: int, how: str, estimated: bool, confirmed: bool = False,
             past: np.ndarray | None = None) -> Forecast:
    """``works`` summarised by at most ``samples`` chunk means, each weighted by its length;
    ``past`` (:func:`measured`, one column a superstep) the same: a chunk's mean seconds and work
    over its steady supersteps, at its cores (NaN where they changed within it)."""
    n = works.size
    chunks = np.array_split(np.arange(n), min(n, samples))
    sampled = None
    if past is not None:
        past = np.hstack([past[:, :n], np.full((3, max(n - past.shape[1], 0)), np.nan)])  # none past its end
        sampled = np.full((3, len(chunks)), np.nan)
        for k, c in enumerate(chunks):
            sec, cores, work = past[:, c]
            ok = np.isfinite(sec)
            if ok.any() and np.all(cores[ok] == cores[ok][0]):
                sampled[:, k] = sec[ok].mean(), cores[ok][0], work[ok].mean()
    return Forecast(n, np.array([works[c].mean() for c in chunks]),
                    np.array([float(c.size) for c in chunks]), how, estimated, confirmed, past=sampled)


def last_run(past: History) -> list[SuperstepRecord]:
    """The records of the last run in ``past`` (earlier runs' records, concatenated oldest first,
    :func:`~iterflow.loop.records.split_runs`)."""
    runs = split_runs(past)
    return runs[-1] if runs else []


def run_at(past: History, executors: int) -> list[SuperstepRecord]:
    """The newest run in ``past`` that ran every superstep at ``executors`` (a static run of
    that size, or an adaptive one that never rescaled); empty where none did."""
    return next((run for run in reversed(split_runs(past)) if all(r.executors == executors for r in run)), [])
