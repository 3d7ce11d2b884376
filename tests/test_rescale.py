"""Executors really change at barriers: checked from outside the framework, in Spark's event log."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from iterflow.observe.eventlog import (consistent, event_lines, executors_at_superstep_start, executors_by_superstep,
                                      find_log)
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
    driver = IterationDriver(spark, Scripted(), partitions=2, wait_for_executors=True)
    res = driver.run(PageRank(g, 0.85, max_iterations=5))
    t = res.supersteps
    assert list(t["executors"]) == [2, 1, 1, 2, 2]
    assert list(t["decision"]) == ["down", "same", "up", "same", "same"]
    # a release loses no state: nothing was recovered (stop 38 tried going on from a cache the
    # copy's job filled, and every superstep after a release was rewound -- to the right answer)
    assert all(r.recovered is None for r in res.records), [r.recovered for r in res.records]
    assert (t["executors_active"] == t["executors_requested"]).all()
    # the partition count follows the cores both ways, one task a core: 2 on 2 cores (as
    # started), 1 on 1, then 2 on 2 after the scale-out
    assert list(t["partitions"]) == [2, 1, 1, 2, 2]
    # the first superstep at a new size is cold (fresh JVMs, remote blocks): not the new
    # size's steady state, so the model learns from supersteps 3 and 5 only
    assert len(driver.model.curve.X_) == 2 and len(driver.model.replay.profiles) == 2
    assert t.loc[t["superstep"] == 4, "cold_seconds"].notna().all()

    log = find_log(Path(spark.conf.get("iterflow.test.eventlog")), sc.applicationId)
    seen = executors_at_superstep_start(log, first_job)
    assert [seen[i] for i in range(1, 6)] == [2, 1, 1, 2, 2]
    # the release to one executor re-laid nothing out at its barrier (the inputs stay views of
    # their cached blocks, the state one of its copy); the scale-out rebuilt them at 2
    groups = [(e["Job ID"], (e.get("Properties") or {}).get("spark.jobGroup.id"))
              for e in map(json.loads, event_lines(log)) if e["Event"] == "SparkListenerJobStart"]
    relaid = {g for j, g in groups if j >= first_job and g and g.startswith("relayout-")}
    assert relaid == {"relayout-3"}, relaid

    # the answer is unaffected by losing and gaining executors mid-run
    got = res.output.toPandas().set_index("id")["value"]
    e = g.edges.toPandas()[["src", "dst"]].to_numpy()
    ref = scipy_pagerank(e, np.sort(g.vertices.toPandas()["id"].to_numpy()), 0.85, 5)
    assert ((got.loc[ref.index] - ref).abs() / ref).max() <= 1e-6


class ScaleOutAt(PolicyBase):
    """Scale to 1 executor at barrier 1 and back to 2 at barrier 3 (once)."""

    name = "scripted"

    def decide(self, history, model=None, *, layout=None, plan=None):
        i = history[-1].superstep
        n = {1: 1, 3: 2}.get(i)
        return Reconfiguration(reason=f"test: {n}", executors=n) if n else Reconfiguration.none("test: keep")


def test_a_scale_out_that_does_not_wait_is_in_force_once_executors_register(spark, tmp_path):
    """The default: the barrier asks and goes on; executors join while supersteps run."""
    import time

    from algorithms import PageRank
    from iterflow.loop.driver import IterationDriver
    from iterflow.inputs.generate import write_rmat
    from iterflow.inputs.graphio import load_graph
    from tests.test_algorithms import scipy_pagerank

    sc = spark.sparkContext
    first_job = int(sc._jsc.sc().dagScheduler().numTotalJobs())
    g = load_graph(spark, str(write_rmat(tmp_path / "g.txt", 11, 15_000, seed=22)), "edgelist", partitions=2)

    def slow_while_pending(rec):  # supersteps this small end before a JVM starts: give it time
        if rec.actuated is not None and rec.actuated.executors_pending:
            time.sleep(1.0)

    driver = IterationDriver(spark, ScaleOutAt(), partitions=2, on_superstep=slow_while_pending)
    res = driver.run(PageRank(g, 0.85, max_iterations=12))
    t = res.supersteps
    r3 = res.records[2]
    assert r3.decided.decision == "up" and r3.actuated.executors_requested == 2
    # the barrier did not wait: either the executor was still to come, or it was already there
    assert r3.actuated.executors_pending == 1 or r3.actuated.executors_active == 2
    # it came within the run and was given work; the last records have nothing pending
    assert t["executors"].iloc[-1] == 2 and not res.records[-1].actuated.executors_pending
    seen = executors_by_superstep(find_log(Path(spark.conf.get("iterflow.test.eventlog")), sc.applicationId),
                                  first_job)
    # the scale-in at barrier 1 did not wait for the executor's JVM to exit either; the state
    # followed the cores (2 -> 1 partition), the relayout timed apart
    r1 = res.records[0]
    assert r1.decided.decision == "down" and r1.actuated.executors_active == 1
    assert r1.actuated.partitions_after == 1 and r1.actuated.relayout_seconds > 0
    # the check from outside: no more executors ran a superstep's tasks than its record says
    # (the removed one ran none of superstep 2's, though it may still have been exiting), and
    # at least that many were alive as it ended
    assert all(consistent(int(e), seen[i]) for i, e in zip(range(1, 13), t["executors"])), (seen, list(t["executors"]))
    assert seen[12]["tasks"] == 2 and seen[2]["tasks"] == 1
    got = res.output.toPandas().set_index("id")["value"]
    e = g.edges.toPandas()[["src", "dst"]].to_numpy()
    ref = scipy_pagerank(e, np.sort(g.vertices.toPandas()["id"].to_numpy()), 0.85, 12)
    assert ((got.loc[ref.index] - ref).abs() / ref).max() <= 1e-6


class OutThenBack(PolicyBase):
    """1 executor at barrier 1; 2 asked at barrier 3 and withdrawn at barrier 4 (1 again)."""

    name = "scripted"

    def decide(self, history, model=None, *, layout=None, plan=None):
        n = {1: 1, 3: 2, 4: 1}.get(history[-1].superstep)
        return Reconfiguration(reason=f"test: {n}", executors=n) if n else Reconfiguration.none("test: keep")


def test_a_withdrawn_scale_out_ends_at_the_smaller_size_on_the_real_cluster(spark, tmp_path):
    """A scale-in asked while a scale-out's executor is still starting lowers the request; the
    executor the standalone master launched anyway is removed when it registers. Checked in
    Spark's event log: the run's last supersteps ran on the one executor the policy asked for."""
    import time

    from algorithms import PageRank
    from iterflow.loop.driver import IterationDriver
    from iterflow.inputs.generate import write_rmat
    from iterflow.inputs.graphio import load_graph

    sc = spark.sparkContext
    first_job = int(sc._jsc.sc().dagScheduler().numTotalJobs())
    g = load_graph(spark, str(write_rmat(tmp_path / "g.txt", 11, 15_000, seed=23)), "edgelist", partitions=2)
    reconf: list = []

    def slow_while_withdrawn(rec):  # supersteps this small end before a JVM starts: give it time
        if rec.superstep >= 4 and len(reconf) < 8:
            reconf.append(rec.superstep)
            time.sleep(1.0)

    driver = IterationDriver(spark, OutThenBack(), partitions=2, on_superstep=slow_while_withdrawn)
    res = driver.run(PageRank(g, 0.85, max_iterations=14))
    r = {x.superstep: x for x in res.records}
    assert r[3].actuated.executors_requested == 2
    if not r[3].actuated.executors_pending:
        pytest.skip("the executor registered within one superstep: nothing was left to withdraw")
    assert r[4].actuated.executors_requested == 1 and not r[4].actuated.executors_pending
    assert res.records[-1].executors == 1 and res.records[-2].executors == 1
    late = [x for x in res.records if "withdrawn" in (x.actuated.actuation_note or "")]
    came = [x.superstep for x in res.records if x.superstep > 4 and x.executors == 2]
    # the master launched it anyway (a lowered request does not stop a starting JVM): the
    # barrier that saw it removed it and said why
    assert [x.superstep for x in late] == came[:1] and len(came) <= 1, [(x.superstep, x.executors) for x in res.records]
    seen = executors_by_superstep(find_log(Path(spark.conf.get("iterflow.test.eventlog")), sc.applicationId),
                                  first_job)
    # whether or not the master launched it, no superstep after the last removal used 2 executors
    after = (late[-1].superstep if late else 4) + 1
    assert all(seen[i]["tasks"] == 1 for i in range(after + 1, 15)), seen
