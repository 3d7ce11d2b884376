"""Key lookups in cached frames: read only the column batches that can hold the keys.

Spark keeps each cached batch's min and max per column and skips a batch a filter rules out
(``spark.sql.inMemoryColumnarStorage.partitionPruning``, on by default) -- for comparisons of a
column with literals, ``IN`` a literal list, and AND / OR of them; not for ``InSet``, which the
optimizer makes of an ``IN`` of more than ten literals. A frame cached *sorted by its key within
each partition* holds a narrow key range per batch (10,000 rows), so a filter on a few keys
reads a few batches of each partition: an index lookup without an index, as Flink's delta
iterations look the workset's keys up in their indexed solution set.

Why: a delta iteration's late supersteps touch a few vertices, yet every superstep scanned the
whole cached adjacency to join those few (WCC on R-MAT 20 with a 30-vertex tail: 230 ms of a
560 ms tail superstep on one 0.5-core executor, 27 of its 33 supersteps). The filter is a
superset (key ranges), never the selection itself: the join that follows selects exactly, so a
frame not sorted, not cached, or read through a view gives the same rows, only slower.
"""
from __future__ import annotations

from typing import Iterable

from pyspark.sql import Column
from pyspark.sql import functions as F

#: Most ranges a lookup's filter holds: every row of a batch it reads is tested against each,
#: so more ranges read fewer batches and test each row more.
RANGES = 16


def key_ranges(keys: Iterable[int], most: int = RANGES) -> list[tuple[int, int]]:
    """The distinct ``keys``, sorted, as at most ``most`` closed ranges ``(lo, hi)`` covering
    them; where more keys than ranges, split at the ``most - 1`` widest gaps (the least span
    covered, so the fewest batches read)."""
    if most < 1:
        raise ValueError(f"most must be >= 1 (got {most})")
    ks = sorted(set(keys))
    if len(ks) <= most:
        return [(k, k) for k in ks]
    widest = sorted(range(1, len(ks)), key=lambda i: ks[i] - ks[i - 1], reverse=True)[:most - 1]
    out, start = [], 0
    for cut in sorted(widest):
        out.append((ks[start], ks[cut - 1]))
        start = cut
    out.append((ks[start], ks[-1]))
    return out


def keys_filter(column: str, keys: Iterable[int], most: int = RANGES) -> Column:
    """A filter on ``column`` true for every one of ``keys`` (and for others in their ranges),
    made of comparisons with literals only, so that a cached frame's scan prunes its batches."""
    ranges = key_ranges(keys, most)
    if not ranges:
        raise ValueError(f"no keys to look up in {column!r}")
    # one SQL text, one py4j call: as Column operations, a few dozen calls of ~1 ms each
    col = f"`{column}`"
    return F.expr(" OR ".join(f"{col} = {int(lo)}" if lo == hi else f"({col} >= {int(lo)} AND {col} <= {int(hi)})"
                              for lo, hi in ranges))
