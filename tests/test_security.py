"""Security of the embedded cluster, checked from outside Spark (``/proc``, the files it left):
loopback-only sockets, RPC authentication with a private per-cluster secret that no command
line, log or MLflow param shows, and files readable by the user only."""
from __future__ import annotations

import ipaddress
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from iterflow.cluster import auth
from tests.conftest import APP_CORES, GRAPHALYTICS

pytestmark = pytest.mark.cluster


# -- /proc helpers ------------------------------------------------------------------------
def _stat_fields(pid: int) -> list[str]:
    """Fields of /proc/<pid>/stat after the command name: state, ppid, pgrp, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _live_pids() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, pgrp) of every live (non-zombie) process."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                f = _stat_fields(int(entry.name))
            except (OSError, IndexError):
                continue
            if f[0] != "Z":
                out[int(entry.name)] = (int(f[1]), int(f[2]))
    return out


def cluster_pids(cluster) -> set[int]:
    """Master, workers, executors and whatever they forked: the process groups it started."""
    groups = set(cluster.info().pgids)
    return {pid for pid, (_, pgrp) in _live_pids().items() if pgrp in groups}


def driver_pids() -> set[int]:
    """The driver JVM of this test session and its descendants."""
    from pyspark import SparkContext

    procs = _live_pids()
    found = {SparkContext._gateway.proc.pid}
    while True:
        more = {pid for pid, (ppid, _) in procs.items() if ppid in found} - found
        if not more:
            return found
        found |= more


def _ip(hex_addr: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_addr)  # /proc/net/tcp*: 32-bit words in host (little-endian) order
    if len(raw) == 4:
        return ipaddress.IPv4Address(raw[::-1])
    return ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))


def listening_sockets(pids: set[int]) -> dict[int, list[tuple[str, int]]]:
    """``pid -> [(address, port)]`` of the TCP sockets in LISTEN state that ``pids`` hold."""
    listen: dict[str, tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]] = {}
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A":  # TCP_LISTEN
                addr, port = f[1].split(":")
                listen[f[9]] = (_ip(addr), int(port, 16))
    out: dict[int, list[tuple[str, int]]] = {}
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            inode = target[len("socket:["):-1] if target.startswith("socket:[") else None
            if inode in listen:
                ip, port = listen[inode]
                out.setdefault(pid, []).append((str(ip), port))
    return out


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _with_python_workers(spark) -> None:
    """A job with Python code on the executors, so executors and their Python workers exist."""
    assert spark.sparkContext.parallelize(range(1000), 4).map(lambda x: x * 2).sum() == 999000


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _assert_private_tree(top: Path) -> None:
    """No file under ``top`` is readable or writable by group or others (0600, or 0711: Spark
    marks every file an executor fetches -- a jar ``SparkContext.addJar`` shipped -- ``a+x``,
    which without read lets no one else at its bytes); every directory 0700 or stricter."""
    loose = [f"{p} {_mode(p):o}" for p in [top, *top.rglob("*")]
             if not p.is_symlink() and _mode(p) & (0o077 if p.is_dir() else 0o066)]
    assert not loose, f"readable by others: {loose[:10]}"


# -- tests ----------------------------------------------------------------------------------
def test_every_listening_socket_of_cluster_and_driver_is_on_loopback(cluster, spark):
    _with_python_workers(spark)
    pids = cluster_pids(cluster) | driver_pids()
    sockets = listening_sockets(pids)
    kinds = {kind: [p for p in pids if kind in _cmdline(p)]
             for kind in ("deploy.master.Master", "deploy.worker.Worker", "CoarseGrainedExecutorBackend",
                          "deploy.SparkSubmit")}
    assert len(kinds["deploy.master.Master"]) == 1 and len(kinds["deploy.worker.Worker"]) == 2, kinds
    assert kinds["CoarseGrainedExecutorBackend"] and kinds["deploy.SparkSubmit"], kinds
    for who in ("deploy.master.Master", "deploy.worker.Worker", "deploy.SparkSubmit"):
        assert all(sockets.get(p) for p in kinds[who]), f"no listening socket found for {who}"
    exposed = {f"{p} {_cmdline(p)[:120]}": [s for s in socks if not _is_loopback(s[0])]
               for p, socks in sockets.items()}
    exposed = {k: v for k, v in exposed.items() if v}
    assert not exposed, f"listening beyond loopback: {exposed}"


def test_secret_is_private_and_on_no_command_line(cluster, spark):
    path = auth.secret_path(cluster.master_url)
    assert path is not None and _mode(path) == 0o600 and _mode(path.parent) == 0o700
    secret = path.read_text().strip()
    assert len(secret) == 64 and spark.conf.get("spark.authenticate") == "true"
    pids = cluster_pids(cluster) | driver_pids()
    assert any("-Dspark.authenticate=true" in _cmdline(p) for p in pids)
    leaking = [f"{p} {_cmdline(p)[:100]}" for p in pids if secret in _cmdline(p)]
    assert not leaking, f"the secret is on a command line: {leaking}"
    _assert_private_tree(cluster.base_dir)


INTRUDER = textwrap.dedent("""
    import json, sys, time
    from pyspark.sql import SparkSession
    master, case = sys.argv[1], sys.argv[2]
    conf = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.cores.max": "1", "spark.executor.memory": "512m"}
    if case == "wrong-secret":
        conf.update({"spark.authenticate": "true", "spark.authenticate.secret": "0" * 64})
    builder = SparkSession.builder.master(master).appName("intruder-" + case)
    for k, v in conf.items():
        builder = builder.config(k, v)
    try:  # a standalone driver waits for registration in its constructor: 3 tries x 20 s
        spark = builder.getOrCreate()
    except Exception as exc:
        print("RESULT " + json.dumps({"registered": False, "error": str(exc).splitlines()[0]}), flush=True)
        sys.exit(0)
    sc, deadline, executors = spark.sparkContext, time.monotonic() + 20, 0
    while time.monotonic() < deadline and executors == 0:
        executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
        time.sleep(1)
    print("RESULT " + json.dumps({"registered": True, "executors": executors}), flush=True)
    spark.stop()
