"""The iteration driver: runs an :class:`IterativeProgram` superstep by superstep.

One superstep, in order:

1. ``program.step`` builds the next state; every Spark job it (and the barrier) runs carries
   the job group ``superstep-<i>``, so statistics can be attributed to superstep ``i``;
2. barrier: every state frame is persisted and counted (materialized), and every
   ``checkpoint_interval`` supersteps checkpointed, which truncates its lineage -- plan size,
   driver memory and per-superstep time stay flat over hundreds of supersteps;
3. ``program.delta`` measures progress; convergence is checked;
4. the policy is consulted with the superstep table so far and returns a
   :class:`Reconfiguration`, which the driver applies before the next superstep.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from iterflow.policy import Policy, StaticPolicy
from iterflow.program import IterativeProgram, State
from iterflow.reconfig import Reconfiguration
from iterflow.sparkinfo import executor_snapshot

log = logging.getLogger(__name__)



@dataclass
class RunResult:
    """The output DataFrame and one row per superstep (``superstep`` = i of ``superstep-<i>``)."""

    output: DataFrame
    supersteps: pd.DataFrame
    converged: bool
    program: str

    @property
    def iterations(self) -> int:
        return len(self.supersteps)


def job_group(superstep: int) -> str:
    return f"superstep-{superstep}"


class IterationDriver:
    """Runs programs on ``spark`` and consults ``policy`` at every barrier.

    ``checkpoint_interval`` k: the state is written to the reliable checkpoint dir every k
    supersteps (between them it is local-checkpointed on the executors, see ``_barrier``).
    ``partitions`` defaults to ``spark.sql.shuffle.partitions``.
    """

    def __init__(self, spark: SparkSession, policy: Policy | None = None, *,
                 checkpoint_interval: int = 10,
                 partitions: int | None = None,
                 on_superstep: Callable[[dict[str, Any]], None] | None = None) -> None:
        if checkpoint_interval < 1:
            raise ValueError(f"checkpoint_interval must be >= 1 (got {checkpoint_interval})")
        self.spark = spark
        self.sc = spark.sparkContext
        self.policy = policy or StaticPolicy()
        self.checkpoint_interval = checkpoint_interval
        self.partitions = partitions or int(spark.conf.get("spark.sql.shuffle.partitions"))
        self.on_superstep = on_superstep

    def run(self, program: IterativeProgram) -> RunResult:
        """Run to convergence or ``program.max_iterations``; returns output and superstep table."""
        program.partitions = self.partitions
        self.sc.setJobGroup("init", f"{program.name}: load and prepare", interruptOnCancel=False)
        state = program.init(self.spark)
        state, rows = self._barrier(state, superstep=0)
        history: list[dict[str, Any]] = []
        converged = False
        try:
            for i in range(1, program.max_iterations + 1):
                record = self._superstep(program, state, rows, i)
                state, rows = record.pop("_state"), record.pop("_rows")
                history.append(record)
                converged = program.converged(record["delta"])
                reconf = self.policy.decide(history)
                record.update(decision=reconf.decision(record["executors"]), reason=reconf.reason)
                self._apply(reconf)
                if self.on_superstep:
                    self.on_superstep(record)
                if converged:
                    break
        finally:
            self.sc.setJobGroup("result", f"{program.name}: result", interruptOnCancel=False)
        return RunResult(program.result(state), pd.DataFrame(history), converged, program.name)

    # -- one superstep ---------------------------------------------------------------------
    def _superstep(self, program: IterativeProgram, state: State, rows_before: dict[str, int],
                   i: int) -> dict[str, Any]:
        t0 = time.perf_counter()
        self.sc.setJobGroup(job_group(i), f"{program.name} superstep {i}", interruptOnCancel=False)
        new = program.step(state, i)
        new, rows = self._barrier(new, superstep=i)
        delta = program.delta(state, new, rows)
        wall = time.perf_counter() - t0
        self._release(state, keep=new)
        snap = executor_snapshot(self.sc)
        log.info("superstep %d: %.3fs, delta=%s, rows=%s", i, wall, delta, rows)
        return {
            "superstep": i, "wall_seconds": wall, "executors": snap.executors, "cores": snap.cores,
            "partitions": self.partitions, "delta": delta, "work": program.work(rows_before, rows),
            "state_rows": int(sum(rows.values())),
            "checkpointed": i % self.checkpoint_interval == 0, "_state": new, "_rows": rows,
        }

    def _barrier(self, state: State, superstep: int) -> tuple[State, dict[str, int]]:
        """Materialize every frame and cut its lineage.

        Every superstep: a local checkpoint (one job; blocks kept on the executors) -- the
        plan of the next superstep starts from a leaf, so planning time stays flat. Every
        ``checkpoint_interval`` supersteps: a reliable checkpoint to the checkpoint dir,
        the point a run can be recomputed from after losing executors or the driver.
        """
        rows: dict[str, int] = {}
        frames: dict[str, DataFrame] = {}
        reliable = superstep > 0 and superstep % self.checkpoint_interval == 0
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
        """Unpersist the previous state's frames (those not carried over unchanged)."""
        kept = {id(df) for df in keep.frames.values()}
        for df in old.frames.values():
            if id(df) not in kept:
                df.unpersist()

    def _apply(self, reconf: Reconfiguration) -> None:
        """Apply a reconfiguration before the next superstep (the static policy changes nothing)."""
        if not reconf.is_noop:
            log.warning("reconfiguration not applied (actuation not available yet): %s", reconf)
