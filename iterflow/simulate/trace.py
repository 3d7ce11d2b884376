"""The trace model of an Ellis trace: what a replay may draw from, and what the policy believes.

Choices (README, "Plan before you run"):

* **Job runtime** of a run = the sum of its Spark jobs' ``DURATION_MS``, the setup job 0
  included. (``FINISHED_AT − STARTED_AT`` of the app is ~1 s longer: the gaps between jobs,
  which no policy changes.) The same definition serves targets, policy, static and recorded.
* **Profiling runs** are the first ``profiling_runs`` (10) ``APP_EVENT_ID``\\ s; the rest are
  *recorded* runs, as Ellis scheduled them. A job the loader dropped for its zero duration
  counts as a 0 s sample (:func:`_fill_gaps`).
* **Samples**: for job index ``j`` and scale-out ``s``, the durations of job ``j`` in the
  profiling runs that ran it at ``s``. A *candidate* scale-out has a sample of every job;
  others (never profiled, or profiled for some jobs only) are forbidden, not interpolated:
  the profiles are far from smooth in the scale-out (anomalies), so an interpolation would
  invent a size nobody measured.
* **Targets**: evenly spread between the median job runtime at the largest and at the
  smallest candidate scale-out (both ends included; one target: the midpoint).
* **Rescale cost** (:meth:`EllisTrace.learn_rescale`): in the recorded runs, the excess over
  the profiled median of the first job after a scale-out change, minus the excess of the jobs
  that ran at an unchanged size (both only where the size was profiled for that job), as a
  median and never below 0. Ellis rescaled *because* a run fell behind (an anomaly), so
  this over-states what a rescale costs rather than under-states it.
* **The model** the policy sees (:class:`ProfileModel`) predicts, at each candidate size, a
  high quantile of the profiled time of the jobs still to run; a forbidden size is predicted
  to take forever.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iterflow.errors import InputError
from iterflow.model.traces import read_ellis_csv

log = logging.getLogger(__name__)

PROFILING_RUNS = 10


@dataclass(frozen=True)
class RecordedRun:
    """One run as Ellis scheduled it: the scale-out and duration of each of its jobs."""

    run: int
    scale_outs: np.ndarray
    seconds: np.ndarray

    @property
    def runtime(self) -> float:
        return float(self.seconds.sum())

    @property
    def executor_seconds(self) -> float:
        return float(self.scale_outs @ self.seconds)


def _fill_gaps(prof: pd.DataFrame) -> pd.DataFrame:
    """The profiling runs with a 0 s row for each job the loader dropped for its zero duration:
    a job id missing *between* a run's jobs (the app's jobs are numbered 0, 1, ...), at the
    size of the job before it. A run's missing tail (an aborted run) is not filled."""
    extra = []
    for run, g in prof.groupby("run"):
        have = dict(zip(g["job"].astype(int), g["scale_out"]))
        size = have[min(have)]
        for j in range(min(have), max(have) + 1):
            size = have.get(j, size)
            if j not in have:
                extra.append({"app": g["app"].iloc[0], "run": run, "job": j, "scale_out": size, "seconds": 0.0})
    return pd.concat([prof, pd.DataFrame(extra)], ignore_index=True) if extra else prof