""")


def test_driver_without_the_secret_is_refused(cluster, tmp_path):
    """A plain SparkSession without the secret, or with a wrong one, is not registered and
    gets no executor. A driver the master accepts registers within a second or two; a refused
    one retries for 3 x 20 s before giving up, so both intruders are given 30 s (run at once)
    and then killed: neither may have registered or got an executor by then, and the master
    must never have listed them."""
    script = tmp_path / "intruder.py"
    script.write_text(INTRUDER)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    procs = {case: subprocess.Popen([sys.executable, str(script), cluster.master_url, case],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                    start_new_session=True, cwd=tmp_path)
             for case in ("no-auth", "wrong-secret")}
    results = {}
    deadline = time.monotonic() + 30
    try:
        for case, proc in procs.items():
            try:
                out, err = proc.communicate(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
            line = next((ln for ln in out.splitlines() if ln.startswith("RESULT ")), None)
            results[case] = json.loads(line[len("RESULT "):]) if line else {"registered": False, "error": "gave up at 30 s"}
    finally:
        for proc in procs.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    for case, result in results.items():
        assert not result["registered"] or result["executors"] == 0, (case, result)
    doc = cluster.status()
    apps = [a["name"] for a in doc.get("activeapps", []) + doc.get("completedapps", [])]
    assert not [a for a in apps if a.startswith("intruder")], apps


def test_checkpoints_are_private(spark):
    rdd = spark.sparkContext.parallelize(range(100), 2)
    rdd.checkpoint()
    assert rdd.count() == 100
    top = Path(spark.sparkContext.getCheckpointDir().replace("file:", "", 1))
    assert any(p.is_file() for p in top.rglob("part-*")), "no checkpoint file written"
    _assert_private_tree(top)
    _assert_private_tree(top.parent)


def test_run_leaves_private_mlflow_store_and_event_log_and_no_secret(cluster, tmp_path):
    """A CLI run on the cluster: MLflow store (db and artifacts), event log and output are
    the user's only; the secret is in none of them, nor in the run's output or the cluster's logs."""
    secret = auth.lookup(cluster.master_url)
    events, out = tmp_path / "events", tmp_path / "pr"
    env = dict(os.environ, MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path}/mlflow.db",
               ITERFLOW_HOME=str(tmp_path / "home"))
    r = subprocess.run(
        [sys.executable, "-m", "iterflow.app.cli", "run", "pagerank", "--input", str(GRAPHALYTICS / "example-directed"),
         "--format", "graphalytics", "--iterations", "3", "--output", str(out), "--master", cluster.master_url,
         "--conf", f"spark.cores.max={APP_CORES}", "--conf", "spark.eventLog.enabled=true",
         "--conf", f"spark.eventLog.dir=file://{events}",
         "--conf", "spark.eventLog.compress=false"],  # Spark 4 compresses by default: no search then
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert secret and secret not in r.stdout + r.stderr
    for top in (events, tmp_path / "mlruns", out):
        _assert_private_tree(top)
    assert _mode(tmp_path / "mlflow.db") == 0o600
    import mlflow

    mlflow.set_tracking_uri(env["MLFLOW_TRACKING_URI"])
    (run,) = mlflow.search_runs(experiment_names=["iterflow"], output_format="list")
    recorded = json.dumps([run.data.params, run.data.tags])
    assert "authenticate" not in recorded and secret not in recorded
    assert run.data.params["master"] == cluster.master_url
    for top in (events, cluster.base_dir, tmp_path / "mlruns"):
        holding = [str(p) for p in top.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
        assert not holding, f"the secret is written in {holding}"
    # the search above did see the settings: Spark wrote them, with the secret redacted
    assert any(b'"spark.authenticate.secret":"*********(redacted)"' in p.read_bytes()
               for p in events.rglob("*") if p.is_file())
