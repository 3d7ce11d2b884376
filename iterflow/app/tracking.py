"""MLflow tracking of runs: params, per-superstep metrics (``step=superstep``), the superstep
table as a Parquet artifact, and the fitted resource model.

Default store: ``sqlite:///mlflow.db`` in the working directory; ``MLFLOW_TRACKING_URI``
overrides it. A local store is the user's only: the sqlite file is created 0600 (SQLite gives
its journals the same mode) and artifacts are written under umask 077 (0600 files, 0700
directories). Metrics are logged asynchronously so that tracking does not add to the barrier.
"""
from __future__ import annotations

import contextlib
import io
import logging
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from iterflow.files import is_secret_key, private_dir
from iterflow.loop.records import SuperstepRecord, model_rows, records

log = logging.getLogger(__name__)

EXPERIMENT = "iterflow"


def tracking_uri() -> str:
    """The store's URI; a local (sqlite) store is created private and its tables ready."""
    uri = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"
    if uri.startswith("sqlite:///"):
        _private_file(Path(uri[len("sqlite:///"):]))
        _tables_ready(uri)
    return uri


_READY: set[str] = set()


def _tables_ready(uri: str) -> None:
    """Create a new local store's tables once per process, one process at a time: two runs
    starting at once on a new store would both migrate its schema, and one would fail with
    "table _alembic_tmp_tags already exists" -- on any first access (a history read as much as
    the run's own tracking), so every access comes through here."""
    if uri in _READY:
        return
    from mlflow.tracking import MlflowClient

    with _creation_lock(uri[len("sqlite:///"):]), _logging_kept(), _quiet():
        MlflowClient(tracking_uri=uri).search_experiments(max_results=1)
    _READY.add(uri)


