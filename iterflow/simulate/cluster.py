"""A recorded run replayed on a simulated cluster under a policy, no Spark (issue 14, item 2).

Why a discrete-event model and not the resource model: the policy under test consults the
model, so the model cannot also be the judge. Superstep ``i`` at ``E`` executors x ``C`` cores:

    wall = outside_i + Σ_stages list-schedule(contention(tasks, recorded slots -> slots)
                                              on the slots there are)

stages one after the other (:func:`iterflow.model.tasks.makespan` with each slot's ready
time; ``contention``: the cluster's task slow-down with scale-out,
:mod:`iterflow.model.contention`, learned from recorded runs at several sizes), times ``1 + cold_factor``
on the first superstep at a new size (after a scale-in, ``settle_factors`` on the next ones while
its transient lasts). Around it, what the driver does (:mod:`iterflow.loop.driver`, :mod:`iterflow.loop.reconfigure`):

* the policy object decides at every barrier but the last, with ``policy.decide([*history,
  record], model, plan=...)``; the model is :class:`~iterflow.model.live.LiveModel`, fed as
  the driver feeds it (``observe(cores, work, wall, stage_tasks=...)`` for supersteps
  :func:`~iterflow.loop.records.feeds_model` admits; a cold superstep's excess over its
  prediction is its ``cold_seconds``);
* **scale-out**: requested, the next superstep starts at once; the new executors' slots join
  ``register_seconds`` after the request (tasks meanwhile run on the executors there are).
  When all have come, the partition count follows the cores (a relayout pause only if it changes)
  -- where the recorded run's did (:func:`follows_cores`): each stage is then re-cut to the
  simulated count (:func:`~iterflow.model.tasks.resplit`); a run recorded at a fixed count
  keeps it;
* **scale-in**: the barrier holds ``remove_seconds`` (decommission) + ``relayout_seconds``,
  at the old size (both are held meanwhile, :func:`~iterflow.loop.records.executor_seconds`);
  a release to one executor, which rebuilds nothing at its barrier, its own
  ``light_relayout_seconds`` and ``light_cold_seconds`` added to its first superstep, where the
  recorded runs measured one;
* **weak scaling** (``scale_input`` F != 1, never implicit): each stage gets ``round(F·n)``
  tasks drawn (seeded, with replacement) from its ``n`` measured durations; the time outside
  tasks is kept. Where the recorded run's count followed its cores, those tasks are then re-cut
  to the simulated count as the loop cuts F times the input: one task a core, each doing F x
  the work of a recorded one (its fixed cost paid once) -- not F times the tasks at every size,
  which would run a tail of fixed-cost tasks in rounds the loop never makes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from iterflow.loop.plan import RunPlan
from iterflow.loop.reconfig import Reconfiguration
from iterflow.loop.reconfigure import partitions_for
from iterflow.loop.records import Actuated, Decided, Predicted, Ran, Stats, SuperstepRecord, is_cold
from iterflow.loop.rescales import cold_run, light_release
from iterflow.model.contention import Contention, fit as fit_contention
from iterflow.model.live import SETTLE_MOST, LiveModel, feed, warm_start
from iterflow.model.replay import ReplayModel
from iterflow.model.tasks import makespan, recut, task_fixed_cost
from iterflow.model.warmup import warmup_supersteps
from iterflow.simulate.recorded import RecordedRun, Step, cost, median, runtime


@dataclass(frozen=True)
class Params:
    """The cluster's latencies and the cold-superstep excess, each with where it came from."""

    register_seconds: float
    remove_seconds: float
    relayout_seconds: float
    cold_factor: float
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    contention_beta: float = 0.0
    contention_overhead: float = 0.0
    cold_in_factor: float = 0.0  # the same after a scale-in: no fresh JVM, the lost cache re-read
    # the slow-down at each recorded size, (slots, a, b) (:class:`Contention`); the power law beyond
    contention_sizes: tuple[tuple[float, float, float], ...] = ()
    # (slots, steady superstep seconds) of the cluster's calibration job: where a cold start plans
    contention_walls: tuple[tuple[float, float], ...] = ()
    # (slots, a task's fixed seconds) the calibration job measured: the model's cap where a run
    # at one size cannot tell (:meth:`Contention.task_fixed`)
    contention_fixed: tuple[tuple[float, float], ...] = ()
    # the supersteps after a scale-in's first, while its transient lasts: cold_seconds / rest at
    # ages 2, 3, ... (the median over the recorded scale-ins, 0 where one had settled)
    settle_factors: tuple[float, ...] = ()
    # a release to one executor (:func:`~iterflow.loop.rescales.light_release`) re-lays nothing
    # out at its barrier and reads the state's copy in its first superstep: its relayout seconds
    # and that superstep's excess in seconds (not a factor: reading the copy costs about the
    # same however short the superstep), learned apart; None where no recorded run made one
    # (then priced as a rebuilding release)
    light_relayout_seconds: float | None = None
    light_cold_seconds: float | None = None

    def describe(self) -> list[str]:
        out = [f"{k} = {getattr(self, k):.3g} ({self.sources.get(k, 'given')})"
               for k in ("register_seconds", "remove_seconds", "relayout_seconds", "cold_factor",
                         "cold_in_factor", "contention_beta", "contention_overhead")]
        if len(self.contention_sizes) > 1:
            out.append("contention per size = " + ", ".join(f"{m:g}: {a:.2f}x + {b * 1e3:.0f} ms"
                                                            for m, a, b in self.contention_sizes)
                       + f" ({self.sources.get('contention_beta', 'given')}; the power law beyond)")
        if any(self.settle_factors):
            out.append("a scale-in's transient after its first superstep = "
                       + ", ".join(f"{f:.2f}" for f in self.settle_factors)
                       + f" ({self.sources.get('settle_factors')})")
        if self.light_cold_seconds is not None:
            out.append(f"a release to one executor: relayout {self.light_relayout_seconds:.3g}s, its first superstep "
                       f"+{self.light_cold_seconds:.3g}s ({self.sources.get('light_cold_seconds')})")
        if self.contention_walls:
            out.append("calibration job's steady superstep = " + ", ".join(f"{m:g}: {w:.2f}s" for m, w in self.contention_walls)
                       + " (where a cold target starts)")
        return out

    @property
    def contention(self) -> Contention:
        return Contention(self.contention_beta, self.contention_overhead,
                          how=self.sources.get("contention_beta", "given"), sizes=self.contention_sizes,
                          walls=self.contention_walls, fixed=self.contention_fixed)


