"""Weakly connected components by min-label propagation over the changed vertices only.

Every vertex starts with its own id as label. In each superstep only the vertices whose
label changed in the previous superstep (the *active set*, all vertices at first) send
their label to their neighbours; a vertex takes the smallest label it hears if that is
smaller than its own. The active set shrinks as components settle -- as in Flink's delta
iterations -- so later supersteps process a fraction of the edges, which is what lets a
policy release executors. Converges (delta = 0) with every vertex labelled by the
smallest vertex id of its component. Edge direction is ignored.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from iterflow.inputs.graphio import Graph
from iterflow.loop.program import IterativeProgram, State


class WeaklyConnectedComponents(IterativeProgram):
    name = "wcc"

    def __init__(self, graph: Graph, max_iterations: int = 1000, tol: float | None = 0) -> None:
        super().__init__(max_iterations, tol)
        self.graph = graph

    def init(self, spark: SparkSession) -> State:
        # Adjacency lists, one row per vertex, hash-partitioned by vertex like the labels: a
        # superstep joins the active vertices with their rows (no scan of every edge once few
        # vertices are active) and explodes only those. Out-lists group the edges where they
        # are (loaded partitioned by source); only the in-lists are shuffled.
        edges = self.graph.edges.select("src", "dst")
        if edges.rdd.getNumPartitions() != self.partitions:  # the lists must share the labels' partitions
            edges = edges.repartition(self.partitions, "src")
        self.neighbours = self.owns(self._adjacency(edges).cache())
        self.neighbours.count()
        labels = (self.graph.vertices.select("id", F.col("id").alias("label"))
                  .repartition(self.partitions, "id"))
        # "active" first; "labels" is the same frame, read from its checkpoint.
        return State({"active": labels, "labels": lambda done: done["active"]})

    @staticmethod
    def _adjacency(edges: DataFrame) -> DataFrame:
        """``src, dsts``: every vertex with an edge and its neighbours in either direction."""
        out = edges.groupBy("src").agg(F.collect_list("dst").alias("o"))
        into = edges.groupBy(F.col("dst").alias("src")).agg(F.collect_list("src").alias("i"))
        return (out.join(into.hint("shuffle_hash"), "src", "full")
                .select("src", F.concat(F.coalesce("o", F.array()), F.coalesce("i", F.array())).alias("dsts")))

    def relayout(self, partitions: int, state: State, assignment: object = None) -> State:
        """Re-cache the adjacency and re-partition the labels over ``partitions`` (the active
        set follows: it is joined with the labels next superstep)."""
        self.partitions = partitions
        self.neighbours = self.recache(self.neighbours, partitions, "src")
        return State({name: df.repartition(partitions, "id") for name, df in state.frames.items()},
                     dict(state.values))

    def step(self, state: State, superstep: int) -> State:
        # Every frame is hash-partitioned by vertex id into the same partitions (labels and
        # active by ``id``, the adjacency by ``src``, the heard labels by the aggregation's
        # exchange): the joins are shuffled-hash joins on co-partitioned sides, built on the
        # smaller side, with no exchange, no sort and no broadcast through the driver.
        active, labels = state.frames["active"], state.frames["labels"]
        heard = (self.neighbours.join(active.withColumnRenamed("id", "src").hint("shuffle_hash"), "src")
                 .select(F.explode("dsts").alias("id"), "label")
                 .groupBy("id").agg(F.min("label").alias("heard")))
        changed = (labels.join(heard.hint("shuffle_hash"), "id").where(F.col("heard") < F.col("label"))
                   .select("id", F.col("heard").alias("label")))

        def new_labels(done: dict[str, DataFrame]) -> DataFrame:
            # from the changed set as the barrier checkpointed it, not its plan again
            new = done["active"].withColumnRenamed("label", "new").hint("shuffle_hash")
            return labels.join(new, "id", "left").select("id", F.coalesce("new", "label").alias("label"))

        return State({"active": changed, "labels": new_labels})

    def delta(self, old: State, new: State, rows: dict[str, int]) -> float:
        """Number of vertices whose label changed (the next active set)."""
        return float(rows["active"])

    def work(self, rows_before: dict[str, int], rows_after: dict[str, int]) -> float:
        """The active vertices that sent messages in this superstep."""
        return float(rows_before["active"])

    def result(self, state: State) -> DataFrame:
        return state.frames["labels"].select("id", F.col("label").alias("value"))
