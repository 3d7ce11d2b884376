"""The efficiency and fastest rules (no Spark): releases within a runtime bound, and the shortest
run within a baseline's executor-seconds; the policies with the real resource model."""
from __future__ import annotations

import numpy as np
import pytest

from iterflow.model.resource import ResourceModel
from iterflow.policies import EfficiencyPolicy, FastestPolicy, StaticPolicy, TargetPolicy
from iterflow.loop.reconfig import Reconfiguration

from fakes import H, records
from policy_fakes import QUICK, FakeModel, row, flat, FakeCluster, total_seconds, executor_seconds, sizes


class Table(FakeModel):
    """Seconds of a superstep by its work and size, as given: ``T[work][size]``."""

    def __init__(self, T: dict[float, dict[int, float]]) -> None:
        super().__init__()
        self.T = T

    def predict_seconds(self, scale_out: float, work: float = 1.0) -> float:
        return self.T[work][int(round(scale_out))]


def fastest_on_heavy_then_tail(T: dict[float, dict[int, float]], price: float, budget: float) -> Reconfiguration:
    """``fastest`` (baseline 1) at barrier 2 of three heavy supersteps (work 2) and a tail of six
    (work 1), run at 3 so far, a release priced ``price``, a scale-out free."""
    m = Table(T)
    works = [2.0] * 3 + [1.0] * 6
    hist = [row(i, 3, m.predict_seconds(3, w), w) for i, w in enumerate(works[:2], start=1)]
    p = FastestPolicy(1, budget=budget, max_executors=3, wait_count=3, cooldown=5, warmup=0, scale_in_seconds=price,
                      rescale_seconds=0.0)  # scale-outs free: the plans may go back up in the tail
    p.repeat = works
    return p.decide(**H(hist, m))


class Replayed(FakeModel):
    """A task replay (every size as fast: a tail of fixed-cost tasks, as one size reads it) that
    measured supersteps at ``slots`` at fewest."""

    source = "task replay"

    def __init__(self, slots: float) -> None:
        super().__init__(1.0, 0.0)
        self.least_slots = slots


@pytest.mark.parametrize("measured, floor", [(480.0, 30), (40.0, 3), (4.0, 1)])
def test_a_release_goes_at_most_4x_below_the_slots_the_replay_measured(measured, floor):
    """120 executors x 4 cores, a flat prediction (1 executor reads as fast as 120): the release
    goes to 1/4 of the fewest slots measured (480 -> 30 executors), not to 1 in one jump -- what
    one size cannot tell apart (fixed cost or work) decides a prediction 120x away (480 cores,
    stop 66); measured at 1 executor, nothing changes."""
    m = Replayed(measured)
    hist = [row(i, 120, 1.0, cores_per_executor=4) for i in range(1, 4)]
    p = EfficiencyPolicy(max_executors=120, cores_per_executor=4, max_iterations=30, **QUICK)
    got = p.decide(**H(hist, m))
    assert got.executors == floor
    assert ("no lower than" in got.reason) == (floor > 1)


def test_fastest_over_budget_takes_the_cheapest_plan_ending_by_the_baselines_finish():
    """Started above its baseline (12) and over budget: the plan within the budget runs the rest
    below it and the whole run ends slower than at the baseline -- fastest spends over budget
    instead (its promise is a faster run), on the cheapest plan that still ends by the
    baseline's finish: here (work / executors, free rescales) the fewest executors that do, not
    the baseline itself; a plan below the baseline that ends no slower (a tail of fixed cost) is
    still taken within the budget."""
    heavy = FakeModel(0.2, 1.0)  # 0.2 s outside tasks + work/executors
    hist = [row(i, 43, 3.0 * heavy.predict_seconds(43, 1000.0), 1000.0) for i in range(1, 3)]  # 3x slow: over
    p = FastestPolicy(12, max_executors=120, max_iterations=12, **QUICK)
    got = p.decide(**H(hist, heavy))
    assert "ends slower than at the baseline" in got.reason and "the cheapest plan ending by then" in got.reason
    base_finish = float(got.reason.split(" against ")[1].split("s at 12")[0])
    elapsed = sum(r["wall_seconds"] for r in hist)
    fits = [e for e in range(1, 121) if elapsed + 10 * heavy.predict_seconds(e, 1000.0) <= base_finish]
    assert got.executors == min(fits) < 43, got.reason  # exs grow with e here: the fewest that end in time
    tail = FakeModel(0.2, 1e-6)  # the rest as fast at any size: below the baseline costs nothing
    hist = [row(i, 43, 3.0 * tail.predict_seconds(43, 1000.0), 1000.0) for i in range(1, 3)]
    got = FastestPolicy(12, max_executors=120, max_iterations=12, **QUICK).decide(**H(hist, tail))
    assert got.executors < 12 and "slower than at the baseline" not in got.reason


