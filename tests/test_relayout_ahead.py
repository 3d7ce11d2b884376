"""A scale-out's relayout built in the background (:data:`iterflow.loop.reconfigure.PREPARE_AHEAD`,
off by default): the supersteps go on at the old layout beside it, the first barrier after it is
done adopts it, a changed plan or the run's end cancels it -- against in-memory fakes, no
SparkSession."""
from __future__ import annotations

import time

import pytest

from fakes import Doubling, FakeActuator, FakeEngine, FakeModel, FakeStats, Frame, ScriptedPolicy
from iterflow.loop import reconfigure
from iterflow.loop.background import Background
from iterflow.loop.driver import IterationDriver
from iterflow.loop.program import State
from iterflow.loop.reconfig import Reconfiguration
from iterflow.loop.records import feeds_model, is_cold
from iterflow.loop.rescales import rescale_costs


class WithInputs(Doubling):
    """Doubling with one cached input, a fake frame holding its partition count."""

    cached_inputs = (("edges", ("src",), False),)

    def __init__(self, fail: bool = False, **kw) -> None:
        super().__init__(**kw)
        self.fail, self.freed, self.prepared_at = fail, [], []

    def init(self, spark) -> State:
        self.edges = Frame(float(self.partitions))
        return super().init(spark)

    def prepare(self, partitions: int) -> dict:
        self.prepared_at.append(partitions)
        if self.fail:
            raise RuntimeError("executor lost while building")
        return {"edges": Frame(float(partitions))}

    def free(self, df) -> None:
        self.freed.append(df)


@pytest.fixture(autouse=True)
def ahead(monkeypatch):
    monkeypatch.setattr(reconfigure, "PREPARE_AHEAD", True)


def run(plan: dict, supersteps: int = 8, release_at: int | None = 5, fail: bool = False, lag: int = 1):
    """A run from 2 executors and 2 partitions, the policy asking ``plan`` {barrier: executors};
    the background work held until barrier ``release_at`` (``None``: never released by the run)."""
    engine = FakeEngine(2)
    engine.hold.clear()
    policy = ScriptedPolicy({i: Reconfiguration("scripted", executors=n) for i, n in plan.items()})
    driver = IterationDriver(None, policy, engine=engine, stats=FakeStats(engine), actuator=FakeActuator(engine, lag=lag),
                             model=FakeModel(), partitions=2)

    def release(record) -> None:
        if record.superstep == release_at and engine.jobs:
            engine.hold.set()
            engine.jobs[-1]._thread.join()  # done before the next barrier looks
    driver.on_superstep = release
    program = WithInputs(fail=fail, max_iterations=supersteps)
    res = driver.run(program)
    return res, {r.superstep: r for r in res.records}, program, engine


def test_a_scale_out_builds_its_layout_beside_the_supersteps_and_adopts_it_when_done():
    res, r, program, engine = run({2: 4})
    # barrier 3 saw the executors: the inputs at 4 partitions start building, nothing re-laid out
    assert r[3].actuated.executors_arrived == 2 and r[3].actuated.relayout_pending == 4
    assert r[3].actuated.partitions_after is None and r[3].actuated.relayout_seconds is None
    assert engine.events.count(("background", "relayout-3")) == 1 and program.prepared_at == [4]
    # supersteps 4 and 5 ran on the old layout at 4 executors; barrier 4 still saw it building
    assert [r[k].ran.partitions for k in (4, 5)] == [2, 2] and r[4].actuated.relayout_pending == 4
    # barrier 6 (the first after it was done) adopted it: the old input freed, the state re-placed
    assert r[6].actuated.partitions_after == 4 and r[6].actuated.relayout_ahead_seconds is not None
    assert r[6].actuated.relayout_seconds is not None and not r[6].actuated.relayout_pending
    assert program.edges == Frame(4.0) and Frame(2.0) in program.freed
    assert ("barrier", "relayout-3") in engine.events  # the state, in the relayout's own job group
    assert [r[k].ran.partitions for k in (7, 8)] == [4, 4] and res.output == 8.0


