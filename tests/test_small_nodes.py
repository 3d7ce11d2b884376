"""An emulated node capped below one core: its JVMs compile with C1 only (no Spark)."""
from __future__ import annotations

from iterflow.cluster.local import SMALL_NODE_JVM, worker_java_tool_options


def test_only_a_worker_capped_below_one_core_compiles_with_c1_only():
    assert worker_java_tool_options(0.5, capped=True) == SMALL_NODE_JVM
    assert worker_java_tool_options(0.5, capped=True, inherited="-Xss4m") == f"-Xss4m {SMALL_NODE_JVM}"
    assert worker_java_tool_options(0.5, capped=False, inherited="-Xss4m") == "-Xss4m"  # quota not applied
    assert worker_java_tool_options(1.0, capped=True) is None
    assert worker_java_tool_options(None, capped=False) is None
