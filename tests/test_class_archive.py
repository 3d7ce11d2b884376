"""The executors' class-data-sharing archive (iterflow.cluster.cds): when a session gets it, and
that the archive ``make setup`` dumped really maps for the executors the embedded cluster starts."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from iterflow.cluster import cds
from iterflow.errors import ClusterError

LOCAL = "spark://127.0.0.1:7077"


def placed(path_of, tmp_path, monkeypatch) -> Path:
    """A stand-in archive where ``path_of()`` looks, under ``ITERFLOW_CDS`` at ``tmp_path``."""
    monkeypatch.setenv("ITERFLOW_CDS", str(tmp_path))
    path = path_of()
    path.write_bytes(b"not a real archive: only its presence is read here")
    return path


@pytest.fixture
def archive(tmp_path, monkeypatch) -> Path:
    return placed(cds.archive_path, tmp_path, monkeypatch)


def test_a_local_session_gets_the_archive_after_its_own_executor_options(archive):
    out = cds.with_archive(LOCAL, {cds.OPTS: "-XX:TieredStopAtLevel=1", "spark.app.name": "x"})
    assert out[cds.OPTS] == f"-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile={archive}"
    assert cds.with_archive(LOCAL, {})[cds.OPTS] == f"-XX:SharedArchiveFile={archive}"


@pytest.mark.parametrize("master,settings", [
    ("spark://cluster.example:7077", {}),  # the file is not where a remote node's executors look
    ("yarn", {}),
    (LOCAL, {cds.CONF: "false"}),  # turned off
    (LOCAL, {cds.OPTS: "-XX:SharedArchiveFile=/mine.jsa"}),  # the user's own archive
    (LOCAL, {cds.OPTS: "-Xshare:off"}),
])
def test_no_archive_where_it_cannot_or_should_not_apply(archive, master, settings):
    assert cds.with_archive(master, dict(settings)) == settings
    assert not cds.applies(master, settings)


def test_the_spark_submit_properties_of_the_embedded_cluster_carry_both_archives(archive, driver_archive, tmp_path):
    from iterflow.cluster.local import LocalCluster

    cluster = LocalCluster(workers=1, base_dir=tmp_path / "c")  # not started: only its properties are read
    cluster.master_url = LOCAL
    lines = cluster.submit_properties().splitlines()
    assert next(x for x in lines if x.startswith(cds.OPTS)).endswith(f"-XX:SharedArchiveFile={archive}")
    assert next(x for x in lines if x.startswith(cds.DRIVER_OPTS)).endswith(
        f"-XX:SharedArchiveFile={driver_archive} {cds.QUIET}")


def test_no_archive_before_one_was_made(tmp_path, monkeypatch):
    monkeypatch.setenv("ITERFLOW_CDS", str(tmp_path / "empty"))
    assert cds.with_archive(LOCAL, {}) == {}


@pytest.fixture
def driver_archive(tmp_path, monkeypatch) -> Path:
    return placed(cds.driver_archive_path, tmp_path, monkeypatch)


@pytest.mark.parametrize("master", [LOCAL, "spark://cluster.example:7077", "yarn"])
def test_the_driver_jvm_gets_its_archive_after_its_own_options_on_any_master(driver_archive, master):
    """The driver runs here in client mode, whatever the master: its archive applies to all."""
    out = cds.with_driver_archive({"spark.master": master, cds.DRIVER_OPTS: "-Dlog4j2.configurationFile=file:x"})
    assert out[cds.DRIVER_OPTS] == f"-Dlog4j2.configurationFile=file:x -XX:SharedArchiveFile={driver_archive} {cds.QUIET}"
    assert cds.with_driver_archive({})[cds.DRIVER_OPTS] == f"-XX:SharedArchiveFile={driver_archive} {cds.QUIET}"


@pytest.mark.parametrize("settings", [
    {cds.CONF: "false"},  # turned off, for the executors' archive too
    {cds.DRIVER_OPTS: "-XX:SharedArchiveFile=/mine.jsa"},  # the user's own archive
    {cds.DRIVER_OPTS: "-Xshare:off"},
    {cds.DRIVER_OPTS: "-XX:ArchiveClassesAtExit=/dumping.jsa"},  # classlist dumping the archive itself
])
def test_no_driver_archive_where_it_should_not_apply(driver_archive, settings):
    assert cds.with_driver_archive(dict(settings)) == settings


def test_no_driver_archive_before_one_was_made(tmp_path, monkeypatch):
    monkeypatch.setenv("ITERFLOW_CDS", str(tmp_path / "empty"))
    assert cds.with_driver_archive({cds.DRIVER_OPTS: "-Xmx1g"}) == {cds.DRIVER_OPTS: "-Xmx1g"}


def test_each_daemon_gets_its_own_archive_unless_its_options_name_one(tmp_path, monkeypatch):
    from iterflow.cluster.local import LocalCluster

    monkeypatch.setenv("ITERFLOW_CDS", str(tmp_path))
    monkeypatch.delenv("ITERFLOW_JVM_OPTS", raising=False)
    master, worker = cds.daemon_archive_path("master"), cds.daemon_archive_path("worker")
    assert master != worker
    plain = LocalCluster(workers=1, base_dir=tmp_path / "c")  # not started: only its options are read
    assert "SharedArchiveFile" not in plain._daemon_opts("master")  # none made yet
    master.write_bytes(b"presence only")
    worker.write_bytes(b"presence only")
    assert plain._daemon_opts("master").endswith(f"-XX:SharedArchiveFile={master} {cds.QUIET}")
    assert plain._daemon_opts("worker").endswith(f"-XX:SharedArchiveFile={worker} {cds.QUIET}")
    dumping = LocalCluster(workers=1, base_dir=tmp_path / "d", daemon_java_opts={"worker": "-XX:ArchiveClassesAtExit=/w.jsa"})
    assert dumping._daemon_opts("worker").endswith("-XX:ArchiveClassesAtExit=/w.jsa")  # its own, not the archive
    assert dumping._daemon_opts("master").endswith(f"-XX:SharedArchiveFile={master} {cds.QUIET}")
    with pytest.raises(ValueError, match="executor"):
        cds.daemon_archive_path("executor")


def test_the_key_follows_the_spark_install(monkeypatch, tmp_path):
    from iterflow.cluster import local

    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"1")
    monkeypatch.setattr(local, "spark_home", lambda: tmp_path / "spark")
    before = cds.key()
    assert cds.key() == before  # stable
    (jars / "spark-core.jar").write_bytes(b"12")  # another build of a jar
    assert cds.key() != before


def test_the_executor_command_is_read_from_its_stderr():
    text = ('Spark Executor Command: "/usr/lib/jvm/j17/bin/java" "-cp" "/sp/conf:/sp/jars/*" "-Xmx2048M" '
            '"org.apache.spark.executor.CoarseGrainedExecutorBackend" "--cores" "1"\n========\nlog lines')
    cmd = cds.executor_command(text)
    assert cmd[0] == "/usr/lib/jvm/j17/bin/java" and cmd[cmd.index("-cp") + 1] == "/sp/conf:/sp/jars/*"
    with pytest.raises(ClusterError, match="Spark Executor Command"):
        cds.executor_command("some other log")


def test_a_failed_dump_leaves_no_archive(tmp_path):
    bad = tmp_path / "fakejava"
    bad.write_text("#!/bin/sh\necho 'dump refused' >&2\nexit 3\n")
    bad.chmod(0o755)
    out = tmp_path / "a.jsa"
    with pytest.raises(ClusterError, match="dump refused"):
        cds.build(tmp_path / "classes.lst", [str(bad), "-cp", "x", "Main"], out)
    assert list(tmp_path.glob("a.*")) == []


@pytest.mark.cluster
def test_the_embedded_clusters_executors_map_the_archive(spark, cluster):
    """The session fixture's executors were started with the archive, and that archive maps for
    their exact java and class path (``-Xshare:on`` refuses to start where it would not)."""
    path = cds.archive_path()
    if not path.is_file():
        pytest.skip("no class archive (make setup makes it)")
    assert f"-XX:SharedArchiveFile={path}" in spark.sparkContext.getConf().get(cds.OPTS, "")
    spark.range(100).count()
    stderr = next(Path(cluster.base_dir).glob("worker-*/app-*/*/stderr"))
    cmd = cds.executor_command(stderr.read_text(errors="replace"))
    assert f"-XX:SharedArchiveFile={path}" in cmd
    probe = subprocess.run([cmd[0], "-Xshare:on", f"-XX:SharedArchiveFile={path}", "-cp", cmd[cmd.index("-cp") + 1],
                            "-Xlog:class+load", "-version"], capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr[-1000:]
    assert "source: shared objects file" in probe.stdout


@pytest.mark.cluster
def test_the_session_driver_jvm_maps_its_archive(spark):
    """The session fixture's driver JVM (launched by iterflow, ``build_session``) was started with
    the driver archive ``make setup`` dumped, and maps it: its class path and JDK are the ones the
    archive was dumped for (a JVM that could not map it would run on silently, ``cds.QUIET``)."""
    from pyspark import SparkContext

    path = cds.driver_archive_path()
    if not path.is_file():
        pytest.skip("no driver class archive (make setup makes it)")
    assert f"-XX:SharedArchiveFile={path}" in spark.sparkContext.getConf().get(cds.DRIVER_OPTS, "")
    pid = SparkContext._gateway.proc.pid
    assert str(path) in Path(f"/proc/{pid}/maps").read_text(), "the driver JVM did not map its class archive"


@pytest.mark.cluster
def test_the_session_clusters_master_and_workers_map_their_archives(cluster):
    """``spark-class`` execs the JVM, so each spawned process is its daemon's JVM."""
    paths = {kind: cds.daemon_archive_path(kind) for kind in cds.DAEMONS}
    if not all(p.is_file() for p in paths.values()):
        pytest.skip("no daemon class archives (make setup makes them)")
    master, *workers = cluster._procs
    assert workers
    for kind, proc in [("master", master), *(("worker", w) for w in workers)]:
        assert str(paths[kind]) in Path(f"/proc/{proc.pid}/maps").read_text(), f"the {kind} did not map its archive"
