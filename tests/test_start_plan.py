"""A policy's start size planned from earlier runs, before the first superstep (no Spark): the
fastest policy starts where its plan within the budget starts, the driver asks before the input
is loaded, and a wrapper passes the warm start through."""
from __future__ import annotations

import numpy as np
import pytest

from fakes import Doubling, FakeActuator, FakeEngine, FakeModel, FakeStats, ScriptedPolicy
from iterflow.loop.driver import IterationDriver
from iterflow.loop.records import records
from iterflow.policies import FastestPolicy, Rebalancing, TargetPolicy, Want
from iterflow.policies.rules import fastest_plan, last_run


class Linear:
    """A fitted model: ``a + b·work/executors`` seconds (a fixed part no executor shortens)."""

    X_ = np.zeros((1, 2))
    error_estimate_ = 0.05

    def __init__(self, a: float, b: float) -> None:
        self.a, self.b = a, b

    def predict_seconds(self, scale_out: float, work: float = 1.0) -> float:
        return self.a + self.b * work / scale_out


def past_run(works, executors: int = 1, model: Linear | None = None, first: int = 1) -> list[dict]:
    m = model or Linear(0.5, 0.01)
    return [{"superstep": first + i, "executors": executors, "cores": executors, "work": w,
             "wall_seconds": m.predict_seconds(executors, w)} for i, w in enumerate(works)]


SHRINKING = [1000.0, 800.0, 400.0, 100.0, 10.0, 5.0, 2.0, 1.0]  # WCC: the work is in the first supersteps


def test_fastest_starts_where_its_plan_within_the_budget_starts():
    """Shrinking work and a fixed 0.5 s a superstep: 2 executors cost little more than 1 where the
    work is large, so 1.2x the baseline's executor-seconds buys a start at more than 1 -- and the
    plan ends at 1, where the work is gone."""
    m = Linear(0.5, 0.01)
    past = records(past_run(SHRINKING, model=m))
    p = FastestPolicy(1, budget=1.2, max_executors=4)
    want = p.plan_start(past, m)
    assert isinstance(want, Want) and want.executors > 1, want
    assert "planned as a repeat of the last run (8 supersteps" in want.reason and want.reason.endswith("..1")
    # the plan it started from keeps the budget it was given
    E = np.arange(1, 5)
    S = np.array([[m.predict_seconds(e, w) for w in SHRINKING] for e in E])
    base = float(S[0].sum())
    k, _, cost = fastest_plan(S, E, np.ones(len(SHRINKING)), p._within_margin(S, E, np.ones(len(SHRINKING)), 1.2 * base))
    assert int(E[k[0]]) == want.executors and cost <= 1.2 * base


def test_fastest_keeps_its_baseline_start_when_the_budget_buys_nothing():
    m = Linear(0.5, 0.01)
    past = records(past_run(SHRINKING, model=m))
    assert FastestPolicy(1, budget=1.0, max_executors=4).plan_start(past, m) is None  # 1x: only the baseline fits
    flat = records(past_run([10.0] * 8, model=m))  # tiny flat work: a second executor doubles the cost
    assert FastestPolicy(1, budget=1.2, max_executors=4).plan_start(flat, m) is None


def test_no_start_plan_without_an_earlier_run_or_a_fitted_model():
    m = Linear(0.5, 0.01)
    p = FastestPolicy(1, budget=1.2, max_executors=4)
    assert p.plan_start([], m) is None
    assert p.plan_start(records(past_run(SHRINKING, model=m)), None) is None

    class Unfitted:
        def predict_seconds(self, scale_out, work=1.0):  # pragma: no cover - must not be asked
            raise AssertionError("an unfitted model must not be asked")
    assert p.plan_start(records(past_run(SHRINKING, model=m)), Unfitted()) is None
    # the other policies start as configured
    assert TargetPolicy(30, max_executors=4).plan_start(records(past_run(SHRINKING)), m) is None


def test_the_plan_is_the_last_runs_not_all_of_them():
    """Two earlier runs concatenated: the plan repeats the last one (a flat one here, which buys
    nothing), not the first (shrinking)."""
    m = Linear(0.5, 0.01)
    runs = records(past_run(SHRINKING, model=m) + past_run([10.0] * 5, model=m))
    assert [r.superstep for r in last_run(runs)] == [1, 2, 3, 4, 5]
    assert FastestPolicy(1, budget=1.2, max_executors=4).plan_start(runs, m) is None
    assert len(last_run(records(past_run(SHRINKING)))) == 8 and last_run([]) == []


def test_the_driver_starts_at_the_policys_planned_size_before_the_input_is_loaded():
    past = past_run([100.0] * 4)
    policy = ScriptedPolicy(start=Want(3, "start at 3: planned"))
    engine = FakeEngine(1)
    driver = IterationDriver(None, policy, engine=engine, stats=FakeStats(engine), actuator=FakeActuator(engine),
                             model=FakeModel(), partitions=4, start_executors=1, past=past)
    res = driver.run(Doubling(max_iterations=2))
    assert ("executors", 1) not in engine.events  # the configured size is never asked for
    assert engine.events.index(("executors", 3)) < engine.events.index(("group", "init"))
    assert driver.start_reason == "start at 3: planned" and res.records[0].executors == 3
    seen, model = policy.planned_from
    assert [r.superstep for r in seen] == [1, 2, 3, 4] and model is driver.model and model.batches == 1
    assert len(policy.learned) == 1  # the warm start ran once, before the plan


def test_the_driver_asks_for_no_plan_without_earlier_runs():
    policy = ScriptedPolicy(start=Want(3, "never asked"))
    engine = FakeEngine(1)
    driver = IterationDriver(None, policy, engine=engine, stats=FakeStats(engine), actuator=FakeActuator(engine),
                             model=FakeModel(), partitions=4, start_executors=2)
    driver.run(Doubling(max_iterations=2))
    assert policy.planned_from is None and ("executors", 2) in engine.events and driver.start_reason is None


def test_a_wrapper_passes_the_warm_start_and_the_start_plan_through():
    """Rebalancing around a policy: the release price from the program's own runs (``scale_ins``)
    and the start plan reach the inner policy (the wrapper used to drop ``scale_ins``: a run with
    --rebalance and earlier runs in the store failed at its start)."""
    m = Linear(0.5, 0.01)
    past = records(past_run(SHRINKING, model=m))
    inner = FastestPolicy(1, budget=1.2, max_executors=4)
    wrapped = Rebalancing(inner)
    assert wrapped.learn_rescales(past, scale_ins=past) == inner.learn_rescales(past, scale_ins=past)
    assert wrapped.plan_start(past, m) == inner.plan_start(past, m)
    assert wrapped.plan_start(past, m) is not None


@pytest.mark.parametrize("budget", [1.2, 1.5, 2.0])
def test_the_plan_never_exceeds_its_budget(budget):
    rng = np.random.default_rng(int(budget * 10))
    E = np.arange(1, 9)
    works = rng.uniform(1, 1000, 20)
    S = np.array([[0.3 + 0.02 * w / e for w in works] for e in E])
    base = float(S[0].sum())
    _, t, c = fastest_plan(S, E, np.ones(works.size), budget * base)
    assert c <= budget * base * (1 + 1e-6) and t <= base + 1e-9
