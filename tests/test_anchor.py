"""The anchor a rewind starts from, on fakes: the state copied to files every
``checkpoint_interval`` supersteps (the run goes on in memory) and before a scale-in (the run
goes on from the copy); which frames stay readable, which files are deleted, what a save reads."""
from __future__ import annotations

import pytest

from fakes import Doubling, FakeActuator, FakeEngine, FakeModel, FakeStats, Frame, LostExecutor, ScriptedPolicy
from iterflow.loop.driver import IterationDriver
from iterflow.loop.program import State
from iterflow.loop.reconfig import Reconfiguration


def make(engine: FakeEngine, plan: dict, **kw) -> IterationDriver:
    """A driver on fakes whose policy asks ``plan`` {barrier: executors or a Reconfiguration}."""
    script = {i: r if isinstance(r, Reconfiguration) else Reconfiguration("scripted", executors=r)
              for i, r in plan.items()}
    return IterationDriver(None, ScriptedPolicy(script), engine=engine, stats=FakeStats(engine),
                           actuator=FakeActuator(engine), model=FakeModel(), partitions=4, **kw)


class Reading(Doubling):
    """Doubling that fails where it reads a frame its engine freed (blocks) or deleted (files),
    remembers whether each superstep read a copy in files, and loses an executor once in the
    delta of the superstep reaching ``lose_at``; ``carry``: a second frame carried over as is
    until that superstep (WCC's labels)."""

    def __init__(self, engine: FakeEngine, lose_at: float | None = None, carry: int = 0, **kw) -> None:
        super().__init__(**kw)
        self.engine, self.lose_at, self.carry = engine, lose_at, carry
        self.read_files: dict[int, bool] = {}

    def init(self, spark):
        return State({"x": Frame(0.0), "c": Frame(0.0)})

    def step(self, state, superstep):
        assert all(self.engine.readable(f) for f in state.frames.values()), f"superstep {superstep} reads freed frames"
        self.read_files[superstep] = state.frames["x"].reliable
        c = state.frames["c"] if superstep <= self.carry else Frame(float(superstep))
        return State({"x": Frame(state.frames["x"].value + 1), "c": c})

    def delta(self, old, new, rows):
        assert all(self.engine.readable(f) for f in (*old.frames.values(), *new.frames.values())), "delta reads freed frames"
        if new.frames["x"].value == self.lose_at:
            self.lose_at = None
            raise LostExecutor()
        return super().delta(old, new, rows)


def test_a_loss_in_delta_at_a_checkpoint_rewinds_to_the_anchor_before_it():
    """The copy of a checkpoint superstep becomes the anchor only once its delta ran: a loss
    there replays from the anchor before (rewound to its own output, the superstep would run
    twice: 7.0 for 6 supersteps)."""
    engine = FakeEngine(2)
    driver = make(engine, {}, checkpoint_interval=2)
    res = driver.run(Reading(engine, lose_at=4.0, max_iterations=6))
    assert res.output == 6.0
    assert res.records[3].recovered.recovered_from == 2 and res.records[3].recovered.replays == 1
    assert driver.recovery.anchor.superstep == 6


@pytest.mark.parametrize("reconf, from_files", [(Reconfiguration("p", partitions=8), True),
                                                (Reconfiguration("v", step_variant="fast"), True),
                                                (Reconfiguration("in", executors=1), True),
                                                (Reconfiguration.none("keep"), False)],
                         ids=["relayout", "switch", "scale-in", "none"])
def test_a_checkpoint_is_saved_from_frames_still_there(reconf, from_files):
    """A resumable run saves the anchor of a checkpoint superstep after that barrier acted: from
    the state in memory where the run still holds it, from the copy's files where a relayout, a
    step switch or a scale-in freed it."""
    engine = FakeEngine(2)
    saved = []

    def save(anchor, variant, rows):
        frames = anchor.readable.frames.values()
        assert all(engine.readable(f) for f in frames), "the save reads freed frames"
        saved.append(all(f.reliable for f in frames))

    driver = make(engine, {2: reconf}, checkpoint_interval=2, on_checkpoint=save)
    driver.run(Reading(engine, max_iterations=2))
    assert saved == [from_files]


def test_a_copy_carried_after_a_scale_in_is_deleted_once_no_longer_carried():
    """After a scale-in the run goes on from the copy and carries its frame ``c``: the next
    anchor keeps its files (the run reads them), a later one deletes them; the state a scale-in
    went on from stays readable while the next superstep's delta reads it."""
    engine = FakeEngine(2)
    driver = make(engine, {3: 1}, checkpoint_interval=4)
    prog = Reading(engine, carry=6, max_iterations=9)
    seen = {}
    driver.on_superstep = lambda r: seen.setdefault(r.superstep, [id(f) for f in engine.deleted])
    res = driver.run(prog)
    assert res.output == 9.0
    c3x, c3c, c4x, c4c = (id(f) for f in engine.copies[:4])  # the scale-in's copy (3), the anchor of 4
    assert seen[4] == [c3x]  # anchored at 4: the scale-in's x goes, its c is carried
    assert sorted(seen[8]) == sorted([c3x, c4x, c4c, c3c])  # at 8: c renewed at 7, so its old copy goes
