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

A scale-in that divides the partition count (4 -> 2, 2 -> 1) needs no shuffle either: partition
``p`` of ``m`` holds the rows with ``pmod(hash, m) == p``, so the partitions with ``p % n == i``
together hold exactly those with ``pmod(hash, n) == i`` when ``n`` divides ``m``. :func:`by_key`
coalesces them so (a JVM coalescer of iterflow's own, :mod:`iterflow.jvm`) and reports the hash
partitioning; other changes of count shuffle, as ``repartition`` does.
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

#: Whether :func:`by_key` coalesces a frame hash-partitioned into a multiple of the count asked
#: for by partition index instead of shuffling it (``experiments/scale_in_relayout.py`` measures
#: both).
NARROW = True


def by_key(df: DataFrame, partitions: int, *keys: str) -> DataFrame:
    """``df`` hash-partitioned by ``keys`` into ``partitions`` (lazy), reported as such to the
    planner also at one partition (see the module docstring). Where ``df`` is already
    hash-partitioned by ``keys`` into a multiple of ``partitions`` (a scale-in from 4 to 2 or 1,
    from 2 to 1), its partitions are coalesced by index (:func:`without_shuffle`)."""
    if not keys:
        return df.repartition(partitions)
    fewer = without_shuffle(df, partitions, *keys)
    if fewer is not None:
        return fewer
    if partitions > 1 or ONE_PARTITION != "shuffle":
        return df.repartition(partitions, *keys)
    return _one_partition(df.repartition(1), keys) or df.repartition(1, *keys)


def without_shuffle(df: DataFrame, partitions: int, *keys: str) -> DataFrame | None:
    """:func:`by_key` of ``df`` where it reads ``df``'s partitions as they are, fewer of them,
    without a shuffle -- a count dividing the one ``df`` is hash-partitioned by ``keys`` into
    (by index, :func:`narrowed`), or one partition (coalesced); without ``keys``, Spark's
    coalescing of a count that divides -- else ``None``."""
    if not keys:
        try:
            before = int(df._jdf.queryExecution().executedPlan().outputPartitioning().numPartitions())
        except Exception:  # noqa: BLE001 - internals of another Spark: not known to be narrow
            return None
        return df.coalesce(partitions) if 1 <= partitions < before and before % partitions == 0 else None
    if partitions == 1:
        return _one_partition(df.coalesce(1), keys) if ONE_PARTITION == "coalesce" else None
    m = hashed_into(df, keys) if NARROW else None
    if m is not None and m > partitions and m % partitions == 0:
        return narrowed(df, partitions, keys)
    return None


def _one_partition(one: DataFrame, keys: tuple[str, ...]) -> DataFrame | None:
    """``one`` (one partition) reported hash-partitioned by ``keys``; ``None`` where another
    Spark's internals refuse it."""
    try:
        return _reported_hashed(one, one._jdf.queryExecution().toRdd(), keys, 1)
    except Exception as exc:  # noqa: BLE001 - another Spark's internals: one partition, reported as Spark does
        log.debug("one partition not reported hash-partitioned: %s", str(exc).splitlines()[0][:200])
        return None


def hashed_into(df: DataFrame, keys: tuple[str, ...]) -> int | None:
    """The partition count ``df``'s plan reports it hash-partitioned by exactly ``keys`` into
    (Spark's ``pmod(murmur3(keys, 42), m)``), else ``None``."""
    try:
        plan = df._jdf.queryExecution().executedPlan()
        part = plan.outputPartitioning()
        if part.getClass().getSimpleName() != "HashPartitioning":
            return None
        exprs, out = part.expressions(), plan.output()
        ids = {out.apply(i).name(): out.apply(i).exprId() for i in range(out.size())}
        if exprs.size() != len(keys):
            return None
        for i, k in enumerate(keys):  # the key columns themselves, not others of the same name
            e = exprs.apply(i)
            if e.name() != k or k not in ids or not e.exprId().equals(ids[k]):
                return None
        return int(part.numPartitions())
    except Exception:  # noqa: BLE001 - a key that is no plain column, other internals: unknown
        return None


def narrowed(df: DataFrame, partitions: int, keys: tuple[str, ...]) -> DataFrame | None:
    """``df`` (hash-partitioned by ``keys`` into ``k * partitions``) with partition ``p`` read by
    task ``p % partitions`` (iterflow's ``IndexCoalescer``): ``pmod(h, k*n) % n == pmod(h, n)``,
    so the result is hash-partitioned into ``partitions``, and reported so. ``None`` where the
    coalescer's class cannot be loaded (no ``javac``; the caller shuffles)."""
    from iterflow.jvm import load_class, new

    sc = df.sparkSession.sparkContext
    cls = load_class(sc, "IndexCoalescer", executors=True)
    if cls is None:
        return None
    try:
        rows = df._jdf.queryExecution().toRdd()
        fewer = rows.coalesce(partitions, False, sc._jvm.scala.Option.apply(new(sc, cls)), None)
        return _reported_hashed(df, fewer, keys, partitions)
    except Exception as exc:  # noqa: BLE001 - another Spark's internals: the caller shuffles
        log.warning("index coalescing unavailable (shuffling instead): %s", str(exc).splitlines()[0][:200])
        return None


def _reported_hashed(df: DataFrame, rows: object, keys: tuple[str, ...], partitions: int) -> DataFrame:
    """A plan leaf over ``rows`` (``df``'s internal rows, ``partitions`` of them, hash-partitioned
    by ``keys``) that reports ``hashpartitioning(keys, partitions)``."""
    spark = df.sparkSession
    jvm, js = spark.sparkContext._jvm, spark._jsparkSession
    leaf = js.internalCreateDataFrame(rows, df._jdf.schema(), False)
    plan = leaf.queryExecution().analyzed()  # a LogicalRDD over the rows, reporting no partitioning
    out = plan.output()
    attrs = {out.apply(i).name(): out.apply(i) for i in range(out.size())}
    exprs = jvm.java.util.ArrayList()
    for k in keys:
        exprs.add(attrs[k])
    hashed = jvm.org.apache.spark.sql.catalyst.plans.physical.HashPartitioning(
        jvm.scala.jdk.javaapi.CollectionConverters.asScala(exprs).toSeq(), partitions)
    none = jvm.scala.Option.empty()
    lean = plan.copy(out, plan.rdd(), hashed, plan.outputOrdering(), plan.isStreaming(), plan.stream(), js, none, none)
    return DataFrame(jvm.org.apache.spark.sql.classic.Dataset.ofRows(js, lean), spark)
