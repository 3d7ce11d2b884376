"""Recorded runs as the simulator reads them: per superstep, the tasks of each stage and the
time outside them (issue 14, items 1-2).

Why its own reader: a recorded superstep table (``supersteps.parquet`` in MLflow, ``--stats``
CSV, the experiments' ``*_supersteps.csv``) holds what a replay needs, but in two shapes:

* ``stage_tasks`` (JSON ``[[stage, submitted, completed, [task ms, ...]], ...]``): the exact
  task durations of every stage, in stage order -- replayed as they are;
* older tables have only ``tasks``, ``stages`` and the task quantiles ``task_seconds_min /
  median / p90 / max``: the superstep's ``tasks`` durations are then *sketched* from that
  piecewise-linear quantile function, rescaled to sum to ``executor_run_seconds`` where
  recorded (seeded shuffle, split into ``stages`` consecutive stages). Such a run's tasks are approximate; :attr:`RecordedRun.sketched` says so and the
  output names it.

What a superstep spent outside tasks (driver, scheduling, the barrier's jobs) is its measured
wall time minus the list schedule of its tasks at its own slots, never below 0 -- the same
split :class:`~iterflow.model.profiles.Profile` makes -- and is kept as is at every size.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from iterflow.errors import InputError
from iterflow.loop.records import SuperstepRecord, executor_seconds, num, records
from iterflow.model.tasks import makespan
from iterflow.observe.stats import task_durations

REQUIRED = ("superstep", "wall_seconds", "executors")
SKETCH = ("tasks", "task_seconds_min", "task_seconds_median", "task_seconds_p90", "task_seconds_max")
LABELS = ("job", "policy", "rep", "run_id", "target_seconds", "experiment")
RUN_ID = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class Step:
    """One recorded superstep, as the simulator replays it."""

    superstep: int
    wall: float
    executors: int
    cores: int
    partitions: int
    work: float
    delta: float | None
    barrier: float
    stages: tuple[tuple[float, ...], ...]   # task seconds per stage, in stage order
    exact: bool                             # from stage_tasks (False: sketched from quantiles)

    @property
    def outside(self) -> float:
        """Seconds outside tasks: wall minus the tasks' list schedule at the recorded slots."""
        return max(0.0, self.wall - sum(makespan(s, self.cores) for s in self.stages))

    def stage_tasks(self, stages: Sequence[Sequence[float]] | None = None) -> str | None:
        """``Stats.stage_tasks`` JSON of ``stages`` (default: the recorded ones); None for a
        sketched step (the recorded run's model never saw task durations either)."""
        if not self.exact:
            return None
        rows = [[k, 0, 0, [round(t * 1e3, 3) for t in s]] for k, s in enumerate(stages or self.stages)]
        return json.dumps(rows)


@dataclass
class RecordedRun:
    """One recorded run: its supersteps, their records and where they came from."""

    name: str
    source: str
    steps: list[Step]
    records: list[SuperstepRecord]
    labels: dict[str, Any]  # the first row's job / policy / rep / run_id / target_seconds, where present

    @property
    def sketched(self) -> bool:
        return not all(s.exact for s in self.steps)

    @property
    def cores_per_executor(self) -> int:
        s = self.steps[0]
        return max(1, round(s.cores / s.executors)) if s.executors else 1

    @property
    def sizes(self) -> list[int]:
        return [s.executors for s in self.steps]



def runtime(history: Sequence[SuperstepRecord]) -> float:
    """Wall seconds of a run: its supersteps, barriers and rescale pauses (both sides of a
    comparison use this one formula)."""
    pause = sum((r.actuated.pause_seconds or 0.0) for r in history if r.actuated is not None)
    return float(sum(r.wall_seconds + r.barrier_seconds for r in history) + pause)


def cost(history: Sequence[SuperstepRecord]) -> float:
    """Executor-seconds of a run (:func:`~iterflow.loop.records.executor_seconds` per superstep)."""
    return float(sum(executor_seconds(r) for r in history))


def read_table(source: str) -> tuple[pd.DataFrame, str]:
    """The superstep table at ``source``: a Parquet or CSV path, or an MLflow run id (its
    ``supersteps.parquet`` artifact in the tracking store :mod:`iterflow.app.tracking` uses)."""
    path = Path(source)
    if path.is_file():
        try:
            if path.suffix == ".parquet":
                return pd.read_parquet(path), str(path)
            if path.suffix == ".csv":
                return pd.read_csv(path), str(path)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's input
            raise InputError(f"{path}: cannot read it as a superstep table ({type(exc).__name__}: {exc})") from None
        raise InputError(f"{path}: --run takes a .parquet or .csv superstep table (or an MLflow run id)")
    if RUN_ID.match(source):
        return _from_mlflow(source), f"MLflow run {source}"
    raise InputError(f"--run {source}: no such file, and not an MLflow run id")


