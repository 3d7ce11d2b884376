"""What the issue-5 experiments share on top of :mod:`common`: tracked, timed runs and summaries.

Why one module: every experiment measures a run the same way, so the figures of different
experiments compare. For a run of supersteps 1..N:

* ``span_seconds`` of superstep i -- from the start of its ``step`` to the end of its barrier
  *including* the reconfiguration applied there (actuation, relayout), i.e. the time the job
  really spent on it; ``wall_seconds`` (the driver's) omits the barrier and reconfiguration;
* ``runtime`` -- the sum of spans of supersteps 2..N: superstep 1 pays JIT warm-up and the
  first reads of cached inputs and is reported apart (``ss1_seconds``);
* ``executor_seconds`` -- over supersteps 2..N, executors in force during the superstep times
  its wall + barrier, plus the executors after the reconfiguration times the rest of the span.

Every run is one MLflow run (:class:`~iterflow.app.tracking.RunTracker`) in the experiment's own
MLflow experiment: params (job, policy, experiment, rep, ...), per-superstep metrics, the
decisions (tags), the superstep table, summary metrics and the fitted resource model (as
JSON in quick mode: logging the sklearn flavour infers pip requirements, ~5 s a run here).
"""
from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import pandas as pd

from iterflow.loop.records import executor_seconds, records

from common import RESULTS, emulated_cluster, points, rmat

from iterflow.loop.driver import IterationDriver
from iterflow.observe.eventlog import consistent, executors_by_superstep, find_log
from iterflow.loop.program import IterativeProgram
from iterflow.app.tracking import RunTracker
from iterflow.cluster.session import parse_conf
from iterflow.errors import InputError

SUMMARY_COLUMNS = ["experiment", "job", "config", "metric", "median", "min", "max", "n", "note"]


def parse_args(doc: str, name: str, extra: Callable[[argparse.ArgumentParser], None] | None = None,
               quick_reps: int = 3, partitions: int | None = 8, data: bool = True,
               quick_help: str = "small data, few supersteps (make experiments)") -> argparse.Namespace:
    """The options every experiment has: ``--quick``, ``--reps``, cluster shape, MLflow experiment.
    ``partitions``: the default of ``--partitions`` (8: the count the experiments measured before
    the loop's count followed the cores both ways, stop 44; ``None``: the loop's own choice).
    ``data=False``: no ``--data`` (an experiment with inputs of its own; ``args.data`` is ``None``)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc)
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--reps", type=int, default=None, help=f"repetitions per configuration (default {quick_reps})")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--cpu-share", type=float, default=0.5)
    ap.add_argument("--partitions", type=int, default=partitions,
                    help="starting partition count" + (f" (default {partitions})" if partitions else
                                                       " (default: one task a core of the executors a run starts on)")
                    + "; a rescale's follows the cores (iterflow.loop.reconfigure)")
    ap.add_argument("--executor-jit", choices=["c1", "default"], default="c1",
                    help="the executors' JIT on the emulated nodes (default c1: -XX:TieredStopAtLevel=1; "
                         "C2's compiler threads would share each node's sub-core quota with the tasks)")
    if data:
        ap.add_argument("--data", choices=["small", "large"], default=None,
                        help="input size: small (R-MAT scale 14, 100k edges; 20k points) or large (scale 18, "
                             "1M edges; 500k points); default small with --quick, else large")
    ap.add_argument("--mlflow-experiment", default=f"iterflow-exp-{name}",
                    help="MLflow experiment the runs are logged to (store: MLFLOW_TRACKING_URI or ./mlflow.db)")
    ap.add_argument("--sklearn-model", action="store_true", default=None,
                    help="log the resource model as an sklearn model (default: full mode only)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting of the application, over iterflow's defaults and the experiment's own "
                         "(e.g. spark.serializer=org.apache.spark.serializer.JavaSerializer); the note says so")
    if extra:
        extra(ap)
    args = ap.parse_args()
    try:
        args.conf = parse_conf(args.conf)
    except InputError as exc:
        ap.error(str(exc))
    args.reps_given = args.reps is not None
    args.reps = args.reps or quick_reps
    args.data = (args.data or ("small" if args.quick else "large")) if data else None
    if args.sklearn_model is None:
        args.sklearn_model = not args.quick
    args.name = name
    return args


@contextlib.contextmanager
def cluster(args: argparse.Namespace, conf: dict[str, str] | None = None) -> Iterator[tuple[Any, Any, str]]:
    """:func:`common.emulated_cluster` of ``args``' shape; yields ``(cluster, spark, note)``, the
    note saying whether the cpu share was applied. Spark's driver log is cut to errors: the
    driver warns at every superstep that a released local checkpoint cannot be recomputed.

    Spark's event log is on (``args.eventlog``), so every run is checked from outside the
    framework: the executors alive at each superstep's first job (:func:`eventlog_check`)."""
    args.eventlog = Path(tempfile.mkdtemp(prefix="iterflow-eventlog-"))
    given = getattr(args, "conf", {})  # --conf: over the experiment's own settings, named in the note
    conf, said = executor_jit(args, {**(conf or {}), **given})
    said += "".join(f"; {k}={v}" for k, v in given.items())
    try:
        with emulated_cluster(args.workers, args.cpu_share, partitions=args.partitions, conf=conf,
                              eventlog=args.eventlog) as (c, spark):
            spark.sparkContext.setLogLevel("ERROR")
            yield c, spark, (c.cpu_share_note or "no cpu share") + said
    finally:
        shutil.rmtree(args.eventlog, ignore_errors=True)


