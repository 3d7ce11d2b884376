"""The contract between an iterative algorithm and the :class:`~iterflow.loop.driver.IterationDriver`.

A program describes one superstep as a lazy DataFrame transformation; the driver owns the
loop, the barrier (materialize, truncate lineage), convergence and reconfiguration. This is
what lets iterflow rescale between supersteps without the algorithm knowing about it.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from pyspark.sql import DataFrame, SparkSession

from iterflow.loop.hashed import by_key, without_shuffle
from iterflow.loop.lookup import keys_filter

#: Whether a release to one executor keeps the program's inputs as views of their cached blocks
#: (:meth:`IterativeProgram.narrow_views`) instead of rebuilding the cache
#: (``experiments/lazy_release.py`` measures both).
LAZY_NARROW = True

#: Whether a release to two or more executors also leaves its state as the release's copy for
#: the next superstep to read, instead of materializing it at the barrier. Off: measured
#: neutral (stop 50, ``experiments/lazy_release.py --jobs to-two``): the barrier 2.1-2.6 s
#: against 3.0-4.0 s, but the next superstep read the copy from files 1.2-2.2 s slower than
#: the barrier's checkpoint from memory -- WCC 4 -> 2 priced 3.53 s against 3.40 s, 3 -> 2
#: 4.26 s against 3.90 s, PageRank 4 -> 2 2.63 s against 2.89 s; the jobs 0.97-1.02x.
DEFER_RELEASED_STATE = False


@dataclass
class State:
    """The iteration state: keyed DataFrames the driver materializes at each barrier
    (``frames``) and small driver-side values such as k-means centers (``values``).

    Frames are materialized in order; a frame may instead be a function of the frames
    materialized before it (``frames -> DataFrame``), so it reads them from their
    checkpoints instead of recomputing their plans (WCC's labels from the changed set)."""

    frames: dict[str, DataFrame | Callable[[dict[str, DataFrame]], DataFrame]] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)


