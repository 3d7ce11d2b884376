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
from typing import Any, Sequence

import numpy as np
from py4j.protocol import Py4JError

from iterflow.loop.ports import ExecutorSnapshot
from iterflow.loop.program import State
from iterflow.loop.records import Stats
from iterflow.observe.listener import SUM_KEYS, attach
from iterflow.observe.sparkinfo import StatusStore, removed_by_driver

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

    def __init__(self, sc: Any, use_listener: bool = True) -> None:
        self.sc = sc
        self.status = StatusStore.of(sc)
        self.tracker = sc._jsc.sc().statusTracker()
        self.events = attach(sc) if use_listener else None
        # Job ids grow monotonically; jobs before this collector (earlier runs in the same
        # SparkContext, which reuse the group names superstep-<i>) are not ours.
        self.first_job = self._next_job_id()
        self._removal_cursor = self.events.removal_count() if self.events is not None else 0
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
        """``(id, reason)`` of every executor of this application that is gone (through the
        listener: those removed since this collector started)."""
        if self.events is not None:
            return self.events.removals(self._removal_cursor)
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
        ours = removed_by_driver(self.sc)  # decommissioned ones exit with code 0, not "killed by driver"
        lost = [(e, why) for e, why in new if e not in ours and KILLED_BY_DRIVER not in why.lower()]
        return {"executors_lost": float(len(lost)),
                "executors_lost_ids": json.dumps({e: why[:200] for e, why in lost})}

    def collect_group(self, group: str, wall_seconds: float, snapshot: ExecutorSnapshot) -> Stats:
        """Statistics of every job of job group ``group`` (a relayout)."""
        return Stats(**self._figures(group, wall_seconds, snapshot, []))

    def _stage_attempts(self, group: str) -> tuple[list[int], int, list[dict[str, Any]]]:
        """The group's jobs, how many failed, and every attempt of their stages (REST-shaped
        documents): from iterflow's listener in one call, else one status-store read a stage."""
        if self.events is not None:
            doc = self.events.take(group, self.first_job, self._next_job_id())
            return doc["jobs"], doc["failed_jobs"], doc["stages"]
        _drain_listener_bus(self.sc)
        jobs, failed_jobs, stage_ids = self._jobs(group)
        return jobs, failed_jobs, [a for sid in stage_ids for a in self.status.stage(sid)]

    def _figures(self, group: str, wall_seconds: float, snapshot: ExecutorSnapshot,
                 rdd_ids: list[int]) -> dict[str, Any]:
        t0 = time.perf_counter()
        jobs, failed_jobs, attempts = self._stage_attempts(group)
        # Skipped stages (re-used shuffle output) ran no task: not counted.
        stages = [a for a in attempts if a.get("status") == "COMPLETE" and a.get("numCompleteTasks", 0) > 0]
        out: dict[str, Any] = {f: 0.0 for f in NUMERIC_FIELDS}
        out.update(jobs=len(jobs), stages=len(stages), failed_jobs=float(failed_jobs),
                   failed_tasks=float(sum(a.get("numFailedTasks", 0) for a in attempts)))
        for field, key in zip(_SUMMED, SUM_KEYS):
            out[field] = float(sum(s.get(key, 0) for s in stages)) / _UNIT.get(key, 1)
        out["tasks"] = float(sum(s.get("numCompleteTasks", 0) for s in stages))
        out.update(self._main_stage(stages))
        out["stage_tasks"] = stage_tasks(stages)
        core_seconds = max(snapshot.cores, 1) * wall_seconds
        out["utilization"] = min(1.0, out["executor_run_seconds"] / core_seconds) if core_seconds > 0 else 0.0
        out["state_bytes"] = self._state_bytes(rdd_ids)
        out["stats_seconds"] = time.perf_counter() - t0
        return out

    def _main_stage(self, stages: list[dict[str, Any]]) -> dict[str, Any]:
        if not stages:
            return {"main_stage": -1, "partition_records": "[]", "partition_seconds": "[]"}
        main = max(stages, key=lambda s: s.get("executorRunTime", 0))
        tasks = main["task_rows"] if "task_rows" in main else self._store_tasks(main)
        if not tasks:
            return {"main_stage": main["stageId"], "partition_records": "[]", "partition_seconds": "[]"}
        secs = np.array([t[1] / 1e3 for t in tasks])
        cpu = np.array([t[2] / 1e9 for t in tasks])
        dur = np.array([t[3] / 1e3 for t in tasks])
        recs: dict[int, float] = {}
        times: dict[int, float] = {}
        for t, s in zip(tasks, secs):
            recs[int(t[0])] = t[4]
            times[int(t[0])] = float(s)
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

    def _store_tasks(self, stage: dict[str, Any]) -> list[list[Any]]:
        """A stage's successful tasks from the status store, as the listener's task rows."""
        rows = []
        for t in self.status.tasks(stage["stageId"], stage["attemptId"]):
            if t.get("status") != "SUCCESS":
                continue
            m = t["taskMetrics"]
            rows.append([int(t.get("partitionId", t["index"])), m["executorRunTime"], m.get("executorCpuTime", 0),
                         t.get("duration", 0), m["inputMetrics"]["recordsRead"] + m["shuffleReadMetrics"]["recordsRead"],
                         0, t.get("executorId", "")])
        return rows

    def _state_bytes(self, rdd_ids: list[int]) -> float:
        """Memory + disk of the state's cached/checkpointed RDDs after the barrier."""
        if not rdd_ids:
            return float("nan")
        if self.events is not None:
            return self.events.rdd_bytes(rdd_ids)
        total = 0.0
        for rid in rdd_ids:
            doc = self.status.rdd(rid)
            if doc is None:
                continue  # not (yet) stored: counted as 0
            total += doc.get("memoryUsed", 0) + doc.get("diskUsed", 0)
        return total


