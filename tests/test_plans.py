"""Per-superstep plans of the rest of a run (no Spark): the cheapest within a time allowance
(``efficiency``) and the fastest within a budget (``fastest``) -- one multiplier family."""
from __future__ import annotations

import numpy as np
import pytest

from iterflow.policies.plans import cheapest_plan, fastest_plan

E = np.arange(1, 17)


def flat(n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """10 + 100/e seconds a superstep, sizes below 16 read 10 % slower (as unseen sizes were)."""
    t = (10 + 100 / E) * np.where(E < 16, 1.1, 1.0)
    return np.tile(t[:, None], (1, n)), np.full(n, 400 / n)


def test_on_flat_work_the_size_the_multiplier_skips_is_found():
    """The lower hull of (time, executor-seconds) goes 16 -> 9 here; 9 is too slow for the
    allowance and 16 costs the most: 10 fits, one size for the whole rest."""
    S, w = flat()
    k, t, c = cheapest_plan(S, E, w, 9121.0)
    assert set(E[k]) == {10} and t == pytest.approx(8800.0) and c == pytest.approx(88_000.0)


def test_the_cheapest_plan_spends_executors_where_the_work_is():
    """Two heavy supersteps then a tail where executors gain little: the plan keeps the most
    executors on the heavy ones and releases in the tail -- and costs less than any one size
    within the same allowance."""
    works = np.array([100.0, 100.0] + [1.0] * 20)
    S = 0.5 + works[None, :] / E[:, None]
    w = np.ones(works.size)
    fastest_t = float(S.min(axis=0) @ w)
    k, t, c = cheapest_plan(S, E, w, 1.2 * fastest_t)
    assert E[k[0]] > E[k[-1]] and t <= 1.2 * fastest_t + 1e-9
    T = S @ w
    assert c < min(E[i] * T[i] for i in range(E.size) if T[i] <= 1.2 * fastest_t)


def test_an_allowance_no_plan_meets_gets_the_fastest():
    S, w = flat()
    k, t, _ = cheapest_plan(S, E, w, 1.0)
    assert set(E[k]) == {16} and t == pytest.approx(float(S[-1] @ w))


def test_the_fastest_plan_within_a_budget_tries_one_size_too():
    """fastest's budget between two hull sizes on flat work: one size that fits is faster than
    the hull's cheaper one."""
    S, w = flat()
    k, t, c = fastest_plan(S, E, w, 88_000.0)
    assert c <= 88_000.0 * (1 + 1e-9) and set(E[k]) == {10}
