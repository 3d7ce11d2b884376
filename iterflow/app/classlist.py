"""Make the class archives (:mod:`iterflow.cluster.cds`): run iterflow's three programs for a few
supersteps on tiny inputs with one executor recording every class it loads, then dump those
classes with the same java and class path the worker gave it; the driver, master and worker
JVMs of that run dump their own classes as they exit (dynamic archives).

``make setup`` runs it once per JDK and Spark install (``python -m iterflow.app.classlist``,
~1 min; nothing to do when the archive is there); ``iterflow cluster cds --force`` rebuilds.
Why the programs and not a synthetic query: the classes a superstep's tasks load (Parquet,
Arrow, the shuffled-hash join, codegen's runtime) are the ones a fresh executor pays for in
its first superstep.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from iterflow.cluster import cds
from iterflow.cluster.jvmopts import extra_jvm_opts, joined
from iterflow.errors import ClusterError


def record(work: Path, say: Callable[[str], None] = print) -> tuple[Path, list[str], dict[str, Path]]:
    """Run the programs on a one-worker embedded cluster; return the executor's class list, the
    command line its worker started it with, and the archives the driver, master and worker JVMs
    dumped as they exited, by kind (``driver``, ``master``, ``worker``): those that did (a JVM
    killed before its dump ended leaves none; the others are still made)."""
    from algorithms import KMeans, PageRank, WeaklyConnectedComponents
    from iterflow.cluster.local import LocalCluster
    from iterflow.cluster.session import build_session, default_conf, stop_gateway, stop_session
    from iterflow.inputs.generate import write_points, write_rmat
    from iterflow.inputs.graphio import load_graph
    from iterflow.inputs.pointsio import load_points
    from iterflow.loop.driver import IterationDriver

    classes = work / "classes.lst"
    graph, points = write_rmat(work / "g.txt", 10, 4000, seed=1), write_points(work / "p.csv", 2000, 3, 2, seed=1)
    dumps = {kind: work / f"{kind}.jsa" for kind in ("driver", *cds.DAEMONS)}
    driver = dumps["driver"]
    daemons = {kind: f"-XX:ArchiveClassesAtExit={dumps[kind]} {cds.QUIET}" for kind in cds.DAEMONS}
    with LocalCluster(workers=1, cores_per_worker=1, base_dir=work / "cluster", daemon_java_opts=daemons) as cluster:
        launch = default_conf(cluster.master_url, 1, None)[cds.DRIVER_OPTS]  # as every run's driver
        spark = build_session(cluster.master_url, 1, {
            cds.OPTS: joined(extra_jvm_opts(), f"-XX:DumpLoadedClassList={classes}"), cds.CONF: "false",
            cds.DRIVER_OPTS: joined(launch, f"-XX:ArchiveClassesAtExit={driver}", cds.QUIET),
            "spark.ui.enabled": "false"}, work_dir=work / "driver", with_graphframes=False)
        try:
            g = load_graph(spark, str(graph), "edgelist")
            pts = load_points(spark, str(points))
            programs = (PageRank(g, max_iterations=3), WeaklyConnectedComponents(g, max_iterations=3),
                        KMeans(pts, 3, max_iterations=3))
            for program in programs:
                say(f"  recording the classes of {type(program).__name__}")
                result = IterationDriver(spark).run(program)
                result.output.count()
                result.release()
        finally:
            stop_session(spark)
            stop_gateway()  # the driver JVM exits: it dumps its archive on the way out
        stderr = next((work / "cluster" / "worker-0").glob("app-*/*/stderr"), None)
        if stderr is None:
            raise ClusterError(f"no executor stderr under {work / 'cluster' / 'worker-0'}")
        command = cds.executor_command(stderr.read_text(errors="replace"))
    # the cluster stopped: its JVMs exited, the executor's class list is complete
    return classes, command, {kind: path for kind, path in dumps.items() if path.is_file()}


def ensure(force: bool = False, say: Callable[[str], None] = print) -> Path:
    """The archives of the executors, the driver, the master and the worker for this JDK and Spark
    install, made if any is missing (or ``force``); returns the executors'."""
    out = cds.archive_path()
    finals = {"executors": out, "driver": cds.driver_archive_path(),
              **{kind: cds.daemon_archive_path(kind) for kind in cds.DAEMONS}}
    if all(p.is_file() for p in finals.values()) and not force:
        say(f"class archives: {', '.join(p.name for p in finals.values())} in {out.parent} (there already)")
        return out
    started = time.perf_counter()
    say("class archives: recording the classes an executor, the driver, master and worker load (one worker, ~1 min)")
    with tempfile.TemporaryDirectory(prefix="iterflow-cds-") as tmp:
        classes, command, dumps = record(Path(tmp), say)
        cds.build(classes, command, out)
        for kind, dumped in dumps.items():
            tmp_out = finals[kind].with_suffix(f".{os.getpid()}.tmp")
            shutil.move(str(dumped), tmp_out)  # next to its final name, then renamed into place
            os.replace(tmp_out, finals[kind])
    for kind in sorted(set(finals) - {"executors", *dumps}):
        say(f"warning: the {kind} JVM exited without dumping its class archive; it starts without one")
        finals.pop(kind)
    for kind, keep in finals.items():  # other JDKs' or Spark installs': 45-150 MiB each
        for stale in out.parent.glob(f"{kind}-*.jsa"):
            if stale != keep:
                stale.unlink(missing_ok=True)
    say("class archives: " + ", ".join(f"{p.name} ({p.stat().st_size / 2**20:.0f} MiB)" for p in finals.values())
        + f" in {out.parent}, {time.perf_counter() - started:.0f}s")
    return out


if __name__ == "__main__":
    ensure(force="--force" in sys.argv[1:])