@contextlib.contextmanager
def _creation_lock(db: str) -> Iterator[None]:
    """``flock`` on ``<db>.lock``; none where it cannot be taken (a store to read where the user
    cannot write or lock: no one migrates it from here)."""
    import fcntl

    fd = None
    try:
        if db != ":memory:":
            fd = os.open(db + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        log.debug("no lock for %s: %s", db, exc)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def _quiet() -> Any:
    """A new store's schema migrations, and a new experiment, log INFO lines (~50) through
    alembic's and MLflow's own handlers: expected, so not shown unless ITERFLOW_VERBOSE (errors
    still raise)."""
    return contextlib.nullcontext() if os.environ.get("ITERFLOW_VERBOSE") else \
        contextlib.redirect_stderr(io.StringIO())


@contextlib.contextmanager
def _logging_kept() -> Iterator[None]:
    """The process's logging as it was before a store's migrations: MLflow's alembic
    configuration (``fileConfig``) replaces the root logger's handlers with one bound to the
    ``sys.stderr`` of that moment, and sets it to WARNING -- every later log line of the run
    would go there in alembic's format, or nowhere (the line an input warning printed was lost
    with the quieted stream). Alembic's own INFO lines stay out, before and after."""
    alembic = logging.getLogger("alembic")
    kept = [(lg, lg.handlers[:], lg.level, lg.propagate)
            for lg in (logging.getLogger(), alembic, logging.getLogger("sqlalchemy.engine"))]
    alembic.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for lg, handlers, level, propagate in kept:
            lg.handlers[:] = handlers
            lg.setLevel(level)
            lg.propagate = propagate
        alembic.setLevel(logging.WARNING)


def _private_file(db: Path) -> None:
    """Create ``db`` empty and 0600 (its directory 0700 if missing) before SQLite does with 0644."""
    if db.exists() or str(db) == ":memory:":
        return
    if not db.parent.exists():
        private_dir(db.parent)
    os.close(os.open(db, os.O_WRONLY | os.O_CREAT, 0o600))


@contextlib.contextmanager
def _private_umask() -> Iterator[None]:
    """Files and directories MLflow creates meanwhile (artifacts, their store) are the user's only."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def _public(params: dict[str, Any]) -> dict[str, Any]:
    """Params safe to log: nothing whose name suggests a secret."""
    return {k: v for k, v in params.items() if not is_secret_key(k)}


class RunTracker:
    """One MLflow run per ``iterflow run``; use as a context manager."""

    def __init__(self, params: dict[str, Any], experiment: str = EXPERIMENT,
                 run_name: str | None = None) -> None:
        import mlflow

        self.mlflow = mlflow
        with _private_umask():
            mlflow.set_tracking_uri(tracking_uri())
            with _quiet():
                mlflow.set_experiment(experiment)
            self.run = mlflow.start_run(run_name=run_name)
            mlflow.log_params({k: str(v)[:500] for k, v in _public(params).items()})

    @property
    def run_id(self) -> str:
        return self.run.info.run_id

    def log_superstep(self, record: SuperstepRecord) -> None:
        """The superstep's numeric columns as metrics at ``step=superstep``; a change as a tag."""
        row = record.row()
        metrics = {k: float(v) for k, v in row.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "superstep"
                   and math.isfinite(float(v))}
        self.mlflow.log_metrics(metrics, step=record.superstep, synchronous=False)
        decided = record.decided
        if decided is not None and decided.decision != "same":
            self.mlflow.set_tag(f"decision.{record.superstep}", f"{decided.decision}: {decided.reason}")

    def finish(self, table: pd.DataFrame, model: Any | None = None, status: str = "FINISHED") -> None:
        """Log the superstep table (Parquet) and the model; end the run."""
        try:
            with _private_umask(), tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "supersteps.parquet"
                table.to_parquet(path, index=False)
                self.mlflow.log_artifact(str(path))
                model = getattr(model, "curve", model)  # a LiveModel logs its learned curve
                if model is not None and hasattr(model, "X_"):
                    import mlflow.sklearn

                    if not os.environ.get("ITERFLOW_VERBOSE"):  # no signature: expected, said once here
                        logging.getLogger("mlflow.models.model").setLevel(logging.ERROR)
                    mlflow.sklearn.log_model(model, name="resource_model", pip_requirements=_model_requirements())
        finally:
            self.mlflow.end_run(status=status)

    def __enter__(self) -> "RunTracker":
        return self

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if self.mlflow.active_run() is not None:
            self.mlflow.end_run(status="FAILED" if exc_type else "FINISHED")


def past_tables(program: str, experiment: str = EXPERIMENT, max_runs: int = 20) -> list[tuple[dict[str, str], pd.DataFrame]]:
    """``(params, superstep table)`` of the latest finished runs of ``program`` in the MLflow
    store, oldest first (the last is the newest run's: what ``fastest`` plans its start from):
    what the next run of the same program warm-starts from (its resource model,
    :func:`history_for`; its policy's rescale cost, ``AdaptivePolicy.learn_rescales``)."""
    import mlflow

    mlflow.set_tracking_uri(tracking_uri())
    exp = mlflow.get_experiment_by_name(experiment)
    if exp is None:
        return []
    runs = mlflow.search_runs([exp.experiment_id], filter_string=f"params.program = '{program}' "
                              "and attributes.status = 'FINISHED'", max_results=max_runs,
                              order_by=["attributes.start_time DESC"])  # the latest max_runs ...
    return [({k[len("params."):]: v for k, v in run.items() if k.startswith("params.")}, f)
            for run, f in _tables(runs) if len(f)][::-1]  # ... oldest first


def concat_tables(tables: list[tuple[dict[str, str], pd.DataFrame]], same: dict[str, Any] | None = None) -> pd.DataFrame:
    """The tables of :func:`past_tables` in one frame; ``same``: only runs with these params
    (``{"input": ..., "cluster": ...}``: the runs a new one repeats)."""
    frames = [f for params, f in tables
              if all(params.get(k) == str(v)[:500] for k, v in (same or {}).items())]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def past_supersteps(program: str, experiment: str = EXPERIMENT, max_runs: int = 20,
                    same: dict[str, Any] | None = None) -> pd.DataFrame:
    """:func:`past_tables` concatenated, oldest first (``same``: see :func:`concat_tables`)."""
    return concat_tables(past_tables(program, experiment, max_runs), same)


def superstep_table(run_id: str, client: Any = None) -> pd.DataFrame:
    """A run's ``supersteps.parquet`` artifact (from ``client``'s store, else the tracking URI's),
    read from a copy in a directory removed again: ``download_artifacts`` without a destination
    leaves a new temporary directory behind at every call (a warm start reads every earlier run:
    38 of them after one test session)."""
    import mlflow

    with tempfile.TemporaryDirectory(prefix="iterflow-artifact-") as tmp:
        local = (client.download_artifacts(run_id, "supersteps.parquet", tmp) if client is not None else
                 mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="supersteps.parquet", dst_path=tmp))
        return pd.read_parquet(local)


