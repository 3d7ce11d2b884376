"""Several processes opening one new local MLflow store at once (two ``iterflow run`` started
together on a fresh machine). No Spark: each process logs a run through RunTracker, the code
path ``iterflow run`` uses, after all of them have imported MLflow, so their first accesses
to the store overlap."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

CHILD = textwrap.dedent("""
    import pathlib, sys, time
    import mlflow, mlflow.tracking  # imported before the others are waited for: the opens overlap
    import pandas as pd
    from iterflow.app.tracking import RunTracker, past_tables
    here, n = pathlib.Path(sys.argv[1]), int(sys.argv[4])
    (here / f"ready-{sys.argv[3]}").touch()  # imported: wait for the others, then open the store together
    while len(list(here.glob("ready-*"))) < n and time.time() < float(sys.argv[5]):
        time.sleep(0.01)
    print("together", len(list(here.glob("ready-*"))) == n)
    if sys.argv[2] == "read":  # a history read first, as `iterflow run` does before tracking
        past_tables("pagerank")
    tracker = RunTracker({"program": "pagerank", "who": sys.argv[3]})
    tracker.finish(pd.DataFrame({"superstep": [1], "wall_seconds": [1.0]}))
""")


@pytest.mark.timeout(300)
def test_processes_opening_a_new_store_at_once_all_log_their_run(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    hows = ["read", "track", "read", "track"]
    give_up = time.time() + 120  # a child never waits forever for one that failed to start
    kids = [subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), how, str(i), str(len(hows)), str(give_up)],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i, how in enumerate(hows)]
    try:
        done = [k.communicate(timeout=240) for k in kids]
    finally:
        for k in kids:  # none left running when one hangs
            k.kill() if k.poll() is None else None
    assert [k.returncode for k in kids] == [0] * len(kids), "\n\n".join(err for _, err in done)
    together = [out.split()[1] for out, _ in done]
    assert together == ["True"] * len(kids), f"a child opened the store before the others were ready: {together}"
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["iterflow"])
    assert sorted(runs["params.who"]) == ["0", "1", "2", "3"]
    assert set(runs["status"]) == {"FINISHED"}


def test_opening_a_new_store_keeps_the_process_logging_and_says_nothing(tmp_path):
    # MLflow's migrations configure logging (alembic's fileConfig: the root logger's handlers
    # replaced): a warning logged after the store opened must still reach the process's own
    # handler (`iterflow run`'s "dropped N self-loops" was lost), and no migration line shows
    child = textwrap.dedent("""
        import logging, sys
        import pandas as pd
        logging.basicConfig(level=logging.INFO, format="MINE %(name)s: %(message)s")
        from iterflow.app.tracking import RunTracker, tracking_uri
        tracking_uri()
        logging.getLogger("iterflow.inputs").warning("after the store opened")
        RunTracker({"program": "p"}).finish(pd.DataFrame({"superstep": [1]}))
        logging.getLogger("iterflow.inputs").warning("after the run")
    """)
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'new.db'}"}
    env.pop("ITERFLOW_VERBOSE", None)
    r = subprocess.run([sys.executable, "-c", child], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0, r.stderr
    assert "MINE iterflow.inputs: after the store opened" in r.stderr, r.stderr
    assert "MINE iterflow.inputs: after the run" in r.stderr, r.stderr
    assert "alembic" not in r.stderr and "Running upgrade" not in r.stderr, r.stderr


def test_a_store_that_cannot_be_locked_is_still_read(tmp_path, monkeypatch):
    # an existing store in a directory the user cannot write (or a file system without locks):
    # reading it needs no lock, so the history reads and `iterflow simulate --run` still work
    import pandas as pd

    import iterflow.app.tracking as tracking

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    tracking.RunTracker({"program": "pagerank"}).finish(pd.DataFrame({"superstep": [1], "wall_seconds": [1.0]}))
    tracking._READY.discard(uri)  # a new process, as far as the store's opening goes
    real_open = os.open

    def refuse_lock(path, *args, **kwargs):
        if str(path).endswith(".lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(tracking.os, "open", refuse_lock)
    tables = tracking.past_tables("pagerank")
    assert len(tables) == 1 and list(tables[0][1]["superstep"]) == [1]


def test_reading_earlier_runs_leaves_no_temporary_directory_behind(tmp_path, monkeypatch):
    """A warm start reads every earlier run's table from the store; MLflow's download without a
    destination left a new temporary directory per run read (38 after one test session)."""
    import tempfile

    import mlflow
    import pandas as pd

    import iterflow.app.tracking as tracking
    from iterflow.simulate.recorded import read_table

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    tracking.RunTracker({"program": "pagerank"}).finish(pd.DataFrame({"superstep": [1, 2], "wall_seconds": [1.0, 0.9]}))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    tables = tracking.past_tables("pagerank")
    assert len(tables) == 1 and list(tables[0][1]["superstep"]) == [1, 2]
    run_id = mlflow.search_runs(search_all_experiments=True)["run_id"].iloc[0]
    df, _ = read_table(run_id)  # `iterflow simulate --run RUN_ID` reads the same artifact
    assert list(df["superstep"]) == [1, 2]
    assert list(scratch.iterdir()) == []
