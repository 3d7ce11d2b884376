"""Adaptive policies (issue 4). :mod:`iterflow.policies.registry` re-exports them with the static one."""
from iterflow.policies.base import AdaptivePolicy, Context, Predictor, Want
from iterflow.policies.dynamic import DynamicAllocationPolicy
from iterflow.policies.forecast import Forecast, forecast
from iterflow.policies.layout import LogicSwitch, Rebalancing
from iterflow.policies.rules import EfficiencyPolicy, FastestPolicy, TargetPolicy
from iterflow.policies.registry import POLICIES, Policy, StaticPolicy, make_policy

__all__ = ["AdaptivePolicy", "Context", "DynamicAllocationPolicy", "EfficiencyPolicy", "FastestPolicy",
           "Forecast", "LogicSwitch", "Predictor", "Rebalancing", "TargetPolicy", "Want",
           "forecast", "POLICIES", "Policy", "StaticPolicy", "make_policy"]
