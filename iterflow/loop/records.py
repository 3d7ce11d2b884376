"""One typed record per superstep: what ran, what was measured, predicted, decided and done.

A :class:`SuperstepRecord` is built in the order of a superstep and never changed after: the
loop makes each part (a frozen dataclass) once, where the fact becomes known, and combines
them with :func:`dataclasses.replace`. Policies read the parts by attribute; the flat table a
user sees (the run's ``supersteps`` DataFrame, the ``--stats`` CSV, ``_supersteps.parquet``,
the MLflow metrics) is made from the records by :func:`table` / :meth:`SuperstepRecord.row`
alone, and read back by :meth:`SuperstepRecord.from_row` (resume, warm-start, test fixtures).

One rule each, used everywhere: :func:`feeds_model` (which supersteps the resource model
learns from) and :func:`executor_seconds` (what a superstep cost in executor time).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd


def num(x: Any) -> float | None:
    """A finite float, or None (table cells may be missing, None or NaN)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


@dataclass(frozen=True)
class Ran:
    """Superstep ``superstep`` itself: its wall time, where it ran and what it did."""

    superstep: int
    wall_seconds: float
    executors: int
    cores: int
    partitions: int
    delta: float | None = None
    work: float = 1.0
    state_rows: int = 0
    checkpointed: bool = False
    variant: str = "default"


@dataclass(frozen=True)
class Stats:
    """Statistics of the superstep's Spark jobs (:mod:`iterflow.observe.stats`)."""

    executor_run_seconds: float = 0.0
    executor_cpu_seconds: float = 0.0
    gc_seconds: float = 0.0
    shuffle_read_bytes: float = 0.0
    shuffle_read_records: float = 0.0
    shuffle_remote_bytes: float = 0.0
    shuffle_local_bytes: float = 0.0
    shuffle_write_bytes: float = 0.0
    shuffle_write_records: float = 0.0
    input_records: float = 0.0
    output_records: float = 0.0
    spill_memory_bytes: float = 0.0
    spill_disk_bytes: float = 0.0
    jobs: float = 0.0
    stages: float = 0.0
    tasks: float = 0.0
    task_seconds_min: float = 0.0
    task_seconds_median: float = 0.0
    task_seconds_p90: float = 0.0
    task_seconds_max: float = 0.0
    skew: float = 0.0
    skew_cpu: float = 0.0
    partition_records_max_over_mean: float = 0.0
    utilization: float = 0.0
    state_bytes: float = 0.0
    failed_tasks: float = 0.0
    failed_jobs: float = 0.0
    executors_lost: float = 0.0
    executors_lost_ids: str = "{}"
    main_stage: int = -1
    partition_records: str = "[]"
    partition_seconds: str = "[]"
    stage_tasks: str = "[]"  # per stage: [id, submitted, completed, [task ms]] (observe.stats.stage_tasks)
    stats_seconds: float = 0.0


@dataclass(frozen=True)
class Layout:
    """How the state was laid out after the superstep (programs placed by bins only)."""

    partition_imbalance: float | None = None
    bin_load: Any = field(default=None, repr=False, compare=False)     # per-bin load, not a column
    assignment: Any = field(default=None, repr=False, compare=False)   # BinAssignment, not a column


@dataclass(frozen=True)
class Predicted:
    """The model's prediction of this superstep (made at the barrier before it), and the cold
    excess of a superstep run right after a rescale (part of that rescale's price)."""

    predicted_seconds: float = float("nan")
    cold_seconds: float | None = None


@dataclass(frozen=True)
class Decided:
    """What the policy decided at the barrier and why; ``barrier_seconds`` is the time the
    statistics, the model and the policy took (the framework's own overhead)."""

    decision: str
    reason: str
    barrier_seconds: float = 0.0
    remaining_supersteps: int | None = None   # the run's horizon after this superstep (RunPlan)
    remaining_estimated: bool | None = None   # from the convergence trend, not a known count


