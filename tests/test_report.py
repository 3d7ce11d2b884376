"""``iterflow report`` on runs logged to a throwaway MLflow store, and the estimate behind the
progress line of ``iterflow run``. No Spark: the runs are logged by hand through RunTracker,
the same code path ``iterflow run`` uses."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from iterflow.app.cli import main
from iterflow.app.progress import Progress, superstep_seconds
from iterflow.loop.plan import RunPlan
from iterflow.loop.records import Decided, SuperstepRecord

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def full_table() -> pd.DataFrame:
    """A superstep table shaped like the driver's: one scale-up at superstep 2."""
    return pd.DataFrame({
        "superstep": [1, 2, 3, 4], "wall_seconds": [4.0, 2.0, 1.0, 1.0], "executors": [1, 1, 2, 2],
        "cores": [1, 1, 2, 2], "partitions": [8, 8, 8, 8],
        "predicted_seconds": [np.nan, 2.5, 1.2, 0.9], "barrier_seconds": [0.1, 0.1, 0.2, 0.1],
        "decision": ["same", "up", "same", "same"],
        "reason": ["warm-up", "scale out 1 -> 2 <b>", "hold", "converged"],
        "executors_requested": [1, 2, 2, 2], "executors_active": [1, 2, 2, 2],
        "skew": [1.5, 1.4, 1.1, 1.0], "partition_records_max_over_mean": [2.0, 2.0, 1.2, 1.2],
        "partition_records": ["[1, 2]"] * 4, "delta": [0.1, 0.01, 0.001, 1e-4],
    })


@pytest.fixture
def store(tmp_path, monkeypatch) -> str:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


def log_run(table: pd.DataFrame | None, params: dict | None = None) -> str:
    from iterflow.app.tracking import RunTracker

    tracker = RunTracker(params or {"program": "pagerank", "policy": "efficiency", "max_iterations": 4})
    if table is None:
        tracker.finish(pd.DataFrame(), status="FAILED")
        return tracker.run_id
    for rec in table.to_dict("records"):
        tracker.log_superstep(SuperstepRecord.from_row(rec))
    tracker.finish(table)
    return tracker.run_id


def test_report_writes_figures_and_an_html_page_that_links_them(store, tmp_path, capsys):
    run_id = log_run(full_table())
    out = tmp_path / "report"
    assert main(["report", run_id, "--out", str(out)]) == 0
    page = out / "report.html"
    assert capsys.readouterr().out.strip() == str(page)
    for name in ("timeline", "predicted", "skew"):
        png = out / f"{name}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5000
    text = page.read_text()
    for needle in ('src="timeline.png"', 'src="predicted.png"', 'src="skew.png"', run_id,
                   "executor-seconds", "<td>10.8</td>",  # 1*4.1 + 1*2.1 + 2*1.2 + 2*1.1 (wall + barrier)
                   "<td>8</td>", "efficiency", "scale out 1 -&gt; 2 &lt;b&gt;"):
        assert needle in text, needle
    assert sorted(p.name for p in out.iterdir()) == ["predicted.png", "report.html", "skew.png", "timeline.png"]


def test_report_again_replaces_the_files(store, tmp_path):
    run_id = log_run(full_table())
    out = tmp_path / "r"
    assert main(["report", run_id, "--out", str(out)]) == 0
    before = (out / "report.html").stat().st_ino
    assert main(["report", run_id, "--out", str(out)]) == 0
    assert (out / "report.html").stat().st_ino != before  # renamed into place, not rewritten
    assert not list(out.glob(".*"))


