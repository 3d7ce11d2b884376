"""``iterflow cluster calibrate``: measure the cluster once, for every first run on it.

One fixed job -- PageRank on a generated R-MAT graph -- runs with its executors set by a script
(:func:`schedule`): a warm-up at the maximum executors, then ``supersteps`` supersteps at the
maximum, three quarters, half, 2 and 1 executor, then 2 and the maximum again (scale-outs priced),
each counted once the size's executors are all there. Task seconds are read off the descending
pass only: every size there runs on executors that stayed from the warm-up (a release keeps the
warm ones), so the sizes differ by what sharing the cluster costs and not by how warm a JVM is.
Measured (stop 29): climbing 1 -> 4 instead, the same 2-executor supersteps ran 116-123 ms tasks
early and 68-80 ms once warm, and size 3 came out slower than 4. From its records, kept in the cluster's profile
(:mod:`iterflow.cluster.profile`), a later run on the cluster learns what is the cluster's and
not its program's: how much longer the same tasks take at more executors (every task of each
size's steady supersteps, past the executors' warm-up learned from the same records; their
quantiles tell a fixed cost per task from a stretch, :func:`iterflow.model.contention.quantile_pairs`)
and what a rescale costs -- registration, pause, the cold supersteps of fresh executors and of a
release (:meth:`iterflow.policies.prices.RescalePrices.learn_rescales`), all measured the way a
policy's own rescales are.
"""
from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from algorithms import PageRank
from iterflow.cluster.profile import ClusterProfile, measured_steady
from iterflow.files import iterflow_home
from iterflow.loop.reconfig import Reconfiguration
from iterflow.policies.core import PolicyBase

# ~2.5 s a superstep on one 0.5-core executor, tasks of ~0.1 s at 8 partitions: the length of real
# programs' tasks. Why not smaller: short tasks slow down more as the cluster fills -- measured on the
# emulated cluster (experiments/calibration_task_length.py, 4 workers at 0.5 core, sizes 1-4, one session,
# two runs each): PageRank on 300k edges (47-60 ms tasks) 1.18-1.24 / 1.55-2.17 / 1.91-2.33x at 2 / 3 / 4
# slots, on 1M edges (87-99 ms) 1.03-1.06 / 1.22-1.26 / 1.39-1.67x, where the Pareto programs' own
# static runs slow 1.06-1.09 / 1.18 / 1.50x. Calibrated with the short tasks, target's releases
# predicted WCC's supersteps 20-40 % too fast at sizes it had not run.
SCALE, EDGES = 17, 1_000_000


