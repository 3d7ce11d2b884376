"""A cluster's measured task slow-down with scale-out, kept apart from any program's history.

Why: the resource model replays a superstep's measured tasks at other sizes
(:mod:`iterflow.model.replay`); on a cluster whose executors share hardware, a task measured at 4
executors runs faster at 3 (measured on the emulated cluster: PageRank's tasks 19 % faster,
k-means' 23 %). That slow-down is a property of the cluster, learned from runs of any program at
several sizes (:mod:`iterflow.model.contention`). A user's *first* run on a cluster has none in
its MLflow store, so its model takes a task at 3 executors to cost what it cost at 4, and a
``target`` run keeps every executor for targets a smaller size meets. ``iterflow cluster
calibrate`` measures it once per cluster (a fixed PageRank job on a generated graph at a few
static sizes, :mod:`iterflow.app.calibrate`) and keeps the per-size task seconds here, in
``$ITERFLOW_HOME/cluster-profiles.json`` keyed by the cluster (the embedded cluster's shape or
the master URL): every later run on that cluster learns from them together with the store's
runs of other programs.
"""
from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from iterflow.errors import InputError
from iterflow.files import atomic_file, iterflow_home, private_dir


#: How many of a cluster's calibrations (the newest, this one included) say which size runs fastest
#: (:meth:`ClusterProfile.pooled_walls`).
POOLED = 5

log = logging.getLogger(__name__)


def profiles_file() -> Path:
    return iterflow_home() / "cluster-profiles.json"