def _from_mlflow(run_id: str) -> pd.DataFrame:
    import mlflow

    from iterflow.app.tracking import superstep_table, tracking_uri

    mlflow.set_tracking_uri(tracking_uri())
    try:
        return superstep_table(run_id)
    except Exception as exc:  # noqa: BLE001 - reported as the input it is
        raise InputError(f"--run {run_id}: no supersteps.parquet in the MLflow store "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None


def load(source: str, seed: int = 0) -> list[RecordedRun]:
    """Every run in the table at ``source`` (split by ``run_id``, else where the superstep
    number restarts), each with its steps; bad input is an :class:`InputError` naming the file."""
    df, where = read_table(source)
    return runs_of(df, where, seed)


def runs_of(df: pd.DataFrame, where: str, seed: int = 0) -> list[RecordedRun]:
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(f"{where}: missing column(s) {', '.join(missing)}")
    if df.empty:
        raise InputError(f"{where}: no supersteps")
    has_tasks = "stage_tasks" in df.columns and df["stage_tasks"].astype(str).str.len().gt(2).any()
    if not has_tasks and any(c not in df.columns for c in SKETCH):
        raise InputError(f"{where}: no task durations (column stage_tasks) and no task quantiles "
                         f"({', '.join(c for c in SKETCH if c not in df.columns)} missing)")
    out = []
    for k, part in enumerate(_split(df)):
        rows = part.to_dict("records")
        steps = [_step(row, where, seed) for row in rows]
        labels = {c: rows[0][c] for c in LABELS if c in rows[0] and rows[0][c] == rows[0][c]}
        out.append(RecordedRun(_name(rows[0], k), where, steps, records(rows), labels))
    return out


def _split(df: pd.DataFrame) -> list[pd.DataFrame]:
    if "run_id" in df.columns and df["run_id"].notna().all():
        return [g for _, g in df.groupby("run_id", sort=False)]
    restart = (df["superstep"].diff().fillna(1) <= 0).cumsum()
    return [g for _, g in df.groupby(restart, sort=False)]


def _name(row: dict[str, Any], k: int) -> str:
    parts = [str(row[c]) for c in ("job", "policy", "rep") if c in row and row[c] == row[c]]
    return "/".join(parts) if parts else str(row.get("run_id") or f"run {k}")


def _step(row: dict[str, Any], where: str, seed: int) -> Step:
    sup = int(num(row["superstep"]) or 0)
    wall, e = num(row["wall_seconds"]), num(row["executors"])
    if wall is None or wall < 0 or e is None or e < 1:
        raise InputError(f"{where}: superstep {sup}: wall_seconds and executors must be numbers (>= 0, >= 1)")
    cores = int(num(row.get("cores")) or e)
    stages, exact = _stages(row, sup, seed)
    if not stages:
        raise InputError(f"{where}: superstep {sup}: no task durations (stage_tasks empty, no task quantiles)")
    return Step(sup, wall, int(e), cores, int(num(row.get("partitions")) or 0), num(row.get("work")) or 1.0,
                num(row.get("delta")), num(row.get("barrier_seconds")) or 0.0, stages, exact)


def _stages(row: dict[str, Any], superstep: int, seed: int) -> tuple[tuple[tuple[float, ...], ...], bool]:
    raw = row.get("stage_tasks")
    if isinstance(raw, str) and len(raw) > 2:
        parsed = json.loads(raw)
        return tuple(tuple(t / 1e3 for t in task_durations(r)) for r in parsed if r[3]), True
    q = [num(row.get(c)) for c in SKETCH]
    if any(v is None for v in q) or q[0] < 1:
        return (), False
    n = int(q[0])
    qs = np.interp((np.arange(n) + 0.5) / n, [0.0, 0.5, 0.9, 1.0], q[1:])
    total = num(row.get("executor_run_seconds"))
    if total is not None and total > 0 and qs.sum() > 0:  # the quantiles' mean is not the tasks' mean
        qs = qs * (total / qs.sum())
    np.random.default_rng([seed, superstep]).shuffle(qs)
    k = max(1, min(n, int(num(row.get("stages")) or 1)))
    return tuple(tuple(float(x) for x in c) for c in np.array_split(qs, k)), False


def pick(runs: list[RecordedRun], which: str | None, source: str) -> RecordedRun:
    """The run ``which`` names (its index or name) among ``runs``; the only one if it is None."""
    if which is None:
        if len(runs) == 1:
            return runs[0]
        raise InputError(f"{source} holds {len(runs)} runs; choose one with --which "
                         f"(0..{len(runs) - 1} or a name: {', '.join(r.name for r in runs[:6])}"
                         f"{', ...' if len(runs) > 6 else ''})")
    if which.isdigit() and int(which) < len(runs):
        return runs[int(which)]
    named = [r for r in runs if r.name == which]
    if len(named) == 1:
        return named[0]
    raise InputError(f"--which {which}: no such run in {source} (0..{len(runs) - 1} or a name)")


def median(values: Sequence[float | None]) -> float | None:
    vals = [v for v in (num(x) for x in values) if v is not None and math.isfinite(v)]
    return float(np.median(vals)) if vals else None
