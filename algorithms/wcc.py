"""Weakly connected components by min-label propagation over the changed vertices only.

Every vertex starts with its own id as label; the first round, in which every vertex hears
its neighbours' ids, is computed when the input is prepared (the least id of its list). In
each superstep only the vertices whose label changed in the previous round (the *active
set*) send their label to their neighbours; a vertex takes the smallest label it hears if
that is smaller than its own. The active set shrinks as components settle -- as in Flink's delta
iterations -- so later supersteps process a fraction of the edges, which is what lets a
policy release executors. Converges (delta = 0) with every vertex labelled by the
smallest vertex id of its component. Edge direction is ignored.

The labels are a *solution set* updated in place where few change (Flink's delta iteration
again): while the vertices changed since the labels were last rewritten stay under
:data:`PATCH_SHARE` of them, a superstep writes only those (``patch``) and carries the labels
over unchanged -- the barrier does not materialize a frame carried over -- instead of
rewriting every label to change twenty. ``experiments/wcc_labels.py`` (R-MAT 19 with a
30-vertex tail, 33 supersteps, emulated cluster, 3 reps interleaved): at 1 executor the job
0.79x as long, a tail superstep 0.66x; at 4 a tail superstep 0.90x, the job within noise.

Where few vertices are active (:data:`LOOKUP_ACTIVE`), a superstep looks their adjacency rows
up instead of scanning every row: the adjacency is cached sorted by vertex within partitions,
the active ids are collected (one small job) and the scan reads only the cached batches whose
vertex range can hold them (:mod:`iterflow.loop.lookup`; R-MAT 19: ~48k of 520k rows read).
``experiments/wcc_lookup.py --graph 20:2400000`` (2 reps interleaved against ``lookup_active=0``,
one partition a core): a tail superstep 0.83x at 1 executor, 1.02x at 4; the job 0.96x at both.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from iterflow.inputs.graphio import Graph
from iterflow.loop.hashed import by_key
from iterflow.loop.program import IterativeProgram, State

#: Most active vertices a superstep looks up in the adjacency by key instead of scanning it
#: (:meth:`~iterflow.loop.program.IterativeProgram.lookup`): their ids are collected first (one
#: small job), so that the scan reads only the cached batches that can hold them. Past a few
#: dozen ids scattered over the key space the ranges cover most batches and the job is lost.
LOOKUP_ACTIVE = 64

#: Largest share of the labels the patch may hold before a superstep rewrites the labels instead.
#: A patched superstep reads the patch twice (the current labels of the vertices that heard a
#: message, the next patch); past an eighth that costs about what rewriting the labels does.
PATCH_SHARE = 1 / 8


class WeaklyConnectedComponents(IterativeProgram):
    name = "wcc"

    def __init__(self, graph: Graph, max_iterations: int = 1000, tol: float | None = 0,
                 patch_share: float = PATCH_SHARE, lookup_active: int = LOOKUP_ACTIVE) -> None:
        super().__init__(max_iterations, tol)
        if not 0 <= patch_share <= 1:
            raise ValueError(f"patch_share must be in [0, 1] (got {patch_share})")
        if lookup_active < 0:
            raise ValueError(f"lookup_active must be >= 0 (got {lookup_active})")
        self.graph = graph
        self.patch_share = patch_share
        self.lookup_active = lookup_active
        self.rows: dict[str, int] = {}  # the last barrier's frame rows (delta): patch or rewrite

    def init(self, spark: SparkSession) -> State:
        # Adjacency lists, one row per vertex (an isolated vertex has an empty list),
        # hash-partitioned by vertex like the labels: a superstep joins the active vertices with
        # their rows (no scan of every edge once few vertices are active) and explodes only
        # those. Built by one aggregation over both directions, so the cached lists *report*
        # that partitioning and a superstep's join needs no exchange of them (a full outer join
        # of out- and in-lists keyed the rows by coalesce(src, src), which Spark cannot match:
        # it re-shuffled every list every superstep).
        #
        # The first round needs no messages: every vertex is labelled by its own id, so the
        # least label it hears is the least id in its two-way list. The initial state is that
        # round's result, read off the same rows: the initial barrier's one job builds and
        # caches the lists and labels every vertex (GraphX pays this round inside its Pregel
        # loop; the bench counts it as a superstep of the peer).
        # Sorted by vertex within each partition: a cached batch then holds a narrow range of
        # vertices, and a tail superstep's lookup of its few active ones reads a few batches.
        self.neighbours = self.owns(self._adjacency(self.graph.edges.select("src", "dst"),
                                                    self.graph.vertices.select("id"))
                                    .sortWithinPartitions("src").cache())
        labels = self.neighbours.select(F.col("src").alias("id"),
                                        F.expr("least(src, coalesce(array_min(dsts), src))").alias("label"))
        self.rows = {}
        # "labels" first; the active set (vertices that took a smaller label) from its checkpoint
        return State({"labels": labels, "active": lambda done: done["labels"].where(F.col("label") < F.col("id"))})

    def _adjacency(self, edges: DataFrame, vertices: DataFrame) -> DataFrame:
        """``src, dsts``: every vertex and its neighbours in either direction,
        hash-partitioned by ``src`` into the loop's partition count."""
        none = F.lit(None).cast(edges.schema["dst"].dataType)
        both = (edges.unionByName(edges.select(F.col("dst").alias("src"), F.col("src").alias("dst")))
                .unionByName(vertices.select(F.col("id").alias("src"), none.alias("dst"))))
        if int(edges.sparkSession.conf.get("spark.sql.shuffle.partitions")) != self.partitions:
            both = by_key(both, self.partitions, "src")  # else the aggregation's own exchange (with map-side lists)
        return both.groupBy("src").agg(F.collect_list("dst").alias("dsts"))  # drops the nulls

    #: re-placed by a relayout (the contract's): the adjacency, sorted for :meth:`lookup`
    cached_inputs = (("neighbours", ("src",), True),)

    def place_state(self, state: State) -> State:
        """Every state frame (labels, patch, active) on the partitions of its ids, so each
        superstep's joins stay co-partitioned with the adjacency."""
        return State({name: by_key(df, self.partitions, "id") for name, df in state.frames.items()},
                     dict(state.values))

    def restore(self, state: State) -> State:
        """A checkpoint read back (a recovery's rewind, a resumed run): rows unknown, so the next
        superstep rewrites the labels (the replay calls no :meth:`delta`: rows from before the
        failure would decide); a frame written at another partition count is re-partitioned
        (carried over while patching, it would be exchanged every superstep)."""
        self.rows = {}
        frames = {name: df if callable(df) or df.rdd.getNumPartitions() == self.partitions  # callable: superstep 0's
                  else by_key(df, self.partitions, "id") for name, df in state.frames.items()}  # lineage anchor
        return State(frames, dict(state.values))

    def step(self, state: State, superstep: int) -> State:
        # Every frame is hash-partitioned by vertex id into the same partitions (labels, patch
        # and active by ``id``, the adjacency by ``src``, the heard labels by the aggregation's
        # exchange): the joins are shuffled-hash joins on co-partitioned sides, built on the
        # smaller side, with no exchange, no sort and no broadcast through the driver.
        active, labels, patch = state.frames["active"], state.frames["labels"], state.frames.get("patch")
        neighbours = self.neighbours
        if 0 < self.rows.get("active", 0) <= self.lookup_active:  # few: look their rows up, no scan
            ids = [r[0] for r in active.select("id").collect()]
            neighbours = self.lookup(neighbours, "src", ids) if ids else neighbours
        heard = (neighbours.join(active.withColumnRenamed("id", "src").hint("shuffle_hash"), "src")
                 .select(F.explode("dsts").alias("id"), "label")
                 .groupBy("id").agg(F.min("label").alias("heard")))
        now, label = labels.join(heard.hint("shuffle_hash"), "id"), F.col("label")
        if patch is not None:  # a label the patch holds is newer than the labels' own
            now = now.join(patch.withColumnRenamed("label", "patched").hint("shuffle_hash"), "id", "left")
            label = F.coalesce("patched", "label")
        changed = now.where(F.col("heard") < label).select("id", F.col("heard").alias("label"))

        def updates(done: dict[str, DataFrame]) -> DataFrame:
            """Every label changed since the labels were written, from the changed set as the
            barrier checkpointed it (labels only fall: the least is the newest)."""
            if patch is None:
                return done["active"]
            return patch.unionByName(done["active"]).groupBy("id").agg(F.min("label").alias("label"))

        if self._patching():
            return State({"active": changed, "patch": updates, "labels": labels})

        return State({"active": changed, "labels": lambda done: overlaid(labels, updates(done))})

    def _patching(self) -> bool:
        """Whether the next patch stays under :attr:`patch_share` of the labels, as far as the
        last barrier's rows say (none yet, or a restored state: rewrite). Either way gives the
        same labels: the patch is read from the state, not from this choice."""
        r = self.rows
        return r.get("labels", 0) > 0 and r.get("patch", 0) + r.get("active", 0) <= self.patch_share * r["labels"]

    def delta(self, old: State, new: State, rows: dict[str, int]) -> float:
        """Number of vertices whose label changed (the next active set). The rows are kept: the
        next superstep patches the labels or rewrites them by them (:meth:`_patching`)."""
        self.rows = dict(rows)
        return float(rows["active"])

    def work(self, rows_before: dict[str, int], rows_after: dict[str, int]) -> float:
        """The active vertices that sent messages in this superstep."""
        return float(rows_before["active"])

    def result(self, state: State) -> DataFrame:
        labels, patch = state.frames["labels"], state.frames.get("patch")
        return (labels if patch is None else overlaid(labels, patch)).select("id", F.col("label").alias("value"))


def overlaid(labels: DataFrame, newer: DataFrame) -> DataFrame:
    """``labels`` with the labels ``newer`` holds in place of their own (both ``id, label``,
    co-partitioned: a shuffled-hash join built on ``newer``, no exchange)."""
    new = newer.withColumnRenamed("label", "new").hint("shuffle_hash")
    return labels.join(new, "id", "left").select("id", F.coalesce("new", "label").alias("label"))
