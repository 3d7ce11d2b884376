"""The embedded standalone cluster: loopback only, registration, CPU shares, clean stop."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from iterflow.cluster.local import LocalCluster
from tests.conftest import run_cli

pytestmark = pytest.mark.cluster


def test_cluster_is_registered_and_on_loopback(cluster):
    doc = cluster.status()
    assert doc["aliveworkers"] == 2 and doc["cores"] == 4
    assert cluster.master_url.startswith("spark://127.0.0.1:")
    assert all(w["host"] == "127.0.0.1" for w in doc["workers"])


def _procs_mentioning(text: str) -> list[str]:
    """Live processes whose command line or working directory mentions ``text``: "pid args"."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = str((proc / "cwd").resolve())
        except OSError:
            continue
        if text in args or cwd.startswith(text):
            found.append(f"{proc.name} {args}")
    return found


def test_stop_takes_executors_down_and_cpu_share_caps_them(tmp_path):
    base = tmp_path / "c"
    cluster = LocalCluster(workers=1, cores_per_worker=1, memory="1g", cpu_share=0.5, base_dir=base).start()
    app = None
    try:
        script = textwrap.dedent(f"""
            import time
            from iterflow.cluster.session import build_session
            from pathlib import Path
            spark = build_session({cluster.master_url!r}, 1, work_dir=Path({str(tmp_path / "driver")!r}))
            spark.range(1000).count()
            print("ready", flush=True)
            time.sleep(120)
        """)
        app = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert app.stdout.readline().strip() == "ready"
        executors = [ln for ln in _procs_mentioning(str(base)) if "CoarseGrainedExecutorBackend" in ln]
        assert executors, "the app got no executor on the cluster"
        if cluster.info().cgroups:  # the quota applies to the executor forked by the worker
            cg = Path(cluster.info().cgroups[0])
            assert (cg / "cpu.cfs_quota_us").read_text().strip() == "50000"
            pids = set((cg / "cgroup.procs").read_text().split())
            assert executors[0].split()[0] in pids
        else:
            assert "NOT applied" in cluster.cpu_share_note
    finally:
        cluster.stop()
        if app is not None:
            app.kill()
            app.wait()
    deadline = time.monotonic() + 15
    while _procs_mentioning(str(base)) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not _procs_mentioning(str(base)), "master, worker or executor survived stop()"


def test_cli_cluster_start_status_stop(cli_env):
    start = run_cli(["cluster", "start", "--workers", "2", "--cores-per-worker", "1", "--memory", "1g"], cli_env)
    try:
        assert start.returncode == 0, start.stderr
        status = run_cli(["cluster", "status", "--json"], cli_env)
        assert status.returncode == 0, status.stderr
        doc = json.loads(status.stdout)
        assert doc["running"] and len(doc["workers"]) == 2
        assert all(w["state"] == "ALIVE" and w["cores"] == 1 for w in doc["workers"])
        assert doc["master"].startswith("spark://127.0.0.1:")
    finally:
        stop = run_cli(["cluster", "stop"], cli_env)
    assert stop.returncode == 0
    after = run_cli(["cluster", "status", "--json"], cli_env)
    assert json.loads(after.stdout) == {"running": False} and after.returncode == 1
