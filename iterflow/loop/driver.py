"""The iteration driver: runs an :class:`IterativeProgram` superstep by superstep.

One superstep, in order:

1. ``program.step`` builds the next state; every Spark job it (and the barrier) runs carries
   the job group ``superstep-<i>``, so statistics can be attributed to superstep ``i``;
2. barrier: every state frame is persisted and counted (materialized), and every
   ``checkpoint_interval`` supersteps checkpointed, which truncates its lineage -- plan size,
   driver memory and per-superstep time stay flat over hundreds of supersteps; a superstep
   that fails because executors (and the state blocks only they held) were lost is rerun
   after a rewind to the last reliable checkpoint (:mod:`iterflow.faults.recovery`);
3. ``program.delta`` measures progress; convergence is checked;
4. statistics of the superstep are collected (:mod:`iterflow.observe.stats`) and fed to the
   resource model (:mod:`iterflow.model.resource`), which predicts the next superstep;
5. the policy is consulted with the superstep table so far and the model and returns a
   :class:`Reconfiguration`, which the driver applies before the next superstep.

Steps 4-5 are the *barrier overhead*, recorded per superstep (``barrier_seconds``).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from iterflow.actuate.executors import ExecutorActuator
from iterflow.model.resource import ResourceModel
from iterflow.actuate.partitioning import imbalance, moved_fraction, moved_load
from iterflow.policies import Policy, StaticPolicy
from iterflow.loop.program import IterativeProgram, State
from iterflow.loop.reconfig import Reconfiguration
from iterflow.faults.recovery import Anchor, CheckpointHook, Recovering, Resume
from iterflow.observe.sparkinfo import executor_snapshot
from iterflow.observe.stats import StatsCollector, state_rdd_ids

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    """The output DataFrame and one row per superstep (``superstep`` = i of ``superstep-<i>``)."""

    output: DataFrame
    supersteps: pd.DataFrame
    converged: bool
    program: str
    run_id: str | None = None

    @property
    def iterations(self) -> int:
        return len(self.supersteps)


def job_group(superstep: int) -> str:
    return f"superstep-{superstep}"


MIN_TASKS_PER_CORE = 2


def partitions_for(start: int, cores: int) -> int:
    """The partition count at ``cores``: the starting count, or two tasks per core if more."""
    return max(int(start), MIN_TASKS_PER_CORE * int(cores))


class IterationDriver(Recovering):
    """Runs programs on ``spark`` and consults ``policy`` at every barrier.

    ``checkpoint_interval`` k: the state is written to the reliable checkpoint dir every k
    supersteps (between them it is local-checkpointed on the executors, see ``_barrier``).
    ``partitions`` defaults to ``spark.sql.shuffle.partitions``. ``model`` is the resource
    model fed at every barrier (a fresh :class:`ResourceModel` by default; pass a warm-started
    one to reuse history); ``collect_stats=False`` skips the statistics (and the model).
    Superstep 1 (JIT warm-up, first reads of cached inputs) is recorded but not fed to the model.
    ``partitions_follow_cores``: after executors change, the partition count becomes
    ``max(partitions, 2 x cores)`` -- never below the starting count, and at least two tasks
    per core once the cores outgrow it (Spark's tuning guide: 2-3 tasks per core). Scaling
    the starting ratio instead made 32 tiny partitions of a job started with 8 on 1 core.
    ``max_recoveries``: how often one superstep may be rewound and rerun after losing executors
    before the run fails with :class:`~iterflow.faults.recovery.RecoveryError`; ``recovery_wait``:
    seconds a recovery waits for at least one executor. ``on_checkpoint``: see :data:`CheckpointHook`.
    """

    def __init__(self, spark: SparkSession, policy: Policy | None = None, *,
                 checkpoint_interval: int = 10,
                 partitions: int | None = None, model: ResourceModel | None = None,
                 collect_stats: bool = True, partitions_follow_cores: bool = True,
                 on_superstep: Callable[[dict[str, Any]], None] | None = None,
                 on_checkpoint: CheckpointHook | None = None, max_recoveries: int = 3,
                 recovery_wait: float = 120.0) -> None:
        if checkpoint_interval < 1:
            raise ValueError(f"checkpoint_interval must be >= 1 (got {checkpoint_interval})")
        self.spark = spark
        self.sc = spark.sparkContext
        self.policy = policy or StaticPolicy()
        self.checkpoint_interval = checkpoint_interval
        self.partitions = partitions or int(spark.conf.get("spark.sql.shuffle.partitions"))
        self.partitions_follow_cores = partitions_follow_cores
        self.on_superstep = on_superstep
        self.on_checkpoint = on_checkpoint
        self.max_recoveries = max_recoveries
        self.recovery_wait = recovery_wait
        self._anchor: Anchor | None = None
        self.model = model if model is not None else ResourceModel()
        self.stats = StatsCollector(self.sc) if collect_stats else None
        self.actuator = ExecutorActuator(self.sc)
        self._next_prediction = float("nan")

    def run(self, program: IterativeProgram, resume: Resume | None = None) -> RunResult:
        """Run to convergence or ``program.max_iterations``; returns output and superstep table.

        With ``resume``, static inputs are prepared as usual (``program.init``), then the state
        is replaced by the saved one and the run continues after ``resume.superstep``; the
        table keeps the saved rows.
        """
        program.partitions = self.partitions
        self.spark.conf.set("spark.sql.shuffle.partitions", str(self.partitions))
        self._next_prediction = float("nan")
        self.sc.setJobGroup("init", f"{program.name}: load and prepare", interruptOnCancel=False)
        state = program.init(self.spark)
        history: list[dict[str, Any]] = []
        start, converged = 0, False
        if resume is not None:
            state, history, start = self._resumed(program, resume)
            converged = bool(history) and program.converged(history[-1].get("delta"))
        # Superstep 0 (or the resumed one) is reliably checkpointed: there is always a state
        # to rewind to when executors are lost.
        state, rows = self._barrier(state, reliable=True)
        self._anchor = Anchor(start, state, program.variant)
        try:
            for i in range(start + 1, program.max_iterations + 1):
                if converged:
                    break
                predicted = self._next_prediction
                record = self._attempt(program, state, rows, i, history)
                state, rows, snap = record.pop("_state"), record.pop("_rows"), record.pop("_snap")
                if resume is not None and i == start + 1:
                    record["resumed_from"] = start
                t0 = time.perf_counter()
                if self.stats is not None:
                    record.update(self.stats.collect(i, record["wall_seconds"], snap,
                                                     state_rdd_ids(state.frames)))
                    self._observe(record, history)
                record["predicted_seconds"] = predicted
                self._layout_figures(program, state, record)
                history.append(record)
                converged = program.converged(record["delta"])
                reconf = (Reconfiguration.none("converged") if converged
                          else self.policy.decide(history, self.model))
                record["barrier_seconds"] = time.perf_counter() - t0
                record.update(decision=reconf.decision(record["executors"]), reason=reconf.reason)
                state = self._apply_recovering(reconf, state, record, program, history)
                self._next_prediction = record["next_predicted_seconds"] = self._predict(record)
                if self._anchor is not None and self._anchor.superstep == i:
                    self._save_checkpoint(program, record, history)
                if self.on_superstep:
                    self.on_superstep(record)
        finally:
            self.sc.setJobGroup("result", f"{program.name}: result", interruptOnCancel=False)
        state = self._secured(program, state, history)
        table = pd.DataFrame([{k: v for k, v in r.items() if not k.startswith("_")} for r in history])
        return RunResult(program.result(state), table, converged, program.name)

    def _observe(self, record: dict[str, Any], history: list[dict[str, Any]]) -> None:
        """Feed the model the superstep -- unless it is superstep 1 (JIT warm-up) or the first
        at a new executor count (fresh executor JVMs, cached blocks read remotely): such a
        *cold* superstep is not the new size's steady state. Its excess over the model's
        prediction is recorded as ``cold_seconds``, part of what that rescale cost."""
        cold = bool(history) and history[-1].get("executors") != record.get("executors")
        if cold and hasattr(self.model, "X_"):
            predicted = self.model.predict_seconds(record["cores"], record["work"])
            record["cold_seconds"] = max(0.0, record["wall_seconds"] - predicted)
        if record["superstep"] > 1 and not cold:
            self.model.observe(record["cores"], record["work"], record["wall_seconds"])

    @staticmethod
    def _layout_figures(program: IterativeProgram, state: State, record: dict[str, Any]) -> None:
        """Step variant, and for a program laid out by bins: its per-bin load and assignment
        (``_``-keys, for the policy only) and the partition imbalance they imply."""
        record["variant"] = program.variant
        if program.layout is None:
            return
        load = program.bin_load(state)
        assignment = program.layout.assignment
        record.update(_bin_load=load, _assignment=assignment,
                      partition_imbalance=imbalance(assignment.partition_load(load)))

    def _predict(self, last: dict[str, Any]) -> float:
        """The model's prediction for the next superstep, at the cores in force after this
        barrier's reconfiguration and the last superstep's work (NaN until the model is fitted)."""
        if self.stats is None or not hasattr(self.model, "X_"):
            return float("nan")
        cores = last.get("cores_after", last["cores"])
        return self.model.predict_seconds(cores, last["work"])

    # -- one superstep ---------------------------------------------------------------------
    def _superstep(self, program: IterativeProgram, state: State, rows_before: dict[str, int],
                   i: int) -> dict[str, Any]:
        t0 = time.perf_counter()
        self.sc.setJobGroup(job_group(i), f"{program.name} superstep {i}", interruptOnCancel=False)
        reliable = i % self.checkpoint_interval == 0
        new = program.step(state, i)
        new, rows = self._barrier(new, reliable=reliable)
        delta = program.delta(state, new, rows)
        wall = time.perf_counter() - t0
        self._release(state, keep=new)
        if reliable:
            self._set_anchor(Anchor(i, new, program.variant))
        snap = executor_snapshot(self.sc)
        log.info("superstep %d: %.3fs, delta=%s, rows=%s", i, wall, delta, rows)
        return {
            "superstep": i, "wall_seconds": wall, "executors": snap.executors, "cores": snap.cores,
            "partitions": self.partitions, "delta": delta, "work": program.work(rows_before, rows),
            "state_rows": int(sum(rows.values())),
            "checkpointed": reliable, "_state": new, "_rows": rows,
            "_snap": snap,
        }

    def _barrier(self, state: State, reliable: bool) -> tuple[State, dict[str, int]]:
        """Materialize every frame and cut its lineage.

        Every superstep: a local checkpoint (one job; blocks kept on the executors) -- the
        plan of the next superstep starts from a leaf, so planning time stays flat. At
        superstep 0 and every ``checkpoint_interval`` supersteps (``reliable``): a reliable
        checkpoint to the checkpoint dir, the point a run is recomputed from after losing
        executors (:mod:`iterflow.faults.recovery`) and the state a resumed run starts from.
        """
        rows: dict[str, int] = {}
        frames: dict[str, DataFrame] = {}
        for name, df in state.frames.items():
            if reliable:
                cached = df.persist(StorageLevel.MEMORY_AND_DISK)
                rows[name] = cached.count()
                df = cached.checkpoint(eager=True).persist(StorageLevel.MEMORY_AND_DISK)
                cached.unpersist()
            else:
                df = df.localCheckpoint(eager=True)
                rows[name] = df.count()
            frames[name] = df
        return State(frames, dict(state.values)), rows

    @staticmethod
    def _release(old: State, keep: State) -> None:
        """Free the previous state's frames (those not carried over unchanged): their cache
        entries and the blocks of their local-checkpoint RDDs, which ``unpersist`` alone keeps.
        (A reliably checkpointed frame stays readable: its files are not touched.)"""
        kept = {id(df) for df in keep.frames.values()}
        for df in old.frames.values():
            if id(df) not in kept:
                df.unpersist()
                try:
                    df._jdf.queryExecution().logical().rdd().unpersist(False)
                except Exception:  # noqa: BLE001 - not a checkpointed leaf: nothing more to free
                    pass

    def _apply(self, reconf: Reconfiguration, state: State, record: dict[str, Any],
               program: IterativeProgram) -> State:
        """Apply a reconfiguration before the next superstep; returns the (possibly re-laid out)
        state. Trisk's three dimensions, in this order:

        1. resources -- scale-in first writes the state to the reliable checkpoint dir (local
           checkpoint blocks on a removed executor could not be recomputed, checkpoint files
           can); then executors are requested or killed (:mod:`iterflow.actuate.executors`);
        2. partitioning -- after executors changed, the partition count follows the cores; a
           policy may also move bins (``bin_assignment``) or set ``partitions``. The program
           re-places its cached inputs and its state (job group ``relayout-<i>``, timed and
           measured apart from the supersteps: ``relayout_seconds``, its shuffle bytes and how
           many of them crossed executors);
        3. logic -- the program switches its step function (``step_variant``).
        """
        current = record["executors"]
        record["executors_requested"] = current
        record["executors_active"] = current
        partitions, assignment = reconf.partitions, reconf.bin_assignment
        if reconf.executors is not None and reconf.executors != current:
            anchored = self._anchor is not None and self._anchor.state is state
            if reconf.executors < current and not anchored:
                secured, _ = self._barrier(state, reliable=True)
                self._release(state, keep=secured)
                self._set_anchor(Anchor(record["superstep"], secured, program.variant))
                state = secured
            act = self.actuator.set_executors(reconf.executors)
            record.update(executors_requested=act.requested, executors_active=act.active,
                          actuation_seconds=act.waited_seconds, actuation_note=act.note)
            snap = executor_snapshot(self.sc)
            record["cores_after"] = snap.cores
            if act.active != act.before and partitions is None and assignment is None:
                # the count follows the cores; an unchanged count still re-distributes
                partitions = partitions_for(self.partitions, snap.cores) if self.partitions_follow_cores \
                    else self.partitions
        if assignment is not None:
            partitions = assignment.n_partitions
        if partitions is not None:
            state = self._relayout(program, state, record, partitions, assignment)
        if reconf.step_variant is not None and reconf.step_variant != program.variant:
            switched = program.switch_variant(reconf.step_variant, state)
            record["variant_after"] = reconf.step_variant
            new, _ = self._barrier(switched, reliable=False)
            self._release(state, keep=new)
            state = new
        return state

    def _relayout(self, program: IterativeProgram, state: State, record: dict[str, Any],
                  partitions: int, assignment: Any) -> State:
        i = record["superstep"]
        t0 = time.perf_counter()
        group = f"relayout-{i}"
        self.sc.setJobGroup(group, "re-distribute cached inputs and state", interruptOnCancel=False)
        before = program.layout.assignment if program.layout is not None else None
        self.partitions = partitions
        self.spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
        moved = program.relayout(partitions, state, assignment)
        new, _ = self._barrier(moved, reliable=False)
        self._release(state, keep=new)
        wall = time.perf_counter() - t0
        record.update(partitions_after=partitions, relayout_seconds=wall)
        if before is not None and program.layout is not None:
            after, load = program.layout.assignment, program.bin_load(new)
            record["bins_moved_fraction"] = moved_fraction(before, after)
            if load is not None and load.sum() > 0:  # share of the work (edges) whose partition changed
                record["load_moved_fraction"] = moved_load(before, after, load) / load.sum()
        if self.stats is not None:
            figures = self.stats.collect_group(group, wall, executor_snapshot(self.sc))
            record.update(relayout_shuffle_bytes=figures["shuffle_read_bytes"],
                          relayout_remote_bytes=figures["shuffle_remote_bytes"])
        return new
