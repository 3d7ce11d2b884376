"""Barrier statistics: what superstep *i* cost, from Spark's own monitoring.

Jobs are found by their job group ``superstep-<i>`` (``SparkStatusTracker``); stage and task
metrics come from Spark's status store as the REST API's documents
(:class:`~iterflow.observe.sparkinfo.StatusStore`): the numbers a user sees in the Spark UI.
Before reading, the listener bus is drained so the store has every task-end event.

The *main stage* of a superstep is its stage with the most executor run time; task
quantiles, skew (max/mean task time; ``skew_cpu`` the same on task CPU time) and the
per-partition records and times come from it.

Faults: ``failed_tasks`` counts task attempts that failed in the superstep's jobs (every one is
retried by Spark, or its job failed and the driver reran the superstep); ``failed_jobs`` the
jobs that failed; ``executors_lost`` the executors that went away during the superstep without
the driver removing them (``executors_lost_ids``: their ids and Spark's reason).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import time
from typing import Any

import numpy as np
from py4j.protocol import Py4JError

from iterflow.loop.ports import ExecutorSnapshot
from iterflow.loop.program import State
from iterflow.loop.records import Stats
from iterflow.observe.sparkinfo import StatusStore

log = logging.getLogger(__name__)

# every number of :class:`Stats` (the record part is the one list of statistics)
NUMERIC_FIELDS = tuple(f.name for f in dataclasses.fields(Stats) if f.type == "float")
# Spark's reason for an executor the driver removed on purpose (scale-in), not a loss.
KILLED_BY_DRIVER = "killed by driver"


def _drain_listener_bus(sc: Any, timeout_ms: int = 10_000) -> None:
    """Wait until Spark's status store has processed every event so far (task ends included)."""
    try:
        sc._jsc.sc().listenerBus().waitUntilEmpty(timeout_ms)
    except Exception as exc:  # noqa: BLE001 - a slow bus costs accuracy, not correctness
        log.warning("listener bus not drained: %s", str(exc).splitlines()[0][:200])