#: what a parameter is when no record measured it (stated in the output as "prior")
PRIORS = {"register_seconds": 10.0, "remove_seconds": 5.0, "relayout_seconds": 1.0, "cold_factor": 0.0,
          "cold_in_factor": 0.0, "contention_beta": 0.0, "contention_overhead": 0.0}


def task_seconds(runs: Sequence[RecordedRun]) -> dict[float, list[float]]:
    """``slots -> [task seconds]`` over the steady steps of one job's recorded runs (not the
    first, not the first at a new size), from their stage_tasks or quantile sketches: every task,
    as :func:`iterflow.model.contention.task_seconds` (their quantiles are paired)."""
    out: dict[float, list[float]] = {}
    for run in runs:
        for prev, step in zip(run.steps, run.steps[1:]):
            tasks = [float(t) for st in step.stages for t in st]
            if prev.executors == step.executors and tasks:
                out.setdefault(float(step.cores), []).extend(tasks)
    return out


def jobs_of(runs: Sequence[RecordedRun]) -> list[list[RecordedRun]]:
    """Recorded runs grouped by job (the ``job`` label up to ``@``, else the source)."""
    groups: dict[str, list[RecordedRun]] = {}
    for r in runs:
        groups.setdefault(str(r.labels.get("job") or r.source).split("@")[0], []).append(r)
    return list(groups.values())