def test_fastest_counts_a_rescale_pause_as_spent():
    m = FakeModel(1.0, 0.1)
    hist = flat(3, 4, m)
    quiet = FastestPolicy(4, max_executors=8, max_iterations=20, **QUICK).decide(**H(hist, m)).reason
    hist[1].update(actuation_seconds=30.0, relayout_seconds=20.0, executors_active=4)
    paused = FastestPolicy(4, max_executors=8, max_iterations=20, **QUICK).decide(**H(hist, m)).reason
    saved = [float(r.split(" saved so far")[0].rsplit("; ", 1)[1]) for r in (quiet, paused)]
    assert saved[0] - saved[1] == pytest.approx(50.0 * 4)


@pytest.mark.parametrize("rule", ["plan", "knee"])
def test_efficiency_releases_executors_as_work_shrinks_within_the_bound(rule):
    m = FakeModel(1.0, 0.01)
    works = [10_000.0 * 0.6 ** i for i in range(25)]  # a shrinking active set with a long tail
    cluster = FakeCluster(a=1.0, b=0.01)
    p = EfficiencyPolicy(rule=rule, threshold=0.05, slowdown_bound=0.1, max_executors=16, min_executors=1,
                         scale_in_seconds=0)  # free in the fake cluster
    hist = cluster.run(p, 16, works, m)
    e = sizes(hist)
    assert e[0] == 16 and e[-1] <= 2 and e == sorted(e, reverse=True), e  # only ever releases
    static_max = cluster.run(StaticPolicy(), 16, works)
    assert total_seconds(hist) <= 1.1 * total_seconds(static_max)
    assert executor_seconds(hist) < 0.75 * executor_seconds(static_max)
    why = "the whole run at max 16" if rule == "plan" else "gains"
    assert any(why in reason and "release to" in reason for _, _, reason in p.log)


def test_efficiency_spends_the_whole_runs_bound_where_executors_gain_least():
    """A heavy start then a long flat tail where executor #3 gains 20 % over 2 and #4 11 % over
    3 (0.2 + 0.4/e seconds): the knee keeps 4 (11 % is above its 8.3 %); the plan keeps 4 while
    the work is heavy and spends the run's 10 % on the tail -- fewer executor-seconds than
    static at 4, the run within 1.1x of it (WCC's tail at 3-4 executors, stop 40)."""
    m = FakeModel(0.2, 1e-4)
    works = [8e4] * 5 + [4e3] * 25
    static_max = FakeCluster(a=0.2, b=1e-4).run(StaticPolicy(), 4, works)
    runs = {}
    for rule in ("plan", "knee"):
        p = EfficiencyPolicy(rule=rule, max_executors=4, tol=0.5, **QUICK)
        p.plan_start(records(static_max), m)  # the run repeats an earlier one: its length known
        runs[rule] = FakeCluster(a=0.2, b=1e-4).run(p, 4, works, m)
    plan, knee = runs["plan"], runs["knee"]
    assert sizes(knee) == [4] * 30
    assert sizes(plan)[:5] == [4] * 5 and min(sizes(plan)) <= 2, sizes(plan)
    assert total_seconds(plan) <= 1.1 * total_seconds(static_max) + 1e-9
    assert executor_seconds(plan) < 0.95 * executor_seconds(static_max)


