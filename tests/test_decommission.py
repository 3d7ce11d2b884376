"""Scale-in with Spark's decommissioning, on in iterflow's sessions by default: the removed
executor's cached blocks move to the one that stays (with a plain kill they are lost and
recomputed from lineage).

Runs as its own application (a subprocess) against the session's cluster, because
decommissioning is a setting of the application and its executors.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.cluster

SCRIPT = r'''
import json, sys, time
from pathlib import Path
from iterflow.actuate.executors import ExecutorActuator
from iterflow.cluster.session import build_session
from iterflow.observe.sparkinfo import rest_get

spark = build_session(sys.argv[1], 2, {  # iterflow's default settings: decommissioning on
    "spark.cores.max": "2", "spark.executor.cores": "1", "spark.app.name": "iterflow-decommission-test"},
    work_dir=Path(sys.argv[2]))
sc = spark.sparkContext
try:
    act = ExecutorActuator(sc, register_timeout=60)
    act.set_executors(2)
    df = spark.range(0, 400_000, numPartitions=8).selectExpr("id", "id * 2 as v").cache()
    df.count()
    holders = sorted(e["id"] for e in rest_get(sc, "executors") if e["id"] != "driver" and e["memoryUsed"] > 0)
    a = act.set_executors(1)
    cached = []
    for _ in range(40):  # the status store hears of the migrated blocks shortly after
        cached = [r["numCachedPartitions"] for r in rest_get(sc, "storage/rdd")]
        if cached and cached[0] == 8:
            break
        time.sleep(0.25)
    print(json.dumps({"decommissions": act.decommissions, "holders": holders, "active": a.active,
                      "removed": list(a.removed), "cached_after": cached, "count": df.count()}))
finally:
    spark.stop()
'''


def test_scale_in_decommissions_and_keeps_cached_blocks(cluster, tmp_path):
    out = subprocess.run([sys.executable, "-c", SCRIPT, cluster.master_url, str(tmp_path / "driver")],
                         capture_output=True, text=True,
                         cwd=ROOT, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["decommissions"] is True
    assert len(r["holders"]) == 2, f"precondition: blocks on both executors ({r})"
    assert r["active"] == 1 and len(r["removed"]) == 1
    # all 8 cached partitions survive on the executor that stays: the removed one's moved
    assert r["cached_after"] == [8], r
    assert r["count"] == 400_000
