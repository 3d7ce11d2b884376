"""Policies: consulted at every barrier, they return a :class:`Reconfiguration`.

A policy is a plain Python object that sees only the per-superstep history (a list of
dicts, the same rows as the run's superstep table) -- no SparkSession -- so it can be
driven by hand-made statistics in tests.
"""
from __future__ import annotations

from typing import Any, Protocol

from iterflow.reconfig import Reconfiguration

History = list[dict[str, Any]]


class Policy(Protocol):
    name: str

    def decide(self, history: History) -> Reconfiguration:
        """Called after the barrier of the last superstep in ``history``."""
        ...


class StaticPolicy:
    """Fixed executors and partitions: the baseline every adaptive policy is measured against."""

    name = "static"

    def decide(self, history: History) -> Reconfiguration:
        return Reconfiguration.none("static policy: keep executors and partitions")


POLICIES: dict[str, type] = {"static": StaticPolicy}


def make_policy(name: str, **kwargs: Any) -> Policy:
    """A policy by its CLI name."""
    from iterflow.errors import InputError

    try:
        cls = POLICIES[name]
    except KeyError:
        raise InputError(f"--policy: unknown policy {name!r} (choose from {', '.join(POLICIES)})") from None
    return cls(**kwargs)
