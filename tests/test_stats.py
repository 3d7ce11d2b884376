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