def test_unknown_run_id_exits_2_naming_the_id_and_the_store(store, tmp_path, capsys):
    log_run(full_table())
    capsys.readouterr()  # MLflow's own messages while logging the run
    assert main(["report", "0123456789abcdef0123456789abcdef", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("iterflow: error:") and len(err.splitlines()) == 1
    assert "0123456789abcdef0123456789abcdef" in err and store in err
    assert not (tmp_path / "x").exists()


def test_missing_store_exits_2_without_creating_one(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["report", "abc"]) == 2
    err = capsys.readouterr().err
    assert "abc" in err and str(tmp_path / "mlflow.db") in err
    assert not (tmp_path / "mlflow.db").exists()


def test_report_of_a_sparse_table_and_of_a_failed_run(store, tmp_path):
    sparse = pd.DataFrame({"superstep": [1, 2], "wall_seconds": [1.0, 1.5], "executors": [2, 2]})
    assert main(["report", log_run(sparse), "--out", str(tmp_path / "sparse")]) == 0
    assert (tmp_path / "sparse" / "skew.png").exists()
    assert "<td>5</td>" in (tmp_path / "sparse" / "report.html").read_text()  # 2*1 + 2*1.5
    assert main(["report", log_run(None), "--out", str(tmp_path / "failed")]) == 0
    text = (tmp_path / "failed" / "report.html").read_text()
    assert "FAILED" in text and "No superstep table" in text
    assert not list((tmp_path / "failed").glob("*.png"))


def test_summary_and_rebalancing_from_the_table():
    from iterflow.app.report import rebalance_supersteps, summarize

    t = full_table()
    s = summarize(t)
    # executors x (wall + barrier) summed (the one formula, records.executor_seconds): 4.1 + 2.1 + 2.4 + 2.2
    assert s["supersteps"] == 4 and s["total_seconds"] == 8.0 and s["executor_seconds"] == pytest.approx(10.8)
    assert math.isclose(s["prediction_error"], np.mean([0.25, 0.2, 0.1]))
    assert rebalance_supersteps(t) == []
    t.loc[1, "partitions"] = 8
    t.loc[2:, "partitions"] = 16
    t.loc[3, "reason"] = "rebalanced hot bins"
    assert rebalance_supersteps(t) == [2, 4]
    t["partitions_after"] = [np.nan, 8, np.nan, np.nan]
    t["bins_moved_fraction"] = [0.0, 0.0, 0.0, np.nan]
    assert rebalance_supersteps(t) == [2, 4]
    t.loc[0, "bins_moved_fraction"] = 0.3
    t.loc[0, "partitions_after"] = 4
    assert rebalance_supersteps(t) == [1, 2, 4]
    assert rebalance_supersteps(pd.DataFrame()) == []


# -- the progress line's estimate: the run's horizon (RunPlan), the rule the policies use ---------

def horizon(superstep: int, max_iterations, tol, deltas=()):
    return RunPlan(max_iterations, tol).remaining(superstep, list(enumerate(deltas, start=1))).left


def test_fixed_iterations_leave_a_known_count():
    assert horizon(3, 10, None) == 7
    assert horizon(10, 10, None) == 0
    assert horizon(3, None, None) is None


def test_convergence_follows_the_geometric_rate_of_the_delta():
    assert horizon(3, None, 1e-5, [1.0, 0.1, 0.01]) == 3
    assert horizon(6, None, 1e-5, [1e3, 10.0, 1.0, 0.1, 0.01, 0.001]) == 2  # the last 5 set the rate
    assert horizon(1, None, 1e-5, [1e-6]) == 0
    assert horizon(2, None, 1e-5, [1.0, 0.1]) is None  # two deltas: no trend yet
    assert horizon(3, None, 1e-5, [0.1, 0.2, 0.3]) is None  # not shrinking
    assert horizon(3, None, 1e-5, [0.1, 0.01, None]) is None
    assert horizon(3, None, 0.0, [0.4, 0.2, 0.1]) is None  # never reaches 0
    assert horizon(3, None, 0.0, [100, 50, 25]) == 6  # a count: until below 1
    assert horizon(3, 100, 1e-5, [1.0, 0.1, 0.01]) == 3
    assert horizon(3, 4, 1e-5, [1.0, 0.1, 0.01]) == 1  # capped by max_iterations
    assert horizon(3, 100, 1e-5, [0.1, 0.2, 0.3]) is None


def rec(**row) -> SuperstepRecord:
    return SuperstepRecord.from_row({"wall_seconds": 1.0, "executors": 1, "cores": 1, **row})


def test_seconds_per_superstep_prefers_the_model():
    assert superstep_seconds(rec(next_predicted_seconds=2.0, predicted_seconds=3.0), [9.0]) == 2.0
    assert superstep_seconds(rec(predicted_seconds=3.0), [9.0]) == 3.0
    assert superstep_seconds(rec(predicted_seconds=float("nan")), [9.0, 2.0, 4.0]) == 3.0  # superstep 1 left out
    assert superstep_seconds(rec(), [9.0]) == 9.0
    assert superstep_seconds(rec(), []) is None


def progress_run(plan: RunPlan, rows: list[dict]) -> list[str]:
    """Progress lines for hand-made rows, with the horizon the loop records for each."""
    p, seen, lines = Progress(), [], []
    p.use(plan)
    for row in rows:
        seen.append(rec(**row))
        h = plan.horizon(seen)
        left = 0 if row.get("reason") == "converged" else h.left
        lines.append(p.line(seen[-1].with_(decided=Decided(row.get("decision", "same"), row.get("reason", ""),
                                                            0.0, left, h.estimated))))
    return lines


def test_progress_line():
    first, second = progress_run(RunPlan(10, None), [
        {"superstep": 1, "wall_seconds": 4.0, "executors": 2, "cores": 2, "predicted_seconds": float("nan"),
         "decision": "same", "reason": "static"},
        {"superstep": 2, "wall_seconds": 1.0, "executors": 2, "cores": 2, "predicted_seconds": 1.5,
         "decision": "up", "reason": "too slow"}])
    assert first.startswith("superstep    1/10") and "remaining 36.0s (9 supersteps)" in first
    assert first.endswith("decision same")
    assert "predicted 1.50s" in second and "remaining 12.0s (8 supersteps)" in second
    assert second.endswith("decision up: too slow")
    lines = progress_run(RunPlan(100, 1e-5), [
        {"superstep": 1, "delta": 1.0}, {"superstep": 2, "delta": 0.1}, {"superstep": 3, "delta": 0.01},
        {"superstep": 4, "delta": 1e-6, "reason": "converged"}])
    for line, delta in zip(lines[:2], [1.0, 0.1]):
        assert "/<=100" in line and f"delta {delta:g} (tol 1e-05)" in line and "remaining ?" in line
    assert "remaining 3.0s (~3 supersteps)" in lines[2]
    assert "remaining 0.0s (~0 supersteps)" in lines[3]
