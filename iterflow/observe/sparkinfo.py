"""What the running Spark application has right now: executors, stages, tasks, cached RDDs.

Read from Spark's own status store (``AppStatusStore``, the data behind the UI and its REST
API) over py4j, each object serialized by Jackson with Scala support as the REST API does:
the same JSON documents as ``/api/v1/applications/<id>/...``, so the figures are the ones a
user sees in the UI, for ~3 ms a stage instead of ~10 ms an HTTP call
(:class:`StatusStore`). :func:`rest_get` stays for checks from outside the framework.
"""
from __future__ import annotations

import bisect
import json
import logging
import urllib.request
from typing import Any

from py4j.protocol import Py4JError

from iterflow.loop.ports import ExecutorSnapshot

log = logging.getLogger(__name__)


class StatusStore:
    """This application's status store as REST-shaped JSON (see the module docstring)."""

    def __init__(self, sc: Any) -> None:
        jvm = sc._jvm
        self.sc = sc
        self.store = sc._jsc.sc().statusStore()
        scala = getattr(getattr(jvm.com.fasterxml.jackson.module.scala, "DefaultScalaModule$"), "MODULE$")
        self.mapper = jvm.com.fasterxml.jackson.databind.ObjectMapper().registerModule(scala)
        self._no_quantiles = sc._gateway.new_array(jvm.double, 0)
        self._all_statuses = jvm.java.util.ArrayList()  # no filter on task status

    @classmethod
    def of(cls, sc: Any) -> "StatusStore":
        """The store of ``sc`` (made once per SparkContext)."""
        cached = getattr(sc, "_iterflow_status", None)
        if cached is None:
            cached = cls(sc)
            sc._iterflow_status = cached
        return cached

    def _json(self, obj: Any) -> Any:
        return json.loads(self.mapper.writeValueAsString(obj))

    def stage(self, stage_id: int) -> list[dict[str, Any]]:
        """Every attempt of stage ``stage_id`` (REST ``stages/<id>?details=false``); [] if unknown."""
        try:
            return self._json(self.store.stageData(int(stage_id), False, self._all_statuses, False,
                                                   self._no_quantiles))
        except Py4JError:  # NoSuchElementException: never ran, or evicted from the store
            return []

    def tasks(self, stage_id: int, attempt: int, limit: int = 100_000) -> list[dict[str, Any]]:
        """Tasks of one stage attempt (REST ``stages/<id>/<attempt>/taskList``)."""
        try:
            return self._json(self.store.taskList(int(stage_id), int(attempt), int(limit)))
        except Py4JError:
            return []

    def executors(self, active_only: bool = True) -> list[dict[str, Any]]:
        """Executors, the driver included (REST ``executors``, or ``allexecutors``)."""
        return self._json(self.store.executorList(bool(active_only)))

    def rdd(self, rdd_id: int) -> dict[str, Any] | None:
        """A cached or checkpointed RDD's storage (REST ``storage/rdd/<id>``); None if not stored."""
        try:
            return self._json(self.store.rdd(int(rdd_id)))
        except Py4JError:
            return None


def rest_get(sc: Any, path: str, timeout: float = 5.0) -> Any:
    """GET ``/api/v1/applications/<app>/<path>`` from this application's driver UI."""
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/{path}"
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.load(resp)


def leaving(sc: Any) -> set[str]:
    """Executors the driver asked to remove that may still be listed: a scale-in does not wait
    for their JVMs to exit (or their blocks to migrate), and Spark offers them no task once
    asked, so a snapshot does not count them. Pruned as they leave the status store."""
    return _app_set(sc, "_iterflow_leaving")


def removed_by_driver(sc: Any) -> set[str]:
    """Every executor of this application the driver asked to remove (killed or decommissioned),
    never pruned: its end is not a loss, whatever reason Spark gives for it -- a decommissioned
    executor exits by itself ("Command exited with code 0"), only a killed one is "killed by
    driver"."""
    return _app_set(sc, "_iterflow_removed")


def _app_set(sc: Any, attr: str) -> set[str]:
    """A set of executor ids kept on the SparkContext: one per application, shared by every
    actuator and statistics collector of it."""
    ids = getattr(sc, attr, None)
    if ids is None:
        ids = set()
        setattr(sc, attr, ids)
    return ids


def scale_out_requests(sc: Any) -> list[tuple[float, int]]:
    """``(epoch seconds, executors asked)`` of each scale-out requested through iterflow in this
    application, in order (:func:`executor_start_delays` pairs executors with them)."""
    times = getattr(sc, "_iterflow_scale_outs", None)
    if times is None:
        times = sc._iterflow_scale_outs = []
    return times


def executor_start_delays(sc: Any, bound: float) -> list[float]:
    """Seconds each executor started by a scale-out of this application took to register after
    the request (its ``addTime`` in the status store, dead executors included, against the
    latest request before it; at most ``bound``). How long this cluster takes to start an
    executor, measured live, before any run's records hold one. The application's start-up
    executors are left out: they register after the driver's own start-up (12.6 s here against
    4.3 s for a scale-out of the same session), which no later scale-out pays."""
    asked = sorted(t for t, _ in scale_out_requests(sc))
    if not asked:
        return []
    try:
        rows = StatusStore.of(sc).executors(active_only=False)
    except Py4JError as exc:
        log.debug("executor query failed: %s", exc)
        return []
    delays = []
    for e in rows:
        added = e.get("addTime")
        if e["id"] == "driver" or not isinstance(added, (int, float)):
            continue
        added /= 1000.0  # epoch milliseconds (a java.util.Date as Jackson writes it)
        k = bisect.bisect_right(asked, added)  # the latest request at or before it
        if k and added - asked[k - 1] <= bound:
            delays.append(added - asked[k - 1])
    return delays


def executor_snapshot(sc: Any, count_leaving: bool = False) -> ExecutorSnapshot:
    """Active executors (the driver excluded) and their total cores; without those being
    removed (:func:`leaving`) unless ``count_leaving`` (to wait for them to be gone)."""
    going = leaving(sc)
    try:
        rows = [e for e in StatusStore.of(sc).executors() if e["id"] != "driver" and e.get("isActive", True)]
        going.intersection_update(e["id"] for e in rows)
        rows = [e for e in rows if count_leaving or e["id"] not in going]
        return ExecutorSnapshot(len(rows), sum(int(e["totalCores"]) for e in rows),
                                tuple(sorted(e["id"] for e in rows)))
    except Py4JError as exc:  # the store is unreachable: fall back to the scheduler's view
        log.debug("executor query failed: %s", exc)
    listed = str(sc._jsc.sc().getExecutorIds().mkString(","))  # a Scala Seq: not iterable from py4j
    ids = tuple(sorted(x for x in listed.split(",") if x and (count_leaving or x not in going)))
    per = int(sc.getConf().get("spark.executor.cores", "1"))
    return ExecutorSnapshot(len(ids), per * len(ids), ids)
