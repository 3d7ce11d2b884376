"""Recovery from lost executors: rewind to the last reliable checkpoint and replay.

Why it is needed: every superstep the driver *local*-checkpoints the state (lineage cut, so
plans stay flat), and a local checkpoint keeps its blocks only on the executor that computed
them. When that executor dies (killed, OOM, its worker lost), Spark cannot recompute them and
the next job that reads them fails ("Checkpoint block rdd_N_P not found"). Spark's own task
retries do not help there; the driver must.

What the driver keeps: an :class:`Anchor`, the last state written to the reliable checkpoint
dir (superstep 0 always is, then every ``checkpoint_interval`` supersteps and before a
scale-in). When a superstep fails because executors or their blocks were lost
(:func:`is_state_loss`), :func:`rewind` restores the anchor (:meth:`IterativeProgram.restore`),
replays the supersteps since with the step variant each of them used, and the failed superstep
runs again. Programs are deterministic, so the replayed state is the lost one (up to the order
of floating-point sums, which Spark never fixed anyway). Replays run in job group
``recovery-<i>`` and are not part of any superstep's statistics.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from iterflow.errors import IterflowError
from iterflow.loop.ports import Engine
from iterflow.loop.program import IterativeProgram, State
from iterflow.loop.records import Recovered, SuperstepRecord

T = TypeVar("T")

log = logging.getLogger(__name__)

# Texts of Spark failures that mean "an executor, or blocks only it held, went away".
LOSS_MARKERS = (
    "Checkpoint block",            # a local-checkpoint block on a dead executor
    "ExecutorLostFailure",
    "FetchFailed",                 # shuffle output of a dead executor (after Spark's own retries)
    "MetadataFetchFailedException",
    "Executor heartbeat timed out",
    "Lost executor",
    "BlockManagerId",
    "Remote RPC client disassociated",
    "worker lost",
)


class RecoveryError(IterflowError):
    """A superstep kept failing after executors were lost, or no executor is left."""


@dataclass
class Anchor:
    """The last reliably checkpointed state: the output of superstep ``superstep`` (0: the
    initial state), laid out for step variant ``variant`` (the variant whose columns it has);
    ``source``: the in-memory state it was copied from, which the run goes on with."""

    superstep: int
    state: State
    variant: str
    source: State | None = None

    @property
    def readable(self) -> State:
        """The frames to read the anchor from: the in-memory state it copies where there is
        one (a periodic save reads no file and caches nothing twice; :meth:`Recovery.save`
        hands over an anchor without it where the run moved on), else its files."""
        return self.source if self.source is not None else self.state


#: ``on_checkpoint(anchor, next_variant, rows)``: called after every barrier that wrote a
#: reliable checkpoint, with the state of that superstep, the step variant the next superstep
#: uses and the superstep table's rows so far (what a resumed run needs, see
#: :mod:`iterflow.faults.resume`).
CheckpointHook = Callable[[Anchor, str, list[dict[str, Any]]], None]


@dataclass
class Resume:
    """Where a resumed run starts: the state saved after superstep ``superstep`` (frames read
    back, driver-side values), the variant whose columns the frames have (``variant``), the
    variant of the next superstep (``next_variant``) and the rows of supersteps 1..``superstep``."""

    superstep: int
    state: State
    variant: str
    next_variant: str
    history: list[dict[str, Any]]


def is_state_loss(exc: BaseException) -> bool:
    """Whether a Spark failure was caused by lost executors or their blocks (worth a rewind)."""
    text = str(exc)
    return any(marker in text for marker in LOSS_MARKERS)


def first_line(exc: BaseException) -> str:
    """The informative line of a (py4j) Spark error: the failure reason, without stack traces."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    line = next((ln for ln in lines if any(m in ln for m in LOSS_MARKERS)), lines[0] if lines else "")
    if "Exception: " in line:  # "...: java...ExecutionException: org...SparkException: <the reason>"
        line = line.rsplit("Exception: ", 1)[1]
    return (line or type(exc).__name__)[:300]


