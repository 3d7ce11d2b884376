"""Fresh executor JVMs start from a class-data-sharing archive of the classes Spark loads (AppCDS).

Why: a scale-out pays for its new executors twice before they run a task at full speed -- the
JVM starts and loads ~3,000 Spark and Scala classes from the jars, then the first tasks load
the rest. On a 0.5-core node that is seconds, during which the superstep runs without them. With
an archive (``-XX:SharedArchiveFile``) the JVM maps those classes, parsed and verified once,
from one file: on the emulated cluster the executors a scale-out asked for were there at the
next barrier in 8 of 8 scale-outs (2 of 8 without), and the two supersteps after a scale-out ran
0.85-0.91x as long. Most of a fresh executor's cost is not class loading and stays: its first
tasks run ~2 s where steady ones take 0.1 s (JIT, generated code compiled per JVM; README,
"Fresh executors from a class archive").

The archive is the JDK's own (``java -Xshare:dump`` over a class list an executor recorded with
``-XX:DumpLoadedClassList``, :mod:`iterflow.app.classlist` makes it). It holds for one Java
and one Spark install: its file name carries a key of both (:func:`key`), so another JDK or
pyspark never maps a stale one; a JVM that cannot use it (another class path) runs without it
(``-Xshare:auto``, the default), only slower. It is applied to the executors of clusters on this
machine (``spark://127.0.0.1``, ``spark://localhost``), where the file is where the executors
look, by the sessions iterflow configures and by the spark-submit properties file ``iterflow
cluster start`` writes (other spark-submit properties are the user's to set); ``--conf
spark.iterflow.classArchive=false`` turns it off, and executor options that already name an
archive (``SharedArchiveFile``, ``-Xshare``) are left alone. The driver JVM iterflow launches
maps an archive of its own (:func:`with_driver_archive`), and so do the embedded cluster's master
and workers (:func:`daemon_options`): dumped by the same run as its driver and daemons exit.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

from iterflow.cluster.jvmopts import joined
from iterflow.errors import ClusterError

CONF = "spark.iterflow.classArchive"
OPTS = "spark.executor.extraJavaOptions"
DRIVER_OPTS = "spark.driver.extraJavaOptions"
#: a JVM that cannot map an archive (another class path, another JDK) starts without it, silently
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
_NAMES_AN_ARCHIVE = ("SharedArchiveFile", "-Xshare", "ArchiveClassesAtExit")
LOCAL_MASTERS = ("spark://127.0.0.1:", "spark://localhost:")
_COMMAND = re.compile(r'Spark Executor Command: (".*")')


def archive_dir() -> Path:
    """Where archives are kept: ``$ITERFLOW_CDS`` or ``<project>/.cache/cds`` (next to the jars)."""
    return Path(os.environ.get("ITERFLOW_CDS", Path(__file__).resolve().parents[2] / ".cache" / "cds"))


def executor_java() -> str:
    """The ``java`` a worker's executors run, as ``bin/spark-class`` finds it: ``$JAVA_HOME``, else the PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found:
        raise ClusterError("no java: set JAVA_HOME or put java 17 on the PATH")
    return os.path.realpath(found)


def key(java: str | None = None) -> str:
    """A short key of the JDK and of Spark's jars (where they are, which): an archive holds for exactly these."""
    from iterflow.cluster.local import spark_home

    java = java or executor_java()
    st = os.stat(java)
    parts = [java, str(st.st_size), str(int(st.st_mtime))]
    libjvm = sorted(Path(java).resolve().parents[1].glob("lib/server/libjvm.so"))
    parts += [f"{p}:{p.stat().st_size}:{int(p.stat().st_mtime)}" for p in libjvm]
    # the jars by path: the class path an archive was dumped for is the one it maps for
    parts += [str(spark_home())] + sorted(f"{j.name}:{j.stat().st_size}" for j in (spark_home() / "jars").glob("*.jar"))
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:12]


def archive_path(java: str | None = None) -> Path:
    return archive_dir() / f"executors-{key(java)}.jsa"


def driver_archive_path(java: str | None = None) -> Path:
    """The driver JVM's archive: a dynamic one (``-XX:ArchiveClassesAtExit``), on top of the JDK's
    base archive, of every class a driver loaded running the three programs (:mod:`iterflow.app.classlist`)."""
    return archive_dir() / f"driver-{key(java)}.jsa"


DAEMONS = ("master", "worker")


