"""What each rescale in a run's records cost, read off its superstep records: a rescale's pause
at the barrier plus the cold supersteps after it (:func:`rescale_costs`), and how long a
scale-out's executors took to register (:func:`registration_delays`) -- the figures every
policy prices rescales by (:mod:`iterflow.policies.prices`) and the simulator replays.
"""
from __future__ import annotations

from typing import Sequence

from iterflow.loop.records import SuperstepRecord


def _repeats(previous: SuperstepRecord, record: SuperstepRecord) -> bool:
    """``record`` asks again for the executors ``previous`` asked for and are still coming, or
    for more: the same scale-out, grown (``target`` asked 1 -> 3, then 1 -> 4 while the 3 were
    coming; the raise closed the first account at its 0.01 s pause, and the next barriers priced
    a rescale at 0.0 s "measured" while the executors took 21 s to come and 17 s cold)."""
    a, b = previous.actuated, record.actuated
    return (a is not None and b is not None and bool(a.executors_pending)
            and a.executors_requested is not None and b.executors_requested is not None
            and b.executors_requested >= a.executors_requested)


def cold_run(history: Sequence[SuperstepRecord], k: int) -> list[SuperstepRecord]:
    """The supersteps right after ``history[k]`` that ran cold one after the other at its size
    (each with its ``cold_seconds``), up to one that rescaled: after a release's first
    superstep, the rest of its transient (:func:`~iterflow.model.live.settling`)."""
    out: list[SuperstepRecord] = []
    for prev, r in zip(history[k:], history[k + 1:]):
        if r.superstep != prev.superstep + 1 or r.executors != prev.executors or r.predicted.cold_seconds is None:
            break
        out.append(r)
        if r.decided is not None and r.decided.decision in ("up", "down"):
            break
    return out


def light_release(before: int, after: int | None) -> bool:
    """Whether a release from ``before`` to ``after`` executors is re-laid out lazily: to one
    executor (:meth:`~iterflow.loop.reconfigure.Reconfigurer._relayout`: the inputs stay views
    of their cached blocks, which decommissioning hands to the one left, and the state is read
    from the release's copy by the next superstep). Every other release rebuilds its cached
    blocks at the barrier -- by index coalescing where the count divides (stop 46), else by a
    shuffle (1.2x that on WCC R-MAT 20) -- and is priced apart: measured side by side
    (``experiments/lazy_release.py``), a light release cost PageRank 3 -> 1 1.80 s against 5.63 s
    rebuilt, WCC 3 -> 1 3.54 s against 4.86 s. Unknown ``after``: not light (priced as the
    costlier kind)."""
    return after is not None and after == 1 < before


def rescale_costs(history: Sequence[SuperstepRecord], direction: str | None = None,
                  light: bool | None = None) -> list[float]:
    """What each rescale in ``history`` cost in wall seconds: its pause at the barrier plus
    the cold excess of the superstep after it (``cold_seconds``) -- for a scale-out that did
    not wait, of the supersteps up to the first the new executors worked in, and the relayout
    once they came; for a scale-in, of every superstep of its transient (the cold ones after
    it); ``direction`` ``"down"``: only the scale-ins the policy decided; ``"up"``: every other
    (a rescale whose direction was not recorded is priced as the costlier kind). ``light``:
    only the scale-ins that are (True) or are not (False) :func:`light_release`."""
    return [pause + cold for pause, cold in rescale_parts(history, direction, light)]


def rescale_parts(history: Sequence[SuperstepRecord], direction: str | None = None,
                  light: bool | None = None) -> list[tuple[float, float]]:
    """:func:`rescale_costs` as ``(pause, cold)``: the seconds spent at barriers (held by the
    executors there before a release left) and the cold supersteps' excess (run by the size
    after it). Why apart: ``executor_seconds`` counts a release's pause at the size it leaves,
    its cold superstep at the size it goes to."""
    out = []
    for k, r in enumerate(history):
        act = r.actuated
        pause = act.pause_seconds if act is not None else None
        if pause is None or act.executors_arrived or act.laying_out:  # its scale-out's account
            continue
        if k > 0 and _repeats(history[k - 1], r):  # the same scale-out asked again: not a new one
            continue
        decision = r.decided.decision if r.decided is not None else None
        if (direction == "down" and decision != "down") or (direction == "up" and decision == "down"):
            continue
        prev, coming, cold = r, bool(act.executors_pending), 0.0
        released = act.executors_active is not None and act.executors_active < r.executors
        if light is not None and decision == "down" and light_release(r.executors, act.executors_active) != light:
            continue
        for j in range(k + 1, len(history)):
            nxt = history[j]
            if nxt.superstep != prev.superstep + 1:
                break
            cold += nxt.predicted.cold_seconds or 0.0
            a = nxt.actuated
            if a is None and nxt is history[-1]:  # the barrier deciding now: its executors may still come
                break
            rescaled = nxt.decided is not None and nxt.decided.decision in ("up", "down") and not _repeats(prev, nxt)
            # still coming, just arrived (their first superstep is the next), or their layout is
            # being built or was just adopted: the account is open
            coming = (a is not None and not rescaled
                      and (bool(a.executors_pending or a.executors_arrived) or a.laying_out))
            if not coming:
                if released and not rescaled:  # the release's transient goes on
                    cold += sum(x.predicted.cold_seconds for x in cold_run(history, j))
                break
            pause += a.pause_seconds or 0.0
            prev = nxt
        if not coming:  # a scale-out whose executors are still coming has no price yet
            out.append((pause, cold))
    return out


def registration_delays(history: Sequence[SuperstepRecord]) -> list[float]:
    """Seconds each non-waiting scale-out in ``history`` took from its request to the barrier
    that saw its executors registered: the supersteps (and barriers) that ran meanwhile at the
    old size. A policy that ignores it expects executors that arrive after the run ended."""
    out = []
    for k, r in enumerate(history):
        act = r.actuated
        if act is None or not act.executors_pending or (k > 0 and _repeats(history[k - 1], r)):
            continue
        waited, prev = 0.0, r
        for nxt in history[k + 1:]:
            if nxt.superstep != prev.superstep + 1:
                break
            waited += nxt.wall_seconds + nxt.barrier_seconds
            a = nxt.actuated
            # seen registered at this barrier (the simulator: counted in this superstep's size)
            if a is not None and (a.executors_arrived or (not a.executors_pending and nxt.executors > r.executors)):
                out.append(waited)
                break
            if a is None or not a.executors_pending or not _repeats(prev, nxt):
                break  # withdrawn, refused or the run ended: no arrival to time
            prev = nxt
    return out