def test_efficiency_scales_out_when_behind_the_whole_runs_bound():
    """Started at 4 of 16 on work that scales: the rest at 4 breaks the bound at once -- a scale-out
    now, urgent, to the first size of the cheapest plan that catches up."""
    m = FakeModel(1.0, 0.01)
    r = EfficiencyPolicy(max_executors=16, max_iterations=40, rescale_seconds=0, **QUICK).decide(
        **H(flat(3, 4, m), m))
    assert r.executors is not None and r.executors > 4 and "behind the bound" in r.reason and "urgent" in r.reason


def test_efficiency_plan_takes_the_release_price_out_of_the_allowance():
    """10 + 100/e seconds, 16 executors, a 50 % bound: with 400 supersteps left a release pays its
    measured price many times over; with a price of 60 s and 2 supersteps left, a release to the
    size the slack allows would break the bound by it -- kept."""
    m = FakeModel(10.0, 0.01)

    def decide(left: int, pause: float) -> Reconfiguration:
        p = EfficiencyPolicy(max_executors=16, slowdown_bound=0.5, max_iterations=4 + left, **QUICK)
        hist = flat(4, 16, m)
        hist[1].update(decision="down", actuation_seconds=pause, relayout_seconds=0.0)  # a measured scale-in
        return p.decide(**H(hist, m))

    assert decide(400, 5.0).executors == 8  # 22.5 s within 1.4 x 16.25 s, less 5 s over 400
    kept = decide(2, 60.0)
    assert kept.executors is None and "starts at 16" in kept.reason
    with pytest.raises(ValueError, match="rule"):
        EfficiencyPolicy(max_executors=4, rule="greedy")


def test_efficiency_releases_only_where_a_plan_fits_with_the_release_paid():
    """3 executors read faster than 4 (slower tasks on more slots). With a free release that is a
    release; with a release priced over what the bound leaves, the plans price it and none
    releases: kept (stop46w20, its plans unpriced: 4 -> 3 so, +27 %)."""
    m = Table({1.0: {1: 2.0, 2: 1.2, 3: 0.9, 4: 1.0}})

    def decide(price: float) -> Reconfiguration:
        p = EfficiencyPolicy(max_executors=4, slowdown_bound=0.1, max_iterations=7, **{**QUICK, "scale_in_seconds": price})
        return p.decide(**H([row(i, 4, 1.0, 1.0) for i in range(1, 5)], m))

    free, dear = decide(0.0), decide(60.0)
    assert free.executors is not None and free.executors < 4, free.reason
    assert dear.executors is None and "starts at 4: keep 4" in dear.reason, dear.reason


def test_efficiency_releases_an_executor_gaining_a_small_share_of_its_ideal():
    """1 + 0.45/e seconds: the third of 3 executors gains 6.5 % (above a 5 % threshold, an
    eighth of its ideal 50 %), the second 18 % (of an ideal 100 %). Within a 20 % bound, 2
    executors will do: released with the ideal share, kept 3 by the threshold alone."""
    m = FakeModel(1.0, 0.45 / 10_000)
    hist = flat(3, 3, m)
    share = EfficiencyPolicy(rule="knee", max_executors=4, slowdown_bound=0.2, **QUICK).decide(**H(hist, m))
    alone = EfficiencyPolicy(rule="knee", max_executors=4, slowdown_bound=0.2, ideal_share=0,
                             **QUICK).decide(**H(hist, m))
    assert share.executors == 2 and "executor #3 gains 6.5% (pays off from 12.5%: 25% of its ideal 50%)" in share.reason
    assert alone.executors is None and "executor #3 gains 6.5% (threshold 5%)" in alone.reason
    with pytest.raises(ValueError):
        EfficiencyPolicy(max_executors=4, ideal_share=1.0)


