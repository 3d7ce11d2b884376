"""One ``iterflow run``: find or start a cluster, load the input, run the program, write results.

Results are written atomically: into a hidden sibling directory first, renamed into place
only after the run finished, so a failed run never leaves a directory that looks complete.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from iterflow.cluster.local import LocalCluster, load_detached
from iterflow.loop.driver import IterationDriver, RunResult
from iterflow.errors import InputError
from iterflow.policies import make_policy
from iterflow.inputs.pointsio import looks_numeric
from iterflow.cluster.session import build_session, stop_session, submitted_conf, under_spark_submit

log = logging.getLogger(__name__)

ALGORITHMS = ("pagerank", "wcc", "kmeans")


@dataclass
class JobSpec:
    """Everything ``iterflow run`` was asked to do (validated in :meth:`validate`)."""

    algorithm: str
    input: str
    output: str
    format: str | None = None
    directed: bool | None = None
    iterations: int | None = None
    tol: float | None = None
    k: int | None = None
    init_centers: str | None = None
    seed: int = 0
    master: str | None = None
    workers: int = 2
    cores_per_worker: int = 1
    memory: str = "2g"
    cpu_share: float | None = None
    conf: dict[str, str] = field(default_factory=dict)
    stats: str | None = None
    policy: str = "static"
    checkpoint_interval: int = 10
    track: bool = True
    executors: int | None = None
    target_seconds: float | None = None
    min_executors: int | None = None
    max_executors: int | None = None
    rebalance: float | None = None
    switch_to_delta: float | None = None

    def validate(self) -> None:
        self._validate_types()
        if self.algorithm not in ALGORITHMS:
            raise InputError(f"unknown algorithm {self.algorithm!r} (choose from {', '.join(ALGORITHMS)})")
        if self.iterations is not None and self.iterations < 1:
            raise InputError(f"--iterations must be >= 1 (got {self.iterations})")
        if self.tol is not None and not (self.tol >= 0 and np.isfinite(self.tol)):
            raise InputError(f"--tol must be a finite number >= 0 (got {self.tol})")
        if self.algorithm == "kmeans":
            if self.k is None:
                raise InputError("--k is required for kmeans")
            if self.k < 1:
                raise InputError(f"--k must be >= 1 (got {self.k})")
        if self.workers < 1 or self.cores_per_worker < 1:
            raise InputError("--workers and --cores-per-worker must be >= 1")
        for name in ("executors", "min_executors", "max_executors"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise InputError(f"--{name.replace('_', '-')} must be >= 1 (got {v})")
        if self.target_seconds is not None and not (self.target_seconds > 0 and np.isfinite(self.target_seconds)):
            raise InputError(f"--target-seconds must be a finite number > 0 (got {self.target_seconds})")
        if self.rebalance is not None and not (self.rebalance > 1 and np.isfinite(self.rebalance)):
            raise InputError(f"--rebalance must be a finite max/mean load ratio > 1 (got {self.rebalance})")
        if self.switch_to_delta is not None and not (self.switch_to_delta > 0 and np.isfinite(self.switch_to_delta)):
            raise InputError(f"--switch-to-delta must be a finite number > 0 (got {self.switch_to_delta})")
        if self.cpu_share is not None and not (0 < self.cpu_share <= self.cores_per_worker):
            raise InputError(f"--cpu-share must be in (0, --cores-per-worker] (got {self.cpu_share})")
        if not re.fullmatch(r"[1-9][0-9]*[kmgtp]b?", self.memory.strip().lower()):
            raise InputError(f"--memory must be a size such as 512m or 2g (got {self.memory!r})")
        if self.seed < 0:
            raise InputError(f"--seed must be >= 0 (got {self.seed})")
        if self.checkpoint_interval < 1:
            raise InputError(f"--checkpoint-interval must be >= 1 (got {self.checkpoint_interval})")
        formats = ("csv", "parquet") if self.algorithm == "kmeans" else ("graphalytics", "edgelist")
        if self.format is not None and self.format not in formats:
            raise InputError(f"--format: unknown format {self.format!r} for {self.algorithm} "
                             f"(choose from {', '.join(formats)})")
        self._validate_options_apply()
        self._validate_paths()
        policy_for(self, self.iterations if self.tol is None else None,  # its own checks, before any cluster
                   self.workers if not self.master else None)

    def _validate_types(self) -> None:
        """Numbers are numbers (argparse in Python 3.11 turns ``--iterations=--`` into ``[]``)."""
        for name in ("iterations", "k", "seed", "workers", "cores_per_worker", "executors", "min_executors",
                     "max_executors", "checkpoint_interval", "tol", "target_seconds", "cpu_share", "rebalance",
                     "switch_to_delta"):
            value = getattr(self, name)
            integral = name not in ("tol", "target_seconds", "cpu_share", "rebalance", "switch_to_delta")
            if value is not None and (isinstance(value, bool) or not isinstance(value, int if integral else (int, float))):
                raise InputError(f"--{name.replace('_', '-')} expects {'an integer' if integral else 'a number'}"
                                 f" (got {value!r})")

    def _validate_options_apply(self) -> None:
        """Options of the other kind of program are mistakes, not silently ignored."""
        if self.algorithm == "kmeans":
            if self.directed is not None:
                raise InputError(f"--{'directed' if self.directed else 'undirected'} applies to graphs, not kmeans")
        else:
            for flag, value in (("--k", self.k), ("--init-centers", self.init_centers)):
                if value is not None:
                    raise InputError(f"{flag} applies to kmeans, not {self.algorithm}")
        if self.algorithm != "pagerank":  # the program laid out by bins, with a delta step
            for flag, value in (("--rebalance", self.rebalance), ("--switch-to-delta", self.switch_to_delta)):
                if value is not None:
                    raise InputError(f"{flag} applies to pagerank, not {self.algorithm}")

    def _validate_paths(self) -> None:
        if not self.input.strip():
            raise InputError("--input must name a file")
        if not self.output.strip():
            raise InputError("--output must name a directory")
        out = Path(self.output).resolve()
        if out == Path.cwd().resolve() or out in Path.cwd().resolve().parents:
            raise InputError(f"--output {self.output}: would replace the working directory; name a new directory")
        if "://" not in self.input and (out == Path(self.input).resolve() or out in Path(self.input).resolve().parents):
            raise InputError(f"--output {self.output}: would replace the input {self.input}")
        if self.stats and Path(self.stats).is_dir():
            raise InputError(f"--stats {self.stats}: is a directory; name a CSV file")
        probe = self.input
        if self.format == "graphalytics":
            from iterflow.inputs.graphio import graphalytics_paths

            probe = graphalytics_paths(self.input)[1]
        if "://" not in probe and not Path(probe).exists():
            raise InputError(f"{probe}: no such file")
        if self.init_centers and not Path(self.init_centers).exists():
            raise InputError(f"{self.init_centers}: no such file (--init-centers)")


@contextlib.contextmanager
def cluster_for(spec: JobSpec) -> Iterator[tuple[str, int | None, str]]:
    """Yield ``(master, total_cores, note)``: spark-submit's master when spark-submit started
    this process, the given master, the running embedded cluster, or a LocalCluster started
    for this run and stopped afterwards."""
    if under_spark_submit():
        master = (submitted_conf() or {}).get("spark.master", "")
        if spec.master and spec.master != master:
            raise InputError(f"--master {spec.master} conflicts with spark-submit's master {master or '(none)'}; "
                             "give the master to spark-submit only")
        running = load_detached()
        cores = running.workers * running.cores_per_worker if running and running.master_url == master else None
        yield master, cores, f"driver started by spark-submit (master {master})"
        return
    if spec.master:
        yield spec.master, None, f"master {spec.master}"
        return
    running = load_detached()
    if running is not None:
        yield running.master_url, running.workers * running.cores_per_worker, \
            f"cluster started by `iterflow cluster start` ({running.master_url})"
        return
    from iterflow.cluster.watchdog import stop_if_orphaned

    with LocalCluster(spec.workers, spec.cores_per_worker, spec.memory, spec.cpu_share) as cluster, \
            stop_if_orphaned(cluster):  # stops it even if this process is SIGKILLed
        note = f"embedded LocalCluster {cluster.master_url}, {spec.workers} workers x {spec.cores_per_worker} cores"
        if cluster.cpu_share_note:
            note += f"; {cluster.cpu_share_note}"
        yield cluster.master_url, cluster.total_cores, note


def build_program(spec: JobSpec, spark: Any, partitions: int):
    """The IterativeProgram for ``spec`` with its input loaded and validated."""
    from algorithms import KMeans, PageRank, WeaklyConnectedComponents
    from iterflow.inputs.graphio import graphalytics_paths, load_graph, read_properties
    from iterflow.inputs.pointsio import load_points

    if spec.algorithm == "kmeans":
        points = load_points(spark, spec.input, spec.format or _points_format(spec.input), partitions)
        centers = _read_centers(spec.init_centers) if spec.init_centers else None
        return KMeans(points, spec.k or 0, centers, seed=spec.seed,
                      max_iterations=spec.iterations or 20,
                      tol=1e-4 if spec.tol is None and spec.iterations is None else spec.tol)
    graph = load_graph(spark, spec.input, spec.format or "edgelist", spec.directed, partitions)
    if spec.algorithm == "pagerank":
        iterations = spec.iterations
        if iterations is None and graph.properties.get("pr.num-iterations"):
            iterations = _property(spec, graph.properties, "pr.num-iterations", int, lambda v: v >= 1, "an integer >= 1")
        damping = 0.85
        if "pr.damping-factor" in graph.properties:
            damping = _property(spec, graph.properties, "pr.damping-factor", float, lambda v: 0 <= v <= 1,
                                "a number in [0, 1]")
        return PageRank(graph, damping, max_iterations=iterations or (100 if spec.tol else 20), tol=spec.tol,
                        measure_delta=spec.switch_to_delta is not None)  # the switch watches the delta
    return WeaklyConnectedComponents(graph, max_iterations=spec.iterations or 1000,
                                     tol=0 if spec.tol is None else spec.tol)


def _points_format(path: str) -> str:
    return "parquet" if path.endswith(".parquet") or Path(path).is_dir() else "csv"

def _property(spec: JobSpec, props: dict[str, str], key: str, cast: Callable[[str], Any],
              ok: Callable[[Any], bool], what: str) -> Any:
    """A value of the graph's ``.properties`` file; a bad one is an input error naming the file."""
    from iterflow.inputs.graphio import graphalytics_paths

    raw = props[key]
    try:
        value = cast(raw)
    except ValueError:
        value = None
    if value is None or not ok(value):
        raise InputError(f"{graphalytics_paths(spec.input)[2]}: {key} must be {what}, got {raw!r}")
    return value



