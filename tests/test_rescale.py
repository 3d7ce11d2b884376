"""Executors really change at barriers: checked from outside the framework, in Spark's event log."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from iterflow.observe.eventlog import executors_at_superstep_start, find_log
from iterflow.loop.reconfig import Reconfiguration
from iterflow.policies import PolicyBase

pytestmark = pytest.mark.cluster


class Scripted(PolicyBase):
    """Scale to 1 executor at barrier 1 and back to 2 at barrier 3."""

    name = "scripted"
    plan = {1: 1, 3: 2}

    def decide(self, history, model=None, *, layout=None, plan=None):
        i = history[-1].superstep
        if i in self.plan:
            return Reconfiguration(reason=f"test: {self.plan[i]} executors", executors=self.plan[i])
        return Reconfiguration.none("test: keep")


def test_rescale_is_in_force_in_spark_event_log(spark, tmp_path):
    from algorithms import PageRank
    from iterflow.loop.driver import IterationDriver
    from iterflow.inputs.generate import write_rmat
    from iterflow.inputs.graphio import load_graph
    from tests.test_algorithms import scipy_pagerank

    sc = spark.sparkContext
    first_job = int(sc._jsc.sc().dagScheduler().numTotalJobs())
    g = load_graph(spark, str(write_rmat(tmp_path / "g.txt", 11, 15_000, seed=21)), "edgelist", partitions=2)
    driver = IterationDriver(spark, Scripted(), partitions=2)
    res = driver.run(PageRank(g, 0.85, max_iterations=5))
    t = res.supersteps
    assert list(t["executors"]) == [2, 1, 1, 2, 2]
    assert list(t["decision"]) == ["down", "same", "up", "same", "same"]
    assert (t["executors_active"] == t["executors_requested"]).all()
    # the partition count never drops below the starting 2 and grows to 2 per core once the
    # cores outgrow it: 2 on 2 cores (as started), 2 on 1, then 4 on 2 after the scale-out
    assert list(t["partitions"]) == [2, 2, 2, 4, 4]
    # the first superstep at a new size is cold (fresh JVMs, remote blocks): not the new
    # size's steady state, so the model learns from supersteps 3 and 5 only
    assert len(driver.model.curve.X_) == 2 and len(driver.model.replay.profiles) == 2
    assert t.loc[t["superstep"] == 4, "cold_seconds"].notna().all()

    seen = executors_at_superstep_start(find_log(Path(spark.conf.get("iterflow.test.eventlog")),
                                                 sc.applicationId), first_job)
    assert [seen[i] for i in range(1, 6)] == [2, 1, 1, 2, 2]

    # the answer is unaffected by losing and gaining executors mid-run
    got = res.output.toPandas().set_index("id")["value"]
    e = g.edges.toPandas()[["src", "dst"]].to_numpy()
    ref = scipy_pagerank(e, np.sort(g.vertices.toPandas()["id"].to_numpy()), 0.85, 5)
    assert ((got.loc[ref.index] - ref).abs() / ref).max() <= 1e-6
