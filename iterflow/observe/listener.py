"""Barrier statistics pushed by Spark: iterflow's own JVM ``SparkListener``.

Reading the status store at a barrier costs a py4j round trip and a JSON document per stage
(~3 ms each, 50-100 ms a superstep); the REST API ~10 ms a call. Spark's usual answer
(sparkMeasure's) is a listener the scheduler pushes task and stage events to:
``jvm/BarrierListener.java`` keeps every stage attempt's task metrics per job group, the
executors alive and removed and each RDD's stored bytes, and hands a superstep's figures over
in **one** call (:meth:`BarrierEvents.take`).

The jar is built from that one source file with ``javac`` against the pyspark jars (``make
setup`` does it; otherwise the first session that wants it, ~3 s) into the jar cache, named by
the source's hash, and loaded into the running driver JVM through a class loader of its own,
so it needs no ``spark.jars``/``--driver-class-path`` and works under ``spark-submit`` too.
Where no ``javac`` is found or the class does not load, :func:`attach` returns ``None`` and the
statistics come from the status store as before (same figures, slower barrier).
"""
from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("jvm") / "BarrierListener.java"
CLASS = "io.iterflow.BarrierListener"
#: The listener's per-stage sums, in its order (the status store's REST names).
SUM_KEYS = ("executorRunTime", "executorCpuTime", "jvmGcTime", "shuffleReadBytes", "shuffleReadRecords",
            "shuffleRemoteBytesRead", "shuffleLocalBytesRead", "shuffleWriteBytes", "shuffleWriteRecords",
            "inputRecords", "outputRecords", "memoryBytesSpilled", "diskBytesSpilled")


def spark_jars_dir() -> Path:
    """The jars the driver runs with: ``$SPARK_HOME/jars`` or pip pyspark's own."""
    import os

    import pyspark

    home = os.environ.get("SPARK_HOME")
    cands = [Path(home) / "jars"] if home else []
    cands.append(Path(pyspark.__file__).parent / "jars")
    return next((c for c in cands if c.is_dir()), cands[-1])


def jar_path() -> Path:
    from iterflow.cluster.jars import jar_dir

    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    return jar_dir() / f"iterflow-listener-{digest}.jar"


def build(dest: Path | None = None) -> Path | None:
    """The listener jar (built if missing); ``None`` with a debug note when it cannot be built."""
    dest = dest or jar_path()
    if dest.exists():
        return dest
    javac = shutil.which("javac")
    if javac is None:
        log.debug("no javac: barrier statistics from the status store")
        return None
    with tempfile.TemporaryDirectory(prefix="iterflow-javac-") as tmp:
        proc = subprocess.run([javac, "-nowarn", "-d", tmp, "-cp", str(spark_jars_dir() / "*"), str(SOURCE)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            log.warning("iterflow's listener did not compile (statistics from the status store): %s",
                        proc.stderr.strip().splitlines()[:1])
            return None
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_suffix(".part")
        with zipfile.ZipFile(part, "w") as z:
            for f in sorted(Path(tmp).rglob("*.class")):
                z.write(f, f.relative_to(tmp).as_posix())
        part.replace(dest)
    return dest


class BarrierEvents:
    """The listener attached to one SparkContext (see the module docstring)."""

    def __init__(self, sc: Any, obj: Any) -> None:
        self.sc = sc
        self.obj = obj

    def take(self, group: str, from_job: int, until_job: int, timeout_ms: int = 10_000) -> dict[str, Any]:
        """Jobs, failed jobs and stage attempts of ``group``'s jobs in ``[from_job, until_job)``,
        each stage as the status store's document (REST names) plus its ``task_rows``:
        ``[partition, run ms, cpu ns, duration ms, records read, launch ms, executor]``."""
        doc = json.loads(self.obj.take(group, int(from_job), int(until_job), int(timeout_ms)))
        if not doc["complete"]:
            log.warning("listener: not every job of %s had ended after %d ms", group, timeout_ms)
        for s in doc["stages"]:
            s.update(zip(SUM_KEYS, s.pop("sums")))
            s["task_rows"] = s.pop("tasks")  # the store's documents have a "tasks" key of their own
        return doc

    def output_rows(self, df: Any) -> int:
        """Rows ``df``'s last execution output (its plan's SQL metrics); -1 where unknown."""
        return int(self.obj.outputRows(df._jdf))

    def drop(self, group: str) -> None:
        self.obj.drop(group)

    def executors(self) -> dict[str, int]:
        """Executors alive, id -> cores."""
        text = str(self.obj.executors())
        return {i: int(c) for i, c in (x.split(":") for x in text.split(",") if x)}

    def removal_count(self) -> int:
        return int(self.obj.removalCount())

    def removals(self, start: int) -> list[tuple[str, str]]:
        """``(id, reason)`` of executors removed, the ``start``-th removal on."""
        return [(e, why) for e, why in json.loads(self.obj.removals(int(start)))]

    def rdd_bytes(self, rdd_ids: list[int]) -> float:
        arr = self.sc._gateway.new_array(self.sc._jvm.int, len(rdd_ids))
        for k, rid in enumerate(rdd_ids):
            arr[k] = int(rid)
        return float(self.obj.rddBytes(arr))


def attach(sc: Any) -> BarrierEvents | None:
    """The listener of ``sc`` (attached on first use, once per SparkContext), or ``None``."""
    cached = getattr(sc, "_iterflow_events", False)
    if cached is not False:
        return cached
    events = None
    try:
        jar = build()
        if jar is not None:
            events = _load(sc, jar)
    except Exception as exc:  # noqa: BLE001 - any failure: the status store serves instead
        log.warning("iterflow's listener not attached (statistics from the status store): %s",
                    str(exc).splitlines()[0][:200])
    sc._iterflow_events = events
    return events


def _load(sc: Any, jar: Path) -> BarrierEvents:
    from iterflow.observe.sparkinfo import StatusStore

    jvm, gw = sc._jvm, sc._gateway
    urls = gw.new_array(jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
    loader = jvm.java.net.URLClassLoader(urls, sc._jsc.sc().getClass().getClassLoader())
    cls = loader.loadClass(CLASS)
    obj = cls.getDeclaredConstructor(gw.new_array(jvm.java.lang.Class, 0)).newInstance(
        gw.new_array(jvm.java.lang.Object, 0))
    sc._jsc.sc().addSparkListener(obj)
    for e in StatusStore.of(sc).executors():  # those that registered before the listener
        if e["id"] != "driver" and e.get("isActive", True):
            obj.seed(e["id"], int(e["totalCores"]))
    return BarrierEvents(sc, obj)


if __name__ == "__main__":  # `make jars`: build it at set-up
    import sys

    built = build()
    print(built if built else "listener not built (no javac?): statistics from the status store")
    sys.exit(0)