class EllisTrace:
    """Profiled samples per (job, scale-out), their medians, targets and the recorded runs."""

    def __init__(self, df: pd.DataFrame, source: str = "trace", profiling_runs: int = PROFILING_RUNS) -> None:
        if profiling_runs < 1:
            raise InputError(f"--profiling-runs must be >= 1 (got {profiling_runs})")
        self.source = source
        runs = sorted(df["run"].unique())
        prof_ids = set(runs[:profiling_runs])
        prof = _fill_gaps(df[df["run"].isin(prof_ids)])
        self.jobs: list[int] = sorted(int(j) for j in prof["job"].unique())
        col = {j: k for k, j in enumerate(self.jobs)}
        pooled = prof.groupby(["job", "scale_out"])["seconds"].apply(lambda s: np.sort(s.to_numpy(float)))
        sizes = sorted(int(s) for s in prof["scale_out"].unique())
        complete = [s for s in sizes if all((j, s) in pooled.index for j in self.jobs)]
        if not complete:
            raise InputError(f"{source}: no scale-out of the profiling runs (APP_EVENT_ID "
                             f"{min(prof_ids)}..{max(prof_ids)}) has a duration for every job")
        dropped = sorted(set(sizes) - set(complete))
        if dropped:
            log.warning("%s: scale-outs %s lack some jobs in the profiling runs: not candidates", source, dropped)
        self.scale_outs: list[int] = complete
        self.samples: dict[tuple[int, int], np.ndarray] = {
            (col[int(j)], int(s)): v for (j, s), v in pooled.items() if int(s) in complete}
        self.medians = np.array([[float(np.median(self.samples[(k, s)])) for k in range(len(self.jobs))]
                                 for s in complete])                     # (sizes, jobs)
        self.totals: dict[int, list[float]] = {}
        for run, g in prof.groupby("run"):
            s = g["scale_out"].unique()
            if s.size == 1 and int(s[0]) in complete:
                self.totals.setdefault(int(s[0]), []).append(float(g["seconds"].sum()))
            else:
                log.warning("%s: profiling run %s ran at scale-outs %s: left out of the run totals",
                            source, run, sorted(s.tolist()))
        if not self.totals:
            raise InputError(f"{source}: no profiling run ran all its jobs at one candidate scale-out")
        self.recorded = [RecordedRun(int(run), g.sort_values("job")["scale_out"].to_numpy(float),
                                     g.sort_values("job")["seconds"].to_numpy(float))
                         for run, g in df[~df["run"].isin(prof_ids)].groupby("run")]
        self.rescale_seconds, self.rescale_note = self.learn_rescale()

    @classmethod
    def from_file(cls, path: str | Path, profiling_runs: int = PROFILING_RUNS) -> "EllisTrace":
        """Read ``path`` with the project's Ellis loader (file:line errors are its own)."""
        return cls(read_ellis_csv(path), str(path), profiling_runs)

    # -- what the profile says -----------------------------------------------------------------
    @property
    def n_jobs(self) -> int:
        return len(self.jobs)

    def median_runtime(self, scale_out: int) -> float:
        """Median job runtime of the profiling runs at ``scale_out``."""
        return float(np.median(self.totals[scale_out]))

    def targets(self, n: int) -> np.ndarray:
        """``n`` runtime targets, evenly spread between the median runtime at the largest and at
        the smallest profiled scale-out (ascending; ``n`` = 1: the midpoint)."""
        if n < 1:
            raise InputError(f"--targets must be >= 1 (got {n})")
        lo, hi = sorted((self.median_runtime(max(self.totals)), self.median_runtime(min(self.totals))))
        return np.array([(lo + hi) / 2.0]) if n == 1 else np.linspace(lo, hi, n)

    def index(self, scale_out: float) -> int | None:
        """Row of ``scale_out`` in :attr:`medians`, or None for a forbidden size."""
        s = int(round(scale_out))
        return self.scale_outs.index(s) if s == scale_out and s in self.scale_outs else None

    def draw(self, job: int, scale_out: int, u: Any) -> Any:
        """Job ``job``'s duration at ``scale_out`` for the uniform ``u`` in [0, 1) (or an array of
        them): the sample at that quantile. One ``u`` per (replay, job) is shared by every size
        (common random numbers), so a size is compared with another under the same luck."""
        v = self.samples[(job, scale_out)]
        return v[np.minimum((np.asarray(u) * v.size).astype(int), v.size - 1)]

    # -- what a rescale costs --------------------------------------------------------------------
    def learn_rescale(self) -> tuple[float, str]:
        """``(seconds, how)``: see the module docstring."""
        changed, same = [], []
        for rec in self.recorded:
            for k in range(min(rec.seconds.size, self.n_jobs)):
                i = self.index(rec.scale_outs[k])
                if i is None:
                    continue
                excess = rec.seconds[k] - self.medians[i, k]
                (changed if k > 0 and rec.scale_outs[k] != rec.scale_outs[k - 1] else same).append(excess)
        if not changed or not same:
            return 0.0, "no rescale of a recorded run landed on a profiled size: charged 0 s"
        cost = max(0.0, float(np.median(changed) - np.median(same)))
        return cost, (f"first job after {len(changed)} recorded rescales exceeds the profile by "
                      f"{np.median(changed):.1f}s (median), jobs at an unchanged size by {np.median(same):.1f}s")


