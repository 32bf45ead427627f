"""Privacy calibration of He & Zhou 2026, Section 3.3, docs/derivations.md#noise-calibration (docs/derivations.md#readings) and the Appendix E / docs/private_gfa.md parameter figures."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.claims import Claim
from dpcheck.errors import InputError
from dpcheck.algorithms.gfa import (
    GFAPrivacy, NonPrivateGeneralMDP, PrivateGeneralMDP, PrivateOutcomeRL, advanced_composition, appendix_d,
    gf3, number_of_updates, per_update_epsilon, poc_default, remark_3_7_batch_size, sensitivity,
    theory_parameters,
)


def test_poc_default_budgets_of_section_4_5():
    """docs/private_gfa.md: eps0 = 0.2722 (eps = 8, M = 22), 0.2045 (eps = 5, M = 18); beta_EM = eps0 / 2 with Delta_S = 1."""
    fc = appendix_d("easy").fclass
    for method, B, M, eps0 in [("private_eps_8", 14, 22, 0.2722), ("private_eps_5", 17, 18, 0.2045)]:
        agent = poc_default(method, fc, K=300)
        p = agent.privacy(300)
        assert (p.B, p.M) == (B, M) and p.sensitivity == 1.0
        assert p.eps0 == pytest.approx(eps0, abs=5e-5) and p.beta_em == pytest.approx(eps0 / 2, abs=3e-5)
        assert p.composed_epsilon <= p.epsilon and p.composed_epsilon == pytest.approx(p.epsilon, rel=1e-9)
    assert poc_default("non_private_batched", fc, K=300).B == 18
    assert poc_default("non_private_no_batch", fc, K=300).privacy(300).claim is None


@settings(max_examples=60, deadline=None)
@given(eps=st.floats(0.05, 20.0), delta=st.sampled_from([1e-3, 1e-5, 1e-8]), M=st.integers(1, 500))
def test_composition_rules(eps, delta, M):
    """Advanced composition: the exact solve is the largest eps0 within budget; Section 3.3's first term is eps/2 (and the total
    <= eps when eps0 <= 1, eps <= 2 ln(1/delta)); Appendix E's first term alone is eps (overshoot)."""
    exact = per_update_epsilon(eps, delta, M, "exact")
    assert advanced_composition(exact, M, delta) <= eps * (1 + 1e-12)
    assert advanced_composition(exact * (1 + 1e-9), M, delta) > eps * (1 - 1e-12)
    s33 = per_update_epsilon(eps, delta, M, "section_3_3")
    root = math.sqrt(2 * M * math.log(1 / delta))
    assert s33 * root == pytest.approx(eps / 2)
    if s33 <= 1 and eps <= 2 * math.log(1 / delta):
        assert advanced_composition(s33, M, delta) <= eps * (1 + 1e-12)
        assert s33 <= exact * (1 + 1e-12)
    app_e = per_update_epsilon(eps, delta, M, "appendix_e")
    assert app_e * root == pytest.approx(eps)
    assert advanced_composition(app_e, M, delta) > eps


def test_declaration_is_data_from_the_parameters():
    inst = gf3()
    agent = PrivateGeneralMDP(inst.fclass, epsilon=2.0, delta=1e-6, B=7)
    p = agent.privacy(50)                                     # no run needed
    assert isinstance(p, GFAPrivacy)
    assert p.M == 8 == number_of_updates(50, 7) and p.sensitivity == 24.0   # 8H, H = 3
    assert p.eps0 == per_update_epsilon(2.0, 1e-6, 8)
    assert p.beta_em == p.eps0 / 48
    assert p.composed_epsilon == advanced_composition(p.eps0, 8, 1e-6) <= 2.0
    assert p.within_budget
    assert p.claim == Claim(epsilon=2.0, delta=1e-6, notion="JDP", source=p.source)
    assert "Theorem 3.1" in p.source
    assert p.to_dict()["M"] == 8 and "beta_EM" in p.summary()
    bad = PrivateGeneralMDP(inst.fclass, epsilon=2.0, delta=1e-6, B=7, eps0_rule="appendix_e").privacy(50)
    assert not bad.within_budget and bad.composed_epsilon > 2.0
    assert NonPrivateGeneralMDP(inst.fclass).privacy(50).beta_em == math.inf


