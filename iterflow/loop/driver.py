"""The iteration driver: runs an :class:`IterativeProgram` superstep by superstep.

The only place that knows the order of a superstep. Superstep ``i``:

1. **run** -- ``program.step`` builds the next state; every Spark job it (and the barrier) runs
   carries the job group ``superstep-<i>``; the barrier materializes the state and cuts its
   lineage (and copies it to files every ``checkpoint_interval`` supersteps). A superstep that fails because
   executors were lost is rerun after a rewind (:class:`~iterflow.faults.recovery.Recovery`);
2. **observe** -- the statistics of the superstep's jobs (:mod:`iterflow.observe.stats`) and,
   for a program laid out by bins, its per-bin load;
3. **model** -- the superstep is fed to the resource model when :func:`feeds_model` says so;
4. **decide** -- unless converged, the policy gets the records so far, the model, the layout
   and the run's horizon (:class:`~iterflow.loop.plan.RunPlan`) and returns a
   :class:`Reconfiguration`. Steps 2-4 are the *barrier overhead* (``barrier_seconds``);
5. **actuate** -- executors, then partitioning, then step logic
   (:mod:`iterflow.loop.reconfigure`), and the model's prediction for the next superstep.

Each step adds one frozen part to the superstep's :class:`SuperstepRecord`. The collaborators
(engine, statistics source, actuator, recovery, model, policy) are handed in, so the order is
tested with in-memory fakes (``tests/test_loop.py``); :meth:`IterationDriver.on_spark` wires
the Spark ones.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Sequence, TypeVar

import pandas as pd

from iterflow.faults.recovery import CheckpointHook, Recovery, Resume, first_line, is_state_loss
from iterflow.loop.plan import RunPlan
from iterflow.loop.ports import Actuator, Engine, StatsSource
from iterflow.loop.program import IterativeProgram, State
from iterflow.loop.reconfig import Reconfiguration
from iterflow.loop.reconfigure import Reconfigurer, cut_as_cores, partitions_for
from iterflow.loop.records import (Decided, Layout, Predicted, Ran, Recovered, SuperstepRecord,
                                   records, table)
from iterflow.actuate.rebalance import imbalance
from iterflow.model.live import feed, warm_start
from iterflow.model.warmup import warmup_supersteps

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class RunResult:
    """The output DataFrame, one record per superstep and their table (``superstep`` = i of
    ``superstep-<i>``)."""

    output: Any
    records: list[SuperstepRecord]
    converged: bool
    program: str
    run_id: str | None = None
    recompute: Callable[[], Any] | None = field(default=None, repr=False)
    free: Callable[[], None] | None = field(default=None, repr=False)

    def release(self) -> None:
        """Free what the run left on the executors once its output was used: the final state's
        blocks and the last anchor's copy (cache and files). The output cannot be read after.
        Why: in a session that runs job after job (a notebook, the experiments) every run left
        its final state cached -- 12.4 MB for WCC on R-MAT 19, +37 MB after three runs -- and a
        later scale-in's decommissioned executors moved every stale block to the ones left:
        the Pareto sessions' releases ran 2-5x slow for as long as that took (stop 39)."""
        if self.free is not None:
            self.free()
        self.output = self.free = self.recompute = None

    def use(self, action: Callable[[Any], T]) -> T:
        """``action(output)``; if it fails because executors holding the final state's blocks
        were lost, the state is recomputed from the last anchor (reliably this time) and
        ``action`` runs again on the new output."""
        try:
            return action(self.output)
        except Exception as exc:  # noqa: BLE001 - re-raised unless it is a loss of state
            if self.recompute is None or not is_state_loss(exc):
                raise
            log.warning("the result's blocks were lost with an executor (%s); recomputing it", first_line(exc))
            self.output, self.recompute = self.recompute(), None
            return action(self.output)

    @cached_property
    def supersteps(self) -> pd.DataFrame:
        return table(self.records)

    @property
    def iterations(self) -> int:
        return len(self.records)


