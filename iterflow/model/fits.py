"""The numeric pieces of :class:`~iterflow.model.resource.ResourceModel`: input checks, the
relative median, Ernest's NNLS fit, the scaling and power-law trends, ratio interpolation
(PCHIP in log m) and the CV splits. Tiny numpy classes, so a refit takes milliseconds.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np
from scipy.optimize import nnls
from sklearn.utils.validation import check_array

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- input handling
def split_features(X: Any) -> tuple[np.ndarray, np.ndarray]:
    """Return (scale_out, work) float arrays from X (column 0 = m, optional column 1 = work).

    A DataFrame with columns named ``scale_out``/``work`` is read by name, anything else by
    position. Raises ValueError on non-positive scale-outs or non-finite values, so that sklearn
    utilities see the usual exception type.
    """
    cols = getattr(X, "columns", None)
    if cols is not None and "scale_out" in cols:
        m = np.asarray(X["scale_out"], dtype=float)
        w = np.asarray(X["work"], dtype=float) if "work" in cols else np.ones_like(m)
    else:
        arr = check_array(X, dtype=float, ensure_2d=False, ensure_all_finite=False)
        if arr.ndim == 1:
            arr = arr[:, None]
        m = arr[:, 0]
        w = arr[:, 1] if arr.shape[1] > 1 else np.ones_like(m)
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(w))):
        raise ValueError("X contains non-finite values")
    if np.any(m <= 0):
        raise ValueError("scale-out (column 0) must be > 0")
    if np.any(w < 0):
        raise ValueError("work (column 1) must be >= 0")
    return m, w


def n_features(X: Any) -> int:
    """Number of input columns (for sklearn's ``n_features_in_``)."""
    shape = np.shape(X)
    return int(shape[1]) if len(shape) == 2 else 1


def check_times(y: Any, n: int) -> np.ndarray:
    """y as a float vector of n positive, finite times (ValueError otherwise)."""
    yy = np.asarray(y, dtype=float).ravel()
    if n == 0:
        raise ValueError("cannot fit on zero observations")
    if yy.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {yy.shape[0]}")
    if not np.all(np.isfinite(yy)) or np.any(yy <= 0):
        raise ValueError("y (time) must be finite and > 0")
    return yy


def relative_median(values: np.ndarray) -> float:
    """Weighted median with weights 1/y: the constant c minimising Σ|c − y|/y.

    Why: the error that matters is relative, and under relative error the best single stand-in
    for repeated runs is this value, not the mean (which stragglers inflate).
    """
    v = np.asarray(values, dtype=float)
    return weighted_median(v, 1.0 / v)


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The value where the ``weights`` of the values sorted below it first reach half of theirs."""
    v, w = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    order = np.argsort(v, kind="stable")
    cum = np.cumsum(w[order])
    return float(v[order][np.searchsorted(cum, 0.5 * cum[-1])])


def _aggregate(m: np.ndarray, w: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Collapse repeated runs at equal (m, work) into (m, w, relative median, count), vectorised."""
    order = np.lexsort((y, w, m))
    ms, ws, ys = m[order], w[order], y[order]
    new = np.ones(ms.size, dtype=bool)
    new[1:] = (ms[1:] != ms[:-1]) | (ws[1:] != ws[:-1])
    starts = np.flatnonzero(new)
    gid = np.cumsum(new) - 1
    cum = np.cumsum(1.0 / ys)
    before = np.concatenate([[0.0], cum[starts[1:] - 1]])
    ends = np.append(starts[1:], ms.size) - 1
    within = cum - before[gid]
    half = 0.5 * (cum[ends] - before)
    idx = np.where(within >= half[gid] * (1 - 1e-12), np.arange(ms.size), ms.size)
    first = np.minimum.reduceat(idx, starts)
    return ms[starts], ws[starts], ys[first], np.diff(np.append(starts, ms.size)).astype(float)


# ----------------------------------------------------------------------------- candidates
def _ernest_design(m: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones_like(m), w / m, np.log(m), m])


