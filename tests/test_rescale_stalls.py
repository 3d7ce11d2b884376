"""``experiments/rescale_stalls.py``: a rescale's barrier stall read off its run's records (no Spark)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fakes import Doubling, FakeActuator, FakeEngine, FakeModel, FakeStats, ScriptedPolicy
from iterflow.loop.driver import IterationDriver
from iterflow.loop.reconfig import Reconfiguration

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import rescale_stalls as rs  # noqa: E402


def run(plan: dict, lag: int = 2):
    engine = FakeEngine(2)
    policy = ScriptedPolicy({i: Reconfiguration("scripted", executors=n) for i, n in plan.items()})
    driver = IterationDriver(None, policy, engine=engine, stats=FakeStats(engine),
                             actuator=FakeActuator(engine, lag=lag), model=FakeModel(), partitions=2)
    return driver.run(Doubling(max_iterations=8)).records


def test_a_scale_out_that_did_not_wait_is_stalled_up_to_the_barrier_that_saw_its_executors():
    h = run({2: 4})
    k = next(i for i, r in enumerate(h) if r.decided.decision == "up")
    arrived = next(r for r in h if r.actuated.executors_arrived)
    assert arrived.actuated.relayout_seconds is not None  # the relayout onto them, at that barrier
    assert rs.stall_of(h, k) == pytest.approx(h[k].actuated.pause_seconds + arrived.actuated.pause_seconds)
    assert rs.kind(h[k]) == "scale-out"


def test_a_release_is_its_own_barrier_and_named_by_what_it_rebuilds():
    h = run({2: 1, 4: 2, 6: 1}, lag=0)
    downs = [(k, r) for k, r in enumerate(h) if r.decided.decision == "down"]
    assert [rs.kind(r) for _, r in downs] == ["release to one", "release to one"]
    assert all(rs.stall_of(h, k) == pytest.approx(r.actuated.pause_seconds) for k, r in downs)
    assert rs.kind(next(r for r in h if r.decided.decision == "up")) == "scale-out"
    other = [r for r in run({2: 4, 4: 3}, lag=0) if r.decided.decision == "down"]
    assert [rs.kind(r) for r in other] == ["other release"]
