"""What ``iterflow run`` was asked to do: the job spec, its validation (once, before any JVM
starts) and the policy its options name (built once, at validation)."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iterflow.errors import InputError
from iterflow.policies import make_policy

ALGORITHMS = ("pagerank", "wcc", "kmeans")


@dataclass
class JobSpec:
    """Everything ``iterflow run`` was asked to do (validated in :meth:`validate`)."""

    algorithm: str
    input: str
    output: str
    format: str | None = None
    directed: bool | None = None
    iterations: int | None = None
    tol: float | None = None
    k: int | None = None
    init_centers: str | None = None
    seed: int = 0
    master: str | None = None
    workers: int = 2
    cores_per_worker: int = 1
    memory: str = "2g"
    cpu_share: float | None = None
    conf: dict[str, str] = field(default_factory=dict)
    stats: str | None = None
    policy: str = "static"
    checkpoint_interval: int = 10
    track: bool = True
    executors: int | None = None
    target_seconds: float | None = None
    budget: float | None = None
    min_executors: int | None = None
    max_executors: int | None = None
    rebalance: float | None = None
    switch_to_delta: float | None = None
    wait_for_executors: bool = False

    def validate(self) -> None:
        """Check every option; a bad one raises :class:`InputError` naming it. Once per set of
        values: a spec validated and not changed since is not checked again (the CLI validates
        before it announces a run, :func:`run_job` then finds it done)."""
        if self.validated:
            return
        self._validate_types()
        if self.algorithm not in ALGORITHMS:
            raise InputError(f"unknown algorithm {self.algorithm!r} (choose from {', '.join(ALGORITHMS)})")
        if self.iterations is not None and self.iterations < 1:
            raise InputError(f"--iterations must be >= 1 (got {self.iterations})")
        if self.tol is not None and not (self.tol >= 0 and np.isfinite(self.tol)):
            raise InputError(f"--tol must be a finite number >= 0 (got {self.tol})")
        if self.algorithm == "kmeans":
            if self.k is None:
                raise InputError("--k is required for kmeans")
            if self.k < 1:
                raise InputError(f"--k must be >= 1 (got {self.k})")
        if self.workers < 1 or self.cores_per_worker < 1:
            raise InputError("--workers and --cores-per-worker must be >= 1")
        for name in ("executors", "min_executors", "max_executors"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise InputError(f"--{name.replace('_', '-')} must be >= 1 (got {v})")
        if self.target_seconds is not None and not (self.target_seconds > 0 and np.isfinite(self.target_seconds)):
            raise InputError(f"--target-seconds must be a finite number > 0 (got {self.target_seconds})")
        if self.budget is not None and not (self.budget > 0 and np.isfinite(self.budget)):
            raise InputError(f"--budget must be a finite multiple > 0 of the baseline's executor-seconds (got {self.budget})")
        if self.rebalance is not None and not (self.rebalance > 1 and np.isfinite(self.rebalance)):
            raise InputError(f"--rebalance must be a finite max/mean load ratio > 1 (got {self.rebalance})")
        if self.switch_to_delta is not None and not (self.switch_to_delta > 0 and np.isfinite(self.switch_to_delta)):
            raise InputError(f"--switch-to-delta must be a finite number > 0 (got {self.switch_to_delta})")
        if self.cpu_share is not None and not (0 < self.cpu_share <= self.cores_per_worker):
            raise InputError(f"--cpu-share must be in (0, --cores-per-worker] (got {self.cpu_share})")
        if not re.fullmatch(r"[1-9][0-9]*[kmgtp]b?", self.memory.strip().lower()):
            raise InputError(f"--memory must be a size such as 512m or 2g (got {self.memory!r})")
        if self.seed < 0:
            raise InputError(f"--seed must be >= 0 (got {self.seed})")
        if self.checkpoint_interval < 1:
            raise InputError(f"--checkpoint-interval must be >= 1 (got {self.checkpoint_interval})")
        formats = ("csv", "parquet") if self.algorithm == "kmeans" else ("graphalytics", "edgelist")
        if self.format is not None and self.format not in formats:
            raise InputError(f"--format: unknown format {self.format!r} for {self.algorithm} "
                             f"(choose from {', '.join(formats)})")
        self._validate_options_apply()
        self._validate_paths()
        # the policy's own checks, before any cluster; kept, so the run builds it only if the
        # cluster it finds holds another number of executors than --workers says
        total = self.workers if not self.master else None
        self._policy = (total, policy_for(self, total))
        self._validated_as = dataclasses.astuple(self)  # not a field: not in asdict(), spec.json

    @property
    def validated(self) -> bool:
        """Whether :meth:`validate` passed on the values the spec has now."""
        return getattr(self, "_validated_as", None) == dataclasses.astuple(self)

    def _validate_types(self) -> None:
        """Numbers are numbers (argparse in Python 3.11 turns ``--iterations=--`` into ``[]``)."""
        for name in ("iterations", "k", "seed", "workers", "cores_per_worker", "executors", "min_executors",
                     "max_executors", "checkpoint_interval", "tol", "target_seconds", "cpu_share", "rebalance",
                     "switch_to_delta", "budget"):
            value = getattr(self, name)
            integral = name not in ("tol", "target_seconds", "cpu_share", "rebalance", "switch_to_delta", "budget")
            if value is not None and (isinstance(value, bool) or not isinstance(value, int if integral else (int, float))):
                raise InputError(f"--{name.replace('_', '-')} expects {'an integer' if integral else 'a number'}"
                                 f" (got {value!r})")

    def _validate_options_apply(self) -> None:
        """Options of the other kind of program are mistakes, not silently ignored."""
        if self.algorithm == "kmeans":
            if self.directed is not None:
                raise InputError(f"--{'directed' if self.directed else 'undirected'} applies to graphs, not kmeans")
        else:
            for flag, value in (("--k", self.k), ("--init-centers", self.init_centers)):
                if value is not None:
                    raise InputError(f"{flag} applies to kmeans, not {self.algorithm}")
        if self.algorithm != "pagerank":  # the program laid out by bins, with a delta step
            for flag, value in (("--rebalance", self.rebalance), ("--switch-to-delta", self.switch_to_delta)):
                if value is not None:
                    raise InputError(f"{flag} applies to pagerank, not {self.algorithm}")

    def _validate_paths(self) -> None:
        if not self.input.strip():
            raise InputError("--input must name a file")
        if not self.output.strip():
            raise InputError("--output must name a directory")
        out = Path(self.output).resolve()
        if out == Path.cwd().resolve() or out in Path.cwd().resolve().parents:
            raise InputError(f"--output {self.output}: would replace the working directory; name a new directory")
        if "://" not in self.input and (out == Path(self.input).resolve() or out in Path(self.input).resolve().parents):
            raise InputError(f"--output {self.output}: would replace the input {self.input}")
        if self.stats and Path(self.stats).is_dir():
            raise InputError(f"--stats {self.stats}: is a directory; name a CSV file")
        probe = self.input
        if self.format == "graphalytics":
            from iterflow.inputs.graphio import graphalytics_paths

            probe = graphalytics_paths(self.input)[1]
        if "://" not in probe and not Path(probe).exists():
            raise InputError(f"{probe}: no such file")
        if self.init_centers and not Path(self.init_centers).exists():
            raise InputError(f"{self.init_centers}: no such file (--init-centers)")
        self._precheck_input()

    def _precheck_input(self) -> None:
        """The head of a local input file, in Python, before any JVM starts (see
        :mod:`iterflow.inputs.precheck`); Spark's parse checks the whole file later."""
        from iterflow.inputs import precheck
        from iterflow.inputs.graphio import _EDGE, _SKIP, _VERTEX, graphalytics_paths

        if "://" in self.input:
            return
        if self.algorithm == "kmeans":
            if (self.format or "csv") == "csv" and Path(self.input).is_file():
                precheck.check_points_csv(Path(self.input))
            return
        if self.format == "graphalytics":
            vpath, epath, _ = graphalytics_paths(self.input)
            precheck.check_lines(Path(epath), _EDGE, _SKIP, "'src dst [weight]'")
            if Path(vpath).is_file():
                precheck.check_lines(Path(vpath), _VERTEX, _SKIP, "one vertex id")
        elif Path(self.input).is_file():
            precheck.check_lines(Path(self.input), _EDGE, _SKIP, "'src dst [weight]'")