def _read_centers(path: str) -> np.ndarray:
    """Initial centers: a CSV of k rows (optional header) or a Parquet file of f-columns."""
    if not Path(path).exists():
        raise InputError(f"{path}: no such file (--init-centers)")
    try:
        if path.endswith(".parquet") or Path(path).is_dir():
            df = pd.read_parquet(path)
            df = df[[c for c in df.columns if c not in ("id", "cluster")]]
        else:
            df = pd.read_csv(path, header=None, comment="#")
            if not all(looks_numeric(str(v)) for v in df.iloc[0]):
                df = df.iloc[1:]
        arr = df.astype(float).to_numpy()
    except (ValueError, OSError) as exc:
        raise InputError(f"{path}: cannot read initial centers: {exc}") from None
    if not np.isfinite(arr).all():
        raise InputError(f"{path}: NaN or infinite value in initial centers")
    return arr


def write_atomically(target: str, write: Callable[[str], None]) -> None:
    """Call ``write(tmpdir)`` and rename tmpdir to ``target`` only if it succeeded."""
    target_path = Path(target).resolve()
    target_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{target_path.name}.inprogress-", dir=target_path.parent)
    try:
        write(tmp)
        if target_path.exists():
            old = target_path.with_name(f".{target_path.name}.old-{os.getpid()}")
            target_path.rename(old)
            Path(tmp).rename(target_path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            Path(tmp).rename(target_path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_output(spec: JobSpec, program: Any, result: RunResult) -> None:
    """Results, the run's superstep table (``DIR/_supersteps.parquet``) and ``--stats`` CSV."""
    def write(tmp: str) -> None:
        if spec.algorithm == "kmeans":
            result.output.write.mode("overwrite").parquet(os.path.join(tmp, "centers"))
            centers = result.output.orderBy("cluster").drop("cluster").toPandas().to_numpy()
            program.assignments(centers).write.mode("overwrite").parquet(os.path.join(tmp, "assignments"))
        else:
            result.output.write.mode("overwrite").parquet(tmp)
        result.supersteps.to_parquet(os.path.join(tmp, "_supersteps.parquet"), index=False)

    write_atomically(spec.output, write)
    if spec.stats:
        stats = Path(spec.stats)
        stats.parent.mkdir(parents=True, exist_ok=True)
        part = stats.with_name(f".{stats.name}.inprogress")
        result.supersteps.to_csv(part, index=False)
        part.replace(stats)


def policy_for(spec: JobSpec, max_iterations: int | None, total_executors: int | None):
    """The policy ``--policy`` names, with the options that apply to it, wrapped by the
    partitioning and logic adaptations ``--rebalance`` and ``--switch-to-delta`` ask for."""
    from iterflow.policies.layout import LogicSwitch, Rebalancing

    policy = _executor_policy(spec, max_iterations, total_executors)
    if spec.rebalance is not None:
        policy = Rebalancing(policy, threshold=spec.rebalance, target=min(1.05, (1 + spec.rebalance) / 2))
    if spec.switch_to_delta is not None:
        policy = LogicSwitch(policy, "delta", below=spec.switch_to_delta)
    return policy


def _executor_policy(spec: JobSpec, max_iterations: int | None, total_executors: int | None):
    if spec.policy == "static":
        extra = {k: v for k, v in (("--target-seconds", spec.target_seconds), ("--min-executors", spec.min_executors),
                                   ("--max-executors", spec.max_executors)) if v is not None}
        if extra:
            raise InputError(f"{next(iter(extra))} does not apply to --policy static (use --executors)")
        return make_policy("static")
    kwargs: dict[str, Any] = {"min_executors": spec.min_executors,
                              "max_executors": spec.max_executors or total_executors,
                              "start_executors": spec.executors}
    if spec.policy != "dynamic-allocation":
        kwargs["max_iterations"] = max_iterations
    if spec.policy == "target":
        kwargs["target_seconds"] = spec.target_seconds
    if spec.policy == "fastest":
        kwargs["baseline_executors"] = spec.executors or spec.min_executors or 1
    return make_policy(spec.policy, **kwargs)


def warm_start(program_name: str, policy: Any) -> Any:
    """A resource model warm-started from earlier runs of the same program in the MLflow store;
    the adaptive policy inside ``policy`` learns the cost of a rescale from the same runs."""
    from iterflow.model.resource import ResourceModel
    from iterflow.app.tracking import model_history, past_supersteps

    try:
        past = past_supersteps(program_name)
    except Exception as exc:  # noqa: BLE001 - no usable history: start cold
        log.info("no model history: %s", exc)
        return ResourceModel()
    inner = policy
    while hasattr(inner, "inner"):  # Rebalancing / LogicSwitch wrap the executor policy
        inner = inner.inner
    if hasattr(inner, "learn_rescales") and len(past):
        inner.learn_rescales(past)
    hist = model_history(past)
    return ResourceModel.from_history(hist) if len(hist) >= 3 else ResourceModel()


@contextlib.contextmanager
def mlflow_store_lock() -> Iterator[None]:
    """One process at a time opens a local (sqlite) MLflow store: two runs starting at once on
    a new store would both create its tables, and one would fail ("table ... already exists")."""
    import fcntl

    from iterflow.app.tracking import tracking_uri

    uri = tracking_uri()
    if not uri.startswith("sqlite:///"):
        yield
        return
    fd = os.open(uri[len("sqlite:///"):] + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def run_job(spec: JobSpec, on_superstep: Callable[[dict[str, Any]], None] | None = None,
            on_start: Callable[[str], None] | None = None, run_id: str | None = None,
            resume: bool = False) -> RunResult:
    """Run ``spec`` end to end; the cluster and session it started are stopped on return.

    The run is recorded as ``run_id`` (a new id when ``None``) under ``$ITERFLOW_HOME/runs``,
    with its state saved at every reliable checkpoint; ``resume=True`` continues run ``run_id``
    from its last saved checkpoint (see :mod:`iterflow.faults.resume`).
    """
    from iterflow.faults.resume import RunStore
    from iterflow.app.tracking import RunTracker

    spec.validate()
    store = RunStore.reopen(run_id, spec) if resume and run_id else RunStore.create(run_id, spec)
    with store.recording(), cluster_for(spec) as (master, cores, note), \
            tempfile.TemporaryDirectory(prefix="iterflow-driver-") as work_dir:
        if on_start:
            on_start(note)
        # executors the cluster can hold (a detached cluster may have more workers than --workers)
        executors_max = cores // spec.cores_per_worker if cores and not spec.master else None
        policy = policy_for(spec, spec.iterations if spec.tol is None else None, executors_max)
        conf = {"spark.executor.cores": str(spec.cores_per_worker)} if not (spec.master or under_spark_submit()) else {}
        conf.update(getattr(policy, "spark_conf", lambda: {})())
        conf.update(spec.conf)
        spark = build_session(master, cores, conf, work_dir=Path(work_dir))
        try:
            partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
            program = build_program(spec, spark, partitions)
            params = {**program.params(), "policy": spec.policy, "input": spec.input, "master": master,
                      "executors": spec.executors, "target_seconds": spec.target_seconds,
                      "min_executors": spec.min_executors, "max_executors": spec.max_executors,
                      "partitions": partitions, "checkpoint_interval": spec.checkpoint_interval,
                      "rebalance": spec.rebalance, "switch_to_delta": spec.switch_to_delta}
            with mlflow_store_lock() if spec.track else contextlib.nullcontext():
                tracker = RunTracker(params) if spec.track else None
            if tracker:
                tracker.mlflow.set_tags({"iterflow.run_id": store.run_id, "iterflow.resumed": str(resume)})
            callbacks = [cb for cb in (tracker.log_superstep if tracker else None, on_superstep) if cb]
            driver = IterationDriver(spark, policy, partitions=partitions,
                                     checkpoint_interval=spec.checkpoint_interval,
                                     model=warm_start(program.name, policy) if spec.track else None,
                                     on_superstep=lambda rec: [cb(rec) for cb in callbacks],
                                     on_checkpoint=store.save)
            start = spec.executors if spec.policy != "dynamic-allocation" else None
            if start:
                act = driver.actuator.set_executors(start)
                if act.note:
                    log.warning(act.note)
            try:
                result = driver.run(program, resume=store.load(spark) if resume else None)
                write_output(spec, program, result)
                store.finished(spec.output)
            except BaseException:
                if tracker:
                    tracker.finish(pd.DataFrame(), status="FAILED")
                raise
            if tracker:
                tracker.finish(result.supersteps, driver.model)
                result.run_id = tracker.run_id
            return result
        finally:
            stop_session(spark)
