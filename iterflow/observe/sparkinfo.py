"""What the running Spark application has right now: executors and their cores.

Read from the driver UI's REST API (``/api/v1/applications/<id>/executors``), Spark's own
monitoring, so the figures are the ones a user sees in the UI.
"""
from __future__ import annotations

import json
import logging
import urllib.request
from typing import Any

from iterflow.loop.ports import ExecutorSnapshot

log = logging.getLogger(__name__)



def rest_get(sc: Any, path: str, timeout: float = 5.0) -> Any:
    """GET ``/api/v1/applications/<app>/<path>`` from this application's driver UI."""
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/{path}"
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.load(resp)


def executor_snapshot(sc: Any) -> ExecutorSnapshot:
    """Active executors (the driver excluded) and their total cores."""
    if sc.uiWebUrl:
        try:
            rows = [e for e in rest_get(sc, "executors") if e["id"] != "driver" and e.get("isActive", True)]
            return ExecutorSnapshot(len(rows), sum(int(e["totalCores"]) for e in rows),
                                    tuple(sorted(e["id"] for e in rows)))
        except OSError as exc:  # UI momentarily unavailable: fall back to the JVM view
            log.debug("executor REST query failed: %s", exc)
    listed = str(sc._jsc.sc().getExecutorIds().mkString(","))  # a Scala Seq: not iterable from py4j
    ids = tuple(sorted(x for x in listed.split(",") if x))
    per = int(sc.getConf().get("spark.executor.cores", "1"))
    return ExecutorSnapshot(len(ids), per * len(ids), ids)
