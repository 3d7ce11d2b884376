"""Frames hash-partitioned by key, as Spark's planner must see them for joins without exchange.

A program keeps its cached inputs and its state hash-partitioned by vertex (or point) into the
loop's partition count, so a superstep's joins read co-partitioned sides. ``df.repartition(n,
key)`` does that -- except at ``n == 1``: Spark 4.0 then reports the result as
``SinglePartition``, and a join of a ``SinglePartition`` frame with a ``hashpartitioning(key,
1)`` one (what every aggregation or join exchange at one partition yields) is planned with an
exchange of *both* sides. A run that scaled in to one core (relayout by ``repartition(1, id)``)
then shuffled every label or vertex id every superstep: WCC's tail supersteps after a release
to one executor ran one stage more than a run started there and took 1.3-1.6x as long (stop 45,
emulated cluster); PageRank at one partition exchanged all vertex ids every superstep.

:func:`by_key` gives a frame at one partition the partitioning a one-partition exchange would
have given it: the one partition holds every row, so ``hashpartitioning(keys, 1)`` is true of it.
"""
from __future__ import annotations

import logging

from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

#: How :func:`by_key` makes one partition: ``"coalesce"`` (the rows of every partition read by
#: one task, no shuffle: at one core a shuffle only writes and reads back what one task holds),
#: ``"shuffle"`` (``repartition(1)``), both reported hash-partitioned; ``"spark"``: Spark's own
#: ``repartition(1, keys)``, reported ``SinglePartition``. ``experiments/one_partition.py``
#: measures the three side by side.
ONE_PARTITION = "coalesce"


def by_key(df: DataFrame, partitions: int, *keys: str) -> DataFrame:
    """``df`` hash-partitioned by ``keys`` into ``partitions`` (lazy), reported as such to the
    planner also at one partition (see the module docstring)."""
    if partitions > 1 or not keys or ONE_PARTITION == "spark":
        return df.repartition(partitions, *keys) if keys else df.repartition(partitions)
    try:
        return _reported_hashed(df.coalesce(1) if ONE_PARTITION == "coalesce" else df.repartition(1), keys)
    except Exception as exc:  # noqa: BLE001 - another Spark's internals: one partition, reported as Spark does
        log.debug("one partition not reported hash-partitioned: %s", str(exc).splitlines()[0][:200])
        return df.repartition(1, *keys)


def _reported_hashed(one: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """``one`` (one partition) as a plan leaf over its rows that reports ``hashpartitioning(keys, 1)``."""
    spark = one.sparkSession
    jvm, js = spark.sparkContext._jvm, spark._jsparkSession
    leaf = js.internalCreateDataFrame(one._jdf.queryExecution().toRdd(), one._jdf.schema(), False)
    plan = leaf.queryExecution().analyzed()  # a LogicalRDD over the rows, reporting no partitioning
    out = plan.output()
    attrs = {out.apply(i).name(): out.apply(i) for i in range(out.size())}
    exprs = jvm.java.util.ArrayList()
    for k in keys:
        exprs.add(attrs[k])
    hashed = jvm.org.apache.spark.sql.catalyst.plans.physical.HashPartitioning(
        jvm.scala.jdk.javaapi.CollectionConverters.asScala(exprs).toSeq(), 1)
    none = jvm.scala.Option.empty()
    lean = plan.copy(out, plan.rdd(), hashed, plan.outputOrdering(), plan.isStreaming(), plan.stream(), js, none, none)
    return DataFrame(jvm.org.apache.spark.sql.classic.Dataset.ofRows(js, lean), spark)
