"""Which executor ends the statistics call a loss (no Spark): one the driver removed is none,
whatever reason Spark gives -- a decommissioned executor exits by itself with code 0."""
from __future__ import annotations

import json
import types

from iterflow.observe.sparkinfo import removed_by_driver
from iterflow.observe.stats import StatsCollector


def collector(ends: list[tuple[str, str]]) -> StatsCollector:
    c = object.__new__(StatsCollector)  # no SparkContext: only the bookkeeping under test
    c.sc, c._gone = types.SimpleNamespace(), set()
    c._removed_executors = lambda: ends
    return c


def test_an_executor_the_driver_removed_is_not_lost_whatever_spark_says():
    c = collector([("3", "Command exited with code 0"), ("4", "Command exited with code 0"),
                   ("5", "Executor killed by driver.")])
    removed_by_driver(c.sc).add("3")  # decommissioned at a scale-in
    out = c._lost_executors()
    assert out["executors_lost"] == 1.0
    assert list(json.loads(out["executors_lost_ids"])) == ["4"]  # exited unasked: lost
    assert c._lost_executors()["executors_lost"] == 0.0  # each end counted once