class ProfileModel:
    """The model the policy consults during a replay: the trace's profile, where the run is.

    The driver's :class:`~iterflow.policies.predictor.Predictor` asks ``predict([[cores, work]])``
    for one superstep and multiplies by the supersteps left; the jobs of an Ellis trace differ
    (a setup job, iterations, an evaluation job), so this model answers, per scale-out, the
    ``quantile`` of the profiled time of the jobs still to run divided by how many are left --
    the product is that quantile of the rest of the run. The quantile (0.9 by default: the
    goal allows 10 % violations) is of the sum of one independent draw per remaining job from
    its profiled samples, estimated from ``draws`` seeded draws; it makes the policy plan for
    the spread the profile shows rather than its median (a median plan misses about half the
    time when the cheapest size only just makes it). The replay sets the position with
    :meth:`at` before each barrier. Cores are executors (one core each, as the records of a
    replay say); a forbidden size is predicted to take forever.
    """

    fitted = True
    error_estimate_ = float("nan")

    def __init__(self, trace: EllisTrace, quantile: float = 0.9, draws: int = 1000, seed: int = 0) -> None:
        if not 0.0 < quantile < 1.0:
            raise InputError(f"--quantile must be in (0, 1) (got {quantile})")
        self.trace, self.done, self.quantile = trace, 0, quantile
        rng = np.random.default_rng(seed)
        n = trace.n_jobs
        self.table = np.zeros((len(trace.scale_outs), n + 1))  # (sizes, jobs done) -> seconds left
        for i, s in enumerate(trace.scale_outs):
            u = rng.random((draws, n))
            x = np.column_stack([trace.draw(k, s, u[:, k]) for k in range(n)])
            rest = np.cumsum(x[:, ::-1], axis=1)[:, ::-1]        # rest[:, k] = jobs k.. of each draw
            self.table[i, :n] = np.quantile(rest, quantile, axis=0)

    def at(self, done: int) -> "ProfileModel":
        self.done = int(done)
        return self

    def remaining(self, scale_out: float, done: int | None = None) -> float:
        """Predicted seconds of the jobs after the first ``done`` (default: the position)."""
        i = self.trace.index(scale_out)
        k = min(max(self.done if done is None else done, 0), self.trace.n_jobs)
        return float("inf") if i is None else float(self.table[i, k])

    def predict_seconds(self, scale_out: float, work: float = 1.0) -> float:
        left = self.trace.n_jobs - self.done
        return self.remaining(scale_out) / left if left > 0 else 0.0

    def predict(self, X: Any) -> np.ndarray:
        """:meth:`predict_seconds` of each row ``(cores, work)``, vectorised (a barrier asks for
        every candidate size times every forecast sample)."""
        c = np.asarray(X, float).reshape(-1, 2)[:, 0]
        left = self.trace.n_jobs - self.done
        if left <= 0:
            return np.zeros(c.size)
        sizes = np.array(self.trace.scale_outs, float)
        k = np.clip(np.searchsorted(sizes, c), 0, sizes.size - 1)
        known = sizes[k] == c
        k_done = min(max(self.done, 0), self.trace.n_jobs)
        return np.where(known, self.table[k, k_done] / left, np.inf)
