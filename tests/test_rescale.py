"""Executors really change at barriers: checked from outside the framework, in Spark's event log."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from iterflow.reconfig import Reconfiguration

pytestmark = pytest.mark.cluster


class Scripted:
    """Scale to 1 executor at barrier 1 and back to 2 at barrier 3."""

    name = "scripted"
    plan = {1: 1, 3: 2}

    def decide(self, history, model=None):
        i = history[-1]["superstep"]
        if i in self.plan:
            return Reconfiguration(reason=f"test: {self.plan[i]} executors", executors=self.plan[i])
        return Reconfiguration.none("test: keep")


def event_lines(log: Path) -> list[str]:
    """Lines of an event log: a file, or Spark 4's rolling ``eventlog_v2_<app>/events_<n>_...``."""
    if log.is_file():
        return log.read_text().splitlines()
    parts = sorted((p for p in log.iterdir() if p.name.startswith("events_")),
                   key=lambda p: int(p.name.split("_")[1]))
    return [ln for p in parts for ln in p.read_text().splitlines()]


def executors_at_superstep_start(log: Path, app_start_job: int) -> dict[int, int]:
    """Executors alive when the first job of each group superstep-<i> was submitted."""
    alive: set[str] = set()
    out: dict[int, int] = {}
    for line in event_lines(log):
        ev = json.loads(line)
        kind = ev["Event"]
        if kind == "SparkListenerExecutorAdded":
            alive.add(ev["Executor ID"])
        elif kind == "SparkListenerExecutorRemoved":
            alive.discard(ev["Executor ID"])
        elif kind == "SparkListenerJobStart" and ev["Job ID"] >= app_start_job:
            group = (ev.get("Properties") or {}).get("spark.jobGroup.id", "")
            if group.startswith("superstep-"):
                out.setdefault(int(group.split("-")[1]), len(alive))
    return out


def test_rescale_is_in_force_in_spark_event_log(spark, tmp_path):
    from algorithms import PageRank
    from iterflow.driver import IterationDriver
    from iterflow.generate import write_rmat
    from iterflow.graphio import load_graph
    from tests.test_algorithms import scipy_pagerank

    sc = spark.sparkContext
    first_job = int(sc._jsc.sc().dagScheduler().numTotalJobs())
    g = load_graph(spark, str(write_rmat(tmp_path / "g.txt", 11, 15_000, seed=21)), "edgelist", partitions=4)
    res = IterationDriver(spark, Scripted(), partitions=4).run(PageRank(g, 0.85, max_iterations=5))
    t = res.supersteps
    assert list(t["executors"]) == [2, 1, 1, 2, 2]
    assert list(t["decision"]) == ["down", "same", "up", "same", "same"]
    assert (t["executors_active"] == t["executors_requested"]).all()

    logs = [p for p in Path(spark.conf.get("iterflow.test.eventlog")).iterdir() if sc.applicationId in p.name]
    assert logs, "no event log for this application"
    seen = executors_at_superstep_start(logs[0], first_job)
    assert [seen[i] for i in range(1, 6)] == [2, 1, 1, 2, 2]

    # the answer is unaffected by losing and gaining executors mid-run
    got = res.output.toPandas().set_index("id")["value"]
    e = g.edges.toPandas()[["src", "dst"]].to_numpy()
    ref = scipy_pagerank(e, np.sort(g.vertices.toPandas()["id"].to_numpy()), 0.85, 5)
    assert ((got.loc[ref.index] - ref).abs() / ref).max() <= 1e-6
