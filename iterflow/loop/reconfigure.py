"""Step 5 of a superstep: apply a :class:`Reconfiguration` before the next superstep.

Trisk's three dimensions, in this order:

1. **resources** -- a scale-in first copies the state to the reliable checkpoint dir (local
   checkpoint blocks on a removed executor could not be recomputed, checkpoint files can; the
   copy of this barrier if it made one already), and the run goes on from the copy; then
   executors are requested or removed through the actuator (:mod:`iterflow.actuate.executors`).
   Neither a scale-out nor a scale-in stalls the barrier (``wait_for_executors=False``, the
   default): the request is made, the next superstep starts, its tasks run on the new
   executors as they register, and the removed ones exit meanwhile. Later barriers check on them (:meth:`Reconfigurer._pending_executors`): once all
   came, the partitioning follows; after ``register_timeout`` without them, the request is
   lowered to what came and the record says so -- the policy's backoff sees a refused scale-out.
   A smaller size asked while a scale-out is registering withdraws it (the request is lowered at
   once); executors the cluster manager launched anyway are removed when they register;
2. **partitioning** -- after executors changed, the partition count follows the cores both
   ways (``partitions_follow_cores``: :data:`TASKS_PER_CORE` a core), and a relayout runs only
   if that count changes (on a scale-out, optionally built in the background while the next
   supersteps run on the old layout, :data:`PREPARE_AHEAD`, measured no faster); a policy may
   also move bins (``bin_assignment``) or set ``partitions``. The program re-places its
   cached inputs and its state in job group ``relayout-<i>``, timed and measured apart from
   the supersteps -- except a release to one executor, whose inputs stay views of their cached
   blocks and whose state is read from the release's copy by the next superstep
   (:meth:`Reconfigurer._relayout`);
3. **logic** -- the program switches its step function (``step_variant``).

What it achieved becomes the record's :class:`~iterflow.loop.records.Actuated` part. If
executors are lost meanwhile, the state of the superstep is recomputed from the anchor under
the new layout (what the failed relayout was making).
"""
from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any, NamedTuple, Sequence

from iterflow.actuate.partitioning import moved_fraction, moved_load
from iterflow.loop.background import Background
from iterflow.faults.recovery import Recovery
from iterflow.loop.ports import Actuator, Engine, StatsSource
from iterflow.loop import program as programs
from iterflow.loop.program import IterativeProgram, State
from iterflow.loop.reconfig import Reconfiguration
from iterflow.loop.records import Actuated, SuperstepRecord, split_runs

log = logging.getLogger(__name__)

#: Tasks of a stage per core. Not Spark's 2-3 (its tuning guide's, for load balance of long
#: tasks): a superstep's tasks are short and each pays a fixed launch, deserialization and a
#: shuffle block per reducer, so a stage's count is what a superstep costs where the work is
#: small. Measured (``experiments/tasks_per_core.py``, the Pareto inputs, emulated cluster), one
#: task a core against the 8 partitions a 4-core cluster used to start every job with: the job
#: 0.42x / 0.61x (WCC), 0.53x / 0.65x (PageRank), 0.79x / 0.59x (k-means) at 1 / 4 executors.
TASKS_PER_CORE = 1

#: Whether a scale-out's relayout (the partition count following the new cores) builds the
#: program's cached inputs in the background while the next supersteps run on the old layout,
#: adopted at the first barrier after it is done, instead of at the barrier where the executors
#: were seen. Off: it moves the stall, it does not save it. Measured (stop 63,
#: ``experiments/scaleout_relayout.py``, 1 -> 4 executors at barrier 2, 4 reps, emulated
#: cluster): the scale-out's barrier stall 0.95 s against 5.9 s (PageRank R-MAT 18, 1M edges),
#: 0.03 s against 5.2 s (k-means, 500k points), but the supersteps beside it ran ~2x slower --
#: the first executor serves its blocks to the move and the box's two cores are all busy -- and
#: the job took 1.09x [0.84-1.15] / 1.02x [0.86-1.11] as long. Starting on the partitions of
#: the size it scales to (no relayout at all) measured 1.13x / 1.07x: the new executors read
#: their blocks from the first one every superstep.
PREPARE_AHEAD = False


