"""The best schedule any policy could reach from static per-superstep times (no Spark)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from iterflow.simulate import bounds


def brute(sizes, T, objective, limit):
    """Exhaustive search: the least Σobjective with Σconstraint <= limit (rescales free)."""
    return brute_priced(sizes, T, objective, limit, None, 0.0, 0.0)


@pytest.mark.parametrize("seed", range(6))
def test_the_bounds_lie_between_exhaustive_search_at_the_limit_and_at_the_rounded_limit(seed):
    rng = np.random.default_rng(seed)
    sizes = [1, 2, 3, 4]
    work = rng.uniform(0.2, 3.0, 5)
    speedup = np.array([1.0, rng.uniform(1.0, 2.0), rng.uniform(1.0, 2.8), rng.uniform(1.0, 3.5)])
    T = work[None, :] / speedup[:, None] + rng.uniform(0.05, 0.3, (4, 5))
    slack = 5 * 1.0001 / bounds.GRID  # 5 supersteps, each constraint rounded down by < limit / GRID
    budget = 1.2 * T[0].sum()
    got = bounds.fastest(sizes, T, budget)
    assert got.seconds <= brute(sizes, T, "seconds", budget) + 1e-9  # optimistic by construction
    assert got.seconds >= brute(sizes, T, "seconds", budget * (1 + slack)) - 1e-9  # only by the rounding
    assert got.executor_seconds <= budget * (1 + slack)
    deadline = 1.1 * T[3].sum()
    got = bounds.cheapest(sizes, T, deadline)
    assert got.executor_seconds <= brute(sizes, T, "cost", deadline) + 1e-9
    assert got.executor_seconds >= brute(sizes, T, "cost", deadline * (1 + slack)) - 1e-9
    assert len(got.sizes) == 5 and got.seconds <= deadline * (1 + slack)

def test_more_executors_where_the_work_is_large_when_that_pays():
    # a shrinking job: two heavy supersteps that scale, then a tail that does not
    T = np.array([[8.0, 8.0, 1.0, 1.0, 1.0],
                  [4.2, 4.2, 1.1, 1.1, 1.1]])
    got = bounds.fastest([1, 2], T, budget=T[0].sum() * 1.2)
    assert got.sizes == (2, 2, 1, 1, 1)
    assert got.seconds == pytest.approx(11.4)
    # with no room above static-1's cost, the only schedule is static-1
    assert bounds.fastest([1, 2], T, budget=T[0].sum()).sizes == (1,) * 5


def test_the_cheapest_schedule_within_a_deadline_releases_where_it_costs_little_time():
    T = np.array([[8.0, 8.0, 1.0, 1.0, 1.0],
                  [4.2, 4.2, 1.1, 1.1, 1.1]])
    got = bounds.cheapest([1, 2], T, deadline=T[1].sum() * 1.1)
    assert got.sizes == (2, 2, 1, 1, 1)
    assert got.executor_seconds == pytest.approx(2 * 8.4 + 3.0)


def test_an_unreachable_limit_has_no_schedule_and_bad_input_is_named():
    T = np.array([[2.0, 2.0], [1.5, 1.5]])
    assert bounds.cheapest([1, 2], T, deadline=2.0) is None
    assert bounds.fastest([1, 2], T, budget=3.0) is None
    with pytest.raises(ValueError, match="one row of superstep times per size"):
        bounds.fastest([1, 2, 3], T, budget=10)
    with pytest.raises(ValueError, match="finite"):
        bounds.fastest([1, 2], np.array([[1.0, np.nan], [1.0, 1.0]]), budget=10)


def test_static_times_take_the_median_run_per_superstep_cut_to_the_shortest():
    sizes, T = bounds.static_times({2: [[1.0, 2.0, 3.0], [3.0, 4.0]], 1: [[5.0, 6.0]]})
    assert sizes == [1, 2]
    assert T.tolist() == [[5.0, 6.0], [2.0, 3.0]]
    with pytest.raises(ValueError, match="at least one run"):
        bounds.static_times({1: []})


def brute_priced(sizes, T, objective, limit, start, up, down, light=None):
    """Exhaustive search with rescales priced: the first superstep at a larger size takes ``up``
    more seconds, at a smaller one ``down`` more (None: one superstep at the new size), at one
    executor ``light`` more where given; the first superstep at row ``start`` (None: any)."""
    E = np.asarray(sizes, dtype=float)
    best = None
    for rows in itertools.product(range(len(E)), repeat=T.shape[1]):
        if start is not None and rows[0] != start:
            continue  # the first superstep runs where the policy starts
        prev, secs, cost = start, 0.0, 0.0
        for k, r in enumerate(rows):
            t = T[r, k]
            if prev is not None and E[r] > E[prev]:
                t += up
            elif prev is not None and E[r] < E[prev]:
                price = light if light is not None and E[r] == 1 else down
                t += T[r, k] if price is None else price
            secs, cost, prev = secs + t, cost + E[r] * t, r
        obj, con = (secs, cost) if objective == "seconds" else (cost, secs)
        if con <= limit and (best is None or obj < best):
            best = obj
    return best


@pytest.mark.parametrize("seed", range(4))
def test_priced_rescales_match_exhaustive_search(seed):
    rng = np.random.default_rng(seed)
    sizes = [1, 2, 4]
    work = rng.uniform(0.2, 3.0, 5)
    speedup = np.array([1.0, rng.uniform(1.0, 2.0), rng.uniform(1.0, 3.5)])
    T = work[None, :] / speedup[:, None] + rng.uniform(0.05, 0.3, (3, 5))
    slack = 5 * 1.0001 / bounds.GRID
    up, start = float(rng.uniform(0.5, 3.0)), int(rng.integers(0, 3))
    for down, light in ((None, None), (0.3, None), (2.5, 0.2)):
        budget = 1.2 * T[0].sum()
        got = bounds.fastest(sizes, T, budget, start=sizes[start], up=up, down=down, light=light)
        want = brute_priced(sizes, T, "seconds", budget, start, up, down, light)
        assert (got is None) == (want is None)
        if got is not None:
            assert want + 1e-9 >= got.seconds >= brute_priced(sizes, T, "seconds", budget * (1 + slack),
                                                              start, up, down, light) - 1e-9
        deadline = 1.3 * T[2].sum() + up
        got = bounds.cheapest(sizes, T, deadline, start=sizes[start], up=up, down=down, light=light)
        want = brute_priced(sizes, T, "cost", deadline, start, up, down, light)
        assert got is not None or want is None  # optimistic: never misses what a schedule meets
        if got is not None and want is not None:
            assert want + 1e-9 >= got.executor_seconds
        if got is not None:
            assert got.sizes[0] == sizes[start]


def test_a_priced_scale_out_that_cannot_pay_is_not_in_the_bound():
    """Free, two heavy supersteps at 2 pay; priced 5 s of cold executors, they do not."""
    T = np.array([[8.0, 8.0, 1.0, 1.0, 1.0],
                  [4.2, 4.2, 1.1, 1.1, 1.1]])
    assert bounds.fastest([1, 2], T, T[0].sum() * 1.2, start=1).sizes == (1, 2, 1, 1, 1)
    assert bounds.fastest([1, 2], T, T[0].sum() * 1.2, start=1, up=5.0).sizes == (1,) * 5


def test_a_release_to_one_executor_is_priced_apart_from_one_that_rebuilds():
    """4 -> 2 rebuilds its cached blocks (3 s), 4 -> 1 does not (0.2 s): within a deadline the
    light release to 1 just meets, it is the cheapest; priced as a rebuilding one, 1 misses the
    deadline and the release goes to 2."""
    T = np.array([[2.0] * 6, [1.2] * 6, [1.0] * 6])
    deadline = 1.0 + (2.0 + 0.2) + 2.0 * 4 + 0.01
    light = bounds.cheapest([1, 2, 4], T, deadline, start=4, up=9.0, down=3.0, light=0.2)
    assert light.sizes == (4, 1, 1, 1, 1, 1)
    rebuilt = bounds.cheapest([1, 2, 4], T, deadline, start=4, up=9.0, down=3.0)
    assert rebuilt.sizes == (4, 2, 2, 2, 2, 2)


def test_phased_schedules_hold_one_larger_size_then_release_once_and_miss_what_noise_alone_allows():
    # superstep 2 is a noisy median run faster at 2 than at 3: the per-superstep bound takes it
    T = np.array([[6.0, 6.0, 6.0, 1.0, 1.0],
                  [3.3, 2.9, 3.3, 0.9, 0.9],
                  [2.4, 3.0, 2.4, 0.9, 0.9]])
    plans = bounds.phased([1, 2, 3], T, base=1, down=0.5)
    assert len(plans) == 1 + 2 * 4  # static-1, and sizes 2 and 3 for 1..4 supersteps
    assert all(p.sizes[0] >= p.sizes[-1] == 1 for p in plans)
    three = next(p for p in plans if p.sizes == (3, 3, 3, 1, 1))
    assert three.seconds == pytest.approx(2.4 + 3.0 + 2.4 + 1.5 + 1.0)  # the release's 0.5 s at 1
    assert three.executor_seconds == pytest.approx(3 * 7.8 + 2.5)
    budget = 1.2 * T[0].sum()
    best = min((p for p in plans if p.executor_seconds <= budget), key=lambda p: p.seconds)
    free = bounds.fastest([1, 2, 3], T, budget)
    assert free.seconds < best.seconds and len(set(free.sizes[:3])) > 1  # it switches 3 -> 2 -> 3
    with pytest.raises(ValueError, match="start 4 is not one of the sizes"):
        bounds.phased([1, 2, 3], T, base=4)
