"""Several processes opening one new local MLflow store at once (two ``iterflow run`` started
together on a fresh machine). No Spark: each process logs a run through RunTracker, the code
path ``iterflow run`` uses, after all of them have imported MLflow, so their first accesses
to the store overlap."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

CHILD = textwrap.dedent("""
    import sys, time
    import pandas as pd
    from iterflow.app.tracking import RunTracker, past_tables
    start = float(sys.argv[1])
    print("waited", start - time.time())  # > 0: imported before the common start
    time.sleep(max(0.0, start - time.time()))  # all processes open the new store together
    if sys.argv[2] == "read":  # a history read first, as `iterflow run` does before tracking
        past_tables("pagerank")
    tracker = RunTracker({"program": "pagerank", "who": sys.argv[3]})
    tracker.finish(pd.DataFrame({"superstep": [1], "wall_seconds": [1.0]}))
""")


@pytest.mark.timeout(300)
def test_processes_opening_a_new_store_at_once_all_log_their_run(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    start = time.time() + 15  # after every child has imported MLflow (~3-8 s on a busy box)
    kids = [subprocess.Popen([sys.executable, "-c", CHILD, str(start), how, str(i)], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i, how in enumerate(["read", "track", "read", "track"])]
    done = [k.communicate(timeout=240) for k in kids]
    assert [k.returncode for k in kids] == [0] * len(kids), "\n\n".join(err for _, err in done)
    waits = [float(out.split()[1]) for out, _ in done]
    assert min(waits) > 0, f"a child imported MLflow after the common start: nothing raced ({waits})"
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["iterflow"])
    assert sorted(runs["params.who"]) == ["0", "1", "2", "3"]
    assert set(runs["status"]) == {"FINISHED"}