def learn(histories: Sequence[Sequence[SuperstepRecord]], given: dict[str, float | None] | None = None,
          jobs: Sequence[Sequence[RecordedRun]] | None = None) -> Params:
    """Medians over the recorded runs: ``actuation_seconds`` of scale-outs the driver waited
    for (registration) and of scale-ins (removal), ``relayout_seconds`` of every rescale, and
    ``cold_seconds / (wall − cold_seconds)`` of cold supersteps; the task slow-down from
    ``jobs`` (each one job's runs at several sizes, :func:`iterflow.model.contention.fit`).
    ``given`` values win, a parameter nothing measured is its :data:`PRIORS` value."""
    ups, downs, relayout, cold, cold_in = [], [], [], [], []
    light_relayout: list[float] = []
    light_cold: list[float] = []
    settle: list[list[float]] = []  # per scale-in, the transient's factors after its first superstep
    for h in histories:
        for k, r in enumerate(h):
            a, d = r.actuated, r.decided
            if a is not None and d is not None and d.decision in ("up", "down"):
                light = d.decision == "down" and light_release(r.executors, a.executors_requested)
                if d.decision == "down":
                    downs.append(a.actuation_seconds)
                elif not a.executors_pending:
                    ups.append(a.actuation_seconds)
                (light_relayout if light else relayout).append(a.relayout_seconds)
            c = r.predicted.cold_seconds
            if c is not None and k > 0 and r.wall_seconds > c and is_cold(r, h[k - 1]):
                # fresh executors' JIT after a scale-out; only the lost cache after a scale-in
                scale_in = r.executors < h[k - 1].executors
                if scale_in and light_release(h[k - 1].executors, r.executors):
                    light_cold.append(c)
                else:
                    (cold_in if scale_in else cold).append(c / (r.wall_seconds - c))
                if scale_in:
                    settle.append(_transient(h, k))
    found = {"register_seconds": (median(ups), len(ups), "scale-outs' actuation_seconds"),
             "remove_seconds": (median(downs), len(downs), "scale-ins' actuation_seconds"),
             "relayout_seconds": (median(relayout), len(relayout), "rescales' relayout_seconds"),
             "cold_factor": (median(cold), len(cold), "cold supersteps' cold_seconds / rest, after scale-outs"),
             "cold_in_factor": (median(cold_in), len(cold_in), "cold supersteps' cold_seconds / rest, after scale-ins")}
    slow = fit_contention([task_seconds(j) for j in jobs or []])
    what = "size pairs of recorded jobs (task quantiles against the job's smallest size's)"
    found["contention_beta"] = (slow.beta if slow.pairs else None, slow.pairs, what)
    found["contention_overhead"] = (slow.overhead if slow.pairs else None, slow.pairs, what)
    values, sources = {}, {}
    for key, (value, n, what) in found.items():
        if given and given.get(key) is not None:
            values[key], sources[key] = float(given[key]), "given"
        elif value is not None:
            how = "fitted over" if key.startswith("contention") else "median of"
            values[key], sources[key] = value, f"learned: {how} {n} {what}"
        else:
            values[key], sources[key] = PRIORS[key], "prior: nothing recorded measures it"
    given_slow = given and any(given.get(k) is not None for k in ("contention_beta", "contention_overhead"))
    factors = tuple(median([f[a] for f in settle]) for a in range(SETTLE_MOST - 1)) if settle else ()
    sources["settle_factors"] = f"learned: median of {len(settle)} scale-ins' cold supersteps after their first"
    to_one = {}
    if light_cold:  # without one measured, a release to one is simulated as a rebuilding one
        to_one = {"light_relayout_seconds": median(light_relayout) or 0.0, "light_cold_seconds": median(light_cold)}
        sources["light_cold_seconds"] = (f"learned: median of {len(light_cold)} releases to one executor's first "
                                         f"superstep excess, {len(light_relayout)} relayouts")
    return Params(**values, sources=sources, contention_sizes=() if given_slow else slow.sizes,
                  settle_factors=factors if any(factors) else (), **to_one)


def _transient(h: Sequence[SuperstepRecord], k: int) -> list[float]:
    """cold_seconds / rest of the supersteps after the scale-in's first (at ``k``) that its run
    found still cold (:func:`~iterflow.model.live.settling`), 0 from the first that settled."""
    out = []
    for r in cold_run(h[:k + SETTLE_MOST], k):
        c = r.predicted.cold_seconds
        if not r.wall_seconds > c:
            break
        out.append(c / (r.wall_seconds - c))
    return out + [0.0] * (SETTLE_MOST - 1 - len(out))


@dataclass
class SimRun:
    """A simulated run: its records (the table a real run would have) and the decisions."""

    policy: str
    start: int
    records: list[SuperstepRecord]

    @property
    def runtime(self) -> float:
        return runtime(self.records)

    @property
    def executor_seconds(self) -> float:
        return cost(self.records)

    @property
    def decisions(self) -> list[tuple[int, str, str]]:
        return [(r.superstep, r.decided.decision, r.decided.reason) for r in self.records if r.decided is not None]