C1_ONLY = "-XX:TieredStopAtLevel=1"


def executor_jit(args: argparse.Namespace, conf: dict[str, str] | None) -> tuple[dict[str, str], str]:
    """``conf`` with the executors' JIT of ``args.executor_jit``, and the note that says so.

    Why C1 by default on the emulated nodes: a node here is a 0.5-core cgroup quota, and C2's
    background compilation shares it with the tasks for tens of seconds -- measured (stop 23,
    ``experiments/results/scenario_issue13.txt``, ``pareto_full_pagerank_c1.txt``): PageRank's
    static runs spread 23 % run to run and scaled 1.04x at 4 executors under C2, 2 % and 2.14x
    under C1. A real node compiles on cores of its own; C1 is the closer emulation of that.
    Users' runs (``iterflow run``) keep the JVM's default; the README shows the option."""
    conf = dict(conf or {})
    if getattr(args, "executor_jit", "default") != "c1" or "spark.executor.extraJavaOptions" in conf:
        return conf, ""
    conf["spark.executor.extraJavaOptions"] = C1_ONLY
    return conf, f"; executors JIT with C1 only ({C1_ONLY}; --executor-jit default for the JVM's own)"


def eventlog_check(spark: Any, args: argparse.Namespace, table: pd.DataFrame, first_job: int) -> pd.DataFrame:
    """``table`` with the executors Spark's event log shows for each superstep (-1: not in the
    log): ``eventlog_executors`` alive when its last job ended (what the record's ``executors``
    counts, at the barrier), ``eventlog_executors_start`` alive when its first job started
    (lower in a superstep that new executors joined while it ran: a scale-out no longer waits
    for them), ``eventlog_task_executors`` that ran any of its tasks."""
    log = getattr(args, "eventlog", None)
    if log is None:
        return table
    return with_eventlog(table, executors_by_superstep(find_log(log, spark.sparkContext.applicationId), first_job))


def with_eventlog(table: pd.DataFrame, seen: dict[int, dict[str, int]]) -> pd.DataFrame:
    """``table`` with the event log's view of each superstep (``seen``: :func:`executors_by_superstep`)
    as the columns :func:`eventlog_check` names, -1 where the log has none."""
    table = table.copy()
    for col, key in (("eventlog_executors", "end"), ("eventlog_executors_start", "start"),
                     ("eventlog_task_executors", "tasks")):
        table[col] = [seen.get(int(i), {}).get(key, -1) for i in table["superstep"]]
    return table


def eventlog_match(table: pd.DataFrame) -> tuple[str, bool]:
    """Of a table with :func:`with_eventlog`'s columns: the executors the log saw after each
    superstep, and whether every superstep's record agrees (:func:`consistent`)."""
    seen = table["eventlog_executors"].astype(int)
    ok = all(consistent(int(e), {"end": int(end), "tasks": int(tasks)}) for e, end, tasks in
             zip(table["executors"], seen, table["eventlog_task_executors"]))
    return "-".join(map(str, seen)), ok


