"""Rebalancing and logic-switch policies, driven by hand-made statistics (no Spark)."""
from __future__ import annotations

import numpy as np
import pytest

from iterflow.actuate.partitioning import BinAssignment
from iterflow.actuate.rebalance import imbalance
from iterflow.policies import LogicSwitch, Rebalancing
from iterflow.policies import StaticPolicy
from iterflow.loop.reconfig import Reconfiguration
from fakes import H


class ScaleAt:
    """Inner policy: asks for ``executors`` at superstep ``at``, otherwise keeps."""

    name = "scale"

    def __init__(self, at: int, executors: int) -> None:
        self.at, self.executors = at, executors

    def decide(self, history, model=None, *, layout=None, plan=None):
        if history[-1].superstep == self.at:
            return Reconfiguration(reason="scale", executors=self.executors)
        return Reconfiguration.none("keep")


def skewed_load(n_bins: int = 256, hot: int = 8, factor: float = 6.0) -> np.ndarray:
    load = np.ones(n_bins)
    load[:hot] = factor  # the first bins all live on partition 0 in a uniform (range) assignment
    return load


def row(i: int, assignment: BinAssignment, load: np.ndarray, executors: int = 2, **kw) -> dict:
    return {"superstep": i, "executors": executors, "_assignment": assignment, "_bin_load": load, **kw}


def run(policy, assignment: BinAssignment, load: np.ndarray, supersteps: int, **kw):
    history, decisions = [], []
    for i in range(1, supersteps + 1):
        history.append(row(i, assignment, load, **kw))
        r = policy.decide(**H(history))
        decisions.append(r)
        if r.bin_assignment is not None:
            assignment = r.bin_assignment
    return assignment, decisions


def test_rebalancing_waits_for_patience_then_moves_bins_in_batches():
    start = BinAssignment.uniform(256, 4)
    load = skewed_load()
    before = imbalance(start.partition_load(load))
    assert before > 1.2
    pol = Rebalancing(StaticPolicy(), threshold=1.2, patience=2, max_moves=2, target=1.05)
    final, decisions = run(pol, start, load, 12)
    assert decisions[0].bin_assignment is None          # one hot superstep is not enough
    assert decisions[1].bin_assignment is not None      # the second fires
    prev, moves = start, []
    for d in decisions:
        if d.bin_assignment is not None:
            moves.append(int((d.bin_assignment.owner != prev.owner).sum()))
            prev = d.bin_assignment
    assert len(moves) > 1 and max(moves) <= 2            # bounded per barrier: several batches
    after = imbalance(final.partition_load(load))
    assert after <= 1.1 < before
    assert any("plan" in d.reason for d in decisions) and any("batch applied" in d.reason for d in decisions)


def test_rebalancing_leaves_a_balanced_layout_alone():
    start = BinAssignment.uniform(256, 4)
    pol = Rebalancing(StaticPolicy())
    final, decisions = run(pol, start, np.ones(256), 6)
    assert final == start and all(d.bin_assignment is None for d in decisions)


def test_rebalancing_reports_a_hub_it_cannot_fix():
    start = BinAssignment.uniform(64, 4)
    load = np.ones(64)
    load[0] = 200.0  # one bin heavier than a partition's fair share
    final, decisions = run(Rebalancing(StaticPolicy(), patience=1), start, load, 3)
    assert any("hub bin" in d.reason for d in decisions)


def test_rescale_takes_precedence_over_a_plan():
    start = BinAssignment.uniform(256, 4)
    pol = Rebalancing(ScaleAt(at=2, executors=4), patience=1, max_moves=1)
    history = [row(1, start, skewed_load())]
    first = pol.decide(**H(history))
    assert first.bin_assignment is not None and pol.plan is not None
    history.append(row(2, first.bin_assignment, skewed_load()))
    second = pol.decide(**H(history))
    assert second.executors == 4 and second.bin_assignment is None and pol.plan is None


def test_rebalancing_needs_target_below_threshold():
    with pytest.raises(ValueError, match="hysteresis"):
        Rebalancing(StaticPolicy(), threshold=1.1, target=1.2)


def test_logic_switch_fires_once_when_the_delta_settles():
    pol = LogicSwitch(StaticPolicy(), "delta", below=1e-3)
    history, variants = [], []
    for i, delta in enumerate([0.5, 0.1, 0.01, 5e-4, 1e-4, 1e-5], start=1):
        history.append({"superstep": i, "executors": 2, "delta": delta})
        variants.append(pol.decide(**H(history)).step_variant)
    assert variants == [None, None, None, "delta", None, None]
    assert pol.switched_at == 4


def test_logic_switch_ignores_a_missing_delta():
    pol = LogicSwitch(StaticPolicy())
    assert pol.decide(**H([{"superstep": 1, "executors": 2, "delta": None}])).step_variant is None
    with pytest.raises(ValueError):
        LogicSwitch(StaticPolicy(), below=0)


def test_cli_options_wrap_the_executor_policy():
    """``--rebalance`` and ``--switch-to-delta`` wrap whatever ``--policy`` names, and the
    wrapped policy still hands its Spark settings (dynamic allocation's) to the session."""
    from iterflow.app.spec import JobSpec, policy_for

    spec = JobSpec("pagerank", "g.txt", "out", policy="dynamic-allocation", rebalance=1.3, switch_to_delta=1e-3)
    p = policy_for(spec, 4)
    assert isinstance(p, LogicSwitch) and isinstance(p.inner, Rebalancing)
    assert p.below == 1e-3 and p.inner.detector.threshold == 1.3 and p.inner.target < 1.3
    assert p.spark_conf()["spark.dynamicAllocation.enabled"] == "true"
    plain = policy_for(JobSpec("pagerank", "g.txt", "out"), 4)
    assert not isinstance(plain, (LogicSwitch, Rebalancing))