def weak_scaled(steps: Sequence[Step], factor: float, seed: int = 0) -> list[tuple[tuple[float, ...], ...]]:
    """Each step's stages with ``round(factor · n)`` tasks drawn from its ``n`` durations."""
    if factor == 1.0:
        return [s.stages for s in steps]
    rng = np.random.default_rng(seed)
    return [tuple(tuple(float(x) for x in rng.choice(st, max(1, round(factor * len(st))))) for st in s.stages)
            for s in steps]


def plan_of(run: RecordedRun) -> RunPlan:
    """The horizon the recorded run's policy had: a run to a fixed count, that count; a run that
    converged (its horizon estimated, its last record says so), a tolerance (its last delta) and
    no bound -- not its superstep count: the real run did not know it (WCC ran 33 of
    max_iterations 1000), and a replay told it could plan for a release the real run could
    not (stop 30's WCC targets replayed at 1.17x the cheapest static's executor-seconds with
    the count, 1.21x without, where the real runs took 1.30x); a run under a tolerance that
    stopped at its bound instead, that bound."""
    estimated = any(r.decided is not None and r.decided.remaining_estimated for r in run.records)
    tol = run.steps[-1].delta if estimated else None
    end = run.records[-1].decided if run.records else None
    converged = tol is not None and end is not None and str(end.reason).startswith("converged")
    return RunPlan(None if converged else len(run.steps), tol)


def simulate(run: RecordedRun, policy: Any, executors: int, cores: int, params: Params, *,
             scale_input: float = 1.0, seed: int = 0, past: Sequence[SuperstepRecord] = (),
             plan: RunPlan | None = None, prices: Sequence[SuperstepRecord] = (),
             planned_start: bool = True) -> SimRun:
    """Replay ``run`` from ``executors`` x ``cores`` under ``policy`` (see the module docstring).
    ``past``: records of earlier runs of the same job, which warm-start the model and the
    policy's rescale price as ``iterflow run`` does from its MLflow store; ``prices``: records
    of other jobs on the cluster, whose rescales only price the policy's (not the model).
    ``planned_start``: the policy may plan its start as the driver lets it (False: start at
    ``executors`` -- where a recorded run being checked started)."""
    slow = params.contention
    follow = follows_cores(run)
    model = LiveModel(replay=ReplayModel(contention=slow, tasks_follow_slots=follow))
    warm = warmup_supersteps(past) if past else 1
    warm_start(model, past, warm)
    if past or prices:
        policy.learn_rescales([*past, *prices], scale_ins=past)
    # as the driver: from earlier runs, or the cluster's calibration (asked in any case: the
    # policy also takes the repeated run's work for its forecast there)
    plan = plan or plan_of(run)
    planned = policy.plan_start(past, model, plan.max_iterations if plan.tol is None else None)  # as the driver
    executors = planned.executors if planned is not None and planned_start else executors
    stages_of = weak_scaled(run.steps, scale_input, seed)
    start_parts = max(run.steps[0].partitions, 1) if not follow else 0  # 0: the count follows the cores
    overhead = task_fixed_cost(zip(stages_of, (s.work for s in run.steps)))
    E, joins, asked = int(executors), [], None   # joins: seconds until each pending executor registers
    parts = parts_at(start_parts, E * cores)
    history: list[SuperstepRecord] = []
    age_in = 0  # supersteps since a scale-in (1: its first), 0 where none is settling
    for k, (step, stages) in enumerate(zip(run.steps, stages_of)):
        ready = [0.0] * (E * cores) + [j for j in joins for _ in range(cores)]
        t = 0.0
        if follow and step.partitions:  # re-cut to the simulated count, a task's fixed cost as the model reads it;
            # weak-scaled, the F·n drawn tasks are a run on F x the input cut at F x the recorded count
            stages = recut(stages, step.partitions * scale_input, parts, overhead)
        for st in stages:
            t = makespan(slow.task(st, step.cores, E * cores), 0, [max(t, r) for r in ready])
        wall = step.outside + t
        came = sum(1 for j in joins if j <= wall)
        E, joins = E + came, [j - wall for j in joins if j > wall]
        tasks = step.stage_tasks(stages)
        rec = SuperstepRecord(Ran(step.superstep, wall, E, E * cores, parts, step.delta, step.work),
                              stats=Stats(stage_tasks=tasks or "[]"))
        prev = history[-1] if history else None
        cold = is_cold(rec, prev)
        age_in = 1 if cold and E < prev.executors else (age_in + 1 if age_in and not cold else 0)
        factor, extra = 0.0, 0.0
        if age_in == 1 and params.light_cold_seconds is not None and light_release(prev.executors, E):
            extra = params.light_cold_seconds  # the state's copy read, whatever the superstep's length
        elif age_in == 1:
            factor = params.cold_in_factor
        elif cold:
            factor = params.cold_factor
        elif 2 <= age_in <= len(params.settle_factors) + 1:
            factor = params.settle_factors[age_in - 2]
        if factor or extra:
            rec = rec.with_(ran=Ran(step.superstep, wall * (1 + factor) + extra, E, E * cores, parts,
                                    step.delta, step.work))
        rec = rec.with_(predicted=Predicted(cold_seconds=feed(model, rec, history, warm, tasks, model.fitted)))
        last = k == len(run.steps) - 1
        reconf = Reconfiguration.none("last recorded superstep") if last else \
            policy.decide([*history, rec], model, plan=plan)
        joins = [max(j - step.barrier, 0.0) for j in joins]  # pending ones register during the barrier
        rec, E, joins, asked, parts = _apply(reconf, rec, E, joins, asked, parts, start_parts, cores, params)
        rec = rec.with_(decided=Decided(reconf.decision(rec.executors), reconf.reason, step.barrier))
        pause = rec.actuated.pause_seconds or 0.0
        joins = [max(j - pause, 0.0) for j in joins]
        history.append(rec)
    return SimRun(getattr(policy, "name", "policy"), int(executors), history)


