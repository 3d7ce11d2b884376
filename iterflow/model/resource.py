"""Learned resource model: predict a superstep's (or job's) wall time from scale-out and work.

Why: the scaling policy must ask "how long will the next superstep take at m executors?" before
it rescales. :class:`ErnestModel` is Ernest (NSDI 2016): ``t = θ0 + θ1·work/m + θ2·log m + θ3·m``
by non-negative least squares -- parametric, extrapolates sensibly, follows only that shape.
(Bell's selection between Ernest and kernel regression, the published baseline, lives in
:mod:`iterflow.model.traces` next to the protocol that judges it.) :class:`ResourceModel` is
iterflow's model: like Bell it lets cross-validation choose between parametric and
non-parametric fits, with generic changes that follow from how runtime traces look (repeated
noisy runs, occasional stragglers, error judged *relative*):

1. repeated runs at one (scale-out, work) point are reduced to their *relative median*, the value
   minimising Σ|p − y|/y (a median with weights 1/y), so a straggler cannot drag a fit. Hence
   predictions are "typical" times, below a straggler-heavy mean;
2. non-parametric parts act on the *ratio* to a parametric trend (Ernest fitted for relative error,
   or pure ``work/m`` scaling), interpolated or smoothed in log m: between measured scale-outs
   the curve keeps the trend's shape; beyond them the ratio is held flat (extrapolation follows
   the trend);
3. the CV score is the published metric itself (pooled mean relative error over the held-out runs
   of each left-out interior scale-out); by default the geometric mean of the three best
   candidates is used rather than the single best, which damps selection noise.

The candidates are tiny numpy classes sharing one trend fit per CV split, so a refit (inner CV
included) takes a few milliseconds and :meth:`ResourceModel.observe` can refit every superstep.
"""
from __future__ import annotations

import logging
import math
from typing import Any, Sequence

