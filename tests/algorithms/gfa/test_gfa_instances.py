"""Reference facts of He & Zhou 2026, Appendix D (its class) and GF-3 as oracles, and the exact
coverability / realizability / completeness functions that a later assumption check reports."""
import itertools

import numpy as np
import pytest

from dpcheck.algorithms.envs.planning import optimal_values
from dpcheck.algorithms.gfa import (
    appendix_d, completeness, coverability, gf3, hypothesis, hypothesis_entry, max_return, optimal_return,
    outcome_model, per_start_coverability, policy_returns, realizability, FunctionClass,
)
from dpcheck.algorithms.gfa.evaluation import next_state_table
from dpcheck.algorithms.gfa.instances import _contexts, _targets, _gate


@pytest.fixture(scope="module")
def gf():
    return gf3()


@pytest.fixture(scope="module", params=["easy", "hard"])
def appd(request):
    return appendix_d(request.param)


# ------------------------------------------------------------------------------------------------ GF-3
def test_gf3_optimal_values(gf):
    Q, V = optimal_values(gf.mdp)
    np.testing.assert_allclose(Q[2], gf.mdp.r[2])
    np.testing.assert_allclose(Q[1], [[0.1, 0.8], [0.59, 0.47], [0.61, 0.96]], atol=1e-12)
    np.testing.assert_allclose(Q[0], np.tile([0.738, 0.886], (3, 1)), atol=1e-12)
    assert V[0, 0] == pytest.approx(0.886)
    assert optimal_return(gf.mdp) == pytest.approx(0.886)


def test_gf3_class_entries_as_printed(gf):
    fc = gf.fclass
    assert fc.sizes == (8, 6, 4) and fc.N == 192 and fc.is_product
    F2 = fc.layers[1]
    np.testing.assert_allclose(F2[1], [[1.0, 0.75], [0.74, 0.88], [0.83, 0.79]], atol=1e-12)
    np.testing.assert_allclose(F2[2], 0.5, atol=1e-12)
    np.testing.assert_allclose(F2[3], [[0.1, 0.6], [0.83, 0.31], [0.41, 0.28]], atol=1e-12)
    rows = [(0.738, 0.886), (0.86, 0.84), (0.5, 0.5), (0.662, 0.494), (1, 1), (0.388, 0.736), (0.2, 0.95), (0, 0)]
    np.testing.assert_allclose(fc.layers[0], np.array(rows)[:, None, :].repeat(3, axis=1), atol=1e-12)
    for h in range(3):                          # all entries distinct within each layer
        flat = fc.layers[h].reshape(fc.sizes[h], -1)
        assert np.unique(flat.round(12), axis=0).shape[0] == fc.sizes[h]


def test_gf3_realizable_complete_and_q_star_is_entry_0(gf):
    real = realizability(gf.mdp, gf.fclass)
    assert real.holds and real.entries == (0,) and gf.target == 0
    comp = completeness(gf.mdp, gf.fclass)
    assert comp.holds and comp.per_step == (True, True, True) and comp.violations == ()


def test_gf3_coverability_and_class_returns(gf):
    cov = coverability(gf.mdp, gf.fclass)
    np.testing.assert_allclose(cov.per_step, [2.0, 2.8, 3.52], atol=1e-12)
    assert cov.value == pytest.approx(3.52)
    np.testing.assert_allclose(cov.mu.sum(axis=(1, 2)), 1.0)
    J = policy_returns(gf.mdp, gf.fclass.greedy_policies())
    assert int(np.sum(np.isclose(J, 0.886, atol=1e-12))) == 12
    assert J.mean() == pytest.approx(0.511, abs=5e-4)
    assert J.min() == pytest.approx(0.14)
    # optimistic entries at s_1 that must be rejected through the Bellman error
    assert gf.fclass.layer_max[0][4, 0] == 1.0 and gf.fclass.layer_max[0][6, 0] == 0.95


def test_completeness_violation_is_reported(gf):
    layers = list(gf.fclass.layers)
    layers[1] = layers[1][1:]                   # drop T_2 R_3 = Q*_2 from F_2
    fc = FunctionClass.product(layers)
    comp = completeness(gf.mdp, fc)
    assert not comp.holds and comp.per_step == (True, False, True)
    assert comp.violations[0][:2] == (1, 0) and comp.worst > 0.1
    assert not realizability(gf.mdp, fc).holds


# ------------------------------------------------------------------------------------------ Appendix D
def test_appendix_d_hypothesis_ordering():
    assert hypothesis_entry(0, (0, 1, 0, 1)) == 10 and hypothesis(10) == (0, (0, 1, 0, 1))
    assert hypothesis_entry(2, (2, 1, 2, 1)) == 232 and hypothesis(232) == (2, (2, 1, 2, 1))
    for e in (0, 57, 242):
        assert hypothesis_entry(*hypothesis(e)) == e


def test_appendix_d_class_facts(appd):
    fc = appd.fclass
    assert fc.N == 243 and fc.distinct_entries() == 207 and not fc.is_product
    v = fc.values
    for a, b in [((0, (0, 0, 1, 0)), (0, (0, 0, 1, 1))), ((0, (0, 1, 0, 1)), (0, (0, 1, 1, 1)))]:
        assert np.array_equal(v[hypothesis_entry(*a)], v[hypothesis_entry(*b)])
    np.testing.assert_allclose(np.unique(fc.initial_values(appd.mdp.init)), [0.5, 1.0])
    assert max_return(appd.mdp) == 1.0
    assert next_state_table(appd.mdp) is not None