def test_supersteps_beside_it_and_the_first_on_its_layout_are_cold_and_priced_to_the_scale_out():
    _, r, _, _ = run({2: 4})
    rs = list(r.values())
    pairs = list(zip([None, *rs[:-1]], rs))
    # 4: the new executors' first; 5, 6: beside the relayout (old layout); 7: the first on the new one
    assert [x.superstep for p, x in pairs if is_cold(x, p)] == [4, 5, 6, 7]
    assert [x.superstep for p, x in pairs if feeds_model(x, p)] == [2, 3, 8]
    from dataclasses import replace
    with_cold = [x.with_(predicted=replace(x.predicted, cold_seconds=1.0)) if x.superstep in (4, 5, 6, 7) else x
                 for x in rs]
    (price,) = rescale_costs(with_cold)  # one scale-out: its request, the cold supersteps, the adoption
    assert price == pytest.approx(4.0 + r[2].actuated.pause_seconds + r[6].actuated.pause_seconds)


def test_a_changed_plan_cancels_the_relayout_building_and_frees_what_it_built():
    _, r, program, engine = run({2: 4, 4: 2}, release_at=None)
    assert ("cancel", "relayout-3") in engine.events and Frame(4.0) in program.freed
    assert r[4].actuated.executors_active == 2 and r[4].actuated.relayout_ahead_seconds is None
    assert not r[4].actuated.relayout_pending and program.edges == Frame(2.0)


def test_the_run_ending_cancels_a_relayout_still_building():
    _, r, program, engine = run({2: 4}, supersteps=5, release_at=None)
    assert r[5].actuated.relayout_pending == 4 or r[5].decided.decision == "same"
    assert ("cancel", "relayout-3") in engine.events and engine.jobs[-1].done()
    assert Frame(4.0) in program.freed and program.edges == Frame(2.0)


def test_a_relayout_that_failed_building_is_made_at_the_barrier_instead(monkeypatch):
    made = []
    monkeypatch.setattr(WithInputs, "relayout", lambda self, n, state, a=None: made.append(n) or state)
    _, r, program, _ = run({2: 4}, fail=True)
    assert program.prepared_at == [4] and made == [4]
    assert r[6].actuated.partitions_after == 4 and r[6].actuated.relayout_ahead_seconds is None


def test_off_the_relayout_runs_at_the_barrier_that_saw_the_executors(monkeypatch):
    monkeypatch.setattr(reconfigure, "PREPARE_AHEAD", False)  # the default
    _, r, program, engine = run({2: 4})
    assert r[3].actuated.partitions_after == 4 and not r[3].actuated.relayout_pending
    assert not engine.jobs and program.prepared_at == [4] and program.edges == Frame(4.0)


def test_a_program_without_cached_inputs_relayouts_at_the_barrier():
    engine = FakeEngine(2)
    policy = ScriptedPolicy({2: Reconfiguration("more", executors=4)})
    driver = IterationDriver(None, policy, engine=engine, stats=FakeStats(engine),
                             actuator=FakeActuator(engine, lag=1), model=FakeModel(), partitions=2)
    r = {x.superstep: x for x in driver.run(Doubling(max_iterations=5)).records}
    assert r[3].actuated.partitions_after == 4 and not engine.jobs


def test_background_hands_over_its_result_its_error_and_stops_on_cancel():
    assert Background(lambda: 7).result() == 7
    with pytest.raises(ValueError, match="bad"):
        Background(lambda: (_ for _ in ()).throw(ValueError("bad"))).result()
    stop = []
    job = Background(lambda: [time.sleep(0.01) for _ in range(500) if not stop] and None or "built",
                     cancel=lambda: stop.append(1))
    assert job.cancel() == "built" and stop == [1] and job.done() and job.seconds < 5
