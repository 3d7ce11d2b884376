"""A stage's tasks on other slots: their list schedule, their re-cut to another task count, and
what a task costs whatever its share of the work.

Why its own module: the resource model (:mod:`~iterflow.model.replay`), the cluster's task
slow-down (:mod:`~iterflow.model.contention`) and the simulator (:mod:`~iterflow.simulate.cluster`)
replay measured tasks by the same rules; each imports them from here.
"""
from __future__ import annotations

import heapq
from itertools import accumulate
from typing import Iterable, Sequence

import numpy as np
from scipy.optimize import nnls


def makespan(durations: Sequence[float], slots: int, ready: Sequence[float] | None = None) -> float:
    """List schedule of ``durations`` in order on ``slots`` identical slots. ``ready``: the time
    each slot becomes free (a simulated cluster's executors joining late, a stage starting
    after the one before); the result is then the time the last task ends, not a duration."""
    if ready is not None:
        free, end = sorted(float(r) for r in ready) or [0.0], 0.0
        for d in durations:  # a slot that gets no task does not count (it may join after the end)
            t = heapq.heappop(free) + float(d)
            heapq.heappush(free, t)
            end = max(end, t)
        return end if durations else float(free[0])
    slots = max(1, int(slots))
    if len(durations) <= slots:
        return float(max(durations, default=0.0))
    free = [0.0] * slots
    for d in durations:
        heapq.heappush(free, heapq.heappop(free) + float(d))
    return float(max(free))


def resplit(durations: Sequence[float], n: int, overhead: float) -> list[float]:
    """``durations`` (one stage's tasks) re-cut into ``n`` tasks doing the same work: each task
    pays the fixed ``overhead`` once (launch, deserialization, a shuffle block per reducer), the
    rest is the stage's work, split where the cumulative work of the measured tasks in index
    order says (a hot partition stays hot, halved or merged with its neighbours). Why: the
    partition count follows the cores (:mod:`iterflow.loop.reconfigure`), so a stage that ran 2
    tasks at 2 slots runs 4 at 4 -- replayed as measured, 2 tasks on 4 slots would read as no
    gain at all from more executors."""
    m = len(durations)
    if n == m or m == 0 or n < 1:
        return list(durations)
    # the measured tasks' cumulative work, read at n + 1 evenly spaced edges (linear between two
    # tasks' ends) -- in plain Python: a barrier re-cuts every stage of every profile it replays
    # at each size, and numpy's calls cost ~4x this on stages of a few tasks (the same floats:
    # the edges as np.linspace places them, np.interp's slope x offset + start)
    cum = [0.0, *accumulate(max(float(d) - overhead, 0.0) for d in durations)]
    step, out, prev = m / n, [], 0.0
    for j in range(1, n + 1):
        x = j * step if j < n else float(m)
        i = min(int(x), m - 1)
        edge = cum[m] if x >= m else (cum[i + 1] - cum[i]) * (x - i) + cum[i]
        out.append(edge - prev + overhead)
        prev = edge
    return out


def recut(stages: Sequence[Sequence[float]], slots: float, to: float, overhead: float) -> tuple[tuple[float, ...], ...]:
    """Every stage of a superstep measured at ``slots`` re-cut (:func:`resplit`) to its task
    count at ``to`` slots, the tasks a slot kept (one count rule for the model, the contention
    fit and the simulator). A stage's fixed cost a task is at most its shortest task: no task
    costs less than it."""
    if to == slots:
        return tuple(tuple(s) for s in stages)
    return tuple(tuple(resplit(s, max(1, round(len(s) * to / slots)), min(overhead, min(s, default=0.0))))
                 for s in stages)


def shortest_task(stages: Iterable[Sequence[Sequence[float]]]) -> float:
    """A task's fixed cost at its least: the shortest task of any of ``stages`` (what the
    re-cut takes where :func:`task_fixed_cost` cannot be fitted)."""
    return min((min(st) for s in stages for st in s if len(st)), default=0.0)


def task_fixed_cost(supersteps: Iterable[tuple[Sequence[Sequence[float]], float]], cap: float | None = None) -> float:
    """A task's fixed cost as the re-cut reads it, from ``(stages, work)`` of measured
    supersteps: ``task seconds = a·tasks + b·work`` fitted on them (least relative squares,
    both >= 0) where their work spans at least 2x, ``a``; else (flat work: the two cannot be
    told apart) :func:`shortest_task`. One rule for the model, the contention fit and the
    simulator.

    Why not the shortest task alone: a converging job's tail is all fixed cost, but not the
    shortest stage's. WCC's tail stages ran 3 tasks of 86-92 ms at 3 slots and one of 93 ms at 1;
    re-cut with the shortest task (6 ms) as the fixed cost, the 3 merged into one of 250 ms and
    the tail read ~2x slower at 1 executor than it ran (0.8-1.1 s against 0.45 s), so ``target``
    kept 3 executors through a tail 1 ran as fast (stop 53w20d). Each static size simulated from
    static-1 came within 15 % of its real runs for 71 % of 21 pairs over seven WCC sessions (14 %
    with the shortest task). The limit: from supersteps at one size, a cost each task pays and one
    split across the tasks (a scan of every label, WCC before its tail's lookup) read the same; on
    those sessions' tables the fit read 3-4 executors 20-160 % too slow (43 % within 15 %, 57 % with
    the shortest task). Supersteps at several sizes tell them apart (the task count changes).

    ``cap``: where the fit cannot be made, the shortest task at most this -- the cluster's own
    measure of a task's fixed cost (:meth:`~iterflow.model.contention.Contention.task_fixed`), for
    supersteps whose shortest task may be a whole stage's work (one task a stage at one slot)."""
    rows = [(stages, float(work)) for stages, work in supersteps]
    least = shortest_task(st for st, _ in rows)
    if cap is not None:
        least = min(least, cap)
    w = np.array([wk for _, wk in rows], float)
    if (w > 0).sum() < 3 or w.max() < 2 * w[w > 0].min():
        return least
    a = 0.0
    for _ in range(2):  # again without the stages shorter than the first fit's cost: theirs is less
        kept = [[s for s in st if len(s) and min(s) >= a] for st, _ in rows]
        n = np.array([sum(len(s) for s in st) for st in kept], float)
        y = np.array([sum(sum(s) for s in st) for st in kept], float)
        ok = (w > 0) & (y > 0) & (n > 0)
        if ok.sum() < 3:
            break
        (a, _), _ = nnls(np.column_stack([n[ok], w[ok]]) / y[ok, None], np.ones(int(ok.sum())))
    return float(a) if a > 0 else least  # no task costs less: a stage's shortest task caps it (recut)