def _nnls_fit(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """NNLS with column scaling (work can be bytes, 1e9 × larger than the other columns)."""
    scale = np.sqrt((A * A).sum(axis=0))
    scale[scale == 0] = 1.0
    theta, _ = nnls(A / scale, y, maxiter=50 * A.shape[1])
    return theta / scale


class _Ernest:
    """Ernest's model; ``relative`` rows are divided by y so NNLS minimises relative error."""

    name = "ernest"

    def __init__(self, relative: bool) -> None:
        self.relative = relative
        self.theta = np.zeros(4)

    def fit(self, m: np.ndarray, w: np.ndarray, y: np.ndarray, n: np.ndarray) -> "_Ernest":
        A = _ernest_design(m, w)
        rw = np.sqrt(n) / y if self.relative else np.sqrt(n)
        self.theta = _nnls_fit(A * rw[:, None], y * rw)
        return self

    def predict(self, m: np.ndarray, w: np.ndarray) -> np.ndarray:
        return _ernest_design(m, w) @ self.theta


class _Scaling:
    """``t = c · work / m`` (perfect scaling), c = relative median of y·m/work."""

    def __init__(self) -> None:
        self.c = 1.0

    def fit(self, m: np.ndarray, w: np.ndarray, y: np.ndarray, n: np.ndarray) -> "_Scaling":
        ww = np.where(w > 0, w, 1.0)
        self.c = relative_median(np.repeat(y * m / ww, n.astype(int)))
        return self

    def predict(self, m: np.ndarray, w: np.ndarray) -> np.ndarray:
        return self.c * np.where(w > 0, w, 1.0) / m


def _pchip_edge(h0: float, h1: float, d0: float, d1: float) -> float:
    """Shape-preserving one-sided end slope (as scipy's PCHIP uses)."""
    d = ((2 * h0 + h1) * d0 - h0 * d1) / (h0 + h1)
    if np.sign(d) != np.sign(d0):
        return 0.0
    if np.sign(d0) != np.sign(d1) and abs(d) > abs(3 * d0):
        return 3 * d0
    return float(d)


def _pchip(x: np.ndarray, y: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Monotone cubic (Fritsch–Carlson) interpolation, flat outside [x0, xn]; numpy-only for speed."""
    q = np.clip(q, x[0], x[-1])
    if x.size < 3:
        return np.interp(q, x, y)
    h, d = np.diff(x), np.diff(y) / np.diff(x)
    s = np.zeros(x.size)
    w1, w2 = 2 * h[1:] + h[:-1], h[1:] + 2 * h[:-1]
    same = d[:-1] * d[1:] > 0
    safe0, safe1 = np.where(same, d[:-1], 1.0), np.where(same, d[1:], 1.0)
    s[1:-1] = np.where(same, (w1 + w2) / (w1 / safe0 + w2 / safe1), 0.0)
    s[0] = _pchip_edge(h[0], h[1], d[0], d[1])
    s[-1] = _pchip_edge(h[-1], h[-2], d[-1], d[-2])
    i = np.clip(np.searchsorted(x, q, side="right") - 1, 0, x.size - 2)
    t = (q - x[i]) / h[i]
    return ((1 + 2 * t) * (1 - t) ** 2 * y[i] + t * (1 - t) ** 2 * h[i] * s[i]
            + t * t * (3 - 2 * t) * y[i + 1] + t * t * (t - 1) * h[i] * s[i + 1])


class _TrendFit:
    """A trend fitted to the aggregated points plus their log(y / trend) per distinct log m."""

    def __init__(self, kind: str, m: np.ndarray, w: np.ndarray, y: np.ndarray, n: np.ndarray) -> None:
        self.trend: _Ernest | _Scaling = (_Ernest(True) if kind == "ernest" else _Scaling()).fit(m, w, y, n)
        base = np.maximum(self.trend.predict(m, w), 1e-12 * y.min())
        lm, lr = np.log(m), np.log(y / base)
        # one log ratio per scale-out (count-weighted mean when several work levels share one m)
        self.lx, inv = np.unique(lm, return_inverse=True)
        self.lr = np.bincount(inv, weights=n * lr) / np.bincount(inv, weights=n)
        self.gap = float(np.median(np.diff(self.lx))) if self.lx.size > 1 else 1.0

    def correction(self, smoother: str, lq: np.ndarray) -> np.ndarray:
        """log correction at log scale-outs ``lq``; flat beyond the measured range."""
        if self.lx.size == 1:
            return np.full_like(lq, self.lr[0])
        if smoother == "interp":
            return np.interp(lq, self.lx, self.lr)
        if smoother == "pchip":
            return _pchip(self.lx, self.lr, lq)
        bw = float(smoother[len("kernel"):]) * self.gap
        k = np.exp(-0.5 * ((lq[:, None] - self.lx[None, :]) / bw) ** 2) + 1e-300
        return (k @ self.lr) / k.sum(axis=1)


#: (trend, smoother) pairs. ``smoother`` None = the trend alone (Ernest for relative error);
#: ``interp`` = piecewise-linear in log m through the per-scale-out ratios; ``pchip`` = monotone
#: cubic through them; ``kernelH`` = Gaussian (Nadaraya–Watson) smoothing with bandwidth
#: H × median spacing of log m (relative to the data, not tuned to any trace). With the
#: ``scaling`` (work/m) trend and constant work, ``interp`` is plain log-log interpolation.
CANDIDATES: tuple[tuple[str, str | None], ...] = (
    ("ernest", None), ("ernest", "interp"), ("ernest", "pchip"), ("ernest", "kernel1"),
    ("ernest", "kernel2"), ("scaling", "interp"), ("scaling", "pchip"), ("scaling", "kernel1"),
)


def _cname(c: tuple[str, str | None]) -> str:
    return c[0] if c[1] is None else f"{c[0]}*{c[1]}"


def _fit_trends(cands: Sequence[tuple[str, str | None]], m: np.ndarray, w: np.ndarray,
                y: np.ndarray, n: np.ndarray) -> dict[str, _TrendFit]:
    """Fit each trend the candidates need once; the candidates share them (keeps CV cheap)."""
    return {k: _TrendFit(k, m, w, y, n) for k in sorted({c[0] for c in cands})}


def _predict_candidates(fits: dict[str, _TrendFit], cands: Sequence[tuple[str, str | None]],
                        qm: np.ndarray, qw: np.ndarray) -> np.ndarray:
    """Predictions of every candidate at (qm, qw), shape (len(cands), len(qm))."""
    base = {k: f.trend.predict(qm, qw) for k, f in fits.items()}
    lq = np.log(qm)
    out = np.empty((len(cands), qm.size))
    for j, (kind, smoother) in enumerate(cands):
        out[j] = base[kind] if smoother is None else base[kind] * np.exp(fits[kind].correction(smoother, lq))
    return out


def interpolation_holdouts(m: np.ndarray, max_splits: int = 16) -> np.ndarray:
    """Scale-outs to leave out in turn: interior ones (Bell's interpolation splits).

    With fewer than three interior scale-outs every scale-out is left out once instead, so that
    small online histories still yield a CV estimate (that then includes extrapolation). More
    than ``max_splits`` interior scale-outs are thinned to that many, evenly by rank, which bounds
    a refit at a few milliseconds however many scale-outs were seen.
    """
    u = np.unique(m)
    inner = u[1:-1] if u.size >= 5 else u
    if inner.size > max_splits:
        inner = inner[np.unique(np.linspace(0, inner.size - 1, max_splits).round().astype(int))]
    return inner


# ----------------------------------------------------------------------------- public estimators
def _fallback_core(m: np.ndarray, w: np.ndarray, y: np.ndarray) -> Any:
    """Model for < 3 distinct scale-outs (see :class:`ResourceModel`)."""
    am, aw, ay, an = _aggregate(m, w, y)
    if np.unique(am).size < 2:
        return _Scaling().fit(am, aw, ay, an)
    return _PowerLaw().fit(am, aw, ay, an)


class _PowerLaw:
    """``t = c·work·m^b`` by count-weighted least squares in log space, b clipped to [-1, 0]."""

    def __init__(self) -> None:
        self.c, self.b = 1.0, -1.0

    def fit(self, m: np.ndarray, w: np.ndarray, y: np.ndarray, n: np.ndarray) -> "_PowerLaw":
        ww = np.where(w > 0, w, 1.0)
        lx, ly = np.log(m), np.log(y / ww)
        xb, yb = np.average(lx, weights=n), np.average(ly, weights=n)
        var = float(np.sum(n * (lx - xb) ** 2))
        self.b = float(np.clip(np.sum(n * (lx - xb) * (ly - yb)) / var, -1.0, 0.0)) if var > 0 else -1.0
        self.c = float(np.exp(yb - self.b * xb))
        return self

    def predict(self, m: np.ndarray, w: np.ndarray) -> np.ndarray:
        return self.c * np.where(w > 0, w, 1.0) * m ** self.b