import numpy as np
from scipy.optimize import nnls
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_array, check_is_fitted

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
    v = np.sort(np.asarray(values, dtype=float))
    wts = 1.0 / v
    cum = np.cumsum(wts)
    return float(v[np.searchsorted(cum, 0.5 * cum[-1])])


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
class PositiveRegressor(RegressorMixin, BaseEstimator):
    """Base: mixin first (else sklearn 1.7 loses the regressor tag); X and y must be positive."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        return tags


class ErnestModel(PositiveRegressor):
    """Ernest's parametric model ``θ0 + θ1·work/m + θ2·log m + θ3·m`` fitted by NNLS on raw runs.

    ``relative=True`` minimises squared *relative* error instead (rows scaled by 1/y).
    """

    def __init__(self, relative: bool = False) -> None:
        self.relative = relative

    def fit(self, X: Any, y: Any) -> "ErnestModel":
        m, w = split_features(X)
        yy = check_times(y, m.size)
        core = _Ernest(self.relative).fit(m, w, yy, np.ones_like(yy))
        self.theta_ = core.theta
        self.n_features_in_ = n_features(X)
        self._floor = 1e-6 * float(yy.min())
        return self

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "theta_")
        m, w = split_features(X)
        return np.maximum(_ernest_design(m, w) @ self.theta_, self._floor)


class ResourceModel(PositiveRegressor):
    """iterflow's runtime model: candidates chosen by inner interpolation cross-validation.

    Parameters
    ----------
    selection:
        ``"best"`` -- refit the candidate with the lowest CV error (Bell's rule);
        ``"ensemble"`` -- geometric mean of the ``top_k`` best candidates (less selection noise).
    top_k:
        Candidates averaged by ``"ensemble"``.
    min_scale_outs:
        Below this many (at least 3) distinct scale-outs CV cannot choose; a fallback is used
        instead of failing: one scale-out -> ``t = c·work/m`` (c = relative median of t·m/work:
        perfect scaling anchored at what was seen); two -> power law ``t = c·work·m^b`` through
        the two relative medians, b clipped to [-1, 0] (no super-linear speed-up, no slow-down).

    Fitted attributes: ``selected_`` (name), ``cv_scores_`` (candidate -> CV mean relative
    error), ``error_estimate_`` (CV mean relative error of what ``predict`` uses; leave-one-out
    for the fallback, NaN with a single observation), ``residual_ratios_`` (held-out actual /
    predicted, used by :meth:`predict_interval`), ``fallback_``, ``n_scale_outs_``, ``X_``, ``y_``.
    """

    def __init__(self, selection: str = "ensemble", top_k: int = 3, min_scale_outs: int = 3) -> None:
        self.selection = selection
        self.top_k = top_k
        self.min_scale_outs = min_scale_outs

    # -- fitting -------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> "ResourceModel":
        m, w = split_features(X)
        yy = check_times(y, m.size)
        if self.selection not in ("best", "ensemble"):
            raise ValueError(f"selection must be 'best' or 'ensemble', not {self.selection!r}")
        self.X_, self.y_ = np.column_stack([m, w]), yy
        self.n_features_in_ = n_features(X)
        self._floor = 1e-3 * float(yy.min())
        am, aw, ay, an = _aggregate(m, w, yy)
        self.n_scale_outs_ = int(np.unique(am).size)
        self.fallback_ = self.n_scale_outs_ < max(int(self.min_scale_outs), 3)
        if self.fallback_:
            self._fit_fallback(m, w, yy)
        else:
            self._fit_cv(m, w, yy, (am, aw, ay, an))
        log.debug("ResourceModel: %d obs, %d scale-outs -> %s (cv err %.3f)",
                  yy.size, self.n_scale_outs_, self.selected_, self.error_estimate_)
        return self

    def _fit_fallback(self, m: np.ndarray, w: np.ndarray, y: np.ndarray) -> None:
        self.cv_scores_ = {}
        self.selected_ = "fallback:scaling" if self.n_scale_outs_ == 1 else "fallback:powerlaw"
        self._fallback = _fallback_core(m, w, y)
        if y.size < 2:
            self.error_estimate_, self.residual_ratios_ = float("nan"), np.ones(0)
            return
        ratios = np.empty(y.size)
        for i in range(y.size):  # leave-one-out: cheap, only used with < 3 scale-outs
            keep = np.arange(y.size) != i
            core = _fallback_core(m[keep], w[keep], y[keep])
            ratios[i] = y[i] / max(float(core.predict(m[i:i + 1], w[i:i + 1])[0]), self._floor)
        self.residual_ratios_ = ratios
        self.error_estimate_ = float(np.mean(np.abs(1.0 - 1.0 / ratios)))

    def _fit_cv(self, m: np.ndarray, w: np.ndarray, y: np.ndarray, agg: tuple) -> None:
        am, aw, ay, an = agg
        cands = CANDIDATES
        holdouts = interpolation_holdouts(am)
        test = np.isin(m, holdouts)
        mt, wt, yt = m[test], w[test], y[test]
        preds = np.full((len(cands), yt.size), np.nan)
        for s in holdouts:
            tr, q = am != s, mt == s
            try:
                fits = _fit_trends(cands, am[tr], aw[tr], ay[tr], an[tr])
                preds[:, q] = _predict_candidates(fits, cands, mt[q], wt[q])
            except (ValueError, np.linalg.LinAlgError, RuntimeError) as exc:
                log.debug("split at scale-out %s failed: %s", s, exc)
        with np.errstate(invalid="ignore"):
            preds = np.where(np.isfinite(preds), np.maximum(preds, self._floor), np.nan)
            err = np.abs(preds - yt) / yt
        score = np.where(np.all(np.isfinite(err), axis=1), err.mean(axis=1), np.inf)
        self.cv_scores_ = {_cname(c): float(v) for c, v in zip(cands, score)}
        order = [int(i) for i in np.argsort(score, kind="stable") if np.isfinite(score[i])]
        if not order:
            raise RuntimeError("every candidate failed to fit")
        chosen = order[: max(1, int(self.top_k))] if self.selection == "ensemble" else order[:1]
        held = np.exp(np.mean(np.log(preds[chosen]), axis=0))
        self.selected_ = "+".join(_cname(cands[i]) for i in chosen)
        self.error_estimate_ = float(np.mean(np.abs(held - yt) / yt))
        self.residual_ratios_ = yt / held
        self._chosen = [cands[i] for i in chosen]
        self._fits = _fit_trends(self._chosen, am, aw, ay, an)

    # -- prediction ----------------------------------------------------------------------------
    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "selected_")
        m, w = split_features(X)
        if self.fallback_:
            p = self._fallback.predict(m, w)[None, :]
        else:
            p = _predict_candidates(self._fits, self._chosen, m, w)
        return np.exp(np.mean(np.log(np.maximum(p, self._floor)), axis=0))

    def predict_seconds(self, scale_out: float, work: float = 1.0) -> float:
        """Predicted time (in y's unit) of one superstep/job at ``scale_out`` with ``work``."""
        return float(self.predict(np.array([[scale_out, work]], dtype=float))[0])

    def predict_interval(self, scale_out: float, work: float = 1.0,
                         alpha: float = 0.2) -> tuple[float, float]:
        """(low, high) covering about 1 − alpha of outcomes.

        How: the point prediction times the alpha/2 and 1 − alpha/2 empirical quantiles of the
        cross-validated ratios actual/predicted (held-out runs of left-out scale-outs, or
        leave-one-out for the fallback). With fewer than 5 such ratios the band is
        ±max(2·error_estimate_, 25 %), a deliberately wide guess.
        """
        if not 0.0 < alpha < 1.0:
            raise ValueError("alpha must be in (0, 1)")
        p = self.predict_seconds(scale_out, work)
        r = self.residual_ratios_
        if r.size >= 5:
            lo, hi = np.quantile(r, [alpha / 2.0, 1.0 - alpha / 2.0])
        else:
            e = self.error_estimate_
            half = max(2.0 * e if math.isfinite(e) else 0.0, 0.25)
            lo, hi = 1.0 - min(half, 0.9), 1.0 + half
        return float(p * min(lo, 1.0)), float(p * max(hi, 1.0))

    # -- online use ----------------------------------------------------------------------------
    def observe(self, scale_out: float, work: float, seconds: float) -> "ResourceModel":
        """Append one measured superstep and refit (a few ms for a few hundred observations)."""
        row = np.array([[float(scale_out), float(work)]])
        if hasattr(self, "X_"):
            X, y = np.vstack([self.X_, row]), np.append(self.y_, float(seconds))
        else:
            X, y = row, np.array([float(seconds)])
        return self.fit(X, y)

    @classmethod
    def from_history(cls, df: Any, **params: Any) -> "ResourceModel":
        """Warm start from a table of past observations (columns scale_out, [work,] seconds)."""
        missing = {"scale_out", "seconds"} - set(df.columns)
        if missing:
            raise ValueError(f"history table lacks columns {sorted(missing)}")
        work = df["work"] if "work" in df.columns else np.ones(len(df))
        X = np.column_stack([np.asarray(df["scale_out"], float), np.asarray(work, float)])
        return cls(**params).fit(X, np.asarray(df["seconds"], float))

    @classmethod
    def from_runs(cls, df: Any, iterations: int = 3, **params: Any) -> "ResourceModel":
        """Warm start from several past runs whose overall level differs (column ``run``).

        Why: runs of one job differ in level (input size, caching, interference) much more than in
        how they scale, and with each run at its own scale-outs the two are confounded -- a pooled
        fit learns "slow runs happened at m = 32" as a scale-out effect. This fits
        ``log t = level(run) + f(m, work)`` by a few backfitting sweeps (default 3) starting from
        each run's own relative median: fit f on times divided by their run's level, then
        re-estimate each level as the relative median of t / f. A run measured at a single
        scale-out then mostly informs its level; few sweeps stop short of full convergence,
        which leaves some shrinkage toward the pooled fit where runs span few scale-outs.
        Levels are normalised to a relative median of 1, so predictions are for a typical run;
        ``run_levels_`` holds the per-run factors.
        """
        if "run" not in df.columns:
            return cls.from_history(df, **params)
        runs = np.asarray(df["run"])
        ids, idx = np.unique(runs, return_inverse=True)
        y = np.asarray(df["seconds"], float)
        level = np.array([relative_median(y[idx == k]) for k in range(ids.size)])
        norm = df.copy()
        for _ in range(max(1, int(iterations))):
            level = level / relative_median(level)
            norm["seconds"] = y / level[idx]
            model = cls.from_history(norm, **params)
            p = model.predict(model.X_)
            level = np.array([relative_median(y[idx == k] / p[idx == k]) for k in range(ids.size)])
        model.run_levels_ = dict(zip(ids.tolist(), (level / relative_median(level)).tolist()))
        return model

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (parameters and what the fit chose), for logs and MLflow tags."""
        out: dict[str, Any] = {"params": self.get_params()}
        if hasattr(self, "selected_"):
            out.update(selected=self.selected_, fallback=bool(self.fallback_),
                       error_estimate=self.error_estimate_, cv_scores=dict(self.cv_scores_),
                       n_observations=int(self.y_.size), n_scale_outs=self.n_scale_outs_)
        return out


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
