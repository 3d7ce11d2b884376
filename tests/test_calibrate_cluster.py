"""`iterflow cluster calibrate`'s measurement on the real test cluster: the calibration job runs
at each size and the profile holds steady-state task seconds for every one of them."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.cluster


def test_calibration_measures_tasks_at_every_size(spark, tmp_path):
    from iterflow.app.calibrate import measure
    from iterflow.inputs.generate import write_rmat
    from iterflow.model.contention import fit

    said: list[str] = []
    found = measure(spark, "test cluster", 2, partitions=2, supersteps=3,
                    graph=write_rmat(tmp_path / "g.txt", 11, 15_000, seed=3), say=said.append)
    assert found.cluster == "test cluster" and found.seconds > 0
    slots = {float(s) for s in found.task_seconds}
    assert len(slots) == 2, found.task_seconds  # 1 and 2 executors, in slots
    # supersteps 2 and 3 of each measured run feed it (the first is cold by definition)
    assert all(len(v) == 2 and all(t > 0 for t in v) for v in found.task_seconds.values())
    assert fit([found.task_seconds]).pairs == 1
    assert len(said) == 2 and all("mean task" in s for s in said)


def test_calibrate_command_saves_the_profile_runs_on_that_master_use(cluster, cli_env):
    import json
    from pathlib import Path

    from conftest import run_cli

    r = run_cli(["cluster", "calibrate", "--master", cluster.master_url, "--max-executors", "2",
                 "--supersteps", "3"], cli_env, timeout=400)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "saved to" in r.stdout and "task slow-down beta=" in r.stdout, r.stdout
    doc = json.loads((Path(cli_env["ITERFLOW_HOME"]) / "cluster-profiles.json").read_text())
    assert list(doc) == [cluster.master_url]  # the key `iterflow run --master` looks it up by
    assert len(doc[cluster.master_url]["task_seconds"]) == 2
