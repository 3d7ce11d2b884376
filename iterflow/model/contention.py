"""How much slower this cluster runs each task as a job scales out, learned from earlier runs.

Why: task replay (:mod:`iterflow.model.replay`) assumes a task takes as long on ``m`` slots as
it did on the slots it was measured on. On dedicated nodes that nearly holds; where executors
share hardware (one box emulating a cluster, the driver on the same cores, a node's disk or
network) it does not: on the emulated cluster a PageRank task took 31 ms at 1 executor and
66 ms at 4 while the supersteps hardly shortened, so replay alone predicted 25-60 % too fast.
That slow-down is a property of the cluster, not of the job, so it is learned from earlier
runs of *any* program on the same cluster and applied to a job only ever seen at one size.
Two terms, since both happen: a shared CPU stretches every task in proportion, remote shuffle
reads and a busier scheduler add a fixed cost to each task. Measured at each size ``m`` the
cluster ran, across the jobs seen there (each job's task quantiles at ``m`` against the same
quantiles at its smallest size ``m0``, :func:`quantile_pairs`):

    task at m = a(m) x task at m0 + b(m)

-- ``a`` alone when the tasks paired are all of one length (then the terms cannot be told apart;
one job whose stages run short and long tasks tells them, as the calibration job does);
between measured sizes ``a`` and ``b`` are interpolated in log scale-out; beyond the largest
measured size ``M`` they grow by the power law fitted over every pair, ``a(M)·(m / M) ** beta``
and ``b(M) + overhead x (m − M)``; with fewer than two sizes measured it is that power law
alone, ``task x (to / from) ** beta + overhead x (to − from)`` (never below a tenth of the
measured task). Why per size and not the power law alone: the
slow-down is rarely a power law. On the emulated cluster (four 0.5-core workers on two cores)
tasks slow by 6-9 % at 2 slots, 18 % at 3 and 50 % at 4 (the box full) for PageRank and WCC alike
(stop 28's static runs); per-size terms learned from PageRank's static runs predict WCC's
steady supersteps from any size at any other within 4 % (WCC's predict PageRank's within 7 %),
where the power law fitted to the same runs read WCC's 3 -> 1 21 % and 2 -> 1 14 % too fast
(``pareto_stop28_decom``).
With no job at two sizes it is plain replay. Matched to one job's supersteps, the terms carry
that job's own growth of CPU with the task count; :func:`~iterflow.model.contention_match.with_cpu_share`
meets them half way by the executors' share of a core (stop 60).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from iterflow.loop.records import SuperstepRecord, model_rows

BETA_BOUNDS = (0.0, 1.5)  # sharing never makes a task faster; beyond 1.5 a fit says more about noise
# sizes whose measured superstep is within this of the fastest one's count as fast as it
# (:meth:`Contention.fastest`): the calibration holds each size for 6-7 steady supersteps, whose
# spread at one size (10-30 % on the emulated cluster) leaves their medians a few % apart at best
WALL_TIE = 0.05


class Fastest(NamedTuple):
    """What :meth:`Contention.fastest` found: an index in the slots asked about, and why."""

    index: int
    why: str


@dataclass(frozen=True)
class Contention:
    """Task slow-down with scale-out (see the module docstring)."""

    beta: float = 0.0
    overhead: float = 0.0  # seconds added to each task per slot added
    pairs: int = 0
    jobs: int = 0
    how: str = "none learned (no earlier job at two sizes): tasks taken to run as measured at any size"
    sizes: tuple[tuple[float, float, float], ...] = ()  # (slots, a, b) measured, the base (m0, 1, 0) first
    # (slots, median steady superstep seconds) of one job run at each size: the cluster's
    # calibration job (:meth:`~iterflow.cluster.profile.ClusterProfile.steady_walls`)
    walls: tuple[tuple[float, float], ...] = ()
    # (slots, a task's fixed seconds) the calibration job measured at each size it ran
    # (:meth:`~iterflow.cluster.profile.ClusterProfile.matched`): what a job seen at one size only
    # cannot measure of its own (:meth:`task_fixed`)
    fixed: tuple[tuple[float, float], ...] = ()

    def task_fixed(self, slots: float) -> float | None:
        """A task's fixed seconds at ``slots`` as the calibration measured it (at the nearest size
        it ran, in log slots), ``None`` where it measured none.

        Why the replay needs it (:attr:`~iterflow.model.replay.ReplayModel.task_overhead`): a job
        whose supersteps all ran at one size, with work that does not span 2x, cannot tell a
        task's fixed cost from its share of the work, and the re-cut then takes its shortest
        task for the fixed cost. At one executor each stage is one task, so that is a whole
        stage: WCC's heavy supersteps (stages of 0.6-2.8 s) read a fixed cost of 0.57-1.27 s a
        task, every task of a re-cut paid it, and 4 executors read 1.5-3.3x *slower* than 1
        (5.1 s against 1.55 s measured, stop75full): no policy saw a gain in more executors there."""
        if not self.fixed:
            return None
        at = math.log(max(float(slots), 1e-9))
        return min(self.fixed, key=lambda f: abs(math.log(f[0]) - at))[1]

    @property
    def none(self) -> bool:
        """No task slow-down learned (``walls`` aside: they only say which size is fastest)."""
        return not self.beta and not self.overhead and len(self.sizes) < 2

    def factor(self, from_slots: float, to_slots: float) -> float:
        """The power law's proportional part alone."""
        if not self.beta or not from_slots > 0 or not to_slots > 0:
            return 1.0
        return float((to_slots / from_slots) ** self.beta)

    def terms(self, slots: float) -> tuple[float, float]:
        """``(a, b)`` at ``slots`` (two sizes measured or more): a task at the base size ``m0``
        takes ``a·d + b`` there. Kept per ``slots``: a barrier replays every profile at every
        candidate size, two sizes' terms a stage."""
        if slots not in self._terms:
            m, a, b = (np.array(c, float) for c in zip(*self.sizes))
            if slots >= m[-1]:  # beyond what was measured: the power law from the largest measured size
                self._terms[slots] = a[-1] * self.factor(m[-1], slots), b[-1] + self.overhead * (slots - m[-1])
            else:
                x = math.log(max(slots, 1e-9))
                self._terms[slots] = (float(np.exp(np.interp(x, np.log(m), np.log(a)))),
                                      float(np.interp(x, np.log(m), b)))
        return self._terms[slots]

    @cached_property
    def _terms(self) -> dict[float, tuple[float, float]]:
        return {}

    def task(self, seconds: Any, from_slots: float, to_slots: float) -> Any:
        """Task duration(s) measured at ``from_slots`` as they would run at ``to_slots``."""
        if self.none or from_slots == to_slots:
            return seconds
        d = np.asarray(seconds, float)
        if len(self.sizes) < 2:  # the power law alone, between the two sizes themselves
            out = np.maximum(d * self.factor(from_slots, to_slots) + self.overhead * (to_slots - from_slots), 0.1 * d)
            return out.tolist() if out.ndim else float(out)
        (a0, b0), (a1, b1) = self.terms(from_slots), self.terms(to_slots)
        out = np.maximum((np.maximum(d - b0, 0.0) / a0) * a1 + b1, 0.1 * d)
        return out.tolist() if out.ndim else float(out)

    def fastest(self, slots: Sequence[float], tie: float = WALL_TIE) -> "Fastest":
        """The fewest of ``slots`` that run a job about as fast as any (``index`` in ``slots``,
        ``why``): a size past it finishes no sooner and holds more executors.

        Where one job's supersteps were measured at the largest of ``slots`` and at others
        (``walls``, the cluster's calibration job): the fewest *measured* slots whose superstep
        is within :data:`WALL_TIE` of the fastest measured (sizes it did not run are not
        candidates). Why measured supersteps and not task throughput alone: what a superstep
        costs beyond its tasks (the driver's share of the cores, scheduling) moves with the
        size too. On the emulated cluster the calibration job's steady supersteps ran 0.94-1.01x
        as long at 3 executors as at 4 in five sessions of eight (stop 29-33w; 1.14x, 1.18x and
        1.22x in the other three: 4), the task throughput picking the same size in seven of them
        (in stop 33 4, at 1.01x); the sessions' own jobs ran 1.00-1.09x (PageRank), 0.97-1.08x (WCC)
        and 0.79-1.00x (k-means) as long at 3 as at 4 (stop 29-33w).
        The walls are one job's, at its partition count (8 tasks: 3 waves at 3 slots, 2 at 4):
        a program with other waves may rank the sizes otherwise.

        Else the fewest slots with the most task throughput, ``m / task(m)`` (a task as it runs
        at ``m`` slots; the calibration: 1.00x / 1.02x / 1.11x / 1.62x a task at 1-4 slots,
        throughput 1 / 1.96 / 2.70 / 2.47: 3). Without either, the largest."""
        m = np.asarray(slots, float)
        wall = dict(self.walls)
        seen = [i for i, x in enumerate(m) if float(x) in wall]
        if len(seen) > 1 and float(m.max()) in wall:
            best = min(wall[float(m[i])] for i in seen)
            k = min((i for i in seen if wall[float(m[i])] <= best * (1 + tie)), key=lambda i: m[i])
            return Fastest(k, f"the calibration job's steady superstep took {wall[float(m[k])]:.2f}s at {m[k]:g} slots and "
                       f"{wall[float(m.max())]:.2f}s at {m.max():g}: no size above runs it more than "
                       f"{tie:.0%} faster")
        if self.none:
            return Fastest(int(np.argmax(m)), "no slow-down known: the largest")
        base = float(self.sizes[0][0]) if self.sizes else float(m.min())
        at = np.asarray([self.task(1.0, base, float(x)) for x in m], float)
        rate = m / np.maximum(at, 1e-12)
        k = int(np.flatnonzero(rate >= rate.max() * (1 - 1e-9))[0])
        return Fastest(k, f"a task takes {at[k]:.2f}x as long at {m[k]:g} slots as at {base:g} and {at[-1]:.2f}x at "
                   f"{m[-1]:g}: no size above runs tasks faster")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def task_seconds(history: Sequence[SuperstepRecord], warmup: int = 1) -> dict[float, list[float]]:
    """``slots -> [task seconds]``: every task of the supersteps that feed the model (steady
    state: past the ``warmup`` of each executor set, not a cold one)."""
    return row_task_seconds(model_rows(history, warmup))


