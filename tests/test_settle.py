"""A release's transient, Spark-free: after a scale-in, the supersteps still running far above
the model's prediction are cold -- priced as the release's cost, not learned as the smaller
size's steady state (stop 38w: ``fastest`` read its budget's baseline off them and scaled out
for a budget that was not there)."""
from __future__ import annotations

import pytest

from iterflow.loop.records import Predicted, model_rows, records
from iterflow.loop.rescales import rescale_costs
from iterflow.model.live import SETTLE_MOST, SETTLE_TOL, feed


class Flat:
    """A fitted model that predicts 1 s at any size and keeps what it was fed."""

    fitted = True

    def __init__(self) -> None:
        self.fed: list[float] = []

    def predict_seconds(self, cores: float, work: float = 1.0) -> float:
        return 1.0

    def observe(self, cores: float, work: float, seconds: float, stage_tasks=None) -> "Flat":
        self.fed.append(seconds)
        return self


def run(executors: list[int], walls: list[float], change_at: int):
    """Feed one run superstep by superstep as the driver does; the rescale decided at barrier
    ``change_at`` (0.2 s pause)."""
    rows = []
    for i, (e, w) in enumerate(zip(executors, walls), start=1):
        row = {"superstep": i, "executors": e, "cores": e, "wall_seconds": w, "work": 1.0}
        if i == change_at:
            row.update(decision="down" if executors[i] < e else "up", actuation_seconds=0.2,
                       executors_requested=executors[i], executors_active=executors[i])
        rows.append(row)
    model, history = Flat(), []
    for rec in records(rows):
        cold = feed(model, rec, history, 1, None, True)
        history.append(rec.with_(predicted=Predicted(cold_seconds=cold)))
    return model, history


def test_a_release_transient_is_priced_and_not_learned_until_it_settles():
    walls = [2.0, 1.0, 1.0, 1.0, 5.0, 4.0, 3.0, 1.2, 1.0, 1.0]
    model, h = run([2] * 4 + [1] * 6, walls, change_at=4)
    cold = [r.predicted.cold_seconds for r in h]
    # 5, 6, 7 more than SETTLE_TOL above the prediction (1 s); 8 within it: settled
    assert 1.2 <= 1 + SETTLE_TOL < 3.0
    assert cold == [None] * 4 + [pytest.approx(4.0), pytest.approx(3.0), pytest.approx(2.0)] + [None] * 3
    assert model.fed == [1.0, 1.0, 1.0, 1.2, 1.0, 1.0]  # supersteps 2-4 and 8-10
    (price,) = rescale_costs(h)
    assert price == pytest.approx(0.2 + 4.0 + 3.0 + 2.0)  # the pause and the whole transient
    # an earlier run's transient does not feed a warm start either
    assert [s for _, _, s, _ in model_rows(h)] == model.fed


def test_a_settled_superstep_ends_the_transient_for_good():
    model, h = run([2] * 4 + [1] * 6, [2.0, 1.0, 1.0, 1.0, 5.0, 1.1, 4.0, 4.0, 1.0, 1.0], change_at=4)
    # superstep 7 is slow again, but the release had settled at 6: a slow superstep, learned
    assert [r.predicted.cold_seconds is not None for r in h][4:] == [True, False, False, False, False, False]
    assert 4.0 in model.fed


def test_a_transient_is_cold_for_at_most_settle_most_supersteps():
    """A transient still falling after SETTLE_MOST supersteps is the size's level from then on."""
    n = SETTLE_MOST + 3
    walls = [9.0 - k for k in range(n)]  # 9, 8, ... 2: every one above the prediction by > SETTLE_TOL
    model, h = run([2] * 4 + [1] * n, [2.0, 1.0, 1.0, 1.0] + walls, change_at=4)
    assert sum(r.predicted.cold_seconds is not None for r in h) == SETTLE_MOST
    assert model.fed[3:] == walls[SETTLE_MOST:]


def test_a_ratio_that_holds_or_grows_is_the_models_error_and_learned_at_once():
    """Far above the prediction but not falling: the model is wrong at the smaller size (stop58all's
    k-means ran 1.24, 1.52, 2.23x a prediction it kept for five supersteps); only the release's
    own cold superstep is priced, and a transient that stops falling is learned from there."""
    model, h = run([2] * 4 + [1] * 6, [2.0, 1.0, 1.0, 1.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0], change_at=4)
    assert [r.superstep for r in h if r.predicted.cold_seconds is not None] == [5]
    assert model.fed[3:] == [3.0] * 5
    model, h = run([2] * 4 + [1] * 6, [2.0, 1.0, 1.0, 1.0, 5.0, 4.0, 4.5, 3.0, 3.0, 3.0], change_at=4)
    assert [r.superstep for r in h if r.predicted.cold_seconds is not None] == [5, 6]
    assert model.fed[3:] == [4.5, 3.0, 3.0, 3.0]


def test_after_a_scale_out_only_the_first_superstep_is_cold():
    """Fresh executors' warm-up is the learned warm-up's (ages), not this rule's."""
    model, h = run([1] * 4 + [2] * 6, [2.0, 1.0, 1.0, 1.0, 5.0, 4.0, 3.0, 1.0, 1.0, 1.0], change_at=4)
    assert [r.superstep for r in h if r.predicted.cold_seconds is not None] == [5]
    assert model.fed == [1.0, 1.0, 1.0, 4.0, 3.0, 1.0, 1.0, 1.0]