# Stats fields summed over stages, in the order of the listener's sums (SUM_KEYS), and the
# units the store reports them in (ms, ns) where the field is in seconds.
_SUMMED = ("executor_run_seconds", "executor_cpu_seconds", "gc_seconds", "shuffle_read_bytes",
           "shuffle_read_records", "shuffle_remote_bytes", "shuffle_local_bytes", "shuffle_write_bytes",
           "shuffle_write_records", "input_records", "output_records", "spill_memory_bytes", "spill_disk_bytes")
_UNIT = {"executorRunTime": 1e3, "executorCpuTime": 1e9, "jvmGcTime": 1e3}


#: a stage with more tasks than this keeps a sketch of its task durations, not every one
SKETCH_ABOVE = 256
SKETCH_POINTS = 64


def stage_tasks(stages: list[dict[str, Any]]) -> str:
    """What a replay of the superstep needs (the adaptation and simulation issues): per stage, in
    submission order, ``[stage id, submitted, completed, [task durations]]`` in ms, times
    relative to the first stage's submission; ``"[]"`` where the source had no task rows. A
    stage of more than :data:`SKETCH_ABOVE` tasks keeps :data:`SKETCH_POINTS` evenly spaced
    quantiles of its durations (the shortest and the longest task included: the longest bounds a
    stage's makespan) and its task count as a fifth field, so a record stays
    small at any scale (:func:`task_durations` reads both forms)."""
    if not stages or any("task_rows" not in s for s in stages):
        return "[]"
    ordered = sorted(stages, key=lambda s: (s.get("submitted", 0), s["stageId"]))
    t0 = min(s.get("submitted", 0) for s in ordered)
    out = []
    for s in ordered:
        ms = [int(t[3]) for t in s["task_rows"]]
        row: list[Any] = [s["stageId"], s.get("submitted", 0) - t0, s.get("completed", 0) - t0, ms]
        if len(ms) > SKETCH_ABOVE:
            q = np.quantile(np.asarray(ms, float), np.linspace(0.0, 1.0, SKETCH_POINTS))
            row[3:] = [[round(float(v), 1) for v in q], len(ms)]
        out.append(row)
    return json.dumps(out, separators=(",", ":"))


def task_durations(entry: Sequence[Any]) -> list[float]:
    """The task durations (ms) of one ``stage_tasks`` entry: the list itself, or a sketched
    stage's quantiles spread back over its task count."""
    values = list(entry[3])
    if len(entry) < 5 or not values:
        return [float(v) for v in values]
    n, k = int(entry[4]), len(values)
    return [float(v) for v in np.interp(np.linspace(0.0, 1.0, n), np.linspace(0.0, 1.0, k), values)]


def state_rdd_ids(frames: dict[str, Any]) -> list[int]:
    """RDD ids behind checkpointed state frames (a local checkpoint is a LogicalRDD leaf)."""
    ids = []
    for df in frames.values():
        try:
            ids.append(int(df._jdf.queryExecution().logical().rdd().id()))
        except Exception:  # noqa: BLE001 - a persisted (not checkpointed) frame has no leaf RDD
            continue
    return ids
