"""A run that repeats an earlier one forecasts each superstep as the earlier run measured it
(no Spark): the model predicts from the work, and where a superstep's seconds do not follow its
work (a checkpoint, a state larger than the work) the earlier run's measured over predicted
seconds carry to every size."""
from __future__ import annotations

import numpy as np
import pytest

from fakes import H
from iterflow.loop.plan import RunPlan
from iterflow.loop.records import records
from iterflow.policies import FastestPolicy
from iterflow.policies.forecast import forecast, measured, repeated
from iterflow.policies.predictor import REPEAT_RATIO, Predictor
from policy_fakes import FakeModel, row

M = FakeModel(1.0, 0.01)  # 1 s outside tasks + work / cores


def earlier(executors: int = 4, spikes: dict[int, float] | None = None, n: int = 8) -> list:
    """An earlier run at ``executors``: each superstep as the model reads it, times ``spikes[i]``
    (superstep i, 1-based: a checkpoint's seconds that its work does not say)."""
    return records([row(i, executors, M.predict_seconds(executors, 400.0) * (spikes or {}).get(i, 1.0), 400.0)
                    for i in range(1, n + 1)])


def test_measured_keeps_steady_supersteps_only():
    run = records([row(1, 4, 2.0, 400.0), row(2, 4, 2.0, 400.0), row(3, 2, 3.0, 400.0), row(4, 2, 3.1, 0.0)])
    got = measured(run)
    assert got.shape == (3, 4)
    assert list(got[0, :2]) == [2.0, 2.0] and list(got[1, :2]) == [4.0, 4.0]
    assert np.isnan(got[0, 2]) and got[1, 2] == 2.0  # the first at a new size: cold, priced apart
    assert np.isnan(got[0, 3]) and np.isnan(got[1, 3])  # no work: nothing to carry


def test_a_repeat_forecasts_a_checkpoint_at_every_size():
    """Superstep 6 of the earlier run (at 4 executors) ran 3x what its work says: at a barrier
    before it the forecast reads it 3x at 1, 2 and 4 executors; the others as the model."""
    past = earlier(spikes={6: 3.0})
    hist = records([row(i, 2, M.predict_seconds(2, 400.0), 400.0, delta=100.0) for i in range(1, 4)])
    fc = forecast(hist, RunPlan(None, 0.5, 5), repeat=[400.0] * 8, past=measured(past))  # converges: a guess
    assert fc.remaining == 5 and fc.past is not None
    pred = Predictor(hist, M, 1.0)
    plain, carried = pred.seconds([1, 2, 4], fc.works), pred.forecast_seconds([1, 2, 4], fc)
    np.testing.assert_allclose(carried[:, 2], 3.0 * plain[:, 2])  # superstep 6: the 3rd left after barrier 3
    np.testing.assert_allclose(np.delete(carried, 2, axis=1), np.delete(plain, 2, axis=1))
    # where nothing is repeated, the model alone
    alone = forecast(hist, RunPlan(None, 0.5, 5))
    assert alone.past is None
    np.testing.assert_allclose(pred.forecast_seconds([1, 2, 4], alone), pred.seconds([1, 2, 4], alone.works))


def test_one_stalled_superstep_counts_at_most_repeat_ratio():
    past = earlier(spikes={2: 50.0})
    fc = repeated(np.full(8, 400.0), measured(past), "a repeat")
    pred = Predictor(past, M, 1.0)
    ratio = pred.forecast_seconds([4], fc)[0] / pred.seconds([4], fc.works)[0]
    assert ratio[1] == pytest.approx(REPEAT_RATIO) and ratio[0] == pytest.approx(1.0)


def test_a_repeat_longer_than_the_earlier_run_carries_nothing_past_its_end():
    fc = repeated(np.full(10, 400.0), measured(earlier(spikes={8: 2.0})), "a repeat")
    pred = Predictor(earlier(), M, 1.0)
    ratio = pred.forecast_seconds([4], fc)[0] / pred.seconds([4], fc.works)[0]
    assert ratio[7] == pytest.approx(2.0) and list(ratio[8:]) == pytest.approx([1.0, 1.0])