def row_task_seconds(rows: Iterable[Sequence[Any]]) -> dict[float, list[float]]:
    """:func:`task_seconds` of model rows ``(slots, work, seconds, stage_tasks)``. Every task,
    not a mean per superstep: one job's short and long tasks at two sizes are what tell the
    fixed cost per task from the stretch (:func:`per_size`)."""
    from iterflow.model.profiles import Profile
    from iterflow.model.tasks import recut, task_fixed_cost

    profs = [p for p in (Profile.parse(*row) for row in rows) if p is not None]
    base = min(profs, key=lambda p: p.slots, default=None)
    least = task_fixed_cost((p.stages, p.work) for p in profs)
    out: dict[float, list[float]] = {}
    for prof in profs:  # where the count followed the cores, tasks cut as at the base size, then compared
        stages = recut(prof.stages, prof.slots, base.slots, least) if _follows(prof, base) else prof.stages
        out.setdefault(prof.slots, []).extend(float(t) for st in stages for t in st)
    return out


def _follows(prof: Any, base: Any) -> bool:
    """Whether ``prof``'s stages have as many tasks a slot as ``base``'s (the partition count
    followed the cores, :mod:`iterflow.loop.reconfigure`): its tasks then hold less work each
    than the base size's, and a task slow-down read from them unmerged would be a speed-up."""
    if base is None or prof.slots == base.slots or not prof.stages or not base.stages:
        return False
    n, n0 = len(prof.stages[0]), len(base.stages[0])
    return n != n0 and n * base.slots == n0 * prof.slots


