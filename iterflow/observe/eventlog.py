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


_WANTED = ('"SparkListenerExecutorAdded"', '"SparkListenerExecutorRemoved"', '"SparkListenerJobStart"')


def executors_at_superstep_start(log: Path, first_job: int = 0) -> dict[int, int]:
    """Executors alive when the first job of each group ``superstep-<i>`` was submitted
    (jobs with an id below ``first_job`` -- earlier runs in the same application -- skipped)."""
    alive: set[str] = set()
    out: dict[int, int] = {}
    for line in event_lines(log):
        if not any(k in line for k in _WANTED):
            continue  # task and stage events: most of a long log, and never needed here
        ev = json.loads(line)
        kind = ev["Event"]
        if kind == "SparkListenerExecutorAdded":
            alive.add(ev["Executor ID"])
        elif kind == "SparkListenerExecutorRemoved":
            alive.discard(ev["Executor ID"])
        elif kind == "SparkListenerJobStart" and ev["Job ID"] >= first_job:
            group = (ev.get("Properties") or {}).get("spark.jobGroup.id", "")
            if group.startswith("superstep-"):
                out.setdefault(int(group.split("-")[1]), len(alive))
    return out
