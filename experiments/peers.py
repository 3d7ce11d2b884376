"""The peers iterflow is measured against in ``overhead_peers``: the same work without iterflow.

Why a module of its own: each peer is a small program in its own right (a hand-written
PySpark loop, MLlib's k-means twice, GraphX through py4j), and ``overhead_peers`` only times
and compares them. Every function returns ``(setup_seconds, per_iteration_seconds, extra)``;
where the peer does not expose its iterations, ``per_iteration_seconds`` is empty and the
caller divides.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from iterflow.inputs.pointsio import feature_columns


def hand_inputs(edges: DataFrame, vertices: DataFrame, partitions: int) -> tuple[DataFrame, DataFrame, DataFrame, int]:
    """The hand loop's cached inputs: weighted links by source, vertex ids by id, dangling ids."""
    e = edges.select("src", "dst")
    outdeg = e.groupBy("src").agg(F.count("*").alias("outdeg"))
    links = (e.join(outdeg, "src").select("src", "dst", (1.0 / F.col("outdeg")).alias("w"))
             .repartition(partitions, "src").cache())
    verts = vertices.select("id").repartition(partitions, "id").cache()
    n = verts.count()
    links.count()
    dangling = verts.join(outdeg.withColumnRenamed("src", "id"), "id", "left_anti").cache()
    dangling.count()
    return links, verts, dangling, n


def hand_step(links: DataFrame, verts: DataFrame, dangling: DataFrame, ranks: DataFrame, n: int,
              damping: float = 0.85) -> DataFrame:
    """One iteration as one would write it: the dangling mass with one ``first()``, ranks and
    edges joined on ``src``, ``groupBy(dst).agg(sum)``, a left join onto the vertices (lazy)."""
    mass = ranks.join(dangling, "id").agg(F.coalesce(F.sum("rank"), F.lit(0.0))).first()[0]
    contrib = (links.join(ranks.withColumnRenamed("id", "src"), "src")
               .groupBy(F.col("dst").alias("id")).agg(F.sum(F.col("rank") * F.col("w")).alias("c")))
    return (verts.join(contrib, "id", "left")
            .select("id", ((1 - damping) / n + damping * F.coalesce(F.col("c"), F.lit(0.0))
                           + damping * mass / n).alias("rank")))


def hand_pagerank(edges: DataFrame, vertices: DataFrame, iterations: int, partitions: int,
                  damping: float = 0.85) -> tuple[float, list[float], DataFrame]:
    """PageRank as one would write it by hand: a DataFrame loop, a local checkpoint per iteration.

    Same semantics as :class:`algorithms.PageRank` (Graphalytics: directed, dangling mass spread
    evenly), same partition count; no statistics, no model, no policy, no bins.
    """
    t0 = time.perf_counter()
    links, verts, dangling, n = hand_inputs(edges, vertices, partitions)
    ranks = verts.select("id", F.lit(1.0 / n).alias("rank")).localCheckpoint(eager=True)
    setup = time.perf_counter() - t0
    times = []
    for _ in range(iterations):
        t = time.perf_counter()
        new = hand_step(links, verts, dangling, ranks, n, damping).localCheckpoint(eager=True)
        ranks.unpersist()
        ranks = new
        times.append(time.perf_counter() - t)
    for df in (links, verts, dangling):
        df.unpersist()
    return setup, times, ranks


def ml_kmeans(points: DataFrame, k: int, iterations: int, seed: int = 1) -> tuple[float, list[float], dict[str, Any]]:
    """``pyspark.ml.clustering.KMeans``: same k and iterations (tol 0), its own random init
    (the DataFrame API takes no initial centers). The assembled input is cached beforehand."""
    from pyspark.ml.clustering import KMeans
    from pyspark.ml.feature import VectorAssembler

    data = VectorAssembler(inputCols=feature_columns(points), outputCol="features").transform(points)
    data = data.select("features").cache()
    data.count()
    t0 = time.perf_counter()
    model = KMeans(k=k, maxIter=iterations, tol=0.0, initMode="random", seed=seed).fit(data)
    fit = time.perf_counter() - t0
    iters = int(model.summary.numIter)
    data.unpersist()
    return fit, [], {"iterations": iters}


def mllib_kmeans(points: DataFrame, centers: np.ndarray, iterations: int) -> tuple[float, list[float], dict[str, Any]]:
    """RDD-based ``pyspark.mllib.clustering.KMeans.train`` from the *same* initial centers
    (``initialModel``), ``iterations`` iterations (epsilon 0). The input RDD is cached beforehand."""
    from pyspark.mllib.clustering import KMeans, KMeansModel
    from pyspark.mllib.linalg import DenseVector

    feats = feature_columns(points)
    rdd = points.select(feats).rdd.map(lambda r: DenseVector([float(x) for x in r])).cache()
    rdd.count()
    t0 = time.perf_counter()
    model = KMeans.train(rdd, len(centers), maxIterations=iterations, initializationMode="random",
                         epsilon=0.0, initialModel=KMeansModel([DenseVector(c) for c in centers]))
    fit = time.perf_counter() - t0
    rdd.unpersist()
    return fit, [], {"centers": np.array([np.asarray(c) for c in model.clusterCenters])}


def graphx_cc(spark: Any, path: str, partitions: int) -> tuple[float, list[float], dict[str, Any]]:
    """GraphX ``ConnectedComponents`` through py4j on the same edge list (``GraphLoader`` skips
    ``#`` lines; it keeps duplicate edges and self-loops, which change no component).
    Setup = loading the graph (materialized); the run = ``ConnectedComponents.run`` plus one
    count of its vertices. GraphX does not expose its Pregel iteration count."""
    jvm, sc = spark._jvm, spark.sparkContext
    level = jvm.org.apache.spark.storage.StorageLevel.MEMORY_ONLY()
    t0 = time.perf_counter()
    graph = jvm.org.apache.spark.graphx.GraphLoader.edgeListFile(sc._jsc.sc(), path, False, partitions, level, level)
    edges = graph.edges().count()
    setup = time.perf_counter() - t0
    tags = getattr(getattr(jvm.scala.reflect, "ClassTag$"), "MODULE$")
    t1 = time.perf_counter()
    cc = jvm.org.apache.spark.graphx.lib.ConnectedComponents.run(graph, 2**31 - 1, tags.Int(), tags.Int())
    vertices = cc.vertices().count()
    run = time.perf_counter() - t1
    pairs = jvm.org.apache.spark.api.java.JavaPairRDD.fromRDD(cc.vertices(), tags.Long(), tags.Long())
    components = pairs.values().distinct().count()
    cc.unpersist(False)
    graph.unpersist(False)
    return setup, [run], {"edges": edges, "vertices": vertices, "components": components}
