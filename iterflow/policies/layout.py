"""Policies on the two other dimensions of a reconfiguration: partitioning and step logic.

Both wrap an executor policy (any :class:`~iterflow.policies.registry.Policy`) and add to its
:class:`~iterflow.loop.reconfig.Reconfiguration`, so one decision per barrier covers Trisk's three
dimensions and one reason string explains all of it.

* :class:`Rebalancing` -- AutoFlow's hotspot rule on Megaphone's bins: when the partition
  imbalance implied by the measured per-bin load stays above ``threshold`` for ``patience``
  supersteps, plan moves of the heaviest bins off the hottest partitions (greedy,
  :func:`~iterflow.actuate.partitioning.plan_rebalance`) and apply them ``max_moves`` per barrier.
  The plan is computed at the barrier that fires and kept: later barriers only apply its next
  batch (prepared ahead). A rescale of executors takes precedence and drops the plan (the
  partition count changes, the plan would be stale).
* :class:`LogicSwitch` -- switch the program to another step function once the program's
  delta (e.g. PageRank's L1 change) falls to ``below``: "most ranks have settled".

The loop passes what they need as the ``layout`` observation of the last superstep: its
per-bin load (numpy) and the current :class:`~iterflow.actuate.partitioning.BinAssignment`;
tests pass hand-made ones.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from iterflow.actuate.rebalance import HotspotDetector, MigrationPlan, hub_bins, imbalance, plan_rebalance
from iterflow.loop.plan import RunPlan
from iterflow.loop.reconfig import Reconfiguration
from iterflow.loop.records import Layout
from iterflow.policies.core import History, Policy, Wrapper


class Rebalancing(Wrapper):
    """Adds hotspot rebalancing (bin moves) to the decisions of ``inner``."""

    def __init__(self, inner: Policy, threshold: float = 1.2, patience: int = 2, max_moves: int = 256,
                 target: float = 1.05) -> None:
        if not target < threshold:
            raise ValueError(f"target ({target}) must be below threshold ({threshold}): hysteresis")
        super().__init__(inner)
        self.name = f"{inner.name}+rebalance"
        self.detector = HotspotDetector(threshold, patience)
        self.max_moves = max_moves
        self.target = target
        self.plan: MigrationPlan | None = None

    def decide(self, history: History, model: Any = None, *, layout: Layout | None = None,
               plan: RunPlan | None = None) -> Reconfiguration:
        reconf = self.inner.decide(history, model, layout=layout, plan=plan)
        last = history[-1]
        load, current = (layout.bin_load, layout.assignment) if layout is not None else (None, None)
        if load is None or current is None:
            return reconf
        if reconf.executors is not None and reconf.executors != last.executors:
            self.plan = None
            self.detector.reset()
            return reconf
        now = imbalance(current.partition_load(load))
        if self.plan is not None and (self.plan.n_partitions != current.n_partitions
                                      or self.plan.remaining(current) == 0):
            self.plan = None
        if self.plan is None and self.detector.observe(current, load):
            plan = plan_rebalance(current, load, max_moves=self.max_moves, target=self.target)
            hubs = hub_bins(load, current.n_partitions)
            note = f"; {len(hubs)} hub bin(s) heavier than a partition's fair share" if len(hubs) else ""
            if plan.is_empty:
                return self._log(last, replace(reconf, reason=f"{reconf.reason}; imbalance {now:.2f} "
                                                              f"but no bin move helps{note}"))
            self.plan = plan
            reconf = replace(reconf, reason=f"{reconf.reason}; imbalance {now:.2f} for "
                                            f"{self.detector.patience} supersteps: plan {len(plan.moves)} bin "
                                            f"moves in {len(plan.batches)} batch(es), to {plan.imbalance_after:.2f}"
                                            + note)
        if self.plan is not None:
            nxt = self.plan.next_assignment(current)
            left = self.plan.remaining(nxt)
            return self._log(last, replace(reconf, bin_assignment=nxt,
                                           reason=f"{reconf.reason}; rebalance: batch applied, {left} left"))
        return reconf

    def _log(self, last: Any, reconf: Reconfiguration) -> Reconfiguration:
        return self._logged(last.superstep, last.executors, reconf)


class LogicSwitch(Wrapper):
    """Switches the program to step function ``variant`` once its delta falls to ``below``."""

    def __init__(self, inner: Policy, variant: str = "delta", below: float = 1e-3) -> None:
        if not below > 0:
            raise ValueError(f"below must be > 0 (got {below})")
        super().__init__(inner)
        self.name = f"{inner.name}+{variant}"
        self.variant = variant
        self.below = below
        self.switched_at: int | None = None

    def decide(self, history: History, model: Any = None, *, layout: Layout | None = None,
               plan: RunPlan | None = None) -> Reconfiguration:
        reconf = self.inner.decide(history, model, layout=layout, plan=plan)
        last = history[-1]
        delta = last.ran.delta
        if self.switched_at is None and delta is not None and delta == delta and delta <= self.below:
            self.switched_at = last.superstep
            return self._logged(last.superstep, last.executors, replace(
                reconf, step_variant=self.variant,
                reason=f"{reconf.reason}; delta {delta:.3g} <= {self.below:g}: switch to the {self.variant} step"))
        return reconf
