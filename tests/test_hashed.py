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


def test_a_scale_in_that_divides_the_count_moves_no_row_through_a_shuffle(spark):
    """4 -> 2 partitions by index (partition p to p % 2): every row lands where a shuffle would
    have put it, with no exchange in the plan; counts that do not divide are shuffled."""
    from iterflow.loop.hashed import by_key, hashed_into

    df = spark.range(0, 3000, numPartitions=3).select(F.col("id"), (F.col("id") % 7).alias("v"))
    four = by_key(df, 4, "id").localCheckpoint()
    assert hashed_into(four, ("id",)) == 4 and hashed_into(df, ("id",)) is None
    two = by_key(four, 2, "id")
    assert shuffles(two) == 0
    assert partitioning(two).startswith("hashpartitioning(id") and two.rdd.getNumPartitions() == 2
    placed = two.select("id", "v", F.spark_partition_id().alias("p"), F.expr("pmod(hash(id), 2)").alias("want"))
    rows = placed.collect()
    assert sorted((r.id, r.v) for r in rows) == sorted(map(tuple, df.collect()))
    assert all(r.p == r.want for r in rows)
    # joined with a frame its key's exchange made at 2 partitions: no exchange of either side
    heard, before = df.groupBy("id").agg(F.min("v").alias("m")), spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    try:
        assert shuffles(two.join(heard.hint("shuffle_hash"), "id")) == 1  # the aggregation's own
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert shuffles(by_key(four, 3, "id")) == 1 and shuffles(by_key(df, 2, "id")) == 1
    assert shuffles(by_key(four, 2, "v")) == 1  # hash-partitioned, but by another key


@pytest.mark.parametrize("start,at", [(4, 1), (4, 2)])
def test_wcc_after_relayout_plans_as_a_run_started_there(spark, tmp_path, start, at):
    """A scale-in re-lays WCC's state out at fewer partitions: its supersteps must shuffle no
    more than those of a run started there (before: at one partition the labels were
    re-shuffled every superstep -- one stage more, tail supersteps 1.3-1.6x as long), and
    where the new count divides the old the relayout itself shuffles nothing."""
    from algorithms import WeaklyConnectedComponents
    from iterflow.inputs.generate import write_rmat
    from iterflow.inputs.graphio import load_graph
    from iterflow.loop.spark_engine import SparkEngine

    before = spark.conf.get("spark.sql.shuffle.partitions")
    g = load_graph(spark, str(write_rmat(tmp_path / "g.txt", 10, 6000, seed=5)), "edgelist")
    engine = SparkEngine(spark)

    relaid: list[int] = []

    def superstep_plan(start: int, at: int):
        spark.conf.set("spark.sql.shuffle.partitions", str(start))
        prog = WeaklyConnectedComponents(g)
        prog.partitions = start
        state, rows = engine.barrier(prog.init(spark))
        prog.delta(None, state, rows)
        if at != start:
            spark.conf.set("spark.sql.shuffle.partitions", str(at))
            moved = prog.relayout(at, state)
            relaid.append(shuffles(moved.frames["labels"]))
            state, _ = engine.barrier(moved)
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
        (s1, rows1, _), (s41, rows41, parts41) = superstep_plan(at, at), superstep_plan(start, at)
        assert all(p.startswith(f"hashpartitioning(id") and p.endswith(f", {at})") for p in parts41.values()), parts41
        assert s41 == s1 == 1, (s41, s1)  # the messages' aggregation only
        assert rows41 == rows1
        assert relaid == [0], relaid
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
