"""In-memory fakes and helpers shared by the Spark-free tests."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from iterflow.loop.records import SuperstepRecord, records


def H(history: Sequence[Mapping[str, Any] | SuperstepRecord], model: Any = None, **kw: Any) -> dict[str, Any]:
    """``policy.decide(**H(rows, model))``: hand-made table rows as the loop hands them to a
    policy -- records, the model, and the last superstep's layout observation."""
    recs = records(history)
    return {"history": recs, "model": model, "layout": recs[-1].layout if recs else None, **kw}


# -- the loop's ports, in memory -----------------------------------------------------------------
import threading  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

from iterflow.loop.ports import Actuation, ExecutorSnapshot  # noqa: E402
from iterflow.loop.program import IterativeProgram, State  # noqa: E402
from iterflow.loop.reconfig import Reconfiguration  # noqa: E402
from iterflow.loop.records import Stats  # noqa: E402


def _set(event: threading.Event) -> threading.Event:
    event.set()
    return event


@dataclass(frozen=True)
class Frame:
    """A state 'frame': a number, and whether it was reliably checkpointed."""

    value: float
    reliable: bool = False


class LostExecutor(Exception):
    """What Spark raises when a superstep lost executors (the text carries a loss marker)."""

    def __init__(self) -> None:
        super().__init__("org.apache.spark.SparkException: ExecutorLostFailure (executor 1 exited)")


@dataclass
class FakeEngine:
    """Barriers that count, job groups and calls in ``events``; ``fail`` holds the job groups
    whose next barrier raises :class:`LostExecutor` once."""

    executors: int = 2
    cores_per_executor: int = 1
    events: list = field(default_factory=list)
    fail: set = field(default_factory=set)
    group: str = ""
    freed: list = field(default_factory=list)    # in-memory frames released: their blocks gone
    deleted: list = field(default_factory=list)  # copies discarded: their files gone
    made: list = field(default_factory=list)     # what the last barrier returned: carried as is
    copies: list = field(default_factory=list)   # every frame secure() wrote, in order
    hold: threading.Event = field(default_factory=lambda: _set(threading.Event()))  # clear: background work waits
    jobs: list = field(default_factory=list)     # every background work started, in order

    def job_group(self, name: str, description: str) -> None:
        self.group = name
        self.events.append(("group", name))

    def background(self, group: str, description: str, work):
        """``work`` in a thread, tagged ``group`` in ``events`` when it starts; held until
        ``hold`` is cleared (a relayout still building at the barriers meanwhile)."""
        from iterflow.loop.background import Background

        def held():
            self.hold.wait(timeout=10)
            return work()
        self.events.append(("background", group))
        self.jobs.append(Background(held, cancel=lambda: (self.events.append(("cancel", group)), self.hold.set())))
        return self.jobs[-1]

    def set_partitions(self, partitions: int) -> None:
        self.events.append(("partitions", partitions))

    def barrier(self, state: State):
        if self.group in self.fail:
            self.fail.discard(self.group)
            raise LostExecutor()
        self.events.append(("barrier", self.group))
        frames: dict = {}
        for k, v in state.frames.items():
            v = v(dict(frames)) if callable(v) else v
            assert self.readable(v), f"barrier of {self.group} reads a freed or deleted frame {k}"
            frames[k] = v if any(v is m for m in self.made) else Frame(v.value)  # a carried frame: as is
        self.made = list(frames.values())
        return State(frames, dict(state.values)), {k: 100 for k in frames}

    def secure(self, state: State):
        self.events.append(("secure", self.group))
        assert all(self.readable(v) for v in state.frames.values()), f"{self.group} copies a freed frame"
        copy = State({k: Frame(v.value, True) for k, v in state.frames.items()}, dict(state.values))
        self.made += list(copy.frames.values())
        self.copies += list(copy.frames.values())
        return copy

    def release(self, old: State, keep: State) -> None:
        kept = {id(f) for f in keep.frames.values()}
        # a released copy stays readable from its files; an in-memory frame does not
        self.freed += [f for f in old.frames.values() if id(f) not in kept and not getattr(f, "reliable", True)]

    def discard(self, state: State) -> None:
        self.deleted += [f for f in state.frames.values() if getattr(f, "reliable", False)]

    def readable(self, frame: Any) -> bool:
        """Whether ``frame`` may still be read: neither released (in memory) nor discarded."""
        return not any(frame is f for f in (*self.freed, *self.deleted))

    def snapshot(self) -> ExecutorSnapshot:
        return ExecutorSnapshot(self.executors, self.executors * self.cores_per_executor,
                                tuple(str(i) for i in range(self.executors)))