@dataclass(frozen=True)
class Actuated:
    """What applying the decision achieved before the next superstep."""

    executors_requested: int | None = None
    executors_active: int | None = None
    actuation_seconds: float | None = None
    actuation_note: str | None = None
    cores_after: int | None = None
    partitions_after: int | None = None
    relayout_seconds: float | None = None
    bins_moved_fraction: float | None = None
    load_moved_fraction: float | None = None
    relayout_shuffle_bytes: float | None = None
    relayout_remote_bytes: float | None = None
    variant_after: str | None = None
    next_predicted_seconds: float = float("nan")
    #: requested executors not yet registered when the next superstep started (a scale-out that
    #: does not wait for them: they join while it runs); None: nothing pending
    executors_pending: int | None = None
    #: executors of a non-waiting scale-out first seen registered at this barrier: the next
    #: superstep is the first they run tasks in (fresh JVMs), so it is cold too
    executors_arrived: int | None = None
    #: partitions a scale-out's relayout is being built for in the background: the next
    #: superstep runs on the old layout beside it (:mod:`iterflow.loop.background`); None: none
    relayout_pending: int | None = None
    #: wall seconds of the background relayout adopted at this barrier (beside supersteps; the
    #: barrier's own part is ``relayout_seconds``): the next superstep is the first on its layout
    relayout_ahead_seconds: float | None = None

    @property
    def laying_out(self) -> bool:
        """A background relayout runs beside the next superstep, or was adopted at this barrier."""
        return bool(self.relayout_pending) or self.relayout_ahead_seconds is not None

    @property
    def pause_seconds(self) -> float | None:
        """Wall seconds the barrier spent rescaling (waiting for executors + relayout)."""
        wait, relayout = num(self.actuation_seconds), num(self.relayout_seconds)
        if wait is None and relayout is None:
            return None
        return (wait or 0.0) + (relayout or 0.0)


@dataclass(frozen=True)
class Recovered:
    """Faults survived in the superstep (rewinds to the last reliable checkpoint), and the
    bookkeeping of a resumed run and of saved checkpoints."""

    recovered_from: int | None = None
    recoveries: int | None = None
    recovery_error: str | None = None
    replays: int | None = None
    recovery_seconds: float | None = None
    resumed_from: int | None = None
    checkpoint_saved_seconds: float | None = None


PARTS = (("ran", Ran), ("stats", Stats), ("layout", Layout), ("predicted", Predicted),
         ("decided", Decided), ("actuated", Actuated), ("recovered", Recovered))


@dataclass(frozen=True)
class SuperstepRecord:
    """Everything known about one superstep, part by part (``None``: not (yet) known)."""

    ran: Ran
    stats: Stats | None = None
    layout: Layout | None = None
    predicted: Predicted = Predicted()
    decided: Decided | None = None
    actuated: Actuated | None = None
    recovered: Recovered | None = None

    # -- the facts policies read most -------------------------------------------------------
    @property
    def superstep(self) -> int:
        return self.ran.superstep

    @property
    def executors(self) -> int:
        return self.ran.executors

    @property
    def wall_seconds(self) -> float:
        return self.ran.wall_seconds

    @property
    def barrier_seconds(self) -> float:
        return self.decided.barrier_seconds if self.decided is not None else 0.0

    @property
    def executors_lost(self) -> int:
        return int(self.stats.executors_lost) if self.stats is not None else 0

    def with_(self, **parts: Any) -> "SuperstepRecord":
        """This record with some parts set (records are never changed in place)."""
        return dataclasses.replace(self, **parts)

    # -- the flat row -----------------------------------------------------------------------
    def row(self) -> dict[str, Any]:
        """The record as one row of the superstep table: every field of every part that is
        known, by its column name. What ran is always there (``delta`` None included); other
        ``None`` fields are left out (NaN in the table, a column only where some row has it)."""
        out: dict[str, Any] = {}
        for name, _ in PARTS:
            part = getattr(self, name)
            if part is None:
                continue
            for f in fields(part):
                if not f.repr:
                    continue
                value = getattr(part, f.name)
                if value is not None or name == "ran":
                    out[f.name] = value
        return out

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "SuperstepRecord":
        """A record from a table row (a saved run, an earlier run's table, a test's dict).
        Missing or NaN cells become ``None``; a part with no cell at all is ``None``."""
        def cell(f: dataclasses.Field, value: Any) -> Any:
            if value is None or (isinstance(value, float) and math.isnan(value)):
                return None
            if f.type in ("int", "int | None") and num(value) is not None:
                return int(value)
            if f.type in ("bool", "bool | None"):
                return bool(value)
            return value.item() if hasattr(value, "item") else value

        parts: dict[str, Any] = {}
        for name, klass in PARTS:
            given = {f.name: cell(f, row[f.name]) for f in fields(klass) if f.name in row and f.repr}
            given = {k: v for k, v in given.items() if v is not None}
            if name == "ran":
                given.setdefault("superstep", int(row.get("superstep", 0) or 0))
                given.setdefault("wall_seconds", num(row.get("wall_seconds")) or 0.0)
                given.setdefault("executors", int(num(row.get("executors")) or 0))
                given.setdefault("cores", int(num(row.get("cores")) or given["executors"]))
                given.setdefault("partitions", int(num(row.get("partitions")) or 0))
            elif name == "decided":
                if "decision" not in given and "reason" not in given and "barrier_seconds" not in given:
                    continue
                given.setdefault("decision", "same")
                given.setdefault("reason", "")
            elif not given:
                continue
            parts[name] = klass(**given)
        if "_bin_load" in row or "_assignment" in row:  # a test's hand-made layout observation
            old = parts.get("layout") or Layout()
            parts["layout"] = dataclasses.replace(old, bin_load=row.get("_bin_load"),
                                                  assignment=row.get("_assignment"))
        parts.setdefault("predicted", Predicted())
        return cls(**parts)


