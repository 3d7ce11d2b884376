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

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from iterflow.errors import IterflowError
from iterflow.loop.program import IterativeProgram, State
from iterflow.loop.reconfig import Reconfiguration
from iterflow.observe.sparkinfo import executor_snapshot

if TYPE_CHECKING:  # pragma: no cover
    from iterflow.loop.driver import IterationDriver

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
    initial state), laid out for step variant ``variant`` (the variant whose columns it has)."""

    superstep: int
    state: State
    variant: str


#: ``on_checkpoint(anchor, next_variant, history)``: called after every barrier that wrote a
#: reliable checkpoint, with the state of that superstep, the step variant the next superstep
#: uses and the superstep rows so far (what a resumed run needs, see :mod:`iterflow.faults.resume`).
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


def wait_for_executors(sc: Any, timeout: float) -> int:
    """Wait (bounded) until at least one executor is registered; a replay with none would wait
    for resources forever. Returns the executors active."""
    deadline = time.monotonic() + timeout
    active = executor_snapshot(sc).executors
    while active < 1 and time.monotonic() < deadline:
        time.sleep(0.5)
        active = executor_snapshot(sc).executors
    if active < 1:
        raise RecoveryError(f"no executor left after {timeout:.0f}s of waiting; cannot recover "
                            "(is the cluster still up?)")
    return active


def rewind(driver: "IterationDriver", program: IterativeProgram, anchor: Anchor,
           history: list[dict[str, Any]], upto: int, variant: str) -> tuple[State, dict[str, int], int]:
    """The state after superstep ``upto``, recomputed from ``anchor``.

    Supersteps ``anchor.superstep + 1 .. upto`` are replayed, each with the step variant it used
    (``history[j-1]["variant"]``); the result is adapted to ``variant``, the one in force for
    the next superstep, and local-checkpointed. Returns ``(state, rows, replayed supersteps)``.
    """
    sc = driver.sc
    sc.setJobGroup(f"recovery-{upto + 1}", f"{program.name}: rewind to superstep {anchor.superstep}",
                   interruptOnCancel=False)
    program.variant = anchor.variant  # the anchor's frames have this variant's columns
    state = program.restore(State(dict(anchor.state.frames), dict(anchor.state.values)))
    for j in range(anchor.superstep + 1, upto + 1):
        used = history[j - 1].get("variant", program.variant)
        if used != program.variant:
            state = program.switch_variant(used, state)
        new, _ = driver._barrier(program.step(state, j), reliable=False)
        driver._release(state, keep=new)
        state = new
    if variant != program.variant:
        state = program.switch_variant(variant, state)
    new, rows = driver._barrier(state, reliable=False)
    driver._release(state, keep=new)
    return new, rows, max(0, upto - anchor.superstep)


def delete_checkpoint_files(sc: Any, state: State) -> None:
    """Delete the reliable-checkpoint files behind ``state``'s frames (an anchor that a newer
    one replaced), so a long run does not keep every checkpoint it ever wrote."""
    for df in state.frames.values():
        try:
            opt = df._jdf.queryExecution().logical().rdd().getCheckpointFile()
            if opt.isDefined():
                path = sc._jvm.org.apache.hadoop.fs.Path(opt.get())
                path.getFileSystem(sc._jsc.hadoopConfiguration()).delete(path, True)
        except Exception as exc:  # noqa: BLE001 - not a checkpointed leaf, or already gone: disk only
            log.debug("checkpoint files not deleted: %s", str(exc).splitlines()[0][:200])


class Recovering:
    """The fault side of :class:`~iterflow.loop.driver.IterationDriver` (a mixin: it uses the
    driver's ``_superstep``, ``_apply``, ``_barrier`` and ``_release``): reruns of failed
    supersteps, the anchor, checkpoints handed out for resuming, and resuming itself."""

    sc: Any
    stats: Any
    model: Any
    max_recoveries: int
    recovery_wait: float
    on_checkpoint: CheckpointHook | None
    _anchor: Anchor | None
    _next_prediction: float

    def _resumed(self, program: IterativeProgram, resume: Resume) -> tuple[State, list[dict[str, Any]], int]:
        """The saved state in place of the initial one; the model re-fed with the saved rows."""
        program.variant = resume.variant
        state = program.restore(resume.state)
        if resume.next_variant != program.variant:
            state = program.switch_variant(resume.next_variant, state)
        history = [dict(r) for r in resume.history]
        for r in history:
            if self.stats is not None and r["superstep"] > 1 and "work" in r:
                self.model.observe(r["cores"], r["work"], r["wall_seconds"])
        if history:
            self._next_prediction = self._predict(history[-1])  # type: ignore[attr-defined]
        log.warning("resuming %s after superstep %d", program.name, resume.superstep)
        return state, history, resume.superstep

    def _attempt(self, program: IterativeProgram, state: State, rows: dict[str, int], i: int,
                 history: list[dict[str, Any]]) -> dict[str, Any]:
        """Superstep ``i``; rerun after a rewind when it failed because executors were lost."""
        failures: list[str] = []
        info: dict[str, Any] = {}
        while True:
            try:
                record = self._superstep(program, state, rows, i)  # type: ignore[attr-defined]
                break
            except Exception as exc:  # noqa: BLE001 - _recover re-raises what is not a loss
                state, rows = self._recover(exc, program, history, i - 1, program.variant, failures, info)
        record.update(info)
        return record

    def _apply_recovering(self, reconf: Reconfiguration, state: State, record: dict[str, Any],
                          program: IterativeProgram, history: list[dict[str, Any]]) -> State:
        """:meth:`_apply`; if executors are lost meanwhile, the state of this superstep is
        recomputed from the anchor under the new layout (what the failed relayout was making)."""
        try:
            return self._apply(reconf, state, record, program)  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - _recover re-raises what is not a loss
            failures = [str(record.get("recovery_error", ""))] * int(record.get("recoveries", 0))
            info = {k: record[k] for k in ("replays", "recovery_seconds") if k in record}
            state, _ = self._recover(exc, program, history, record["superstep"],
                                     reconf.step_variant or program.variant, failures, info)
            record.update(info)
            return state

    def _recover(self, exc: Exception, program: IterativeProgram, history: list[dict[str, Any]],
                 upto: int, variant: str, failures: list[str],
                 info: dict[str, Any]) -> tuple[State, dict[str, int]]:
        """Rewind to the anchor and replay through superstep ``upto`` (bounded retries);
        re-raises ``exc`` when it is not a loss of executors or state blocks."""
        while True:
            if not is_state_loss(exc) or self._anchor is None:
                raise exc
            failures.append(first_line(exc))
            if len(failures) > self.max_recoveries:
                raise RecoveryError(
                    f"superstep {upto + 1} failed {len(failures)} times after losing executors or their "
                    f"state blocks; gave up after {self.max_recoveries} recoveries. Last failure: "
                    f"{failures[-1]}") from exc
            anchor = self._anchor
            log.warning("superstep %d failed after losing executors (%s); rewinding to the checkpoint "
                        "of superstep %d and replaying %d superstep(s) (recovery %d of at most %d)",
                        upto + 1, failures[-1], anchor.superstep, max(0, upto - anchor.superstep),
                        len(failures), self.max_recoveries)
            t0 = time.perf_counter()
            try:
                wait_for_executors(self.sc, self.recovery_wait)
                state, rows, replays = rewind(self, program, anchor, history, upto, variant)  # type: ignore[arg-type]
            except Exception as again:  # noqa: BLE001 - lost more executors while replaying
                exc = again
                continue
            info.update(recovered_from=anchor.superstep, recoveries=len(failures), recovery_error=failures[-1],
                        replays=info.get("replays", 0) + replays,
                        recovery_seconds=info.get("recovery_seconds", 0.0) + time.perf_counter() - t0)
            return state, rows

    def _secured(self, program: IterativeProgram, state: State, history: list[dict[str, Any]]) -> State:
        """The final state, reliably checkpointed: the output is read from it after the run
        (written, collected), when local-checkpoint blocks could be lost with an executor."""
        if not state.frames or (self._anchor is not None and self._anchor.state is state):
            return state
        upto = history[-1]["superstep"] if history else 0
        failures: list[str] = []
        info: dict[str, Any] = {}
        while True:
            try:
                secured, _ = self._barrier(state, reliable=True)  # type: ignore[attr-defined]
                break
            except Exception as exc:  # noqa: BLE001 - _recover re-raises what is not a loss
                state, _ = self._recover(exc, program, history, upto, program.variant, failures, info)
        self._release(state, keep=secured)  # type: ignore[attr-defined]
        self._set_anchor(Anchor(upto, secured, program.variant))
        return secured

    def _set_anchor(self, anchor: Anchor) -> None:
        """A newer reliable checkpoint replaces the anchor; the old one's files are deleted."""
        old, self._anchor = self._anchor, anchor
        if old is not None and old.state is not anchor.state:
            delete_checkpoint_files(self.sc, old.state)

    def _save_checkpoint(self, program: IterativeProgram, record: dict[str, Any],
                         history: list[dict[str, Any]]) -> None:
        """Hand the new anchor to ``on_checkpoint`` (job group ``checkpoint-<i>``); a failed save
        is logged, not fatal: a resume then starts from an older checkpoint."""
        if self.on_checkpoint is None or self._anchor is None:
            return
        i = record["superstep"]
        t0 = time.perf_counter()
        self.sc.setJobGroup(f"checkpoint-{i}", f"{program.name}: save state of superstep {i}",
                            interruptOnCancel=False)
        try:
            self.on_checkpoint(self._anchor, program.variant, history)
            record["checkpoint_saved_seconds"] = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 - see docstring
            log.warning("saving the checkpoint of superstep %d failed: %s", i, first_line(exc))