def daemon_archive_path(kind: str, java: str | None = None) -> Path:
    """The standalone ``master``'s or a ``worker``'s archive (dynamic, dumped as the class-recording
    run's daemons exit): an embedded cluster came up in 3.8-4.1 s with them, 6.6-6.8 s without
    (two workers, three interleaved pairs) -- each daemon's JVM loads ~4,000 classes."""
    if kind not in DAEMONS:
        raise ValueError(f"no archive for a {kind!r} daemon (one of {', '.join(DAEMONS)})")
    return archive_dir() / f"{kind}-{key(java)}.jsa"


def _names_one(opts: str) -> bool:
    """Whether JVM options already name an archive (the user's, or ``classlist`` dumping one)."""
    return any(n in opts for n in _NAMES_AN_ARCHIVE)


def _mapping(opts: str, path: Path) -> str:
    """``opts`` with the dynamic archive at ``path`` appended (silent where it cannot map), where
    the file is there and ``opts`` names no archive of its own."""
    return opts if _names_one(opts) or not path.is_file() else joined(opts, f"-XX:SharedArchiveFile={path}", QUIET)


def daemon_options(kind: str, opts: str) -> str:
    """``opts`` (a daemon's JVM options) with its archive appended, where there is one and ``opts``
    names no archive of its own (``iterflow.app.classlist`` dumping them, or the user's)."""
    return _mapping(opts, daemon_archive_path(kind))


def _off(settings: Mapping[str, str]) -> bool:
    return str(settings.get(CONF, "true")).strip().lower() in ("false", "0", "off", "no")


def with_driver_archive(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` with the driver's options naming its archive, where there is one, the archive
    is not turned off (``CONF``) and the driver options name no archive of their own. Why: the
    driver JVM iterflow launches loads ~10,000 classes before the first superstep -- SparkContext,
    the SQL planner, codegen; mapped from the archive, ``SparkSession`` came up in 1.9 s instead
    of 3.7 s and the first job ran in 1.0 s instead of 2.1 s (local[1], two runs each). Any
    master: the driver runs on this machine in client mode. Not under spark-submit, whose
    driver JVM is started before iterflow runs (the caller's to check)."""
    opts = settings.get(DRIVER_OPTS, "")
    mapped = opts if _off(settings) else _mapping(opts, driver_archive_path())
    return settings if mapped == opts else {**settings, DRIVER_OPTS: mapped}


def _archive_for(master: str, settings: Mapping[str, str]) -> Path | None:
    """The archive a session of ``master`` with ``settings`` gets, or ``None`` (see the module doc)."""
    if _off(settings):
        return None
    opts = settings.get(OPTS, "")
    if _names_one(opts) or not master.startswith(LOCAL_MASTERS):
        return None
    path = archive_path()
    return path if path.is_file() else None


def applies(master: str, settings: Mapping[str, str]) -> bool:
    """Whether a session of ``master`` with ``settings`` gets the archive (see the module doc)."""
    return _archive_for(master, settings) is not None


def with_archive(master: str, settings: dict[str, str]) -> dict[str, str]:
    """``settings`` with the executors' options naming the archive, where it :func:`applies`."""
    path = _archive_for(master, settings)
    if path is None:
        return settings
    opts = joined(settings.get(OPTS, ""), f"-XX:SharedArchiveFile={path}")
    return {**settings, OPTS: opts}


def executor_command(stderr_text: str) -> list[str]:
    """The command line a worker started an executor with, from the ``Spark Executor Command:``
    line it writes at the top of the executor's ``stderr``."""
    m = _COMMAND.search(stderr_text)
    if not m:
        raise ClusterError("no 'Spark Executor Command:' line in the executor's stderr")
    return re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))


def build(class_list: Path, command: list[str], out: Path | None = None, timeout: float = 300) -> Path:
    """Dump the archive of ``class_list`` for the java and class path of an executor's ``command``.

    Written next to its final name and renamed into place, so a failed or interrupted dump
    never leaves an archive a JVM would try to map."""
    java = command[0]
    cp = command[command.index("-cp") + 1] if "-cp" in command else None
    if cp is None:
        raise ClusterError("the executor's command has no -cp: cannot dump its class path's archive")
    out = out or archive_path(os.path.realpath(java))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    proc = subprocess.run([java, "-Xshare:dump", f"-XX:SharedClassListFile={class_list}",
                           f"-XX:SharedArchiveFile={tmp}", "-Xlog:cds=error", "-cp", cp],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        raise ClusterError(f"java -Xshare:dump failed ({proc.returncode}): {(proc.stderr or proc.stdout)[-800:]}")
    os.replace(tmp, out)
    return out
