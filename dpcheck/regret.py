"""Regret-rate fitters: exponents of regret increments and scaling slopes, with bootstrap intervals.

A single log-log slope of cumulative regret is unreliable: it depends on the
window and an additive constant bends it (3 sqrt(K) + 500 fits a slope near
0.2 on [10^3, 10^4]). We fit the growth of the increments instead: on a grid
K_0 < K_1 < ... (ideally geometric, K_{j+1} = 2 K_j), if R(K) = c K^b + C then
D_j = R(K_{j+1}) - R(K_j) = c K_j^b (r^b - 1) for a constant ratio r, so
log D_j = const + b log K_j, with the constant C gone. The exponent is the OLS
slope of log(mean-over-seeds D_j) on log K_j over a declared window; its
confidence interval is a bootstrap over seeds (seeds are the independent
units). Local slopes between neighbouring grid points are reported too, so a
change of regime inside the window is visible.

Intervals (``interval=``). "percentile": the alpha/2 and 1 - alpha/2 quantiles of
the bootstrap slopes. With the 4-16 seeds an audit affords this interval is
anti-conservative: the bootstrap distribution of a mean of n values has variance
(n-1)/n times the plug-in variance, it ignores that the spread is itself
estimated, and with n = 4 there are only 35 distinct resamples. "t": the
studentised interval estimate +- t_{n-1, 1-alpha/2} * sd_boot * sqrt(n/(n-1))
(the bootstrap standard error with the small-sample correction, Student's
quantile for an estimated scale; Efron & Tibshirani 1993, Sections 12.4 and 5.6). It is
wider by ~1.65x at n = 4, ~1.15x at n = 16, and tends to the percentile
interval as n grows. "t" is the default of both fitters and every rate check of the audits uses it (or
"t+fieller", below); "percentile" stays for comparison. The two-sided
(1 - alpha) interval puts alpha/2 in each tail, so a check that FAILs only when
the interval lies wholly beyond one bound errs at level alpha/2 on that side.

"fieller" (fit_increment_exponent only): a two-point interval that takes no logarithm of a resampled
mean. Under the model E D_j = c K_j^b, b = log(rho) / log(K_last / K_first) with rho = E D_last / E D_first,
the ratio of the window's last and first mean increments. Fieller's method (Fieller 1954) bounds a ratio of
means from paired samples: for the true rho the per-seed differences D_last - rho D_first have mean 0, so
{rho : mean(D_last - rho D_first) + t * se(D_last - rho D_first) >= 0} (t the one-sided Student quantile at
alpha/2, n - 1 degrees of freedom) holds rho with probability 1 - alpha/2; its upper end is the larger root
of a quadratic in rho, and the lower bound is the smaller root of the mirrored set. The pairing matters:
runs whose increments share a per-run scale (one run twice as costly as another throughout) give differences
of little spread at the true rho, which two separate bounds on the two means would not see. An end is
infinite when D_first is not significantly positive (the quadratic opens downward). It is made for windows
where the regret bends flat: a mean increment near 0 puts log(0) into many bootstrap resamples and makes "t"
undecidable (an interval of [-25, 13] from four runs of increments ~215 then ~3), while the ratio's upper
bound stays small and decides. The point estimate is still the OLS slope; the middle increments of a wider
window are not used. Same assumption as "t": the seeds' increments are close enough to normal for Student's
quantile.

What one slope can hide, and the rules that see it (every check built on these fitters):
- a relapse at the end of the window: on a doubling grid the middle of three increments has weight 0 in the
  slope, and a curve that turns linear in its last doubling read "in the sqrt(K) regime". A window of three or
  more increments also fits its last two alone (``RegretFit.tail_*``); a tail interval wholly above the FAIL
  bound is a FAIL (:func:`relapse`; the tail is fitted at half the alpha, :func:`fail_level`);
- a mean that is not clearly positive (an increment <= 0, a signed cost within 3 standard errors of 0) has no
  logarithm: the fit clips it at a tiny value, which bends the slope at will, so a PASS there is INCONCLUSIVE
  (:func:`undefined_log`). Fit costs as measured: clipping each run at 0 before the mean turns a cost of mean 0
  whose spread falls like 1/eps into "~ 1/eps";
- one seed: a scaling fit has no spread to bound its slope (infinite interval), and an exponent fit uses
  Student's quantile with its x.size - 2 residual degrees of freedom.

"t+fieller": the intersection of "t" and "fieller", each at level alpha/2, so each end still errs with
probability <= alpha/2 (a union bound over the two intervals); two disjoint intervals give their hull. Neither dominates: "t" works on the log scale
and is exact for runs that share an exponent but differ in scale, where Fieller's ratio is unbounded because
four lognormal first increments are not significantly positive under a normal model; Fieller decides the
flattening windows "t" cannot (tests/core/test_regret.py). In 100 simulated draws of 4 or 6 runs of K^0.5
regret with a per-run spread of scale and exponent, the intersection passed as often as "t" or more (73 vs 70
with 4 runs, 95 vs 93 with 6), and its false PASS rate on a K^0.64 mean against the bound 0.6 is that of "t"
(48 vs 45 in 600 draws, tests/audits/test_private_linopt_audit.py; both above the nominal 2.5% on those
heavy-tailed runs).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dpcheck.checks import Check, PASS, FAIL, INCONCLUSIVE
from dpcheck.errors import InputError


class _Fit:
    """A fitted figure with its bootstrap CI (RegretFit, ScalingFit): a check reports it whole."""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RegretFit(_Fit):
    """Fitted exponent b of R(K) ~ K^b from the increments, with a bootstrap CI over seeds."""

    exponent: float
    ci: tuple[float, float]
    confidence: float
    window: tuple[float, float]
    K_grid: tuple[float, ...]
    increments_mean: tuple[float, ...]
    local_slopes: tuple[float, ...]
    per_seed: tuple[float, ...]
    ols_stderr: float
    seeds: int
    method: str = "OLS of log increments R(K_{j+1}) - R(K_j) on log K_j; percentile bootstrap over seeds"
    interval: str = "percentile"
    ci_pass: tuple[float, float] | None = None   # the interval at the PASS level (dpcheck.stats.pass_alpha)
    pass_confidence: float | None = None
    # the window's last two increments fitted alone (windows of 3+ increments), at half the fit's alpha: a relapse
    # to faster growth at the end of the window, which the whole window's slope can hide (:func:`relapse`)
    tail_exponent: float | None = None
    tail_ci: tuple[float, float] | None = None
    tail_window: tuple[float, float] | None = None

    def summary(self) -> str:
        return (f"exponent {self.exponent:.3f}, {self.confidence:.0%} CI [{self.ci[0]:.3f}, {self.ci[1]:.3f}] "
                f"over K in [{self.window[0]:g}, {self.window[1]:g}] ({self.seeds} seeds)")


def _validate(K_grid, values, name):
    K = np.asarray(K_grid, dtype=float)
    Y = np.atleast_2d(np.asarray(values, dtype=float))
    if K.ndim != 1 or K.size < 3:
        raise InputError(f"{name}: need a 1-d grid of at least 3 points")
    if Y.shape[1] != K.size:
        raise InputError(f"{name}: values must have shape (seeds, {K.size}), got {Y.shape}")
    if np.any(np.diff(K) <= 0) or np.any(K <= 0):
        raise InputError(f"{name}: the grid must be positive and increasing")
    if not np.all(np.isfinite(Y)):
        raise InputError(f"{name}: values contain NaN or inf")
    return K, Y


INTERVALS = ("percentile", "t", "fieller", "t+fieller")


def _interval(estimate: float, boots: np.ndarray, n: int, alpha: float, interval: str) -> tuple[float, float]:
    """Two-sided (1 - alpha) interval from bootstrap slopes over n seeds (module docstring, "Intervals")."""
    if interval == "percentile":
        return float(np.quantile(boots, alpha / 2)), float(np.quantile(boots, 1 - alpha / 2))
    from scipy.special import stdtrit         # Student t quantile (what scipy.stats.t.ppf evaluates)
    half = float(stdtrit(n - 1, 1 - alpha / 2)) * float(np.std(boots)) * np.sqrt(n / (n - 1))
    return float(estimate - half), float(estimate + half)


def _intersect(i1, i2) -> tuple[float, float]:
    """The intersection of two intervals; if they are disjoint (an event of probability <= alpha when both are
    valid, so a sign the model is off), their hull: never a narrower, incoherent lo > hi."""
    lo, hi = max(i1[0], i2[0]), min(i1[1], i2[1])
    return (float(lo), float(hi)) if lo <= hi else (float(min(i1[0], i2[0])), float(max(i1[1], i2[1])))


def _fieller_interval(ends: np.ndarray, log_ratio: float, alpha: float) -> tuple[float, float]:
    """The "fieller" interval of the exponent (module docstring) from ``ends`` (seeds, 2): each seed's first
    and last increment of the window; ``log_ratio`` = log(K_last / K_first). One seed gives (-inf, inf)."""
    n = ends.shape[0]
    if n < 2:
        return float("-inf"), float("inf")
    from scipy.special import stdtrit
    f, last = ends[:, 0], ends[:, 1]
    mf, ml = float(f.mean()), float(last.mean())
    cov = np.cov(ends, rowvar=False, ddof=1) / n          # variances and covariance of the two means
    t2 = float(stdtrit(n - 1, 1 - alpha / 2)) ** 2
    # (ml - rho mf)^2 = t^2 (v_l - 2 rho c + rho^2 v_f): a rho^2 - 2 b rho + c0 = 0
    a = mf * mf - t2 * cov[0, 0]
    b = ml * mf - t2 * cov[0, 1]
    c0 = ml * ml - t2 * cov[1, 1]
    disc = b * b - a * c0
    if a <= 0 or disc < 0:                                # D_first not significantly positive: unbounded
        return float("-inf"), float("inf")
    lo_rho, hi_rho = (b - np.sqrt(disc)) / a, (b + np.sqrt(disc)) / a

    def exponent(rho):
        return float(np.log(rho) / log_ratio) if rho > 0 else float("-inf")

    return exponent(lo_rho), exponent(hi_rho)


def _check_interval(interval: str) -> None:
    if interval not in INTERVALS:
        raise InputError(f"interval must be one of {INTERVALS}, got {interval!r}")


def _slope_stderr(x, y) -> float:
    """The OLS standard error of the slope of y on (1, x): sqrt(RSS / (n - 2) / sum (x - mean x)^2).
    (Closed form instead of statsmodels' OLS: importing statsmodels.api took 1-2 s of every audit.)"""
    xc = x - x.mean()
    sxx = float(xc @ xc)
    b = float(xc @ (y - y.mean())) / sxx
    resid = (y - y.mean()) - b * xc
    return float(np.sqrt(float(resid @ resid) / (x.size - 2) / sxx))


def _slope(x, y):
    x = x - x.mean()
    return float((x * (y - y.mean())).sum() / (x * x).sum())


def fit_increment_exponent(K_grid, cumulative_regret, *, window=None, alpha: float = 0.05, n_boot: int = 2000,
                           seed: int = 0, interval: str = "t") -> RegretFit:
    """Exponent of cumulative regret from its increments (module docstring).

    K_grid: (G,) increasing episode counts; cumulative_regret: (seeds, G) with
    R(K_grid[j]) per seed. window: (K_lo, K_hi): increments whose left end K_j
    lies in the window are used (at least 2 needed). interval: "percentile" | "t" |
    "fieller" | "t+fieller" (module docstring).
    """
    from dpcheck.stats import pass_alpha
    _check_interval(interval)
    a_pass = pass_alpha(alpha)

    K, R = _validate(K_grid, cumulative_regret, "fit_increment_exponent")
    D = np.diff(R, axis=1)                        # (seeds, G-1): R(K_{j+1}) - R(K_j)
    left = K[:-1]
    lo, hi = (window if window is not None else (left[0], left[-1]))
    sel = (left >= lo) & (left <= hi)
    if sel.sum() < 2:
        raise InputError(f"fit window [{lo}, {hi}] holds fewer than 2 increments of the grid")
    x = np.log(left[sel])
    tiny = 1e-12 * max(1.0, float(np.abs(R).max()))

    def fit(mean_incr):
        return _slope(x, np.log(np.maximum(mean_incr, tiny)))

    Dm = D[:, sel].mean(axis=0)
    b = fit(Dm)
    if x.size > 2:  # a standard error needs a residual degree of freedom
        stderr = _slope_stderr(x, np.log(np.maximum(Dm, tiny)))
    else:
        stderr = float("nan")
    rng = np.random.default_rng(seed)
    n = D.shape[0]
    if n > 1:
        idx = rng.integers(0, n, size=(n_boot, n))
        boot_means = D[:, sel][idx].mean(axis=1)  # (n_boot, m)
        yb = np.log(np.maximum(boot_means, tiny))
        xc = x - x.mean()
        boots = (yb - yb.mean(axis=1, keepdims=True)) @ xc / (xc @ xc)
        ci = _interval(b, boots, n, alpha, interval)
        ci_pass = _interval(b, boots, n, a_pass, interval)
    else:
        # one seed: no bootstrap; Student's interval from the OLS standard error with its x.size - 2 degrees of
        # freedom (the normal quantile passed K^0.75 against a bound of 0.6 in 6-8 % of draws at 3 increments;
        # infinite when there is no residual degree of freedom)
        from scipy.special import stdtrit
        ci, ci_pass = ((b - h, b + h) for h in
                       (stderr * float(stdtrit(x.size - 2, 1 - a / 2)) if np.isfinite(stderr) else float("inf")
                        for a in (alpha, a_pass)))
    if interval in ("fieller", "t+fieller"):
        ends, ratio = D[:, sel][:, [0, -1]], float(x[-1] - x[0])
        if interval == "fieller":
            ci, ci_pass = (_fieller_interval(ends, ratio, a) for a in (alpha, a_pass))
        else:
            ci, ci_pass = (_intersect(_interval(b, boots, n, a / 2, "t") if n > 1 else (-np.inf, np.inf),
                                      _fieller_interval(ends, ratio, a / 2)) for a in (alpha, a_pass))
    per_seed = tuple(fit(D[i, sel]) for i in range(n))
    logD = np.log(np.maximum(Dm, tiny))
    local = tuple(float(s) for s in np.diff(logD) / np.diff(x))
    tail = {}
    if sel.sum() >= 3:
        # at half the level: a FAIL through the tail adds (1 - confidence) / 4 to the window's (1 - confidence) / 2
        last = (float(left[sel][-2]), float(left[sel][-1]))
        t = fit_increment_exponent(K, R, window=last, alpha=alpha / 2, n_boot=n_boot, seed=seed, interval=interval)
        tail = {"tail_exponent": t.exponent, "tail_ci": t.ci, "tail_window": last}
    return RegretFit(**tail, exponent=b, ci=ci, confidence=1 - alpha, window=(float(lo), float(hi)),
                     K_grid=tuple(float(k) for k in K), increments_mean=tuple(float(v) for v in D.mean(axis=0)),
                     local_slopes=local, per_seed=per_seed, ols_stderr=stderr, seeds=n,
                     method=("OLS of log increments R(K_{j+1}) - R(K_j) on log K_j; " + (
                         {"fieller": "Fieller interval of the ratio of the window's last and first mean increments",
                          "t+fieller": "t bootstrap interval over seeds intersected with the Fieller interval of the "
                                       "ratio of the window's last and first mean increments (each at alpha/2)"}
                         .get(interval, f"{interval} bootstrap over seeds"))),
                     interval=interval, ci_pass=ci_pass, pass_confidence=1 - a_pass)


def regret_exponent_check(fit: RegretFit, *, claimed: float = 0.5, tolerance: float = 0.1,
                          id: str = "regret.exponent", source: str = "", what: str = "regret",
                          details: dict | None = None) -> Check:
    """The claim "regret grows at most like K^claimed" against the fitted exponent.

    pass: the upper CI end <= claimed + tolerance; fail: the lower CI end > claimed +
    tolerance (or the window's last two increments alone say so: :func:`relapse`); otherwise inconclusive.
    ``tolerance`` absorbs polylog factors over the window; declare it from the theorem's log power: the
    increments of sqrt(K) log^p(K) grow like K^(0.5 + p / ln K), +0.2 for p = 2 at K ~ 10^4 (0.1 covers
    about one log factor there, not two).
    """
    bound = claimed + tolerance
    lo, hi = fit.ci
    p_hi = pass_interval(fit)[1]
    if p_hi <= bound:
        hi = p_hi
        verdict, why = PASS, f"{what} exponent {fit.exponent:.3f} (CI [{lo:.3f}, {hi:.3f}]) <= {claimed:g} + {tolerance:g}"
    elif lo > bound:
        verdict, why = FAIL, f"{what} exponent {fit.exponent:.3f} (CI [{lo:.3f}, {hi:.3f}]) exceeds {claimed:g} + {tolerance:g}"
    else:
        verdict, why = INCONCLUSIVE, (f"{what} exponent {fit.exponent:.3f}: CI [{lo:.3f}, {hi:.3f}] straddles "
                                      f"{claimed:g} + {tolerance:g}")
    verdict, why, relapsed = relapse(fit, bound, verdict, why)
    det = {"fit": fit.to_dict(), "plots": [increments_plot(fit, claimed)], **relapsed}
    verdict, why = undefined_log(fit, verdict, why)
    det.update(details or {})
    return Check(id=id, kind="regret", verdict=verdict,
                 claim={"exponent_at_most": claimed, "tolerance": tolerance, "source": source,
                        "level": (f"FAIL iff the lower end of the two-sided {fit.confidence:.2%} {fit.interval} bootstrap "
                                  f"interval exceeds {bound:g}, or that of its last two increments (relapse): level "
                                  f"{fail_level(fit)} when the intervals are valid (dpcheck/regret.py, Intervals); "
                                  f"PASS iff the upper end of the "
                                  f"{_pc(fit):.0%} interval is below it")},
                 measured={"exponent": fit.exponent, "ci": list(fit.ci), "confidence": fit.confidence,
                           "window": list(fit.window), "seeds": fit.seeds, "local_slopes": list(fit.local_slopes)},
                 details=det, reason=why)


def relapse(fit, bound: float | None, verdict: str, why: str) -> tuple[str, str, dict]:
    """(verdict, reason, details to add: ``{"relapse": ...}`` when it FAILs) after the window's last two increments
    are fitted alone (``fit.tail_*``): a window whose increments shrink overall (a drop at the end of a learning phase) can hide growth at its end. On a doubling grid
    the middle increment of a three-increment window has weight 0 in the slope, and a curve that turns linear in its
    last doubling read "in the sqrt(K) regime" (dp_ucbvi's window; exponent 0.41, the last two increments alone
    0.96 with interval [0.89, 1.02]). A tail interval wholly above ``bound`` (the FAIL bound; None: that side never
    fails) makes any verdict but FAIL a FAIL. The tail interval is at half the fit's alpha, so a FAIL's level is
    (1 - confidence) / 2 for the window plus (1 - confidence) / 4 for the tail (:func:`fail_level`), within the
    check's alpha."""
    if verdict == FAIL or bound is None or getattr(fit, "tail_ci", None) is None or not fit.tail_ci[0] > bound:
        return verdict, why, {}
    left = np.asarray(fit.K_grid[:-1])
    tail = np.asarray(fit.increments_mean)[(left >= fit.tail_window[0]) & (left <= fit.tail_window[1])]
    if np.any(tail <= 0):           # no logarithm: the tail's slope is not defined (undefined_log says so)
        return verdict, why, {}
    t = fit.tail_ci
    return FAIL, (f"the last two increments (K in [{fit.tail_window[0]:g}, {fit.tail_window[1]:g}]) grow like "
                  f"K^{fit.tail_exponent:.2f} (CI [{t[0]:.2f}, {t[1]:.2f}]) > {bound:g}: faster growth at the end of the "
                  f"window (the whole window's fit said: {why})"), \
        {"relapse": {"window": list(fit.tail_window), "exponent": fit.tail_exponent, "ci": list(t)}}


def undefined_log(fit, verdict: str, why: str) -> tuple[str, str]:
    """(verdict, reason), a PASS or a FAIL made INCONCLUSIVE when a mean in the fit is not clearly positive: a mean
    increment <= 0 (a cost difference can have one) or a mean cost within 3 standard errors of 0 has no logarithm,
    and the fit's clip at a tiny value bends the slope anywhere, either way (a cost of mean 0 whose spread falls
    like 1/eps read "~ 1/eps" once each run was clipped at 0 before the mean; a true 1/eps cost noisy at the
    largest eps FAILed at slope -8 in 7.5 % of draws)."""
    if verdict not in (PASS, FAIL):
        return verdict, why
    if isinstance(fit, RegretFit):
        left = np.asarray(fit.K_grid[:-1])
        inc = np.asarray(fit.increments_mean)[(left >= fit.window[0]) & (left <= fit.window[1])]
        # regret that stops growing (increments falling to exactly 0 and staying there: a learned policy) is the
        # flat regime, which every upper bound allows; a negative mean (a cost difference) or growth after a
        # mean <= 0 is a slope through log(0)
        dip = inc <= 0
        if np.any(inc < 0) or (dip.any() and np.any(inc[int(np.argmax(dip)):] > 0)):
            return INCONCLUSIVE, (f"{why}; but a mean increment in the window is <= 0 before growth resumes, or "
                                  "negative: its log-log slope is not defined, so this "
                                  f"{'pass' if verdict == PASS else 'failure'} is not established")
        return verdict, why
    bad = [x for x, ok in zip(fit.x, fit.clearly_positive or ()) if not ok]
    if bad:
        return INCONCLUSIVE, (f"{why}; but the mean is not clearly positive (<= 0, or within 3 standard errors of "
                              "0 for a quantity with negative values) at "
                              f"{', '.join(f'{x:g}' for x in bad)}: its log-log slope is not established")
    return verdict, why


def fail_level(fit) -> str:
    """The level a FAIL of an exponent or slope check is at, in words: (1 - confidence) / 2 on one side of the
    two-sided interval, plus (1 - confidence) / 4 when the window's last two increments are also tested
    (:func:`relapse`)."""
    side = (1 - fit.confidence) / 2
    if getattr(fit, "tail_ci", None) is not None:
        return f"{side:g} (window) + {side / 2:g} (its last two increments) = {1.5 * side:g}"
    return f"{side:g}"


def increments_plot(fit: RegretFit, claimed: float | None = None) -> dict:
    left = list(fit.K_grid[:-1])
    series = [{"label": "mean increment R(K_{j+1}) - R(K_j)", "x": left, "y": list(fit.increments_mean)}]
    if claimed is not None and fit.increments_mean:
        # reference line of the claimed slope through the window's first point
        i0 = min(range(len(left)), key=lambda i: abs(left[i] - fit.window[0]))
        y0 = max(fit.increments_mean[i0], 1e-12)
        series.append({"label": f"slope {claimed:g} (claim)", "x": left,
                       "y": [y0 * (k / left[i0]) ** claimed for k in left]})
    return {"title": "Regret increments (log-log)", "xlabel": "K", "ylabel": "increment", "logx": True,
            "logy": True, "kind": "line", "series": series}


@dataclass(frozen=True)
class ScalingFit(_Fit):
    """Log-log slope of a cost y in a parameter x (e.g. privacy cost in eps), bootstrap CI over seeds."""

    slope: float
    ci: tuple[float, float]
    confidence: float
    x: tuple[float, ...]
    y_mean: tuple[float, ...]
    seeds: int
    interval: str = "percentile"
    ci_pass: tuple[float, float] | None = None   # the interval at the PASS level (dpcheck.stats.pass_alpha)
    pass_confidence: float | None = None
    y_se: tuple[float, ...] | None = None        # standard error of each mean over seeds
    clearly_positive: tuple[bool, ...] | None = None   # mean > 3 SE, or > 0 for values >= 0 (:func:`undefined_log`)


def _pc(fit) -> float:
    return fit.pass_confidence if getattr(fit, "pass_confidence", None) is not None else fit.confidence


def pass_interval(fit) -> tuple[float, float]:
    """The interval a PASS decision uses: ``ci_pass`` where the fit has one, else ``ci``."""
    return tuple(fit.ci_pass) if getattr(fit, "ci_pass", None) is not None else tuple(fit.ci)


def fit_scaling(x, y, *, alpha: float = 0.05, n_boot: int = 2000, seed: int = 0,
                interval: str = "t") -> ScalingFit:
    """Slope of log(mean over seeds of y) on log x; y: (seeds, n), the per-seed values as measured (do not clip
    them: a mean that is not clearly positive makes a PASS INCONCLUSIVE, :func:`undefined_log`; one seed gives an
    infinite interval). interval: "percentile" | "t" (module docstring; "t" by default, valid at few seeds)."""
    from dpcheck.stats import pass_alpha
    if interval not in ("percentile", "t"):
        raise InputError(f"fit_scaling's interval must be 'percentile' or 't', got {interval!r} (the two-point "
                         "intervals are for increments: fit_increment_exponent)")
    a_pass = pass_alpha(alpha)
    X, Y = _validate(np.sort(np.asarray(x, dtype=float)), np.asarray(y, dtype=float)[:, np.argsort(x)], "fit_scaling")
    tiny = 1e-12 * max(1.0, float(np.abs(Y).max()))
    lx = np.log(X)
    ym = Y.mean(axis=0)
    b = _slope(lx, np.log(np.maximum(ym, tiny)))
    n = Y.shape[0]
    rng = np.random.default_rng(seed)
    if n > 1:
        idx = rng.integers(0, n, size=(n_boot, n))
        yb = np.log(np.maximum(Y[idx].mean(axis=1), tiny))
        xc = lx - lx.mean()
        boots = (yb - yb.mean(axis=1, keepdims=True)) @ xc / (xc @ xc)
        ci = _interval(b, boots, n, alpha, interval)
        ci_pass = _interval(b, boots, n, a_pass, interval)
    else:
        # one seed: no spread to bound the slope with (the point estimate alone decided before)
        ci = ci_pass = (float("-inf"), float("inf"))
    se = Y.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(ym.shape, np.inf)
    # a quantity that takes negative values (a paired difference) must be positive beyond its noise for its log to
    # be read; a non-negative one (a sub-optimality gap) only needs a positive mean
    positive = ym > 3 * se if (Y < 0).any() else ym > 0
    return ScalingFit(slope=b, ci=ci, confidence=1 - alpha, x=tuple(map(float, X)), y_mean=tuple(map(float, ym)),
                      seeds=n, interval=interval, ci_pass=ci_pass, pass_confidence=1 - a_pass,
                      y_se=tuple(map(float, se)), clearly_positive=tuple(bool(v) for v in positive))


def scaling_check(fit: ScalingFit, *, expected: float, tolerance: float, id: str, source: str = "",
                  what: str = "cost", xname: str = "x", details: dict | None = None) -> Check:
    """"cost ~ x^expected": pass if the CI lies within expected +- tolerance, fail if it
    lies wholly outside, else inconclusive."""
    lo, hi = fit.ci
    a, b = expected - tolerance, expected + tolerance
    p_lo, p_hi = pass_interval(fit)
    if a <= p_lo and p_hi <= b:
        lo, hi = p_lo, p_hi
        verdict, why = PASS, f"{what} ~ {xname}^{fit.slope:.2f} (CI [{lo:.2f}, {hi:.2f}]) matches {expected:g} +- {tolerance:g}"
    elif hi < a or lo > b:
        verdict, why = FAIL, f"{what} ~ {xname}^{fit.slope:.2f} (CI [{lo:.2f}, {hi:.2f}]) is not {expected:g} +- {tolerance:g}"
    else:
        verdict, why = INCONCLUSIVE, f"{what} ~ {xname}^{fit.slope:.2f}: CI [{lo:.2f}, {hi:.2f}] overlaps but is not within {expected:g} +- {tolerance:g}"
    verdict, why = undefined_log(fit, verdict, why)
    det = {"fit": fit.to_dict(), "plots": [{"title": f"{what} vs {xname}", "xlabel": xname, "ylabel": what,
                                             "logx": True, "logy": True, "kind": "line",
                                             "series": [{"label": "mean over seeds", "x": list(fit.x), "y": list(fit.y_mean)}]}]}
    det.update(details or {})
    return Check(id=id, kind="regret", verdict=verdict,
                 claim={"slope": expected, "tolerance": tolerance, "source": source,
                        "level": (f"FAIL iff the two-sided {fit.confidence:.2%} {fit.interval} bootstrap interval lies "
                                  f"wholly outside: level {(1 - fit.confidence) / 2:g} per side when it is valid; PASS "
                                  f"iff the {_pc(fit):.0%} interval lies inside")},
                 measured={"slope": fit.slope, "ci": list(fit.ci), "confidence": fit.confidence, "seeds": fit.seeds},
                 details=det, reason=why)


# ----------------------------------------------------------------------------- slope verdicts
SAME = "same"    # fail_above / fail_below default: the pass bound itself


def slope_check(fit, *, bound, id, statement, source, xname, details, lower=None,
                kind: str = "regret", fail_above=SAME, fail_below=SAME,
                ylabel: str = "Regret_DP - Regret_UCBVI") -> Check:
    """The one slope / interval verdict of every rate check (slope claims stated as O~()): PASS if the (1 - alpha) interval lies below ``bound`` (and above
    ``lower``, if given); FAIL if it lies wholly above ``fail_above`` or wholly below ``fail_below``
    (default: ``bound`` / ``lower``; None: that side never fails); else inconclusive. With a two-sided
    interval each FAIL side errs at level alpha/2 when the true slope is on the allowed side.
    ``fit``: a ScalingFit or a RegretFit (exponent of increments)."""
    fa = bound if fail_above is SAME else fail_above
    fb = lower if fail_below is SAME else fail_below
    slope = fit.slope if hasattr(fit, "slope") else fit.exponent
    if hasattr(fit, "slope"):
        xs, ys = list(fit.x), list(fit.y_mean)
    else:
        xs, ys = list(fit.K_grid[:-1]), list(fit.increments_mean)
    lo, hi = fit.ci
    p_lo, p_hi = pass_interval(fit)
    inside = p_hi <= bound and (lower is None or p_lo >= lower)
    outside = (fa is not None and lo > fa) or (fb is not None and hi < fb)
    verdict = PASS if inside else FAIL if outside else INCONCLUSIVE
    if inside:
        lo, hi = p_lo, p_hi
    rng = f"[{lower:g}, {bound:g}]" if lower is not None else f"<= {bound:g}"
    fails = " or ".join(x for x in ((f"> {fa:g}" if fa is not None else ""),
                                    (f"< {fb:g}" if fb is not None else "")) if x)
    reason = f"slope in {xname} {slope:.3f} (CI [{lo:.3f}, {hi:.3f}]) vs allowed {rng}"
    if (fa, fb) != (bound, lower):
        reason += f"; fails only if the CI lies wholly {fails}" if fails else "; never fails"
    verdict, reason, relapsed = relapse(fit, fa, verdict, reason)
    verdict, reason = undefined_log(fit, verdict, reason)
    det = dict(details, **relapsed)
    det["fit"] = fit.to_dict()
    det["plots"] = [{"title": f"{ylabel} vs {xname}", "xlabel": xname, "ylabel": ylabel,
                     "logx": True, "logy": True, "kind": "line",
                     "series": [{"label": "mean over runs", "x": xs, "y": ys}]}]
    interval = getattr(fit, "interval", "percentile")
    return Check(id=id, kind=kind, verdict=verdict,
                 claim={"statement": statement, "slope_at_most": bound, "slope_at_least": lower,
                        "fail_if_slope_above": fa, "fail_if_slope_below": fb, "source": source,
                        "level": f"two-sided {fit.confidence:.2%} {interval} bootstrap interval; "
                                 f"each FAIL side at level {fail_level(fit)}; PASS on the {_pc(fit):.0%} "
                                 "interval"},
                 measured={"slope": slope, "ci": list(fit.ci), "confidence": fit.confidence, "seeds": fit.seeds},
                 details=det, reason=reason)


SATURATED_GROWTH = 0.5   # window growth below this share of all growth since K_0 (sqrt(K): 0.71, linear: 0.875)


def window_growth(fit) -> float | None:
    """The share of the mean regret accumulated since K_0 that accrues inside the fit window,
    sum of the window's increments / sum of all increments (None when nothing accrued). Regret is
    accumulated expected regret, so every increment is >= 0: a sqrt(K) curve over the last three of eight
    doublings gives 0.71, a linear one 0.875."""
    K = np.asarray(fit.K_grid[:-1], dtype=float)
    D = np.asarray(fit.increments_mean, dtype=float)
    total = float(D.sum())
    if not np.isfinite(total) or total <= 0:
        return None
    sel = (K >= fit.window[0]) & (K <= fit.window[1])
    return float(D[sel].sum()) / total


def exponent_regime(check: Check, fit, floor: float = 0.25, *, claim_flat: bool = False) -> Check:
    """Say whether an exponent check was informative. An interval wholly below ``floor`` means the
    increments shrink over the window (the regret saturates -- finite-time learning of a pure equilibrium,
    a window past the sqrt(K) phase -- or a privacy term constant in K is still being paid off): the pass
    is then marked "uninformative" (reports show "PASS (uninformative)"; the verdict is unchanged). A pass
    whose interval lies above ``floor`` says it is in the sqrt(K) regime.

    An INCONCLUSIVE check whose regret looks flat in the window (the exponent of the mean increments is below
    ``floor`` and less than SATURATED_GROWTH of the regret accrued since K_0 accrues inside the window,
    :func:`window_growth`; a K^(1/2) curve over the last three of eight doublings accrues 0.71 there, a linear
    one 0.875) stays INCONCLUSIVE, with that regime in its reason and ``details["regime"]``: its interval
    does not decide, so the point exponent and the growth share are all there is, and neither is a test --
    a few heavy-tailed runs whose mean increments grow like K^0.8 show a point exponent below 0.25 and a small
    window share often enough (tests/core/test_regret.py). A PASS comes only from the interval (the check's
    own rule); a FAIL is never changed.

    ``claim_flat``: the check's claim is itself a quantity flat in K up to polylog (DP-UCBVI's JDP privacy
    cost, Qiao & Wang 2023, Theorem 5.2: an additive S^2 A H^3 / eps term). Shrinking increments are then
    what the claim predicts, and an interval wholly below ``floor`` is evidence for it (it excludes every
    exponent >= floor at the check's confidence): the PASS stays plain and says so."""
    from dataclasses import replace as _replace
    from dpcheck.checks import qualify
    if check.verdict == INCONCLUSIVE:
        g = window_growth(fit)
        if g is not None and g < SATURATED_GROWTH and fit.exponent < floor:
            why = (f"the regret looks flat in the window: its mean increments grow like K^{fit.exponent:.2f} and "
                   f"only {g:.0%} of its growth since K = {fit.K_grid[0]:g} accrues for K in "
                   f"[{fit.window[0]:g}, {fit.window[1]:g}]; but the exponent's interval does not decide against "
                   "the bound, so this run measures no rate (a longer grid, or more runs, can decide)")
            return _replace(check, details={**check.details, "regime": why}, reason=f"{check.reason} ({why})")
        return check
    if check.verdict != PASS:
        return check
    lo, hi = fit.ci
    if hi < floor and claim_flat:
        return _replace(check, reason=check.reason + f"; the increments shrink over the window (CI upper end "
                                                      f"{hi:.2f} < {floor:g}): the quantity bends flat, as claimed")
    if min(hi, pass_interval(fit)[1]) < floor:   # the PASS's own interval says the increments shrink
        return qualify(check, "uninformative",
                       f"exponent CI below {floor:g}: the increments shrink over the window (the regret saturates, "
                       "or a privacy term constant in K is still being paid off); the pass says little about sqrt(K)",
                       note=" (uninformative: the increments shrink in this window)")
    if lo >= floor:
        return _replace(check, reason=check.reason + f"; in the sqrt(K) regime (CI lower end {lo:.2f} >= {floor:g})")
    return check
