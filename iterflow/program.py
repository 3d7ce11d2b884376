"""The contract between an iterative algorithm and the :class:`~iterflow.driver.IterationDriver`.

A program describes one superstep as a lazy DataFrame transformation; the driver owns the
loop, the barrier (materialize, truncate lineage), convergence and reconfiguration. This is
what lets iterflow rescale between supersteps without the algorithm knowing about it.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession


@dataclass
class State:
    """The iteration state: keyed DataFrames the driver materializes at each barrier
    (``frames``) and small driver-side values such as k-means centers (``values``)."""

    frames: dict[str, DataFrame] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)


class IterativeProgram(ABC):
    """One iterative algorithm.

    Subclasses set ``name``; ``max_iterations`` always bounds the run and ``tol`` (when not
    ``None``) stops it once :meth:`delta` falls to or below it. ``step`` must be lazy except
    for small driver-side aggregates (it runs inside the superstep's job group, so any Spark
    job it triggers is attributed to that superstep).
    """

    name: str = "program"

    def __init__(self, max_iterations: int, tol: float | None = None) -> None:
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1 (got {max_iterations})")
        if tol is not None and not tol >= 0:
            raise ValueError(f"tol must be >= 0 (got {tol})")
        self.max_iterations = max_iterations
        self.tol = tol
        self.partitions: int = 0  # set by the driver before init()

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

    def relayout(self, partitions: int) -> None:
        """Re-distribute cached static data (edges, points) over the executors now present.

        Called by the driver after executors changed. Without it, the cached partitions stay
        on the executors that held them before (new executors fetch them remotely every
        superstep) or are recomputed from the input (removed executors). Default: nothing.
        """

    @staticmethod
    def recache(df: DataFrame, partitions: int, *keys: str) -> DataFrame:
        """``df`` re-partitioned (by ``keys``), cached and materialized; the old copy freed."""
        new = (df.repartition(partitions, *keys) if keys else df.repartition(partitions)).cache()
        new.count()
        df.unpersist()
        return new

    @abstractmethod
    def result(self, state: State) -> DataFrame:
        """The output DataFrame of the final state."""

    def params(self) -> dict[str, Any]:
        """Parameters worth logging with the run."""
        return {"program": self.name, "max_iterations": self.max_iterations, "tol": self.tol}
