"""Extra options for every Spark JVM iterflow launches, from ``ITERFLOW_JVM_OPTS``.

Why a knob of its own: the JIT decides how long a short job's first Spark jobs take. With C1
only (``ITERFLOW_JVM_OPTS=-XX:TieredStopAtLevel=1``) a 14-superstep PageRank on a Graphalytics
test graph ran end to end (embedded cluster started, input loaded, output written) in 34-39 s
against 57-69 s with the JVM's default tiered JIT (stop 34, this 2-core machine): C2's compile
threads compete with the tasks for the same cores and rarely pay back within a short run. The
test suite sets it (``tests/conftest.py``); long runs on real clusters are better off without.

It reaches the embedded cluster's master and workers, the driver JVM iterflow launches, the
executors (where ``--conf spark.executor.extraJavaOptions`` does not set theirs) and the
spark-submit properties file ``iterflow cluster start`` writes (the options of that moment). The
executors' options are part of the cluster's key for what runs learn
(:func:`iterflow.app.runner.cluster_key`): another JIT is another cluster to the model. JIT and
GC flags only: Spark refuses heap sizes (``-Xmx``, ``-Xms``: ``spark.driver.memory``,
``spark.executor.memory``) and Spark settings (``-Dspark.``: ``--conf``) in these options, and a
driver JVM that exits at launch says little why -- so they are refused here, by name.
"""
from __future__ import annotations

import os

from iterflow.errors import InputError

ENV = "ITERFLOW_JVM_OPTS"
REFUSED = {"-Xmx": "spark.driver.memory / spark.executor.memory", "-Xms": "spark.driver.memory / spark.executor.memory",
           "-Dspark.": "--conf spark.KEY=VALUE"}


def extra_jvm_opts() -> str:
    """The options ``ITERFLOW_JVM_OPTS`` gives, stripped ("" when unset); one Spark refuses in
    a driver's or executors' options is an :class:`~iterflow.errors.InputError`."""
    opts = os.environ.get(ENV, "").strip()
    for word in opts.split():
        for prefix, instead in REFUSED.items():
            if word.startswith(prefix):
                raise InputError(f"{ENV}: {word!r} is not a JIT or GC flag Spark accepts in a JVM's "
                                 f"extra options; use {instead}")
    return opts


def joined(*parts: str) -> str:
    """JVM option strings joined by single spaces, empty parts dropped."""
    return " ".join(p.strip() for p in parts if p and p.strip())
