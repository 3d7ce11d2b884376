"""Barrier statistics against Spark's numbers for a known job, and their persistence."""
from __future__ import annotations

import json

import pytest

from iterflow.observe.sparkinfo import executor_snapshot
from iterflow.observe.stats import NUMERIC_FIELDS, StatsCollector

pytestmark = pytest.mark.cluster


def test_totals_match_a_known_job(spark):
    sc = spark.sparkContext
    collector = StatsCollector(sc)  # created before the job: later jobs only are attributed
    sc.setJobGroup("superstep-9001", "known job")
    n = 200_000
    spark.range(0, n, numPartitions=4).repartition(4).selectExpr("id % 7 as k").groupBy("k").count().collect()
    sc.setJobGroup("other", "not ours")
    spark.range(10).count()  # must not be attributed to superstep 9001
    stats = collector.collect(9001, 5.0, executor_snapshot(sc))
    # repartition shuffles every row once; the groupBy shuffles at most 7 keys per partition
    assert n <= stats.shuffle_write_records <= n + 4 * 7
    assert stats.shuffle_read_records == stats.shuffle_write_records
    assert stats.shuffle_read_bytes == stats.shuffle_local_bytes + stats.shuffle_remote_bytes > 0
    assert stats.jobs >= 1 and stats.tasks >= 8
    assert 0 < stats.executor_cpu_seconds and 0 < stats.executor_run_seconds
    assert 0 < stats.utilization <= 1
    assert stats.task_seconds_min <= stats.task_seconds_median <= stats.task_seconds_p90 <= stats.task_seconds_max
    assert stats.skew >= 1 and stats.skew_cpu >= 1
    per_partition = json.loads(stats.partition_records)
    assert len(per_partition) == 4 and sum(per_partition) > 0
    # Spark's own numbers for the same stages, summed independently from the REST API
    from iterflow.observe.sparkinfo import rest_get

    tracker = sc.statusTracker()
    ids = {s for j in tracker.getJobIdsForGroup("superstep-9001") for s in tracker.getJobInfo(j).stageIds}
    spark_total = sum(s["shuffleWriteRecords"] for i in ids for s in rest_get(sc, f"stages/{i}")
                      if s["status"] == "COMPLETE")
    assert stats.shuffle_write_records == spark_total


def test_listener_and_status_store_give_the_same_figures(spark):
    """iterflow's JVM listener (pushed events, one call) against Spark's status store (pulled,
    one call a stage): the same sums, task figures and state bytes for the same jobs."""
    sc = spark.sparkContext
    pushed, pulled = StatsCollector(sc), StatsCollector(sc, use_listener=False)
    assert pushed.events is not None, "javac is on this machine: the listener must be built and attached"
    assert pulled.events is None
    sc.setJobGroup("superstep-9002", "known job")
    df = spark.range(0, 50_000, numPartitions=4).repartition(4).selectExpr("id % 11 as k", "id").localCheckpoint()
    df.groupBy("k").count().collect()
    from iterflow.loop.program import State
    from iterflow.observe.stats import state_rdd_ids

    state = State({"df": df})
    a = pushed.collect(9002, 3.0, executor_snapshot(sc), state)
    b = pulled.collect(9002, 3.0, executor_snapshot(sc), state)
    assert state_rdd_ids(state.frames) and a.state_bytes == b.state_bytes > 0
    for f in NUMERIC_FIELDS:
        if f not in ("stats_seconds", "executors_lost"):
            assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-9, abs=1e-9), f
    assert a.partition_records == b.partition_records and a.partition_seconds == b.partition_seconds
    stages = json.loads(a.stage_tasks)
    assert len(stages) == a.stages and sum(len(s[3]) for s in stages) == a.tasks
    assert [s[1] for s in stages] == sorted(s[1] for s in stages), "in submission order"
    assert b.stage_tasks == "[]"  # the store path does not replay


def test_driver_records_statistics_predictions_and_overhead(spark):
    from algorithms import PageRank
    from iterflow.loop.driver import IterationDriver
    from iterflow.inputs.generate import write_rmat
    from iterflow.inputs.graphio import load_graph
    import tempfile, os

    path = write_rmat(os.path.join(tempfile.mkdtemp(), "g.txt"), 12, 30_000, seed=9)
    g = load_graph(spark, str(path), "edgelist", partitions=4)
    res = IterationDriver(spark, partitions=4).run(PageRank(g, max_iterations=6))
    t = res.supersteps
    assert set(NUMERIC_FIELDS) <= set(t.columns)
    assert {"barrier_seconds", "predicted_seconds", "stats_seconds"} <= set(t.columns)
    assert (t["shuffle_write_records"] > 0).all()
    assert (t["state_bytes"] > 0).all(), "state size after the barrier is measured"
    assert t["predicted_seconds"].iloc[:2].isna().all() and t["predicted_seconds"].iloc[2:].notna().all()
    print("barrier overhead median %.3fs" % t["barrier_seconds"].median())


def test_barrier_row_counts_come_from_the_checkpoint_job(spark):
    """One job per frame at the barrier: the row count is the checkpoint job's SQL metric, equal
    to a separate count for every plan shape (and counted where the plan does not say)."""
    from pyspark.sql import functions as F

    from iterflow.loop.program import State
    from iterflow.loop.spark_engine import SparkEngine

    engine = SparkEngine(spark)
    assert engine.events is not None
    v = spark.range(0, 3000, numPartitions=3)
    e = spark.range(0, 9000, numPartitions=3).selectExpr("id % 2000 as src", "(id * 7) % 2500 as dst")
    shapes = {
        "join": v.join(e.groupBy(F.col("dst").alias("id")).count(), "id", "left").select("id", "count"),
        "filter": v.where("id % 3 = 0").select((F.col("id") * 2).alias("x")),
        "union": v.union(v.where("id < 10")),
        "aggregate": e.groupBy("src").agg(F.sum("dst").alias("s")),
    }
    sc = spark.sparkContext
    before = sc._jsc.sc().dagScheduler().numTotalJobs()
    state, rows = engine.barrier(State(dict(shapes)))
    jobs = sc._jsc.sc().dagScheduler().numTotalJobs() - before
    expected = {name: df.count() for name, df in shapes.items()}
    assert rows == expected
    assert {name: df.count() for name, df in state.frames.items()} == expected
    assert engine.events.output_rows(shapes["union"]) == -1  # no row metric at its top: counted
    assert jobs <= len(shapes) + 1 + 2, f"{jobs} jobs for {len(shapes)} frames"  # +1 union count, +2 broadcasts
