"""``dpcheck audit gfa_selection_mechanism``: the private selection of Algorithms 1 and 2 (He & Zhou,
arXiv 2605.07049), audited alone -- the exponential mechanism (``--privatizer exponential``, the default) or a
researcher's :class:`dpcheck.algorithms.gfa.SelectionMechanism` (``--privatizer file.py:Class``).

What the algorithms need of it (Section 3.3, Lemma E.2; docs/privatizers.md): one selection is eps0-DP for score
vectors of sensitivity Delta_S, and it concentrates on high scores as the regret analysis assumes. Checked at
``--epsilon`` (default 1) and ``--set sensitivity=`` (default 1):

* ``privacy.blackbox``: the selections on neighbouring score vectors (all zero vs one entry up by Delta and
  all others down, over 2 and 64 entries), histogram events, nothing about the noise assumed;
* ``whitebox.dp_event``: the declared DpEvent of one selection, accounted exactly by PLD;
* ``privacy.selection_law``: when the mechanism declares a closed form (``log_probabilities``), the selection
  frequencies against it (chi-square); a mechanism without one is audited by the black box alone;
* ``assumption.selection_utility``: Pr[gap > c (Delta / eps)(ln N + t)] <= e^-t (Dwork & Roth, Thm 3.11).
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck.audit import Audit, ClaimRow, Defaults
from dpcheck.audits.lib import gfa
from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check
from dpcheck.registry import SAMPLING, SetOption

HZ = "He & Zhou (arXiv 2605.07049)"


def selection_law_check(mech, epsilon: float, sensitivity: float, *, draws: int, alpha: float, seed: int,
                        N: int = 16, spread: float = 4.0) -> Check | None:
    """privacy.selection_law: the selection frequencies on scores spanning ``spread`` eps / (2 Delta) against
    the law of :func:`dpcheck.audits.lib.gfa.reference_law` -- for the exponential mechanism exp(eps S / (2 Delta))
    / Z computed by the check, for a plug-in its declared closed form, which must itself be eps-DP on
    selection_pairs(Delta) (chi-square: FAIL iff p < alpha / 100, as privacy.em_selection); None when a plug-in
    declares none."""
    from scipy.stats import chi2
    scores = np.linspace(0.0, spread * 2.0 * sensitivity / epsilon, N)
    p0, law, gap = gfa.reference_law(mech, scores, epsilon, sensitivity)
    if p0 is None:
        return None
    sel = gfa.SelectionDraws(mech, epsilon, sensitivity)(scores, np.random.default_rng(seed), draws)
    counts = np.bincount(sel, minlength=N)[:N]
    expected = draws * p0
    keep = expected > 0
    stat = float(np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep]))
    df = int(keep.sum()) - 1
    pval = float(chi2.sf(stat, df))
    outside = int(counts[~keep].sum())
    fail_level = alpha / 100
    claim = {"statement": "the selections follow the closed-form law the mechanism declares (log_probabilities)",
             "source": f"{HZ}, Algorithm 1 line 6 (the law behind the eps0-DP of each update)"}
    measured = {"chi_square": stat, "df": df, "p_value": pval, "draws": draws, "samples": draws,
                "selections_of_zero_probability": outside, "fail_level": fail_level,
                "confidence": 1 - fail_level if pval < fail_level else 1 - alpha}
    measured.update(law=law, declared_law_log_ratio=gap)
    if gap is not None and gap > epsilon * (1 + 1e-9) + 1e-12:
        verdict, reason = FAIL, (f"the declared law is not eps-DP: log-ratio {gap:.4g} > eps = {epsilon:g} on "
                                 "neighbouring score vectors of sensitivity Delta (selection_pairs)")
    elif outside or pval < fail_level:
        verdict, reason = FAIL, (f"selection frequencies differ from the declared law: chi-square {stat:.4g} on "
                                 f"{df} df, p = {pval:.3g} < {fail_level:g}" if not outside else
                                 f"{outside} selections of entries the declared law gives probability 0")
    elif pval < alpha:
        verdict, reason = INCONCLUSIVE, (f"selection frequencies somewhat off the declared law (p = {pval:.3g}, "
                                         f"between alpha / 100 and alpha): rerun with more draws or another seed")
    else:
        verdict, reason = PASS, f"selection frequencies match the declared law (chi-square {stat:.4g} on {df} df, p = {pval:.3g})"
    return Check(id="privacy.selection_law", kind="privacy", verdict=verdict, claim=claim, measured=measured,
                 details={"mechanism": repr(mech), "scores": f"linspace(0, {spread:g} x 2 Delta / eps, N = {N})"},
                 reason=reason)


class GFASelectionMechanismAudit(Audit):
    name = "gfa_selection_mechanism"
    algorithm = "The private selection of He & Zhou's Algorithms 1 and 2 (exponential mechanism or a plug-in)"
    notion = "DP"
    summary = "each selection eps-DP for scores of sensitivity Delta (Section 3.3, Lemma E.2); utility e^-t tail"
    privatizers = ("exponential",)
    uses = ("privatizer", *SAMPLING)
    options = (SetOption("sensitivity", float, bounds=(0, None), default=1.0,
                         help="the score sensitivity Delta the mechanism is run for"),)
    defaults = Defaults(epsilon=1.0, samples=(10**6, 2 * 10**5))
    claims = (
        ClaimRow("privacy.blackbox", "privacy", "one selection is eps-DP for scores of sensitivity Delta "
                 "(black box, neighbouring score vectors at the sensitivity)", f"{HZ}, Section 3.3, Lemma E.2",
                 "gfa.selection_blackbox_check"),
        ClaimRow("whitebox.dp_event", "whitebox", "the declared DpEvent of one selection is eps-DP (PLD)",
                 f"{HZ}, Section 3.3", "gfa.selection_dp_event_check"),
        ClaimRow("privacy.selection_law", "privacy", "the selections follow the declared closed form "
                 "(exponential mechanism: exp(eps S / (2 Delta)) / Z)", f"{HZ}, Algorithm 1 line 6 (McSherry & Talwar 2007)",
                 "gfa_selection.selection_law_check"),
        ClaimRow("assumption.selection_utility", "assumption",
                 "Pr[S(f) < max S - c (Delta / eps)(ln N + t)] <= e^-t", "Dwork & Roth 2014, Thm 3.11; "
                 f"{HZ}, regret analysis", "gfa.selection_utility_check"),
    )

    def run(self) -> None:
        from dpcheck.algorithms.gfa import load_selection_mechanism
        exe = self.exe
        spec = self.opts.privatizer or "exponential"
        mech = load_selection_mechanism(spec)
        eps = self.epsilon
        sens = float(self.params.sensitivity)
        self.config.update(mechanism=spec, epsilon=eps, sensitivity=sens, neighbouring="replacement")
        samples = self.samples()
        self.progress(f"{self.name}: black box on neighbouring score vectors ({samples} samples per side)")
        self.add(gfa.selection_blackbox_check(mech, eps, sens, samples=samples, alpha=exe.alpha,
                                              seed=self.int_seed("blackbox"), workers=exe.workers, backend=exe.backend,
                                              scheduler=exe.scheduler, progress=exe.progress, cache_dir=exe.cache_dir))
        self.add(gfa.selection_dp_event_check(mech, eps, sens))
        law = selection_law_check(mech, eps, sens, draws=exe.pick(200_000, 50_000), alpha=exe.alpha,
                                  seed=self.int_seed("law"))
        self.add_or_note(law, "selection_law", "not checked: the mechanism declares no closed form "
                         "(log_probabilities); privacy.blackbox is the evidence")
        self.add(gfa.selection_utility_check(mech, eps, sens, runs=exe.pick(20_000, 5_000), alpha=exe.alpha,
                                             seed=self.int_seed("utility")))


GFASelectionMechanismAudit.register()
