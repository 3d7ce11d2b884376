"""``iterflow cluster calibrate``: measure the cluster's task slow-down once, for every first run.

A fixed job -- PageRank on a generated R-MAT graph -- runs a few supersteps statically at a few
sizes (1, 2, half the maximum and the maximum executors); the mean task seconds of its
steady-state supersteps per size go to the cluster's profile (:mod:`iterflow.cluster.profile`).
Each size first runs two untimed supersteps: a size change starts fresh executor JVMs, whose
first tasks run several times slower, and that is a rescale's price (learned from runs'
records), not the steady slow-down measured here.
"""
from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from iterflow.cluster.profile import ClusterProfile
from iterflow.files import iterflow_home

SCALE, EDGES = 16, 300_000  # ~1 s a superstep on one 0.5-core executor: long enough to measure tasks


def sizes_for(max_executors: int) -> list[int]:
    """1, 2, half the maximum and the maximum: the points the power law of
    :mod:`iterflow.model.contention` is fitted through, at four runs whatever the cluster's size."""
    if max_executors < 1:
        raise ValueError(f"max_executors must be >= 1, got {max_executors}")
    return sorted({1, min(2, max_executors), max(1, max_executors // 2), max_executors})


def calibration_graph(path: Path | None = None) -> Path:
    """The calibration job's input, generated once under ``$ITERFLOW_HOME`` (seeded: every
    calibration measures the same job)."""
    from iterflow.inputs.generate import write_rmat

    path = path or iterflow_home() / "calibration" / f"rmat-{SCALE}-{EDGES}.txt"
    return path if path.exists() else write_rmat(path, SCALE, EDGES, seed=0)


def measure(spark: Any, cluster: str, max_executors: int, *, partitions: int | None = None,
            supersteps: int = 5, graph: Path | None = None,
            say: Callable[[str], None] = lambda _: None) -> ClusterProfile:
    """Run the calibration job at :func:`sizes_for` ``max_executors`` and return the profile."""
    from algorithms import PageRank
    from iterflow.inputs.graphio import load_graph
    from iterflow.loop.driver import IterationDriver
    from iterflow.model.contention import task_seconds
    from iterflow.policies import StaticPolicy

    if supersteps < 3:
        raise ValueError(f"supersteps must be >= 3 (the first feeds nothing), got {supersteps}")
    t0 = time.perf_counter()
    path = calibration_graph(graph)
    g = load_graph(spark, str(path), "edgelist", partitions=partitions)
    seen: dict[float, list[float]] = {}
    try:
        for e in sizes_for(max_executors):
            warm = PageRank(g, max_iterations=2)
            IterationDriver(spark, StaticPolicy(), partitions=partitions, collect_stats=False,
                            start_executors=e).run(warm)
            warm.release()
            job = PageRank(g, max_iterations=supersteps)
            res = IterationDriver(spark, StaticPolicy(), partitions=partitions, start_executors=e).run(job)
            job.release()
            for slots, tasks in task_seconds(res.records).items():
                seen.setdefault(slots, []).extend(tasks)
            got = seen.get(float(res.records[-1].ran.cores), [])
            say(f"  {e} executor(s): mean task {sum(got) / max(len(got), 1) * 1e3:.0f} ms over {len(got)} supersteps")
    finally:  # the calibration's input leaves the cache of the session it borrowed
        g.edges.unpersist()
        g.vertices.unpersist()
    return ClusterProfile(cluster, seen, job=f"pagerank {path.name}, {supersteps} supersteps a size",
                          measured_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                          seconds=time.perf_counter() - t0)


def describe(profile: ClusterProfile, sizes: Sequence[float] = (1, 2, 3, 4)) -> str:
    """The profile and the contention it gives, as a user reads it."""
    from iterflow.model.contention import fit

    c = fit([profile.task_seconds])
    base = min(profile.sizes) if profile.sizes else 1.0
    d0 = float(np.median(profile.task_seconds[base])) if profile.sizes else 1.0
    at = ", ".join(f"{s:g}: {c.task(d0, base, s) / d0:.2f}x" for s in sizes)
    return (f"cluster {profile.cluster!r}: measured {profile.measured_at} in {profile.seconds:.0f}s "
            f"({profile.job}) at slots {', '.join(f'{s:g}' for s in profile.sizes)}; task slow-down "
            f"beta={c.beta:.2f}, overhead={c.overhead * 1e3:.1f} ms a slot added; a task of {base:g} slot(s) "
            f"takes at {at}")


def calibrate(spec: Any, *, supersteps: int = 5, max_executors: int | None = None,
              say: Callable[[str], None] = print) -> ClusterProfile:
    """Find or start the cluster ``spec`` names (as ``iterflow run`` does), measure it and save
    its profile under the key later runs on it look it up by (:func:`runner.cluster_key`)."""
    import tempfile

    from iterflow.app.runner import cluster_for, cluster_key
    from iterflow.cluster import profile
    from iterflow.cluster.session import build_session, stop_session
    from iterflow.errors import InputError

    with cluster_for(spec) as (master, cores, note), tempfile.TemporaryDirectory(prefix="iterflow-driver-") as wd:
        most = max_executors or (cores // spec.cores_per_worker if cores else None)
        if not most:
            raise InputError("--max-executors: needed with --master (how many executors the cluster can give)")
        say(f"calibrating on {note}: PageRank at {', '.join(map(str, sizes_for(most)))} executor(s)")
        spark = build_session(master, cores, {"spark.executor.cores": str(spec.cores_per_worker)}
                              if not spec.master else {}, work_dir=Path(wd), with_graphframes=False)
        try:
            partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
            found = measure(spark, cluster_key(spec, master), most, partitions=partitions,
                            supersteps=supersteps, say=say)
        finally:
            stop_session(spark)
    where = profile.save(found)
    say(describe(found, sizes=sorted({float(s) * spec.cores_per_worker for s in sizes_for(most)})))
    say(f"saved to {where}: every run on this cluster learns the slow-down from it")
    return found
