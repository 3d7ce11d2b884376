"""How many supersteps a fresh set of executors runs above its steady state, learned per cluster.

Why: the model must learn a size's *steady* superstep, and the first supersteps of an epoch
(the run's start, or the executor set after a rescale) are not one. On 0.45-core nodes with the
JVM's default JIT the first PageRank supersteps at 1 executor ran 7.1 and 6.5 s where the
steady state is 2.1 s; fed to the model they made 1 executor look 3x slower than it is, and
``target`` paid a 25 s scale-out to "save" time it would not have lost (the issue-13 scenario).
One superstep of warm-up (the rule before this) is right where the JIT is quick (C1, whole
cores); here it takes three. Hence the length is learned from earlier runs' records on the
cluster, and the first run, with nothing to learn from, keeps the one-superstep rule.

How: every *epoch* (consecutive supersteps of one run at one executor set,
:func:`~iterflow.loop.records.epoch_ages`) long enough to have a steady second half and of
constant work (a converging job's supersteps fall for another reason) gives, for each age in
its first half, wall / steady (the relative median of the second half); the warm-up is the ages
before the first whose median ratio over the epochs is within ``tol`` of 1.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from iterflow.loop.records import SuperstepRecord, epoch_ages
from iterflow.model.fits import relative_median


def epochs(history: Sequence[SuperstepRecord]) -> list[list[SuperstepRecord]]:
    """``history`` split into its epochs (see the module docstring), in order."""
    out: list[list[SuperstepRecord]] = []
    for rec, age in zip(history, epoch_ages(history)):
        if age == 1:
            out.append([])
        out[-1].append(rec)
    return out


def _ratios(history: Sequence[SuperstepRecord], shortest: int, starts: bool = False) -> dict[int, list[float]]:
    """Age -> wall / steady over the epochs of ``history`` long enough (``shortest``) and of
    constant work; ``starts``: only the epochs that start a run (superstep 1)."""
    ratios: dict[int, list[float]] = defaultdict(list)
    for ep in epochs(history):
        work = np.array([r.ran.work for r in ep], float)
        if len(ep) < shortest or not np.all(work > 0) or np.max(np.abs(work / np.median(work) - 1)) > 0.1:
            continue
        if starts and ep[0].superstep != 1:
            continue
        walls = np.array([r.wall_seconds for r in ep], float)
        half = len(ep) // 2
        steady = relative_median(walls[half:])
        for age, wall in enumerate(walls[:half], start=1):
            ratios[age].append(wall / steady)
    return ratios


def warmup_supersteps(history: Sequence[SuperstepRecord], *, tol: float = 0.25, shortest: int = 6,
                      most: int = 4) -> int:
    """Supersteps at the start of an epoch that run more than ``tol`` above its steady state, as
    the epochs of ``history`` show (at least 1, at most ``most``; 1 when no epoch has
    ``shortest`` supersteps of constant work)."""
    ratios = _ratios(history, shortest)
    warm = 1
    for age in sorted(ratios):
        if float(np.median(ratios[age])) <= 1 + tol:
            break
        warm = age
    return max(1, min(warm, most))


def start_excess(history: Sequence[SuperstepRecord], *, tol: float = 0.25, shortest: int = 6,
                 most: int = 4) -> list[float]:
    """How many times its steady time each of a run's first supersteps took on this cluster
    (the median over the runs of ``history``, the cluster's calibration included), for the ages
    up to the first within ``tol`` of steady: ``[2.7, 1.8]`` says superstep 1 of a run ran 2.7x
    and superstep 2 1.8x the run's steady superstep. Why: before the model is fitted -- at
    barrier 1, where superstep 1 fed nothing -- a policy reads the next supersteps off the
    last one, and a cold superstep 1 taken for a steady one makes the run look 2-3x longer than
    it is (the issue-13 scenario scaled out on it and lost 15 s)."""
    ratios = _ratios(history, shortest, starts=True)
    out: list[float] = []
    for age in sorted(ratios)[:most]:
        r = float(np.median(ratios[age]))
        if r <= 1 + tol:
            break
        out.append(r)
    return out
