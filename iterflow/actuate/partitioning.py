"""Bins -> partitions: minimal-movement rescaling and hotspot rebalancing.

State keys (vertex ids) are hashed into a fixed number of *bins* (key groups, far more
than partitions, e.g. 4096), and bins are mapped to partitions by an explicit
:class:`BinAssignment`. This is Megaphone's layout: because the bin of a key never
changes, a reconfiguration is a change of the bin -> partition map only, and it can be
planned ahead, moved in small batches and measured in bins (or in bin load) moved.

Two planners work on that map, purely on bin ids and per-bin loads (they never hash a
key themselves, so they need no Spark):

* :func:`rescale` -- the partition count changes (executors came or went). Every
  partition keeps what it can and gives away only its surplus, so the fraction of bins
  that move is close to the lower bound ``1 - min(P, P') / max(P, P')``. Plain hash
  partitioning (``bin % P``) moves almost everything on a non-multiple change.
* :func:`plan_rebalance` -- the load is skewed (AutoFlow): move the hot bins off the
  hottest partition, a bounded number per barrier (:class:`MigrationPlan` batches).
  :class:`HotspotDetector` says when (imbalance above a threshold for a few supersteps).

A single bin heavier than a partition's fair share (a hub vertex) cannot be fixed by
moving bins; :func:`hub_bins` finds them and :func:`salt_factor` says how many ways the
Spark side should split their edges (see its docstring for what is chosen and why).

Everything is deterministic: ties are broken by the lower bin id / partition id.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

Move = tuple[int, int, int]
"""One bin migration: ``(bin, from_partition, to_partition)``."""


# ----------------------------------------------------------------------------- keys -> bins

def bin_column(col_name: str, n_bins: int) -> str:
    """The Spark SQL expression for a column's bin, for ``F.expr``: ``pmod(xxhash64(col), B)``.

    This is the only definition of a key's bin that matters at run time. ``xxhash64``
    (not ``hash``, which is 32-bit Murmur3 and is what Spark's own hash partitioner
    uses) keeps the bin independent of Spark's shuffle partitioning; ``pmod`` keeps it
    non-negative. Nothing from pyspark is imported: it is only a string.
    """
    _check_positive("n_bins", n_bins)
    quoted = "`" + col_name.replace("`", "``") + "`"
    return f"pmod(xxhash64({quoted}), {int(n_bins)})"


def bin_of(keys: np.ndarray | Sequence[int], n_bins: int) -> np.ndarray:
    """Bins of integer keys in numpy, for tests and offline simulation.

    It cannot reproduce Spark's ``xxhash64`` (it uses the splitmix64 finaliser), so a
    bin computed here is NOT the bin the Spark job computes with :func:`bin_column`.
    That is fine: the planners take bin ids and per-bin loads as measured by Spark and
    never hash keys themselves. Use this only to build synthetic per-bin loads.
    """
    _check_positive("n_bins", n_bins)
    z = np.ascontiguousarray(np.asarray(keys, dtype=np.int64)).view(np.uint64)
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(n_bins)).astype(np.int64)


# ----------------------------------------------------------------------------- bins -> partitions

@dataclass(frozen=True, eq=False)
class BinAssignment:
    """An immutable bin -> partition map: ``owner[b]`` is the partition of bin ``b``.

    ``owner`` is stored as a read-only int64 copy so that an assignment can be shared
    between the policy, a plan and the driver without anyone changing it underneath.
    """

    n_bins: int
    n_partitions: int
    owner: np.ndarray

    def __post_init__(self) -> None:
        _check_positive("n_bins", self.n_bins)
        _check_positive("n_partitions", self.n_partitions)
        owner = np.array(self.owner, dtype=np.int64, copy=True)
        if owner.shape != (self.n_bins,):
            raise ValueError(f"owner must have one entry per bin ({self.n_bins}), got shape {owner.shape}")
        if owner.size and (owner.min() < 0 or owner.max() >= self.n_partitions):
            raise ValueError(f"owner values must lie in [0, {self.n_partitions}); "
                             f"got [{owner.min()}, {owner.max()}]")
        owner.setflags(write=False)
        object.__setattr__(self, "owner", owner)

    @classmethod
    def uniform(cls, n_bins: int, n_partitions: int) -> "BinAssignment":
        """Contiguous bin ranges, bin counts per partition differing by at most one."""
        _check_positive("n_bins", n_bins)
        _check_positive("n_partitions", n_partitions)
        return cls(n_bins, n_partitions, (np.arange(n_bins, dtype=np.int64) * n_partitions) // n_bins)

    def counts(self) -> np.ndarray:
        """Number of bins per partition (length ``n_partitions``)."""
        return np.bincount(self.owner, minlength=self.n_partitions)

    def partition_load(self, bin_load: np.ndarray | Sequence[float]) -> np.ndarray:
        """Per-partition load: the per-bin loads summed by owner."""
        return np.bincount(self.owner, weights=_check_load(bin_load, self.n_bins), minlength=self.n_partitions)

    def bins_of(self, partition: int) -> np.ndarray:
        """Bin ids owned by ``partition``, ascending."""
        return np.flatnonzero(self.owner == partition)

    def with_moves(self, moves: Iterable[Move]) -> "BinAssignment":
        """A new assignment with ``moves`` applied; each move's source must be the current owner."""
        owner = self.owner.copy()
        for b, src, dst in moves:
            if owner[b] != src:
                raise ValueError(f"bin {b} is on partition {owner[b]}, not {src}: the move list is stale")
            owner[b] = dst
        return BinAssignment(self.n_bins, self.n_partitions, owner)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BinAssignment):
            return NotImplemented
        return (self.n_bins, self.n_partitions) == (other.n_bins, other.n_partitions) and \
            bool(np.array_equal(self.owner, other.owner))

    def __hash__(self) -> int:
        return hash((self.n_bins, self.n_partitions, self.owner.tobytes()))

    def __repr__(self) -> str:
        return f"BinAssignment(n_bins={self.n_bins}, n_partitions={self.n_partitions}, counts={self.counts().tolist()})"


