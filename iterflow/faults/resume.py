"""Runs that outlive their driver: ``iterflow run ... --resume RUN_ID`` continues a run whose
driver process died (killed, OOM, the machine rebooted) from its last reliable checkpoint.

Every run has an id (``iterflow: run <id>`` at start). Its directory
``$ITERFLOW_HOME/runs/<id>/`` (0700; ``ITERFLOW_HOME`` defaults to ``~/.iterflow``) holds:

* ``spec.json`` -- the job spec (local paths made absolute);
* ``status.json`` -- ``running``, ``failed`` (with the error) or ``finished``;
* ``ckpt-<k>/`` -- the state after superstep ``k``: every state frame as Parquet
  (``frames/<name>/``), driver-side values (``values.pkl``, e.g. k-means centers), the step
  variants (``meta.json``) and the superstep table so far (``history.pkl``);
* ``latest.json`` -- which ``ckpt-<k>`` is complete. A checkpoint is written into a hidden
  directory, renamed into place, and only then named here (:mod:`iterflow.files`), so a driver
  killed while saving leaves the previous checkpoint in force;
* ``lock`` -- held (``flock``) while a process runs the run: two processes never write one run.

Resuming: the result-defining options (algorithm, input, output, format, direction, iterations,
tolerance, k, initial centers, seed) must be given again and must match the saved spec (a
mismatch is an input error); how it runs (cluster, policy, ``--conf``, checkpoint interval,
``--stats``, tracking) is taken from the new command line. The state files are written by the
executors: on a multi-node cluster ``ITERFLOW_HOME`` must be on a filesystem they share.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import pickle
import re
import secrets
import shutil
import time
from pathlib import Path
from typing import Any, Iterator

from iterflow.errors import InputError
from iterflow.files import atomic_dir, atomic_file, is_secret_key, iterflow_home, private_dir
from iterflow.loop.program import State
from iterflow.faults.recovery import Anchor, Resume

log = logging.getLogger(__name__)

#: Options that define the result; a resumed run must be given the same.
RESULT_FIELDS = ("algorithm", "input", "output", "format", "directed", "iterations", "tol", "k",
                 "init_centers", "seed", "switch_to_delta")
_PATHS = ("input", "output", "init_centers", "stats")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def runs_dir() -> Path:
    """``$ITERFLOW_HOME/runs`` (``ITERFLOW_HOME`` defaults to ``~/.iterflow``)."""
    return iterflow_home() / "runs"


def new_run_id() -> str:
    """A run id that sorts by start time and does not collide between concurrent runs."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(4)


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` to ``path`` atomically (0600)."""
    with atomic_file(path) as fh:
        json.dump(doc, fh, indent=2, default=str)


def _write_pickle(path: Path, obj: Any) -> None:
    with atomic_file(path, binary=True) as fh:
        pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)


def spec_document(spec: Any) -> dict[str, Any]:
    """The spec as JSON-able values: local paths absolute, secret-looking ``--conf`` keys left out."""
    doc = dataclasses.asdict(spec)
    for key in _PATHS:
        value = doc.get(key)
        if value and "://" not in value:
            doc[key] = os.path.abspath(value)
    doc["conf"] = {k: v for k, v in doc.get("conf", {}).items() if not is_secret_key(k)}
    return doc


class RunStore:
    """The directory of one run (see the module docstring)."""

    def __init__(self, run_id: str) -> None:
        if not _RUN_ID.match(run_id):
            raise InputError(f"--resume: {run_id!r} is not a run id (letters, digits, '.', '_', '-')")
        self.run_id = run_id
        self.dir = runs_dir() / run_id
        self._lock: int | None = None

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def create(cls, run_id: str | None, spec: Any) -> "RunStore":
        """A new run's directory with its spec; ``run_id`` ``None``: a new id."""
        store = cls(run_id or new_run_id())
        private_dir(iterflow_home())
        private_dir(runs_dir())
        try:
            store.dir.mkdir(mode=0o700)
        except FileExistsError:
            raise InputError(f"run {store.run_id} exists already in {runs_dir()}; "
                             f"use --resume {store.run_id} to continue it") from None
        store._take_lock()
        _write_json(store.dir / "spec.json", spec_document(spec))
        store._status("running")
        return store

    @classmethod
    def reopen(cls, run_id: str, spec: Any) -> "RunStore":
        """The directory of a run to resume; ``spec`` must match its saved result-defining options."""
        store = cls(run_id)
        if not (store.dir / "spec.json").exists():
            raise InputError(f"--resume: no saved run {run_id} in {runs_dir()}")
        status = store.status()
        if status.get("state") == "finished":
            raise InputError(f"--resume: run {run_id} finished at {status.get('time')}; "
                             f"its output is {status.get('output')}")
        saved, given = json.loads((store.dir / "spec.json").read_text()), spec_document(spec)
        for key in RESULT_FIELDS:
            if saved.get(key) != given.get(key):
                option = "the algorithm" if key == "algorithm" else "--" + key.replace("_", "-")
                raise InputError(f"--resume {run_id}: {option} is {given.get(key)!r} but the run was "
                                 f"started with {saved.get(key)!r}; give the run's own options")
        store._take_lock()
        store._status("running", resumes=int(status.get("resumes", 0)) + 1)
        return store

    def _take_lock(self) -> None:
        fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise InputError(f"run {self.run_id} is being run by another process") from None
        self._lock = fd  # released when this process ends, however it ends

    # -- status ----------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        try:
            return json.loads((self.dir / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def _status(self, state: str, **extra: Any) -> None:
        doc = {**self.status(), "state": state, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "pid": os.getpid(), **extra}
        _write_json(self.dir / "status.json", doc)

    @contextlib.contextmanager
    def recording(self) -> Iterator["RunStore"]:
        """Mark the run failed when the block raises (its checkpoints stay for ``--resume``)."""
        try:
            yield self
        except BaseException as exc:
            self.failed(exc)
            raise

    def failed(self, exc: BaseException) -> None:
        """The run stopped with an error; its last checkpoint stays for ``--resume``."""
        self._status("failed", error=str(exc).splitlines()[0][:500] if str(exc) else type(exc).__name__)
        self._unlock()

    def finished(self, output: str) -> None:
        """The output is in place: the checkpoints are no longer needed."""
        self._status("finished", output=os.path.abspath(output))
        (self.dir / "latest.json").unlink(missing_ok=True)
        for path in self.dir.glob("ckpt-*"):
            shutil.rmtree(path, ignore_errors=True)
        self._unlock()

    def _unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    # -- checkpoints -----------------------------------------------------------------------
    def save(self, anchor: Anchor, next_variant: str, history: list[dict[str, Any]]) -> None:
        """Write the state of superstep ``anchor.superstep`` and the table so far (atomically)."""
        k = anchor.superstep

        def write(tmp: Path) -> None:
            private_dir(tmp / "frames")
            for name, df in anchor.readable.frames.items():
                df.write.parquet((tmp / "frames" / name).as_uri())
            _write_pickle(tmp / "values.pkl", anchor.state.values)
            # per-bin figures (``_`` keys) matter to the policy in the last row only
            rows = [{k2: v for k2, v in r.items() if not k2.startswith("_") or r is history[-1]} for r in history]
            _write_pickle(tmp / "history.pkl", rows)
            _write_json(tmp / "meta.json", {"superstep": k, "variant": anchor.variant, "next_variant": next_variant,
                                            "frames": list(anchor.state.frames)})

        final = atomic_dir(self.dir / f"ckpt-{k}", write)
        _write_json(self.dir / "latest.json", {"checkpoint": final.name, "superstep": k})
        # older checkpoints, and the hidden directories of saves a killed driver left
        for old in [*self.dir.glob("ckpt-*"), *self.dir.glob(".*ckpt-*")]:
            if old.name != final.name:
                shutil.rmtree(old, ignore_errors=True)
        log.info("run %s: state of superstep %d saved in %s", self.run_id, k, final)

    def load(self, spark: Any) -> Resume | None:
        """The last complete checkpoint (frames read lazily), or ``None`` when none was saved."""
        try:
            latest = json.loads((self.dir / "latest.json").read_text())
        except FileNotFoundError:
            return None
        ckpt = self.dir / latest["checkpoint"]
        meta = json.loads((ckpt / "meta.json").read_text())
        frames = {name: spark.read.parquet((ckpt / "frames" / name).as_uri()) for name in meta["frames"]}
        with open(ckpt / "values.pkl", "rb") as fh:
            values = pickle.load(fh)
        with open(ckpt / "history.pkl", "rb") as fh:
            history = pickle.load(fh)
        return Resume(int(meta["superstep"]), State(frames, values), meta["variant"], meta["next_variant"], history)