def _tables(runs: pd.DataFrame) -> Iterator[tuple[Any, pd.DataFrame]]:
    """``(run row, superstep table)`` of each run found by ``mlflow.search_runs``."""
    for _, run in runs.iterrows():
        try:
            table = superstep_table(run["run_id"])
        except Exception as exc:  # noqa: BLE001 - an unreadable old run is skipped, not fatal
            log.info("skipping run %s: %s", run["run_id"], exc)
            continue
        yield run, table


def past_jobs_on(cluster: str, experiment: str = EXPERIMENT, max_runs: int = 40) -> list[pd.DataFrame]:
    """The superstep tables of the latest finished runs on ``cluster`` (the ``cluster`` param),
    of any program, concatenated per job (program and input): what the cluster's task
    slow-down with scale-out is learned from (:func:`iterflow.model.contention.learn`)."""
    import mlflow

    mlflow.set_tracking_uri(tracking_uri())
    exp = mlflow.get_experiment_by_name(experiment)
    if exp is None:
        return []
    quoted = cluster.replace("'", "")
    runs = mlflow.search_runs([exp.experiment_id], filter_string=f"params.cluster = '{quoted}' "
                              "and attributes.status = 'FINISHED'", max_results=max_runs)
    jobs: dict[tuple[str, str], list[pd.DataFrame]] = {}
    for run, frame in _tables(runs):
        jobs.setdefault((str(run.get("params.program")), str(run.get("params.input"))), []).append(frame)
    return [pd.concat(frames, ignore_index=True) for frames in jobs.values()]


def model_history(tables: pd.DataFrame) -> pd.DataFrame:
    """``scale_out, work, seconds`` of the supersteps the model learns from
    (:func:`~iterflow.loop.records.feeds_model`, the rule of the live run, past the warm-up
    the tables show: :func:`~iterflow.model.warmup.warmup_supersteps`)."""
    from iterflow.model.warmup import warmup_supersteps

    recs = records(tables) if not tables.empty and "superstep" in tables else []
    rows = model_rows(recs, warmup_supersteps(recs)) if recs else []
    return pd.DataFrame([r[:3] for r in rows], columns=["scale_out", "work", "seconds"])


def history_for(program: str, experiment: str = EXPERIMENT, max_runs: int = 20) -> pd.DataFrame:
    """Past supersteps of ``program`` from the MLflow store (``scale_out, work, seconds``),
    to warm-start the resource model of the next run of the same program."""
    return model_history(past_supersteps(program, experiment, max_runs))


def _model_requirements() -> list[str]:
    """The resource model's requirements, pinned to what is installed: given explicitly, MLflow
    skips inferring them (it would load the model in a subprocess, ~5 s per run)."""
    from importlib.metadata import version

    return [f"{dist}=={version(dist)}" for dist in ("scikit-learn", "numpy", "pandas")]

