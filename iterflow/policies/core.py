"""What the driver asks of a policy, and the decision log every policy keeps.

Shape after dask/distributed's ``deploy/adaptive_core.py``: a policy only *decides* (the loop
acts), and keeps a bounded log of the changes it asked for. Every policy and wrapper
(:mod:`iterflow.policies.layout`) has the same surface, so the loop never probes for methods.
"""
from __future__ import annotations

import logging
from collections import deque
from typing import Any, NamedTuple, Protocol, Sequence

from iterflow.loop.plan import RunPlan
from iterflow.loop.reconfig import Reconfiguration
from iterflow.loop.records import Layout, SuperstepRecord

logger = logging.getLogger(__name__)

History = Sequence[SuperstepRecord]
LOG_LENGTH = 1000  # entries a policy keeps (dask keeps its log in a bounded deque too)


class LogEntry(NamedTuple):
    """One decision that changed something: superstep, ``up``/``down``/``same`` for executors
    (``same`` with a partitioning or logic change) and the reason."""

    superstep: int
    decision: str
    reason: str


class Policy(Protocol):
    """Everything the loop asks of a policy."""

    name: str
    log: "deque[LogEntry]"

    def decide(self, history: History, model: Any = None, *, layout: Layout | None = None,
               plan: RunPlan | None = None) -> Reconfiguration:
        """Called after the barrier of the last superstep in ``history`` (its record has no
        decision yet); ``layout``: that superstep's bin layout observation; ``plan``: where the
        run stops (the program's bound and tolerance)."""
        ...

    def spark_conf(self) -> dict[str, str]:
        """Spark settings the session needs for this policy (dynamic allocation has some)."""
        ...

    def learn_rescales(self, history: History, scale_ins: History | None = None) -> int:
        """Learn what a rescale costs from earlier runs' records (a scale-in's from ``scale_ins``
        where given: the program's own); returns how many were seen."""
        ...

    def learn_start_delays(self, delays: Sequence[float]) -> None:
        """Learn how long this cluster takes to start an executor (seconds, measured live)."""
        ...

    def plan_start(self, past: History, model: Any, max_iterations: int | None = None) -> Any:
        """Before the first superstep of a fresh run, after the warm start from earlier runs:
        ``past``, the earlier runs this one repeats (same program and input; empty on a cold
        start, where a policy may still plan from the cluster's calibration, ``model.contention``),
        ``model`` fitted on the program's runs, ``max_iterations`` this run's bound. A ``Want`` -- the executors to
        start at instead of the configured ones, and why -- or ``None`` to start as configured."""
        ...


class PolicyBase:
    """The common surface: a name, the bounded log of changes, no Spark settings, nothing to
    learn from earlier runs. Subclasses implement :meth:`decide`."""

    name = "policy"

    def __init__(self) -> None:
        self.log: deque[LogEntry] = deque(maxlen=LOG_LENGTH)

    def spark_conf(self) -> dict[str, str]:
        return {}

    def learn_rescales(self, history: History, scale_ins: History | None = None) -> int:
        return 0

    def learn_start_delays(self, delays: Sequence[float]) -> None:
        return None

    def plan_start(self, past: History, model: Any, max_iterations: int | None = None) -> Any:
        return None

    def decide(self, history: History, model: Any = None, *, layout: Layout | None = None,
               plan: RunPlan | None = None) -> Reconfiguration:
        raise NotImplementedError

    def _logged(self, superstep: int, current: int, reconf: Reconfiguration) -> Reconfiguration:
        """Log ``reconf`` if it changes anything; every policy's decisions go through here."""
        decision = reconf.decision(current)
        layout_or_logic = (reconf.partitions, reconf.bin_assignment, reconf.step_variant) != (None,) * 3
        if decision != "same" or layout_or_logic:
            self.log.append(LogEntry(superstep, decision, reconf.reason))
        logger.info("%s policy, superstep %d: %s (%s)", self.name, superstep, decision, reconf.reason)
        return reconf


class Wrapper(PolicyBase):
    """A policy that adds to the decisions of ``inner`` (partitioning, logic); it shares the
    inner policy's Spark settings and what it learns from earlier runs."""

    def __init__(self, inner: Policy) -> None:
        super().__init__()
        self.inner = inner

    def spark_conf(self) -> dict[str, str]:
        return self.inner.spark_conf()

    def learn_rescales(self, history: History, scale_ins: History | None = None) -> int:
        return self.inner.learn_rescales(history, scale_ins=scale_ins)

    def learn_start_delays(self, delays: Sequence[float]) -> None:
        self.inner.learn_start_delays(delays)

    def plan_start(self, past: History, model: Any, max_iterations: int | None = None) -> Any:
        return self.inner.plan_start(past, model, max_iterations)


class StaticPolicy(PolicyBase):
    """Fixed executors and partitions: the baseline every adaptive policy is measured against."""

    name = "static"

    def decide(self, history: History, model: Any = None, *, layout: Layout | None = None,
               plan: RunPlan | None = None) -> Reconfiguration:
        return Reconfiguration.none("static policy: keep executors and partitions")