class Recovery:
    """Rewinds and replays after lost executors; keeps the anchor (the last reliable checkpoint).

    The loop calls it; it calls back nothing of the loop: a replay needs only the program's
    step and the engine's barrier. ``max_recoveries``: how often one superstep may be rewound
    before the run fails with :class:`RecoveryError`; ``recovery_wait``: seconds a recovery
    waits for at least one executor; ``on_checkpoint``: see :data:`CheckpointHook`.
    """

    def __init__(self, engine: Engine, *, max_recoveries: int = 3, recovery_wait: float = 120.0,
                 on_checkpoint: CheckpointHook | None = None) -> None:
        self.engine = engine
        self.max_recoveries = max_recoveries
        self.recovery_wait = recovery_wait
        self.on_checkpoint = on_checkpoint
        self.anchor: Anchor | None = None
        self._carried: list[Any] = []  # old anchors' frames the run still carried: deleted later

    # -- the anchor ---------------------------------------------------------------------------
    def anchor_at(self, superstep: int, state: State, variant: str, source: State | None = None) -> None:
        """A newer reliable checkpoint (copied from ``source``, the state the run goes on
        with) replaces the anchor; the old one's files are deleted, but for frames the run
        still reads (a copy it went on with after a scale-in, carried over since: deleted at
        a later anchor, once no longer carried)."""
        old, self.anchor = self.anchor, Anchor(superstep, state, variant, source)
        anchored = {id(df) for df in state.frames.values()}
        used = {id(df) for df in source.frames.values()} if source is not None else set()
        seen, gone, kept = set(), [], []
        for df in [*(old.state.frames.values() if old is not None else ()), *self._carried]:
            if id(df) in seen or id(df) in anchored:
                continue
            seen.add(id(df))
            (kept if id(df) in used else gone).append(df)
        self._carried = kept
        if gone:
            self.engine.discard(State({str(k): df for k, df in enumerate(gone)}, {}))

    def forget(self) -> None:
        """The run is over and its result used: the anchor's copy and the old ones the run still
        carried are deleted (files and cache); a rewind is no longer possible."""
        old = [*(self.anchor.state.frames.values() if self.anchor is not None else ()), *self._carried]
        self.anchor, self._carried = None, []
        if old:
            self.engine.discard(State({str(k): df for k, df in enumerate(old)}, {}))

    def copy_of(self, state: State) -> State | None:
        """The anchor's state where it is ``state`` or a copy of it (files that outlive any
        executor), else ``None``."""
        a = self.anchor
        return a.state if a is not None and (a.state is state or a.source is state) else None

    def secure(self, state: State, superstep: int, variant: str) -> State:
        """``state`` copied to files and made the anchor (unless it is already: a copy this
        barrier made); returns the copy to go on with, ``state``'s blocks freed. Executors may
        leave after this without a rewind."""
        copy = self.copy_of(state)
        if copy is None:
            copy = self.engine.secure(state)
            self.anchor_at(superstep, copy, variant, source=state)
        if copy is state:
            return state
        self.engine.release(state, keep=copy)  # the save sees the run moved on (Recovery.save)
        return copy

    def save(self, program: IterativeProgram, superstep: int, history: Sequence[SuperstepRecord],
             current: State) -> float | None:
        """Hand the anchor of ``superstep`` to ``on_checkpoint`` (job group ``checkpoint-<i>``),
        read from memory only while ``current`` is still the state it copies
        (:attr:`Anchor.readable`; not after a relayout, a step switch or a scale-in freed it);
        returns the seconds it took. A failed save is logged, not fatal: a resume then starts
        from an older checkpoint."""
        if self.on_checkpoint is None or self.anchor is None or self.anchor.superstep != superstep:
            return None
        t0 = time.perf_counter()
        self.engine.job_group(f"checkpoint-{superstep}", f"{program.name}: save state of superstep {superstep}")
        anchor = self.anchor
        if anchor.source is not None and anchor.source is not current:
            anchor = dataclasses.replace(anchor, source=None)  # the run moved on: read the files
        try:
            self.on_checkpoint(anchor, program.variant, [r.row() for r in history])
        except Exception as exc:  # noqa: BLE001 - see docstring
            log.warning("saving the checkpoint of superstep %d failed: %s", superstep, first_line(exc))
            return None
        return time.perf_counter() - t0

    # -- surviving a loss -----------------------------------------------------------------------
    def attempt(self, action: Callable[[State, dict[str, int]], T], state: State, rows: dict[str, int],
                program: IterativeProgram, history: Sequence[SuperstepRecord],
                upto: int) -> tuple[T, Recovered | None]:
        """``action(state, rows)``; when it fails because executors were lost, the state after
        superstep ``upto`` is recomputed from the anchor and the action runs again on it."""
        failures: list[str] = []
        info: dict[str, Any] = {}
        while True:
            try:
                return action(state, rows), (Recovered(**info) if info else None)
            except Exception as exc:  # noqa: BLE001 - _recover re-raises what is not a loss
                state, rows = self._recover(exc, program, history, upto, program.variant, failures, info)

    def recompute(self, exc: Exception, program: IterativeProgram, history: Sequence[SuperstepRecord],
                  upto: int, variant: str, earlier: Recovered | None) -> tuple[State, Recovered]:
        """After ``exc`` (a failure while reconfiguring): the state after ``upto`` recomputed
        from the anchor, laid out for ``variant``; the recoveries count on from ``earlier``."""
        earlier = earlier or Recovered()
        failures = [earlier.recovery_error or ""] * (earlier.recoveries or 0)
        info = {k: v for k in ("replays", "recovery_seconds") if (v := getattr(earlier, k)) is not None}
        state, _ = self._recover(exc, program, history, upto, variant, failures, info)
        return state, dataclasses.replace(earlier, **info)

    def secured(self, program: IterativeProgram, state: State, history: Sequence[SuperstepRecord]) -> State:
        """The final state, reliably checkpointed: the output is read from it after the run
        (written, collected), when local-checkpoint blocks could be lost with an executor."""
        if not state.frames:
            return state
        upto = history[-1].superstep if history else 0

        def secure(s: State, _rows: dict[str, int]) -> State:
            return self.secure(s, upto, program.variant)

        secured, _ = self.attempt(secure, state, {}, program, history, upto)
        return secured

    def _recover(self, exc: Exception, program: IterativeProgram, history: Sequence[SuperstepRecord],
                 upto: int, variant: str, failures: list[str],
                 info: dict[str, Any]) -> tuple[State, dict[str, int]]:
        """Rewind to the anchor and replay through superstep ``upto`` (bounded retries);
        re-raises ``exc`` when it is not a loss of executors or state blocks."""
        while True:
            # an anchor past ``upto`` would replay nothing and rerun a superstep on its own output
            if not is_state_loss(exc) or self.anchor is None or self.anchor.superstep > upto:
                raise exc
            failures.append(first_line(exc))
            if len(failures) > self.max_recoveries:
                raise RecoveryError(
                    f"superstep {upto + 1} failed {len(failures)} times after losing executors or their "
                    f"state blocks; gave up after {self.max_recoveries} recoveries. Last failure: "
                    f"{failures[-1]}") from exc
            anchor = self.anchor
            log.warning("superstep %d failed after losing executors (%s); rewinding to the checkpoint "
                        "of superstep %d and replaying %d superstep(s) (recovery %d of at most %d)",
                        upto + 1, failures[-1], anchor.superstep, max(0, upto - anchor.superstep),
                        len(failures), self.max_recoveries)
            t0 = time.perf_counter()
            try:
                self._wait_for_executors()
                state, rows, replays = self._rewind(program, anchor, history, upto, variant)
            except Exception as again:  # noqa: BLE001 - lost more executors while replaying
                exc = again
                continue
            info.update(recovered_from=anchor.superstep, recoveries=len(failures), recovery_error=failures[-1],
                        replays=info.get("replays", 0) + replays,
                        recovery_seconds=info.get("recovery_seconds", 0.0) + time.perf_counter() - t0)
            return state, rows

    def _wait_for_executors(self) -> int:
        """Wait (bounded) until at least one executor is registered; a replay with none would
        wait for resources forever. Returns the executors active."""
        deadline = time.monotonic() + self.recovery_wait
        active = self.engine.snapshot().executors
        while active < 1 and time.monotonic() < deadline:
            time.sleep(0.5)
            active = self.engine.snapshot().executors
        if active < 1:
            raise RecoveryError(f"no executor left after {self.recovery_wait:.0f}s of waiting; cannot "
                                "recover (is the cluster still up?)")
        return active

    def _rewind(self, program: IterativeProgram, anchor: Anchor, history: Sequence[SuperstepRecord],
                upto: int, variant: str) -> tuple[State, dict[str, int], int]:
        """The state after superstep ``upto``, recomputed from ``anchor``.

        Supersteps ``anchor.superstep + 1 .. upto`` are replayed, each with the step variant it
        used; the result is adapted to ``variant``, the one in force for the next superstep, and
        local-checkpointed. Returns ``(state, rows, replayed supersteps)``.
        """
        engine = self.engine
        engine.job_group(f"recovery-{upto + 1}", f"{program.name}: rewind to superstep {anchor.superstep}")
        program.variant = anchor.variant  # the anchor's frames have this variant's columns
        state = program.restore(State(dict(anchor.state.frames), dict(anchor.state.values)))
        if any(callable(df) for df in state.frames.values()):  # superstep 0's lineage anchor
            state, _ = engine.barrier(state)
        for j in range(anchor.superstep + 1, upto + 1):
            used = history[j - 1].ran.variant if j - 1 < len(history) else program.variant
            if used != program.variant:
                state = program.switch_variant(used, state)
            new, _ = engine.barrier(program.step(state, j))
            engine.release(state, keep=new)
            state = new
        if variant != program.variant:
            state = program.switch_variant(variant, state)
        new, rows = engine.barrier(state)
        engine.release(state, keep=new)
        return new, rows, max(0, upto - anchor.superstep)