@dataclass
class Run:
    """One measured run: its superstep table (with spans) and where it was logged."""

    table: pd.DataFrame
    labels: dict[str, Any]
    init_seconds: float
    run_id: str | None = None
    output: Any = None
    result_seconds: float = 0.0  # after the last barrier: the result secured (reliably checkpointed)
    extra: dict[str, Any] = field(default_factory=dict)
    free: Any = field(default=None, repr=False)  # the driver's RunResult.release

    def release(self) -> None:
        """Free the run's final state and last copy on the executors (``RunResult.release``)."""
        if self.free is not None:
            self.free()
        self.output = self.free = None

    @property
    def later(self) -> pd.DataFrame:
        return self.table[self.table["superstep"] > 1]

    @property
    def runtime(self) -> float:
        return float(self.later["span_seconds"].sum())

    @property
    def ss1_seconds(self) -> float:
        first = self.table[self.table["superstep"] == 1]
        return float(first["span_seconds"].sum())

    @property
    def job_seconds(self) -> float:
        """All supersteps, superstep 1 included (what a whole-job deadline is about)."""
        return float(self.table["span_seconds"].sum())

    @property
    def executor_seconds(self) -> float:
        return float(self.later["executor_seconds"].sum())

    def eventlog_row(self) -> dict[str, Any]:
        """The event-log check as columns: the executors it saw, and whether they match."""
        if "eventlog_executors" not in self.table:
            return {}
        path, ok = eventlog_match(self.table)
        return {"eventlog_path": path, "eventlog_match": ok}

    def row(self) -> dict[str, Any]:
        """The run as one tidy row (labels first)."""
        t = self.table
        return {**self.labels, "supersteps": len(t), "runtime": self.runtime, "ss1_seconds": self.ss1_seconds,
                "job_seconds": self.job_seconds, "executor_seconds": self.executor_seconds,
                "init_seconds": self.init_seconds,
                "superstep_median": float(self.later["span_seconds"].median()) if len(self.later) else float("nan"),
                "executors_path": "-".join(str(int(e)) for e in t["executors"]),
                **self.eventlog_row(),
                "mean_executors": self.executor_seconds / self.runtime if self.runtime > 0 else float("nan"),
                "run_id": self.run_id, **self.extra}


def _spans(t: pd.DataFrame, starts: dict[int, float], ends: dict[int, float]) -> pd.DataFrame:
    t = t.copy()
    t["span_seconds"] = [ends[int(i)] - starts[int(i)] for i in t["superstep"]]
    t["executor_seconds"] = [executor_seconds(r, span) for r, span in zip(records(t), t["span_seconds"])]
    return t


def show(r: dict[str, Any]) -> None:
    print(f"    superstep {r['superstep']:>2}: {r['wall_seconds']:6.2f}s on {r['executors']} executors, "
          f"{r['decision']}: {str(r['reason'])[:110]}", flush=True)


