"""What a cold-start ``target`` could reach at best (``experiments/cold_start_bound.py``,
``pareto_bounds.target_reach``), on hand-made superstep times and tables: no Spark."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

from cold_start_bound import release_spread  # noqa: E402
from pareto_bounds import goal_count, target_reach  # noqa: E402

# six supersteps at 1, 2 and 3 executors: 3 the fastest, 1 the cheapest
T = np.array([[2.0] * 6, [1.2] * 6, [1.0] * 6])
SIZES = [1, 2, 3]
PRICED = dict(up=9.0, down=3.0, light=0.2)


def test_a_start_below_the_size_a_target_needs_cannot_reach_it_when_a_scale_out_does_not_pay():
    """A 6.5 s target: static-3 meets it (6 s), a run started at 2 would have to scale out (+9 s):
    out of reach from 2, met from 3 (the cheapest way: 3 throughout, or 3 then a light release
    that still ends in time)."""
    from_two = target_reach([6.5], SIZES, T, dict(start=2, **PRICED))
    from_three = target_reach([6.5], SIZES, T, dict(start=3, **PRICED))
    assert from_two == [(False, pytest.approx(np.nan, nan_ok=True))]
    assert from_three[0][0] and from_three[0][1] <= 1.0 + 1e-9
    assert goal_count(from_two) == 0 and goal_count(from_three) == 1


def test_a_safety_is_time_the_schedule_must_leave_before_the_target():
    """A loose 11 s target (static-1 takes 12 s: no static size but 2 and 3 meets it; the cheapest
    is 2, 14.4 executor-s): from 3 the best schedule releases to 1 early -- cheaper than static-2
    -- and ends near the bound; made to end 20 % earlier, it releases later and pays more than
    static-2; asked to end before even 3 throughout can, it has none."""
    (ok0, r0), = target_reach([11.0], SIZES, T, dict(start=3, **PRICED))
    (ok1, r1), = target_reach([11.0], SIZES, T, dict(start=3, **PRICED), safety=0.2)
    assert ok0 and ok1 and r0 < 1.0 < r1
    (ok2, _), = target_reach([11.0], SIZES, T, dict(start=3, **PRICED), safety=0.6)  # 7.2 s: 3 throughout takes 6
    (ok3, _), = target_reach([11.0], SIZES, T, dict(start=3, **PRICED), safety=1.0)  # 5.8 s: nothing ends by it
    assert ok2 and not ok3


def test_a_release_spread_reads_the_last_release_of_each_run_against_its_real_rest():
    """One run released at barrier 2 (elapsed 2 s, predicted finish 8 s, target 10 s) and really
    ended at 11 s: its rest came 9 / 6 = 1.5x the prediction, the safety kept (10 - 2) / 6. A run
    whose release a scale-out undid has none."""
    def run(rid: str, walls: list[float], decisions: list[tuple[str, str]]) -> list[dict]:
        return [{"run_id": rid, "superstep": i + 1, "wall_seconds": w, "barrier_seconds": 0.0,
                 "decision": d, "reason": why, "target_seconds": 10.0}
                for i, (w, (d, why)) in enumerate(zip(walls, decisions))]
    released = ("down", "predicted finish 9.0s ... (elapsed 2.0s, ...); comfortably ahead: 1 executors finish 8.0s")
    rows = run("a", [1.0, 1.0, 4.5, 4.5], [("same", "warm-up"), released, ("same", "keep"), ("same", "keep")])
    rows += run("b", [1.0, 1.0, 4.0, 4.0], [("same", "warm-up"), released, ("up", "behind"), ("same", "keep")])
    (rest, kept), = release_spread(pd.DataFrame(rows))
    assert rest == pytest.approx(9.0 / 6.0) and kept == pytest.approx(8.0 / 6.0)
