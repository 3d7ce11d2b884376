"""Hotspot rebalancing on the bin layout (AutoFlow's rule on Megaphone's bins): when to act
(:class:`HotspotDetector`), which hot bins to move off the hottest partitions in bounded batches
(:func:`plan_rebalance`, :class:`MigrationPlan`), and the hub bins no move can fix
(:func:`hub_bins`, :func:`salt_factor`). Pure numpy on bin ids and loads: no Spark.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from iterflow.actuate.partitioning import BinAssignment, Move, _check_load, _check_positive


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
