"""PageRank with LDBC Graphalytics semantics, its state laid out by bins.

Start at 1/|V|; every superstep
``PR(v) = (1-d)/|V| + d * sum_{u->v} PR(u)/outdeg(u) + (d/|V|) * sum_{dangling w} PR(w)``;
an undirected edge counts in both directions. Runs a fixed number of supersteps, or stops
early once the L1 change of the ranks falls to ``tol``.

Layout (``layout``):

* ``"hash"`` (default) -- what a hand-written loop does: edges hash-partitioned by source,
  vertices and ranks by id. Per superstep one shuffle, the contributions, aggregated map-side
  first (``groupBy(dst)``: partial sums per partition, then one exchange by destination, which
  is also the vertices' partitioning, so the join with them moves nothing); both joins are
  shuffled-hash joins of co-partitioned sides (no broadcast of the ranks through the driver,
  no sort);
* ``"bins"`` -- vertex ids hash into bins, bins map to partitions
  (:class:`~iterflow.actuate.bins.BinLayout`); ranks, vertex ids and dangling vertices are
  placed by the vertex's bin, edges by their source's bin and carry their destination's
  partition key ``dpk``. Moving bins (hotspots) or changing the partition count re-places only
  the rows whose bin changed partition; ``bin_load`` (edges out of + into each bin) is what
  the rebalancer balances. The price: the contributions are shuffled to their partition key
  before they are summed (no map-side partial sums) and every frame carries ``pk``. So the
  bins are used where they are asked for (``iterflow run --rebalance`` lays PageRank out so);
  a rescale of a hash-laid-out run re-partitions by hash.

Two step functions (``variants``):

* ``full`` -- every vertex sends ``rank / outdeg`` along every edge;
* ``delta`` -- only vertices whose rank moved by more than ``delta_threshold`` since they
  last sent send the *change* (``rank - sent``); every vertex keeps the sum ``acc`` of what
  it received. With threshold 0 it equals ``full``; above 0 each vertex holds back less than
  the threshold, so the error stays within about ``threshold`` per rank, and a superstep
  after most ranks have settled shuffles a fraction of the messages. Switching from
  ``full`` adds ``sent = 0, acc = 0``: the first delta superstep sends everything once.
"""
from __future__ import annotations

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from iterflow.actuate.bins import DEFAULT_BINS, PK, BinLayout
from iterflow.inputs.graphio import Graph
from iterflow.loop.hashed import by_key
from iterflow.loop.program import IterativeProgram, State


