"""Key ranges of a cached-frame lookup (pure logic, no Spark)."""
from __future__ import annotations

import numpy as np
import pytest

from iterflow.loop.lookup import key_ranges


def test_few_keys_are_their_own_ranges_sorted_and_distinct():
    assert key_ranges([7, 3, 3, 11], most=4) == [(3, 3), (7, 7), (11, 11)]
    assert key_ranges([], most=4) == []


def test_more_keys_than_ranges_split_at_the_widest_gaps():
    # gaps: 1-2 (1), 2-10 (8), 10-11 (1), 11-40 (29), 40-41 (1)
    assert key_ranges([1, 2, 10, 11, 40, 41], most=3) == [(1, 2), (10, 11), (40, 41)]
    assert key_ranges([1, 2, 10, 11, 40, 41], most=2) == [(1, 11), (40, 41)]
    assert key_ranges([5, 1, 9], most=1) == [(1, 9)]


def test_ranges_cover_every_key_and_span_no_more_than_any_other_split():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 1_000_000, 200).tolist()
    ranges = key_ranges(keys, most=16)
    assert len(ranges) == 16 and all(lo <= hi for lo, hi in ranges)
    assert all(any(lo <= k <= hi for lo, hi in ranges) for k in keys)
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))  # disjoint, in order
    ks = sorted(set(keys))
    covered = sum(hi - lo for lo, hi in ranges)
    # splitting at the widest gaps leaves the least span covered: any other 15 cuts cover at least as much
    for _ in range(50):
        cuts = sorted(rng.choice(np.arange(1, len(ks)), 15, replace=False))
        bounds = [0, *cuts, len(ks)]
        other = sum(ks[b - 1] - ks[a] for a, b in zip(bounds, bounds[1:]))
        assert covered <= other


def test_a_lookup_needs_a_range():
    with pytest.raises(ValueError, match="most must be >= 1"):
        key_ranges([1], most=0)


def scanned_rows(df) -> int:
    """Rows the cached-frame scans of ``df``'s executed plan put out (whole batches: before the filter)."""
    def walk(node) -> int:
        kids = node.children()
        own = int(node.metrics().apply("numOutputRows").value()) if node.nodeName() == "InMemoryTableScan" else 0
        return own + sum(walk(kids.apply(i)) for i in range(kids.size()))
    return walk(df._jdf.queryExecution().executedPlan())


@pytest.mark.cluster
def test_a_lookup_reads_only_the_batches_that_can_hold_its_keys(spark):
    """A frame cached sorted by key within partitions: a lookup of three keys scans a few
    10,000-row batches of 200,000 rows and returns every row with those keys; the same lookup
    through a one-partition view (a release to one executor) returns the same rows."""
    from pyspark.sql import functions as F

    from iterflow.loop.hashed import by_key
    from iterflow.loop.program import IterativeProgram

    class Holder(IterativeProgram):  # only the cache bookkeeping of a program is used
        name = "holder"

        def init(self, spark):  # pragma: no cover - not run
            raise NotImplementedError

        def step(self, state, superstep):  # pragma: no cover - not run
            raise NotImplementedError

        def result(self, state):  # pragma: no cover - not run
            raise NotImplementedError

    prog = Holder(max_iterations=1)
    prog.partitions = 2
    n, keys = 200_000, [17, 123_456, 199_999]
    rows = spark.range(0, n, numPartitions=4).select((F.col("id") * 7919 % n).alias("k"), (F.col("id") % 13).alias("v"))
    cached = prog.owns(by_key(rows, 2, "k").sortWithinPartitions("k").cache())
    assert cached.count() == n
    try:
        looked = prog.lookup(cached, "k", keys)
        got = sorted(r["k"] for r in looked.collect())
        assert got == keys
        assert 0 < scanned_rows(looked) <= 6 * 10_000, scanned_rows(looked)  # <= 2 batches a key
        unpruned = cached.where(F.col("k").isin(*range(100, 130)))  # 30 literals: InSet, no pruning
        unpruned.collect()
        assert scanned_rows(unpruned) == n
        with prog.narrow_views():
            view = prog.recache(cached, 1, "k", sort=True)
        prog.partitions = 1
        assert view.rdd.getNumPartitions() == 1
        assert sorted(r["k"] for r in prog.lookup(view, "k", keys).collect()) == keys
    finally:
        prog.release()
