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
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from iterflow.model.fits import (CANDIDATES, _Ernest, _aggregate, _cname, _ernest_design, _fallback_core, _fit_trends, _predict_candidates, check_times, interpolation_holdouts, n_features, relative_median, split_features)

log = logging.getLogger(__name__)


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

    @property
    def fitted(self) -> bool:
        """Whether :meth:`fit` (or :meth:`observe`) has run: the loop's question, asked without
        probing for fitted attributes."""
        return hasattr(self, "X_")

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
    def observe(self, scale_out: float, work: float, seconds: float, stage_tasks: Any = None) -> "ResourceModel":
        """Append one measured superstep and refit (a few ms for a few hundred observations);
        ``stage_tasks`` is not used by this model (see :class:`~iterflow.model.live.LiveModel`)."""
        return self.observe_many([(scale_out, work, seconds)])

    def observe_many(self, rows: Any) -> "ResourceModel":
        """Append ``(scale_out, work, seconds[, ...])`` rows and refit once (a warm start, a resume)."""
        rows = np.asarray([tuple(r)[:3] for r in rows], float).reshape(-1, 3)
        if not len(rows):
            return self
        if hasattr(self, "X_"):
            X, y = np.vstack([self.X_, rows[:, :2]]), np.append(self.y_, rows[:, 2])
        else:
            X, y = rows[:, :2], rows[:, 2]
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