class PageRank(IterativeProgram):
    name = "pagerank"
    variants = ("full", "delta")

    def __init__(self, graph: Graph, damping: float = 0.85, max_iterations: int = 20,
                 tol: float | None = None, *, n_bins: int = DEFAULT_BINS,
                 delta_threshold: float | None = None, measure_delta: bool = False,
                 layout: str = "hash", joins: str = "hash") -> None:
        super().__init__(max_iterations, tol)
        if not 0 < damping < 1:
            raise ValueError(f"damping must be in (0, 1) (got {damping})")
        if delta_threshold is not None and not delta_threshold >= 0:
            raise ValueError(f"delta_threshold must be >= 0 (got {delta_threshold})")
        self.graph = graph
        self.damping = damping
        self.n_bins = n_bins
        self.delta_threshold = delta_threshold  # None: 1e-4 / |V| (set in init)
        self.measure_delta = measure_delta or tol is not None
        if layout not in ("hash", "bins"):
            raise ValueError(f"layout must be 'hash' or 'bins' (got {layout!r})")
        self.binned = layout == "bins"
        if joins not in ("hash", "auto"):
            raise ValueError(f"joins must be 'hash' or 'auto' (got {joins!r})")
        self.joins = joins  # auto: Spark's choice (experiments/pagerank_joins.py measures both)

    @property
    def keys(self) -> list[str]:
        """The columns ranks are joined on: ``[pk, id]`` under bins, ``[id]`` under hash."""
        return [PK, "id"] if self.binned else ["id"]

    # -- layout ------------------------------------------------------------------------------
    def init(self, spark: SparkSession) -> State:
        g = self.graph
        edges = g.edges.select("src", "dst")
        if not g.directed:
            edges = edges.union(edges.select(F.col("dst").alias("src"), F.col("src").alias("dst")))
        outdeg = edges.groupBy("src").agg(F.count("*").alias("outdeg"))
        self.n = g.vertices.count()
        if self.delta_threshold is None:
            self.delta_threshold = 1e-4 / self.n
        weighted = edges.join(outdeg, "src").select("src", "dst", (1.0 / F.col("outdeg")).alias("w"))
        dangling = g.vertices.select("id").join(outdeg.withColumnRenamed("src", "id"), "id", "left_anti")
        if self.binned:
            self.layout = BinLayout.uniform(spark, self.partitions, self.n_bins)
        self._place_inputs(weighted, g.vertices.select("id"), dangling)
        self.links_count = self.links.count()
        if self.binned:
            self._bin_load = self.layout.bin_counts(self.links, "src", "dst")
        ranks = self.vertex_ids.select(*self.keys, F.lit(1.0 / self.n).alias("rank"))
        return State({"ranks": ranks})

    def _place(self, df: DataFrame, key: str) -> DataFrame:
        """``df`` on the partition of ``key``: its bin's under bins, Spark's hash otherwise."""
        if self.binned:
            return self.layout.place(df.drop(PK), key)
        return by_key(df.drop(PK), self.partitions, key)

    def _place_inputs(self, weighted: DataFrame, vertex_ids: DataFrame, dangling: DataFrame) -> None:
        """Place (lazily, then cache and materialize) edges, vertex ids and dangling vertices."""
        if self.binned:
            weighted = self.layout.with_pk(weighted, "dst", "dpk")
        links = self.owns(self._place(weighted, "src").cache())
        ids = self.owns(self._place(vertex_ids, "id").cache())
        dang = self.owns(self._place(dangling, "id").cache())
        for df in (links, ids, dang):
            df.count()
        self.links, self.vertex_ids, self.dangling = links, ids, dang

    cached_inputs = (("links", ("src",), False), ("vertex_ids", ("id",), False), ("dangling", ("id",), False))

    def relayout(self, partitions: int, state: State, assignment: object = None) -> State:
        """Re-place edges, vertices and ranks for ``assignment`` (or, when only the partition
        count changed, for the minimal-movement rescale of the current assignment); by hash,
        the contract's (:attr:`cached_inputs`, a scale-in dividing the count keeps them cached
        where they are)."""
        from iterflow.actuate.partitioning import rescale

        if assignment is not None and not self.binned:
            raise ValueError("bin moves need PageRank(layout='bins') (iterflow run --rebalance lays it out so)")
        if not self.binned:
            return super().relayout(partitions, state)
        old = (self.links, self.vertex_ids, self.dangling)
        if assignment is None:
            # Count-balanced, not load-guided: releasing the lightest bins would hand the new
            # partitions only light (on small graphs: empty) bins. Hashed bins balance load in
            # expectation; residual skew is the rebalancer's job.
            assignment = rescale(self.layout.assignment, partitions)
        self.partitions = assignment.n_partitions
        self.layout = self.layout.moved_to(assignment)
        self._place_inputs(old[0].drop("dpk"), old[1], old[2])
        for df in old:
            self.free(df)
        return self.place_state(state)

    def place_state(self, state: State) -> State:
        """Ranks on the partitions of their ids, as the inputs are."""
        return State({name: self._place(df, "id") for name, df in state.frames.items()}, dict(state.values))

    def restore(self, state: State) -> State:
        """Ranks read back from a checkpoint, re-placed by the current bin layout (their ``pk``
        may be of another layout, and the joins on ``[pk, id]`` rely on it)."""
        return self.place_state(state)

    def bin_load(self, state: State) -> np.ndarray:
        """Edges out of and into each bin: the join stage works by source, the aggregation by
        destination. Static for PageRank, so measured once (when the bins are laid out)."""
        return self._bin_load if self.binned else None

    # -- supersteps --------------------------------------------------------------------------
    def step(self, state: State, superstep: int) -> State:
        return self._step_delta(state) if self.variant == "delta" else self._step_full(state)

    def _mass(self, ranks: DataFrame) -> DataFrame:
        """The dangling vertices' rank mass, one row (broadcast into the update). Joined as the
        other joins, co-partitioned and built on the dangling vertices: left to the planner's
        size estimates, it broadcast them through the driver every superstep where they were a
        rebuilt cache, and sorted both sides where they were a view of cached blocks after a
        release (no estimate: 2.5 s a superstep at 1 executor against 2.0 s, stop 49)."""
        return F.broadcast(ranks.join(self._hashed(self.dangling), self.keys)
                           .agg(F.expr("coalesce(sum(rank), 0D) AS m")))

    def _hashed(self, df: DataFrame) -> DataFrame:
        """``df`` as the build side of a shuffled-hash join (``joins="hash"``; see :meth:`_messages`)."""
        return df.hint("shuffle_hash") if self.joins == "hash" else df

    def _messages(self, senders: DataFrame, value: str) -> DataFrame:
        """``sum(value * w)`` per destination, on the destination's partition (the one shuffle).

        Both joins of a superstep are shuffled-hash joins of co-partitioned sides, built on the
        smaller (ranks; the messages), as WCC's: left to itself Spark broadcast the ranks (262k
        rows of R-MAT 18, under its 10 MB threshold) -- collected to the driver, hashed there and
        shipped to every executor each superstep -- and sort-merge joined the messages with the
        vertex ids, sorting both."""
        src = [PK, "src"] if self.binned else ["src"]
        sent = self.links.join(self._hashed(senders.withColumnRenamed("id", "src")), src)
        if not self.binned:  # partial sums map-side, one exchange by destination
            return sent.groupBy(F.col("dst").alias("id")).agg(F.expr(f"sum({value} * w) AS c"))
        sent = sent.select(F.col("dpk").alias(PK), F.col("dst").alias("id"), (F.col(value) * F.col("w")).alias("c"))
        return self.layout.colocate(sent).groupBy(PK, "id").agg(F.sum("c").alias("c"))

    def _step_full(self, state: State) -> State:
        ranks = state.frames["ranks"]
        new = (self.vertex_ids.join(self._hashed(self._messages(ranks, "rank")), self.keys, "left")
               .crossJoin(self._mass(ranks))
               .selectExpr(*self.keys, f"{self._rank_sql('coalesce(c, 0D)')} AS rank"))
        return State({"ranks": new})

    def _rank_sql(self, received: str) -> str:
        """The update ``(1-d)/|V| + d * received + d * m/|V|`` as SQL text: built from Column
        objects, each operation is a py4j call (measured: 7-20 ms a superstep more to build the
        same plan, with bit-identical ranks)."""
        d, n = float(self.damping), float(self.n)
        return f"{(1 - d) / n!r}D + {d!r}D * ({received}) + {d!r}D * m / {n!r}D"

    def _step_delta(self, state: State) -> State:
        th = self.delta_threshold
        v = state.frames["ranks"]
        moved = F.abs(F.col("rank") - F.col("sent")) > F.lit(th)
        changed = v.where(moved).select(*self.keys, (F.col("rank") - F.col("sent")).alias("dr"))
        acc = F.col("acc") + F.coalesce(F.col("c"), F.lit(0.0))
        new = (v.join(self._hashed(self._messages(changed, "dr")), self.keys, "left")
               .crossJoin(self._mass(v))
               .select(*self.keys, F.expr(self._rank_sql("acc + coalesce(c, 0D)")).alias("rank"),
                       F.when(moved, F.col("rank")).otherwise(F.col("sent")).alias("sent"),
                       acc.alias("acc")))
        return State({"ranks": new})

    def switch_variant(self, variant: str, state: State) -> State:
        state = super().switch_variant(variant, state)
        ranks = state.frames["ranks"].select(*self.keys, "rank")
        if variant == "delta":
            ranks = ranks.withColumn("sent", F.lit(0.0)).withColumn("acc", F.lit(0.0))
        return State({"ranks": ranks}, dict(state.values))

    def delta(self, old: State, new: State, rows: dict[str, int]) -> float | None:
        """L1 change of the ranks (computed only when a tolerance or a logic switch asks for it)."""
        if not self.measure_delta:
            return None
        a = old.frames["ranks"].select(*self.keys, F.col("rank").alias("a"))
        b = new.frames["ranks"].select(*self.keys, F.col("rank").alias("b"))
        return float(a.join(b, self.keys).agg(F.sum(F.abs(F.col("a") - F.col("b")))).first()[0])

    def work(self, rows_before: dict[str, int], rows_after: dict[str, int]) -> float:
        """Every edge carries a contribution each superstep (an upper bound under ``delta``)."""
        return float(self.links_count)

    def result(self, state: State) -> DataFrame:
        return state.frames["ranks"].select("id", F.col("rank").alias("value"))

    def params(self) -> dict[str, object]:
        return {**super().params(), "damping": self.damping, "directed": self.graph.directed,
                "n_bins": self.n_bins, "layout": "bins" if self.binned else "hash",
                "delta_threshold": self.delta_threshold, "joins": self.joins}
