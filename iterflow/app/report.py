"""``iterflow report RUN_ID``: the figures of one MLflow run as PNG files and one HTML page.

The same loading, summary and plotting functions serve ``notebooks/analysis.ipynb``, so a
figure means the same thing in both places. Plot functions draw on a given matplotlib
``Axes`` and tolerate missing columns (older runs, failed runs, ``--no-stats``-like tables):
they say "no data" instead of failing. Files are written under a temporary name and renamed,
the HTML last, so a reader never sees a page that points at a missing or half-written figure.
"""
from __future__ import annotations

import html
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from iterflow.errors import InputError
from iterflow.files import atomic_file
from iterflow.app.tracking import EXPERIMENT, superstep_table

SKEW_COLUMNS = {"skew": "task time max/mean", "skew_cpu": "task CPU time max/mean",
                "partition_records_max_over_mean": "partition records max/mean",
                "partition_imbalance": "partition imbalance"}


@dataclass
class RunData:
    """One MLflow run of ``iterflow run``: its params, status and superstep table."""

    run_id: str
    name: str
    status: str
    start_time: datetime | None
    params: dict[str, str] = field(default_factory=dict)
    table: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def policy(self) -> str:
        return self.params.get("policy", "?")


def store_uri() -> str:
    """The tracking URI ``iterflow run`` logs to, without creating a store (unlike
    :func:`iterflow.app.tracking.tracking_uri`): a report of a store that is not there is an error."""
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        return uri
    return f"sqlite:///{Path.cwd() / 'mlflow.db'}"


