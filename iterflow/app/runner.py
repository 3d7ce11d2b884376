"""One ``iterflow run``: find or start a cluster, load the input, run the program, write results.

Results are written atomically: into a hidden sibling directory first, renamed into place
only after the run finished, so a failed run never leaves a directory that looks complete.
"""
from __future__ import annotations

import contextlib
import logging
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from iterflow.cluster import cds
from iterflow.cluster.jvmopts import extra_jvm_opts, joined
from iterflow.cluster.local import LocalCluster, load_detached
from iterflow.loop.driver import IterationDriver, RunResult
from iterflow.loop.plan import RunPlan
from iterflow.loop.records import SuperstepRecord
from iterflow.errors import InputError
from iterflow.files import atomic_dir, atomic_file
from iterflow.app.spec import JobSpec, policy_for
from iterflow.inputs.pointsio import looks_numeric
from iterflow.cluster.session import build_session, stop_session, submitted_conf, under_spark_submit

log = logging.getLogger(__name__)


@contextlib.contextmanager
def cluster_for(spec: JobSpec, scratch: str | None = None) -> Iterator[tuple[str, int | None, str]]:
    """Yield ``(master, total_cores, note)``: spark-submit's master when spark-submit started
    this process, the given master, the running embedded cluster, or a LocalCluster started
    for this run and stopped afterwards -- and, with its daemons, ``scratch`` (the driver's work
    dir) removed should this process be SIGKILLed."""
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
            stop_if_orphaned(cluster, [scratch] if scratch else []):  # even if this process is SIGKILLed
        note = f"embedded LocalCluster {cluster.master_url}, {spec.workers} workers x {spec.cores_per_worker} cores"
        if cluster.cpu_share_note:
            note += f"; {cluster.cpu_share_note}"
        yield cluster.master_url, cluster.total_cores, note


def build_program(spec: JobSpec, spark: Any, partitions: int):
    """The IterativeProgram for ``spec`` with its input loaded and validated."""
    from algorithms import KMeans, PageRank, WeaklyConnectedComponents
    from iterflow.inputs.graphio import load_graph
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
                        measure_delta=spec.switch_to_delta is not None,  # the switch watches the delta
                        layout="bins" if spec.rebalance is not None else "hash")  # bins where bins move
    return WeaklyConnectedComponents(graph, max_iterations=spec.iterations or 1000,
                                     tol=0 if spec.tol is None else spec.tol)


def _known_length(spec: Any) -> int | None:
    """The run's superstep count where no tolerance can end it sooner (what a start plan may
    extend a repeat of an earlier run to): WCC always converges; PageRank and k-means run
    ``--iterations`` where no ``--tol`` is given."""
    return None if spec.algorithm == "wcc" or spec.tol is not None else spec.iterations


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


def write_output(spec: JobSpec, program: Any, result: RunResult) -> None:
    """Results, the run's superstep table (``DIR/_supersteps.parquet``) and ``--stats`` CSV,
    each renamed into place only once written whole (:mod:`iterflow.files`)."""
    def write(tmp: Path, output: Any) -> None:
        if spec.algorithm == "kmeans":
            output.write.mode("overwrite").parquet(str(tmp / "centers"))
            centers = output.orderBy("cluster").drop("cluster").toPandas().to_numpy()
            program.assignments(centers).write.mode("overwrite").parquet(str(tmp / "assignments"))
        else:
            output.write.mode("overwrite").parquet(str(tmp))
        result.supersteps.to_parquet(tmp / "_supersteps.parquet", index=False)

    # result.use: recomputed from the last anchor if the final state's blocks were lost
    atomic_dir(spec.output, lambda tmp: result.use(lambda output: write(tmp, output)))
    if spec.stats:
        stats = Path(spec.stats)
        stats.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(stats, mode=None) as fh:  # the mode of a plain open(), as before
            result.supersteps.to_csv(fh, index=False)


def earlier_runs(program_name: str, same: dict[str, Any] | None = None) -> tuple[list[Any], list[Any]]:
    """Superstep records of earlier finished runs of the same program in the MLflow store, in
    one read: all of them -- the loop warm-starts the resource model and the policy's price of a
    rescale from them -- and those with ``same`` params (the runs a new one repeats: its start
    plan's)."""
    from iterflow.app.tracking import concat_tables, past_tables
    from iterflow.loop.records import records

    try:
        tables = past_tables(program_name)
        return records(concat_tables(tables)), records(concat_tables(tables, same))
    except Exception as exc:  # noqa: BLE001 - no usable history: start cold
        log.info("no model history: %s", exc)
        return [], []


def past_records(program_name: str, same: dict[str, Any] | None = None) -> list[Any]:
    """:func:`earlier_runs`' records with ``same`` params (all of them without)."""
    return earlier_runs(program_name, same)[1]


