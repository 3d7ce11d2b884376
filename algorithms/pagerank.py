"""PageRank with LDBC Graphalytics semantics.

Start at 1/|V|; every superstep
``PR(v) = (1-d)/|V| + d * sum_{u->v} PR(u)/outdeg(u) + (d/|V|) * sum_{dangling w} PR(w)``;
an undirected edge counts in both directions. Runs a fixed number of supersteps, or stops
early once the L1 change of the ranks falls to ``tol``.

Costs per superstep: one shuffle of the contributions (edges joined with ranks, both
hash-partitioned by vertex, so the join itself moves nothing), a tiny aggregate of the
dangling mass, and -- only when ``tol`` is set -- a co-partitioned join for the L1 delta.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from iterflow.graphio import Graph
from iterflow.program import IterativeProgram, State


class PageRank(IterativeProgram):
    name = "pagerank"

    def __init__(self, graph: Graph, damping: float = 0.85, max_iterations: int = 20,
                 tol: float | None = None) -> None:
        super().__init__(max_iterations, tol)
        if not 0 < damping < 1:
            raise ValueError(f"damping must be in (0, 1) (got {damping})")
        self.graph = graph
        self.damping = damping

    def init(self, spark: SparkSession) -> State:
        g, p = self.graph, self.partitions
        edges = g.edges.select("src", "dst")
        if not g.directed:
            edges = edges.union(edges.select(F.col("dst").alias("src"), F.col("src").alias("dst")))
        outdeg = edges.groupBy("src").agg(F.count("*").alias("outdeg"))
        self.n = g.vertices.count()
        self.vertex_ids = g.vertices.select("id").repartition(p, "id").cache()
        self.links = (edges.join(outdeg, "src")
                      .select("src", "dst", (1.0 / F.col("outdeg")).alias("w"))
                      .repartition(p, "src").cache())
        self.links_count = self.links.count()  # materializes the cached edges once
        self.dangling = (self.vertex_ids.join(outdeg.withColumnRenamed("src", "id"), "id", "left_anti")
                         .cache())
        ranks = self.vertex_ids.select("id", F.lit(1.0 / self.n).alias("rank"))
        return State({"ranks": ranks})

    def relayout(self, partitions: int) -> None:
        """Re-cache edges and vertex ids spread over the current executors."""
        self.partitions = partitions
        self.links = self.recache(self.links, partitions, "src")
        self.vertex_ids = self.recache(self.vertex_ids, partitions, "id")
        self.dangling = self.recache(self.dangling, partitions, "id")

    def step(self, state: State, superstep: int) -> State:
        d, n = self.damping, self.n
        ranks = state.frames["ranks"]
        contrib = (self.links.join(ranks.withColumnRenamed("id", "src"), "src")
                   .groupBy(F.col("dst").alias("id")).agg(F.sum(F.col("rank") * F.col("w")).alias("c")))
        mass = ranks.join(self.dangling, "id").agg(F.coalesce(F.sum("rank"), F.lit(0.0)).alias("m"))
        new = (self.vertex_ids.join(contrib, "id", "left")
               .crossJoin(F.broadcast(mass))
               .select("id", ((1 - d) / n + d * F.coalesce(F.col("c"), F.lit(0.0))
                              + d * F.col("m") / n).alias("rank")))
        return State({"ranks": new})

    def delta(self, old: State, new: State, rows: dict[str, int]) -> float | None:
        """L1 change of the ranks (computed only when a tolerance asks for it)."""
        if self.tol is None:
            return None
        a = old.frames["ranks"].withColumnRenamed("rank", "a")
        b = new.frames["ranks"].withColumnRenamed("rank", "b")
        return float(a.join(b, "id").agg(F.sum(F.abs(F.col("a") - F.col("b")))).first()[0])

    def work(self, rows_before: dict[str, int], rows_after: dict[str, int]) -> float:
        """Every edge carries a contribution each superstep."""
        return float(self.links_count)

    def result(self, state: State) -> DataFrame:
        return state.frames["ranks"].select("id", F.col("rank").alias("value"))

    def params(self) -> dict[str, object]:
        return {**super().params(), "damping": self.damping, "directed": self.graph.directed}
