"""Point inputs for k-means: CSV (numeric columns only, optional header) or Parquet.

The result has ``id`` (0-based row number in the file, or the Parquet file's own ``id``
column) and ``f0 .. f{d-1}`` as doubles. A cell that is not a number, NaN or infinite is an
input error naming the file and line; so is a ragged row.
"""
from __future__ import annotations

import math
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StructField, StructType

from iterflow.errors import InputError

POINT_FORMATS = ("csv", "parquet")


def looks_numeric(token: str) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


def _has_header(path: str) -> bool:
    """A header is a first line with any non-numeric cell."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        first = fh.readline().strip()
    return bool(first) and not all(looks_numeric(t) for t in first.split(","))


def feature_columns(df: DataFrame) -> list[str]:
    return sorted((c for c in df.columns if c.startswith("f") and c[1:].isdigit()), key=lambda c: int(c[1:]))


def load_points(spark: SparkSession, path: str, fmt: str = "csv", partitions: int | None = None) -> DataFrame:
    """Load and validate points; the frame is cached and its size is known."""
    if fmt not in POINT_FORMATS:
        raise InputError(f"--format: unknown points format {fmt!r} (choose from {', '.join(POINT_FORMATS)})")
    if "://" not in path and not Path(path).exists():
        raise InputError(f"{path}: no such file")
    if fmt == "csv":
        header = _has_header(path)
        raw = spark.read.csv(path, header=header, inferSchema=False, mode="PERMISSIVE",
                             enforceSchema=False)
        names = raw.columns
        rdd = raw.rdd.zipWithIndex()
        width = len(names)
        offset = 2 if header else 1

        def parse(row_idx):
            row, idx = row_idx
            vals = []
            for cell in row:
                try:
                    v = float(cell)
                except (TypeError, ValueError):
                    return (idx, None, f"line {idx + offset}: not a number: {cell!r}")
                if not math.isfinite(v):
                    return (idx, None, f"line {idx + offset}: NaN or infinite value {cell!r}")
                vals.append(v)
            if len(vals) != width:
                return (idx, None, f"line {idx + offset}: expected {width} columns")
            return (idx, vals, None)

        parsed = rdd.map(parse).cache()
        bad = parsed.filter(lambda t: t[2] is not None).map(lambda t: (t[0], t[2])).takeOrdered(1)
        if bad:
            parsed.unpersist()
            raise InputError(f"{path}: {bad[0][1]}")
        schema = StructType([StructField("id", LongType())] +
                            [StructField(f"f{i}", DoubleType()) for i in range(width)])
        points = spark.createDataFrame(parsed.map(lambda t: (t[0], *t[1])), schema)
    else:
        df = spark.read.parquet(path)
        numeric = [c for c, t in df.dtypes if c != "id" and t in ("double", "float", "int", "bigint", "smallint")]
        if not numeric:
            raise InputError(f"{path}: no numeric feature columns")
        if "id" not in df.columns:
            df = df.rdd.zipWithIndex().map(lambda t: (t[1], *t[0])).toDF(["id", *df.columns])
        points = df.select(F.col("id").cast("long"), *[F.col(c).cast("double").alias(f"f{i}")
                                                       for i, c in enumerate(numeric)])
        bad_cond = None
        for c in feature_columns(points):
            cond = F.isnan(c) | F.col(c).isNull() | (F.abs(F.col(c)) == float("inf"))
            bad_cond = cond if bad_cond is None else bad_cond | cond
        bad_row = points.filter(bad_cond).limit(1).collect()
        if bad_row:
            raise InputError(f"{path}: point id {bad_row[0].id}: NaN, null or infinite feature value")
    if partitions:
        points = points.repartition(partitions)
    points = points.cache()
    if points.count() == 0:
        raise InputError(f"{path}: no points")
    return points
