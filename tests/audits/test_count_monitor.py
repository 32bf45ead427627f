"""audits/lib/tabular.CountAssumptionMonitor: the no-underestimation invariant is evidence only where a true count
reaches the band E/4 (below it the clip at 0 alone gives N~ >= N, whatever the post-processing does)."""
from types import SimpleNamespace

import numpy as np

from dpcheck.algorithms.privatizers.projection import post_process
from dpcheck.audits.lib.tabular import CountAssumptionMonitor


def _monitor(N_sas, E, shift, seed=0):
    """One release of S successors per row: N^ = N + noise within the good event (|noise| <= E/4, at the edge for
    a quarter of the rows), post-processed with the paper's LP and a visit shift of ``shift`` (E/2 in the paper)."""
    rng = np.random.default_rng(seed)
    runs, S = N_sas.shape[0], N_sas.shape[-1]
    noise_t = rng.uniform(-E / 4, E / 4, N_sas.shape)
    noise_t[:, ::4] = -E / 4
    noisy_t, noisy_v = N_sas + noise_t, N_sas.sum(-1) - E / 4
    pp = post_process(noisy_t, noisy_v, E)
    trans = pp.transitions - E / (2 * S) + shift / S
    m = CountAssumptionMonitor(runs, E, source="test", has_rewards=False)
    m.update(SimpleNamespace(visits=trans.sum(-1), transitions=trans, rewards=None, noisy_visits=noisy_v,
                             noisy_transitions=noisy_t),
             SimpleNamespace(visits=N_sas.sum(-1), transitions=N_sas, rewards=None))
    return {c.id: c for c in m.checks(beta=0.1, alpha=0.05)}["assumption.no_underestimation"]


def test_no_underestimation_is_vacuous_below_the_band_and_catches_a_short_shift_above_it():
    E, shape = 400.0, (20, 1, 2, 1, 3)
    small = np.random.default_rng(1).integers(0, 30, shape).astype(float)       # N << E/4: the audits' regime
    assert _monitor(small, E, E / 2).details["qualifier"] == "vacuous"
    assert _monitor(small, E, E / 4).details["qualifier"] == "vacuous"             # the short shift is not seen
    large = small + E                                                              # N(s,a,s') ~ E: informative
    ok = _monitor(large, E, E / 2)
    assert ok.verdict == "pass" and "qualifier" not in ok.details
    assert _monitor(large, E, E / 4).verdict == "fail"