def learn(jobs: Iterable[Sequence[SuperstepRecord]], bounds: tuple[float, float] = BETA_BOUNDS) -> Contention:
    """The cluster's contention from earlier runs, one record sequence per job (a program on one
    input: its runs at different sizes concatenated, superstep numbers restarting per run)."""
    return fit([task_seconds(history) for history in jobs], bounds)


def fit(jobs: Iterable[dict[float, list[float]]], bounds: tuple[float, float] = BETA_BOUNDS,
        walls: dict[float, list[float]] | None = None) -> Contention:
    """:func:`learn` from ``slots -> [task seconds]`` per job (every task, from records or the
    simulator's recorded steps where a table kept only quantile sketches; per-superstep means in
    profiles written before stop 37); ``walls``: ``slots ->
    [steady superstep seconds]`` of one job at several sizes (the cluster's calibration job),
    which :meth:`Contention.fastest` goes by."""
    found = _fit(jobs, bounds)
    kept = tuple(sorted((float(k), float(np.median(v))) for k, v in (walls or {}).items() if v))
    return replace(found, walls=kept) if kept else found


def _fit(jobs: Iterable[dict[float, list[float]]], bounds: tuple[float, float]) -> Contention:
    # (base slots, base task, slots, task): per job and size above its smallest, its tasks'
    # quantiles against the base size's at the same levels (:func:`quantile_pairs`)
    points: list[tuple[float, float, float, float]] = []
    used = sizes = 0
    for seen in jobs:
        found = quantile_pairs(seen)
        if found:
            used += 1
            sizes += len({p[2] for p in found})
            points += found
    if not points:
        return Contention()
    b0, d0, m, d = (np.array(c, float) for c in zip(*points))
    # two sizes, or short and long tasks (per_size's test): one size pair of one task length leaves the
    # split between the two terms to noise
    told = len(set(m.tolist())) > 1 or d0.max() >= 2 * d0.min()
    best = (math.inf, 0.0, 0.0)
    for beta in np.round(np.arange(bounds[0], bounds[1] + 1e-9, 0.01), 2):
        scaled, extra = d0 * (m / b0) ** beta, m - b0
        # overhead minimising the squared relative error (d - scaled - o*extra) / d, kept >= 0;
        # one size and one task length cannot tell the two terms apart: the proportional one alone
        o = max(0.0, float(np.sum((d - scaled) * extra / d ** 2) / np.sum(extra ** 2 / d ** 2))) \
            if told else 0.0
        pred = np.maximum(scaled + o * extra, 0.1 * d0)
        err = float(np.sum(np.log(pred / d) ** 2))
        if err < best[0] - 1e-12:
            best = (err, float(beta), o)
    _, beta, overhead = best
    return Contention(beta, overhead, sizes, used,
                      f"learned over {sizes} size pair{'s' if sizes != 1 else ''} of {used} "
                      f"earlier job{'s' if used != 1 else ''} on this cluster", per_size(points))