def test_efficiency_keeps_every_executor_while_they_pay_off():
    m = FakeModel(1.0, 0.01)
    p = EfficiencyPolicy(rule="knee", threshold=0.05, max_executors=16, **QUICK)
    r = p.decide(**H(flat(3, 16, m, work=1e6), m))
    assert r.executors is None and "keep 16" in r.reason
    r = p.decide(**H(flat(3, 4, m, work=1e6), m))  # far off max: the bound is broken, urgent
    assert r.executors == 16 or (r.executors and r.executors > 12)


def test_fastest_stays_at_the_baseline_when_work_is_flat():
    m = FakeModel(1.0, 0.01)  # cost e·(1 + 100/e) grows with e: nothing to gain within budget
    p = FastestPolicy(4, max_executors=16, max_iterations=12, **QUICK)
    r = p.decide(**H(flat(3, 4, m), m))
    assert r.executors is None and "keep 4" in r.reason and "+0 saved so far" in r.reason


def test_fastest_spends_the_baseline_budget_where_the_work_is():
    works = [400_000.0 * 0.7 ** i for i in range(20)]
    cluster = FakeCluster(a=1.0, b=0.01)
    m = FakeModel(1.0, 0.01)
    base = cluster.run(StaticPolicy(), 4, works)
    p = FastestPolicy(4, max_executors=16, max_iterations=20, wait_count=2, rescale_seconds=0.0,
                      scale_in_seconds=0.0)  # free here
    hist = cluster.run(p, 4, works, m)
    assert max(sizes(hist)) > 4 and sizes(hist)[-1] < 4  # more executors early, fewer late ...
    assert total_seconds(hist) < 0.95 * total_seconds(base)  # ... for a shorter run
    assert executor_seconds(hist) <= 1.02 * executor_seconds(base)  # ... within the budget
    assert "executor-second budget" in hist[-2]["reason"]
    assert "nothing left to rescale for (~0 supersteps left" in hist[-1]["reason"]
    assert all(d in ("up", "down") for _, d, _ in p.log) and len(p.log) >= 2  # the changes, logged


def test_fastest_leaves_room_in_the_budget_for_the_rescale_itself():
    """The plan that spends the budget where the work is must also pay for its rescale: the
    pause is spent at the new size (k-means on the emulated cluster went 1 -> 4 with a plan
    costing its whole budget, then spent 4x the executor-seconds of static)."""
    works = [400_000.0 * 0.7 ** i for i in range(20)]
    m = FakeModel(1.0, 0.01)
    free = FastestPolicy(4, max_executors=16, max_iterations=20, rescale_seconds=0.0, **QUICK)
    hist = FakeCluster(a=1.0, b=0.01).run(StaticPolicy(), 4, works)[:3]
    assert free.decide(**H(hist, m)).executors > 4
    dear = FastestPolicy(4, max_executors=16, max_iterations=20, rescale_seconds=0.0, **QUICK)
    dear.learn_rescales([{"superstep": 3, "actuation_seconds": 400.0, "relayout_seconds": 100.0}])
    r = dear.decide(**H(hist, m))
    assert r.executors is None
    assert "a scale-out 500.0s (learned from 1 rescale of earlier runs)" in r.reason and "keep 4" in r.reason


def test_fastest_scales_in_at_once_when_over_budget():
    """Ran at 16 (far more executor-seconds than 4 would have spent): even one more superstep
    there and the cheapest rest after it is over the budget by more than the model's error, so
    it releases at once -- to its baseline 4, not below: the plan within the budget (1 executor
    for the rest) would end the run 2.7x slower than the baseline (stop 66; it was taken before),
    and 4 is the cheapest plan still ending by the baseline's finish."""
    m = FakeModel(5.0, 0.01)
    hist = flat(3, 16, m)
    p = FastestPolicy(4, max_executors=16, max_iterations=12, wait_count=3, cooldown=5, warmup=0,
                      scale_in_seconds=0)
    r = p.decide(**H(hist, m))
    assert r.executors == 4 and "over budget at 16" in r.reason and "scale in 16 -> 4" in r.reason