class IterativeProgram(ABC):
    """One iterative algorithm.

    Subclasses set ``name``; ``max_iterations`` always bounds the run and ``tol`` (when not
    ``None``) stops it once :meth:`delta` falls to or below it. ``step`` must be lazy except
    for small driver-side aggregates (it runs inside the superstep's job group, so any Spark
    job it triggers is attributed to that superstep).
    """

    name: str = "program"
    #: Alternative step functions a policy may switch between at a barrier (first: the default).
    variants: tuple[str, ...] = ("default",)

    def __init__(self, max_iterations: int, tol: float | None = None) -> None:
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1 (got {max_iterations})")
        if tol is not None and not tol >= 0:
            raise ValueError(f"tol must be >= 0 (got {tol})")
        self.max_iterations = max_iterations
        self.tol = tol
        self.partitions: int = 0  # set by the driver before init()
        self.variant: str = self.variants[0]
        #: the bin layout of a program that places its state by bins (``None``: Spark's hash)
        self.layout: Any = None

    @abstractmethod
    def init(self, spark: SparkSession) -> State:
        """Prepare static data (cached) and return the initial state."""

    @abstractmethod
    def step(self, state: State, superstep: int) -> State:
        """Superstep ``superstep`` (1-based): the next state, as lazy DataFrames where possible."""

    def delta(self, old: State, new: State, rows: dict[str, int]) -> float | None:
        """The program's own progress measure after a superstep (``None``: not measured).

        ``rows`` holds the row count of every materialized frame of ``new``.
        """
        return None

    def converged(self, delta: float | None) -> bool:
        """Stop when the delta reaches the tolerance."""
        return self.tol is not None and delta is not None and delta <= self.tol

    def work(self, rows_before: dict[str, int], rows_after: dict[str, int]) -> float:
        """Records the superstep processed, the model's measure of work (default: input state rows)."""
        return float(sum(rows_before.values()))

    #: The cached inputs a relayout re-places, ``(attribute, keys, sorted)`` each: a frame of the
    #: program hash-partitioned by ``keys`` (none: spread evenly), sorted by them within
    #: partitions where :meth:`lookup` reads it. The default :meth:`relayout` re-places them
    #: and :meth:`prepare` builds them ahead (a scale-out's, while supersteps go on).
    cached_inputs: tuple[tuple[str, tuple[str, ...], bool], ...] = ()

    def relayout(self, partitions: int, state: State, assignment: Any = None) -> State:
        """Re-distribute cached static data (edges, points) and the state over ``partitions``.

        Called by the driver after executors changed (the partition count follows the
        cores) and when a policy moves bins (``assignment``, a
        :class:`~iterflow.actuate.partitioning.BinAssignment`; only programs with a :attr:`layout`
        get one). Without it the cached partitions stay on the executors that held them
        (new executors fetch them remotely every superstep) or are recomputed from the
        input (removed executors). Returns the state, lazily re-laid out; the driver
        materializes it. Default: :attr:`cached_inputs` re-placed (:meth:`prepare`, then
        :meth:`adopt`) and the state by :meth:`place_state`.
        """
        return self.adopt(partitions, self.prepare(partitions), state)

    def can_prepare(self) -> bool:
        """Whether :meth:`prepare` builds everything a relayout changes in the inputs: a program
        placed by Spark's hash with :attr:`cached_inputs` (a bin layout moves with its bins)."""
        return bool(self.cached_inputs) and self.layout is None

    def prepare(self, partitions: int) -> dict[str, DataFrame]:
        """:attr:`cached_inputs` re-placed over ``partitions``, cached and materialized, by
        attribute -- the program's own left as they are, so a superstep may still run on them
        (the reconfigurer runs this in the background during a scale-out's supersteps). Within
        :meth:`narrow_views`, a count reached without a shuffle is a view (see :meth:`recache`)."""
        return {name: self._placed(getattr(self, name), partitions, keys, sort)
                for name, keys, sort in self.cached_inputs}

    def adopt(self, partitions: int, prepared: dict[str, DataFrame], state: State) -> State:
        """Use ``prepared`` (:meth:`prepare` at ``partitions``) from now on, free what it
        replaces, and return the state re-placed to match (:meth:`place_state`, lazily)."""
        for name, new in prepared.items():
            self._replaced(getattr(self, name), new)
            setattr(self, name, new)
        self.partitions = partitions
        return self.place_state(state)

    def discard_prepared(self, prepared: dict[str, DataFrame]) -> None:
        """Free what :meth:`prepare` built and will not be adopted (a plan that changed)."""
        for df in prepared.values():
            self.free(df)

    def place_state(self, state: State) -> State:
        """``state`` re-placed to match inputs at :attr:`partitions` (lazily). Default: as it is."""
        return state

    def restore(self, state: State) -> State:
        """Adopt a state read back from a checkpoint: a saved run's Parquet files when a run is
        resumed, or the driver's last reliable checkpoint after executors were lost.

        Called after :meth:`init` (static data is in place); returns the state, lazily. A
        program that places its state to match its cached inputs (a bin layout) must re-place
        it here, because the checkpoint was written under another layout or none. Default:
        the state as it is.
        """
        return state

    def bin_load(self, state: State) -> Any:
        """Per-bin load (numpy array, one entry per bin of :attr:`layout`) after a superstep.

        Only programs with a :attr:`layout` measure it; the driver passes it to the policy,
        which may move hot bins (AutoFlow). Default: ``None``.
        """
        return None

    def switch_variant(self, variant: str, state: State) -> State:
        """Use step function ``variant`` from the next superstep on; returns the state adapted
        to it (a variant may need more columns). Called by the driver at a barrier."""
        if variant not in self.variants:
            raise ValueError(f"{self.name} has no step variant {variant!r} (it has {', '.join(self.variants)})")
        self.variant = variant
        return state

    def owns(self, df: DataFrame) -> DataFrame:
        """Register ``df`` as cached by this program (freed by :meth:`recache` and :meth:`release`)."""
        self.__dict__.setdefault("_owned", {})[id(df)] = df
        return df

    @contextmanager
    def narrow_views(self, allowed: bool = True) -> Iterator[None]:
        """Within: :meth:`recache` keeps a scale-in reached without a shuffle as a view of the
        cached blocks (``allowed``). The reconfigurer allows it for a release to one executor,
        where every block ends up local (decommissioned executors hand theirs over)."""
        before = self.__dict__.get("_narrow_views", False)
        self._narrow_views = allowed
        try:
            yield
        finally:
            self._narrow_views = before

    def recache(self, df: DataFrame, partitions: int, *keys: str, sort: bool = False) -> DataFrame:
        """``df`` re-partitioned (by ``keys``; ``sort``: sorted by them within each partition, as
        :meth:`lookup` wants), cached and materialized. The old copy is freed
        only if this program cached it: a DataFrame the caller passed in (k-means' points) may
        be shared with other jobs, and unpersisting it would make them re-read the source.

        Within :meth:`narrow_views`, where the new count is reached without a shuffle
        (:func:`~iterflow.loop.hashed.without_shuffle`: a count dividing the old), nothing is rebuilt:
        the result is a view whose task ``i`` reads ``df``'s cached blocks ``p % n == i`` -- the
        bytes a rebuilt cache would hold -- and ``df`` stays cached until the view is freed.
        Why: rebuilding was most of a release's price -- PageRank's edges (R-MAT 18, 1M) 4.0 s
        of a 5.1 s relayout 3 -> 1 on one 0.5-core executor, WCC's adjacency (R-MAT 20) 1.6 s
        (stop 49, Spark's event log). Only where one executor is left: a view at 2 reads the
        blocks wherever decommissioning moved them, remote every superstep (WCC 4 -> 2: its
        supersteps after 0.78 s against 0.53 s rebuilt, ``experiments/results/lazy_release.txt``)."""
        return self._replaced(df, self._placed(df, partitions, keys, sort))

    def _replaced(self, old: DataFrame, new: DataFrame) -> DataFrame:
        """``new``, with ``old`` freed -- unless ``new`` is a view of it (freed with the view)."""
        if id(new) not in self.__dict__.get("_views", {}):
            self.free(old)
        return new

    def _placed(self, df: DataFrame, partitions: int, keys: tuple[str, ...], sort: bool) -> DataFrame:
        """:meth:`recache`'s new frame, ``df`` left as it is."""
        view = without_shuffle(df, partitions, *keys) if self.__dict__.get("_narrow_views") else None
        if view is not None:
            self.__dict__.setdefault("_views", {})[id(view)] = (view, df)  # freeing the view frees what it reads
            return view
        new = by_key(df, partitions, *keys)
        new = self.owns((new.sortWithinPartitions(*keys) if sort else new).cache())
        new.count()
        return new

    def lookup(self, df: DataFrame, key: str, keys: list[int]) -> DataFrame:
        """The rows of ``df`` (cached, sorted by ``key`` within partitions) whose ``key`` is in a
        range of ``keys`` -- a superset, for a join to select from -- reading only the cached
        batches that can hold them (:mod:`iterflow.loop.lookup`). A view (:meth:`recache` within
        :meth:`narrow_views`) is filtered on the cached frame it reads, then viewed again: a
        filter above a view reads every batch."""
        which = keys_filter(key, keys)
        viewed = self.__dict__.get("_views", {}).get(id(df))
        if viewed is not None:
            again = without_shuffle(viewed[1].where(which), self.partitions, key)
            if again is not None:
                return again
        return df.where(which)

    def free(self, df: DataFrame) -> None:
        """Unpersist ``df`` if this program cached it (:meth:`owns`), or what it is a view of
        (:meth:`recache`); leave the caller's alone."""
        view = self.__dict__.get("_views", {}).pop(id(df), None)
        if view is not None:
            self.free(view[1])
        elif self.__dict__.get("_owned", {}).pop(id(df), None) is not None:
            df.unpersist()

    def release(self) -> None:
        """Free every DataFrame this program cached for itself (not the caller's inputs)."""
        self.__dict__.pop("_views", None)
        for df in self.__dict__.pop("_owned", {}).values():
            df.unpersist()

    @abstractmethod
    def result(self, state: State) -> DataFrame:
        """The output DataFrame of the final state."""

    def params(self) -> dict[str, Any]:
        """Parameters worth logging with the run."""
        return {"program": self.name, "max_iterations": self.max_iterations, "tol": self.tol,
                "variant": self.variant}
