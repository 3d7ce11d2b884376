"""A SparkSession for iterflow against any master URL (embedded, ``spark://``, ``yarn``, ``k8s://``).

The defaults below are what iterative jobs need on any cluster manager; user ``--conf``
values always win (they are applied last, unchanged, as spark-submit does). Under
``spark-submit`` the settings spark-submit was given win over these defaults too.

What the driver writes (checkpoints, its local dir, event logs, outputs) is the user's only:
the driver JVM runs with umask 077 and Hadoop's own umask is set to 077. A cluster iterflow
started gets its authentication secret here, over py4j, never on the JVM's command line.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Mapping
from urllib.parse import urlparse

from iterflow.cluster import auth, cds, jars
from iterflow.cluster.jvmopts import extra_jvm_opts, joined
from iterflow.errors import InputError
from iterflow.files import private_dir

log = logging.getLogger(__name__)

LOG4J = Path(__file__).with_name("log4j2.properties")
LOG4J_VERBOSE = Path(__file__).with_name("log4j2-verbose.properties")  # ITERFLOW_VERBOSE=1 (iterflow -v)
# Settings that only take effect when the driver JVM is launched; under spark-submit it is.
JVM_LAUNCH = ("spark.driver.memory", "spark.driver.extraJavaOptions", "spark.driver.extraClassPath")


def parse_conf(items: list[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` strings from ``--conf`` into a dict; a malformed one is an input error."""
    conf: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--conf expects KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


def default_conf(master: str, total_cores: int | None, work_dir: Path | None) -> dict[str, str]:
    """Settings for iterative jobs; ``total_cores`` sizes the shuffle partitions."""
    parts = str(max(2, 2 * (total_cores or 2)))
    conf = {
        "spark.master": master,
        "spark.app.name": "iterflow",
        "spark.sql.shuffle.partitions": parts,
        "spark.default.parallelism": parts,
        # Partition counts are the framework's decision (they follow the cores); AQE must
        # not coalesce them behind its back, or skew and movement figures mean nothing.
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
        "spark.executor.memory": "1g",
        # After a rescale the cached partitions sit on the old executors; waiting for
        # locality (3 s by default) would serialize each superstep on them. Run tasks
        # anywhere and fetch cached blocks instead.
        "spark.locality.wait": "0s",
        # A scale-in decommissions the executors it removes: their cached blocks move to the
        # executors that stay before they exit. Killed, those blocks are recomputed from the
        # input by the next superstep (PageRank's first superstep after 4 -> 2 ran 1.3-1.9 s
        # over steady with a kill, 0.3-0.5 s decommissioned: experiments/release_cost.py). Shuffle
        # files are not moved: a superstep reads only its own (lineage is cut at every barrier).
        "spark.decommission.enabled": "true",
        "spark.storage.decommission.enabled": "true",
        "spark.storage.decommission.rddBlocks.enabled": "true",
        "spark.storage.decommission.shuffleBlocks.enabled": "false",
        # What RDD data is written with: a release's copy of the state (a reliable checkpoint of
        # its rows) and the cached blocks decommissioning moves. Java serialization's per-object
        # stream costs showed in every release: WCC 4 -> 1 on the emulated cluster, four
        # applications alternated (experiments/results/release_cost_wcc-heavy_kryo.txt), the
        # first superstep after it ran 0.56 s over steady with Kryo against 0.87 s, the barrier
        # stalled 0.57 s against 0.65 s. SQL shuffles use their own row serializer either way.
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.driver.memory": "2g",
        "spark.driver.extraJavaOptions": joined(
            f"-Dlog4j2.configurationFile=file:{LOG4J_VERBOSE if os.environ.get('ITERFLOW_VERBOSE') else LOG4J}",
            extra_jvm_opts()),
        # Files Spark writes through Hadoop (checkpoints, outputs) get explicit permissions
        # from Hadoop's umask (022 by default), whatever the process umask: 0600/0700.
        "spark.hadoop.fs.permissions.umask-mode": "077",
    }
    if extra_jvm_opts():  # ITERFLOW_JVM_OPTS (iterflow.cluster.jvmopts); a --conf of the run's own wins
        conf["spark.executor.extraJavaOptions"] = extra_jvm_opts()
    if work_dir is not None:
        conf["spark.local.dir"] = str(work_dir / "local")
    if master.startswith("spark://127.0.0.1") or master.startswith("local"):
        # Driver, its UI and block manager on loopback only.
        conf.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
        # Executors of an emulated cluster share one disk; without this, Spark reads shuffle
        # blocks of co-located executors straight from disk and no byte ever counts as remote.
        conf["spark.shuffle.readHostLocalDisk"] = "false"
        # Executors on this machine run Python UDFs (k-means) with this interpreter's packages.
        conf["spark.pyspark.python"] = os.environ.get("PYSPARK_PYTHON", sys.executable)
        # The UIs are not authenticated: no kill buttons on a UI any local user can reach.
        conf["spark.ui.killEnabled"] = "false"
    return conf


