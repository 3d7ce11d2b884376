"""A SparkSession for iterflow against any master URL (embedded, ``spark://``, ``yarn``, ``k8s://``).

The defaults below are what iterative jobs need on any cluster manager; user ``--conf``
values always win (they are applied last, unchanged, as spark-submit does).
"""
from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Mapping

from iterflow import jars
from iterflow.errors import InputError

log = logging.getLogger(__name__)

LOG4J = Path(__file__).with_name("log4j2.properties")


def parse_conf(items: list[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` strings from ``--conf`` into a dict; a malformed one is an input error."""
    conf: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--conf expects KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


def default_conf(master: str, total_cores: int | None, work_dir: Path) -> dict[str, str]:
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
        "spark.local.dir": str(work_dir / "local"),
        "spark.executor.memory": "1g",
        # After a rescale the cached partitions sit on the old executors; waiting for
        # locality (3 s by default) would serialize each superstep on them. Run tasks
        # anywhere and fetch cached blocks instead.
        "spark.locality.wait": "0s",
        "spark.driver.memory": "2g",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{LOG4J}",
    }
    if master.startswith("spark://127.0.0.1") or master.startswith("local"):
        # Driver, its UI and block manager on loopback only.
        conf.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
        # Executors of an emulated cluster share one disk; without this, Spark reads shuffle
        # blocks of co-located executors straight from disk and no byte ever counts as remote.
        conf["spark.shuffle.readHostLocalDisk"] = "false"
        # Executors on this machine run Python UDFs (k-means) with this interpreter's packages.
        conf["spark.pyspark.python"] = os.environ.get("PYSPARK_PYTHON", sys.executable)
    return conf


def build_session(master: str, total_cores: int | None = None,
                  conf: Mapping[str, str] | None = None, work_dir: Path | None = None,
                  with_graphframes: bool = True):
    """Create (or fail clearly) a SparkSession; adds the GraphFrames jars when cached."""
    from pyspark.sql import SparkSession

    work_dir = Path(work_dir or tempfile.mkdtemp(prefix="iterflow-driver-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    settings = default_conf(master, total_cores, work_dir)
    if with_graphframes and jars.available():
        settings["spark.jars"] = ",".join(str(j) for j in jars.graphframes_jars())
    settings.update(conf or {})
    if settings.get("spark.driver.bindAddress") == "127.0.0.1":
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver UI binds to it
    if "spark.pyspark.python" in settings:  # PySpark reads the workers' interpreter from the env
        os.environ.setdefault("PYSPARK_PYTHON", settings["spark.pyspark.python"])
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.sparkContext.setCheckpointDir(str(work_dir / "checkpoints"))
    return spark
