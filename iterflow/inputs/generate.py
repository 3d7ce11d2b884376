"""Synthetic inputs: R-MAT graphs (skewed degrees, like real graphs) and Gaussian-blob points.

Deterministic for a seed, vectorized with numpy, written as plain text the loaders read
(``src dst`` edge lists; CSV points), so generated data goes through the same validation
as user data.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from iterflow.files import atomic_file


def rmat_edges(scale: int, edges: int, a: float = 0.57, b: float = 0.19, c: float = 0.19,
               seed: int = 0) -> np.ndarray:
    """``edges`` R-MAT edges over ``2**scale`` vertices (Chakrabarti et al.), self-loops and
    duplicates included as drawn (the loader removes them, as it does for user data)."""
    if not 0 < a + b + c < 1:
        raise ValueError("R-MAT probabilities need a + b + c < 1")
    rng = np.random.default_rng(seed)
    src = np.zeros(edges, dtype=np.int64)
    dst = np.zeros(edges, dtype=np.int64)
    for bit in range(scale):
        r = rng.random(edges)
        right = (r >= a) & (r < a + b) | (r >= a + b + c)   # quadrants b and d
        down = r >= a + b                                    # quadrants c and d
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    # Permute vertex ids so hubs are not all small ids (keeps hash partitioning honest).
    perm = rng.permutation(1 << scale)
    return np.stack([perm[src], perm[dst]], axis=1)


def write_rmat(path: str | Path, scale: int, edges: int, seed: int = 0, a: float = 0.57,
               tail: int = 0) -> Path:
    """An R-MAT edge list; ``tail > 0`` appends a path of ``tail`` new vertices (ids from
    ``2**scale``) hanging off the first edge's source: the long, thin tail real graphs have
    (a road, a chain of replies), over which label propagation (WCC) spends ``tail`` more
    supersteps with an active set of a vertex or two."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    bc = (1 - a) * 0.19 / 0.43  # keeps Graph500's a:b:c:d = 0.57:0.19:0.19:0.05 proportions
    e = rmat_edges(scale, edges, a=a, b=bc, c=bc, seed=seed)
    if tail > 0:
        chain = np.concatenate([[e[0, 0]], (1 << scale) + np.arange(tail)])
        e = np.concatenate([e, np.stack([chain[:-1], chain[1:]], axis=1)])
    with atomic_file(path, mode=None) as fh:  # the mode of a plain open()
        fh.write(f"# R-MAT scale={scale} edges={edges} a={a} seed={seed} tail={tail}\n")
        np.savetxt(fh, e, fmt="%d")
    return path


def blobs(n: int, k: int, dim: int, seed: int = 0, spread: float = 1.0) -> np.ndarray:
    """``n`` points around ``k`` random centers in ``dim`` dimensions."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-10, 10, size=(k, dim))
    labels = rng.integers(0, k, size=n)
    return centers[labels] + rng.normal(scale=spread, size=(n, dim))


def write_points(path: str | Path, n: int, k: int, dim: int, seed: int = 0) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, mode=None) as fh:
        np.savetxt(fh, blobs(n, k, dim, seed), delimiter=",", fmt="%.10g",
                   header=",".join(f"x{i}" for i in range(dim)), comments="")
    return path