#: the levels at which one job's tasks at two sizes are paired (:func:`quantile_pairs`), from
#: at least MIN_TASKS tasks at both (else their medians alone)
QUANTILES = tuple(np.round(np.arange(0.1, 0.91, 0.1), 2))
MIN_TASKS = 10


def quantile_pairs(seen: dict[float, list[float]]) -> list[tuple[float, float, float, float]]:
    """``(m0, q0, m, q)`` for each size ``m`` of one job above its smallest ``m0``: the tasks'
    quantiles at :data:`QUANTILES`, paired level by level. Why quantiles and not one mean: if
    every task at ``m`` takes ``a·d + b`` for its ``d`` at ``m0``, the quantiles map the same way
    (the map is increasing), so one job whose tasks run 5-110 ms tells ``b`` from ``a``. On the
    emulated cluster (pareto_stop36e's profile) the calibration job's means alone read a = 1.11,
    1.36, 1.72 at 2, 3, 4 slots, b = 0; its quantiles 1.08·d + 3 ms, 1.16·d + 9 ms, 1.26·d +
    16 ms -- which put WCC's tail tasks (12 ms at 1 slot) at 2-4 slots within ~10 %, where the
    stretch alone read a release 3 -> 2 as a 1.2x speed-up of them against the 1.5x measured,
    and kept ``efficiency`` at 3 executors where 2 ran the tail as fast. Per-superstep means
    (profiles written before) hardly spread: their pairs give the stretch alone, as one mean did."""
    per = {float(s): np.asarray(v, float) for s, v in seen.items() if len(v)}
    per = {s: v[np.isfinite(v) & (v >= 0)] for s, v in per.items()}
    per = {s: v for s, v in per.items() if v.size and v.max() > 0}
    if len(per) < 2:
        return []
    base = min(per)
    out = []
    for s, v in sorted(per.items()):
        if s == base:
            continue
        # every task, zeros too (durations are whole ms: more round to 0 at the faster size, and
        # leaving them out would shift one side's levels); a size of few tasks pairs its median
        levels = QUANTILES if min(v.size, per[base].size) >= MIN_TASKS else (0.5,)
        out += [(base, float(a), s, float(b)) for a, b in zip(np.quantile(per[base], levels), np.quantile(v, levels))
                if a > 0 and b > 0]
    return out


