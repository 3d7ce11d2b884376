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


def test_a_numpy_limit_plans_as_a_python_one():
    """A limit summed from records read out of a table is a numpy float, and ``plan <= limit``
    a numpy bool: compared by identity with ``True``/``False`` it never matched, and the search
    returned the fastest plan for every allowance and budget (the simulator's replays)."""
    works = np.array([100.0, 100.0] + [1.0] * 20)
    S = 0.5 + works[None, :] / E[:, None]
    w = np.ones(works.size)
    fastest_t, one = float(S.min(axis=0) @ w), float(S[0] @ w)
    quickest = cheapest_plan(S, E, w, 0.5 * fastest_t)  # none fits: the fastest plan
    for limit in (1.2 * fastest_t, np.float64(1.2 * fastest_t)):
        k, t, c = cheapest_plan(S, E, w, limit)
        assert t <= 1.2 * fastest_t + 1e-9 and c < 0.9 * quickest[2]
    for limit in (1.1 * one, np.float64(1.1 * one)):
        k, t, c = fastest_plan(S, E, w, limit)
        assert c <= 1.1 * one * (1 + 1e-9) and t < one


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


# -- rescales priced --------------------------------------------------------------------------

def releases(n: int, up: float, down: float) -> np.ndarray:
    """``prices[p, r]``: ``up`` seconds to a larger size, ``down`` to a smaller one, 0 to stay."""
    i = np.arange(n)
    return np.where(i[None, :] > i[:, None], up, np.where(i[None, :] < i[:, None], down, 0.0))


def test_free_rescales_plan_as_the_unpriced_family():
    """Prices all zero and no start: the priced search finds plans as good as the unpriced one's."""
    rng = np.random.default_rng(7)
    Es = np.arange(1, 5)
    for _ in range(20):
        S = rng.uniform(0.5, 5.0, size=(4, 9))
        w = rng.integers(1, 4, size=9).astype(float)
        free = np.zeros((4, 4))
        for allowed in (float(S.min(axis=0) @ w) * f for f in (1.0, 1.2, 1.5, 3.0)):
            _, t0, c0 = cheapest_plan(S, Es, w, allowed)
            _, t1, c1 = cheapest_plan(S, Es, w, allowed, prices=free)
            assert c1 == pytest.approx(c0) and t1 == pytest.approx(t0)


def test_each_multiplier_finds_the_best_priced_plan():
    """Against every plan of 3 sizes over 4 samples: at each multiplier the dynamic program's plan
    minimises time x (1 + lambda x executors), its prices included (held by the new size, or a
    release's by the size it leaves), from the start size."""
    from itertools import product

    from iterflow.policies.plans import _priced_family, _priced_totals
    rng = np.random.default_rng(3)
    Es = np.array([1.0, 2.0, 4.0])
    S = rng.uniform(0.5, 4.0, size=(3, 4))
    w = np.array([1.0, 2.0, 1.0, 3.0])
    P = releases(3, 2.5, 1.5)
    step = S * w
    new_size = np.broadcast_to(Es, (3, 3))
    for H in (new_size, np.maximum(Es[:, None], Es[None, :])):
        at = _priced_family(S, Es, w, P, 2, H)
        for lam in (0.0, 0.05, 0.3, 2.0):
            def score(k: np.ndarray) -> float:
                prev = np.concatenate([[2], k[:-1]])
                return float(step[k, np.arange(4)] @ (1 + lam * Es[k]) + P[prev, k] @ (1 + lam * H[prev, k]))
            brute = min(score(np.array(k)) for k in product(range(3), repeat=4))
            k, t, c = at(lam)
            assert score(k) == pytest.approx(brute)
            assert (t, c) == pytest.approx(_priced_totals(k, step, Es, P, 2, H))
            prev = np.concatenate([[2], k[:-1]])
            assert c == pytest.approx(float(step[k, np.arange(4)] @ Es[k] + P[prev, k] @ H[prev, k]))


def test_a_priced_plan_goes_straight_down_where_two_releases_cost_more():
    """Heavy supersteps then a tail: unpriced, the cheapest plan steps 3 -> 2 -> 1 (each size
    where it gains least); each release priced 4 s, it keeps 3 through the heavy part and
    releases once -- and its time, prices included, is within the allowance."""
    Es = np.array([1, 2, 3])
    works = np.array([30.0, 30.0] + [8.0] * 4 + [0.2] * 12)
    S = 1.0 + works[None, :] / Es[:, None] ** 0.9
    w = np.ones(works.size)
    allowed = 1.15 * float(S[2] @ w)
    free, t_free, _ = cheapest_plan(S, Es, w, allowed)
    assert len(set(Es[free])) == 3 and t_free + 2 * 4.0 > allowed  # the staircase, over once paid
    k, t, c = cheapest_plan(S, Es, w, allowed, prices=releases(3, 6.0, 4.0), start=2)
    sizes = Es[k]
    assert np.count_nonzero(np.diff(sizes)) == 1 and sizes[0] == 3 and sizes[-1] == 1
    assert t <= allowed * (1 + 1e-9) and c < 3 * float(S[2] @ w)


def test_a_change_into_the_plan_is_paid_for_from_the_start():
    """Started at 1 with a scale-out priced above what it saves, the fastest plan within a
    large budget keeps 1; free, it scales out."""
    Es = np.array([1, 2])
    S = np.array([[2.0] * 5, [1.6] * 5])
    w = np.ones(5)
    free, _, _ = fastest_plan(S, Es, w, 1e6)
    assert Es[free[0]] == 2
    k, t, _ = fastest_plan(S, Es, w, 1e6, prices=releases(2, 3.0, 0.5), start=0)
    assert set(Es[k]) == {1} and t == pytest.approx(10.0)


def test_bad_prices_are_refused():
    S, w = np.ones((2, 3)), np.ones(3)
    with pytest.raises(ValueError, match="prices"):
        cheapest_plan(S, np.array([1, 2]), w, 5.0, prices=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="start"):
        cheapest_plan(S, np.array([1, 2]), w, 5.0, prices=np.zeros((2, 2)), start=4)


def test_a_later_release_is_found_where_it_costs_less_than_one_now():
    """PageRank-like sizes (1.9 / 1.2 / 0.9 s a superstep at 1 / 2 / 3), a release to 2 rebuilding
    the cached inputs (3.1 s), one to 1 light (0.6 s): 2 now meets 20 s for 35 executor-seconds;
    3 for four more supersteps, then 1, meets it for 26.6 -- the plan ``target`` waits for."""
    from iterflow.policies.plans import later_release

    sizes = np.array([1, 2, 3])
    S = np.tile(np.array([1.9, 1.2, 0.9])[:, None], (1, 12))
    w, price, pad = np.ones(12), np.array([0.6, 3.1, 0.0]), np.ones(3)
    assert 2 * (3.1 + 12 * 1.2) == pytest.approx(35.0)
    j, i, t, c = later_release(S, sizes, w, 3, price, pad, 20.0)
    assert (j, int(sizes[i])) == (4, 1) and t == pytest.approx(19.4) and c == pytest.approx(26.6)
    # padded, the later part runs longer: the release comes later
    assert later_release(S, sizes, w, 3, price, np.full(3, 1.1), 20.0)[0] == 5
    assert later_release(S, sizes, w, 3, price, pad, 11.0) is None  # 1 never fits in time
    assert later_release(S, sizes, w, 3, price, pad, 20.0, allowed=sizes != 1)[1] == 1  # 2 only, later
    assert later_release(S, sizes, w, 4, price, pad, 20.0) is None  # the current size is no candidate