@dataclass(frozen=True)
class ClusterProfile:
    """``task_seconds``: executors' slots -> the calibration job's task seconds in its steady
    supersteps (every task; a profile written before stop 37 kept a mean per superstep --
    :meth:`tasks` reads every task off its ``supersteps`` then)."""

    cluster: str
    task_seconds: dict[float, list[float]]
    job: str = ""
    measured_at: str = ""
    seconds: float = 0.0  # what the calibration cost, wall clock
    notes: dict[str, Any] = field(default_factory=dict)
    supersteps: list[dict[str, Any]] = field(default_factory=list)  # the calibration run's table rows
    #: the cluster's calibrations before this one, oldest first, each ``{"measured_at": ...,
    #: "walls": {slots: median steady superstep seconds}}`` (:meth:`pooled_walls`); :func:`save`
    #: carries them over from the profile it replaces, the newest :data:`POOLED` - 1 of them
    earlier: list[dict[str, Any]] = field(default_factory=list)

    def records(self) -> list[Any]:
        """The calibration run's superstep records: what a run prices its rescales from."""
        from iterflow.loop.records import records

        return records(self.supersteps) if self.supersteps else []

    def steady_walls(self, rows: list[Any] | None = None) -> dict[float, list[float]]:
        """``slots -> [wall seconds]`` of the supersteps the calibration measured its task seconds
        on (the descending pass, each size past its warm-up): how fast one fixed job runs at each
        size, all it costs beyond its tasks included. Not the warm-up hold at the maximum (JIT)
        nor the climb back (fresh executors): only the maximum and 2 have those, and counted in
        they made 3 executors look 2-24 % faster than 4 where the pass measured 4 up to 18 %
        faster (stop 29-32b). ``rows``: :meth:`records`, where the caller has them already."""
        out: dict[float, list[float]] = {}
        for r in self._steady(rows):
            if r.wall_seconds > 0 and r.ran.cores:
                out.setdefault(float(r.ran.cores), []).append(float(r.wall_seconds))
        return out

    @property
    def pooled_with(self) -> list[dict[str, Any]]:
        """The :attr:`earlier` calibrations :meth:`pooled_walls` reads with this one: the newest
        :data:`POOLED` - 1."""
        return self.earlier[-(POOLED - 1):]

    def summary(self, rows: list[Any] | None = None) -> dict[str, Any]:
        """What a later calibration of the cluster keeps of this one (:attr:`earlier`)."""
        walls = {str(k): float(np.median(v)) for k, v in self.steady_walls(rows).items() if v}
        return {"measured_at": self.measured_at, "walls": walls}

    def pooled_walls(self, rows: list[Any] | None = None, ref: float | None = None) -> dict[float, list[float]]:
        """``slots -> [seconds]``: the median over this calibration and the :attr:`earlier` ones of
        each size's steady superstep as a ratio to the same calibration's size ``ref`` (default
        its largest), in this calibration's seconds at ``ref`` -- which size the cluster runs
        fastest (:meth:`~iterflow.model.contention.Contention.fastest`), read on all of its
        calibrations; and, from the size the per-size terms are matched from, the supersteps
        they are matched to (:meth:`matched`).

        Why not this one's alone: one calibration reads the sizes' supersteps with an error as
        large as their differences. Over 62 Pareto sessions on the emulated cluster
        (``experiments/cold_start_scan.py``), one calibration's ratio of 3 executors to 4 was
        spread 0.134 (std of the log), the session's own jobs' 0.089, and the two did not follow
        each other (correlation -0.05 over 89 (session, job) pairs), while their medians agreed
        (0.94x and 0.98x; 2 against 4: 1.14x and 1.16x). Started where its one calibration read
        fastest, a cold start sat within 5 % of the job's fastest static size in 65 % of the pairs
        (4 in 17: PageRank's target runs started at 4 cost 1.5x the cheapest static size's
        executor-seconds, stop55prkmb); on the median of the cluster's calibrations so far, 76 %
        (at 3 in all 89), on the newest five 75 %. Side by side in one session (stop56prkm34, each
        of ten targets run from 3 and from 4): PageRank met 10 of 10 from 3 at a median 1.43x the
        cheapest static size's executor-seconds, 6 of 10 from 4 at 1.59x; k-means 10 of 10 at 1.09x
        and at 1.32x.

        The same median for the per-size terms (stop 59): matched to the newest calibration
        alone, a cold model read every job through its misreadings -- ``stop58all``'s read 2
        executors at 0.85x the time of 3 (the four before it 0.93-1.44x), the model read
        PageRank's 2 ~17 % faster than 3, ``target`` released 3 -> 2 at barriers 2-3 and met 4
        of 10 targets (static-2 ran 1.10-1.16x static-3). From one size
        (``experiments/cross_size_error.py --from-one``, the seven sessions with earlier
        calibrations, 5856 predictions) the sizes a static run is not at: median error 19.9 % ->
        18.1 %, within 15 % 39 % -> 43 %; the releases from 3 PageRank 3 -> 2 19.8 -> 13.8 %,
        k-means 20.6 -> 15.3 %, WCC 18.8 -> 16.4 %; from 4 mixed (PageRank 4 -> 2 23.6 -> 25.1 %,
        WCC 4 -> 1 25.8 -> 31.5 %). Matched to the median ratios to the largest size instead, the
        change was nil (0.202 -> 0.201, stop 58): only the ratios to the size matched from count."""
        own = {k: float(np.median(v)) for k, v in self.steady_walls(rows).items() if v}
        top = max(own) if ref is None and own else ref
        if top not in own or not self.earlier:
            return {k: [v] for k, v in own.items()}
        ratios: dict[float, list[float]] = {}
        for walls in [*(e.get("walls") or {} for e in self.pooled_with), own]:
            w = {float(k): float(v) for k, v in walls.items()}
            if w.get(top, 0) > 0:  # a calibration that ran this one's largest size
                for k, v in w.items():
                    ratios.setdefault(k, []).append(v / w[top])
        return {k: [float(np.median(r)) * own[top]] for k, r in sorted(ratios.items()) if k in own}

    def tasks(self, rows: list[Any] | None = None) -> dict[float, list[float]]:
        """``slots -> [task seconds]`` of the measured steady supersteps, the form
        :func:`iterflow.model.contention.fit` takes: every task, re-read from the calibration
        run's records where the profile kept them, so an older profile's per-superstep means
        do not hide the short tasks from the long (:func:`~iterflow.model.contention.quantile_pairs`)."""
        from iterflow.loop.records import model_rows
        from iterflow.model.contention import row_task_seconds

        steady = self._steady(rows)
        found = row_task_seconds(model_rows(steady, 0)) if steady else {}
        # all sizes re-read or none: one job's sizes pair quantile by quantile, every task against
        # every task (a mean per superstep against every task would read as a slow-down)
        return found if found and set(found) >= set(self.task_seconds) else self.task_seconds

    def contention(self, rows: list[Any] | None = None) -> Any:
        """The cluster's task slow-down and the sizes' measured supersteps, as
        :func:`iterflow.model.contention.fit` reads this profile alone."""
        from iterflow.model.contention import fit

        rows = self.records() if rows is None else rows
        return self.matched(fit([self.tasks(rows)], walls=self.pooled_walls(rows)), rows)

    def matched(self, found: Any, rows: list[Any] | None = None) -> Any:
        """``found`` (a :class:`~iterflow.model.contention.Contention`, of this profile and maybe
        other jobs) with its per-size terms matched to this calibration's measured supersteps
        (:func:`~iterflow.model.contention_match.match_walls`) -- each size's as the median over it and
        the earlier calibrations of its ratio to the size matched from (:meth:`pooled_walls`),
        then met half way by the executors' CPU share at each size (:meth:`cpu_shares`,
        :func:`~iterflow.model.contention_match.with_cpu_share`), with a task's fixed cost measured at
        each size (:func:`task_fixed_by_size`); as it was where the profile kept no
        records (written before stop 37)."""
        from iterflow.loop.records import model_rows
        from iterflow.model.contention_match import match_walls, matching_base, with_cpu_share
        from iterflow.model.profiles import Profile

        rows = self.records() if rows is None else rows
        steady = self._steady(rows)
        profiles = [p for p in (Profile.parse(*r) for r in model_rows(steady, 0)) if p is not None]
        if not profiles:
            return found
        base = matching_base(profiles)
        walls = {k: v[0] for k, v in self.pooled_walls(rows, base).items()}
        return replace(with_cpu_share(match_walls(found, profiles, walls), self.cpu_shares(rows)),
                       fixed=task_fixed_by_size(profiles))

    def cpu_shares(self, rows: list[Any] | None = None) -> dict[float, float]:
        """``slots -> CPU seconds / run seconds`` of the executors' tasks over the calibration's
        measured steady supersteps: the share of a core a task got at each size
        (:func:`~iterflow.model.contention_match.with_cpu_share`); none where the records kept no CPU
        time. ``rows``: :meth:`records`, where the caller has them already."""
        cpu: dict[float, float] = {}
        run: dict[float, float] = {}
        for r in self._steady(rows):
            c, t = (r.stats.executor_cpu_seconds, r.stats.executor_run_seconds) if r.stats else (None, None)
            if r.ran.cores and c and t and np.isfinite(c) and np.isfinite(t):
                m = float(r.ran.cores)
                cpu[m], run[m] = cpu.get(m, 0.0) + float(c), run.get(m, 0.0) + float(t)
        return {m: cpu[m] / run[m] for m in cpu if run[m] > 0}

    def _steady(self, rows: list[Any] | None) -> list[Any]:
        """The records the calibration measured on: its descending pass, past each size's warm-up."""
        rows = self.records() if rows is None else rows
        measured = set(self.notes.get("measured_supersteps") or ()) or {r.superstep for r in descending_pass(rows)}
        return measured_steady(rows, measured, int(self.notes.get("warmup_supersteps", 1) or 1))

    @property
    def sizes(self) -> list[float]:
        return sorted(self.task_seconds)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["task_seconds"] = {str(k): v for k, v in self.task_seconds.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "profile") -> "ClusterProfile":
        try:
            seen = {float(k): [float(x) for x in v] for k, v in dict(d["task_seconds"]).items()}
            earlier = [{"measured_at": str(e.get("measured_at", "")),
                        "walls": {str(float(k)): float(v) for k, v in dict(e.get("walls") or {}).items()}}
                       for e in d.get("earlier") or []]
            return cls(str(d["cluster"]), seen, str(d.get("job", "")), str(d.get("measured_at", "")),
                       float(d.get("seconds", 0.0)), dict(d.get("notes") or {}), list(d.get("supersteps") or []),
                       earlier)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{where}: not a cluster profile ({exc})") from exc


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: unreadable cluster profiles ({exc}); remove it or run `iterflow cluster "
                         "calibrate` again") from exc
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a JSON object of cluster -> profile")
    return doc