def cluster_key(spec: JobSpec, master: str) -> str:
    """What identifies the cluster a run ran on, for learning its behaviour across programs: the
    embedded cluster's shape, else the master URL; and the executors' JVM options where a run
    sets them (their JIT decides how slow a fresh executor's first supersteps are, so what a
    rescale costs: a C1-only cluster is another cluster to the model), from ``--conf`` or
    ``ITERFLOW_JVM_OPTS`` (:mod:`iterflow.cluster.jvmopts`)."""
    key = master if spec.master else \
        f"embedded {spec.workers}x{spec.cores_per_worker} cpu-share {spec.cpu_share or 'none'}"
    jvm = executor_jvm_opts(spec.conf or {}, submitted_conf())
    if submitted_conf() is None and cds.applies(master, {**({cds.OPTS: jvm} if jvm else {}), **(spec.conf or {})}):
        jvm = joined(jvm, "+ class archive")  # fresh executors start faster: another rescale price
    return f"{key} [executor JVM {jvm}]" if jvm else key


def executor_jvm_opts(conf: dict[str, str], submitted: dict[str, str] | None) -> str:
    """The executors' JVM options as the session sets them: the run's ``--conf``, else
    spark-submit's (its properties file from ``iterflow cluster start`` holds the options of
    that moment), else ``ITERFLOW_JVM_OPTS`` (:func:`iterflow.cluster.session.default_conf`)."""
    key = "spark.executor.extraJavaOptions"
    for source in (conf, submitted or {}):
        if key in source:
            return source[key].strip()
    return extra_jvm_opts()


def executor_cores_conf(spec: Any) -> dict[str, str]:
    """``spark.executor.cores`` for the workers iterflow starts (``--cores-per-worker``); none on a
    given master or under spark-submit, whose own settings decide."""
    return {"spark.executor.cores": str(spec.cores_per_worker)} if not (spec.master or under_spark_submit()) else {}


def parse_executor_cores(setting: str | None) -> int | None:
    """A session's ``spark.executor.cores`` as an integer (``None`` where unset)."""
    try:
        return int(setting) if setting else None
    except ValueError:
        raise InputError(f"spark.executor.cores must be an integer, got {setting!r}") from None


def align_executor_cores(policy: Any, setting: str | None, master: str = "") -> None:
    """The policy's cores per executor from the session's ``spark.executor.cores`` where it is set
    (``--master`` with ``--conf spark.executor.cores=4``, spark-submit's ``--executor-cores``):
    a start plan reads the calibration's measurements by slots, executors x cores, and
    ``--cores-per-worker`` (default 1) says nothing of a cluster iterflow did not start. At the
    barriers the policy reads the cores the executors hold from the records. Unset on a
    standalone ``master``, each executor takes all its worker's cores, which the driver cannot
    know before they register: said in a warning."""
    cores = parse_executor_cores(setting)
    while hasattr(policy, "inner"):  # --rebalance, --switch-to-delta wrap the executor policy
        policy = policy.inner
    if not hasattr(policy, "cores_per_executor"):  # static: no start plan
        return
    if cores is None and master.startswith("spark://"):
        log.warning("spark.executor.cores is not set: on a standalone master each executor takes all "
                    "its worker's cores, while the start plan counts %d core(s) an executor (--cores-per-worker); "
                    "set --conf spark.executor.cores=N", policy.cores_per_executor)
    if cores is not None and cores >= 1:
        policy.cores_per_executor = cores


def cluster_knowledge(key: str) -> tuple[Any, list[SuperstepRecord]]:
    """What a run on cluster ``key`` knows of it before it starts, from the cluster's calibration
    profile (``iterflow cluster calibrate``) and earlier runs on it of any program in the MLflow
    store: the live model, with the task slow-down learned from them, and their records (which
    price a rescale and the executors' warm-up, :class:`IterationDriver` ``cluster_past``)."""
    from iterflow.app.tracking import past_jobs_on
    from iterflow.cluster import profile
    from iterflow.loop.records import records
    from iterflow.model.contention import fit, task_seconds
    from iterflow.model.live import LiveModel
    from iterflow.model.replay import ReplayModel

    jobs, seen, walls, calibrated, cal_rows = [], [], None, None, []
    try:
        calibrated = profile.load(key)
        if calibrated is not None:
            cal_rows = calibrated.records()
            jobs.append(calibrated.tasks(cal_rows))
            seen += cal_rows
            walls = calibrated.pooled_walls(cal_rows)  # which size is fastest: all its calibrations say
    except InputError as exc:  # a broken profile file: say so, run on what the store has
        log.warning("%s", exc)
    try:
        for t in past_jobs_on(key):
            rows = records(t)
            jobs.append(task_seconds(rows))
            seen += rows
    except Exception as exc:  # noqa: BLE001 - no usable history: the profile, or plain replay
        log.info("no cluster history: %s", exc)
    slow = fit(jobs, walls=walls) if jobs else None
    if slow is not None and calibrated is not None:
        slow = calibrated.matched(slow, cal_rows)  # the per-size terms its measured supersteps say
    return LiveModel(replay=ReplayModel(contention=slow)), seen


