"""Spark's own dynamic allocation as a policy: nothing to do at barriers, only Spark settings."""
from __future__ import annotations

from typing import Any

from iterflow.loop.plan import RunPlan
from iterflow.loop.reconfig import Reconfiguration
from iterflow.loop.records import Layout
from iterflow.policies.core import History, PolicyBase


class DynamicAllocationPolicy(PolicyBase):
    """Spark's own dynamic allocation, unchanged: no-op at barriers; :meth:`spark_conf` holds the
    settings the runner applies at session creation. Note that Spark keeps executors holding
    cached blocks (the local-checkpointed state) unless ``cached_executor_idle_timeout`` is set."""

    name = "dynamic-allocation"

    def __init__(self, *, min_executors: int = 1, max_executors: int | None = None,
                 cores_per_executor: int = 1, start_executors: int | None = None,
                 executor_idle_timeout: str = "60s", scheduler_backlog_timeout: str = "1s",
                 cached_executor_idle_timeout: str | None = None) -> None:
        if min_executors < 0 or (max_executors is not None and max_executors < max(min_executors, 1)):
            raise ValueError(f"need 0 <= min_executors <= max_executors (got {min_executors}, {max_executors})")
        start = min_executors if start_executors is None else start_executors
        if start < min_executors or (max_executors is not None and start > max_executors):
            raise ValueError(f"start_executors {start} is outside [{min_executors}, {max_executors}]")
        self.min_executors, self.max_executors, self.start_executors = min_executors, max_executors, start
        self.cores_per_executor = cores_per_executor
        self.executor_idle_timeout, self.scheduler_backlog_timeout = executor_idle_timeout, scheduler_backlog_timeout
        self.cached_executor_idle_timeout = cached_executor_idle_timeout
        super().__init__()

    def spark_conf(self) -> dict[str, str]:
        p = "spark.dynamicAllocation."
        conf = {p + "enabled": "true", p + "shuffleTracking.enabled": "true",
                p + "minExecutors": str(self.min_executors), p + "initialExecutors": str(self.start_executors),
                p + "executorIdleTimeout": self.executor_idle_timeout,
                p + "schedulerBacklogTimeout": self.scheduler_backlog_timeout}
        if self.max_executors is not None:
            conf[p + "maxExecutors"] = str(self.max_executors)
        if self.cached_executor_idle_timeout is not None:
            conf[p + "cachedExecutorIdleTimeout"] = self.cached_executor_idle_timeout
        return conf

    def decide(self, history: History, model: Any = None, *, layout: Layout | None = None,
               plan: RunPlan | None = None) -> Reconfiguration:
        return Reconfiguration.none("dynamic allocation: Spark adds and removes executors itself")
