"""The iteration driver on the real cluster: job groups, flat plans over 200+ supersteps,
convergence rules, and the policy hook."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from iterflow.loop.driver import IterationDriver
from iterflow.loop.program import IterativeProgram, State
from iterflow.loop.reconfig import Reconfiguration
from iterflow.policies import PolicyBase

pytestmark = pytest.mark.cluster


class Halving(IterativeProgram):
    """x <- x/2 + 1 on 64 rows: converges to 2; delta = max |change|."""

    name = "halving"

    def init(self, spark):
        return State({"x": spark.range(64).select("id", F.lit(0.0).alias("x")).repartition(self.partitions, "id")})

    def step(self, state, superstep):
        return State({"x": state.frames["x"].select("id", (F.col("x") / 2 + 1).alias("x"))})

    def delta(self, old, new, rows):
        a = old.frames["x"].withColumnRenamed("x", "a")
        return float(a.join(new.frames["x"], "id").agg(F.max(F.abs(F.col("a") - F.col("x")))).first()[0])

    def result(self, state):
        return state.frames["x"]


def plan_size(df) -> int:
    return len(df._jdf.queryExecution().analyzed().toString())


def test_long_runs_stay_flat(spark):
    sizes: list[int] = []
    prog = Halving(max_iterations=120)
    orig_step = prog.step

    def step(state, i):
        new = orig_step(state, i)
        sizes.append(plan_size(new.frames["x"]))
        return new

    prog.step = step  # type: ignore[method-assign]
    res = IterationDriver(spark, partitions=2, checkpoint_interval=20).run(prog)
    assert res.iterations == 120
    # The plan of superstep 120 is as small as that of superstep 10: lineage is cut at every barrier.
    assert max(sizes[5:]) <= sizes[5] * 1.2, (sizes[5], max(sizes[5:]))
    t = res.supersteps["wall_seconds"]
    early, late = t.iloc[10:40].median(), t.iloc[-30:].median()
    print(f"median superstep time, supersteps 11-40: {early:.3f}s, last 30: {late:.3f}s (ratio {late / early:.2f})")
    # Flat time, not only a flat plan: a growing lineage makes late supersteps several times
    # slower; 2x leaves room for a noisy shared box (medians over 30 supersteps each).
    assert late <= 2.0 * early, f"superstep time grew {late / early:.2f}x over 120 supersteps"
    assert res.supersteps["checkpointed"].sum() == 120 // 20
    out = res.output.toPandas()
    assert ((out["x"] - 2).abs() < 1e-9).all()


class SelfJoin(Halving):
    """Each superstep joins the state with a frame derived from itself, as WCC joins the labels with
    the messages derived from them: without column statistics Spark estimates such a join as
    the product of its sides, so the estimate squares every superstep."""

    name = "self-join"

    def step(self, state, superstep):
        x = state.frames["x"]  # hash-partitioned by id: the join needs no exchange (no runtime statistics)
        y = x.select("id", F.col("x").alias("y"))
        return State({"x": x.join(y.hint("shuffle_hash"), "id").select("id", ((F.col("x") + F.col("y")) / 4 + 1).alias("x"))})


def test_the_size_estimate_of_a_self_joining_state_stays_bounded(spark):
    """WCC on R-MAT 19 with a 30-vertex tail stalled for minutes at superstep 27: the driver
    multiplied BigIntegers of millions of digits to estimate the checkpointed state's size.
    The barrier caps the estimate at spark.sql.defaultSizeInBytes."""
    bits: list[int] = []
    prog = SelfJoin(max_iterations=20)
    orig_step = prog.step

    def step(state, i):
        try:
            bits.append(int(state.frames["x"]._jdf.queryExecution().analyzed().stats().sizeInBytes()).bit_length())
        except ValueError:  # over 4300 decimal digits: py4j cannot hand it to Python
            bits.append(14_000)
        return orig_step(state, i)

    prog.step = step  # type: ignore[method-assign]
    res = IterationDriver(spark, partitions=2, checkpoint_interval=10).run(prog)
    assert res.iterations == 20
    assert max(bits) <= 64, bits  # it doubled every superstep: 2^20 bits by the last
    assert ((res.output.toPandas()["x"] - 2).abs() < 1e-4).all()


def test_job_groups_name_the_superstep(spark):
    res = IterationDriver(spark, partitions=2).run(Halving(max_iterations=3))
    tracker = spark.sparkContext.statusTracker()
    assert list(res.supersteps["superstep"]) == [1, 2, 3]
    for i in res.supersteps["superstep"]:
        assert tracker.getJobIdsForGroup(f"superstep-{i}"), f"no Spark job carried group superstep-{i}"
    groups = [set(tracker.getJobIdsForGroup(f"superstep-{i}")) for i in (1, 2, 3)]
    assert not (groups[0] & groups[1]) and not (groups[1] & groups[2])
    cols = {"superstep", "wall_seconds", "executors", "cores", "partitions", "decision", "reason"}
    assert cols <= set(res.supersteps.columns)
    assert (res.supersteps["executors"] == 2).all() and (res.supersteps["cores"] == 2).all()


def test_tolerance_stops_early_and_max_iterations_bounds(spark):
    res = IterationDriver(spark, partitions=2).run(Halving(max_iterations=100, tol=1e-3))
    assert res.converged and res.iterations < 20
    assert res.supersteps["delta"].iloc[-1] <= 1e-3 < res.supersteps["delta"].iloc[-2]
    capped = IterationDriver(spark, partitions=2).run(Halving(max_iterations=4, tol=1e-12))
    assert not capped.converged and capped.iterations == 4


class Recorder(PolicyBase):
    """A policy that records what it saw and asks for a partition change once."""

    name = "recorder"

    def __init__(self):
        super().__init__()
        self.seen: list[int] = []

    def decide(self, history, model=None, *, layout=None, plan=None):
        self.seen.append(history[-1].superstep)
        if len(history) == 2:
            return self._logged(2, history[-1].executors, Reconfiguration(reason="test: 3 partitions", partitions=3))
        return Reconfiguration.none("test: nothing")


def test_policy_is_consulted_at_every_barrier_and_its_partition_change_is_made(spark):
    policy = Recorder()
    res = IterationDriver(spark, policy, partitions=2).run(Halving(max_iterations=4))
    t = res.supersteps
    assert policy.seen == [1, 2, 3, 4]
    assert list(t["reason"]) == ["test: nothing", "test: 3 partitions"] + ["test: nothing"] * 2
    assert list(t["decision"]) == ["same"] * 4
    assert list(t["partitions"]) == [2, 2, 3, 3] and t["partitions_after"].iloc[1] == 3
    assert spark.conf.get("spark.sql.shuffle.partitions") == "3"  # later shuffles use the new count
    assert [(s, d) for s, d, _ in policy.log] == [(2, "same")]  # the change is in the log


def test_a_released_result_leaves_nothing_cached_on_the_executors(spark):
    """A session running job after job: each run left its final state cached (and its last
    checkpoint copy), and a later scale-in's decommissioned executors moved every stale block
    to the ones left (stop 39). Released, the executors cache what they cached before the run."""
    sc = spark.sparkContext

    def cached() -> set[int]:  # RDD ids (other tests' runs in this session cache theirs too)
        return {i.id() for i in sc._jsc.sc().getRDDStorageInfo() if i.numCachedPartitions() > 0}

    before = cached()
    res = IterationDriver(spark, checkpoint_interval=2).run(Halving(max_iterations=5))
    assert res.output.count() == 64
    mine = cached() - before
    assert mine, "the run's final state should be cached until released"
    res.release()
    assert not mine & cached(), "the run left blocks cached after its release"
