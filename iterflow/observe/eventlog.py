"""Read Spark's event log: the check from outside the framework that a rescale took effect.

Spark writes every executor addition and removal and every job start (with its job group)
to the event log (``spark.eventLog.enabled``). Replaying it says how many executors were
alive when each superstep started -- independent of anything iterflow recorded itself.
"""
from __future__ import annotations

import json
from pathlib import Path


def event_lines(log: Path) -> list[str]:
    """Lines of an event log: a file, or Spark 4's rolling ``eventlog_v2_<app>/events_<n>_...``.
    Compressed logs are not read: set ``spark.eventLog.compress=false``."""
    if log.is_file():
        return log.read_text().splitlines()
    parts = sorted((p for p in log.iterdir() if p.name.startswith("events_")),
                   key=lambda p: int(p.name.split("_")[1]))
    return [ln for p in parts for ln in p.read_text().splitlines()]


def find_log(directory: Path, app_id: str) -> Path:
    """The event log of application ``app_id`` in ``directory`` (file or rolling dir)."""
    logs = [p for p in Path(directory).iterdir() if app_id in p.name]
    if not logs:
        raise FileNotFoundError(f"no event log for application {app_id} in {directory}")
    return logs[0]


_WANTED = ('"SparkListenerExecutorAdded"', '"SparkListenerExecutorRemoved"', '"SparkListenerJobStart"',
           '"SparkListenerJobEnd"', '"SparkListenerTaskEnd"')


def executors_at_superstep_start(log: Path, first_job: int = 0) -> dict[int, int]:
    """Executors alive when the first job of each group ``superstep-<i>`` was submitted
    (jobs with an id below ``first_job`` -- earlier runs in the same application -- skipped)."""
    return {i: seen["start"] for i, seen in executors_by_superstep(log, first_job).items()}


def executors_by_superstep(log: Path, first_job: int = 0) -> dict[int, dict[str, int]]:
    """Per superstep ``i`` (job group ``superstep-<i>``), from the event log alone:

    * ``start``: executors alive when its first job was submitted;
    * ``end``: the most executors alive from its last job's end until the next superstep's first
      job -- the window in which iterflow's barrier counts them for its record. Since a scale-out
      no longer waits for registration, executors may join while a superstep runs (``start`` can
      be lower than ``end``) or just after its last job, before the barrier counts (CI saw one
      register 'between' and the check fail when ``end`` was read at the last job's end only);
    * ``tasks``: executors that ran at least one of its tasks (did the new ones get work?).

    Since a scale-in no longer waits for the removed executors' JVMs to exit either, they may
    still be alive at ``end`` of the superstep after it; they run none of its tasks. So the
    check of a record's ``executors`` is :func:`consistent`: ``tasks <= executors <= end``.
    """
    alive: set[str] = set()
    group_of_job: dict[int, int] = {}
    group_of_stage: dict[int, int] = {}
    out: dict[int, dict[str, int]] = {}
    workers: dict[int, set[str]] = {}
    at_barrier: int | None = None  # the superstep whose barrier may be counting now
    for line in event_lines(log):
        if not any(k in line for k in _WANTED):
            continue
        ev = json.loads(line)
        kind = ev["Event"]
        if kind == "SparkListenerExecutorAdded":
            alive.add(ev["Executor ID"])
            if at_barrier is not None:
                out[at_barrier]["end"] = max(out[at_barrier]["end"], len(alive))
        elif kind == "SparkListenerExecutorRemoved":
            alive.discard(ev["Executor ID"])
        elif kind == "SparkListenerJobStart" and ev["Job ID"] >= first_job:
            group = (ev.get("Properties") or {}).get("spark.jobGroup.id", "")
            if group.startswith("superstep-"):
                i = int(group.split("-")[1])
                group_of_job[ev["Job ID"]] = i
                group_of_stage.update((s, i) for s in ev.get("Stage IDs", []))
                if i not in out:
                    at_barrier = None
                out.setdefault(i, {"start": len(alive), "end": len(alive), "tasks": 0})
        elif kind == "SparkListenerJobEnd" and ev["Job ID"] in group_of_job:
            at_barrier = group_of_job[ev["Job ID"]]
            out[at_barrier]["end"] = len(alive)
        elif kind == "SparkListenerTaskEnd" and ev.get("Stage ID") in group_of_stage:
            i = group_of_stage[ev["Stage ID"]]
            workers.setdefault(i, set()).add((ev.get("Task Info") or {}).get("Executor ID", "?"))
    for i, ids in workers.items():
        out[i]["tasks"] = len(ids)
    return out


def consistent(executors: int, seen: dict[str, int]) -> bool:
    """Whether the event log agrees with a superstep's record of ``executors``: no more ran its
    tasks (a removed executor got none), and at least that many were alive at some point between
    its last job's end and the next superstep (a removed one may still be exiting, a new one may
    have joined)."""
    return seen.get("tasks", -1) <= executors <= seen.get("end", -1)
