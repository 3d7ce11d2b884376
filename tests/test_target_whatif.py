"""``experiments/target_whatif.py``'s command line on bad input: one error naming what is wrong,
exit 2, nothing printed as a result (no Spark, no replay)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def whatif(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "experiments" / "target_whatif.py"), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("args, named", [
    (["--tags", "stop81g,nosuch"], "pareto_nosuch_supersteps.csv"),  # checked before any session is replayed
    (["--table", "pareto_stop81g_supersteps.csv"], "give --table and --profile, or --tags"),
    (["--tags", "stop81g", "--table", "pareto_stop81g_supersteps.csv",
      "--profile", "experiments/results/pareto_stop81g_cluster_profile.json"], "give --table and --profile, or --tags"),
    (["--tags", "stop81g", "--warm", "7"], "--warm 7: pareto_stop81g_supersteps.csv has no static run of kmeans, "
                                           "pagerank, wcc at 7 executors"),
])
def test_bad_sessions_and_options_are_named_before_anything_is_replayed(args, named):
    r = whatif(*args)
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    assert named in r.stderr and "Traceback" not in r.stderr