def test_dp_event_accounts_within_the_declared_epsilon():
    """The dp_accounting event (M x binary randomized response at eps0) composes to <= the declared epsilon
    under a PLD accountant (tighter than advanced composition)."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant
    p = PrivateOutcomeRL(appendix_d("easy", H=2).fclass, epsilon=3.0, delta=1e-5, B=5).privacy(60)
    replace_one = dp_accounting.NeighboringRelation.REPLACE_ONE      # Section 2.2: one user replaced
    acc = pld_privacy_accountant.PLDAccountant(replace_one)
    acc.compose(p.dp_event())
    eps = acc.get_epsilon(p.delta)
    assert eps <= p.epsilon and eps >= p.eps0
    single = pld_privacy_accountant.PLDAccountant(replace_one)
    single.compose(p.dp_event().event)
    assert single.get_epsilon(0.0) == pytest.approx(p.eps0, rel=1e-3)
    assert isinstance(NonPrivateGeneralMDP(gf3().fclass).privacy(5).dp_event(), dp_accounting.NonPrivateDpEvent)


def test_sensitivities_of_a3():
    assert sensitivity(1, 3) == 24.0
    assert sensitivity(2, 4) == 25.0 and sensitivity(2, 4, "telescoping") == 16.0 and sensitivity(2, 4, "binary") == 1
    with pytest.raises(InputError):
        sensitivity(1, 3, "binary")
    assert PrivateOutcomeRL(appendix_d("easy", H=2).fclass, sensitivity=2.5).sensitivity == 2.5


def test_theory_parameters_of_section_4_5():
    """docs/private_gfa.md theory-faithful figures: B ~ 58 (eps = 8) and ~ 70 (eps = 5), eta_np ~ 132 (K = 300)."""
    kw = dict(K=300, H=4, N=243, C_cov=9.34375, delta=1e-5, alpha=0.05)
    t8 = theory_parameters(2, epsilon=8.0, **kw)
    t5 = theory_parameters(2, epsilon=5.0, **kw)
    assert t8.sensitivity == 25.0 and abs(t8.B - 58) <= 1 and abs(t5.B - 70) <= 1
    assert t8.eta_np == pytest.approx(132, abs=1)
    assert t8.eta == max(t8.eta_np, t8.eta_p) and t8.beta_em == pytest.approx(0.01, abs=5e-3)
    bal = theory_parameters(2, epsilon=8.0, eta_form="balancing", **kw)
    assert bal.eta_p == pytest.approx(math.sqrt(2 * 300 * 25 * bal.L / (bal.C * bal.eps0)))
    t1 = theory_parameters(1, K=1000, H=3, N=192, C_cov=3.52, epsilon=1.0, delta=1e-5)
    assert t1.sensitivity == 24.0 and 1 <= t1.B <= 1000 and t1.M == -(-1000 // t1.B)
    # Theorem 3.1's tuning: B grows like K^{3/5} and shrinks like eps^{-2/5} (up to the logs)
    Ks = [2 ** 10, 2 ** 15]
    Bs = [theory_parameters(1, K=k, H=3, N=192, C_cov=3.52, epsilon=1.0, delta=1e-5).B_real for k in Ks]
    slope = math.log(Bs[1] / Bs[0]) / math.log(Ks[1] / Ks[0])
    assert 0.5 < slope < 0.65


def test_remark_3_7_batch_size():
    assert [remark_3_7_batch_size(k) for k in (1, 4, 5, 300)] == [1, 2, 3, 18]


@pytest.mark.parametrize("kw, msg", [
    ({"B": 0}, "batch size"), ({"B": 2.5}, "batch size"), ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"), ({"delta": 0.0}, "delta"), ({"delta": 1.0}, "delta"),
    ({"eta": 0.0}, "eta"), ({"eps0_rule": "basic"}, "eps0_rule"), ({"tie_breaking": "max"}, "tie_breaking"),
    ({"sensitivity": -3.0}, "sensitivity"),
])
def test_bad_privacy_parameters_are_one_line_input_errors(kw, msg):
    with pytest.raises(InputError, match=msg) as err:
        PrivateGeneralMDP(gf3().fclass, **kw)
    assert "\n" not in str(err.value)