def test_fastest_keeps_its_size_for_a_heavy_superstep_a_small_overshoot_away():
    """WCC's heavy phase at 3 executors, the tail at 1 (stop40w): the budget re-predicted at a
    barrier fell short by a fraction of a superstep, and the plan within it released 3 -> 1
    before the last heavy superstep, which then ran 3.8 s at 1 executor. Keeping 3 for it and
    the tail at 1 is faster and over the budget by less than the model's error: kept. Far over
    (a smaller budget), the release is made at once."""
    m = FakeModel(0.8, 2e-5)  # WCC at 1 executor: 0.8 s plus the heavy phase's work
    works = [100_000.0, 136_000.0, 143_000.0, 122_000.0, 23_000.0] + [20.0] * 28
    hist = [row(i, 3, m.predict_seconds(3, w), w) for i, w in enumerate(works[:3], start=1)]

    def decide(budget: float):
        p = FastestPolicy(1, budget=budget, max_executors=4, wait_count=3, cooldown=5, warmup=0,
                          scale_in_seconds=0)
        p.repeat = works  # a repeat of an earlier run of the input (plan_start sets it)
        return p.decide(**H(hist, m))

    # 1.15x the baseline: the full-budget plan starts at 1 (all at 1: 26.9 s for 27 executor-seconds of
    # 28); 3 for the heavy superstep, the tail at 1: 25.3 s for 29 -- within the model's 5 %
    held = decide(1.15)
    assert held.executors in (None, 3) and "within the model's error of the budget" in held.reason
    assert "plan 1..1" in held.reason
    short = decide(1.05)  # 24 executor-seconds left: the hold is 5 over, 20 %
    assert short.executors == 1 and "over budget at 3" in short.reason


def _fitted_resource_model(a: float = 2.0, b: float = 0.1) -> ResourceModel:
    rng = np.random.default_rng(0)
    m = np.repeat([1.0, 2.0, 4.0, 8.0, 16.0], 4)
    w = np.tile([500.0, 1000.0, 2000.0, 1000.0], 5)
    y = (a + b * w / m) * np.exp(rng.normal(0.0, 0.02, m.size))
    return ResourceModel().fit(np.column_stack([m, w]), y)


def test_policies_with_a_fitted_resource_model():
    model = _fitted_resource_model()
    fake = FakeModel(2.0, 0.1)
    hist = [row(i, 4, fake.predict_seconds(4, 1000.0), work=1000.0) for i in (1, 2, 3)]
    r = TargetPolicy(250, max_executors=16, max_iterations=20, **QUICK).decide(**H(hist, model))
    expected = TargetPolicy(250, max_executors=16, max_iterations=20, **QUICK).decide(**H(hist, fake))
    assert r.executors is not None and abs(r.executors - expected.executors) <= 1
    assert "model (error ±" in r.reason
    r = EfficiencyPolicy(max_executors=16, **QUICK).decide(**H(
        [row(i, 16, 2.5, work=10.0) for i in (1, 2, 3)], model))
    assert r.executors is not None and r.executors < 16
    r = FastestPolicy(4, max_executors=16, max_iterations=20, **QUICK).decide(**H(hist, model))
    assert r.executors in (None, 3, 4, 5)


def test_driver_style_online_model_and_noop_rows():
    """The driver's loop: observe from superstep 2 on, then decide; rows without optional keys."""
    model = ResourceModel()
    p = TargetPolicy(160, max_executors=8, max_iterations=10)
    hist = []
    for i in range(1, 4):
        hist.append({"superstep": i, "wall_seconds": 12.0, "executors": 2, "cores": 2,
                     "partitions": 4, "delta": None, "work": 100.0})
        if i > 1:
            model.observe(2, 100.0, 12.0)
        r = p.decide(**H(hist, model))
        assert isinstance(r, Reconfiguration) and r.executors is None  # inside the band: keep 2
    assert not p.log


