"""Issue 13 item 6's yardstick (``experiments/scenario_issue13.py``): the earliest finish a run
started on 1 executor can reach, from hand-made tables -- no Spark."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import scenario_issue13 as sc  # noqa: E402


def table(walls, executors=None, partitions=None, **cols) -> pd.DataFrame:
    n = len(walls)
    t = pd.DataFrame({"superstep": range(1, n + 1), "wall_seconds": walls, "barrier_seconds": [0.0] * n,
                      "executors": executors or [1] * n, "partitions": partitions or [1] * n})
    for k, v in cols.items():
        t[k] = v
    return t


def scaled(start_at: int = 2, seen_at: int = 4) -> pd.DataFrame:
    """1 -> 4 asked at barrier ``start_at``, seen registered at barrier ``seen_at`` (pending
    between), re-laid out there (5 s); 3 s supersteps at 1, a 2.5 s first one on 4, then 1 s."""
    n = 8
    walls = [3.0] * seen_at + [2.5] + [1.0] * (n - seen_at - 1)
    ex = [1] * start_at + [4] * (n - start_at)
    parts = [1] * seen_at + [4] * (n - seen_at)
    pending = [None] * n
    for b in range(start_at, seen_at):
        pending[b - 1] = 3
    relayout = [None] * n
    relayout[seen_at - 1] = 5.0
    arrived = [None] * n
    arrived[seen_at - 1] = 3
    decision = ["same"] * n
    decision[start_at - 1] = "up"
    return table(walls, ex, parts, executors_pending=pending, relayout_seconds=relayout, executors_arrived=arrived,
                 executors_requested=[4 if i >= start_at - 1 else 1 for i in range(n)], decision=decision,
                 actuation_seconds=[0.0 if i == start_at - 1 else None for i in range(n)])


def test_the_bound_charges_the_start_the_relayout_and_the_first_excess_and_credits_the_pace_at_one():
    target, static1, static4 = scaled(), table([3.0] * 8), table([1.0] * 8, [4] * 8, [4] * 8)
    parts = sc._parts(target, static1, static4)
    start = [v for k, v in parts.items() if k.startswith("executors starting")][0]
    assert start == pytest.approx(6.0)  # supersteps 3 and 4 ran while they came: the barrier saw them at 4
    assert parts["relayout"] == 5.0 and parts["first excess"] == pytest.approx(1.5)  # 2.5 s against 1 s warm
    # 6 s at static-1's 3 s a superstep: 2 of static-4's 7 later supersteps done meanwhile
    assert parts["static-4 later"] == pytest.approx(7.0 * (1 - 2 / 7))
    bound = 3.0 + 6.0 + 5.0 + 1.5 + 5.0
    assert sc.earliest_from_start(target, static1, static4) == pytest.approx(bound)
    assert sc._from_one(target, static1, static4, started=False) == pytest.approx(3.0 + 5.0 + 7.0)


def test_staying_at_one_is_the_bound_where_it_is_earlier():
    target, static4 = scaled(), table([1.0] * 8, [4] * 8, [4] * 8)
    quick1 = table([1.5] * 8)  # 12 s: no schedule through a scale-out is earlier
    assert sc.earliest_from_start(target, quick1, static4) == pytest.approx(12.0)


def test_a_run_that_never_scaled_is_bound_by_static_four_after_its_first_superstep():
    stayed, static1, static4 = table([3.0] * 8), table([3.0] * 8), table([1.0] * 8, [4] * 8, [4] * 8)
    assert sc.earliest_from_start(stayed, static1, static4) == pytest.approx(3.0 + 7.0)


def test_rescore_names_a_file_it_cannot_use(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(SystemExit, match="x.csv: not a table"):
        sc.rescore(bad, 0.1)
    with pytest.raises(SystemExit, match="missing.csv"):
        sc.rescore(tmp_path / "missing.csv", 0.1)


def test_rescore_prints_each_reps_verdict_against_both_bounds(tmp_path, capsys):
    static4 = table([1.0] * 8, [4] * 8, [4] * 8)
    runs = [scaled().assign(run="target"), table([3.0] * 8).assign(run="static-1"), static4.assign(run="static-4")]
    path = tmp_path / "s.csv"
    pd.concat(runs).assign(rep=0).to_csv(path, index=False)
    assert sc.rescore(path, 0.1) == 0
    out = capsys.readouterr().out
    job = sc.job_seconds(runs[0])  # 3 x 4 + 2.5 + 3 + 5 (relayout) + 0 (the request's actuation)
    assert f"target {job:.1f}s" in out and "earliest finish from 1 executor 20.5s" in out
    assert f"the bound to stop 62 (no executor start, no first-superstep excess) 15.0s: {job / 15:.2f}x" in out
    assert "item 6: 1 of 1 reps" in out  # 22.5 s within 10 % of 20.5 s
