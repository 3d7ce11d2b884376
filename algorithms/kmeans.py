"""k-means (Lloyd) on a points DataFrame (``id``, ``f0 .. f{d-1}``).

Each superstep assigns every point to its nearest center and moves each center to the
mean of its points: one pass over the cached points computing per-partition partial sums
in JVM expressions (code-generated, no Python worker) and a collect of the k partial sums
per partition, added on the driver in partition order, so a retried task cannot change the
centers' last bits. The state is the k centers (driver-side, tiny).

Initial centers: given (a file or an array), ``random`` (k distinct points drawn with the
seed), or ``k-means||`` (Bahmani et al.: 2 oversampling rounds of 2k candidates each,
then weighted k-means++ on the driver). Stops when every center moves at most ``tol``
(Euclidean) or after ``max_iterations``.

Empty clusters: a center that gets no points keeps its previous position (scikit-learn
instead relocates it to a far point; on inputs without empty clusters both agree).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from iterflow.errors import InputError
from iterflow.inputs.pointsio import feature_columns
from iterflow.loop.program import IterativeProgram, State

INIT_MODES = ("k-means||", "random")


def _nearest(x: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of and squared distance to the nearest center, for every row of ``x``."""
    d2 = (x * x).sum(1)[:, None] - 2 * x @ centers.T + (centers * centers).sum(1)[None, :]
    idx = d2.argmin(1)
    return idx, np.maximum(d2[np.arange(len(x)), idx], 0.0)