def load(cluster: str, path: Path | None = None) -> ClusterProfile | None:
    """The profile of ``cluster``, or None where it was never calibrated."""
    path = path or profiles_file()
    entry = _read(path).get(cluster)
    return None if entry is None else ClusterProfile.from_dict(entry, f"{path} [{cluster!r}]")


def save(profile: ClusterProfile, path: Path | None = None, fresh: bool = False) -> Path:
    """Add or replace ``profile`` (atomically: a crash leaves the old file, not half a new one).
    The profile it replaces and that one's :attr:`~ClusterProfile.earlier` calibrations become
    the new one's earlier ones (the newest :data:`POOLED` - 1), unless ``fresh`` (the cluster
    changed: its earlier calibrations describe another)."""
    path = path or profiles_file()
    private_dir(path.parent)
    doc = _read(path)
    old = doc.get(profile.cluster)
    if old is not None and not fresh and not profile.earlier:
        try:
            before = ClusterProfile.from_dict(old, f"{path} [{profile.cluster!r}]")
            profile = replace(profile, earlier=[*before.earlier, before.summary()][-(POOLED - 1):])
        except InputError as exc:  # an unreadable old entry: replaced, not pooled
            log.warning("%s", exc)
    doc[profile.cluster] = profile.to_dict()
    with atomic_file(path) as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
    return path


