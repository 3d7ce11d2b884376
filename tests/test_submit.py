"""The README's spark-submit block, run as it stands: cluster start, ``make dist``, spark-submit
of PageRank under ``--policy target``, cluster stop. The block is read from the README, so the
README and this test cannot drift apart."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import GRAPHALYTICS, ROOT, spark_jvm_pids

# Running the block needs a cluster; reading it does not.

MARKER = "<!-- tests/test_submit.py runs this block"


def readme_block() -> str:
    """The bash block right after the marker comment in README.md."""
    text = (ROOT / "README.md").read_text()
    m = re.search(re.escape(MARKER) + r".*?-->\s*```bash\n(.*?)```", text, re.S)
    assert m, "README.md has no marked spark-submit block"
    return m.group(1)


def _output_dir(block: str) -> Path:
    m = re.search(r"--output (\S+)", block)
    assert m, "the block names no --output"
    return ROOT / m.group(1)


def test_readme_block_is_what_the_issue_asks_for():
    block = readme_block()
    assert "iterflow cluster start" in block and "iterflow cluster stop" in block and "make dist" in block
    submit = next(ln for ln in block.splitlines() if "spark-submit " in ln)
    assert "--properties-file" in submit and "spark-submit.conf" in submit and "spark://" not in block
    assert "--py-files dist/iterflow.zip" in block and "--policy target" in block


@pytest.mark.cluster
def test_readme_spark_submit_block_runs(tmp_path):
    block = readme_block()
    out = _output_dir(block)
    home = tmp_path / "home"
    env = dict(os.environ, ITERFLOW_HOME=str(home), MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path}/mlflow.db",
               PYTHONUNBUFFERED="1")
    env.pop("SPARK_HOME", None)
    before = spark_jvm_pids()
    shutil.rmtree(out, ignore_errors=True)
    # Each line of the block traced, so a failure shows which; the conf's mode is checked while
    # the cluster is up (the stop at the end removes the file).
    script = block.replace("\nmake dist", f"\nstat -c %a {home}/spark-submit.conf {home}\nmake dist", 1)
    try:
        r = subprocess.run(["bash", "-euxo", "pipefail", "-c", script], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=900)
    finally:
        if (home / "cluster.json").exists():  # the block failed before its own stop
            subprocess.run([str(ROOT / ".venv/bin/iterflow"), "cluster", "stop"], env=env, timeout=120)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-4000:]
    assert "600\n700\n" in r.stdout, r.stdout
    # spark-submit hands the Python driver's stderr to its own stdout
    assert "driver started by spark-submit" in log and "pagerank finished: 2 supersteps" in log, log[-3000:]
    try:
        got = pd.read_parquet(out).set_index("id")["value"]
        ref = pd.read_csv(GRAPHALYTICS / "example-directed-PR", sep=" ", header=None, index_col=0)[1]
        assert len(got) == len(ref) == 10
        assert ((got.loc[ref.index] - ref).abs() / ref).max() < 1e-4
        table = pd.read_parquet(out / "_supersteps.parquet")
        assert table["superstep"].tolist() == [1, 2]
        assert stat.S_IMODE((out / "_supersteps.parquet").stat().st_mode) == 0o600
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert not (home / "spark-submit.conf").exists() and not (home / "cluster.json").exists()
    deadline = time.monotonic() + 30
    while spark_jvm_pids() - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not spark_jvm_pids() - before, "a JVM of the block is still running"
    assert json.loads(subprocess.run([str(ROOT / ".venv/bin/iterflow"), "cluster", "status", "--json"], env=env,
                                     capture_output=True, text=True, timeout=60).stdout) == {"running": False}
