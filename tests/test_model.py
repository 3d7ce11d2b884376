"""Tests of the learned resource model and its evaluation on external traces (no Spark)."""
from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import KFold, cross_val_score

from iterflow.errors import InputError
from iterflow.model.resource import ErnestModel, ResourceModel, relative_median
from iterflow.app.model_cli import add_parser, evaluate
from iterflow.model.traces import PUBLISHED, ellis_online, read_bell_csv, read_ellis_csv

TRACES = Path("/work/shared/datasets/runtime-traces")
BELL_DIR = TRACES / "bell"
ELLIS_DIR = TRACES / "ellis"
needs_bell = pytest.mark.skipif(not BELL_DIR.is_dir(), reason="shared Bell traces not present")
needs_ellis = pytest.mark.skipif(not ELLIS_DIR.is_dir(), reason="shared Ellis traces not present")


def _curve(m: np.ndarray, work: np.ndarray | float = 1.0) -> np.ndarray:
    """A typical runtime curve: serial part + parallel part + coordination cost growing with m."""
    return 20.0 + 600.0 * np.asarray(work) / m + 4.0 * np.log(m) + 0.3 * m


def _noisy_runs(seed: int = 0, reps: int = 5, sigma: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m = np.repeat(np.arange(2.0, 42.0, 4.0), reps)
    return m, _curve(m) * np.exp(rng.normal(0.0, sigma, m.size))


# ----------------------------------------------------------------------------- Ernest
def test_ernest_recovers_known_theta_from_noiseless_data() -> None:
    theta = np.array([5.0, 200.0, 3.0, 0.5])
    m = np.tile(np.array([2.0, 4, 8, 12, 16, 24, 32, 48, 64]), 3)
    work = np.repeat([1.0, 2.0, 5.0], 9)
    y = theta[0] + theta[1] * work / m + theta[2] * np.log(m) + theta[3] * m
    model = ErnestModel().fit(np.column_stack([m, work]), y)
    np.testing.assert_allclose(model.theta_, theta, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(model.predict([[10.0, 3.0]]), theta @ [1, 0.3, math.log(10), 10], rtol=1e-8)


def test_ernest_without_work_column_treats_work_as_one() -> None:
    m = np.array([2.0, 4, 8, 16, 32])
    y = 1.0 + 10.0 / m
    np.testing.assert_allclose(ErnestModel().fit(m[:, None], y).theta_, [1.0, 10.0, 0.0, 0.0], atol=1e-8)


# ----------------------------------------------------------------------------- ResourceModel
def test_resource_model_works_with_cross_val_score_and_clone() -> None:
    m, y = _noisy_runs()
    X = m[:, None]
    model = ResourceModel(selection="best", top_k=2)
    scores = cross_val_score(model, X, y, cv=KFold(5, shuffle=True, random_state=0),
                             scoring="neg_mean_absolute_percentage_error")
    assert scores.shape == (5,) and np.all(np.isfinite(scores))
    assert -scores.mean() < 0.10
    fitted = clone(model).fit(X, y)
    copy = clone(fitted)
    assert copy.get_params() == {"selection": "best", "top_k": 2, "min_scale_outs": 3}
    assert not hasattr(copy, "selected_") and hasattr(fitted, "selected_")
    assert fitted.selected_ in fitted.cv_scores_


def test_resource_model_fits_a_clean_curve_and_reports_its_error() -> None:
    m, y = _noisy_runs(sigma=0.01)
    model = ResourceModel().fit(pd.DataFrame({"scale_out": m}), y)
    grid = np.array([6.0, 14.0, 22.0, 30.0])
    rel = np.abs(model.predict(grid[:, None]) - _curve(grid)) / _curve(grid)
    assert rel.max() < 0.03
    assert 0.0 < model.error_estimate_ < 0.05
    summary = model.to_dict()
    assert summary["selected"] == model.selected_ and summary["n_scale_outs"] == 10
    json.dumps(summary)  # JSON-friendly


@pytest.mark.parametrize("seed", range(5))
def test_predictions_are_positive_everywhere(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = np.repeat(rng.choice(np.arange(1, 80), size=6, replace=False).astype(float), 3)
    y = rng.lognormal(mean=2.0, sigma=1.0, size=m.size)  # arbitrary, even increasing, times
    grid = np.array([0.25, 0.5, 1, 3, 50, 200, 1000, 10_000.0])[:, None]
    for model in (ResourceModel(), ResourceModel(selection="best"), ErnestModel()):
        assert np.all(model.fit(m[:, None], y).predict(grid) > 0)


def test_observe_refits_online_and_error_shrinks() -> None:
    rng = np.random.default_rng(3)
    order = [4, 16, 8, 32, 12, 24, 6, 40, 20, 28, 10, 36, 14, 18, 26, 30, 34, 38, 22, 2]
    grid = np.arange(3.0, 40.0, 2.0)

    def grid_error(model: ResourceModel) -> float:
        return float(np.mean(np.abs(model.predict(grid[:, None]) - _curve(grid)) / _curve(grid)))

    model = ResourceModel()
    errors, times = [], []
    for step, m in enumerate(order * 3):
        seconds = float(_curve(m) * math.exp(rng.normal(0.0, 0.02)))
        t0 = time.perf_counter()
        model.observe(m, 1.0, seconds)
        times.append(time.perf_counter() - t0)
        if step in (2, 9, 59):
            errors.append(grid_error(model))
    assert model.y_.size == 60 and not model.fallback_
    assert errors[2] < errors[0] and errors[2] < 0.03
    assert float(np.median(times)) < 0.05  # a few ms per refit; generous bound for slow CI


def test_fallback_with_one_and_two_scale_outs() -> None:
    one = ResourceModel().fit([[8.0]] * 4, [10.0, 11.0, 9.0, 10.5])
    assert one.fallback_ and one.selected_ == "fallback:scaling"
    assert one.predict_seconds(8) == pytest.approx(relative_median(np.array([10.0, 11.0, 9.0, 10.5])))
    assert one.predict_seconds(16) == pytest.approx(one.predict_seconds(8) / 2)  # t ∝ work/m
    assert one.predict_seconds(8, work=3.0) == pytest.approx(3 * one.predict_seconds(8))
    assert math.isfinite(one.error_estimate_)

    two = ResourceModel().fit([[4.0], [4.0], [16.0], [16.0]], [100.0, 104.0, 40.0, 41.0])
    assert two.fallback_ and two.selected_ == "fallback:powerlaw"
    assert 40.0 < two.predict_seconds(8) < 100.0
    assert two.predict_seconds(1000) > 0 and two.predict_seconds(1) <= 4 * 104.0  # b in [-1, 0]

    single = ResourceModel().fit([[5.0]], [7.0])
    assert math.isnan(single.error_estimate_)
    lo, hi = single.predict_interval(5.0)
    assert lo < 7.0 < hi

    grow = ResourceModel().observe(4, 1.0, 50.0).observe(8, 1.0, 30.0)
    assert grow.fallback_ and grow.observe(16, 1.0, 20.0).fallback_ is False


def test_predict_interval_covers_held_out_runs() -> None:
    m, y = _noisy_runs(seed=1, reps=7, sigma=0.05)
    model = ResourceModel().fit(m[:, None], y)
    fresh_m, fresh_y = _noisy_runs(seed=2, reps=7, sigma=0.05)
    inside = []
    for mi, yi in zip(fresh_m, fresh_y):
        lo, hi = model.predict_interval(mi, alpha=0.2)
        assert lo <= model.predict_seconds(mi) <= hi
        inside.append(lo <= yi <= hi)
    assert 0.6 <= float(np.mean(inside)) <= 1.0
    with pytest.raises(ValueError):
        model.predict_interval(8.0, alpha=1.5)


def test_from_history_and_from_runs() -> None:
    m, y = _noisy_runs(sigma=0.01)
    hist = ResourceModel.from_history(pd.DataFrame({"scale_out": m, "work": 1.0, "seconds": y}))
    assert hist.predict_seconds(10) == pytest.approx(_curve(10.0), rel=0.05)
    with pytest.raises(ValueError):
        ResourceModel.from_history(pd.DataFrame({"m": [1.0], "seconds": [1.0]}))
    # runs with 3x different levels, each at a few scale-outs: a pooled fit confuses level and m
    rng = np.random.default_rng(0)
    rows = []
    for run in range(12):
        level = 3.0 if run % 2 else 1.0
        for so in rng.choice([2.0, 4, 8, 16, 32], size=2, replace=False):
            for _ in range(3):
                rows.append((run, so, level * _curve(so) * math.exp(rng.normal(0, 0.01))))
    df = pd.DataFrame(rows, columns=["run", "scale_out", "seconds"])
    shape = ResourceModel.from_runs(df)
    ratio = shape.predict_seconds(4) / shape.predict_seconds(16)
    assert ratio == pytest.approx(_curve(4.0) / _curve(16.0), rel=0.05)
    levels = shape.run_levels_  # a few backfitting sweeps: levels separated, not fully converged
    assert min(levels[r] for r in range(1, 12, 2)) > 2.5 * max(levels[r] for r in range(0, 12, 2))


# ----------------------------------------------------------------------------- shared traces
@pytest.fixture(scope="module")
def bell_json() -> dict:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert evaluate(str(BELL_DIR), True) == 0
    return json.loads(buf.getvalue())


@needs_bell
def test_bell_protocol_on_shared_traces(bell_json: dict) -> None:
    assert set(bell_json) == set(PUBLISHED)
    for job, res in bell_json.items():
        assert set(res) == {"ernest", "bell", "iterflow"}
        assert all(0.0 < v < 1.0 for v in res.values())
        # our protocol + Ernest reproduce the published Ernest figures (sanity of the protocol)
        assert res["ernest"] == pytest.approx(PUBLISHED[job]["ernest"], abs=0.005)
        assert res["bell"] == pytest.approx(PUBLISHED[job]["bell"], abs=0.01)
    mean_iterflow = np.mean([r["iterflow"] for r in bell_json.values()])
    mean_published_bell = np.mean([p["bell"] for p in PUBLISHED.values()])
    assert mean_iterflow < mean_published_bell


@needs_bell
def test_bell_text_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "job.csv").write_text((BELL_DIR / "kmeans.flink.csv").read_text())
    assert evaluate(str(tmp_path), False) == 0
    out = capsys.readouterr().out
    assert "job" in out and "iterflow" in out and "mean" in out


@needs_ellis
def test_ellis_online_error_per_application() -> None:
    apps = {}
    for path in sorted(ELLIS_DIR.glob("ellis-*.csv")):
        apps.update(ellis_online(read_ellis_csv(path)))
    assert set(apps) == {"KMeans", "LogisticRegression"}
    assert {app: res["n_scored"] for app, res in apps.items()} == {"KMeans": 448, "LogisticRegression": 1170}
    for app, res in apps.items():
        assert res["n_runs"] == 65
        for variant in ("last", "run", "history", "iterflow"):
            assert math.isfinite(res["mape"][variant]) and math.isfinite(res["mdape"][variant])
        # the model beats the scale-out-blind reference (the previous iteration's time)
        assert res["mape"]["iterflow"] < res["mape"]["last"], (app, res["mape"])
    # The README's figures (k-means 15.0 %, logistic regression 5.3 %). Measured on these traces:
    # k-means 15.12 %, logistic regression 5.28 %; bounds are those plus about 1 and 0.7 points.
    assert apps["KMeans"]["mape"]["iterflow"] <= 0.16, apps["KMeans"]["mape"]
    assert apps["LogisticRegression"]["mape"]["iterflow"] <= 0.06, apps["LogisticRegression"]["mape"]


# ----------------------------------------------------------------------------- bad input + CLI
def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_bad_input_raises_input_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope"):
        evaluate(str(tmp_path / "nope"), False)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no usable CSV"):
        evaluate(str(empty), True)

    wrong = tmp_path / "wrong"
    wrong.mkdir()
    _write(wrong / "cols.csv", "Workers,Seconds\n4,10\n")
    with pytest.raises(InputError, match=r"cols\.csv:1"):
        evaluate(str(wrong), True)

    bad = tmp_path / "bad"
    bad.mkdir()
    _write(bad / "job.csv", "Nodes,Runtime\n4,100\n8,fast\n12,40\n")
    with pytest.raises(InputError, match=r"job\.csv:3"):
        evaluate(str(bad), True)
    with pytest.raises(InputError, match=r"two\.csv.*3 distinct"):
        read_bell_csv(_write(tmp_path / "two.csv", "Nodes,Runtime\n4,100\n8,60\n"))
    with pytest.raises(InputError, match=r"neg\.csv:2"):
        read_bell_csv(_write(tmp_path / "neg.csv", "Nodes,Runtime\n-4,100\n"))

    header = "ID|APP_ID|STARTED_AT|FINISHED_AT|APP_EVENT_ID|JOB_ID|STARTED_AT|FINISHED_AT|DURATION_MS|SCALE_OUT\n"
    ellis = _write(tmp_path / "ellis-x.csv", header + "1|A|t|t|1|0|t|t|100|4\n1|A|t|t|1|1|t|t|90|many\n")
    with pytest.raises(InputError, match=r"ellis-x\.csv:3"):
        read_ellis_csv(ellis)


def test_add_parser_registers_model_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m, y = _noisy_runs()
    _write(tmp_path / "synthetic.job.csv",
           "Nodes,Runtime\n" + "".join(f"{int(a)},{b:.3f}\n" for a, b in zip(m, y)))
    parser = argparse.ArgumentParser(prog="iterflow")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["model", "evaluate", "--traces", str(tmp_path), "--json"])
    assert args.func(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result) == ["synthetic.job"]
    assert set(result["synthetic.job"]) == {"ernest", "bell", "iterflow"}


# ----------------------------------------------------------------------------- MLflow
def test_mlflow_sklearn_round_trip(tmp_path: Path) -> None:
    mlflow = pytest.importorskip("mlflow")
    import mlflow.sklearn

    m, y = _noisy_runs()
    model = ResourceModel().fit(m[:, None], y)
    previous = os.environ.get("MLFLOW_TRACKING_URI")  # set_tracking_uri is global: restore it
    mlflow.set_tracking_uri("file:" + str(tmp_path / "mlruns"))
    try:
        with mlflow.start_run():
            info = mlflow.sklearn.log_model(model, name="resource_model",
                                            input_example=np.array([[8.0, 1.0]]))
        loaded = mlflow.sklearn.load_model(info.model_uri)
    finally:
        mlflow.set_tracking_uri(previous)
    grid = np.array([[3.0, 1.0], [10.0, 1.0], [37.0, 2.0]])
    np.testing.assert_allclose(loaded.predict(grid), model.predict(grid))
    assert loaded.selected_ == model.selected_