def _quiet(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


def _client(uri: str, what: str) -> Any:
    """A client of the store at ``uri``; a SQLite store that does not exist is an InputError
    saying what was looked for (MLflow would silently create an empty one)."""
    from mlflow.tracking import MlflowClient

    # Opening a SQLite store logs schema checks at INFO on every open; alembic's own logging
    # config resets levels each time, so a filter (which it leaves alone) keeps them out.
    for name in ("mlflow.store.db.utils", "alembic.runtime.migration"):
        logger = logging.getLogger(name)
        if _quiet not in logger.filters:
            logger.addFilter(_quiet)
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
        raise InputError(f"{what}: no MLflow store at {uri} "
                         "(run `iterflow run` here first, or set MLFLOW_TRACKING_URI)")
    return MlflowClient(tracking_uri=uri)


def _table(client: Any, run_id: str) -> pd.DataFrame:
    """The run's ``supersteps.parquet`` artifact (empty for a run that failed before logging it)."""
    from mlflow.exceptions import MlflowException

    try:
        table = superstep_table(run_id, client)
    except (MlflowException, OSError):
        return pd.DataFrame()
    return table.sort_values("superstep").reset_index(drop=True) if "superstep" in table else table


def _run_data(client: Any, run: Any) -> RunData:
    start = run.info.start_time
    return RunData(run.info.run_id, run.info.run_name or "", run.info.status,
                   datetime.fromtimestamp(start / 1e3, timezone.utc) if start else None,
                   dict(run.data.params), _table(client, run.info.run_id))


def load_run(run_id: str, uri: str | None = None) -> RunData:
    """One run by id; an unknown id is an :class:`InputError` naming the id and the store."""
    from mlflow.exceptions import MlflowException

    uri = uri or store_uri()
    client = _client(uri, f"MLflow run {run_id!r}")
    try:
        run = client.get_run(run_id)
    except MlflowException as exc:
        if exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
            raise InputError(f"no MLflow run {run_id!r} in {uri} "
                             "(set MLFLOW_TRACKING_URI to the store the run was logged to)") from None
        raise
    return _run_data(client, run)


def load_experiment(experiment: str = EXPERIMENT, uri: str | None = None,
                    max_runs: int = 200) -> list[RunData]:
    """Every run of ``experiment`` (newest first); an empty list when there is none."""
    uri = uri or store_uri()
    client = _client(uri, f"experiment {experiment!r}")
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    runs = client.search_runs([exp.experiment_id], max_results=max_runs, order_by=["attributes.start_time DESC"])
    return [_run_data(client, r) for r in runs]


def _col(table: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column, NaN where the table lacks it (older or failed runs)."""
    if name not in table:
        return pd.Series(np.nan, index=table.index, dtype=float)
    return pd.to_numeric(table[name], errors="coerce")


def summarize(table: pd.DataFrame) -> dict[str, float]:
    """Totals of a run: supersteps, seconds, executor-seconds (the resources a policy spent:
    :func:`~iterflow.loop.records.executor_seconds` of every superstep, the one formula the
    policies and experiments use too), barrier seconds and the model's error."""
    from iterflow.loop.records import executor_seconds, records

    wall, pred = _col(table, "wall_seconds"), _col(table, "predicted_seconds")
    known = pred.notna() & wall.notna() & (wall > 0)
    return {
        "supersteps": int(len(table)),
        "total_seconds": float(wall.sum()),
        "executor_seconds": float(sum(executor_seconds(r) for r in records(table))) if len(table) else 0.0,
        "barrier_seconds": float(_col(table, "barrier_seconds").sum()),
        "prediction_error": float(((pred - wall).abs() / wall)[known].mean()) if known.any() else float("nan"),
    }


def rebalance_supersteps(table: pd.DataFrame) -> list[int]:
    """Supersteps after whose barrier the partitioning changed: a truthy ``rebalanced`` or
    ``repartitioned`` column, bins moved (``bins_moved_fraction`` > 0), a new partition count
    (``partitions_after``, or ``partitions`` of the next superstep), or a reason that says so.
    Empty when the table records none."""
    if table.empty or "superstep" not in table:
        return []
    hit = pd.Series(False, index=table.index)
    for name in ("rebalanced", "repartitioned"):
        if name in table:
            hit |= table[name].fillna(False).astype(bool)
    hit |= _col(table, "bins_moved_fraction") > 0
    parts = _col(table, "partitions")
    after = _col(table, "partitions_after")
    hit |= after.notna() & (after != parts)
    hit |= parts.shift(-1).notna() & (parts.shift(-1) != parts)
    if "reason" in table:
        hit |= table["reason"].fillna("").astype(str).str.contains("rebalanc|repartition", case=False)
    return [int(s) for s in table.loc[hit, "superstep"]]


def _no_data(ax: Any, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} recorded", ha="center", va="center", transform=ax.transAxes, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def _superstep_axis(ax: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel("superstep")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def plot_timeline(ax: Any, table: pd.DataFrame, title: str | None = None) -> None:
    """Wall seconds per superstep (bars, barrier overhead on top), executors over time (steps,
    right axis), and every executor decision marked with an arrow at the barrier it was taken."""
    ax.set_title(title or "superstep timeline")
    if table.empty or "wall_seconds" not in table:
        return _no_data(ax, "supersteps")
    x = table["superstep"]
    wall, barrier = _col(table, "wall_seconds"), _col(table, "barrier_seconds").fillna(0)
    ax.bar(x, wall, color="tab:blue", label="superstep")
    ax.bar(x, barrier, bottom=wall, color="tab:orange", label="barrier")
    _superstep_axis(ax)
    ax.set_ylabel("seconds")
    ax2 = ax.twinx()
    ax2.step(x, _col(table, "executors"), where="mid", color="black", label="executors")
    ax2.set_ylabel("executors")
    ax2.set_ylim(bottom=0, top=max(1.0, float(_col(table, "executors").max() or 1)) + 1)
    ax2.yaxis.get_major_locator().set_params(integer=True)
    if "decision" in table:
        for _, row in table[table["decision"].isin(["up", "down"])].iterrows():
            ax2.annotate("▲" if row["decision"] == "up" else "▼", (row["superstep"] + 0.5, row["executors"]),
                         xytext=(0, 6), textcoords="offset points", ha="center",
                         color="green" if row["decision"] == "up" else "red")
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper right", fontsize="small")


def plot_predicted(ax: Any, table: pd.DataFrame, title: str | None = None) -> None:
    """The model's prediction (made before the superstep ran) against the measured time."""
    ax.set_title(title or "predicted vs actual superstep time")
    pred = _col(table, "predicted_seconds")
    if table.empty or pred.isna().all():
        return _no_data(ax, "predictions")
    ax.plot(table["superstep"], _col(table, "wall_seconds"), "o-", label="actual")
    ax.plot(table["superstep"], pred, "s--", label="predicted")
    _superstep_axis(ax)
    ax.set_ylabel("seconds")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")


def plot_skew(ax: Any, table: pd.DataFrame, title: str | None = None) -> None:
    """Skew of the main stage per superstep (1 = balanced); rebalancing barriers as dashed lines."""
    ax.set_title(title or "task skew per superstep")
    present = [c for c in SKEW_COLUMNS if c in table and _col(table, c).notna().any()]
    if table.empty or not present:
        return _no_data(ax, "skew")
    for c in present:
        ax.plot(table["superstep"], _col(table, c), "o-", label=SKEW_COLUMNS[c])
    for s in rebalance_supersteps(table):
        ax.axvline(s + 0.5, color="grey", linestyle="--")
    ax.axhline(1.0, color="grey", linewidth=0.5)
    _superstep_axis(ax)
    ax.set_ylabel("max / mean")
    ax.legend(fontsize="small")


def plot_sweep(ax: Any, sim: list[tuple[str, Any]], real: tuple[float, float, str] | None = None,
               title: str | None = None) -> None:
    """A simulated sweep (``iterflow simulate --run --sweep``: ``(label, SimRun)`` pairs) as the
    Pareto experiment draws real runs: seconds against executor-seconds, the static sizes joined
    as the frontier, each adaptive policy a point, and ``real`` -- ``(executor-seconds, seconds,
    label)`` of the recorded run -- beside them: how far the simulation is from it at the run's
    own size says how far to trust the other points."""
    ax.set_title(title or "simulated sweep")
    if not sim:
        return _no_data(ax, "simulated runs")
    static = [(label, r) for label, r in sim if label.startswith("static-")]
    if static:
        ax.plot([r.executor_seconds for _, r in static], [r.runtime for _, r in static], "k--o", ms=4,
                label="simulated static")
        for label, r in static:
            ax.annotate(label.split("-")[1], (r.executor_seconds, r.runtime), fontsize=8)
    for label, r in sim:
        if not label.startswith("static-"):
            ax.scatter(r.executor_seconds, r.runtime, marker="^", label=f"simulated {label}")
    if real is not None:
        ax.scatter(real[0], real[1], marker="*", s=160, c="tab:red", label=real[2])
    ax.set_xlabel("executor-seconds")
    ax.set_ylabel("seconds (supersteps, barriers, rescales)")
    ax.legend(fontsize=7)


def save_sweep(path: Path, sim: list[tuple[str, Any]], real: tuple[float, float, str] | None = None,
               title: str | None = None) -> None:
    """:func:`plot_sweep` as a PNG at ``path`` (written whole or not at all)."""
    _save_figure(path, lambda ax, _: plot_sweep(ax, sim, real, title), pd.DataFrame())


FIGURES: dict[str, tuple[str, Callable[..., None]]] = {
    "timeline": ("Superstep timeline and executors", plot_timeline),
    "predicted": ("Predicted vs actual superstep time", plot_predicted),
    "skew": ("Task skew per superstep", plot_skew),
}


def _save_figure(path: Path, draw: Callable[..., None], table: pd.DataFrame) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 4), layout="constrained")
    FigureCanvasAgg(fig)
    draw(fig.add_subplot(), table)
    with atomic_file(path, mode=None, binary=True) as fh:  # the mode a plain open() would give
        fig.savefig(fh, format="png", dpi=100)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "" if np.isnan(value) else f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _html_table(rows: list[tuple[Any, ...]], header: tuple[str, ...] | None = None) -> str:
    head = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>" if header else ""
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


