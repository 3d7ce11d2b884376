"""The policies by their CLI names, and how one is built from options (once per run).

A policy is a plain Python object (:class:`~iterflow.policies.core.Policy`) that sees only the
superstep records, the resource model, the layout observation and the run plan -- no
SparkSession -- so it is driven by hand-made records in tests.

* ``static`` -- :class:`StaticPolicy`, fixed executors (the baseline);
* ``target`` -- :class:`TargetPolicy`, finish within a runtime target for the fewest
  executor-seconds;
* ``efficiency`` -- :class:`EfficiencyPolicy`, the fewest executor-seconds with the whole run
  within a bound of static at the maximum (``rule="knee"``: release executors whose marginal
  speedup fell below a threshold);
* ``fastest`` -- :class:`FastestPolicy`, the shortest runtime for no more executor-seconds
  than static at a baseline;
* ``dynamic-allocation`` -- :class:`DynamicAllocationPolicy`, Spark's own dynamic allocation
  (no-op at barriers; ``spark_conf()`` for the session).
"""
from __future__ import annotations

import inspect
from typing import Any

from iterflow.policies.base import AdaptivePolicy
from iterflow.policies.core import Policy, StaticPolicy
from iterflow.policies.dynamic import DynamicAllocationPolicy
from iterflow.policies.fastest import FastestPolicy
from iterflow.policies.efficiency import EfficiencyPolicy
from iterflow.policies.rules import TargetPolicy

__all__ = ["AdaptivePolicy", "DynamicAllocationPolicy", "EfficiencyPolicy", "FastestPolicy",
           "POLICIES", "Policy", "StaticPolicy", "TargetPolicy", "make_policy"]


POLICIES: dict[str, type] = {
    "static": StaticPolicy,
    "target": TargetPolicy,
    "efficiency": EfficiencyPolicy,
    "fastest": FastestPolicy,
    "dynamic-allocation": DynamicAllocationPolicy,
}


def _flag(param: str) -> str:
    return "--" + param.replace("_", "-")


def _parameters(cls: type) -> dict[str, inspect.Parameter]:
    """Constructor parameters, including those an adaptive policy passes on to its base."""
    params: dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        if klass is object or "__init__" not in vars(klass):
            continue
        for p in inspect.signature(klass.__init__).parameters.values():
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                params.setdefault(p.name, p)
    return params


def make_policy(name: str, **kwargs: Any) -> Policy:
    """A policy by its CLI name.

    Keyword arguments whose value is ``None`` are dropped (a CLI option not given); any other
    the policy does not take, a missing required one, or a bad value is an :class:`InputError`
    that names the option.
    """
    from iterflow.errors import InputError

    try:
        cls = POLICIES[name]
    except KeyError:
        raise InputError(f"--policy: unknown policy {name!r} (choose from {', '.join(POLICIES)})") from None
    params = _parameters(cls)
    given = {k: v for k, v in kwargs.items() if v is not None}
    unknown = sorted(set(given) - set(params))
    if unknown:
        takes = ", ".join(_flag(p) for p in params) or "no options"
        raise InputError(f"{_flag(unknown[0])} does not apply to --policy {name} (it takes {takes})")
    missing = [p for p in params if params[p].default is inspect.Parameter.empty and p not in given]
    if missing:
        raise InputError(f"{_flag(missing[0])} is required for --policy {name}")
    try:
        return cls(**given)
    except (TypeError, ValueError) as exc:
        raise InputError(f"--policy {name}: {exc}") from None