def test_fastest_budgets_the_baseline_as_the_earlier_run_ran():
    """The earlier run at the baseline (4) checkpointed at superstep 6 (3x its work's seconds) and
    converged after 8: fastest's budget for the rest is that run's own seconds, not the work's
    (a run of a known count forecasts as before: its supersteps' work is no repeat's)."""
    past = earlier(spikes={6: 3.0})
    p = FastestPolicy(4, max_executors=8, tol=0.5, warmup=0)
    p.plan_start(past, M)
    hist = [row(i, 4, M.predict_seconds(4, 400.0), 400.0, delta=100.0) for i in range(1, 4)]
    reason = p.decide(**H(hist, M)).reason
    rest = sum(r.wall_seconds for r in past[3:])
    assert f"baseline 4: {rest:.1f}s x 4" in reason, reason


def _budget(reason: str) -> float:
    return float(reason.split("executor-second budget ")[1].split()[0])


@pytest.mark.parametrize("level", [0.8, 1.25])
def test_fastest_budget_is_at_most_what_the_baseline_run_measured(level):
    """The store holds a static-1 run of this input that ran ``level`` times what the model reads
    (and a static-4 run after it, the repeat's): where the baseline ran faster than predicted
    (0.8) the budget is 1.2x its measured executor-seconds less what was spent, and says so; where
    it ran slower (1.25) the prediction is the smaller and stays the budget."""
    works = [4000.0] * 8
    static1 = [row(i + 1, 1, M.predict_seconds(1, w) * level, w) for i, w in enumerate(works)]
    static4 = [row(i + 1, 4, M.predict_seconds(4, w), w) for i, w in enumerate(works)]
    past = records(static1 + static4)
    p = FastestPolicy(1, budget=1.2, max_executors=4, max_iterations=8, warmup=0, start_executors=2)
    p.plan_start(past, M, max_iterations=8)
    assert p.baseline_run.supersteps == 8
    assert p.baseline_run.executor_seconds == pytest.approx(sum(r.wall_seconds for r in past[:8]))
    hist = [row(i + 1, 2, M.predict_seconds(2, w), w) for i, w in enumerate(works[:2])]
    reason = p.decide(**H(hist, M)).reason
    spent = sum(r["wall_seconds"] * 2 for r in hist)
    measured = 1.2 * p.baseline_run.executor_seconds - spent
    if level < 1:
        assert "an earlier run at 1 measured" in reason, reason
        assert _budget(reason) == pytest.approx(measured, abs=0.5)
    else:
        assert "measured" not in reason, reason
        assert _budget(reason) < measured


def test_fastest_budget_ignores_a_baseline_run_of_another_length():
    """A run at the baseline that ran 5 supersteps is no measure of a run forecast at 8."""
    works = [4000.0] * 5
    past = records([row(i + 1, 1, M.predict_seconds(1, w) * 0.5, w) for i, w in enumerate(works)]
                   + [row(i + 1, 4, M.predict_seconds(4, 400.0), 400.0) for i in range(8)])
    p = FastestPolicy(1, budget=1.2, max_executors=4, max_iterations=8, warmup=0, start_executors=2)
    p.plan_start(past, M, max_iterations=8)
    hist = [row(i + 1, 2, M.predict_seconds(2, 400.0), 400.0) for i in range(2)]
    assert "measured" not in p.decide(**H(hist, M)).reason


def test_fastest_judges_slower_than_the_baseline_by_its_measured_run():
    """Where the measured run at the baseline (2 executors, 0.7x what the model reads) bounds the
    budget, the run planned within it is judged slower or not against that run's own time, not
    the prediction's: over budget at 4 and within it ending slower, back to the baseline."""
    m = FakeModel(5.0, 0.001)  # a fixed 5 s a superstep: fewer executors barely slower
    works = [4000.0] * 8
    past = records([row(i + 1, 2, m.predict_seconds(2, w) * 0.7, w) for i, w in enumerate(works)]
                   + [row(i + 1, 4, m.predict_seconds(4, w), w) for i, w in enumerate(works)])
    p = FastestPolicy(2, budget=1.0, max_executors=4, max_iterations=8, warmup=0, start_executors=4, wait_count=1)
    p.plan_start(past, m, max_iterations=8)
    measured = sum(r.wall_seconds for r in past[:8])
    hist = [row(i + 1, 4, m.predict_seconds(4, w), w) for i, w in enumerate(works[:2])]
    d = p.decide(**H(hist, m))
    assert "the budget's bound" in d.reason and f"against {measured:.1f}s at 2" in d.reason, d.reason
    assert d.executors == 2 and "no plan ends by then" in d.reason, d.reason