def under_spark_submit() -> bool:
    """Whether spark-submit started this Python process (and its driver JVM is waiting)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def submitted_conf() -> dict[str, str] | None:
    """The settings ``spark-submit`` launched this driver with, or ``None`` when this Python
    process was not started by spark-submit (then iterflow launches its own driver JVM)."""
    if not under_spark_submit():
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM, launches nothing
    return dict(SparkConf().getAll())  # the JVM's spark.* system properties


def _launch_driver_jvm(settings: dict[str, str]) -> None:
    """Start the py4j driver JVM (once per process) with umask 077 and without the
    authentication secret: pyspark passes every setting as ``--conf`` on the JVM's command
    line, which ``ps`` shows to every user. The secret follows later, over py4j."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    public = SparkConf(loadDefaults=False)
    for key, value in settings.items():
        if key != auth.SECRET:
            public.set(key, value)
    quiet = not os.environ.get("ITERFLOW_VERBOSE")
    gateway = launch_gateway(public, popen_kwargs={"umask": 0o077, **({"stderr": subprocess.PIPE} if quiet else {})})
    if quiet:
        _relay_stderr(gateway.proc.stderr)
    SparkContext._ensure_initialized(gateway=gateway)


#: Lines the driver JVM prints that are expected in every embedded run (Spark 4 loads the
#: incubating vector module): hidden unless ``iterflow -v``.
_JVM_NOISE = ("WARNING: Using incubator modules",)


def _relay_stderr(stream) -> None:
    """Copy the driver JVM's stderr to ours, without the expected noise (a daemon thread: it
    ends with the JVM's stream or with this process)."""
    def relay() -> None:
        for line in iter(stream.readline, b""):
            if line.decode("utf-8", "replace").startswith(_JVM_NOISE):
                continue
            out = getattr(sys.stderr, "buffer", None)  # wherever stderr points now
            try:
                if out is not None:
                    out.write(line)
                else:
                    sys.stderr.write(line.decode("utf-8", "replace"))
                sys.stderr.flush()
            except (OSError, ValueError):  # our stderr closed: keep draining the pipe
                continue

    threading.Thread(target=relay, name="iterflow-jvm-stderr", daemon=True).start()


def stop_session(spark) -> None:
    """Stop ``spark``; then make its local event log 0600 (Spark sets 0660 on it, hard-coded in
    ``EventLogFileWriter``; the 0700 directory iterflow made for it already keeps others out)."""
    sc = spark.sparkContext
    try:
        logdir, app = _event_log_dir(dict(sc.getConf().getAll())), sc.applicationId
    except Exception:  # noqa: BLE001 - the JVM is gone already: nothing left to tighten
        logdir, app = None, None
    _quiet_stop_race(sc)
    spark.stop()
    if logdir is not None and app:  # one file, or Spark 4's rolling eventlog_v2_<app>/ directory
        for top in [*logdir.glob(f"{app}*"), *logdir.glob(f"eventlog_v2_{app}*")]:
            for path in [top, *top.rglob("*")]:
                os.chmod(path, 0o700 if path.is_dir() else 0o600)


