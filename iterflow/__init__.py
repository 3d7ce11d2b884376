"""iterflow: iterative dataflow on Apache Spark that adapts its resources at superstep barriers.

The superstep path, in reading order: :mod:`iterflow.loop.driver` (the loop) ->
:mod:`iterflow.policies.registry` (decides a :class:`~iterflow.loop.reconfig.Reconfiguration`) ->
:mod:`iterflow.cluster.local` (the Spark cluster the run lives on).
"""
from __future__ import annotations

__version__ = "0.1.0"

from iterflow.loop.program import IterativeProgram, State  # noqa: E402
from iterflow.loop.driver import IterationDriver, RunResult  # noqa: E402
from iterflow.loop.reconfig import Reconfiguration  # noqa: E402

__all__ = ["IterativeProgram", "State", "IterationDriver", "RunResult", "Reconfiguration", "__version__"]