def test_efficiency_counts_the_rescale_price_inside_its_runtime_bound():
    """A release is within the slowdown bound only with its measured pause spread over the
    supersteps left: near the end the same release would break the bound, so it is not made."""
    m = FakeModel(10.0, 0.01)  # 10 + 100/e seconds a superstep: a release saves executor-seconds

    def decide(left: int) -> Reconfiguration:
        p = EfficiencyPolicy(rule="knee", max_executors=16, threshold=0.2, slowdown_bound=0.5,
                             max_iterations=4 + left, **QUICK)
        hist = flat(4, 16, m)
        hist[1].update(decision="down", actuation_seconds=5.0, relayout_seconds=0.0)  # a measured scale-in
        return p.decide(**H(hist, m))

    many, few = decide(400), decide(2)
    assert many.executors == 8  # 22.5 s <= 1.4 x 16.25 s (the bound inside the dead band)
    assert few.executors == 10  # 8 would pay 5 s / 2 supersteps more: 25 s, out of the bound


def test_fastest_spends_up_to_its_budget_multiple():
    """Work that scales well enough for 1.2x the baseline's executor-seconds, not for 1x."""
    m = FakeModel(0.2, 0.01)  # 0.2 + 100/e s: 8 executors cost 1.1x what 4 do, and run 1.8x faster
    hist = flat(3, 4, m)
    same = FastestPolicy(4, max_executors=8, max_iterations=20, rescale_seconds=0, **QUICK).decide(**H(hist, m))
    more = FastestPolicy(4, budget=1.2, max_executors=8, max_iterations=20, rescale_seconds=0,
                         **QUICK).decide(**H(hist, m))
    assert same.executors is None and more.executors is not None and more.executors > 4, more.reason
    assert "1.2x baseline 4" in more.reason
    with pytest.raises(ValueError, match="budget"):
        FastestPolicy(4, budget=0, max_executors=8)


def test_efficiency_sizes_by_the_rest_of_the_run_not_the_next_superstep():
    """Work collapsing x0.3 a superstep with 17 of 20 supersteps left (1 + 1e-4·work/e seconds):
    the next superstep (27000) still gains 13 % from executor #4, the rest of the run as
    forecast (a mean work of ~2300) under 2 %: released to 2 at once, not one by one as the
    next supersteps shrink (WCC's collapse: two releases, each priced ~1 s)."""
    m = FakeModel(1.0, 1e-4)
    hist = [row(i, 4, m.predict_seconds(4, w), w) for i, w in enumerate([1e6, 3e5, 9e4], start=1)]
    for rule, n in (("knee", 2), ("plan", 1)):  # the plan: 20.9 s at 1 fits the whole run's 1.08 x 55.7 s
        r = EfficiencyPolicy(rule=rule, max_executors=4, max_iterations=20, **QUICK).decide(**H(hist, m))
        assert r.executors == n, r.reason
        assert "~17" in r.reason and f"release to {n}" in r.reason
    flat_work = EfficiencyPolicy(rule="knee", max_executors=4, max_iterations=20, **QUICK).decide(
        **H(flat(3, 4, m, work=27_000), m))
    assert flat_work.executors is None and "keep 4" in flat_work.reason  # the same next superstep, flat: kept


def test_fastest_weighs_a_release_by_its_price_against_holding():
    """The full-budget plan releases 3 -> 1 for the heavy superstep; keeping 3 one more superstep
    and releasing after it is faster by more than a release costs (one more superstep at 1
    executor moving the removed executors' state: stop40w2 ran it 4.9 s where static-1 ran
    3.8 s). Within the model's error of the budget, the later release priced too: kept; where the
    held plan's own later release takes it past that error: released now."""
    T = {2.0: {1: 3.0, 2: 2.0, 3: 1.2}, 1.0: {1: 1.0, 2: 0.55, 3: 0.5}}  # work -> size -> seconds

    def decide(budget: float) -> Reconfiguration:
        return fastest_on_heavy_then_tail(T, 1.0, budget=budget)

    held, tight = decide(1.16), decide(1.13)
    assert held.executors in (None, 3) and "faster than the plan and its release (1.0s" in held.reason, held.reason
    assert "heavier than the rest: 3.0s against 1.0s at 1" in held.reason
    # 1.13x: 3 for the heavy superstep, then a release priced 1 s and the tail at 1: 11 executor-
    # seconds of a budget of 10 (+0.5 the model's error) -- the release is made now
    assert tight.executors == 1 and "over budget at 3" in tight.reason, tight.reason