class StatsCollector:
    """Collects the statistics of one superstep (``collect``); cheap enough to run at every barrier."""

    def __init__(self, sc: Any) -> None:
        self.sc = sc
        self.status = StatusStore.of(sc)
        self.tracker = sc._jsc.sc().statusTracker()
        # Job ids grow monotonically; jobs before this collector (earlier runs in the same
        # SparkContext, which reuse the group names superstep-<i>) are not ours.
        self.first_job = self._next_job_id()
        self._gone: set[str] = {e for e, _ in self._removed_executors()}  # removed before this run

    def _next_job_id(self) -> int:
        dag = self.sc._jsc.sc().dagScheduler()
        try:
            return int(dag.numTotalJobs())
        except Exception:  # noqa: BLE001 - older/newer Spark: the counter itself
            return int(dag.nextJobId())

    def job_ids(self, group: str) -> list[int]:
        return [int(j) for j in self.tracker.getJobIdsForGroup(group) if int(j) >= self.first_job]

    def _jobs(self, group: str) -> tuple[list[int], int, list[int]]:
        """The group's jobs, how many failed, and the stages they list (one pass, few py4j calls)."""
        jobs, failed, stages = self.job_ids(group), 0, set()
        for job_id in jobs:
            info = self.tracker.getJobInfo(job_id)
            if info.isDefined():
                job = info.get()
                failed += str(job.status()) == "FAILED"
                stages.update(int(s) for s in job.stageIds())
        return jobs, failed, sorted(stages)

    def collect(self, superstep: int, wall_seconds: float, snapshot: ExecutorSnapshot,
                state: State | None = None) -> Stats:
        """Statistics of superstep ``superstep`` (all jobs of group ``superstep-<i>``), and the
        executors lost since the previous superstep's statistics."""
        out = self._figures(f"superstep-{superstep}", wall_seconds, snapshot,
                            state_rdd_ids(state.frames) if state is not None else [])
        out.update(self._lost_executors())
        return Stats(**out)

    def _removed_executors(self) -> list[tuple[str, str]]:
        """``(id, reason)`` of every executor of this application that is gone."""
        try:
            rows = self.status.executors(active_only=False)
        except Py4JError:
            return []
        return [(e["id"], e.get("removeReason") or "") for e in rows
                if e["id"] != "driver" and not e.get("isActive", True)]

    def _lost_executors(self) -> dict[str, Any]:
        """Executors removed since the last call that the driver did not remove itself."""
        new = [(e, why) for e, why in self._removed_executors() if e not in self._gone]
        self._gone.update(e for e, _ in new)
        lost = [(e, why) for e, why in new if KILLED_BY_DRIVER not in why.lower()]
        return {"executors_lost": float(len(lost)),
                "executors_lost_ids": json.dumps({e: why[:200] for e, why in lost})}

    def collect_group(self, group: str, wall_seconds: float, snapshot: ExecutorSnapshot) -> Stats:
        """Statistics of every job of job group ``group`` (a relayout)."""
        return Stats(**self._figures(group, wall_seconds, snapshot, []))

    def _figures(self, group: str, wall_seconds: float, snapshot: ExecutorSnapshot,
                 rdd_ids: list[int]) -> dict[str, Any]:
        t0 = time.perf_counter()
        _drain_listener_bus(self.sc)
        jobs, failed_jobs, stage_ids = self._jobs(group)
        # One status-store read per stage, every attempt of it (~3 ms over py4j; the REST API
        # took ~10 ms a call). Skipped stages (re-used shuffle output) ran no task: not counted.
        attempts = [a for sid in stage_ids for a in self.status.stage(sid)]
        stages = [a for a in attempts if a.get("status") == "COMPLETE" and a.get("numCompleteTasks", 0) > 0]
        out: dict[str, Any] = {f: 0.0 for f in NUMERIC_FIELDS}
        out.update(jobs=len(jobs), stages=len(stages), failed_jobs=float(failed_jobs),
                   failed_tasks=float(sum(a.get("numFailedTasks", 0) for a in attempts)))
        for s in stages:
            out["executor_run_seconds"] += s.get("executorRunTime", 0) / 1e3
            out["executor_cpu_seconds"] += s.get("executorCpuTime", 0) / 1e9
            out["gc_seconds"] += s.get("jvmGcTime", 0) / 1e3
            out["shuffle_read_bytes"] += s.get("shuffleReadBytes", 0)
            out["shuffle_read_records"] += s.get("shuffleReadRecords", 0)
            out["shuffle_remote_bytes"] += s.get("shuffleRemoteBytesRead", 0)
            out["shuffle_local_bytes"] += s.get("shuffleLocalBytesRead", 0)
            out["shuffle_write_bytes"] += s.get("shuffleWriteBytes", 0)
            out["shuffle_write_records"] += s.get("shuffleWriteRecords", 0)
            out["input_records"] += s.get("inputRecords", 0)
            out["output_records"] += s.get("outputRecords", 0)
            out["spill_memory_bytes"] += s.get("memoryBytesSpilled", 0)
            out["spill_disk_bytes"] += s.get("diskBytesSpilled", 0)
            out["tasks"] += s.get("numCompleteTasks", 0)
        out.update(self._main_stage(stages))
        core_seconds = max(snapshot.cores, 1) * wall_seconds
        out["utilization"] = min(1.0, out["executor_run_seconds"] / core_seconds) if core_seconds > 0 else 0.0
        out["state_bytes"] = self._state_bytes(rdd_ids)
        out["stats_seconds"] = time.perf_counter() - t0
        return out

    def _main_stage(self, stages: list[dict[str, Any]]) -> dict[str, Any]:
        if not stages:
            return {"main_stage": -1, "partition_records": "[]", "partition_seconds": "[]"}
        main = max(stages, key=lambda s: s.get("executorRunTime", 0))
        tasks = [t for t in self.status.tasks(main["stageId"], main["attemptId"])
                 if t.get("status") == "SUCCESS"]
        if not tasks:
            return {"main_stage": main["stageId"], "partition_records": "[]", "partition_seconds": "[]"}
        secs = np.array([t["taskMetrics"]["executorRunTime"] / 1e3 for t in tasks])
        cpu = np.array([t["taskMetrics"].get("executorCpuTime", 0) / 1e9 for t in tasks])
        dur = np.array([t.get("duration", 0) / 1e3 for t in tasks])
        recs: dict[int, float] = {}
        times: dict[int, float] = {}
        for t, s in zip(tasks, secs):
            m = t["taskMetrics"]
            p = int(t.get("partitionId", t["index"]))
            recs[p] = m["inputMetrics"]["recordsRead"] + m["shuffleReadMetrics"]["recordsRead"]
            times[p] = float(s)
        r = np.array([recs[p] for p in sorted(recs)], dtype=float)
        return {
            "main_stage": main["stageId"],
            "task_seconds_min": float(dur.min()), "task_seconds_median": float(np.median(dur)),
            "task_seconds_p90": float(np.quantile(dur, 0.9)), "task_seconds_max": float(dur.max()),
            "skew": float(secs.max() / secs.mean()) if secs.mean() > 0 else 1.0,
            # the same on CPU time: without the waits (cpu quota throttling, remote block
            # reads, scheduling), which on small or shared nodes can dwarf the data's skew
            "skew_cpu": float(cpu.max() / cpu.mean()) if cpu.mean() > 0 else float("nan"),
            "partition_records_max_over_mean": float(r.max() / r.mean()) if r.mean() > 0 else 1.0,
            "partition_records": json.dumps([recs[p] for p in sorted(recs)]),
            "partition_seconds": json.dumps([round(times[p], 4) for p in sorted(times)]),
        }

    def _state_bytes(self, rdd_ids: list[int]) -> float:
        """Memory + disk of the state's cached/checkpointed RDDs after the barrier."""
        if not rdd_ids:
            return float("nan")
        total = 0.0
        for rid in rdd_ids:
            doc = self.status.rdd(rid)
            if doc is None:
                continue  # not (yet) stored: counted as 0
            total += doc.get("memoryUsed", 0) + doc.get("diskUsed", 0)
        return total


def state_rdd_ids(frames: dict[str, Any]) -> list[int]:
    """RDD ids behind checkpointed state frames (a local checkpoint is a LogicalRDD leaf)."""
    ids = []
    for df in frames.values():
        try:
            ids.append(int(df._jdf.queryExecution().logical().rdd().id()))
        except Exception:  # noqa: BLE001 - a persisted (not checkpointed) frame has no leaf RDD
            continue
    return ids