def measured_steady(rows: list[Any], measured: set[int], warm: int) -> list[Any]:
    """The records among superstep numbers ``measured`` past the first ``warm`` of their executor
    set: what a calibration's task seconds and superstep walls are both taken from."""
    from iterflow.loop.records import epoch_ages

    return [r for r, age in zip(rows, epoch_ages(rows)) if r.superstep in measured and age > warm]


def descending_pass(rows: list[Any]) -> list[Any]:
    """The records of a calibration run's measured pass, for a profile saved before it named its
    supersteps (``notes["measured_supersteps"]``): from the start down to the first size larger
    than the one before (the climb back is not measured), each size's segment cut to as many
    supersteps as the sizes after the first held: the first's last ones (the rest of it is the
    warm-up hold), the others' first ones (the last size also ran the climb's first superstep)."""
    segments: list[list[Any]] = []
    for r in rows:
        if segments and segments[-1][-1].executors == r.executors and r.superstep > segments[-1][-1].superstep:
            segments[-1].append(r)
        elif segments and r.executors > segments[-1][-1].executors:
            break
        else:
            segments.append([r])
    if len(segments) > 1:
        held = int(np.median([len(s) for s in segments[1:]]))
        segments = [segments[0][-held:]] + [s[:held] for s in segments[1:]]
    return [r for s in segments for r in s]


def task_fixed_by_size(profiles: list[Any]) -> tuple[tuple[float, float], ...]:
    """``(slots, a task's fixed seconds)`` over the calibration's supersteps at each size
    (:func:`~iterflow.model.tasks.task_fixed_cost`: its work is flat, so the shortest task there --
    24-29 ms at 1 slot, 11-22 ms at 2-4 on the emulated cluster, stop62all-stop75quick), for
    :meth:`~iterflow.model.contention.Contention.task_fixed`."""
    from iterflow.model.tasks import task_fixed_cost

    sizes = sorted({p.slots for p in profiles})
    return tuple((float(m), float(task_fixed_cost((p.stages, p.work) for p in profiles if p.slots == m)))
                 for m in sizes)
