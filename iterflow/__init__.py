"""iterflow: iterative dataflow on Apache Spark that adapts its resources at superstep barriers.

The superstep path, in reading order: :mod:`iterflow.driver` (the loop) ->
:mod:`iterflow.policy` (decides a :class:`~iterflow.reconfig.Reconfiguration`) ->
:mod:`iterflow.cluster` (the Spark cluster the run lives on).
"""
from __future__ import annotations

__version__ = "0.1.0"

from iterflow.program import IterativeProgram, State  # noqa: E402
from iterflow.driver import IterationDriver, RunResult  # noqa: E402
from iterflow.reconfig import Reconfiguration  # noqa: E402

__all__ = ["IterativeProgram", "State", "IterationDriver", "RunResult", "Reconfiguration", "__version__"]
