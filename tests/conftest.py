"""Test fixtures: one real Spark standalone cluster on 127.0.0.1 for the whole session.

The session ends by checking that no Spark JVM this session started is still running.
Tests of pure logic (model, policies, partition planning) do not touch these fixtures.
"""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("ITERFLOW_SHARED", ROOT.parent / "shared"))
GRAPHALYTICS = SHARED / "datasets" / "graphalytics"
TRACES = SHARED / "datasets" / "runtime-traces"
# Two apps may share the cluster (the session's and a CLI subprocess's): each takes at most 2 cores.
APP_CORES = "2"

# Every JVM the tests start JITs with C1 only (iterflow.cluster.jvmopts): the suite's short jobs
# on tiny inputs ran ~40 % sooner end to end. `ITERFLOW_JVM_OPTS= make test` runs the JVM's default.
os.environ.setdefault("ITERFLOW_JVM_OPTS", "-XX:TieredStopAtLevel=1")

# Every process this session starts (workers, executors, CLI runs and their JVMs) inherits
# this marker in its environment, so the final check counts only our own JVMs.
SESSION_MARK = f"ITERFLOW_TEST_SESSION={uuid.uuid4().hex}"


def spark_jvm_pids() -> set[int]:
    """Live Spark JVMs started by this test session (zombies, already dead, do not count)."""
    out = subprocess.run(["pgrep", "-f", "org.apache.spark"], capture_output=True, text=True).stdout
    live = set()
    for pid in map(int, out.split()):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        if state != "Z" and SESSION_MARK.encode() in env:
            live.add(pid)
    return live


SPARK_FIXTURES = {"spark", "cluster", "cli_env"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that takes a Spark fixture must carry the ``cluster`` mark, so that
    ``-m "not cluster"`` (``make test-fast``) never starts Spark. (Tests that start Spark in a
    subprocess of their own are marked by hand.)"""
    unmarked = [item.nodeid for item in items
                if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("cluster") is None]
    if unmarked:
        raise pytest.UsageError("tests that use a Spark fixture without @pytest.mark.cluster: " + ", ".join(unmarked))


def pytest_sessionstart(session: pytest.Session) -> None:
    key, value = SESSION_MARK.split("=")
    os.environ[key] = value


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import time

    deadline = time.monotonic() + 30
    left = spark_jvm_pids()
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = spark_jvm_pids()
    if left:
        print(f"\nFAILED: Spark JVMs started by this test session are still running: {sorted(left)}",
              file=sys.stderr)
        session.exitstatus = 1
    else:
        print("\nno Spark JVM started by this test session is left running")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    from iterflow.cluster.local import LocalCluster

    with LocalCluster(workers=2, cores_per_worker=2, memory="2g",
                      base_dir=tmp_path_factory.mktemp("cluster")) as c:
        yield c


@pytest.fixture(scope="session")
def spark(cluster, tmp_path_factory: pytest.TempPathFactory):
    from iterflow.cluster.session import build_session

    events = tmp_path_factory.mktemp("eventlog")
    session = build_session(cluster.master_url, 2, {"spark.cores.max": APP_CORES,
                                                    "spark.app.name": "iterflow-tests",
                                                    "spark.eventLog.enabled": "true",
                                                    "spark.eventLog.compress": "false",
                                                    "spark.eventLog.dir": f"file://{events}"},
                            work_dir=tmp_path_factory.mktemp("driver"))
    session.conf.set("iterflow.test.eventlog", str(events))
    yield session
    session.stop()
    # The py4j gateway JVM outlives stop() until the Python process exits; end it now so the
    # session's final check sees no JVM of ours.
    from iterflow.cluster.session import stop_gateway

    stop_gateway()


@pytest.fixture(scope="session")
def cli_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for CLI subprocesses: an empty ITERFLOW_HOME (no detached cluster)."""
    home = tmp_path_factory.mktemp("iterflow-home")
    return dict(os.environ, ITERFLOW_HOME=str(home), MLFLOW_TRACKING_URI=f"sqlite:///{home}/mlflow.db")


def run_cli(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "iterflow.app.cli", *args], capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=ROOT)
