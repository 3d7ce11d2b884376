"""What a rescale costs every adaptive policy (no Spark): a scale-out must save more than its price,
a scale-in pay its own, each learned from this run, earlier runs or the prior."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iterflow.loop.records import records
from iterflow.policies import EfficiencyPolicy, TargetPolicy
from iterflow.loop.reconfig import Reconfiguration

from fakes import H
from policy_fakes import QUICK, FakeModel, row, flat


def test_scale_out_must_save_more_than_a_rescale_costs():
    m = FakeModel(1.0, 0.1)  # 1 + 1000/cores seconds: 251s at 4, 126s at 8
    for left, expect in ((1, None), (30, 8)):  # one superstep left: 125s saved < 200s of rescale
        p = TargetPolicy(3 * 251 + left * 120, max_executors=8, max_iterations=3 + left, rescale_seconds=200,
                         **QUICK)
        r = p.decide(**H(flat(3, 4, m), m))
        assert r.executors == expect, r.reason
        if expect is None:
            # out of reach at any size: the earliest finish is here, once the rescale is priced
            assert "earliest predicted finish 1004.0s at 4 executors (a rescale priced 200.0s, prior)" in r.reason
    # a rescale measured in this run replaces the prior
    p = TargetPolicy(3 * 251 + 120, max_executors=8, max_iterations=4, rescale_seconds=200, **QUICK)
    hist = flat(3, 4, m)
    hist[0].update(actuation_seconds=20.0, relayout_seconds=10.0)
    r = p.decide(**H(hist, m))
    assert r.executors == 8 and "would save" not in r.reason


def test_first_rescale_is_priced_from_earlier_runs():
    """A policy that learned from earlier runs that a rescale costs ~220 s (pause + the cold
    superstep after it) does not pay a 10 s prior's price; this run's own rescales still
    take precedence."""
    m = FakeModel(1.0, 0.1)
    earlier = pd.DataFrame([{"superstep": 4, "actuation_seconds": 150.0, "relayout_seconds": 50.0},
                            {"superstep": 5, "actuation_seconds": float("nan"), "relayout_seconds": float("nan"),
                             "cold_seconds": 20.0},  # the superstep after a rescale ran slow: part of its cost
                            {"superstep": 6, "actuation_seconds": 180.0, "relayout_seconds": 40.0}])
    target = 3 * 251 + 120
    naive = TargetPolicy(target, max_executors=8, max_iterations=4, rescale_seconds=10, **QUICK)
    assert naive.decide(**H(flat(3, 4, m), m)).executors == 8
    p = TargetPolicy(target, max_executors=8, max_iterations=4, rescale_seconds=10, **QUICK)
    assert p.learn_rescales(earlier) == 2
    r = p.decide(**H(flat(3, 4, m), m))
    assert r.executors is None
    assert "a rescale priced 220.0s, learned from 2 rescales of earlier runs" in r.reason
    hist = flat(3, 4, m)
    hist[0].update(actuation_seconds=20.0, relayout_seconds=10.0)
    assert p.decide(**H(hist, m)).executors == 8


def test_a_scale_in_must_pay_its_measured_price_over_its_prior():
    """A release is priced by this cluster's measured scale-ins (not by a scale-out's executor
    start), over the prior (0 here, ``QUICK``): with too few supersteps left to save what its
    cold superstep costs the executors left, the executors stay."""
    m = FakeModel(1.0, 0.01)  # 1 + 100/e seconds a superstep: little gain above a few executors

    def decide(left: int, down_price: float | None) -> Reconfiguration:
        p = EfficiencyPolicy(max_executors=16, threshold=0.2, slowdown_bound=100.0, max_iterations=4 + left, **QUICK)
        hist = flat(4, 16, m)
        if down_price is not None:  # an earlier scale-in of this run: 16 -> 16 (the size kept)
            hist[1].update(decision="down", actuation_seconds=down_price, relayout_seconds=0.0)
        return p.decide(**H(hist, m))

    assert decide(1, None).executors is not None and decide(1, None).executors < 16  # unmeasured: the prior, 0
    held = decide(1, 60.0)
    # the plan prices the release (the generic check would refuse it too): no plan releases
    assert held.executors is None and "keep 16" in held.reason and "a scale-in 60.0s" in held.reason
    assert decide(200, 60.0).executors < 16  # a long tail pays for it


def test_a_scale_in_is_priced_one_superstep_at_the_new_size_until_measured():
    # (one superstep as this run's ran -- the state is re-read whole -- at the new size)
    """The superstep after a release re-reads the removed executors' cached state (measured
    here: ~1 superstep): with one superstep left, a release does not pay; with many, it does."""
    m = FakeModel(1.0, 0.01)
    for iterations, release in ((4, False), (30, True)):
        p = TargetPolicy(5000, max_executors=16, max_iterations=iterations, wait_count=1, cooldown=0, warmup=0)
        r = p.decide(**H(flat(3, 16, m), m))
        assert (r.executors is not None and r.executors < 16) == release, r.reason
    cost, how = TargetPolicy(100, max_executors=4).scale_in_cost([])
    assert cost is None and how == "prior: one superstep as this run's ran, at the new size"


def test_a_scale_out_is_not_priced_by_the_scale_ins_measured():
    from iterflow.loop.records import records
    from iterflow.loop.rescales import rescale_costs

    rows = [row(1, 4, 5.0), row(2, 4, 5.0, decision="down", actuation_seconds=0.2),
            row(3, 2, 6.0, cold_seconds=1.0), row(4, 2, 5.0, decision="up", actuation_seconds=3.0),
            row(5, 4, 9.0, cold_seconds=4.0), row(6, 4, 5.0)]
    hist = records(rows)
    assert rescale_costs(hist, "down") == [pytest.approx(1.2)]
    assert rescale_costs(hist, "up") == [pytest.approx(7.0)]
    assert TargetPolicy(100, max_executors=4).rescale_cost(hist)[0] == pytest.approx(7.0)


def test_a_release_in_a_vanishing_tail_still_pays_the_state_re_read():
    """WCC's tail: the forecast work is ~0, so a release "saves" ~0 -- but the superstep after
    it re-reads the state at the new size, priced from the supersteps this run ran."""
    m = FakeModel(1.0, 0.01)
    hist = flat(6, 4, m, work=10_000.0) + [row(7, 4, 1.2, work=1.0)]
    p = TargetPolicy(5000, max_executors=4, max_iterations=10, wait_count=1, cooldown=0, warmup=0)
    price, _ = p.scale_in_prices(records(hist), [1, 2], 4)
    assert price == pytest.approx([4 * 26.0, 2 * 26.0])  # median superstep 26 s at 4, at 1 and 2
    r = p.decide(**H(hist, m))
    assert r.executors is None, r.reason


def test_a_release_is_priced_from_the_programs_own_runs_before_the_clusters():
    """A scale-in's price is the program's cached state re-laid out: the program's own releases
    price it; with none of its own, another program's on the cluster (the calibration job's)
    do, before the prior of one superstep (stop47w20: WCC's release priced so ran ~4x it)."""
    other = pd.DataFrame([{"superstep": 4, "actuation_seconds": 5.0, "relayout_seconds": 0.0, "decision": "up"},
                          {"superstep": 8, "actuation_seconds": 0.4, "relayout_seconds": 0.0, "decision": "down"}])
    own = pd.DataFrame([{"superstep": 6, "actuation_seconds": 0.3, "relayout_seconds": 0.0, "decision": "down"},
                        {"superstep": 7, "actuation_seconds": float("nan"), "relayout_seconds": float("nan"),
                         "cold_seconds": 2.5}])
    p = TargetPolicy(100.0, max_executors=4)
    assert p.learn_rescales(other, scale_ins=[]) == 1
    assert p.scale_in_cost([]) == (pytest.approx(0.4), "learned from 1 scale-in of other programs on this cluster")
    assert p.rescale_cost([])[0] == 5.0
    assert TargetPolicy(100.0, max_executors=4).scale_in_cost([])[0] is None  # nothing learned: the prior
    p.learn_rescales(pd.concat([other, own]), scale_ins=own)
    assert p.scale_in_cost([])[0] == pytest.approx(2.8)  # the release's pause and its cold superstep
    p.learn_rescales(other)  # no split given: every record prices both, as before
    assert p.scale_in_cost([])[0] == pytest.approx(0.4)


def test_a_release_is_priced_by_releases_of_its_kind_light_or_rebuilding():
    """Stop 49: a release to one executor re-lays the program out lazily (its inputs views of
    their cached blocks, its state read from the release's copy) and costs less than one that
    rebuilds them at the barrier (4 -> 2 by index coalescing, 4 -> 3 by a shuffle). Each is
    priced by the releases of its own kind; a light one with only rebuilding ones measured by
    those (an upper bound), a rebuilding one with only light ones measured by the prior (one
    superstep at the new size): the cheap kind must not price the dear one."""
    from iterflow.loop.rescales import light_release, rescale_costs

    assert light_release(4, 1) and light_release(2, 1) and light_release(3, 1)
    assert not light_release(4, 2) and not light_release(4, 3) and not light_release(4, None)
    assert not light_release(1, 1)
    rows = [row(1, 4, 5.0), row(2, 4, 5.0, decision="down", actuation_seconds=0.5, executors_active=1),
            row(3, 1, 6.0, cold_seconds=0.3), row(4, 1, 6.0), row(5, 1, 6.0)]
    hist = records(rows)
    assert rescale_costs(hist, "down", light=True) == [pytest.approx(0.8)]
    assert rescale_costs(hist, "down", light=False) == []
    p = TargetPolicy(100.0, max_executors=4)
    assert p.scale_in_cost(hist, light=True) == (pytest.approx(0.8), "measured over 1 scale-in to one executor")
    assert p.scale_in_cost(hist, light=False) == (None, "prior: one superstep as this run's ran, at the new size")
    price, _ = p.scale_in_prices(hist, [1, 2], 4)  # 4 -> 1 light; 4 -> 2 rebuilding: median 6 s x 4/2
    assert price == pytest.approx([0.8, 12.0])
    # a rebuilding release measured (4 -> 2 at 4.0 s): it prices its kind; the light one keeps its own
    rows = [row(1, 4, 5.0), row(2, 4, 5.0, decision="down", actuation_seconds=4.0, executors_active=2),
            row(3, 2, 6.0)]
    p.learn_rescales(records(rows))
    assert p.scale_in_cost([], light=False) == (pytest.approx(4.0), "measured over 1 rebuilding scale-in")
    assert p.scale_in_cost([], light=True) == (pytest.approx(4.0), "measured over 1 scale-in")  # the upper bound
    assert p.scale_in_cost(hist, light=True)[0] == pytest.approx(0.8)  # this run's own of its kind first


def test_the_clusters_releases_price_a_cold_run_by_kind():
    """A cold run (no release of its own program) priced every release by the median of the
    cluster's -- the calibration job's 3 -> 2 and 4 -> 3 rebuilding (2.1-4.4 s) with its 2 -> 1
    light (0.2-1.3 s) -- so a release to one executor read ~3x its cost (stop 57). By kind: each
    kind by the cluster's of its kind; a light one with none of its kind by all (an upper
    bound); a rebuilding one with only light ones by the prior."""
    rebuild = row(2, 3, 1.0, decision="down", actuation_seconds=3.1, executors_active=2)
    light = row(4, 2, 1.2, decision="down", actuation_seconds=0.6, executors_active=1)
    p = TargetPolicy(100.0, max_executors=4)
    p.learn_rescales(records([row(1, 3, 1.0), rebuild, row(3, 2, 1.2), light, row(5, 1, 1.9)]), scale_ins=[])
    assert p.scale_in_cost([], light=True) == (
        pytest.approx(0.6), "learned from 1 scale-in to one executor of other programs on this cluster")
    assert p.scale_in_cost([], light=False) == (
        pytest.approx(3.1), "learned from 1 rebuilding scale-in of other programs on this cluster")
    assert p.scale_in_cost([])[0] == pytest.approx(1.85)  # kind unknown: every release of the cluster
    p.learn_rescales(records([row(1, 3, 1.0), rebuild, row(3, 2, 1.2)]), scale_ins=[])
    assert p.scale_in_cost([], light=True)[0] == pytest.approx(3.1)
    p.learn_rescales(records([row(3, 2, 1.2), light, row(5, 1, 1.9)]), scale_ins=[])
    assert p.scale_in_cost([], light=False)[0] is None  # the prior: one superstep at the new size


def test_a_releases_pause_is_held_by_the_size_it_leaves():
    """``executor_seconds`` counts a release's pause at the barrier at the size it leaves and
    its cold superstep at the size it goes to; the plans' holders say the same, by the measured
    releases' share of pause (stop69all's WCC 3 -> 1: 0.65 s at 3, then 1.15 s cold at 1)."""
    from iterflow.loop.rescales import rescale_parts

    rows = [row(1, 3, 5.0), row(2, 3, 5.0, decision="down", actuation_seconds=0.5, executors_active=1),
            row(3, 1, 6.0, cold_seconds=1.5), row(4, 1, 6.0), row(5, 1, 6.0)]
    hist = records(rows)
    assert rescale_parts(hist, "down") == [(pytest.approx(0.5), pytest.approx(1.5))]
    p = TargetPolicy(100.0, max_executors=4)
    E = [1, 2, 3, 4]
    H = p.transitions(hist, E).held
    # a light release: a quarter of its price is pause, held by the size it leaves
    assert H[2, 0] == pytest.approx(1 + 0.25 * 2) and H[3, 0] == pytest.approx(1 + 0.25 * 3)
    # a rebuilding one, none of its kind measured: all cold (the prior), at the new size
    assert H[3, 1] == pytest.approx(2.0) and H[2, 1] == pytest.approx(2.0)
    # a scale-out and no change: the new size
    assert list(H[0]) == pytest.approx(E) and H[1, 1] == pytest.approx(2.0)
    assert (p.transitions([], E).held == np.broadcast_to(np.array(E, float), (4, 4))).all()  # none measured


def test_a_release_must_save_more_than_its_pause_held_by_the_size_it_leaves():
    """The scale-in guard (``target``, ``efficiency``'s knee) holds a release's price as the
    plans do: its pause by the executors it leaves. The measured release 3 -> 1 paid 0.5 s of
    pause at 3 and 1.5 s cold at 1 (3.0 executor-seconds, not 2.0 at the new size): a release
    saving 2.5 executor-seconds does not pay, one saving 3.5 does."""
    from types import SimpleNamespace

    rows = [row(1, 3, 5.0), row(2, 3, 5.0, decision="down", actuation_seconds=0.5, executors_active=1),
            row(3, 1, 6.0, cold_seconds=1.5), row(4, 1, 6.0), row(5, 1, 6.0)]
    hist = records(rows)
    p = TargetPolicy(100.0, max_executors=4)
    t = p.transitions_from(hist, 3, [1, 2, 3])
    assert t.prices[0] == pytest.approx(2.0) and t.held[0] == pytest.approx(1.5) and t.prices[2] == 0.0

    class Rest:  # the rest of the run: 10 s at 3 executors, ``at_one`` s at 1
        def __init__(self, at_one: float) -> None:
            self.at_one = at_one

        def total(self, sizes, forecast):
            return np.array([10.0 if e == 3 else self.at_one for e in sizes])

    def ctx(at_one: float) -> SimpleNamespace:
        return SimpleNamespace(predictor=Rest(at_one), forecast=SimpleNamespace(remaining=5), history=hist, current=3)

    why = p._unpaid_scale_in(ctx(27.5), 1)  # saves 30 - 27.5 = 2.5 < 3.0
    assert why is not None and "not more than it costs (~3: 2.0s held by 1.5 executors" in why, why
    assert p._unpaid_scale_in(ctx(26.5), 1) is None  # saves 3.5 > 3.0


def test_another_programs_release_price_scales_down_to_this_programs_lighter_supersteps():
    """A cold run's release is priced by the other programs' on the cluster (the calibration
    job's), scaled by this run's median superstep over theirs at its size, at most 1: k-means'
    releases to one cost ~0.05 s where the calibration job's cost 0.5-0.8 s (stop 79g). The
    program's own measured releases are never scaled."""
    light = row(4, 2, 1.2, decision="down", actuation_seconds=0.6, executors_active=1)
    cluster = records([row(1, 2, 1.2), row(2, 2, 1.2), row(3, 2, 1.2), light, row(5, 1, 1.9)])
    p = TargetPolicy(100.0, max_executors=4)
    p.learn_rescales(cluster, scale_ins=[])
    assert p.cluster_walls == {2: pytest.approx(1.2), 1: pytest.approx(1.9)}
    kmeans = records([row(1, 2, 0.5), row(2, 2, 0.3), row(3, 2, 0.3)])
    price, how = p.scale_in_cost(kmeans, light=True)
    assert price == pytest.approx(0.6 * 0.3 / 1.2), how
    assert "scaled by 0.25" in how and "0.30s / 1.20s" in how
    heavy = records([row(1, 2, 2.4), row(2, 2, 2.4)])
    assert p.scale_in_cost(heavy, light=True) == (
        pytest.approx(0.6), "learned from 1 scale-in to one executor of other programs on this cluster")
    assert p.scale_in_cost([], light=True)[0] == pytest.approx(0.6)  # nothing of this run yet: as measured
    own = records([*kmeans, row(4, 2, 0.3, decision="down", actuation_seconds=0.4, executors_active=1),
                   row(5, 1, 0.5)])
    assert p.scale_in_cost(own, light=True) == (pytest.approx(0.4), "measured over 1 scale-in to one executor")
