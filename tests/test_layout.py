"""Bins on the real cluster: exact placement, bin moves and repartitioning mid-run, and the
switch of PageRank's step function -- each checked against a scipy power iteration."""
from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F

from algorithms import PageRank
from iterflow.actuate.bins import BinLayout
from iterflow.loop.driver import IterationDriver
from iterflow.inputs.generate import write_rmat
from iterflow.inputs.graphio import load_graph
from iterflow.actuate.partitioning import BinAssignment, bin_column
from iterflow.policies import LogicSwitch
from iterflow.policies import StaticPolicy
from iterflow.loop.reconfig import Reconfiguration
from iterflow.policies import PolicyBase
from tests.test_algorithms import scipy_pagerank

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def graph(spark, tmp_path_factory):
    path = write_rmat(tmp_path_factory.mktemp("layout") / "g.txt", scale=11, edges=15_000, seed=5)
    g = load_graph(spark, str(path), "edgelist", directed=True, partitions=4)
    e = g.edges.toPandas()[["src", "dst"]].to_numpy()
    ids = np.sort(g.vertices.toPandas()["id"].to_numpy())
    return g, e, ids


def max_rel(res, e, ids, iters) -> float:
    got = res.output.toPandas().set_index("id")["value"]
    ref = scipy_pagerank(e, ids, 0.85, iters)
    return float(((got.loc[ref.index] - ref).abs() / ref).max())


def test_rows_land_on_the_partition_that_owns_their_bin(spark):
    rng = np.random.default_rng(0)
    assignment = BinAssignment(64, 5, rng.integers(0, 5, size=64))
    layout = BinLayout(spark, assignment)
    placed = layout.place(spark.range(20_000), "id")
    got = placed.select(F.expr(bin_column("id", 64)).alias("b"), F.spark_partition_id().alias("p")).toPandas()
    assert placed.rdd.getNumPartitions() == 5
    assert (assignment.owner[got["b"].to_numpy()] == got["p"].to_numpy()).all()
    assert len(got) == 20_000


class MoveBins(PolicyBase):
    """Barrier 2: a random bin assignment (most bins move); barrier 4: 6 partitions."""

    name = "move-bins"

    def decide(self, history, model=None, *, layout=None, plan=None):
        last = history[-1]
        if last.superstep == 2:
            a = layout.assignment
            owner = np.random.default_rng(1).integers(0, a.n_partitions, size=a.n_bins)
            return Reconfiguration(reason="test: shuffle bins", bin_assignment=BinAssignment(a.n_bins, a.n_partitions, owner))
        if last.superstep == 4:
            return Reconfiguration(reason="test: 6 partitions", partitions=6)
        return Reconfiguration.none("test: keep")


def test_bin_moves_and_repartitioning_keep_pagerank_exact(spark, graph):
    g, e, ids = graph
    res = IterationDriver(spark, MoveBins(), partitions=4).run(PageRank(g, 0.85, max_iterations=6, n_bins=256, layout="bins"))
    t = res.supersteps
    assert list(t["partitions"]) == [4, 4, 4, 4, 6, 6]
    assert t.loc[1, "bins_moved_fraction"] > 0.5
    # rescale 4 -> 6 partitions moves exactly the bins the minimal-movement plan moves: 1/3
    assert abs(t.loc[3, "bins_moved_fraction"] - (1 - 4 / 6)) <= 0.05
    assert (t["partition_imbalance"] >= 1.0).all()
    assert max_rel(res, e, ids, 6) <= 1e-6


def test_switch_to_delta_step(spark, graph):
    g, e, ids = graph
    exact = IterationDriver(spark, LogicSwitch(StaticPolicy(), "delta", below=1.0), partitions=4).run(
        PageRank(g, 0.85, max_iterations=6, delta_threshold=0.0, measure_delta=True))
    assert list(exact.supersteps["variant"]) == ["full"] + ["delta"] * 5
    assert max_rel(exact, e, ids, 6) <= 1e-6   # threshold 0: the delta step is the full step

    full = IterationDriver(spark, partitions=4).run(PageRank(g, 0.85, max_iterations=12, measure_delta=True))
    approx = IterationDriver(spark, LogicSwitch(StaticPolicy(), "delta", below=1e-2), partitions=4).run(
        PageRank(g, 0.85, max_iterations=12, delta_threshold=1e-2 / len(ids), measure_delta=True))
    t, f = approx.supersteps, full.supersteps
    switched = t.index[t["variant"] == "delta"]
    assert len(switched) >= 3
    # later delta supersteps shuffle far fewer messages than full ones
    assert t["shuffle_read_records"].iloc[-1] < 0.5 * f["shuffle_read_records"].iloc[-1]
    assert max_rel(approx, e, ids, 12) <= 0.05
