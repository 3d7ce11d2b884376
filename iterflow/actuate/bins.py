"""The Spark side of a :class:`~iterflow.actuate.partitioning.BinAssignment`: rows land exactly on
the partition that owns their key's bin.

``df.repartition(P, key)`` places a row at ``pmod(murmur3(key), P)``: Spark chooses, and a
change of ``P`` re-hashes everything. Placement by an explicit bin -> partition map needs
something Spark's DataFrame API does not offer, so it is built from what it does offer:

* every row carries a *partition key* column ``pk``: for partition ``j`` a fixed integer
  whose Murmur3 hash lands on ``j`` (found once per partition count by asking Spark);
* ``pk`` comes from the key's bin (``pmod(xxhash64(key), B)``) through a broadcast lookup
  of ``B`` rows, so it is computed once, when data is laid out, not per superstep;
* ``repartition(P, "pk")`` then puts every row of bin ``b`` on partition ``owner[b]``.

Frames laid out this way and joined on ``["pk", key]`` are co-partitioned: with
``spark.sql.requireAllClusterKeysForCoPartition=false`` (set by :meth:`BinLayout.enable`)
Spark's planner sees ``hashpartitioning(pk, P)`` on both sides and moves nothing.
Moving a bin is a new ``pk`` for its rows -- exactly the rows of the moved bins change
partition, which is what makes :func:`~iterflow.actuate.partitioning.rescale` minimal in bytes too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from iterflow.actuate.partitioning import BinAssignment, bin_column
from iterflow.loop.hashed import by_key

PK = "pk"
DEFAULT_BINS = 4096


def partition_keys(spark: SparkSession, n_partitions: int) -> np.ndarray:
    """``keys[j]``: the smallest non-negative long whose Spark hash partition (of ``P``) is ``j``.

    Asked of Spark itself (``pmod(hash(id), P)`` is what ``HashPartitioning`` computes), so
    it stays right whatever Spark's Murmur3 seed or implementation.
    """
    if n_partitions < 1:
        raise ValueError(f"n_partitions must be >= 1 (got {n_partitions})")
    span = 64 * n_partitions
    while True:
        rows = (spark.range(0, span).select("id", F.expr(f"pmod(hash(id), {n_partitions})").alias("p"))
                .groupBy("p").agg(F.min("id").alias("id")).collect())
        keys = {int(r["p"]): int(r["id"]) for r in rows}
        if len(keys) == n_partitions:
            return np.array([keys[j] for j in range(n_partitions)], dtype=np.int64)
        span *= 4  # vanishingly rare: some partition had no hit among the first 64 P ids


@dataclass
class BinLayout:
    """A bin assignment made real on Spark: :meth:`place` lays frames out by it."""

    spark: SparkSession
    assignment: BinAssignment
    #: partition keys for ``assignment.n_partitions`` (asked of Spark when not given)
    keys: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.enable(self.spark)
        if self.keys is None or len(self.keys) != self.assignment.n_partitions:
            self.keys = partition_keys(self.spark, self.assignment.n_partitions)
        pk = self.keys[np.asarray(self.assignment.owner)]
        pdf = pd.DataFrame({"bin": np.arange(self.assignment.n_bins, dtype=np.int32), PK: pk})
        self._lookup = self.spark.createDataFrame(pdf).cache()

    @staticmethod
    def enable(spark: SparkSession) -> None:
        """Let joins on ``[pk, key]`` use frames partitioned by ``pk`` alone, without a shuffle."""
        spark.conf.set("spark.sql.requireAllClusterKeysForCoPartition", "false")

    @classmethod
    def uniform(cls, spark: SparkSession, n_partitions: int, n_bins: int = DEFAULT_BINS) -> "BinLayout":
        return cls(spark, BinAssignment.uniform(n_bins, n_partitions))

    @property
    def n_partitions(self) -> int:
        return self.assignment.n_partitions

    @property
    def n_bins(self) -> int:
        return self.assignment.n_bins

    def bin_expr(self, key: str) -> Any:
        return F.expr(bin_column(key, self.n_bins)).cast("int")

    def with_pk(self, df: DataFrame, key: str, name: str = PK) -> DataFrame:
        """``df`` with column ``name`` = the partition key of ``key``'s bin (replaced if present)."""
        lookup = self._lookup.select(F.col("bin").alias("_bin"), F.col(PK).alias(name))
        if name in df.columns:
            df = df.drop(name)
        return (df.withColumn("_bin", self.bin_expr(key))
                .join(F.broadcast(lookup), "_bin").drop("_bin"))

    def place(self, df: DataFrame, key: str) -> DataFrame:
        """``df`` with a fresh ``pk`` of ``key``, each row on the partition owning its bin (lazy)."""
        return by_key(self.with_pk(df, key), self.n_partitions, PK)

    def colocate(self, df: DataFrame) -> DataFrame:
        """Shuffle rows that already carry ``pk`` to their partition (e.g. messages to ``dst``)."""
        return by_key(df, self.n_partitions, PK)

    def bin_counts(self, df: DataFrame, *keys: str) -> np.ndarray:
        """Rows per bin of ``df``, summed over the bins of each of ``keys`` (one small job for
        all of them: ``B`` numbers come back to the driver)."""
        bins = F.explode(F.array(*[self.bin_expr(k) for k in keys])).alias("b")
        counts = np.zeros(self.n_bins)
        for r in df.select(bins).groupBy("b").count().collect():
            counts[int(r["b"])] = float(r["count"])
        return counts

    def moved_to(self, assignment: BinAssignment) -> "BinLayout":
        """The layout for a new assignment (its lookup table is built now, placement is lazy;
        the partition keys are reused when the partition count is unchanged)."""
        self._lookup.unpersist()
        return BinLayout(self.spark, assignment, self.keys)
