"""A reconfiguration: what a policy wants changed at a barrier, as a plain value.

It covers Trisk's three dimensions -- resources (executors), workload partitioning
(partition count, bin assignment) and execution logic (the step variant) -- plus the
reason, which is logged with every superstep.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reconfiguration:
    """``None`` on a dimension means "leave it as it is"."""

    reason: str
    executors: int | None = None
    partitions: int | None = None
    bin_assignment: Any | None = None
    step_variant: str | None = None

    @classmethod
    def none(cls, reason: str) -> "Reconfiguration":
        return cls(reason=reason)

    def decision(self, current_executors: int) -> str:
        """``up``, ``down`` or ``same`` for the executor dimension (the decision log's label)."""
        if self.executors is None or self.executors == current_executors:
            return "same"
        return "up" if self.executors > current_executors else "down"

    @property
    def is_noop(self) -> bool:
        return (self.executors, self.partitions, self.bin_assignment, self.step_variant) == (None,) * 4