def follows_cores(run: RecordedRun) -> bool:
    """Whether the recorded run's partition count followed its cores
    (:func:`~iterflow.loop.reconfigure.partitions_for` at every superstep), as runs since stop 44
    do; earlier ones kept the count they started with."""
    return all(s.partitions == partitions_for(s.cores) for s in run.steps)


def parts_at(start: int, cores: int) -> int:
    """The simulated partition count at ``cores``: the recorded start (``start`` > 0, a run
    recorded at a fixed count), else as the loop chooses it."""
    return start if start > 0 else partitions_for(cores)


def _apply(reconf: Reconfiguration, rec: SuperstepRecord, E: int, joins: list[float], asked: int | None,
           parts: int, start_parts: int, cores: int, p: Params) -> tuple[SuperstepRecord, int, list[float], int | None, int]:
    """The decision applied as :class:`~iterflow.loop.reconfigure.Reconfigurer` applies it."""
    act = Actuated(executors_requested=E, executors_active=E)
    want = reconf.executors
    if asked is not None and (want is None or want == asked):
        if not joins:  # all came: the partition count follows the cores
            asked, new_parts = None, parts_at(start_parts, E * cores)
            act = Actuated(E, E, cores_after=E * cores, partitions_after=new_parts,
                           relayout_seconds=p.relayout_seconds if new_parts != parts else None)
            parts = new_parts
        else:
            act = Actuated(asked, E, executors_pending=len(joins))
        want = None
    if want is not None and asked is not None and E <= want < asked:
        # a withdraw (the request lowered while executors are starting): those not needed are not
        # waited for (the driver lowers the request; one that registers anyway it releases later)
        joins = sorted(joins)[:want - E]
        asked = want if joins else None
        act = Actuated(want, E, 0.0, cores_after=E * cores, executors_pending=len(joins))
        want = None
    if want is not None and want < E:
        # relayout_seconds is charged at every scale-in, also where the partition count stays (the
        # loop relays out only where it changes): it stands in for the removed executors' cached
        # state moving to the ones left, which the calibration job's small cache underprices
        # (cold_in_factor 0.08 there; PageRank's 2 -> 1 ran its first two supersteps at 1 executor
        # 3.5 s over steady, stop 29). Charged only where the partitions change, the stop-29 runs
        # replayed from their start size fell from 69 % to 28 % within 15 % (from static-1: 54 -> 65 %).
        # A release to one executor rebuilds nothing (stop 49): its own relayout, where one was measured
        light = p.light_cold_seconds is not None and light_release(E, want)
        parts = parts_at(start_parts, want * cores)
        act = Actuated(want, want, p.remove_seconds, cores_after=want * cores, partitions_after=parts,
                       relayout_seconds=p.light_relayout_seconds if light else p.relayout_seconds)
        E, joins, asked = want, [], None
    elif want is not None and want > E:
        joins, asked = [p.register_seconds] * (want - E), want
        act = Actuated(want, E, 0.0, cores_after=E * cores, executors_pending=want - E)
    return rec.with_(actuated=act), E, joins, asked, parts
