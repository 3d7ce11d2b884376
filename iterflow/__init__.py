"""iterflow: iterative dataflow on Apache Spark that adapts its resources at superstep barriers.

One superstep, in reading order (one folder a stage)::

    loop/       driver (the order of a superstep) -> program contract, run plan, records
      observe/  statistics of the superstep's Spark jobs
      model/    the resource model: superstep time at other scale-outs
      policies/ decide a Reconfiguration (static, target, efficiency, fastest, ...)
      actuate/  executors; bins -> partitions (minimal movement, hot bins)
    faults/     recovery from lost executors, resume after a lost driver
    cluster/    the embedded standalone cluster, session, auth, CPU share, watchdog, jars
    inputs/     graph and point readers, generators
    app/        CLI, runner, progress line, report, MLflow tracking

The loop (:class:`~iterflow.loop.driver.IterationDriver`) is handed its collaborators through
the ports of :mod:`iterflow.loop.ports` and keeps one typed record per superstep
(:mod:`iterflow.loop.records`).
"""
from __future__ import annotations

__version__ = "0.1.0"

from iterflow.loop.driver import IterationDriver, RunResult  # noqa: E402
from iterflow.loop.program import IterativeProgram, State  # noqa: E402
from iterflow.loop.reconfig import Reconfiguration  # noqa: E402
from iterflow.loop.records import SuperstepRecord  # noqa: E402

__all__ = ["IterativeProgram", "State", "IterationDriver", "RunResult", "Reconfiguration", "SuperstepRecord",
           "__version__"]