def job_group(superstep: int) -> str:
    return f"superstep-{superstep}"


class IterationDriver:
    """Runs programs and consults ``policy`` at every barrier.

    ``spark``: the session the Spark collaborators are built on (engine, statistics, executor
    actuator); a test passes ``engine``, ``stats`` and ``actuator`` fakes instead and no session.
    ``checkpoint_interval`` k: the state is written to the reliable checkpoint dir every k
    supersteps. ``partitions``: the starting partition count; by default it follows the cores the
    run starts on (``partitions_follow_cores``, else ``spark.sql.shuffle.partitions``). ``model``: the
    resource model fed at every barrier (a fresh :class:`ResourceModel` by default);
    ``collect_stats=False`` skips the statistics (and the model). ``partitions_follow_cores``:
    and ``wait_for_executors`` (False: a scale-out does not stall the barrier): see
    :mod:`iterflow.loop.reconfigure`. ``start_executors``: executors asked for before the
    program loads its input (its caches land where they stay) -- or, on a fresh run, the size
    the policy plans from earlier runs or the cluster's calibration (:meth:`planned_start`). ``past``: superstep records of
    earlier runs of the program, which warm-start the model and the policy's rescale price.
    ``cluster_past``: records of runs of *other* programs on this cluster (and its calibration,
    ``iterflow cluster calibrate``): a scale-out's price and executors' warm-up are the cluster's,
    so a program's first run prices its scale-outs from them too (they do not feed its model); a
    scale-in's price is the program's own (its cached data re-read), from ``past`` only.
    ``on_superstep(record)`` is called after every barrier; ``on_checkpoint``, ``max_recoveries``
    and ``recovery_wait``: see :class:`~iterflow.faults.recovery.Recovery`.
    """

    def __init__(self, spark: Any = None, policy: Any = None, *, checkpoint_interval: int = 10,
                 partitions: int | None = None, model: Any = None, collect_stats: bool = True,
                 partitions_follow_cores: bool = True, wait_for_executors: bool = False,
                 on_superstep: Callable[[SuperstepRecord], None] | None = None,
                 on_checkpoint: CheckpointHook | None = None, max_recoveries: int = 3,
                 recovery_wait: float = 120.0, start_executors: int | None = None,
                 past: Sequence[Any] = (), cluster_past: Sequence[Any] = (), engine: Engine | None = None,
                 stats: StatsSource | None = None, actuator: Actuator | None = None) -> None:
        if checkpoint_interval < 1:
            raise ValueError(f"checkpoint_interval must be >= 1 (got {checkpoint_interval})")
        from iterflow.policies import StaticPolicy

        if engine is None:
            engine, stats, actuator = self.on_spark(spark, collect_stats)
        self.spark = spark
        self.engine = engine
        self.stats = stats if collect_stats else None
        self.actuator = actuator
        self.policy = policy or StaticPolicy()
        self.checkpoint_interval = checkpoint_interval
        self.partitions = int(partitions or (spark.conf.get("spark.sql.shuffle.partitions") if spark else 8))
        # the count follows the cores from the run's start: its model re-cuts stages, it learns
        # only from earlier runs cut alike (a count given is where a run starts)
        self.cut_as_cores = partitions_follow_cores and partitions is None
        self.partitions_follow_cores = partitions_follow_cores
        self.wait_for_executors = wait_for_executors
        self.on_superstep = on_superstep
        self.recovery = Recovery(engine, max_recoveries=max_recoveries, recovery_wait=recovery_wait,
                                 on_checkpoint=on_checkpoint)
        if model is None:
            from iterflow.model.live import LiveModel

            model = LiveModel()
        self.model = model
        replay = getattr(model, "replay", model)  # its replay re-cuts stages where the count follows from the start
        if hasattr(replay, "tasks_follow_slots"):
            replay.tasks_follow_slots = self.cut_as_cores
        self.start_executors = start_executors
        self.past = self._alike(records(past))
        self.cluster_past = records(cluster_past)
        # supersteps an epoch runs above its steady state on this cluster, as earlier runs show
        # (the program's own where it has some: its tasks' JIT is what warms up)
        seen = self.past or self.cluster_past
        self.warmup = warmup_supersteps(seen) if seen else 1
        self._warmed = False
        self.start_reason: str | None = None  # why the policy chose the start size (planned_start)

    @staticmethod
    def on_spark(spark: Any, collect_stats: bool = True) -> tuple[Engine, StatsSource | None, Actuator]:
        """The Spark collaborators: engine, statistics source and executor actuator."""
        from iterflow.actuate.executors import ExecutorActuator
        from iterflow.loop.spark_engine import SparkEngine
        from iterflow.observe.stats import StatsCollector

        sc = spark.sparkContext
        return SparkEngine(spark), (StatsCollector(sc) if collect_stats else None), ExecutorActuator(sc)

    # -- the run ------------------------------------------------------------------------------
    def run(self, program: IterativeProgram, resume: Resume | None = None) -> RunResult:
        """Run to convergence or ``program.max_iterations``; returns output and records.

        With ``resume``, static inputs are prepared as usual (``program.init``), then the state
        is replaced by the saved one and the run continues after ``resume.superstep``; the
        records keep the saved supersteps.
        """
        plan = RunPlan.of(program)
        self._start(program, plan, fresh=resume is None)
        self.engine.job_group("init", f"{program.name}: load and prepare")
        state = program.init(self.spark)
        history: list[SuperstepRecord] = []
        start, converged, predicted = 0, False, float("nan")
        if resume is not None:
            state, history, start = self._resumed(program, resume)
            converged = bool(history) and program.converged(history[-1].ran.delta)
            if history:
                predicted = self._predict(history[-1].ran.work, history[-1].ran.cores)
        # The anchor of superstep 0 (or the resumed one) is its lineage: init's plan over the
        # cached inputs (or the saved files), recomputed if executors are lost. So there is
        # always a state to rewind to, and a run pays no reliable write before it starts.
        anchor = state
        state, rows = self.engine.barrier(state)
        self.recovery.anchor_at(start, anchor, program.variant)
        reconfigurer = Reconfigurer(self.engine, self.actuator, self.stats, self.recovery, program,
                                    self.partitions, self.partitions_follow_cores, self.wait_for_executors)
        try:
            for i in range(start + 1, program.max_iterations + 1):
                if converged:
                    break
                (ran, state, rows, snap), recovered = self.recovery.attempt(
                    lambda s, r: self._superstep(program, s, r, i, reconfigurer.partitions), state, rows, program, history, i - 1)
                if resume is not None and i == start + 1:
                    recovered = replace(recovered or Recovered(), resumed_from=start)
                t0 = time.perf_counter()
                record = SuperstepRecord(ran, recovered=recovered)
                if self.stats is not None:
                    record = record.with_(stats=self.stats.collect(i, ran.wall_seconds, snap, state))
                record = self._observe(record, history, predicted)
                record = record.with_(layout=self._layout(program, state))
                converged = program.converged(ran.delta)
                reconf = (Reconfiguration.none("converged") if converged
                          else self.policy.decide([*history, record], self.model, layout=record.layout, plan=plan))
                horizon = plan.horizon([*history, record])
                record = record.with_(decided=Decided(
                    reconf.decision(ran.executors), reconf.reason, time.perf_counter() - t0,
                    0 if converged else horizon.left, False if converged else horizon.estimated))
                state, record = reconfigurer.apply(reconf, state, record, history)
                predicted = self._predict(ran.work, record.actuated.cores_after or ran.cores)
                record = record.with_(actuated=replace(record.actuated, next_predicted_seconds=predicted))
                saved = self.recovery.save(program, i, [*history, record], state)  # rows made only to save
                if saved is not None:
                    record = record.with_(recovered=replace(record.recovered or Recovered(),
                                                            checkpoint_saved_seconds=saved))
                history.append(record)
                if self.on_superstep:
                    self.on_superstep(record)
        finally:
            reconfigurer.close()  # a relayout still building ahead: not needed any more
            self.partitions = reconfigurer.partitions
            self.engine.job_group("result", f"{program.name}: result")
        # The result is read from the last local checkpoint, as a hand-written loop's would be;
        # only if that read fails after losing executors (RunResult.use) is the final state
        # recomputed from the anchor and written reliably. Nothing is paid until then.
        final = state

        def free() -> None:
            self.engine.release(final, keep=State({}, {}))
            self.recovery.forget()

        return RunResult(program.result(state), history, converged, program.name, free=free,
                         recompute=lambda: program.result(self.recovery.secured(program, final, history)))

    def _start(self, program: IterativeProgram, plan: RunPlan, fresh: bool = True) -> None:
        """Before the program loads its input: the warm start from earlier runs (the model
        learns their steady supersteps, the policy their rescales), the first executors -- where
        the policy plans its start from those runs, its size -- and the cluster's executor start
        latency as measured so far."""
        # the bound is this run's length only where no tolerance ends it sooner: a repeat of a
        # converged WCC run extended to its bound of 1000 supersteps planned a start at 1 (stop 47)
        known = plan.max_iterations if plan.tol is None else None
        planned = self.planned_start(max_iterations=known) if self.start_executors and fresh else None
        start = planned or self.start_executors
        if start and self.actuator is not None:
            act = self.actuator.set_executors(start)
            if act.note:
                log.warning(act.note)
        self.partitions = self.starting_partitions()
        program.partitions = self.partitions
        self.engine.set_partitions(self.partitions)
        if self.actuator is not None:  # from an empty store, the only registration delay there is
            self.policy.learn_start_delays(self.actuator.start_delays())
        self._warm_start()

    def planned_start(self, like: Sequence[Any] | None = None, max_iterations: int | None = None) -> int | None:
        """The executors the policy plans a fresh run to start at (after the warm start), or
        ``None``: as configured. ``like``: the earlier runs this one repeats (the same input;
        default every run in ``past``); ``max_iterations``: this run's length where known (no
        tolerance may end it sooner; a plan extends the repeat up to it). A caller that sizes
        the executors itself before the input is loaded (``iterflow run``) asks here first; the
        reason is kept in ``start_reason``."""
        self._warm_start()
        like = self.past if like is None else self._alike(records(like))
        # with no earlier run of the input, the policy may still plan from the cluster's calibration
        want = self.policy.plan_start(like, self.model if self.stats is not None else None, max_iterations)
        if want is None:
            return None
        self.start_reason = want.reason
        # shown without --verbose: the run does not start where it was told to
        log.warning("%s policy, before superstep 1: %s", self.policy.name, want.reason)
        return int(want.executors)

    def starting_partitions(self) -> int:
        """The count a run starts at: one task a core of the executors there are now where the
        count follows the cores from the start (:func:`partitions_for`), else the one given. A
        caller that loads the input before :meth:`run` (``iterflow run``) asks here."""
        cores = self.engine.snapshot().cores if self.cut_as_cores else 0
        return partitions_for(cores) if cores else self.partitions

    def _alike(self, history: list[SuperstepRecord]) -> list[SuperstepRecord]:
        """Earlier runs a run cut as its cores from the start learns from: those cut alike
        (:func:`~iterflow.loop.reconfigure.cut_as_cores`); a run at a given count, all."""
        return cut_as_cores(history) if self.cut_as_cores else history

    def _warm_start(self) -> None:
        """Once: earlier runs feed the model, and price the policy's rescales."""
        if self._warmed:
            return
        self._warmed = True
        if self.past:
            if self.warmup > 1:
                log.warning("earlier runs on this cluster ran the first %d supersteps of each executor set "
                            "above their steady state: the model learns from the later ones", self.warmup)
            self._feed(self.past)
        if self.past or self.cluster_past:  # a release's price is the program's own (learn_rescales)
            self.policy.learn_rescales([*self.cluster_past, *self.past], scale_ins=self.past)

    def _feed(self, history: Sequence[SuperstepRecord]) -> None:
        """Feed the model, in one refit, every superstep of ``history`` that :func:`feeds_model`
        admits (earlier runs' records, or a resumed run's saved ones)."""
        if self.stats is not None:
            warm_start(self.model, history, self.warmup)

    def _resumed(self, program: IterativeProgram, resume: Resume) -> tuple[State, list[SuperstepRecord], int]:
        """The saved state in place of the initial one; the model re-fed with the saved records."""
        program.variant = resume.variant
        state = program.restore(resume.state)
        if resume.next_variant != program.variant:
            state = program.switch_variant(resume.next_variant, state)
        history = records(resume.history)
        self._feed(history)
        log.warning("resuming %s after superstep %d", program.name, resume.superstep)
        return state, history, resume.superstep

    # -- one superstep ------------------------------------------------------------------------
    def _superstep(self, program: IterativeProgram, state: State, rows_before: dict[str, int],
                   i: int, partitions: int) -> tuple[Ran, State, dict[str, int], Any]:
        t0 = time.perf_counter()
        self.engine.job_group(job_group(i), f"{program.name} superstep {i}")
        reliable = i % self.checkpoint_interval == 0
        new = program.step(state, i)
        new, rows = self.engine.barrier(new)
        copy = self.engine.secure(new) if reliable else None  # files to rewind to; the run goes on in memory
        try:
            delta = program.delta(state, new, rows)
        except Exception:
            if copy is not None:  # the superstep reruns from the anchor before it: this copy is no one's
                self.engine.discard(copy)
            raise
        wall = time.perf_counter() - t0
        self.engine.release(state, keep=new)
        if copy is not None:
            # only now: a loss in ``delta`` must rewind to the anchor *before* this superstep,
            # and ``delta`` reads the old state, which may be that anchor's files
            self.recovery.anchor_at(i, copy, program.variant, source=new)
        snap = self.engine.snapshot()
        log.info("superstep %d: %.3fs, delta=%s, rows=%s", i, wall, delta, rows)
        ran = Ran(i, wall, snap.executors, snap.cores, partitions, delta,
                  program.work(rows_before, rows), int(sum(rows.values())), reliable, program.variant)
        return ran, new, rows, snap

    def _observe(self, record: SuperstepRecord, history: Sequence[SuperstepRecord],
                 predicted: float) -> SuperstepRecord:
        """Feed the model the superstep past the warm-up of its executor set
        (:func:`~iterflow.model.live.feed`); a *cold* superstep's excess over the model's
        prediction is recorded as ``cold_seconds``, part of what that rescale cost."""
        cold = None
        if self.stats is not None:
            cold = feed(self.model, record, history, self.warmup,
                        record.stats.stage_tasks if record.stats is not None else None, self._fitted())
        return record.with_(predicted=Predicted(predicted, cold))

    @staticmethod
    def _layout(program: IterativeProgram, state: State) -> Layout | None:
        """For a program laid out by bins: its per-bin load and assignment (for the policy)
        and the partition imbalance they imply."""
        if program.layout is None:
            return None
        load, assignment = program.bin_load(state), program.layout.assignment
        return Layout(imbalance(assignment.partition_load(load)), load, assignment)

    def _fitted(self) -> bool:
        return bool(getattr(self.model, "fitted", hasattr(self.model, "X_")))

    def _predict(self, work: float, cores: float) -> float:
        """The model's prediction for the next superstep at ``cores`` (NaN until fitted)."""
        if self.stats is None or not self._fitted():
            return float("nan")
        return self.model.predict_seconds(cores, work)

