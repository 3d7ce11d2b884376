"""Barrier statistics pushed by Spark: iterflow's own JVM ``SparkListener``.

Reading the status store at a barrier costs a py4j round trip and a JSON document per stage
(~3 ms each, 50-100 ms a superstep); the REST API ~10 ms a call. Spark's usual answer
(sparkMeasure's) is a listener the scheduler pushes task and stage events to:
``iterflow/jvm/BarrierListener.java`` keeps every stage attempt's task metrics per job group, the
executors alive and removed and each RDD's stored bytes, and hands a superstep's figures over
in **one** call (:meth:`BarrierEvents.take`).

The class is built and loaded by :mod:`iterflow.jvm` into the driver only. Where it cannot be
(no ``javac``, the class does not load), :func:`attach` returns ``None`` and the statistics come
from the status store as before (same figures, slower barrier).
"""
from __future__ import annotations

import json
import logging
from typing import Any

from iterflow.jvm import load_class, new

log = logging.getLogger(__name__)

#: The listener's per-stage sums, in its order (the status store's REST names).
SUM_KEYS = ("executorRunTime", "executorCpuTime", "jvmGcTime", "shuffleReadBytes", "shuffleReadRecords",
            "shuffleRemoteBytesRead", "shuffleLocalBytesRead", "shuffleWriteBytes", "shuffleWriteRecords",
            "inputRecords", "outputRecords", "memoryBytesSpilled", "diskBytesSpilled")


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
        cls = load_class(sc, "BarrierListener")
        if cls is not None:
            events = _attach(sc, new(sc, cls))
    except Exception as exc:  # noqa: BLE001 - any failure: the status store serves instead
        log.warning("iterflow's listener not attached (statistics from the status store): %s",
                    str(exc).splitlines()[0][:200])
    sc._iterflow_events = events
    return events


def _attach(sc: Any, obj: Any) -> BarrierEvents:
    from iterflow.observe.sparkinfo import StatusStore

    sc._jsc.sc().addSparkListener(obj)
    for e in StatusStore.of(sc).executors():  # those that registered before the listener
        if e["id"] != "driver" and e.get("isActive", True):
            obj.seed(e["id"], int(e["totalCores"]))
    return BarrierEvents(sc, obj)
