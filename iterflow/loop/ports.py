"""What the loop is handed: the ports between the superstep order and the world it runs in.

The loop (:mod:`iterflow.loop.driver`) knows the order of a superstep and nothing about how
each step is done on Spark. Each collaborator comes in through one of these protocols, so the
loop's logic is tested against in-memory fakes (``tests/test_loop.py``) and runs on Spark
through the implementations in :mod:`iterflow.loop.spark_engine`,
:mod:`iterflow.observe.stats` and :mod:`iterflow.actuate.executors`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from iterflow.loop.background import Background
from iterflow.loop.program import State
from iterflow.loop.records import Stats


@dataclass(frozen=True)
class ExecutorSnapshot:
    """Active executors (the driver excluded), their total cores and their ids."""

    executors: int
    cores: int
    ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Actuation:
    """What a change of executors achieved."""

    requested: int
    before: int
    active: int
    waited_seconds: float
    removed: tuple[str, ...] = ()
    note: str = ""

    @property
    def satisfied(self) -> bool:
        return self.active == self.requested


class Engine(Protocol):
    """Runs a superstep's jobs and keeps the state: job groups, barriers, checkpoints."""

    def job_group(self, name: str, description: str) -> None:
        """Tag every job from now on with ``name`` (statistics are attributed by it)."""

    def background(self, group: str, description: str, work: Callable[[], Any]) -> Background:
        """``work()`` run in the background while supersteps go on, its jobs tagged ``group``
        (:class:`~iterflow.loop.background.Background`: collected, or cancelled, at a barrier)."""

    def set_partitions(self, partitions: int) -> None:
        """The shuffle partition count of the next supersteps."""

    def barrier(self, state: State) -> tuple[State, dict[str, int]]:
        """Materialize every frame and cut its lineage (kept where it was computed); returns the
        new state and each frame's row count. A frame that is the very object the last barrier
        returned may be passed through as it is, with its count."""

    def secure(self, state: State) -> State:
        """A copy of ``state`` (as a barrier returned it) in the reliable checkpoint dir, written
        from the kept frames, not recomputed: the anchor a rewind starts from, and the state to
        go on with where executors holding the kept frames leave."""

    def release(self, old: State, keep: State) -> None:
        """Free ``old``'s frames that ``keep`` does not carry over."""

    def discard(self, state: State) -> None:
        """Delete the reliable-checkpoint files behind ``state`` (a replaced anchor) and free
        what reading it cached."""

    def snapshot(self) -> ExecutorSnapshot:
        """Executors and cores right now."""


class StatsSource(Protocol):
    """Statistics of the jobs of a job group."""

    def collect(self, superstep: int, wall_seconds: float, snapshot: ExecutorSnapshot,
                state: State) -> Stats:
        """Statistics of superstep ``superstep`` (and executors lost since the last call)."""

    def collect_group(self, group: str, wall_seconds: float, snapshot: ExecutorSnapshot) -> Stats:
        """Statistics of every job of ``group`` (a relayout)."""


class Actuator(Protocol):
    """Changes the application's executors."""

    def set_executors(self, target: int, wait: bool = True) -> Actuation:
        """Request ``target`` executors in total; returns what became active. ``wait=False``:
        a scale-out returns at once, the new executors join while the next superstep runs."""

    def registered(self) -> int:
        """Executors registered now."""

    def start_delays(self) -> list[float]:
        """Seconds the executors this application asked for took to register, as measured so far."""


class Model(Protocol):
    """The resource model as the loop uses it (:class:`~iterflow.model.live.LiveModel`).
    ``stage_tasks``: the superstep's per-stage task durations (``Stats.stage_tasks``) for a
    model that replays them; rows of ``observe_many`` carry it as a fourth field."""

    def observe(self, scale_out: float, work: float, seconds: float, stage_tasks: Any = None) -> Any: ...

    def observe_many(self, rows: Any) -> Any: ...

    def predict_seconds(self, scale_out: float, work: float) -> float: ...

    @property
    def fitted(self) -> bool: ...