def run_job(spec: JobSpec, on_superstep: Callable[[SuperstepRecord], None] | None = None,
            on_start: Callable[[str], None] | None = None, run_id: str | None = None,
            resume: bool = False, on_plan: Callable[[RunPlan], None] | None = None) -> RunResult:
    """Run ``spec`` end to end; the cluster and session it started are stopped on return.

    The run is recorded as ``run_id`` (a new id when ``None``) under ``$ITERFLOW_HOME/runs``,
    with its state saved at every reliable checkpoint; ``resume=True`` continues run ``run_id``
    from its last saved checkpoint (see :mod:`iterflow.faults.resume`).
    """
    from iterflow.faults.resume import RunStore
    from iterflow.app.tracking import RunTracker

    spec.validate()
    store = RunStore.reopen(run_id, spec) if resume and run_id else RunStore.create(run_id, spec)
    with store.recording(), tempfile.TemporaryDirectory(prefix="iterflow-driver-") as work_dir, \
            cluster_for(spec, work_dir) as (master, cores, note):
        if on_start:
            on_start(note)
        # executors the cluster can hold (a detached cluster may have more workers than --workers)
        executors_max = cores // spec.cores_per_worker if cores and not spec.master else None
        total, policy = spec._policy
        if total != executors_max:
            policy = policy_for(spec, executors_max)
        conf = executor_cores_conf(spec)
        conf.update(policy.spark_conf())
        conf.update(spec.conf)
        spark = build_session(master, cores, conf, work_dir=Path(work_dir))
        try:
            align_executor_cores(policy, spark.sparkContext.getConf().get("spark.executor.cores"), master)
            given = "spark.sql.shuffle.partitions" in spec.conf  # the user's (--conf) is kept, else cores decide
            key = cluster_key(spec, master)
            model, cluster_past = cluster_knowledge(key) if spec.track else (None, [])
            past, like = earlier_runs(spec.algorithm, {"input": spec.input, "cluster": key}) if spec.track else ([], [])
            driver = IterationDriver(spark, policy, partitions=int(spark.conf.get("spark.sql.shuffle.partitions")) if given else None,
                                     checkpoint_interval=spec.checkpoint_interval,
                                     wait_for_executors=spec.wait_for_executors,
                                     past=past,
                                     model=model, cluster_past=cluster_past,
                                     start_executors=None,  # sized here, before the input is loaded
                                     on_checkpoint=store.save)
            planned = None
            if spec.policy != "dynamic-allocation" and not resume:  # a fresh run: from earlier ones of the input, or the cluster's calibration
                planned = driver.planned_start(like, max_iterations=_known_length(spec))
            start = planned or (spec.executors if spec.policy != "dynamic-allocation" else None)
            if start:  # before the input is loaded and cached: its blocks land where they stay
                from iterflow.actuate.executors import ExecutorActuator

                act = ExecutorActuator(spark.sparkContext, launched=executors_max).set_executors(start)
                if act.note:
                    log.warning(act.note)
            partitions = driver.starting_partitions()  # following the cores it starts on, unless given
            program = build_program(spec, spark, partitions)
            params = {**program.params(), "policy": spec.policy, "input": spec.input, "master": master,
                      "executors": spec.executors, "start_executors": start, "target_seconds": spec.target_seconds,
                      "min_executors": spec.min_executors, "max_executors": spec.max_executors,
                      "partitions": partitions, "checkpoint_interval": spec.checkpoint_interval,
                      "rebalance": spec.rebalance, "switch_to_delta": spec.switch_to_delta,
                      "wait_for_executors": spec.wait_for_executors, "cluster": key}
            tracker = RunTracker(params) if spec.track else None
            if tracker:
                tracker.mlflow.set_tags({"iterflow.run_id": store.run_id, "iterflow.resumed": str(resume),
                                         **({"iterflow.start_reason": driver.start_reason[:5000]}
                                            if driver.start_reason else {})})
            callbacks = [cb for cb in (tracker.log_superstep if tracker else None, on_superstep) if cb]
            driver.on_superstep = lambda rec: [cb(rec) for cb in callbacks]
            if on_plan:
                on_plan(RunPlan.of(program))
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
