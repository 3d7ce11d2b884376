"""The warm-up an epoch of executors needs before its supersteps are steady, learned from
earlier runs' records; the model learns past it, in the live run as in a warm start. No Spark."""
from __future__ import annotations

from iterflow.loop.records import SuperstepRecord, epoch_ages, model_rows
from iterflow.model.warmup import warmup_supersteps

from fakes import Doubling, FakeModel, ScriptedPolicy


def recs(walls, executors=None, work=None, start=1):
    executors = executors or [1] * len(walls)
    work = work or [100.0] * len(walls)
    return [SuperstepRecord.from_row({"superstep": start + k, "wall_seconds": w, "executors": e, "cores": e,
                                      "work": u}) for k, (w, e, u) in enumerate(zip(walls, executors, work))]


# the issue-13 scenario's first run: 1 executor for 2 supersteps, then 4 (cold, cold, warming, steady)
SCENARIO = [7.1, 6.5, 11.1, 12.8, 3.3, 2.6, 2.3, 2.1, 2.1, 2.4, 3.8, 2.1, 1.8, 2.0]
SIZES = [1, 1] + [4] * 12


def test_epochs_restart_at_a_new_executor_count_and_at_a_new_run():
    rs = recs([2.0] * 4, [1, 1, 2, 2]) + recs([2.0] * 3)
    assert epoch_ages(rs) == [1, 2, 1, 2, 1, 2, 3]


def test_a_slow_warm_up_is_learned_from_the_epoch_that_reached_its_steady_state():
    # the 4-executor epoch: 11.1/2.1, 12.8/2.1, 3.3/2.1 = 1.6 above the steady 2.1 s, then 2.6/2.1 = 1.24
    assert warmup_supersteps(recs(SCENARIO, SIZES)) == 3
    assert warmup_supersteps(recs(SCENARIO, SIZES), tol=0.1) == 4


def test_a_quick_warm_up_keeps_the_one_superstep_rule():
    assert warmup_supersteps(recs([3.0, 1.1, 1.0, 1.05, 0.98, 1.0, 1.02, 0.99])) == 1
    assert warmup_supersteps(recs([1.0] * 8)) == 1


def test_only_long_epochs_of_constant_work_teach_it():
    assert warmup_supersteps(recs([7.0, 6.0, 2.0, 2.0, 2.0])) == 1  # too short for a steady half
    # a converging job's supersteps fall because its work does, not because the JVM warms up
    shrinking = recs([8.0, 6.0, 4.0, 2.0, 1.0, 1.0, 1.0, 1.0], work=[80, 60, 40, 20, 10, 10, 10, 10])
    assert warmup_supersteps(shrinking) == 1


def test_the_model_rows_leave_out_each_epochs_warm_up():
    rows = model_rows(recs(SCENARIO, SIZES), warmup=3)
    # neither 1-executor superstep (both warming up): 1 executor is not learned as 3x slower than it is
    assert [r[0] for r in rows] == [4.0] * 9 and [r[2] for r in rows][0] == 2.6
    assert len(model_rows(recs(SCENARIO, SIZES))) == 14 - 2  # the one-superstep rule: 1 and 3 left out


def test_the_driver_learns_the_warm_up_from_earlier_runs_and_feeds_past_it():
    from iterflow.loop.driver import IterationDriver

    from fakes import FakeActuator, FakeEngine, FakeStats

    past = [r.row() for r in recs(SCENARIO, SIZES)]
    engine, model = FakeEngine(1), FakeModel()
    driver = IterationDriver(None, ScriptedPolicy(), engine=engine, stats=FakeStats(engine),
                             actuator=FakeActuator(engine), model=model, partitions=4, past=past)
    driver.run(Doubling(max_iterations=5))
    assert driver.warmup == 3
    assert len(model.rows) == 9 + 2  # the earlier run's steady supersteps, then this run's 4 and 5

    fresh_model = FakeModel()
    fresh = IterationDriver(None, ScriptedPolicy(), engine=FakeEngine(1), stats=FakeStats(engine),
                            actuator=FakeActuator(engine), model=fresh_model, partitions=4)
    fresh.run(Doubling(max_iterations=5))
    assert fresh.warmup == 1 and len(fresh_model.rows) == 4  # nothing to learn from: superstep 1 only


def test_a_runs_first_supersteps_excess_is_learned_from_epochs_that_start_a_run():
    from iterflow.model.warmup import start_excess

    start = recs([6.0, 4.0, 2.2, 2.0, 2.0, 2.1, 1.9, 2.0])  # 3x, 2x, then steady
    assert start_excess(start) == [3.0, 2.0]
    # the scenario's 4-executor epoch is cold too, but it starts after a rescale (that is a
    # rescale's price, not a run's start): only its run-start epoch of 2 supersteps, too short
    assert start_excess(recs(SCENARIO, SIZES)) == []
    assert start_excess(start + recs([2.0] * 8)) == [2.0, 1.5]  # the median over two runs
