"""Frames keyed into one partition keep the partitioning joins need (iterflow.loop.hashed)."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

pytestmark = pytest.mark.cluster


def shuffles(df) -> int:
    """Shuffle exchanges the plan of ``df`` runs (cached inputs' own plans not counted)."""
    def walk(node) -> int:
        kids = node.children()
        return (node.nodeName() == "Exchange" and "Broadcast" not in node.getClass().getName()) + \
            sum(walk(kids.apply(i)) for i in range(kids.size()))
    return walk(df._jdf.queryExecution().executedPlan())


def partitioning(df) -> str:
    return df._jdf.queryExecution().executedPlan().outputPartitioning().toString()


def test_one_partition_is_reported_hash_partitioned_and_keeps_every_row(spark):
    from iterflow.loop.hashed import by_key

    df = spark.range(0, 500, numPartitions=3).select(F.col("id"), (F.col("id") % 7).alias("v"))
    one = by_key(df, 1, "id")
    assert partitioning(one).startswith("hashpartitioning(id")
    assert one.rdd.getNumPartitions() == 1
    assert sorted(map(tuple, one.collect())) == sorted(map(tuple, df.collect()))
    # Spark's own repartition(1, key) says SinglePartition: the case by_key exists for
    assert partitioning(df.repartition(1, "id")) == "SinglePartition"
    assert partitioning(by_key(df, 3, "id")).startswith("hashpartitioning(id")


def test_wcc_after_relayout_to_one_partition_plans_as_a_run_started_there(spark, tmp_path):
    """A scale-in to one core re-lays WCC's state out at one partition: its supersteps must
    shuffle no more than those of a run started at one (before: the labels were re-shuffled
    every superstep -- one stage more, tail supersteps 1.3-1.6x as long)."""
    from algorithms import WeaklyConnectedComponents
    from iterflow.inputs.generate import write_rmat
    from iterflow.inputs.graphio import load_graph
    from iterflow.loop.spark_engine import SparkEngine

    before = spark.conf.get("spark.sql.shuffle.partitions")
    g = load_graph(spark, str(write_rmat(tmp_path / "g.txt", 10, 6000, seed=5)), "edgelist")
    engine = SparkEngine(spark)

    def superstep_plan(start: int, at: int):
        spark.conf.set("spark.sql.shuffle.partitions", str(start))
        prog = WeaklyConnectedComponents(g)
        prog.partitions = start
        state, rows = engine.barrier(prog.init(spark))
        prog.delta(None, state, rows)
        if at != start:
            spark.conf.set("spark.sql.shuffle.partitions", str(at))
            state, _ = engine.barrier(prog.relayout(at, state))
        for i in (1, 2):
            new, rows = engine.barrier(prog.step(state, i))
            prog.delta(state, new, rows)
            state = new
        plan = prog.step(state, 3).frames["active"]
        # measured before the next program: the two cache the same adjacency plan, one entry
        # in Spark's cache manager, which the relayout's re-cache frees
        seen = shuffles(plan), sorted(map(tuple, plan.collect())), {k: partitioning(v) for k, v in state.frames.items()}
        prog.release()
        return seen

    try:
        (s1, rows1, _), (s41, rows41, parts41) = superstep_plan(1, 1), superstep_plan(4, 1)
        assert all(p.startswith("hashpartitioning(id") for p in parts41.values()), parts41
        assert s41 == s1 == 1, (s41, s1)  # the messages' aggregation only
        assert rows41 == rows1
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
