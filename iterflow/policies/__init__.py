"""Policies: at every barrier, decide a :class:`~iterflow.loop.reconfig.Reconfiguration`.

* :mod:`~iterflow.policies.core` -- the :class:`Policy` protocol, the decision log, ``static``;
* :mod:`~iterflow.policies.forecast` -- the rest of the run: supersteps left and their work;
* :mod:`~iterflow.policies.predictor` -- superstep times at other sizes (the model, or work/cores);
* :mod:`~iterflow.policies.prices` -- what a rescale costs, learned, and whether it pays;
* :mod:`~iterflow.policies.base` -- what every adaptive rule shares (warm-up, cooldown,
  hysteresis, failed scale-outs, start plans);
* :mod:`~iterflow.policies.rules` -- ``target``;
* :mod:`~iterflow.policies.efficiency` -- ``efficiency`` (the cheapest per-superstep plan within a runtime bound);
* :mod:`~iterflow.policies.fastest` -- ``fastest`` (the fastest per-superstep plan within a budget);
* :mod:`~iterflow.policies.plans` -- the per-superstep plans both search;
* :mod:`~iterflow.policies.dynamic` -- Spark's own dynamic allocation;
* :mod:`~iterflow.policies.layout` -- partitioning (hot bins) and step-logic wrappers;
* :mod:`~iterflow.policies.registry` -- the policies by CLI name, built from options.
"""
from iterflow.policies.base import AdaptivePolicy, Context, Predictor, Want
from iterflow.policies.core import LogEntry, Policy, PolicyBase, StaticPolicy, Wrapper
from iterflow.policies.dynamic import DynamicAllocationPolicy
from iterflow.policies.efficiency import EfficiencyPolicy
from iterflow.policies.fastest import FastestPolicy
from iterflow.policies.forecast import Forecast, forecast
from iterflow.policies.layout import LogicSwitch, Rebalancing
from iterflow.policies.registry import POLICIES, make_policy
from iterflow.policies.rules import TargetPolicy

__all__ = ["AdaptivePolicy", "Context", "DynamicAllocationPolicy", "EfficiencyPolicy", "FastestPolicy",
           "Forecast", "LogEntry", "LogicSwitch", "POLICIES", "Policy", "PolicyBase", "Predictor",
           "Rebalancing", "StaticPolicy", "TargetPolicy", "Want", "Wrapper", "forecast", "make_policy"]