def tracked_run(spark: Any, policy: Any, program: IterativeProgram, *, args: argparse.Namespace,
                labels: dict[str, Any], start: int | None, params: dict[str, Any] | None = None,
                verbose: bool = True, past: Sequence[pd.DataFrame] = (), model: Any = None,
                cluster_past: Sequence[Any] = (), follow_cores: bool = True) -> Run:
    """Run ``program`` under ``policy`` from ``start`` executors (``None``: leave them, as for
    Spark's dynamic allocation), timed per superstep and logged to MLflow; see the module doc.
    ``past``: earlier runs' tables, which warm-start the model and the policy's rescale price
    through the loop, as ``iterflow run`` does from its MLflow store; ``model``: the resource
    model (default the loop's own, knowing nothing of the cluster); ``cluster_past``: records of
    other runs on the cluster (its calibration's), which price rescales as ``iterflow run``'s do."""
    driver = IterationDriver(spark, policy, partitions=args.partitions, start_executors=start, model=model,
                             cluster_past=cluster_past, partitions_follow_cores=follow_cores,
                             past=pd.concat(list(past), ignore_index=True) if past else ())
    first_job = driver.stats.first_job
    starts: dict[int, float] = {}
    ends: dict[int, float] = {}
    step = program.step

    def timed_step(state: Any, i: int) -> Any:
        starts[i] = time.perf_counter()
        return step(state, i)

    program.step = timed_step  # type: ignore[method-assign] - per-instance timing hook
    tracker = RunTracker({**program.params(), **labels, **(params or {}), "start_executors": start,
                          "partitions": args.partitions, "workers": args.workers, "cpu_share": args.cpu_share,
                          "quick": args.quick}, experiment=args.mlflow_experiment,
                         run_name="/".join(str(v) for v in labels.values()))

    def on_superstep(record: Any) -> None:
        ends[record.superstep] = time.perf_counter()
        tracker.log_superstep(record)
        if verbose:
            show(record.row())

    driver.on_superstep = on_superstep
    label = ", ".join(f"{k}={v}" for k, v in labels.items())
    print(f"  run {label}: start on {start if start is not None else 'whatever Spark has'} executors", flush=True)
    t0 = time.perf_counter()
    try:
        res = driver.run(program)
    except BaseException:
        tracker.finish(pd.DataFrame(), status="FAILED")
        raise
    finally:
        program.step = step  # type: ignore[method-assign]
    done = time.perf_counter()
    table = eventlog_check(spark, args, _spans(res.supersteps, starts, ends), first_job)
    run = Run(table, dict(labels), starts.get(1, t0) - t0, tracker.run_id, res.output,
              result_seconds=done - max(ends.values(), default=done), free=res.release)
    tracker.mlflow.log_metrics({k: v for k, v in run.row().items() if k in (
        "runtime", "ss1_seconds", "job_seconds", "executor_seconds", "init_seconds", "superstep_median")})
    if not args.sklearn_model and hasattr(driver.model, "to_dict") and driver.model.fitted:
        tracker.mlflow.log_dict(driver.model.to_dict(), "resource_model.json")
    tracker.finish(run.table, driver.model if args.sklearn_model else None)
    print(f"  -> {len(run.table)} supersteps; runtime (supersteps 2..) {run.runtime:.1f}s, superstep 1 "
          f"{run.ss1_seconds:.1f}s, executor-seconds {run.executor_seconds:.1f}, executors "
          f"{run.row()['executors_path']}", flush=True)
    return run


class Collector:
    """The runs of one experiment: a tidy row and a labelled superstep table per run."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.tables: list[pd.DataFrame] = []

    def run(self, spark: Any, policy: Any, program: IterativeProgram, *, args: argparse.Namespace,
            labels: dict[str, Any], start: int | None, verbose: bool = True,
            past: Sequence[pd.DataFrame] = (), model: Any = None, cluster_past: Sequence[Any] = (),
            keep_output: bool = False, follow_cores: bool = True, **row: Any) -> Run:
        """:func:`tracked_run`, then free the program's inputs -- and its final state, unless
        ``keep_output`` (then :meth:`Run.release` it once read) -- and keep the run's figures."""
        run = tracked_run(spark, policy, program, args=args, labels=labels, start=start, verbose=verbose,
                          past=past, model=model, cluster_past=cluster_past, follow_cores=follow_cores)
        if not keep_output:
            run.release()
        program.release()  # its own cached inputs; the shared graph or points stay
        self.add(run, **row)
        return run

    def add(self, run: Run, **row: Any) -> None:
        self.rows.append({**run.row(), **row})
        self.tables.append(with_labels(run))

    def frame(self, note: str) -> pd.DataFrame:
        df = pd.DataFrame(self.rows)
        df["cluster_note"] = note
        return df


RUN_METRICS = {"runtime": "runtime s (ss 2..)", "executor_seconds": "executor-s (ss 2..)",
               "ss1_seconds": "superstep 1 s", "mean_executors": "mean executors"}


def ratio_range(mine: pd.Series, ref: pd.Series) -> str:
    """``mine / ref`` paired by index (the rep): ``"median x [min-max]"``."""
    r = (mine / ref).dropna().to_numpy()
    return f"{float(pd.Series(r).median()):.2f}x [{r.min():.2f}-{r.max():.2f}]" if r.size else "n/a"


def paired(df: pd.DataFrame, experiment: str, job: str, a: str, b: str) -> list[dict[str, Any]]:
    """Policy ``b`` against ``a``, paired by rep: runtime change, executor-seconds ratio and saving."""
    x = df[(df["job"] == job) & (df["policy"] == a)].set_index("rep")
    y = df[(df["job"] == job) & (df["policy"] == b)].set_index("rep")
    reps = x.index.intersection(y.index)
    ratio = y.loc[reps, "executor_seconds"] / x.loc[reps, "executor_seconds"]
    config = f"{b} vs {a}"
    return [stat_row(experiment, job, config, "runtime change %",
                     (y.loc[reps, "runtime"] / x.loc[reps, "runtime"] - 1) * 100, "paired by rep"),
            stat_row(experiment, job, config, "executor-s ratio", ratio, "paired by rep"),
            stat_row(experiment, job, config, "executor-s saved %", (1 - ratio) * 100, "paired by rep")]


