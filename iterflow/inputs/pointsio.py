"""Point inputs for k-means: CSV (numeric columns only, optional header) or Parquet.

The result has ``id`` (0-based row number in the file, or the Parquet file's own ``id``
column) and ``f0 .. f{d-1}`` as doubles. A cell that is not a number, NaN or infinite is an
input error naming the file and line; so is a ragged row. Blank lines are skipped.
"""
from __future__ import annotations

import csv
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


def feature_columns(df: DataFrame) -> list[str]:
    return sorted((c for c in df.columns if c.startswith("f") and c[1:].isdigit()), key=lambda c: int(c[1:]))


def _first_line(exc: BaseException) -> str:
    return next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)[:200]


def _is_numeric_type(dtype: str) -> bool:
    return dtype in ("double", "float", "int", "bigint", "smallint", "tinyint") or dtype.startswith("decimal")


def _csv_points(spark: SparkSession, path: str) -> DataFrame:
    """Points from a CSV file read line by line, so that an error names the file's own line
    number (blank lines count; Spark's CSV reader skips them and pads or cuts ragged rows)."""
    lines = spark.read.text(path).rdd.map(lambda r: r.value).zipWithIndex()  # (text, 0-based line)
    first = lines.filter(lambda t: t[0].strip() != "").take(1)
    if not first:
        raise InputError(f"{path}: no points (the file is empty)")
    text, first_idx = first[0]
    try:
        cells = next(csv.reader([text]))
    except csv.Error as exc:
        raise InputError(f"{path}: line {first_idx + 1}: not valid CSV ({exc})") from None
    width = len(cells)
    header = None if all(looks_numeric(c) for c in cells) else first_idx  # a header has a non-number

    def parse(line_idx):
        line, idx = line_idx
        if idx == header or not line.strip():
            return None
        try:
            row = next(csv.reader([line]))
        except csv.Error as exc:
            return (idx, None, f"line {idx + 1}: not valid CSV ({exc})")
        if len(row) != width:
            return (idx, None, f"line {idx + 1}: expected {width} columns, got {len(row)}")
        vals = []
        for cell in row:
            try:
                v = float(cell)
            except ValueError:
                return (idx, None, f"line {idx + 1}: not a number: {cell[:40]!r}")
            if not math.isfinite(v):
                return (idx, None, f"line {idx + 1}: NaN or infinite value {cell[:40]!r}")
            vals.append(v)
        return (idx, vals, None)

    parsed = lines.map(parse).filter(lambda t: t is not None).cache()
    bad = parsed.filter(lambda t: t[2] is not None).map(lambda t: (t[0], t[2])).takeOrdered(1)
    if bad:
        parsed.unpersist()
        raise InputError(f"{path}: {bad[0][1]}")
    schema = StructType([StructField("id", LongType())] +
                        [StructField(f"f{i}", DoubleType()) for i in range(width)])
    # ids: 0-based number of the data row (header and blank lines not counted)
    rows = parsed.map(lambda t: t[1]).zipWithIndex().map(lambda t: (t[1], *t[0]))
    return spark.createDataFrame(rows, schema)


def _parquet_points(spark: SparkSession, path: str) -> DataFrame:
    try:
        df = spark.read.parquet(path)
    except Exception as exc:  # noqa: BLE001 - any reader failure is this file's fault
        raise InputError(f"{path}: cannot read as Parquet: {_first_line(exc)}") from None
    other = [(c, t) for c, t in df.dtypes if c != "id" and not _is_numeric_type(t)]
    if other:
        raise InputError(f"{path}: column {other[0][0]!r} is {other[0][1]}, not a number "
                         "(k-means takes numeric feature columns and an optional id)")
    numeric = [c for c in df.columns if c != "id"]
    if not numeric:
        raise InputError(f"{path}: no numeric feature columns")
    if "id" not in df.columns:  # explicit schema: inferring one from an empty file fails
        df = spark.createDataFrame(df.rdd.zipWithIndex().map(lambda t: (t[1], *t[0])),
                                   StructType([StructField("id", LongType()), *df.schema.fields]))
    points = df.select(F.col("id").cast("long"), *[F.col(c).cast("double").alias(f"f{i}")
                                                   for i, c in enumerate(numeric)])
    bad_cond = None
    for c in feature_columns(points):
        cond = F.isnan(c) | F.col(c).isNull() | (F.abs(F.col(c)) == float("inf"))
        bad_cond = cond if bad_cond is None else bad_cond | cond
    try:
        bad_row = points.filter(bad_cond).limit(1).collect()
    except Exception as exc:  # noqa: BLE001 - a corrupt file shows only when read
        raise InputError(f"{path}: cannot read as Parquet: {_first_line(exc)}") from None
    if bad_row:
        raise InputError(f"{path}: point id {bad_row[0].id}: NaN, null or infinite feature value")
    return points


def load_points(spark: SparkSession, path: str, fmt: str = "csv", partitions: int | None = None) -> DataFrame:
    """Load and validate points; the frame is cached and its size is known."""
    if fmt not in POINT_FORMATS:
        raise InputError(f"--format: unknown points format {fmt!r} (choose from {', '.join(POINT_FORMATS)})")
    if not path or ("://" not in path and not Path(path).exists()):
        raise InputError(f"{path}: no such file")
    points = _csv_points(spark, path) if fmt == "csv" else _parquet_points(spark, path)
    if partitions:
        points = points.repartition(partitions)
    points = points.cache()
    if points.count() == 0:
        raise InputError(f"{path}: no points")
    return points
