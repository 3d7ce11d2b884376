"""Partition planning: minimal-movement rescaling, hotspot detection and rebalancing, hubs.

Pure numpy: no SparkSession, no cluster fixture.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from iterflow.actuate.partitioning import BinAssignment, bin_column, bin_of, hash_assignment, moved_bins, moved_fraction, moved_load, rescale
from iterflow.actuate.rebalance import HotspotDetector, MigrationPlan, hub_bins, imbalance, plan_rebalance, salt_factor

B = 4096
PAIRS = [(p, q) for p, q in itertools.product(range(1, 17), repeat=2) if p != q]


def lower_bound(p: int, q: int) -> float:
    return 1 - min(p, q) / max(p, q)


def assert_balanced(a: BinAssignment) -> None:
    counts = a.counts()
    assert len(counts) == a.n_partitions
    assert counts.sum() == a.n_bins
    assert counts.max() - counts.min() <= 1, counts


# ----------------------------------------------------------------------------- keys -> bins

def test_bin_column_is_a_pmod_xxhash64_expression() -> None:
    assert bin_column("id", 4096) == "pmod(xxhash64(`id`), 4096)"
    assert bin_column("we`ird", 8) == "pmod(xxhash64(`we``ird`), 8)"
    with pytest.raises(ValueError):
        bin_column("id", 0)


def test_bin_of_is_deterministic_in_range_and_spreads_keys() -> None:
    keys = np.arange(-50_000, 150_000, dtype=np.int64)
    bins = bin_of(keys, 64)
    assert bins.dtype == np.int64 and bins.min() >= 0 and bins.max() < 64
    assert np.array_equal(bins, bin_of(keys, 64))
    counts = np.bincount(bins, minlength=64)
    assert counts.max() / counts.mean() < 1.05  # a real hash, not key % B on a contiguous range


# ----------------------------------------------------------------------------- assignments

@pytest.mark.parametrize("p", [1, 2, 3, 5, 7, 16, 100, 4096, 5000])
def test_uniform_is_balanced_and_contiguous(p: int) -> None:
    a = BinAssignment.uniform(B, p)
    assert_balanced(a)
    assert (np.diff(a.owner) >= 0).all()


def test_assignment_is_immutable_and_validated() -> None:
    a = BinAssignment.uniform(16, 4)
    with pytest.raises(ValueError):
        a.owner[0] = 3
    with pytest.raises(ValueError, match="owner values"):
        BinAssignment(4, 2, np.array([0, 1, 2, 0]))
    with pytest.raises(ValueError, match="one entry per bin"):
        BinAssignment(4, 2, np.array([0, 1]))
    assert a == BinAssignment.uniform(16, 4) and hash(a) == hash(BinAssignment.uniform(16, 4))
    assert a != BinAssignment.uniform(16, 2)


@pytest.mark.parametrize("p,q", PAIRS)
def test_rescale_moves_close_to_the_lower_bound_and_stays_balanced(p: int, q: int) -> None:
    a = BinAssignment.uniform(B, p)
    b = rescale(a, q)
    assert b.n_partitions == q
    assert_balanced(b)
    frac, bound = moved_fraction(a, b), lower_bound(p, q)
    assert bound - 0.01 <= frac <= bound + 0.05, (p, q, frac, bound)
    # Keep what you can: on scale-out bins only go to new partitions, on scale-in they only
    # leave the removed ones.
    moved = moved_bins(a, b)
    if q > p:
        assert (b.owner[moved] >= p).all()
    else:
        assert (a.owner[moved] >= q).all()


@pytest.mark.parametrize("p,q", [(3, 4), (5, 6), (8, 9), (15, 16), (3, 5), (8, 6), (16, 15), (7, 11)])
def test_hash_partitioning_moves_almost_everything_for_contrast(p: int, q: int) -> None:
    hashed = moved_fraction(hash_assignment(B, p), hash_assignment(B, q))
    ours = moved_fraction(BinAssignment.uniform(B, p), rescale(BinAssignment.uniform(B, p), q))
    assert hashed >= 0.6, (p, q, hashed)
    assert hashed >= ours + 0.35
    # bin % P keeps bin b in place iff b mod lcm(P, Q) < min(P, Q)
    assert hashed == pytest.approx(1 - min(p, q) / math.lcm(p, q), abs=0.01)


@pytest.mark.parametrize("sequence", [
    [1, 2, 4, 2, 3, 5, 8, 6, 1],
    [16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1],
    [3, 5, 3, 7, 2, 16, 9, 4, 12],
])
def test_repeated_rescales_stay_balanced_and_minimal(sequence: list[int]) -> None:
    a = BinAssignment.uniform(B, sequence[0])
    for q in sequence[1:]:
        b = rescale(a, q)
        assert_balanced(b)
        assert moved_fraction(a, b) <= lower_bound(a.n_partitions, q) + 0.05
        a = b


def test_rescale_to_the_same_count_moves_nothing_and_is_deterministic() -> None:
    a = rescale(BinAssignment.uniform(B, 3), 5)
    assert moved_fraction(a, rescale(a, 5)) == 0.0
    assert rescale(a, 7) == rescale(a, 7)


def test_rescale_with_load_releases_the_lightest_bins() -> None:
    rng = np.random.default_rng(7)
    load = rng.lognormal(0.0, 1.5, B)
    a = BinAssignment.uniform(B, 4)
    by_id, by_load = rescale(a, 8), rescale(a, 8, bin_load=load)
    assert_balanced(by_load)
    assert moved_fraction(a, by_load) == moved_fraction(a, by_id)
    assert moved_load(a, by_load, load) < 0.5 * moved_load(a, by_id, load)


def test_moved_load_weights_by_bin_load() -> None:
    a = BinAssignment(4, 2, np.array([0, 0, 1, 1]))
    b = BinAssignment(4, 2, np.array([0, 1, 1, 0]))
    assert moved_bins(a, b).tolist() == [1, 3]
    assert moved_fraction(a, b) == 0.5
    assert moved_load(a, b, [1.0, 10.0, 100.0, 1000.0]) == 1010.0


# ----------------------------------------------------------------------------- hotspots

def test_imbalance() -> None:
    assert imbalance([1, 1, 1, 1]) == 1.0
    assert imbalance([4, 0, 0, 0]) == 4.0
    assert imbalance([0, 0]) == 1.0


def test_detector_fires_after_patience_hot_supersteps_and_resets() -> None:
    det = HotspotDetector(threshold=1.2, patience=3)
    hot, cool = [3.0, 1.0, 1.0], [1.0, 1.0, 1.1]
    assert [det.observe_partitions(x) for x in (hot, hot, cool)] == [False, False, False]  # cool resets
    assert [det.observe_partitions(hot) for _ in range(3)] == [False, False, True]
    assert det.streak == 0  # restarts after firing: no re-trigger while a plan is applied
    assert [det.observe_partitions(hot) for _ in range(3)] == [False, False, True]
    assert len(det.history) == 9 and det.history[0] == pytest.approx(1.8)


def test_detector_aggregates_bin_loads_through_the_assignment() -> None:
    det = HotspotDetector()  # threshold 1.2, patience 2
    a = BinAssignment.uniform(8, 2)
    skewed = [5, 5, 5, 5, 1, 1, 1, 1]  # partition loads 20 and 4: imbalance 1.67
    assert det.observe(a, skewed) is False
    assert det.observe(a, skewed) is True
    assert det.observe(a, [1] * 8) is False
    with pytest.raises(ValueError):
        HotspotDetector(threshold=0.9)


def skewed_load(seed: int, n_partitions: int, hot: int = 1, factor: float = 8.0) -> np.ndarray:
    """Heavy-tailed (Zipf-like) per-bin loads, with the key ranges of `hot` partitions hot."""
    rng = np.random.default_rng(seed)
    load = np.minimum(rng.zipf(2.0, B), 40).astype(np.float64)  # capped: no bin is a hub
    hot_bins = rng.permutation(n_partitions)[:hot]
    owner = BinAssignment.uniform(B, n_partitions).owner
    load[np.isin(owner, hot_bins)] *= factor
    return load


@pytest.mark.parametrize("seed,p,hot", [(0, 8, 1), (1, 4, 1), (2, 16, 2), (3, 12, 3), (4, 6, 1)])
def test_plan_rebalance_fixes_skew_in_bounded_batches(seed: int, p: int, hot: int) -> None:
    load = skewed_load(seed, p, hot)
    a = BinAssignment.uniform(B, p)
    assert len(hub_bins(load, p)) == 0
    before = imbalance(a.partition_load(load))
    assert before >= 2.0

    plan = plan_rebalance(a, load, max_moves=16, target=1.1)
    assert plan.imbalance_before == pytest.approx(before)
    assert plan.imbalance_after <= 1.2
    assert all(1 <= len(batch) <= 16 for batch in plan.batches)
    assert len(plan.batches) > 1
    moved = [m[0] for m in plan.moves]
    assert len(moved) == len(set(moved))  # each bin moves at most once

    current, maxima = a, [a.partition_load(load).max()]
    for i in range(len(plan.batches)):
        assert plan.remaining(current) == len(plan.batches) - i
        current = plan.next_assignment(current)
        maxima.append(current.partition_load(load).max())
    assert plan.remaining(current) == 0
    assert plan.next_assignment(current) == current
    assert current == plan.final_assignment(a)
    assert imbalance(current.partition_load(load)) == pytest.approx(plan.imbalance_after)
    assert all(later <= earlier + 1e-9 for earlier, later in zip(maxima, maxima[1:]))
    assert moved_fraction(a, current) < 0.5  # hot bins move, not the whole key space
    assert plan == plan_rebalance(a, load, max_moves=16, target=1.1)  # deterministic


def test_plan_rebalance_is_empty_when_balanced_and_never_worse_with_a_hub() -> None:
    a = BinAssignment.uniform(B, 4)
    flat = np.ones(B)
    plan = plan_rebalance(a, flat)
    assert plan.is_empty and plan.next_assignment(a) == a

    load = np.ones(B)
    load[100] = B  # one bin holds half the work: a hub, no bin move can fix it
    assert hub_bins(load, 4).tolist() == [100]
    plan = plan_rebalance(a, load, max_moves=8)
    after = plan.final_assignment(a)
    assert after.partition_load(load).max() <= a.partition_load(load).max()
    assert plan.imbalance_after >= load[100] / (load.sum() / 4) - 1e-9  # the hub is the floor


def test_stale_plan_is_refused() -> None:
    load = skewed_load(0, 8)
    a = BinAssignment.uniform(B, 8)
    plan = plan_rebalance(a, load, max_moves=4)
    with pytest.raises(ValueError, match="re-plan"):
        plan.next_assignment(rescale(a, 6))
    b, src, dst = plan.batches[0][0]
    other = next(x for x in range(8) if x not in (src, dst))
    meddled = a.with_moves([(b, src, other)])  # someone else moved a planned bin
    with pytest.raises(ValueError, match="stale"):
        plan.next_assignment(meddled)


def test_migration_plan_is_a_plain_value() -> None:
    plan = MigrationPlan(4, 2, [[(1, 0, 1)]], 1.5, 1.0)
    a = BinAssignment(4, 2, np.array([0, 0, 1, 1]))
    assert plan.next_assignment(a).owner.tolist() == [0, 1, 1, 1]
    assert plan.moves == [(1, 0, 1)]


# ----------------------------------------------------------------------------- hubs

def test_hub_bins_and_salt_factor() -> None:
    load = np.ones(100)
    load[7] = 100.0   # total 199, fair share on 4 partitions 49.75 -> 3 pieces of 33.3
    load[42] = 60.0   # total 259 with both: fair 64.75 -> 60 is not a hub
    assert hub_bins(load, 4).tolist() == [7]
    assert salt_factor(load, 4) == {7: 2}  # fair share 64.75: two pieces of 50
    assert salt_factor(np.ones(100), 4) == {}
    assert salt_factor(np.zeros(10), 4) == {}
    assert salt_factor(load, 4, share=0.5) == {7: 4, 42: 2}  # pieces <= 32.4


@pytest.mark.parametrize("seed", range(5))
def test_salted_pieces_never_exceed_the_fair_share(seed: int) -> None:
    rng = np.random.default_rng(seed)
    load = rng.zipf(1.3, 512).astype(np.float64)
    for p in (2, 4, 8, 16):
        fair = load.sum() / p
        factors = salt_factor(load, p)
        assert sorted(factors) == hub_bins(load, p).tolist()
        for b, k in factors.items():
            assert 2 <= k <= p
            assert load[b] / k <= fair
            assert load[b] / (k - 1) > fair  # the fewest pieces that fit