def per_size(points: Sequence[tuple[float, float, float, float]]) -> tuple[tuple[float, float, float], ...]:
    """``(slots, a, b)`` at each size measured from the smallest one, by least squares in relative
    error over the pairs seen there: ``a`` alone (their ratio's geometric mean) unless the paired
    base tasks (quantiles, of one job or several) differ by 2x or more, ``b >= 0``. Sizes above another base than the smallest are
    left to the power law."""
    if not points:
        return ()
    m0 = min(p[0] for p in points)
    out = [(m0, 1.0, 0.0)]
    for m in sorted({p[2] for p in points if p[0] == m0}):
        d0, d = (np.array(c, float) for c in zip(*[(p[1], p[3]) for p in points if p[0] == m0 and p[2] == m]))
        a, b = float(np.exp(np.mean(np.log(d / d0)))), 0.0
        if d0.max() >= 2 * d0.min():  # tasks of different lengths tell the two terms apart
            X = np.column_stack([d0 / d, 1 / d])  # (a·d0 + b) / d ≈ 1
            sol, *_ = np.linalg.lstsq(X, np.ones_like(d), rcond=None)
            if sol[0] > 0 and sol[1] >= 0:
                a, b = float(sol[0]), float(sol[1])
        out.append((float(m), a, b))
    pooled_a, pooled_b = nondecreasing([a for _, a, _ in out]), nondecreasing([b for _, _, b in out])
    return tuple((m, a, b) for (m, _, _), a, b in zip(out, pooled_a, pooled_b))  # both: no size faster


def nondecreasing(values: Sequence[float]) -> list[float]:
    """``values`` made non-decreasing by pooling adjacent violators (their mean). Why: sharing a
    cluster never makes a task faster at more slots; a size measured slower than a larger one is
    noise (the calibration climbing 1 -> 4 once put 3 slots at 1.38x and 4 at 1.25x), and a
    release read off it would be priced as a speed-up."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in values:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    return [b[0] / b[1] for b in blocks for _ in range(int(b[1]))]
