"""A scale-out's executors register seconds after they are asked for (7-8 s on the emulated
cluster): the policies count that delay, learned from earlier scale-outs, so they do not ask
for executors that would arrive after the run ended (no Spark)."""
from __future__ import annotations

import pandas as pd
import pytest

from fakes import H
from iterflow.loop.records import records
from iterflow.loop.rescales import registration_delays
from iterflow.policies import TargetPolicy

QUICK = dict(wait_count=1, cooldown=0, warmup=0)


class Model:
    """Fitted: ``1 + 100/e`` seconds a superstep."""

    X_ = [[0.0, 0.0]]

    def predict_seconds(self, scale_out: float, work: float = 1.0) -> float:
        return 1.0 + 100.0 / scale_out


def row(i: int, e: int, wall: float = 10.0, **act) -> dict:
    return {"superstep": i, "executors": e, "cores": e, "wall_seconds": wall, "work": 1.0, "partitions": 8,
            "barrier_seconds": 0.5, **act}


def scale_out_run(arrive: bool = True) -> list[dict]:
    """2 -> 4 asked at barrier 2, still coming at 3, seen registered at barrier 4."""
    rows = [row(1, 2), row(2, 2, executors_requested=4, executors_active=2, executors_pending=2,
                          actuation_seconds=0.01),
            row(3, 2, wall=12.0, executors_requested=4, executors_active=2, executors_pending=2)]
    if arrive:
        rows += [row(4, 2, wall=11.0, executors_requested=4, executors_active=4, executors_arrived=2), row(5, 4)]
    else:  # withdrawn: a scale-in to 2 asked at barrier 4
        rows += [row(4, 2, executors_requested=2, executors_active=2), row(5, 2)]
    return rows


def test_registration_delay_is_the_time_run_at_the_old_size_until_they_were_seen():
    assert registration_delays(records(scale_out_run())) == [pytest.approx(12.5 + 11.5)]
    assert registration_delays(records(scale_out_run(arrive=False))) == []


def test_registration_delay_of_a_simulated_run_is_seen_from_the_grown_size():
    rows = scale_out_run()[:3] + [row(4, 4, executors_requested=4, executors_active=4), row(5, 4)]
    assert registration_delays(records(rows)) == [pytest.approx(23.0)]


def test_target_does_not_ask_for_executors_that_would_come_after_the_run():
    """Out of reach at any size: without a delay the earliest finish is at the maximum; with
    executors known to take longer to register than the rest of the run, it is where the run
    is now, and the reason says why."""
    m = Model()
    hist = [row(i, 2, wall=51.0) for i in (1, 2, 3)]  # 2 supersteps left: 102 s at 2 executors
    blind = TargetPolicy(160, max_executors=16, max_iterations=5, rescale_seconds=0, **QUICK)
    assert blind.decide(**H(hist, m)).executors == 16
    p = TargetPolicy(160, max_executors=16, max_iterations=5, rescale_seconds=0, **QUICK)
    slow = [dict(r, wall_seconds=r["wall_seconds"] * 10) for r in scale_out_run()]  # 231 s to register
    p.learn_rescales(pd.DataFrame(slow))
    r = p.decide(**H(hist, m))
    assert r.executors is None, r.reason
    assert "executors register ~231.0s after asked (1 seen in earlier runs)" in r.reason


def test_a_short_delay_still_scales_out_and_a_run_measured_delay_comes_first():
    m = Model()
    hist = [row(i, 2, wall=51.0) for i in (1, 2, 3)]
    p = TargetPolicy(160, max_executors=16, max_iterations=12, rescale_seconds=0, **QUICK)
    p.learn_rescales(pd.DataFrame([dict(r, wall_seconds=r["wall_seconds"] * 10) for r in scale_out_run()]))
    # 9 supersteps left (459 s at 2): 231 s of them at 2, the rest at the new size -- still the
    # earliest (16), or within 2 % of it for fewer executor-seconds (pads.EARLIEST_TIE)
    r = p.decide(**H(hist, m))
    # 16 finish first (420.5 s); 14's rest of the run is within 2 % of 16's (424.5 s) for 3780
    # executor-seconds, not 4256
    assert r.executors == 14 and "earliest predicted finish 420.5s at 16 executors" in r.reason, r.reason
    assert "14 executors finish 424.5s, the rest within 2%" in r.reason
    own = scale_out_run()[:4]  # this run's own scale-out registered in 24 s
    r = p.decide(**H(own, m))
    assert "executors register ~24.0s after asked (1 seen)" in r.reason


def test_from_an_empty_store_the_clusters_executor_start_latency_is_the_delay():
    """No record of a scale-out anywhere: what the actuator measured on the live cluster before
    the run; earlier runs' records come before it, this run's before both."""
    m = Model()
    hist = [row(i, 2, wall=51.0) for i in (1, 2, 3)]
    p = TargetPolicy(160, max_executors=16, max_iterations=5, rescale_seconds=0, **QUICK)
    p.learn_start_delays([230.0, 232.0, 250.0])
    r = p.decide(**H(hist, m))
    assert r.executors is None and "~232.0s after asked (3 executor starts of this cluster)" in r.reason
    p.learn_rescales(pd.DataFrame(scale_out_run()))  # an earlier run's: 24 s
    assert "~24.0s after asked (1 seen in earlier runs)" in p.decide(**H(hist, m)).reason


class Store:
    """The status store's executor list as the REST API gives it (``addTime`` in epoch ms)."""

    def __init__(self, added: dict[str, float]) -> None:
        self.added = added

    def executors(self, active_only: bool = True) -> list[dict]:
        return [{"id": k, "addTime": v * 1000.0} for k, v in self.added.items()]


class Context:
    def __init__(self, added: dict[str, float], asked: list[tuple[float, int]]) -> None:
        self._iterflow_status = Store(added)
        self._iterflow_scale_outs = asked


def test_executor_start_delays_pair_each_executor_with_the_scale_out_before_it():
    from iterflow.observe.sparkinfo import executor_start_delays

    # start-up executors 0-3 (before any request), 1 -> 3 asked at 100 (4, 5 came), 3 -> 4 at 200
    sc = Context({"driver": 1.0, "0": 13.0, "1": 13.5, "2": 13.2, "3": 12.9, "4": 104.3, "5": 103.9,
                  "6": 206.0, "7": 900.0}, [(100.0, 3), (200.0, 4)])
    assert sorted(executor_start_delays(sc, bound=60.0)) == pytest.approx([3.9, 4.3, 6.0])
    assert executor_start_delays(Context({"0": 13.0}, []), bound=60.0) == []