def summarize(df: pd.DataFrame, experiment: str, by: Sequence[str], metrics: dict[str, str],
              note: str = "") -> list[dict[str, Any]]:
    """Median, min and max of each metric column (name -> label) for each group of ``by``."""
    rows = []
    for key, g in df.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        labels = dict(zip(by, key))
        job = str(labels.pop("job", "-"))
        config = "/".join(str(v) for v in labels.values()) or "-"
        for col, label in metrics.items():
            vals = [float(v) for v in g[col] if pd.notna(v)]
            if not vals:
                continue
            rows.append({"experiment": experiment, "job": job, "config": config, "metric": label,
                         "median": statistics.median(vals), "min": min(vals), "max": max(vals),
                         "n": len(vals), "note": note})
    return rows


def stat_row(experiment: str, job: str, config: str, metric: str, values: Iterable[float],
             note: str = "", n: int | None = None) -> dict[str, Any]:
    """A summary row of ``values``; ``n`` overrides the count (a rate over n runs is one value)."""
    vals = [float(v) for v in values if pd.notna(v)]
    return {"experiment": experiment, "job": job, "config": config, "metric": metric,
            "median": statistics.median(vals) if vals else float("nan"),
            "min": min(vals) if vals else float("nan"), "max": max(vals) if vals else float("nan"),
            "n": len(vals) if n is None else n, "note": note}


def fmt_value(row: dict[str, Any] | pd.Series) -> str:
    if int(row["n"]) <= 1 or row["min"] == row["max"]:
        return f"{row['median']:.3g}"
    return f"{row['median']:.3g} [{row['min']:.3g}-{row['max']:.3g}]"


def print_summary(rows: pd.DataFrame | list[dict[str, Any]], title: str = "") -> None:
    """One line per (experiment, job, config, metric): ``median [min-max] (n)``."""
    df = pd.DataFrame(rows, columns=SUMMARY_COLUMNS) if isinstance(rows, list) else rows
    if title:
        print(f"\n== {title}")
    w = [max([len(h)] + [len(str(v)) for v in df[h]]) for h in ("experiment", "job", "config", "metric")]
    print(f"{'experiment':<{w[0]}}  {'job':<{w[1]}}  {'config':<{w[2]}}  {'metric':<{w[3]}}  median [min-max] (n)")
    for _, r in df.iterrows():
        note = f"  {r['note']}" if isinstance(r["note"], str) and r["note"] else ""
        print(f"{r['experiment']:<{w[0]}}  {r['job']:<{w[1]}}  {r['config']:<{w[2]}}  {r['metric']:<{w[3]}}  "
              f"{fmt_value(r)} ({int(r['n'])}){note}")


def report(name: str, runs: pd.DataFrame, summary: list[dict[str, Any]], supersteps: list[pd.DataFrame] | None,
           title: str) -> None:
    """Save the CSVs (:func:`save`) and print the summary under ``title``, with the event-log
    check of all runs (how many match, how many of those rescaled)."""
    if "eventlog_match" in runs:
        checked = runs[runs["eventlog_match"].notna()]
        rescaled = checked["executors_path"].map(lambda p: len(set(p.split("-"))) > 1)
        summary = summary + [stat_row(name, "all", "all runs", "event-log match %",
                                      [100.0 * checked["eventlog_match"].astype(bool).mean()], n=len(checked),
                                      note=f"{int(rescaled.sum())} of the runs rescaled; "
                                           f"{int((checked['eventlog_match'].astype(bool) & rescaled).sum())} "
                                           "of those match")]
    save(name, runs, summary, supersteps)
    print_summary(summary, title)


def write_report(name: str, title: str, summary: list[dict[str, Any]], runs: pd.DataFrame) -> None:
    """Print ``summary`` under ``title`` and ``runs``; the same in ``results/NAME.txt``."""
    print_summary(summary, title)
    print(runs.to_string(index=False))
    with open(RESULTS / f"{name}.txt", "w") as fh:
        fh.write(title + "\n" + pd.DataFrame(summary).to_string(index=False) + "\n\n" + runs.to_string(index=False) + "\n")


