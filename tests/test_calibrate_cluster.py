"""`iterflow cluster calibrate`'s measurement on the real test cluster: the calibration job runs
at each size, the profile holds steady-state task seconds for every one of them, and its
records price a rescale for a policy that never rescaled."""
from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.cluster


def test_calibration_measures_tasks_at_every_size_and_prices_rescales(spark, tmp_path):
    from iterflow.app.calibrate import measure
    from iterflow.cluster.profile import ClusterProfile
    from iterflow.inputs.generate import write_rmat
    from iterflow.model.contention import fit
    from iterflow.policies import TargetPolicy

    from iterflow.actuate.executors import ExecutorActuator

    before = ExecutorActuator(spark.sparkContext).registered()
    said: list[str] = []
    found = measure(spark, "test cluster", 2, partitions=2, supersteps=5,
                    graph=write_rmat(tmp_path / "g.txt", 11, 15_000, seed=3), say=said.append)
    assert found.cluster == "test cluster" and found.seconds > 0
    assert ExecutorActuator(spark.sparkContext).registered() == before  # the session's executors, given back
    slots = {float(s) for s in found.task_seconds}
    assert len(slots) == 2, found.task_seconds  # 1 and 2 executors, in slots
    # a warm-up at 2, then 5 supersteps at 2, at 1 (measured), at 2 again: the cold ones feed nothing
    # every task of the measured supersteps (whole ms: a short one can read 0)
    assert all(v and all(t >= 0 for t in v) and max(v) > 0 for v in found.task_seconds.values()), found.task_seconds
    assert fit([found.task_seconds]).pairs == 1
    assert len(said) == 2 and all("median task" in s and "tasks of steady supersteps" in s for s in said)
    again = ClusterProfile.from_dict(found.to_dict())  # as the profile file keeps it
    rec = again.records()
    sizes = [r.executors for r in rec]
    assert sizes[:3] == [2, 2, 2] and sizes.count(1) >= 5 and sizes[-1] == 2, sizes
    assert [r.decided.decision for r in rec if r.decided.decision != "same"] == ["down", "up"]
    p = TargetPolicy(60.0, max_executors=2)
    assert p.learn_rescales(rec) == 1 and p.past_scale_ins


def test_calibrate_command_saves_the_profile_runs_on_that_master_use(cluster, cli_env, tmp_path):
    import json
    from pathlib import Path

    from conftest import run_cli
    from iterflow.app.calibrate import EDGES, SCALE
    from iterflow.inputs.generate import write_rmat

    # the job's input is generated once per ITERFLOW_HOME and kept there; a small one put in its
    # place keeps this test of the command (the measurement is the test above) to seconds
    env = dict(cli_env, ITERFLOW_HOME=str(tmp_path / "home"))
    write_rmat(tmp_path / "home" / "calibration" / f"rmat-{SCALE}-{EDGES}.txt", 11, 15_000, seed=3)
    # 5 supersteps a size: a size's supersteps past the warm-up are measured, and a loaded
    # machine's warm-up reads up to 4 (warmup_supersteps' most; with 3, CI once measured 1 size)
    r = run_cli(["cluster", "calibrate", "--master", cluster.master_url, "--max-executors", "2",
                 "--supersteps", "5"], env, timeout=400)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "saved to" in r.stdout and "task slow-down beta=" in r.stdout, r.stdout
    doc = json.loads((Path(env["ITERFLOW_HOME"]) / "cluster-profiles.json").read_text())
    from iterflow.app.runner import cluster_key
    from iterflow.app.spec import JobSpec

    # the key `iterflow run --master` looks it up by: the master, and the executors' JVM options
    # the suite gives every JVM (ITERFLOW_JVM_OPTS, tests/conftest.py)
    key = cluster_key(JobSpec("pagerank", "in", "out", master=cluster.master_url), cluster.master_url)
    from iterflow.cluster import cds

    opts = os.environ.get("ITERFLOW_JVM_OPTS", "").strip()
    if cds.archive_path().is_file():  # make setup's class archive: fresh executors are another price
        opts = f"{opts} + class archive".strip()
    assert key == cluster.master_url + (f" [executor JVM {opts}]" if opts else "")
    assert list(doc) == [key]
    assert len(doc[key]["task_seconds"]) == 2
