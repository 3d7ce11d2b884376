"""``iterflow run`` end to end, and its contract for bad input: one error line, exit 2,
no Java stack trace, and no output directory that looks complete."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import APP_CORES, GRAPHALYTICS, run_cli

pytestmark = pytest.mark.cluster


def on_cluster(cluster) -> list[str]:
    return ["--master", cluster.master_url, "--conf", f"spark.cores.max={APP_CORES}"]


def test_run_pagerank_on_embedded_cluster_writes_output_and_stats(cli_env, tmp_path):
    out, stats = tmp_path / "pr", tmp_path / "pr.csv"
    r = run_cli(["run", "pagerank", "--input", str(GRAPHALYTICS / "test-pr-directed"),
                 "--format", "graphalytics", "--output", str(out), "--stats", str(stats)], cli_env)
    assert r.returncode == 0, r.stderr
    assert "embedded LocalCluster" in r.stderr and "superstep   14" in r.stderr
    got = pd.read_parquet(out).set_index("id")["value"]
    ref = pd.read_csv(GRAPHALYTICS / "test-pr-directed-PR", sep=" ", header=None, index_col=0)[1]
    assert list(pd.read_parquet(out).columns) == ["id", "value"]
    assert ((got.loc[ref.index] - ref).abs() / ref).max() < 1e-4
    table = pd.read_csv(stats)
    from iterflow.observe.stats import NUMERIC_FIELDS

    assert {"superstep", "wall_seconds", "executors", "cores", "partitions", *NUMERIC_FIELDS} <= set(table.columns)
    assert list(table["superstep"]) == list(range(1, 15))
    assert pd.read_parquet(out / "_supersteps.parquet")["superstep"].tolist() == list(range(1, 15))
    # the run is in the MLflow store: params, per-superstep metrics with step=superstep, model
    import mlflow

    mlflow.set_tracking_uri(cli_env["MLFLOW_TRACKING_URI"])
    runs = mlflow.search_runs(experiment_names=["iterflow"])
    run = runs[runs["params.program"] == "pagerank"].iloc[0]
    steps = [m.step for m in mlflow.MlflowClient().get_metric_history(run.run_id, "wall_seconds")]
    assert sorted(steps) == list(range(1, 15))
    model = mlflow.sklearn.load_model(f"runs:/{run.run_id}/resource_model")
    assert model.predict_seconds(2, 246) > 0
    from iterflow.app.tracking import history_for
    import os

    os.environ["MLFLOW_TRACKING_URI"] = cli_env["MLFLOW_TRACKING_URI"]
    try:
        from iterflow.app.tracking import past_supersteps
        from iterflow.loop.records import records
        from iterflow.model.warmup import warmup_supersteps

        warm = warmup_supersteps(records(past_supersteps("pagerank")))
        assert 1 <= warm <= 4
        assert len(history_for("pagerank")) == 14 - warm  # the supersteps past the warm-up warm-start the next run
    finally:
        del os.environ["MLFLOW_TRACKING_URI"]


def test_run_kmeans_with_init_centers_on_given_master(cluster, cli_env, tmp_path):
    from iterflow.inputs.generate import write_points

    pts = write_points(tmp_path / "p.csv", n=500, k=3, dim=2, seed=2)
    x = np.loadtxt(pts, delimiter=",", skiprows=1)
    init = tmp_path / "init.csv"
    np.savetxt(init, x[[0, 1, 2]], delimiter=",")
    out = tmp_path / "km"
    r = run_cli(["run", "kmeans", "--input", str(pts), "--k", "3", "--init-centers", str(init),
                 "--iterations", "5", "--output", str(out), *on_cluster(cluster)], cli_env)
    assert r.returncode == 0, r.stderr
    centers = pd.read_parquet(out / "centers")
    assert list(centers.columns) == ["cluster", "f0", "f1"] and len(centers) == 3
    assign = pd.read_parquet(out / "assignments")
    assert list(assign.columns) == ["id", "cluster"] and sorted(assign["id"]) == list(range(500))


def test_run_wcc_cleans_self_loops_and_duplicates(cluster, cli_env, tmp_path):
    edges = tmp_path / "g.txt"
    edges.write_text("# comment\n1 2\n2 1\n1 2\n3 3\n3 4\n5 6\n")
    out = tmp_path / "wcc"
    r = run_cli(["run", "wcc", "--input", str(edges), "--undirected", "--output", str(out),
                 *on_cluster(cluster)], cli_env)
    assert r.returncode == 0, r.stderr
    assert "dropped 1 self-loops and 2 duplicate edges" in r.stderr
    got = pd.read_parquet(out).set_index("id")["value"].sort_index()
    assert got.to_dict() == {1: 1, 2: 1, 3: 3, 4: 3, 5: 5, 6: 5}


def _assert_clean_failure(r, out, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr)
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("iterflow: error:"), r.stderr
    for n in needles:
        assert n in last, last
    assert "Traceback" not in r.stderr and "\tat org.apache" not in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("args,needles", [
    (["run", "pagerank", "--input", "/nonexistent/graph.txt"], ["/nonexistent/graph.txt", "no such file"]),
    (["run", "pagerank", "--input", "{g}", "--format", "metis"], ["--format", "metis"]),
    (["run", "kmeans", "--input", "{p}", "--k", "0"], ["--k"]),
    (["run", "pagerank", "--input", "{g}", "--iterations", "0"], ["--iterations"]),
    (["run", "pagerank", "--input", "{g}", "--conf", "nonsense"], ["--conf"]),
    (["run", "pagerank", "--input", "{g}", "--iterations", "abc"], ["--iterations"]),
])
def test_bad_arguments_fail_before_any_cluster(cli_env, tmp_path, args, needles):
    g = tmp_path / "g.txt"
    g.write_text("1 2\n")
    p = tmp_path / "p.csv"
    p.write_text("1,2\n3,4\n")
    out = tmp_path / "out"
    args = [a.format(g=g, p=p) for a in args] + ["--output", str(out), "--master", "spark://127.0.0.1:1"]
    _assert_clean_failure(run_cli(args, cli_env, timeout=60), out, *needles)


@pytest.mark.parametrize("kind,content,extra,needles", [
    ("graph", "1 2\n2 3\nthree 4\n", [], ["line 3", "integer vertex ids"]),
    ("points", "a,b\n1.0,2.0\n3.0,x\n", ["--k", "1"], ["line 3", "not a number"]),
])
def test_bad_input_files_end_in_one_line_through_the_cli(cluster, cli_env, tmp_path, kind, content, extra, needles):
    path = tmp_path / ("in.txt" if kind == "graph" else "in.csv")
    path.write_text(content)
    out = tmp_path / "out"
    algo = "wcc" if kind == "graph" else "kmeans"
    r = run_cli(["run", algo, "--input", str(path), "--output", str(out), *extra, *on_cluster(cluster)], cli_env)
    _assert_clean_failure(r, out, str(path), *needles)


@pytest.mark.parametrize("kind,content,k,needles", [
    ("graph", "1 2\n2 3.5\n", None, ["line 2"]),
    ("graph", "1 2\n-3 4\n", None, ["line 2", "integer vertex ids"]),
    ("graph", "# nothing but a comment\n", None, ["empty"]),
    ("points", "1.0,2.0\n3.0,nan\n", 1, ["line 2", "NaN"]),
    ("points", "1.0,2.0\n3.0,inf\n", 1, ["line 2", "infinite"]),
    ("points", "1.0,2.0\n3.0,4.0\n", 3, ["--k", "number of points (2)"]),
])
def test_bad_input_files_raise_input_errors(spark, tmp_path, kind, content, k, needles):
    from algorithms import KMeans
    from iterflow.errors import InputError
    from iterflow.inputs.graphio import load_graph
    from iterflow.inputs.pointsio import load_points

    path = tmp_path / ("in.txt" if kind == "graph" else "in.csv")
    path.write_text(content)
    with pytest.raises(InputError) as err:
        if kind == "graph":
            load_graph(spark, str(path), "edgelist")
        else:
            KMeans(load_points(spark, str(path), "csv"), k)
    for n in needles:
        assert n in str(err.value)
