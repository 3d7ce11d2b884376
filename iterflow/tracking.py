"""MLflow tracking of runs: params, per-superstep metrics (``step=superstep``), the superstep
table as a Parquet artifact, and the fitted resource model.

Default store: ``sqlite:///mlflow.db`` in the working directory (created readable by the
user only); ``MLFLOW_TRACKING_URI`` overrides it. Metrics are logged asynchronously so that
tracking does not add to the barrier.
"""
from __future__ import annotations

import logging
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

log = logging.getLogger(__name__)

EXPERIMENT = "iterflow"
SECRET_HINTS = ("secret", "password", "token", "key")


def tracking_uri() -> str:
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        return uri
    db = Path.cwd() / "mlflow.db"
    if not db.exists():
        db.touch(mode=0o600)
    return f"sqlite:///{db}"


def _public(params: dict[str, Any]) -> dict[str, Any]:
    """Params safe to log: nothing whose name suggests a secret."""
    return {k: v for k, v in params.items() if not any(h in k.lower() for h in SECRET_HINTS)}


class RunTracker:
    """One MLflow run per ``iterflow run``; use as a context manager."""

    def __init__(self, params: dict[str, Any], experiment: str = EXPERIMENT,
                 run_name: str | None = None) -> None:
        import mlflow

        logging.getLogger("alembic").setLevel(logging.WARNING)
        self.mlflow = mlflow
        mlflow.set_tracking_uri(tracking_uri())
        mlflow.set_experiment(experiment)
        self.run = mlflow.start_run(run_name=run_name)
        mlflow.log_params({k: str(v)[:500] for k, v in _public(params).items()})

    @property
    def run_id(self) -> str:
        return self.run.info.run_id

    def log_superstep(self, record: dict[str, Any]) -> None:
        metrics = {k: float(v) for k, v in record.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "superstep"
                   and math.isfinite(float(v))}
        self.mlflow.log_metrics(metrics, step=int(record["superstep"]), synchronous=False)
        if record.get("decision") not in (None, "same"):
            self.mlflow.set_tag(f"decision.{record['superstep']}", f"{record['decision']}: {record.get('reason', '')}")

    def finish(self, table: pd.DataFrame, model: Any | None = None, status: str = "FINISHED") -> None:
        """Log the superstep table (Parquet) and the model; end the run."""
        try:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "supersteps.parquet"
                table.to_parquet(path, index=False)
                self.mlflow.log_artifact(str(path))
            if model is not None and hasattr(model, "X_"):
                import mlflow.sklearn

                mlflow.sklearn.log_model(model, name="resource_model")
        finally:
            self.mlflow.end_run(status=status)

    def __enter__(self) -> "RunTracker":
        return self

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if self.mlflow.active_run() is not None:
            self.mlflow.end_run(status="FAILED" if exc_type else "FINISHED")


def history_for(program: str, experiment: str = EXPERIMENT, max_runs: int = 20) -> pd.DataFrame:
    """Past supersteps of ``program`` from the MLflow store (``scale_out, work, seconds``),
    to warm-start the resource model of the next run of the same program."""
    import mlflow

    mlflow.set_tracking_uri(tracking_uri())
    exp = mlflow.get_experiment_by_name(experiment)
    if exp is None:
        return pd.DataFrame(columns=["scale_out", "work", "seconds"])
    runs = mlflow.search_runs([exp.experiment_id], filter_string=f"params.program = '{program}' "
                              "and attributes.status = 'FINISHED'", max_results=max_runs)
    frames = []
    for run_id in runs.get("run_id", []):
        try:
            local = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="supersteps.parquet")
            t = pd.read_parquet(local)
        except Exception as exc:  # noqa: BLE001 - an unreadable old run is skipped, not fatal
            log.info("skipping run %s: %s", run_id, exc)
            continue
        t = t[t["superstep"] > 1]
        frames.append(pd.DataFrame({"scale_out": t["cores"], "work": t["work"], "seconds": t["wall_seconds"]}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["scale_out", "work", "seconds"])