def render_html(run: RunData, figures: dict[str, str]) -> str:
    """The report page: header (params, totals), the figures (linked PNGs), the decision log."""
    totals = summarize(run.table)
    labels = {"supersteps": "supersteps", "total_seconds": "total time (s)",
              "executor_seconds": "executor-seconds", "barrier_seconds": "barrier time (s)",
              "prediction_error": "mean prediction error (relative)"}
    title = f"iterflow run {run.name or run.run_id}"
    started = run.start_time.strftime("%Y-%m-%d %H:%M:%S UTC") if run.start_time else "?"
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>run id <code>{html.escape(run.run_id)}</code>, status {html.escape(run.status)}, "
             f"started {started}</p>",
             "<h2>Totals</h2>", _html_table([(labels[k], v) for k, v in totals.items()]),
             "<h2>Parameters</h2>", _html_table(sorted(run.params.items()))]
    if run.table.empty:
        parts.append("<p><b>No superstep table was logged for this run</b> (it failed before its end).</p>")
    for name, (caption, _) in FIGURES.items():
        if name in figures:
            parts.append(f"<h2>{html.escape(caption)}</h2><img src=\"{html.escape(figures[name])}\" "
                         f"alt=\"{html.escape(caption)}\">")
    cols = [c for c in ("superstep", "wall_seconds", "executors", "predicted_seconds", "decision",
                        "executors_requested", "executors_active", "reason") if c in run.table]
    if cols:
        parts += ["<h2>Decisions</h2>",
                  _html_table([tuple(r) for r in run.table[cols].itertuples(index=False)], tuple(cols))]
    style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}img{max-width:100%}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")


def write_report(run_id: str, out: str | os.PathLike[str], uri: str | None = None) -> Path:
    """Write ``OUT/<figure>.png`` and ``OUT/report.html`` for run ``run_id``; returns the page."""
    run = load_run(run_id, uri)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures: dict[str, str] = {}
    if not run.table.empty:
        for name, (_, draw) in FIGURES.items():
            _save_figure(out_dir / f"{name}.png", draw, run.table)
            figures[name] = f"{name}.png"
    page = out_dir / "report.html"
    with atomic_file(page, mode=None) as fh:
        fh.write(render_html(run, figures))
    return page
