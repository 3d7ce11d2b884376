"""Reading Spark's event log, without Spark: synthetic logs in the format Spark 4 writes."""
from __future__ import annotations

import json
from pathlib import Path

from iterflow.observe.eventlog import consistent, executors_by_superstep


def _write(path: Path, events: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    return path


def added(e: str) -> dict:
    return {"Event": "SparkListenerExecutorAdded", "Executor ID": e}


def removed(e: str) -> dict:
    return {"Event": "SparkListenerExecutorRemoved", "Executor ID": e}


def job(j: int, superstep: int, stages: list[int]) -> list[dict]:
    return [{"Event": "SparkListenerJobStart", "Job ID": j, "Stage IDs": stages,
             "Properties": {"spark.jobGroup.id": f"superstep-{superstep}"}}]


def task(stage: int, e: str) -> dict:
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Task Info": {"Executor ID": e}}


def end(j: int) -> dict:
    return {"Event": "SparkListenerJobEnd", "Job ID": j}


def test_an_executor_registering_after_the_last_job_counts_for_that_barrier(tmp_path):
    """What CI saw: superstep 4's last job ended on 1 executor, the one asked for at barrier 3
    registered before barrier 4 counted 2 -- and before superstep 5 started. The record (2) is
    right; the log has to be read over the barrier's window, not at the job's end."""
    log = _write(tmp_path / "log", [
        added("1"),
        *job(0, 4, [0]), task(0, "1"), end(0),
        added("2"),                      # between superstep 4's last job and superstep 5
        {"Event": "SparkListenerJobStart", "Job ID": 1, "Stage IDs": [1],
         "Properties": {"spark.jobGroup.id": "relayout"}},  # a barrier job is not a superstep
        end(1),
        *job(2, 5, [2]), task(2, "1"), task(2, "2"), end(2),
    ])
    seen = executors_by_superstep(log)
    assert seen[4] == {"start": 1, "end": 2, "tasks": 1}
    assert consistent(2, seen[4]) and consistent(1, seen[4])
    assert seen[5] == {"start": 2, "end": 2, "tasks": 2}
    # an executor that joins only once the next superstep runs does not count for the barrier before
    assert not consistent(3, seen[4])


def test_a_record_claiming_more_executors_than_ran_or_lived_is_caught(tmp_path):
    log = _write(tmp_path / "log", [
        added("1"), added("2"),
        *job(0, 1, [0, 1]), task(0, "1"), task(1, "2"), end(0),
        removed("2"),                    # released at barrier 1
        *job(1, 2, [2]), task(2, "1"), end(1),
        *job(2, 3, [3]), added("3"),     # joins during superstep 3: too late for barrier 2
        task(3, "1"), end(2),
    ])
    seen = executors_by_superstep(log)
    assert consistent(2, seen[1]) and not consistent(1, seen[1])   # two ran its tasks
    assert consistent(1, seen[2]) and not consistent(2, seen[2])   # only one alive at barrier 2
    assert seen[3]["start"] == 1 and consistent(2, seen[3])
    # jobs before first_job (an earlier run in the same application) are skipped
    assert set(executors_by_superstep(log, first_job=1)) == {2, 3}