def partitions_for(cores: int) -> int:
    """The partition count at ``cores``: :data:`TASKS_PER_CORE` tasks a core, at least one."""
    return max(1, TASKS_PER_CORE * int(cores))


def cut_as_cores(history: Sequence[SuperstepRecord]) -> list[SuperstepRecord]:
    """The runs of ``history`` (split where superstep numbers restart) whose every superstep ran
    at :func:`partitions_for` its cores: earlier runs a run following the cores may learn from.
    A run at a fixed count (every run before stop 44: 8 partitions on 1 core as on 4) ran other
    tasks -- 1.6-2x as long a job at 1 executor -- and would teach the model a cluster that is
    not there."""
    return [r for run in split_runs(history) if all(x.ran.partitions == partitions_for(x.ran.cores) for x in run) for r in run]


class Ahead(NamedTuple):
    """A scale-out's relayout building in the background (:data:`PREPARE_AHEAD`)."""

    partitions: int
    group: str  # its job group, the adopting barrier's too
    job: Background


class Reconfigurer:
    """Applies reconfigurations to one run of ``program``; keeps its partition count."""

    def __init__(self, engine: Engine, actuator: Actuator | None, stats: StatsSource | None,
                 recovery: Recovery, program: IterativeProgram, partitions: int,
                 follow_cores: bool = True, wait_for_executors: bool = False) -> None:
        self.engine, self.actuator, self.stats, self.recovery = engine, actuator, stats, recovery
        self.program = program
        self.partitions = int(partitions)
        self.follow_cores = follow_cores
        self.wait_for_executors = wait_for_executors
        self.pending: tuple[int, float, int] | None = None  # (executors asked for, deadline, before)
        # (executors asked for instead, deadline): a scale-out withdrawn while its executors were
        # registering; until its deadline, late arrivals beyond the new request are removed
        self.withdrawn: tuple[int, float] | None = None
        self.ahead: Ahead | None = None  # a scale-out's inputs building beside the supersteps

    def apply(self, reconf: Reconfiguration, state: State, record: SuperstepRecord,
              history: Sequence[SuperstepRecord]) -> tuple[State, SuperstepRecord]:
        """The state after ``reconf`` and ``record`` with its ``actuated`` part."""
        current = record.executors
        act = Actuated(executors_requested=current, executors_active=current)
        try:
            state, act = self._apply(reconf, state, record.superstep, act)
            return state, record.with_(actuated=act)
        except Exception as exc:  # noqa: BLE001 - recompute re-raises what is not a loss
            variant = reconf.step_variant or self.program.variant
            state, recovered = self.recovery.recompute(exc, self.program, [*history, record],
                                                       record.superstep, variant, record.recovered)
            return state, record.with_(actuated=act, recovered=recovered)

    def _apply(self, reconf: Reconfiguration, state: State, i: int,
               act: Actuated) -> tuple[State, Actuated]:
        program, engine = self.program, self.engine
        current = act.executors_active or 0
        partitions, assignment = reconf.partitions, reconf.bin_assignment
        wanted = reconf.executors
        withdraw = self.pending is not None and wanted is not None and wanted < self.pending[0]
        if withdraw:
            self.withdrawn = (wanted, self.pending[1])
        if self.pending is not None and wanted in (None, self.pending[0]):
            # asked again for what is already coming: no new request, the register timeout runs on
            act, partitions = self._pending_executors(act, partitions, assignment)
            wanted = None
        elif self.withdrawn is not None and wanted is None and self.actuator is not None:
            # executors a withdrawn scale-out launched anyway (a standalone master starts them at
            # once) register late: more than asked for, they are removed as a scale-in would
            asked, deadline = self.withdrawn
            extra = self.actuator.registered() - asked
            if time.monotonic() >= deadline:
                self.withdrawn = None  # no more to come: no more looking (a py4j call a barrier)
            if extra > 0:
                wanted, current = asked, asked + extra
                act = replace(act, actuation_note=f"removing {extra} executor{'s' if extra > 1 else ''} that "
                                                  f"registered after their scale-out was withdrawn")
        if self.ahead is not None:  # a scale-out's relayout building in the background
            if (wanted is not None and wanted != current) or partitions is not None or assignment is not None:
                self.close()  # the plan changed: what it built is not what the next layout needs
            elif self.ahead.job.done():
                ahead, self.ahead = self.ahead, None
                state, act = self._relayout(state, i, ahead.partitions, None, act, ahead=ahead)
            else:
                act = replace(act, relayout_pending=self.ahead.partitions)
        secured = False  # the state is a copy in files: a release's
        if wanted is not None and (wanted != current or withdraw) and self.actuator is not None:
            t0 = time.perf_counter()  # the barrier's stall: securing the state, then the actuator's
            if wanted < current:
                # go on from a copy in files: a removed executor's blocks leave with it (killed),
                # or move while the next superstep reads them (decommissioned) -- going on with
                # them there measured no faster (WCC 4 -> 2 -> 1, release_cost_wcc_inmemory.txt: 1.04x
                # [0.98-1.10] the job) and would risk a rewind on a block not moved in time
                state, secured = self.recovery.secure(state, i, program.variant), True
            secured_seconds = time.perf_counter() - t0
            done = self.actuator.set_executors(wanted, wait=self.wait_for_executors)
            cores = engine.snapshot().cores
            act = replace(act, executors_requested=done.requested, executors_active=done.active,
                          actuation_seconds=secured_seconds + done.waited_seconds,
                          actuation_note="; ".join(n for n in (act.actuation_note, done.note) if n) or None,
                          cores_after=cores)
            self.pending = None
            if self.withdrawn is not None and done.requested != self.withdrawn[0]:
                self.withdrawn = None  # a new request: what comes now is asked for
            if done.requested > done.active and not self.wait_for_executors:
                self.pending = (done.requested, time.monotonic() + self._register_timeout(), done.before)
                act = replace(act, executors_pending=done.requested - done.active)
            elif done.active != done.before and partitions is None and assignment is None and self.follow_cores:
                # the count follows the cores; an unchanged count is no reason to move data (the
                # tasks go where the executors are; a removed executor's cached blocks are
                # recomputed, or migrated where Spark decommissions)
                count = partitions_for(cores)
                partitions = count if count != self.partitions else None
        if assignment is not None:
            partitions = assignment.n_partitions
        if (partitions is not None and PREPARE_AHEAD and reconf.partitions is None and assignment is None
                and not secured and partitions > self.partitions and program.can_prepare()):
            self._prepare_ahead(partitions, i)
            act, partitions = replace(act, relayout_pending=partitions), None
        if partitions is not None:
            state, act = self._relayout(state, i, partitions, assignment, act, secured)
        if reconf.step_variant is not None and reconf.step_variant != program.variant:
            switched = program.switch_variant(reconf.step_variant, state)
            act = replace(act, variant_after=reconf.step_variant)
            new, _ = engine.barrier(switched)
            engine.release(state, keep=new)
            state = new
        return state, act

    def _prepare_ahead(self, partitions: int, i: int) -> None:
        """Start building the inputs at ``partitions`` beside the next supersteps, which run on
        the old layout meanwhile; the first barrier after it is done adopts it (:meth:`_apply`)."""
        group = f"relayout-{i}"
        job = self.engine.background(group, f"re-distribute cached inputs over {partitions} partitions ahead",
                                     lambda: self.program.prepare(partitions))
        self.ahead = Ahead(partitions, group, job)

    def close(self) -> None:
        """Cancel a relayout building in the background (the plan changed, the run ended) and
        free what it built."""
        if self.ahead is not None:
            built, self.ahead = self.ahead.job.cancel(), None
            if built:
                self.program.discard_prepared(built)

    def _register_timeout(self) -> float:
        return float(getattr(self.actuator, "register_timeout", 60.0))

    def _pending_executors(self, act: Actuated, partitions: int | None,
                           assignment: Any) -> tuple[Actuated, int | None]:
        """A scale-out still registering: arrived (the partition count follows the cores, and a
        relayout runs only if that count changes), still coming (the record says how many), or
        given up after the register timeout (the request lowered to what came)."""
        asked, deadline, before = self.pending
        active = self.actuator.registered()
        if active >= asked or time.monotonic() >= deadline:
            self.pending = None
            cores = self.engine.snapshot().cores
            act = replace(act, cores_after=cores, executors_arrived=max(active - before, 0) or None)
            if active < asked:
                note = (f"scale-out to {asked} executors got {active} within {self._register_timeout():.0f}s "
                        "(cluster full?); continuing at the current size")
                self.actuator.set_executors(active)
                act = replace(act, executors_requested=asked, executors_active=active, actuation_note=note)
            if partitions is None and assignment is None and self.follow_cores:
                count = partitions_for(cores)
                partitions = count if count != self.partitions else None
            return act, partitions
        return replace(act, executors_requested=asked, executors_pending=asked - active), partitions

    def _relayout(self, state: State, i: int, partitions: int, assignment: Any,
                  act: Actuated, secured: bool = False, ahead: Ahead | None = None) -> tuple[State, Actuated]:
        """Re-place the program's inputs and state at ``partitions``. A release to one executor
        dividing the count (``secured``: the state is the copy in files the release made;
        decommissioned executors hand their cached blocks over) is not materialized here: the
        inputs stay views of their cached blocks (:meth:`~iterflow.loop.program.IterativeProgram.
        recache`) and the state a view of the copy, which the next superstep reads and its
        barrier checkpoints. Measured side by side (``experiments/lazy_release.py``, 2 reps): the
        release's barrier PageRank 3 -> 1 0.58 s against 5.37 s, WCC 3 -> 1 1.23 s against
        4.82 s; with the first superstep's excess 1.80 s against 5.63 s, 3.54 s against 4.86 s;
        executor-seconds 0.77x / 0.90x.

        ``ahead``: the inputs were built in the background (:meth:`_prepare_ahead`, its job done):
        adopted here, and only the state is re-placed at the barrier; where building them
        failed, they are built here instead."""
        program, engine = self.program, self.engine
        lazy = (secured and programs.LAZY_NARROW and assignment is None and act.executors_active == 1
                and 1 <= partitions < self.partitions and self.partitions % partitions == 0
                and getattr(self.actuator, "decommissions", False) is True)
        prepared = None
        if ahead is not None:
            group = ahead.group
            try:
                prepared = ahead.job.result()
            except Exception as exc:  # noqa: BLE001 - built at the barrier instead (a loss recomputes there)
                log.warning("relayout built ahead failed (%s); re-laying out at the barrier",
                            str(exc).splitlines()[0][:200])
        else:
            group = f"relayout-{i}"
        t0 = time.perf_counter()
        engine.job_group(group, "re-distribute cached inputs and state")
        before = program.layout.assignment if program.layout is not None else None
        self.partitions = partitions
        engine.set_partitions(partitions)
        with program.narrow_views(lazy):
            moved = (program.adopt(partitions, prepared, state) if prepared is not None
                     else program.relayout(partitions, state, assignment))
        if lazy or (secured and assignment is None and programs.DEFER_RELEASED_STATE):
            new = moved  # the copy stays the recovery's anchor, freed with it
        else:
            new, _ = engine.barrier(moved)
            engine.release(state, keep=new)
        wall = time.perf_counter() - t0
        act = replace(act, partitions_after=partitions, relayout_seconds=wall,
                      relayout_ahead_seconds=ahead.job.seconds if prepared is not None else None)
        if before is not None and program.layout is not None:
            after, load = program.layout.assignment, program.bin_load(new)
            act = replace(act, bins_moved_fraction=moved_fraction(before, after))
            if load is not None and load.sum() > 0:  # share of the work (edges) whose partition changed
                act = replace(act, load_moved_fraction=moved_load(before, after, load) / load.sum())
        if self.stats is not None:
            figures = self.stats.collect_group(group, wall, engine.snapshot())
            act = replace(act, relayout_shuffle_bytes=figures.shuffle_read_bytes,
                          relayout_remote_bytes=figures.shuffle_remote_bytes)
        return new, act
