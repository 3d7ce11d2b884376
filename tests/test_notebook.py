"""Two real ``iterflow run``s with different policies into a store of this module's own, then
what a user does with them: reads the progress lines, runs ``iterflow report`` and executes
``notebooks/analysis.ipynb`` with nbclient on the project's virtualenv kernel."""
from __future__ import annotations

import re
import sys

import pytest

from tests.conftest import APP_CORES, ROOT, run_cli

# Two Spark runs on a 2-core machine others share: minutes each when it is busy.
pytestmark = [pytest.mark.cluster, pytest.mark.timeout(1800)]

NOTEBOOK = ROOT / "notebooks" / "analysis.ipynb"
FIGURES = ("timelines.png", "executor_seconds.png", "predicted_vs_actual.png", "skew.png", "simulated_sweep.png")


@pytest.fixture(scope="module")
def logged(cluster, cli_env, tmp_path_factory) -> dict:
    """A static run (5 fixed supersteps) and an efficiency run (tolerance) of PageRank on a
    small R-MAT graph, logged to a store of their own: the session's shared store is counted
    by other tests."""
    from iterflow.inputs.generate import write_rmat

    tmp = tmp_path_factory.mktemp("notebook")
    graph = write_rmat(tmp / "rmat.txt", 10, 3000, 1, 0.57)
    env = dict(cli_env, MLFLOW_TRACKING_URI=f"sqlite:///{tmp / 'mlflow.db'}")
    common = ["run", "pagerank", "--input", str(graph), "--master", cluster.master_url,
              "--conf", f"spark.cores.max={APP_CORES}", "--conf", "spark.executor.cores=1"]
    runs = {}
    for name, extra in (("static", ["--iterations", "5"]),
                        ("efficiency", ["--policy", "efficiency", "--executors", "1", "--max-executors", "2",
                                        "--iterations", "7", "--tol", "1e-3"])):
        r = run_cli([*common, *extra, "--output", str(tmp / name)], env, timeout=600)
        assert r.returncode == 0, r.stderr
        runs[name] = {"stderr": r.stderr, "run_id": re.search(r"mlflow run (\w+)", r.stderr).group(1)}
    return {"env": env, "tmp": tmp, "runs": runs}


def progress_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("superstep ")]


def test_progress_line_counts_down_fixed_iterations(logged):
    lines = progress_lines(logged["runs"]["static"]["stderr"])
    assert [line.split()[1] for line in lines] == [f"{i}/5" for i in range(1, 6)]
    for i, line in enumerate(lines, start=1):
        assert re.search(rf"remaining [\d.]+s \({5 - i} supersteps\)", line), line
        assert "executors " in line and "decision same" in line


def test_progress_line_estimates_convergence_under_a_tolerance(logged):
    lines = progress_lines(logged["runs"]["efficiency"]["stderr"])
    assert lines and all("/<=7" in line and "delta " in line and "decision " in line for line in lines)
    assert "remaining ?" in lines[0]  # one delta: no trend yet
    assert any(re.search(r"remaining [\d.]+s \(~\d+ supersteps\)", line) for line in lines[2:]), lines


def test_report_of_a_real_run(logged):
    run_id = logged["runs"]["static"]["run_id"]
    out = logged["tmp"] / "report"
    r = run_cli(["report", run_id, "--out", str(out)], logged["env"], timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out / "report.html")
    text = (out / "report.html").read_text()
    assert run_id in text and "<td>supersteps</td><td>5</td>" in text and "static" in text
    for name in ("timeline", "predicted", "skew"):
        assert (out / f"{name}.png").stat().st_size > 5000
    bad = run_cli(["report", "nosuchrun", "--out", str(out)], logged["env"], timeout=120)
    assert bad.returncode == 2
    assert "nosuchrun" in bad.stderr and logged["env"]["MLFLOW_TRACKING_URI"] in bad.stderr


def test_analysis_notebook_runs_top_to_bottom(logged):
    import nbclient
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    assert spec.argv[0] in ("python", "python3", sys.executable), spec.argv  # "python" = this interpreter
    figures = logged["tmp"] / "figures"
    env = dict(logged["env"], ITERFLOW_FIGURES=str(figures), ITERFLOW_EXPERIMENT="iterflow")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=300,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute(env=env)  # raises CellExecutionError on the first failing cell
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert f"python {sys.prefix}" in text  # the kernel is this virtualenv's interpreter
    assert env["MLFLOW_TRACKING_URI"] in text
    for name in FIGURES:
        assert (figures / name).stat().st_size > 5000, name
    tables = "".join(o.get("data", {}).get("text/plain", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.outputs)
    assert "efficiency" in tables and "static" in tables
    for run in logged["runs"].values():
        assert run["run_id"] in tables
