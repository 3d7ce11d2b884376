"""What-if simulation without Spark (issue 14): replay measured runs under a policy.

So far the trace-driven mode (item 3): an Ellis trace (per-job durations of profiling runs at
fixed scale-outs, then runs rescaled by Ellis) is replayed under the driver's own
:class:`~iterflow.policies.rules.TargetPolicy`, beside every profiled static size and beside
the runs as Ellis scheduled them.

* :mod:`iterflow.simulate.trace` -- the trace model: profiled samples per (job, scale-out),
  targets, the rescale cost learned from the recorded runs, the model the policy consults;
* :mod:`iterflow.simulate.replay` -- the replay loop (the policy at each job barrier, static sizes);
* :mod:`iterflow.simulate.evaluate` -- targets x replays, and the scores (policy, static,
  cheapest static per target, recorded runs);
* :mod:`iterflow.simulate.report` -- the summary figures, JSON and the human-readable tables.

The recorded-run mode (item 2, ``--run``): :mod:`~iterflow.simulate.recorded` (reading a
superstep table), :mod:`~iterflow.simulate.cluster` (the discrete-event replay under the
driver's policy and model objects), :mod:`~iterflow.simulate.whatif` (sweep and output) and
:mod:`~iterflow.simulate.calibrate` (simulated vs real recorded runs, item 4).
"""