class KMeans(IterativeProgram):
    name = "kmeans"

    def __init__(self, points: DataFrame, k: int, init_centers: np.ndarray | None = None,
                 init_mode: str = "k-means||", seed: int = 0, max_iterations: int = 20,
                 tol: float | None = 1e-4) -> None:
        super().__init__(max_iterations, tol)
        self.features = feature_columns(points)
        self.n = points.count()
        if k < 1 or k > self.n:
            raise InputError(f"--k must be between 1 and the number of points ({self.n}), got {k}")
        if init_mode not in INIT_MODES:
            raise InputError(f"init mode must be one of {INIT_MODES} (got {init_mode!r})")
        if init_centers is not None:
            init_centers = np.asarray(init_centers, dtype=float)
            if init_centers.shape != (k, len(self.features)):
                raise InputError(f"--init-centers: expected {k} centers of dimension "
                                 f"{len(self.features)}, got shape {init_centers.shape}")
        self.points, self.k, self.seed, self.init_mode = points, k, seed, init_mode
        self.init_centers = init_centers

    # -- initialization ------------------------------------------------------------------
    def init(self, spark: SparkSession) -> State:
        if self.partitions and self.points.rdd.getNumPartitions() != self.partitions:  # the loop's count of tasks
            self.points = self.recache(self.points, self.partitions)
        if self.init_centers is not None:
            centers = self.init_centers
        elif self.init_mode == "random":
            centers = self._sample(self.points, self.k, self.seed)
        else:
            centers = self._kmeans_parallel(spark)
        return State(values={"centers": centers})

    def _sample(self, df: DataFrame, n: int, seed: int) -> np.ndarray:
        rows = df.select(self.features).rdd.map(tuple).takeSample(False, n, seed)
        return np.array(rows, dtype=float)

    def _kmeans_parallel(self, spark: SparkSession, rounds: int = 2) -> np.ndarray:
        """k-means||: oversample by cost, then reduce the candidates with weighted k-means++."""
        rng = np.random.default_rng(self.seed)
        cand = self._sample(self.points, 1, self.seed)
        feats, ell = self.features, 2 * self.k
        for r in range(rounds):
            c = cand

            def costs(it: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
                for pdf in it:
                    _, d2 = _nearest(pdf[feats].to_numpy(float), c)
                    yield pd.DataFrame({"cost": d2})

            phi = self.points.mapInPandas(costs, "cost double").agg(F.sum("cost")).first()[0] or 0.0
            if phi <= 0:
                break
            seed = self.seed + r + 1

            def pick(it: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
                for pdf in it:
                    x = pdf[feats].to_numpy(float)
                    _, d2 = _nearest(x, c)
                    u = np.random.default_rng([seed, int(pdf["id"].iloc[0]) if len(pdf) else 0]).random(len(x))
                    yield pdf[u < ell * d2 / phi][feats]

            new = np.array(self.points.mapInPandas(pick, self.points.select(feats).schema).collect(), float)
            if len(new):
                cand = np.vstack([cand, new])
        idx = self._assign_counts(cand)
        return _weighted_kmeanspp(cand, idx, self.k, rng)

    def _assign_counts(self, cand: np.ndarray) -> np.ndarray:
        feats = self.features

        def count(it: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for pdf in it:
                idx, _ = _nearest(pdf[feats].to_numpy(float), cand)
                yield pd.DataFrame({"c": np.bincount(idx, minlength=len(cand)).astype("int64"),
                                    "i": np.arange(len(cand), dtype="int64")})

        rows = self.points.mapInPandas(count, "c long, i long").groupBy("i").agg(F.sum("c")).collect()
        w = np.zeros(len(cand))
        for i, c in rows:
            w[i] = c
        return w

    #: re-placed by a relayout (the contract's), spread over the current executors; the state
    #: is the centers, on the driver
    cached_inputs = (("points", (), False),)

    # -- supersteps ------------------------------------------------------------------------
    def step(self, state: State, superstep: int) -> State:
        centers = state.values["centers"]
        d = len(self.features)
        # Per partition and cluster: count and feature sums, in JVM expressions (whole-stage
        # code generation, no Python worker, no Arrow): the nearest center is the least of
        # (squared distance, index) structs. Partials are keyed by the partition id, so the
        # map side aggregates each fully and the shuffle carries k rows a partition.
        parts = pd.DataFrame(self._partials(centers).collect(), columns=["part", "cluster", "n"] +
                             [f"s{j}" for j in range(d)])
        # Summed on the driver in partition order, not by the shuffle's reduce (which adds them
        # in arrival order): a retried task cannot change the centers' last bits.
        parts = parts.sort_values(["part", "cluster"], kind="stable")
        new = centers.copy()  # empty clusters keep their previous center
        for c, g in parts.groupby("cluster", sort=True):
            n = int(g["n"].sum())
            s = np.zeros(d)
            for row in g[[f"s{j}" for j in range(d)]].to_numpy(float):
                s += row
            new[int(c)] = s / n
        return State(values={"centers": new, "moved": float(np.sqrt(((new - centers) ** 2).sum(1)).max())})

    def _partials(self, centers: np.ndarray) -> DataFrame:
        """``part, cluster, n, s0..`` for every non-empty (partition, nearest center).

        Built from SQL expression text: with Column objects, the ~100 column operations cost a
        py4j call each (measured here: 0.11 s a superstep to build the query, a third of its
        time; from text: a handful of calls, same plan). The query reads ``self.points`` as a
        Dataset, not through a temporary view, so it finds the points' cache by plan as before.
        The centers enter as columns of a one-row inline table broadcast to every task, not as
        literals: Spark inlines a double literal into the generated code, so each superstep's
        new centers would compile a new class (measured: 1.26 s of CPU a superstep with
        literals, 0.76 s this way); as columns, the code is the same every superstep and comes
        from Spark's codegen cache. The inline table is a ``LocalRelation``: broadcasting it
        runs no job.
        """
        k, d = centers.shape
        if not np.isfinite(centers).all():
            raise ValueError(f"k-means centers must be finite, got {centers!r}")
        names = ", ".join(f"c{j}_{t}" for j in range(k) for t in range(d))
        values = ", ".join(f"{float(v)!r}D" for v in centers.ravel())  # repr round-trips exactly
        table = self.points.sparkSession.sql(f"SELECT * FROM VALUES ({values}) AS centers({names})")
        select, aggs = self._assign_exprs(k)
        # coalesce(1): the reduce side is k rows a partition, read by one task instead of a
        # stage of shuffle-partitions tasks (measured: 6 % of a superstep on 4 executors)
        return (self.points.crossJoin(F.broadcast(table)).selectExpr(*select)
                .groupBy("part", "cluster").agg(*[F.expr(a) for a in aggs]).coalesce(1))

    def _assign_exprs(self, k: int) -> tuple[list[str], list[str]]:
        """The select list and aggregates of :meth:`_partials` (the same every superstep): the
        nearest center is the least of (squared distance, index) structs, and the partials are
        keyed by the partition id, so the map side aggregates each fully and the shuffle
        carries k rows a partition."""
        xs = [f"CAST(`{f}` AS DOUBLE)" for f in self.features]
        dist = [" + ".join(f"({x} - c{j}_{t}) * ({x} - c{j}_{t})" for t, x in enumerate(xs)) for j in range(k)]
        nearest = ("least(" + ", ".join(f"named_struct('d', {dj}, 'j', {j})" for j, dj in enumerate(dist)) + ").j"
                   if k > 1 else "0")
        select = ["spark_partition_id() AS part", f"{nearest} AS cluster", *[f"{x} AS x{t}" for t, x in enumerate(xs)]]
        return select, ["count(1) AS n", *[f"sum(x{t}) AS s{t}" for t in range(len(xs))]]

    def delta(self, old: State, new: State, rows: dict[str, int]) -> float:
        """The largest distance any center moved in this superstep."""
        return new.values["moved"]

    def work(self, rows_before: dict[str, int], rows_after: dict[str, int]) -> float:
        return float(self.n)

    def result(self, state: State) -> DataFrame:
        """Centers (``cluster, f0..``) as the output; see :meth:`assignments` for ``id, cluster``."""
        spark = self.points.sparkSession
        c = state.values["centers"]
        pdf = pd.DataFrame(c, columns=self.features)
        pdf.insert(0, "cluster", np.arange(len(c), dtype=np.int32))
        return spark.createDataFrame(pdf)

    def assignments(self, centers: np.ndarray) -> DataFrame:
        feats = self.features

        def assign(it: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for pdf in it:
                idx, _ = _nearest(pdf[feats].to_numpy(float), centers)
                yield pd.DataFrame({"id": pdf["id"].to_numpy(), "cluster": idx.astype("int32")})

        return self.points.mapInPandas(assign, "id long, cluster int")

    def params(self) -> dict[str, object]:
        return {**super().params(), "k": self.k, "init_mode": self.init_mode, "seed": self.seed}


def _weighted_kmeanspp(cand: np.ndarray, w: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Pick k of the weighted candidates by k-means++ seeding (then they are the centers)."""
    if len(cand) <= k:
        return cand[:k] if len(cand) == k else np.vstack([cand, cand[rng.choice(len(cand), k - len(cand))]])
    chosen = [int(rng.choice(len(cand), p=w / w.sum()))]
    d2 = ((cand - cand[chosen[0]]) ** 2).sum(1)
    for _ in range(1, k):
        p = w * d2
        nxt = int(rng.choice(len(cand), p=p / p.sum())) if p.sum() > 0 else int(rng.integers(len(cand)))
        chosen.append(nxt)
        d2 = np.minimum(d2, ((cand - cand[nxt]) ** 2).sum(1))
    return cand[chosen]
