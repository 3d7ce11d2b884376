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

import math
from dataclasses import dataclass, field
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


# ----------------------------------------------------------------------------- hotspots

def imbalance(partition_load: np.ndarray | Sequence[float]) -> float:
    """``max / mean`` of the partition loads: 1.0 is perfect; the job waits on the max.

    Empty partitions count in the mean (they are idle slots). No load at all is 1.0.
    """
    load = np.asarray(partition_load, dtype=np.float64)
    mean = load.mean() if load.size else 0.0
    return float(load.max() / mean) if mean > 0 else 1.0


class HotspotDetector:
    """Fires when the partition imbalance stays above ``threshold`` for ``patience`` supersteps.

    Patience is the hysteresis (as dask's ``wait_count``): one slow superstep is noise,
    and a migration costs a shuffle. After firing the streak restarts, so a plan that is
    being applied over several barriers is not re-triggered every superstep; a superstep
    at or below the threshold also restarts it. ``history`` keeps every imbalance seen.
    """

    def __init__(self, threshold: float = 1.2, patience: int = 2) -> None:
        if threshold < 1.0:
            raise ValueError(f"threshold is a max/mean ratio and must be >= 1.0, got {threshold}")
        _check_positive("patience", patience)
        self.threshold = threshold
        self.patience = patience
        self.streak = 0
        self.history: list[float] = []

    def observe(self, assignment: BinAssignment, bin_load: np.ndarray | Sequence[float]) -> bool:
        """Record one superstep's per-bin loads; True when a rebalance should be planned."""
        return self.observe_partitions(assignment.partition_load(bin_load))

    def observe_partitions(self, partition_load: np.ndarray | Sequence[float]) -> bool:
        """Same as :meth:`observe`, from loads already summed per partition."""
        ratio = imbalance(partition_load)
        self.history.append(ratio)
        self.streak = self.streak + 1 if ratio > self.threshold else 0
        if self.streak >= self.patience:
            self.streak = 0
            return True
        return False

    def reset(self) -> None:
        """Forget the current streak (e.g. after a rescale changed the partitioning)."""
        self.streak = 0


@dataclass(frozen=True)
class MigrationPlan:
    """Bin moves, split into batches of bounded size, applied one batch per barrier.

    Megaphone's batched migration: a big move would stall one superstep on a big
    shuffle; batches spread it out. Under the loads it was planned with, each
    intermediate assignment is no worse than the one before (each move lowers the
    hottest partition without creating a hotter one); if the load drifts, re-plan.
    Every bin moves at most once in a plan, so batches never overlap.

    The plan is a value: :meth:`next_assignment` finds the next batch by looking at the
    current assignment, so the driver need not keep a cursor.
    """

    n_bins: int
    n_partitions: int
    batches: list[list[Move]] = field(default_factory=list)
    imbalance_before: float = 1.0
    imbalance_after: float = 1.0

    @property
    def moves(self) -> list[Move]:
        return [m for batch in self.batches for m in batch]

    @property
    def is_empty(self) -> bool:
        return not self.batches

    def next_assignment(self, current: BinAssignment) -> BinAssignment:
        """``current`` with the first not-yet-applied batch applied (unchanged when all are)."""
        todo = self._pending(current)
        return current.with_moves(todo[0]) if todo else current  # with_moves raises on a stale plan

    def remaining(self, current: BinAssignment) -> int:
        """Number of batches not yet applied to ``current``."""
        return len(self._pending(current))

    def _pending(self, current: BinAssignment) -> list[list[Move]]:
        self._check(current)
        return [batch for batch in self.batches if not all(current.owner[b] == dst for b, _, dst in batch)]

    def final_assignment(self, start: BinAssignment) -> BinAssignment:
        """All batches applied to ``start`` at once."""
        self._check(start)
        return start.with_moves(self.moves)

    def _check(self, a: BinAssignment) -> None:
        if (a.n_bins, a.n_partitions) != (self.n_bins, self.n_partitions):
            raise ValueError(f"plan is for {self.n_bins} bins on {self.n_partitions} partitions, "
                             f"assignment has {a.n_bins} on {a.n_partitions}: re-plan after a rescale")