def test_appendix_d_coverability_facts(appd):
    pc = per_start_coverability(appd.mdp, appd.fclass)
    np.testing.assert_allclose(pc.reachable.mean(axis=0), [1.84375, 3.21875, 5.46875, 9.34375])
    np.testing.assert_array_equal(pc.reachable.max(axis=0), [2, 4, 7, 13])
    assert pc.value == pytest.approx(9.34375) and pc.mean_reachable == pytest.approx(19.875)
    cov = coverability(appd.mdp, appd.fclass)
    assert cov.value == pytest.approx(9.34375)
    # Appendix D's coverability facts: N(s_1) <= H C_cov(Pi; M_{s_1}), E N <= H C'_cov, C_cov <= C'_cov
    assert np.all(pc.reachable.sum(axis=1) <= 4 * pc.per_start)
    assert cov.value <= pc.value + 1e-12


def test_appendix_d_returns_and_realizability(appd):
    J = policy_returns(appd.mdp, appd.fclass.greedy_policies())
    J_star = optimal_return(appd.mdp)
    if appd.name.endswith("easy"):
        assert J_star == 1.0 and J.mean() == pytest.approx(0.2654, abs=5e-5)
        assert tuple(np.flatnonzero(J == J_star)) == (10, 13)
        assert realizability(appd.mdp, appd.fclass).entries == (10, 13)
    else:
        assert J_star == 0.5 and J.mean() == pytest.approx(0.1244, abs=5e-5)
        assert tuple(np.flatnonzero(J == J_star)) == (hypothesis_entry(0, (2, 1, 2, 1)), 232)
        assert realizability(appd.mdp, appd.fclass).entries == (232,)
    # the planners agree with the deterministic fast path (the general path is backward induction)
    from dpcheck.algorithms.envs.planning import expected_return
    some = appd.fclass.greedy_policies(np.arange(0, 243, 40))
    np.testing.assert_allclose(expected_return(appd.mdp, some), policy_returns(appd.mdp, some), atol=1e-12)


def test_outcome_model_is_the_predicted_outcome():
    """R^(f)(tau) = 1{g(x) = 1 and (a_1..a_4) = a*(x)} for every hypothesis, context and action sequence (Appendix D)."""
    inst = appendix_d("easy")
    x = _contexts()
    seqs = np.array(list(itertools.product((0, 1), repeat=4)))
    width = 8
    states = np.empty((64 * 16, 5), dtype=np.int64)
    actions = np.repeat(seqs[None], 64, axis=0).reshape(-1, 4)
    ctx = np.repeat(np.arange(64), 16)
    p = np.zeros(ctx.size, dtype=np.int64)
    for h in range(4):
        states[:, h] = ctx * width + p
        p = 2 * p + actions[:, h]
    states[:, 4] = 64 * width
    model = outcome_model(inst.fclass, states, actions)                 # (243, 1024)
    for e in (0, 10, 100, 232):
        g, rules = hypothesis(e)
        want = (_gate(g, x)[ctx] == 1) & np.all(actions == _targets(rules, x)[ctx], axis=1)
        np.testing.assert_array_equal(model[e], want.astype(float))
    assert set(np.unique(model)) <= {0.0, 1.0}


def test_small_appendix_d_version():
    inst = appendix_d("hard", H=2)
    assert inst.fclass.N == 27 and inst.mdp.H == 2
    assert realizability(inst.mdp, inst.fclass).holds
    assert optimal_return(inst.mdp) == 0.5


def test_g8_performance_difference_identity_on_gf3(gf):
    """Performance difference: f_1(s_1) - V_1^{pi_f}(s_1) = sum_h E_{pi_f}[(f_h - T_h f_{h+1})(s_h, a_h)] for all 192 entries."""
    from dpcheck.algorithms.gfa import bellman_backup, occupancies
    fc = gf.fclass
    V = fc.values                                                       # (N, H, S, A)
    Tf = np.stack([bellman_backup(gf.mdp, V[:, h + 1])[:, h] if h + 1 < 3 else
                   np.broadcast_to(gf.mdp.r[2], V[:, 2].shape) for h in range(3)], axis=1)
    d = occupancies(gf.mdp, fc.greedy_policies(), 0)                    # (N, H, S, A)
    lhs = fc.initial_values(0) - policy_returns(gf.mdp, fc.greedy_policies(), 0)
    np.testing.assert_allclose(lhs, (d * (V - Tf)).sum(axis=(1, 2, 3)), atol=1e-12)


def test_g9_outcome_identity_on_appendix_d(appd):
    """Outcome version (Appendix D): fbar_1 - J(pi_f) = E_{s_1 ~ rho, pi_f}[R^(f)(tau) - r(tau)] (every 7th entry of the 243, and both
    optimal ones)."""
    from dpcheck.algorithms.gfa.evaluation import _paths
    fc, mdp = appd.fclass, appd.mdp
    some = np.unique(np.r_[np.arange(0, fc.N, 7), 10, 13, 70, 232])
    starts = np.flatnonzero(mdp.init)
    states, actions = _paths(next_state_table(mdp), fc.greedy_policies(some), starts)   # (n, 64, H)
    nxt = next_state_table(mdp)[3, states[..., 3], actions[..., 3]]
    full = np.concatenate([states, nxt[..., None]], axis=-1).reshape(-1, 5)
    model = outcome_model(fc, full, actions.reshape(-1, 4)).reshape(fc.N, some.size, 64)
    model = model[some, np.arange(some.size)]                                          # R^(f) on pi_f's paths
    r = mdp.r[np.arange(4), states, actions].sum(-1)
    lhs = (fc.initial_values(mdp.init) - policy_returns(mdp, fc.greedy_policies()))[some]
    np.testing.assert_allclose(lhs, (model - r).mean(axis=1), atol=1e-12)