def test_fastest_does_not_hold_a_release_in_a_flat_tail():
    """Past the heavy phase every superstep is alike: holding 3 one more superstep is always
    faster and a little over, so a hold would be asked again at every barrier (stop41w: four
    supersteps into WCC's tail at 3 executors, 1.27x static-1's executor-seconds). Released."""
    m = Table({1.0: {1: 1.0, 2: 0.55, 3: 0.5}})
    hist = [row(i, 3, 0.5, 1.0) for i in range(1, 3)]
    p = FastestPolicy(1, budget=1.13, max_executors=3, wait_count=3, cooldown=5, warmup=0, scale_in_seconds=1.0,
                      max_iterations=10)
    # budget 1.13 x 10 - 3 = 8.3 for 8 supersteps; 3 for the next one and 7 at 1: 7.5 s for 8.5, within
    # the model's 5 % and faster than the plan (8 s at 1) and its 1 s release -- but no heavier than the rest
    r = p.decide(**H(hist, m))
    assert r.executors is not None and r.executors < 3 and "over budget at 3" in r.reason, r.reason


def test_fastest_goes_straight_down_when_a_staircase_pays_two_releases():
    """The free plan runs the heavy superstep at 2 and the tail at 1: from 3 that is two
    releases, each priced in the plan. Cheap releases: 3 -> 2 now; dear ones: 3 -> 1 at once, one
    release (stop46w20's ``fastest`` paid 4.9 s and 4.1 s for 3 -> 2 -> 1 on consecutive barriers)."""
    T = {2.0: {1: 3.0, 2: 1.6, 3: 1.5}, 1.0: {1: 1.0, 2: 0.75, 3: 0.5}}

    def decide(price: float) -> Reconfiguration:
        return fastest_on_heavy_then_tail(T, price, budget=1.25)

    cheap, dear = decide(0.1), decide(2.0)
    # plan 1.6 s + 6 x 1.0 s and two releases of 0.1 s: 7.8 s for 9.6 executor-seconds of ~10
    assert cheap.executors == 2 and "plan 2..1" in cheap.reason, cheap.reason
    assert dear.executors == 1 and "over budget at 3" in dear.reason, dear.reason
    assert "plan 1..1 executors: 11.0s" in dear.reason  # 9.0 s at 1 and one release, 2.0 s


def test_the_past_at_the_maximum_is_the_measured_past_times_the_models_ratio_not_its_level():
    """Stop 53w20b: the model's level follows the run's latest supersteps, and one fast tail
    superstep moved WCC's predicted past at 4 executors by a fifth while ``elapsed`` is measured;
    ``efficiency`` read itself behind its bound and never counted its release three barriers in a
    row. What the supersteps run at 3 would have taken at 4 is their measured time times the
    model's 4-to-3 ratio, whatever its level; the first superstep at a new size (cold) is
    predicted, its excess not carried."""
    from iterflow.policies import Predictor

    hist = records([row(1, 3, 2.0), row(2, 3, 2.0), row(3, 2, 5.0), row(4, 2, 3.0)])
    for level in (1.0, 0.5):  # the same ratio between sizes at two levels
        m = Table({10_000.0: {2: 3.0 * level, 3: 2.0 * level, 4: 1.5 * level}})
        p = Predictor(hist, m, 1.0)
        # 2 x 2.0 x 1.5/2.0 (measured at 3) + 1.5·level (cold at 2: predicted) + 3.0 x 1.5/3.0
        assert p.ran_at(hist, 4) == pytest.approx(3.0 + 1.5 * level + 1.5)
        assert p.ran_at(hist, 3) == pytest.approx(4.0 + 2.0 * level + 2.0)