def policy_for(spec: JobSpec, total_executors: int | None):
    """The policy ``--policy`` names, with the options that apply to it, wrapped by the
    partitioning and logic adaptations ``--rebalance`` and ``--switch-to-delta`` ask for. (Where
    the run stops -- iterations, tolerance -- the loop hands every policy from the program.)"""
    from iterflow.policies.layout import LogicSwitch, Rebalancing

    policy = _executor_policy(spec, total_executors)
    if spec.rebalance is not None:
        policy = Rebalancing(policy, threshold=spec.rebalance, target=min(1.05, (1 + spec.rebalance) / 2))
    if spec.switch_to_delta is not None:
        policy = LogicSwitch(policy, "delta", below=spec.switch_to_delta)
    return policy


def _executor_policy(spec: JobSpec, total_executors: int | None):
    if spec.policy == "static":
        extra = {k: v for k, v in (("--target-seconds", spec.target_seconds), ("--min-executors", spec.min_executors),
                                   ("--max-executors", spec.max_executors)) if v is not None}
        if extra:
            raise InputError(f"{next(iter(extra))} does not apply to --policy static (use --executors)")
        return make_policy("static")
    kwargs: dict[str, Any] = {"min_executors": spec.min_executors,
                              "max_executors": spec.max_executors or total_executors,
                              "start_executors": spec.executors}
    if spec.policy != "dynamic-allocation":  # a start plan reads the calibration's slots, not executors
        kwargs["cores_per_executor"] = spec.cores_per_worker
    if spec.policy == "target":
        kwargs["target_seconds"] = spec.target_seconds
    if spec.budget is not None and spec.policy != "fastest":
        raise InputError(f"--budget applies to --policy fastest only (got --policy {spec.policy})")
    if spec.policy == "fastest":
        kwargs["baseline_executors"] = spec.executors or spec.min_executors or 1
        if spec.budget is not None:
            kwargs["budget"] = spec.budget
    return make_policy(spec.policy, **kwargs)