def write_table(name: str, tag: str, df: pd.DataFrame, text: list[str]) -> None:
    """``results/NAME[_TAG].csv`` (the table) and ``.txt`` (the report ``text``), printed too."""
    stem = f"{name}_{tag}" if tag else name
    RESULTS.mkdir(parents=True, exist_ok=True)
    df.to_csv(RESULTS / f"{stem}.csv", index=False)
    (RESULTS / f"{stem}.txt").write_text("\n".join(text) + "\n")
    print("\n".join(text))


def save(name: str, runs: pd.DataFrame, summary: list[dict[str, Any]],
         supersteps: list[pd.DataFrame] | None = None) -> Path:
    """``results/<name>.csv`` (one row per run), ``<name>_summary.csv`` and ``<name>_supersteps.csv``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs.to_csv(RESULTS / f"{name}.csv", index=False)
    pd.DataFrame(summary, columns=SUMMARY_COLUMNS).to_csv(RESULTS / f"{name}_summary.csv", index=False)
    if supersteps:
        pd.concat([t.dropna(axis=1, how="all") for t in supersteps], ignore_index=True).to_csv(RESULTS / f"{name}_supersteps.csv", index=False)
    return RESULTS / f"{name}_summary.csv"


def with_labels(run: Run) -> pd.DataFrame:
    """The run's superstep table with its labels as columns (for ``_supersteps.csv``)."""
    t = run.table.copy()
    for k, v in run.labels.items():
        t[k] = v
    t["run_id"] = run.run_id
    return t


def warm_up(spark: Any, program: IterativeProgram, args: argparse.Namespace, executors: int | None = None) -> None:
    """A short untracked static run on all executors (or ``executors``), so the first measured run
    does not pay the executors' JIT warm-up alone (executors started later by a scale-out are
    cold anyway)."""
    from iterflow.policies import StaticPolicy

    driver = IterationDriver(spark, StaticPolicy(), partitions=args.partitions, collect_stats=False,
                             start_executors=executors or args.workers)
    t0 = time.perf_counter()
    driver.run(program).release()  # its final state and last copy: not left cached for the next runs
    program.release()
    print(f"  warm-up {program.name}: {time.perf_counter() - t0:.1f}s", flush=True)


def initial_centers(points: Any, k: int, seed: int = 1) -> Any:
    """k distinct points drawn with ``seed``: one set of initial centers for every k-means run."""
    import numpy as np

    from iterflow.inputs.pointsio import feature_columns

    return np.array(points.select(feature_columns(points)).rdd.map(tuple).takeSample(False, k, seed), float)


K = 5  # k-means clusters (and Gaussian blobs generated)


def graph_path(args: argparse.Namespace) -> Path:
    """The R-MAT edge list of the PageRank/WCC jobs: scale 14 (100k edges drawn) for small data."""
    return rmat(14, 100_000) if args.data == "small" else rmat(18, 1_000_000)


def points_path(args: argparse.Namespace) -> Path:
    return points(20_000 if args.data == "small" else 500_000, K)


def load_jobs(spark: Any, args: argparse.Namespace, n_steps: int) -> dict[str, Callable[..., IterativeProgram]]:
    """Program factories (``make(n_supersteps)``) for ``args.jobs`` over inputs loaded and cached
    once in this session; k-means starts every run from the same centers and runs ``n`` supersteps."""
    from algorithms import KMeans, PageRank
    from iterflow.inputs.graphio import load_graph
    from iterflow.inputs.pointsio import load_points

    jobs: dict[str, Callable[..., IterativeProgram]] = {}
    if "pagerank" in args.jobs:
        g = load_graph(spark, str(graph_path(args)), "edgelist", partitions=args.partitions)
        jobs["pagerank"] = lambda n=n_steps: PageRank(g, max_iterations=n)
    if "kmeans" in args.jobs:
        pts = load_points(spark, str(points_path(args)), partitions=args.partitions)
        centers = initial_centers(pts, K)
        jobs["kmeans"] = lambda n=n_steps: KMeans(pts, K, init_centers=centers, max_iterations=n, tol=None)
    return jobs