def rescale(assignment: BinAssignment, new_partitions: int,
            bin_load: np.ndarray | Sequence[float] | None = None) -> BinAssignment:
    """The assignment for ``new_partitions`` partitions that moves as few bins as possible.

    Bin counts in the result are balanced (they differ by at most one). Partitions
    ``0 .. min(P, P')-1`` survive; on scale-in the highest-numbered ones are removed.
    "Keep what you can, move only the surplus":

    1. target counts: ``B // P'`` each, and the ``B % P'`` extra bins go to the
       surviving partitions that hold the most bins now (each extra slot there is one
       bin less to move; ties by partition id);
    2. every surviving partition keeps up to its target, a removed partition keeps
       nothing; the rest is released;
    3. the released bins (by bin id) fill the partitions below target (by partition id).

    On scale-out only the old partitions' surplus moves, and only to the new
    partitions; on scale-in only the removed partitions' bins move. Starting from a
    balanced assignment the moved fraction is ``1 - min(P, P')/max(P, P')`` up to
    rounding of ``B/P``. Partition counts that are multiples of each other are no
    better or worse than others, unlike ``bin % P``.

    ``bin_load``, if given, only changes *which* bins a partition releases: the lightest
    (so the least state moves, see :func:`moved_load`); otherwise the highest bin ids
    (so contiguous ranges stay contiguous). Load balance is not the aim here: a
    rescaled, count-balanced assignment may need :func:`plan_rebalance` again.
    """
    _check_positive("new_partitions", new_partitions)
    n_bins, old_p, new_p = assignment.n_bins, assignment.n_partitions, new_partitions
    load = None if bin_load is None else _check_load(bin_load, n_bins)
    survivors = min(old_p, new_p)

    current = np.zeros(new_p, dtype=np.int64)
    current[:survivors] = assignment.counts()[:survivors]
    base, extra = divmod(n_bins, new_p)
    target = np.full(new_p, base, dtype=np.int64)
    target[np.lexsort((np.arange(new_p), -current))[:extra]] += 1

    owner = np.full(n_bins, -1, dtype=np.int64)
    released: list[np.ndarray] = []
    for p in range(old_p):
        bins = assignment.bins_of(p)
        if p >= new_p:
            released.append(bins)
            continue
        if load is not None:  # keep the heaviest, release the lightest; ties: keep the lower id
            bins = bins[np.lexsort((bins, -load[bins]))]
        keep = int(min(len(bins), target[p]))
        owner[bins[:keep]] = p
        released.append(bins[keep:])

    pool = np.sort(np.concatenate(released)) if released else np.empty(0, dtype=np.int64)
    have = np.bincount(owner[owner >= 0], minlength=new_p)
    start = 0
    for q in range(new_p):
        need = int(target[q] - have[q])
        owner[pool[start:start + need]] = q
        start += need
    assert start == len(pool) and (owner >= 0).all()
    return BinAssignment(n_bins, new_p, owner)


def hash_assignment(n_bins: int, n_partitions: int) -> BinAssignment:
    """``bin % P``: what plain hash partitioning does. For contrast only; see :func:`rescale`."""
    return BinAssignment(n_bins, n_partitions, np.arange(n_bins, dtype=np.int64) % n_partitions)


def moved_bins(a: BinAssignment, b: BinAssignment) -> np.ndarray:
    """Bin ids whose partition differs between ``a`` and ``b``, ascending."""
    if a.n_bins != b.n_bins:
        raise ValueError(f"assignments have different bin counts ({a.n_bins} vs {b.n_bins})")
    return np.flatnonzero(a.owner != b.owner)


def moved_fraction(a: BinAssignment, b: BinAssignment) -> float:
    """Fraction of bins that change partition between ``a`` and ``b``."""
    return len(moved_bins(a, b)) / a.n_bins


def moved_load(a: BinAssignment, b: BinAssignment, bin_load: np.ndarray | Sequence[float]) -> float:
    """Total load (e.g. records or bytes per bin) that moves between ``a`` and ``b``.

    Absolute, in the units of ``bin_load``; divide by its sum for a fraction. This is
    the state a migration actually ships, which bin counts alone do not say.
    """
    return float(_check_load(bin_load, a.n_bins)[moved_bins(a, b)].sum())


# ----------------------------------------------------------------------------- helpers

def _check_positive(name: str, value: int) -> None:
    if int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_load(bin_load: np.ndarray | Sequence[float], n_bins: int) -> np.ndarray:
    load = np.asarray(bin_load, dtype=np.float64)
    if load.shape != (n_bins,):
        raise ValueError(f"bin_load must have one entry per bin ({n_bins}), got shape {load.shape}")
    if (load < 0).any() or not np.isfinite(load).all():
        raise ValueError("bin_load must be finite and non-negative (records or bytes per bin)")
    return load