@dataclass
class FakeStats:
    engine: FakeEngine
    collected: list = field(default_factory=list)

    def collect(self, superstep, wall_seconds, snapshot, state=None) -> Stats:
        self.collected.append(superstep)
        self.engine.events.append(("stats", superstep))
        return Stats(tasks=float(snapshot.cores * 2))

    def collect_group(self, group, wall_seconds, snapshot) -> Stats:
        self.engine.events.append(("stats", group))
        return Stats(shuffle_read_bytes=10.0, shuffle_remote_bytes=5.0)


@dataclass
class FakeActuator:
    """Executors change at once; or, for a scale-out that does not wait, after ``lag`` calls
    of :meth:`registered` (never, with ``refuse``). ``launched``: a lowered request does not
    stop executors already coming (a standalone master launches them when asked)."""

    engine: FakeEngine
    lag: int = 0
    refuse: bool = False
    register_timeout: float = 60.0
    launched: bool = False
    coming: list = field(default_factory=list)
    delays: list = field(default_factory=list)  # what start_delays measured on the "cluster"

    def set_executors(self, target: int, wait: bool = True) -> Actuation:
        before = self.engine.executors
        self.engine.events.append(("executors", target))
        if target > before and not wait and (self.lag or self.refuse):
            self.coming = [target, self.lag]
            return Actuation(target, before, before, 0.01)
        if self.launched and self.coming and target <= before:
            self.engine.executors = target
            return Actuation(target, before, target, 0.01)
        self.coming = []
        self.engine.executors = target
        return Actuation(target, before, target, 0.5)

    def start_delays(self) -> list[float]:
        return list(self.delays)

    def registered(self) -> int:
        if self.coming and not self.refuse:
            self.coming[1] -= 1
            if self.coming[1] <= 0:
                self.engine.executors, self.coming = self.coming[0], []
        return self.engine.executors


class FakeModel:
    """Learns nothing; remembers what it was fed and predicts ``10 / cores`` seconds."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, float, float]] = []
        self.batches = 0

    @property
    def fitted(self) -> bool:
        return bool(self.rows)

    def observe(self, scale_out, work, seconds, stage_tasks=None):
        self.rows.append((scale_out, work, seconds))

    def observe_many(self, rows):
        rows = [tuple(r)[:3] for r in rows]
        if rows:
            self.batches += 1
            self.rows.extend(rows)

    def predict_seconds(self, scale_out, work=1.0):
        return 10.0 / scale_out


class Doubling(IterativeProgram):
    """x <- x + 1 each superstep (delta: 1/x, so a tolerance ends it); fake frames only."""

    name = "doubling"
    variants = ("default", "fast")

    def init(self, spark) -> State:
        return State({"x": Frame(0.0)})

    def step(self, state: State, superstep: int) -> State:
        return State({"x": Frame(state.frames["x"].value + 1)})

    def delta(self, old: State, new: State, rows) -> float:
        return 1.0 / new.frames["x"].value

    def result(self, state: State) -> float:
        return state.frames["x"].value


class ScriptedPolicy:
    """Returns ``script[superstep]`` (else no change); remembers what each call saw."""

    name = "scripted"

    def __init__(self, script: dict | None = None, start: Any = None) -> None:
        self.script = script or {}
        self.start = start  # what plan_start answers (a Want, or None)
        self.planned_from: list | None = None
        self.seen: list = []
        self.learned: list = []
        self.log: list = []

    def decide(self, history, model=None, *, layout=None, plan=None) -> Reconfiguration:
        self.seen.append((len(history), history[-1].superstep, history[-1].decided, plan))
        return self.script.get(history[-1].superstep, Reconfiguration.none("keep"))

    def spark_conf(self) -> dict:
        return {}

    def learn_rescales(self, history, scale_ins=None) -> int:
        self.learned.append(list(history))
        self.scale_ins_from = None if scale_ins is None else list(scale_ins)
        return len(history)

    def learn_start_delays(self, delays) -> None:
        self.start_delays = list(delays)

    def plan_start(self, past, model, max_iterations=None) -> Any:
        self.planned_from = (list(past), model, max_iterations)
        return self.start