def plan_rebalance(assignment: BinAssignment, bin_load: np.ndarray | Sequence[float], *,
                   max_moves: int = 64, target: float = 1.1,
                   max_total_moves: int | None = None) -> MigrationPlan:
    """Greedy AutoFlow-style plan: move hot bins off the hottest partition.

    Repeat: take the hottest partition ``p`` and the coolest ``q`` (ties: lower id);
    among the bins on ``p`` not yet moved with ``0 < w < L_p - L_q`` (moving them lowers
    ``p`` and leaves ``q`` below the old ``L_p``), take the heaviest that fits in half
    the gap -- so ``q`` does not become the new hotspot -- or else the lightest one
    (ties: lower bin id). Stop when ``max/mean <= target``, when no bin qualifies (the
    max cannot drop: e.g. a hub bin, see :func:`hub_bins`) or after ``max_total_moves``.

    ``target`` should sit below the detector's threshold (hysteresis). The moves are cut
    into batches of at most ``max_moves`` -- the migration bound per barrier.
    """
    _check_positive("max_moves", max_moves)
    load = _check_load(bin_load, assignment.n_bins)
    owner = assignment.owner.copy()
    part = np.bincount(owner, weights=load, minlength=assignment.n_partitions)
    mean = part.mean()
    before = imbalance(part)
    limit = assignment.n_bins if max_total_moves is None else max_total_moves
    movable = load > 0
    moves: list[Move] = []
    while len(moves) < limit and mean > 0 and part.max() / mean > target:
        p, q = int(np.argmax(part)), int(np.argmin(part))
        gap = part[p] - part[q]
        cand = np.flatnonzero((owner == p) & movable & (load < gap))
        if cand.size == 0:
            break
        w = load[cand]
        fits = w <= gap / 2
        if fits.any():
            pick = cand[fits][np.lexsort((cand[fits], -w[fits]))[0]]
        else:
            pick = cand[np.lexsort((cand, w))[0]]
        b = int(pick)
        owner[b] = q
        movable[b] = False
        part[p] -= load[b]
        part[q] += load[b]
        moves.append((b, p, q))
    batches = [moves[i:i + max_moves] for i in range(0, len(moves), max_moves)]
    return MigrationPlan(assignment.n_bins, assignment.n_partitions, batches, before, imbalance(part))


# ----------------------------------------------------------------------------- hubs

def hub_bins(bin_load: np.ndarray | Sequence[float], n_partitions: int) -> np.ndarray:
    """Bins whose load exceeds the fair share ``total / P``, ascending.

    No assignment can bring such a bin's partition down to the mean, whatever bins are
    moved; with thousands of bins this is, in practice, one hub key (a vertex with a
    huge degree). The cure is to split the key's work, see :func:`salt_factor`.
    """
    _check_positive("n_partitions", n_partitions)
    load = np.asarray(bin_load, dtype=np.float64)
    fair = load.sum() / n_partitions
    return np.flatnonzero(load > fair) if fair > 0 else np.empty(0, dtype=np.int64)


def salt_factor(bin_load: np.ndarray | Sequence[float], n_partitions: int,
                share: float = 1.0) -> dict[int, int]:
    """How many ways to split each hub bin's work: ``{bin: k}`` for bins above ``share * total / P``.

    ``k = ceil(load / (share * total / P))``: the fewest pieces none of which exceeds
    ``share`` times the fair share (with ``share=1`` exactly the :func:`hub_bins`, and
    ``k <= P`` since a bin holds at most the total). What is chosen,
    for PageRank-like programs: the bin load is the edge work of the keys in the bin
    (out-edges by ``src``). The *edge* side of a hub is split by salting its key --
    edges get ``salt = pmod(xxhash64(dst), k)`` and are grouped by ``(src, salt)``, so
    the ``k`` pieces hash to different partitions; each piece emits its partial
    contributions, which the aggregation by ``dst`` sums as usual. The *rank* (state)
    side of a hub is one row and is not split: it is joined (broadcast or replicated
    ``k`` times) to the ``k`` edge pieces. Non-hub bins are absent (factor 1).
    """
    if share <= 0:
        raise ValueError(f"share must be > 0, got {share}")
    _check_positive("n_partitions", n_partitions)
    load = np.asarray(bin_load, dtype=np.float64)
    fair = share * load.sum() / n_partitions
    if fair <= 0:
        return {}
    return {int(b): max(2, math.ceil(load[b] / fair)) for b in np.flatnonzero(load > fair)}


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