History = Sequence[SuperstepRecord]


def records(rows: Iterable[Mapping[str, Any]] | pd.DataFrame) -> list[SuperstepRecord]:
    """Records from table rows (dicts, or a DataFrame such as an earlier run's table)."""
    if isinstance(rows, pd.DataFrame):
        rows = rows.to_dict("records")
    return [r if isinstance(r, SuperstepRecord) else SuperstepRecord.from_row(r) for r in rows]


def table(history: Iterable[SuperstepRecord]) -> pd.DataFrame:
    """The superstep table: one row per record (the one function that makes it)."""
    return pd.DataFrame([r.row() for r in history])


def is_cold(record: SuperstepRecord, previous: SuperstepRecord | None) -> bool:
    """The first superstep at a new executor count (fresh JVMs, cached blocks read remotely),
    the first after executors that joined during a superstep were seen registered (the first
    in which they run tasks), those that ran beside a background relayout (on the old layout)
    and the first on the layout it built."""
    if previous is None:
        return False
    a = previous.actuated
    moving = a is not None and (bool(a.executors_arrived) or a.laying_out)
    return previous.executors != record.executors or moving


def feeds_model(record: SuperstepRecord, previous: SuperstepRecord | None, age: int | None = None,
                warmup: int = 1) -> bool:
    """Whether the resource model learns from ``record``: not superstep 1 (JIT warm-up, first
    reads of cached inputs) and not a cold superstep -- neither is the steady state of its
    size; with ``age`` (:func:`epoch_ages`), not the first ``warmup`` supersteps of its epoch
    (:mod:`iterflow.model.warmup` learns how many a cluster needs). The one rule for the live
    run, a resumed run and a warm start from earlier runs."""
    if age is not None:
        return age > warmup
    return record.superstep > 1 and not is_cold(record, previous)


def split_runs(history: Sequence[SuperstepRecord]) -> list[list[SuperstepRecord]]:
    """A history of several runs (concatenated oldest first) cut into its runs: a run starts
    where the superstep number does not grow."""
    runs: list[list[SuperstepRecord]] = []
    for r in history:
        if not runs or r.superstep <= runs[-1][-1].superstep:
            runs.append([])
        runs[-1].append(r)
    return runs


def epoch_ages(history: Sequence[SuperstepRecord]) -> list[int]:
    """Each record's age in its *epoch*: 1 for superstep 1 of a run (superstep numbers restart
    where a history holds several) and for a cold superstep (:func:`is_cold`), else one more
    than the record before."""
    ages: list[int] = []
    prev: SuperstepRecord | None = None
    for r in history:
        if prev is not None and r.superstep <= prev.superstep:
            prev = None  # a new run starts
        ages.append(1 if prev is None or is_cold(r, prev) else ages[-1] + 1)
        prev = r
    return ages


def model_rows(history: Sequence[SuperstepRecord], warmup: int = 1) -> list[tuple[float, float, float, str]]:
    """``(cores, work, seconds, stage_tasks)`` of the supersteps in ``history`` that feed the
    model (:func:`feeds_model` with ``warmup``), less those their own run found cold (a release's
    transient, :func:`~iterflow.model.live.feed`); a history of several runs is split where
    superstep numbers restart."""
    return [(float(r.ran.cores), float(r.ran.work), float(r.wall_seconds),
             r.stats.stage_tasks if r.stats is not None else "[]")
            for r, age in zip(history, epoch_ages(history))
            if feeds_model(r, None, age, warmup) and r.predicted.cold_seconds is None]


def executor_seconds(record: SuperstepRecord, span_seconds: float | None = None) -> float:
    """Executor time one superstep cost: its executors over the superstep and its barrier, plus
    the time after the barrier until the next superstep starts -- the rescale pause, or
    ``span_seconds − busy`` where the span was measured from outside (the experiments) -- at
    the larger of the old and new sizes (both are held meanwhile). The one formula for the
    policies' budgets, the report and the experiments."""
    busy = record.wall_seconds + record.barrier_seconds
    act = record.actuated
    after = (act.executors_active if act is not None else None) or record.executors
    extra = (act.pause_seconds if act is not None else None) or 0.0
    if span_seconds is not None and math.isfinite(span_seconds):
        extra = max(span_seconds - busy, 0.0)
    return float(record.executors * busy + max(record.executors, after) * extra)
