"""Graph inputs: LDBC Graphalytics ``.v/.e/.properties`` and whitespace edge lists (SNAP style).

Files are parsed by Spark (so HDFS/S3 paths work on real clusters); a malformed line is
reported with its file and line number. Cleaning that is documented, not an error:
duplicate edges are collapsed to one and self-loops are dropped (both counted in a warning),
because PageRank and WCC here are defined on simple graphs.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from iterflow.errors import InputError

log = logging.getLogger(__name__)

GRAPH_FORMATS = ("graphalytics", "edgelist")
_EDGE = r"^\s*(\d{1,18})\s+(\d{1,18})(\s+[-+0-9.eE]+)?\s*$"
_VERTEX = r"^\s*(\d{1,18})\s*$"
# Blank and comment lines, skipped; the same test in Spark (Java regex) and in Python (ASCII).
_SKIP = r"^\s*(#[\s\S]*)?$"


@dataclass
class Graph:
    """Vertices (``id``) and edges (``src``, ``dst``) as in GraphFrames, plus directedness."""

    vertices: DataFrame
    edges: DataFrame
    directed: bool
    properties: dict[str, str] = field(default_factory=dict)
    cleaning: dict[str, int] = field(default_factory=dict)

    def to_graphframe(self):
        """The same graph as a ``graphframes.GraphFrame`` (needs the GraphFrames jar)."""
        from graphframes import GraphFrame

        from iterflow.cluster import jars

        jars.graphframes_jars()  # one clear message when the jar is missing or mismatched
        return GraphFrame(self.vertices, self.edges)


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> Path:
    return Path(path[len("file://"):] if path.startswith("file://") else path)


def _require(path: str) -> None:
    if not path or (_is_local(path) and not _local(path).exists()):
        raise InputError(f"{path}: no such file")


def _first_bad_line(path: str, pattern: str) -> tuple[int, str] | None:
    """Line number and text of the first line that is not a comment, blank or a match
    (``re.ASCII``: ``\\d`` and ``\\s`` mean what they mean to Spark's Java regex)."""
    rx, skip = re.compile(pattern, re.ASCII), re.compile(_SKIP, re.ASCII)
    with open(_local(path), encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not skip.match(line) and not rx.match(line):
                return n, line.strip()[:80]
    return None


def _parse(spark: SparkSession, path: str, pattern: str, what: str, cols: list[str]) -> DataFrame:
    """Lines of ``path`` matching ``pattern`` as long columns; a bad line is an InputError."""
    _require(path)
    lines = spark.read.text(path).filter(~F.col("value").rlike(_SKIP))
    ok = lines.value.rlike(pattern)
    bad = lines.filter(~ok).limit(1).collect()
    if bad:
        where = _first_bad_line(path, pattern) if _is_local(path) and _local(path).is_file() else None
        line = f"line {where[0]}" if where else "a line"
        text = where[1] if where else bad[0].value[:80]
        raise InputError(f"{path}: {line}: expected {what} with integer vertex ids, got {text!r}")
    return lines.select(*[F.regexp_extract("value", pattern, i + 1).cast("long").alias(c)
                          for i, c in enumerate(cols)])


def read_properties(path: Path) -> dict[str, str]:
    """A Graphalytics ``.properties`` file as ``{key-after-graph-name: value}``."""
    props: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a text file ({exc.reason} at byte {exc.start})") from None
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        key, sep, value = s.partition("=")
        if not sep:
            raise InputError(f"{path}: line {n}: expected key = value, got {s[:80]!r}")
        props[key.strip().split(".", 2)[-1]] = value.strip()
    return props


def graphalytics_paths(path: str) -> tuple[str, str, Path | None]:
    """Vertex file, edge file and properties file of a Graphalytics graph given by any of them."""
    base = re.sub(r"\.(v|e|properties)$", "", path)
    props = _local(base + ".properties") if _is_local(base) else None
    return base + ".v", base + ".e", props if props and props.exists() else None


def load_graph(spark: SparkSession, path: str, fmt: str = "edgelist",
               directed: bool | None = None, partitions: int | None = None) -> Graph:
    """Load, validate and clean a graph; ``directed=None`` takes the file's own setting."""
    if fmt not in GRAPH_FORMATS:
        raise InputError(f"--format: unknown graph format {fmt!r} (choose from {', '.join(GRAPH_FORMATS)})")
    props: dict[str, str] = {}
    if fmt == "graphalytics":
        vpath, epath, ppath = graphalytics_paths(path)
        if ppath is not None:
            props = read_properties(ppath)
        if directed is None:
            flag = props.get("directed", "true").strip().lower()
            if flag not in ("true", "false"):
                raise InputError(f"{ppath}: directed must be true or false, got {flag!r}")
            directed = flag == "true"
        edges = _parse(spark, epath, _EDGE, "'src dst [weight]'", ["src", "dst"])
        vertices = _parse(spark, vpath, _VERTEX, "one vertex id", ["id"])
    else:
        epath = path
        directed = True if directed is None else directed
        edges = _parse(spark, epath, _EDGE, "'src dst [weight]'", ["src", "dst"])
        vertices = None
    raw = edges.cache()
    counts = raw.agg(F.count(F.lit(1)).alias("n"), F.sum((F.col("src") == F.col("dst")).cast("long")).alias("loops")).first()
    total, loops = int(counts["n"]), int(counts["loops"] or 0)  # one job for both
    edges = raw.filter("src != dst")
    if not directed:  # an undirected edge listed twice (u v and v u) is one edge
        edges = edges.select(F.least("src", "dst").alias("src"), F.greatest("src", "dst").alias("dst"))
    edges = edges.dropDuplicates(["src", "dst"])
    if partitions:
        edges = edges.repartition(partitions, "src")
    edges = edges.cache()
    kept = edges.count()
    endpoints = edges.select(F.col("src").alias("id")).union(edges.select(F.col("dst").alias("id")))
    if vertices is None:
        vertices = endpoints.distinct()
    else:
        vertices = vertices.dropDuplicates(["id"])
        missing = endpoints.join(vertices, "id", "left_anti").limit(1).collect()
        if missing:
            raise InputError(f"{epath}: edge endpoint {missing[0].id} is not listed in {vpath}")
    if partitions:
        vertices = vertices.repartition(partitions, "id")
    vertices = vertices.cache()
    if vertices.count() == 0:
        raise InputError(f"{path}: the graph is empty (no vertices)")
    raw.unpersist()
    cleaning = {"self_loops_dropped": loops, "duplicate_edges_dropped": total - loops - kept}
    if loops or cleaning["duplicate_edges_dropped"]:
        log.warning("%s: dropped %d self-loops and %d duplicate edges", epath, loops,
                    cleaning["duplicate_edges_dropped"])
    return Graph(vertices, edges, bool(directed), props, cleaning)