#: Logs whose errors during stop() are Spark's own shutdown race, not the user's problem: the
#: master's last messages to an application client that has just stopped ("Could not find
#: AppClient", with a Java stack trace on the driver's stderr).
_STOP_RACE_LOGGERS = ("org.apache.spark.network.server.TransportRequestHandler",)


def _quiet_stop_race(sc) -> None:
    try:
        log4j = sc._jvm.org.apache.logging.log4j
        for name in _STOP_RACE_LOGGERS:
            log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)
    except Exception:  # noqa: BLE001 - the JVM is gone already, or not log4j 2
        pass


def stop_gateway() -> None:
    """Stop the active SparkContext (if any) and end the py4j gateway JVM this process
    launched: it outlives ``stop()`` until the Python process exits, logging to its stderr."""
    pyspark = sys.modules.get("pyspark")
    if pyspark is None:
        return
    sc_class = pyspark.SparkContext
    if sc_class._active_spark_context is not None:
        _quiet_stop_race(sc_class._active_spark_context)
        sc_class._active_spark_context.stop()
    gateway = sc_class._gateway
    if gateway is not None:
        gateway.shutdown()
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        sc_class._gateway = sc_class._jvm = None


def build_session(master: str, total_cores: int | None = None,
                  conf: Mapping[str, str] | None = None, work_dir: Path | None = None,
                  with_graphframes: bool = True):
    """Create (or fail clearly) a SparkSession; adds the GraphFrames jars when cached, and the
    authentication secret when iterflow started the cluster at ``master``. Under spark-submit,
    uses spark-submit's master and settings (``master`` is then only a fallback)."""
    from pyspark.sql import SparkSession

    work_dir = private_dir(work_dir or tempfile.mkdtemp(prefix="iterflow-driver-"))
    submitted = submitted_conf()
    if submitted is not None:
        master = submitted.get("spark.master", master)
    settings = default_conf(master, total_cores, work_dir)
    settings.update(auth.auth_conf(master))
    if with_graphframes and jars.available():
        settings["spark.jars"] = ",".join(str(j) for j in jars.graphframes_jars())
    if submitted is not None:  # spark-submit's own settings win over iterflow's defaults
        settings = {k: v for k, v in settings.items() if k not in submitted and k not in JVM_LAUNCH}
    settings.update(conf or {})
    if submitted is None:  # spark-submit's driver and executors are launched with its own options
        settings = cds.with_driver_archive(cds.with_archive(master, settings))
    _private_event_log_dir(settings)
    if settings.get("spark.driver.bindAddress") == "127.0.0.1" and submitted is None:
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver UI binds to it
    elif submitted is not None and master.startswith("spark://127.0.0.1") and "SPARK_LOCAL_IP" not in os.environ:
        log.warning("the driver UI listens on all interfaces: Spark takes its address only from the "
                    "environment; run spark-submit with SPARK_LOCAL_IP=127.0.0.1")
    if "spark.pyspark.python" in settings:  # PySpark reads the workers' interpreter from the env
        os.environ.setdefault("PYSPARK_PYTHON", settings["spark.pyspark.python"])
    _launch_driver_jvm(settings)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.sparkContext.setCheckpointDir(str(private_dir(work_dir / "checkpoints")))
    return spark


def _event_log_dir(settings: Mapping[str, str]) -> Path | None:
    """The local directory event logs go to, if they are on and local."""
    if settings.get("spark.eventLog.enabled", "false").lower() != "true":
        return None
    uri = urlparse(settings.get("spark.eventLog.dir", "/tmp/spark-events"))
    return Path(uri.path) if uri.scheme in ("", "file") else None


def _private_event_log_dir(settings: Mapping[str, str]) -> None:
    """A local event-log directory that does not exist yet is created 0700."""
    logdir = _event_log_dir(settings)
    if logdir is not None and not logdir.exists():
        private_dir(logdir)