def sizes_for(max_executors: int) -> list[int]:
    """1, 2, half, three quarters and all of the maximum: the sizes
    :mod:`iterflow.model.contention` keeps a slow-down for (at most five whatever the cluster's).
    Why three quarters: on a cluster that shares hardware the slow-down jumps as it fills (the
    emulated one: 18 % at 3 of 4 slots, 50 % at 4); interpolating 2 -> 4 missed size 3 by 8-13 %."""
    if max_executors < 1:
        raise ValueError(f"max_executors must be >= 1, got {max_executors}")
    return sorted({1, min(2, max_executors), max(1, max_executors // 2), max(1, 3 * max_executors // 4),
                   max_executors})


def schedule(max_executors: int) -> list[int]:
    """The sizes in turn: the warm-up at the maximum, :func:`sizes_for` down (scale-ins priced),
    then 2 and the maximum again (scale-outs priced; none on a cluster of one)."""
    down = sorted(sizes_for(max_executors), reverse=True)
    return [max_executors] + down + sorted({min(2, max_executors), max_executors} - {1})


class Scripted(PolicyBase):
    """Each of ``sizes`` in turn for ``supersteps`` supersteps once all its executors are there
    (a scale-out's executors register while supersteps run: seconds on a fast cluster, 25 s on
    the emulated one under C2, many short supersteps either way). A size the cluster does not
    give within ``patience`` seconds is skipped, and said. A schedule, not a decision."""

    name = "calibration"

    def __init__(self, sizes: Sequence[int], supersteps: int, patience: float = 180.0,
                 holds: Sequence[int] | None = None) -> None:
        super().__init__()
        self.sizes, self.supersteps, self.patience = list(sizes), supersteps, patience
        self.holds = list(holds) if holds is not None else [supersteps] * len(self.sizes)
        self.k, self.held, self.waited = 0, 0, 0.0
        self.skipped: list[int] = []
        self.counted: list[list[int]] = [[] for _ in self.sizes]  # superstep numbers held at each entry
        self.finished = not self.sizes

    def decide(self, history: Any, model: Any = None, *, layout: Any = None, plan: Any = None) -> Reconfiguration:
        last = history[-1]
        if self.finished:
            return Reconfiguration.none("calibration: done")
        hold = self.holds[self.k]
        if last.executors == self.sizes[self.k]:
            self.held += 1
            self.counted[self.k].append(last.superstep)
        else:
            self.waited += last.wall_seconds
        if self.held < hold and self.waited < self.patience:
            return Reconfiguration.none(f"calibration: {self.held} of {hold} supersteps at "
                                        f"{self.sizes[self.k]} executors")
        if self.held < hold:
            self.skipped.append(self.sizes[self.k])
        self.k, self.held, self.waited = self.k + 1, 0, 0.0
        if self.k == len(self.sizes):
            self.finished = True
            return Reconfiguration.none("calibration: done")
        n = self.sizes[self.k]
        if n == last.executors:  # the warm-up's size, now measured
            return Reconfiguration.none(f"calibration: {n} executors, measured from here")
        return self._logged(last.superstep, last.executors,
                            Reconfiguration(reason=f"calibration: {n} executors", executors=n))


class CalibrationJob(PageRank):
    """PageRank that ends when the schedule has run (its ``max_iterations`` only bounds it)."""

    def __init__(self, graph: Any, script: Scripted) -> None:
        super().__init__(graph, max_iterations=10_000)
        self.script = script

    def converged(self, delta: float | None) -> bool:
        return self.script.finished


def calibration_graph(path: Path | None = None) -> Path:
    """The calibration job's input, generated once under ``$ITERFLOW_HOME`` (seeded: every
    calibration measures the same job)."""
    from iterflow.inputs.generate import write_rmat

    path = path or iterflow_home() / "calibration" / f"rmat-{SCALE}-{EDGES}.txt"
    return path if path.exists() else write_rmat(path, SCALE, EDGES, seed=0)


def measure(spark: Any, cluster: str, max_executors: int, *, partitions: int | None = None,
            supersteps: int = 7, graph: Path | None = None,
            say: Callable[[str], None] = lambda _: None) -> ClusterProfile:
    """Run the calibration job on ``spark`` (see the module docstring) and return the profile;
    the session keeps the executors it had (a notebook's, a test suite's)."""
    from iterflow.actuate.executors import ExecutorActuator
    from iterflow.inputs.graphio import load_graph
    from iterflow.loop.driver import IterationDriver
    from iterflow.loop.records import model_rows, table
    from iterflow.model.contention import row_task_seconds
    from iterflow.model.warmup import warmup_supersteps

    if supersteps < 3:
        raise ValueError(f"supersteps must be >= 3 (the first at a size feeds nothing), got {supersteps}")
    t0 = time.perf_counter()
    path = calibration_graph(graph)
    g = load_graph(spark, str(path), "edgelist", partitions=partitions)
    sizes = schedule(max_executors)
    down = len(sizes_for(max_executors))  # entries 1..down: the descending pass, the only one measured
    script = Scripted(sizes, supersteps, holds=[2 * supersteps] + [supersteps] * (len(sizes) - 1))
    job = CalibrationJob(g, script)
    actuator = ExecutorActuator(spark.sparkContext)
    found = actuator.registered()
    try:
        res = IterationDriver(spark, script, partitions=partitions, start_executors=script.sizes[0]).run(job)
    finally:  # the session it borrowed gets its executors back and loses the calibration's input
        job.release()
        g.edges.unpersist()
        g.vertices.unpersist()
        if found:
            actuator.restore(found)
    warm = warmup_supersteps(res.records)
    measured = {i for entry in script.counted[1:1 + down] for i in entry}
    steady = measured_steady(res.records, measured, warm)
    seen = row_task_seconds(model_rows(steady, 0))
    for slots, tasks in sorted(seen.items()):
        say(f"  {slots:g} slot(s): median task {np.median(tasks) * 1e3:.0f} ms over {len(tasks)} tasks of steady "
            "supersteps")
    if script.skipped:
        say(f"  the cluster did not give {', '.join(map(str, script.skipped))} executor(s) within "
            f"{script.patience:.0f}s: not measured")
    rows = table(res.records).to_dict("records")
    return ClusterProfile(cluster, seen, job=f"pagerank {path.name}, {len(res.records)} supersteps on "
                          + " -> ".join(map(str, script.sizes)) + " executors",
                          measured_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                          seconds=time.perf_counter() - t0, notes={"warmup_supersteps": warm, "skipped": script.skipped,
                                                             "measured_supersteps": sorted(measured)},
                          supersteps=[{k: _plain(v) for k, v in r.items()} for r in rows])


def _plain(v: Any) -> Any:
    """A JSON value of a table cell (NaN -> None, numpy scalars -> Python)."""
    if isinstance(v, (np.generic,)):
        v = v.item()
    return None if isinstance(v, float) and v != v else v


def describe(profile: ClusterProfile, sizes: Sequence[float] = (1, 2, 3, 4)) -> str:
    """The profile, the contention and the rescale prices it gives, as a user reads it."""
    rows = profile.records()
    tasks, c = profile.tasks(rows), profile.contention(rows)
    base = min(tasks) if tasks else 1.0
    d0 = float(np.median(tasks[base])) if tasks else 1.0
    at = ", ".join(f"{s:g}: {c.task(d0, base, s) / d0:.2f}x" for s in sizes)
    # the terms' reference size: the one matched to the calibration's supersteps from (a = 1)
    ref = next((m for m, a, _ in c.sizes if a == 1.0), c.sizes[0][0]) if c.sizes else base
    terms = f"; per size a task of d seconds at {ref:g} slot(s) takes " + ", ".join(
        f"{m:g}: {a:.2f}·d + {b * 1e3:.0f} ms" for m, a, b in c.sizes if m != ref) if len(c.sizes) > 1 else ""
    walls = ", ".join(f"{s:g}: {w:.2f}s" for s, w in c.walls)
    if "CPU share" in c.how:  # with_cpu_share met the terms half way: say by which shares
        terms += (" (half way between the calibration's supersteps and its executors' share of a core: "
                  + ", ".join(f"{s:g}: {v:.2f}" for s, v in sorted(profile.cpu_shares(rows).items())) + ")")
    return (f"cluster {profile.cluster!r}: measured {profile.measured_at} in {profile.seconds:.0f}s "
            f"({profile.job}) at slots {', '.join(f'{s:g}' for s in profile.sizes)}; task slow-down "
            f"beta={c.beta:.2f}, overhead={c.overhead * 1e3:.1f} ms a slot added; the median task of {base:g} "
            f"slot(s) ({d0 * 1e3:.0f} ms) takes at {at}{terms}" + (f"; a steady superstep (median) at {walls}" if walls else "")
            + (f" (pooled: the median over this calibration and {len(profile.pooled_with)} earlier of the cluster, as "
               f"ratios to the largest size; the per-size terms matched to the pooled ratios)"
               if walls and profile.earlier else "")
            + _prices(rows))


def _prices(rec: Sequence[Any]) -> str:
    """What the calibration's rescales cost, as :meth:`learn_rescales` reads them."""
    from iterflow.loop.rescales import registration_delays, rescale_costs
    from iterflow.model.warmup import warmup_supersteps

    if not rec:
        return ""
    up, down, reg = rescale_costs(rec, "up"), rescale_costs(rec, "down"), registration_delays(rec)

    def med(v: list[float]) -> str:
        return f"{np.median(v):.1f}s (median of {len(v)})" if v else "none measured"
    return (f"; a scale-out costs {med(up)}, its executors registered after {med(reg)}; a scale-in "
            f"costs {med(down)}; executors warm up for {warmup_supersteps(rec)} superstep(s)")


def calibrate(spec: Any, *, supersteps: int = 7, max_executors: int | None = None,
              say: Callable[[str], None] = print, fresh: bool = False) -> ClusterProfile:
    """Find or start the cluster ``spec`` names (as ``iterflow run`` does), measure it and save
    its profile under the key later runs on it look it up by (:func:`runner.cluster_key`), with
    the cluster's earlier calibrations pooled into it unless ``fresh``
    (:meth:`~iterflow.cluster.profile.ClusterProfile.pooled_walls`)."""
    import tempfile

    from iterflow.app.runner import cluster_for, cluster_key, executor_cores_conf, parse_executor_cores
    from iterflow.cluster import profile
    from iterflow.cluster.session import build_session, stop_session
    from iterflow.errors import InputError

    with tempfile.TemporaryDirectory(prefix="iterflow-driver-") as wd, cluster_for(spec, wd) as (master, cores, note):
        most = max_executors or (cores // spec.cores_per_worker if cores else None)
        if not most:
            raise InputError("--max-executors: needed with --master (how many executors the cluster can give)")
        say(f"calibrating on {note}: PageRank at {', '.join(map(str, sizes_for(most)))} executor(s)")
        spark = build_session(master, cores, {**executor_cores_conf(spec), **spec.conf}, work_dir=Path(wd),
                              with_graphframes=False)
        try:
            # the executors' cores as the session set them (--conf, spark-submit), for the sizes in slots
            per = parse_executor_cores(spark.sparkContext.getConf().get("spark.executor.cores")) or spec.cores_per_worker
            # the user's count (--conf), else the loop's: following the cores, as a run's does
            partitions = int(spec.conf["spark.sql.shuffle.partitions"]) if "spark.sql.shuffle.partitions" in spec.conf else None
            found = measure(spark, cluster_key(spec, master), most, partitions=partitions,
                            supersteps=supersteps, say=say)
        finally:
            stop_session(spark)
    where = profile.save(found, fresh=fresh)
    found = profile.load(found.cluster, where) or found  # with the earlier calibrations it pooled
    say(describe(found, sizes=sorted({float(s) * per for s in sizes_for(most)})))
    say(f"saved to {where}: every run on this cluster learns the slow-down from it")
    return found
