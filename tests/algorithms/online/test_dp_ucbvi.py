"""DP-UCBVI core (Qiao & Wang 2023, Algorithm 1): bonus, backward induction, tie-breaking, run().

The reference implementations here are deliberately naive (loops over h, s, a) so that a
vectorisation mistake in the batched code shows up as a mismatch.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from dpcheck.algorithms.envs.generators import random_mdp
from dpcheck.algorithms.envs.riverswim import riverswim
from dpcheck.algorithms.online.bonus import BonusConstants, bernstein_bonus, correction_g, iota
from dpcheck.algorithms.online.ucbvi import DPUCBVI, UCBVI, backward_induction, greedy_policy, private_estimates
from dpcheck.errors import InputError, MechanismError


# ----------------------------------------------------------------------------- test doubles
class ExactCounts:
    """Exact counts shifted like the post-processing of noise-free counts (Section 5.1.1): with E > 0,
    N~(s,a,s') = N + E/(2S), N~(s,a) = N + E/2, so Assumption 3.1 holds with certainty."""

    def __init__(self, E=0.0):
        self.E = E

    def start(self, runs, H, S, A, K, rng, rewards=True):
        self.S = S
        self.width = self.E
        self.n = np.zeros((runs, H, S, A))
        self.m = np.zeros((runs, H, S, A, S))
        self.R = np.zeros((runs, H, S, A))

    def observe(self, states, actions, rewards):
        runs, H = actions.shape
        r, h = np.arange(runs)[:, None], np.arange(H)[None, :]
        np.add.at(self.n, (r, h, states[:, :-1], actions), 1)
        np.add.at(self.m, (r, h, states[:, :-1], actions, states[:, 1:]), 1)
        if rewards is not None:
            np.add.at(self.R, (r, h, states[:, :-1], actions), rewards)

    def true_counts(self):
        return SimpleNamespace(visits=self.n.copy(), transitions=self.m.copy(), rewards=self.R.copy())

    def release(self):
        return SimpleNamespace(visits=self.n + self.E / 2, transitions=self.m + self.E / (2 * self.S),
                               rewards=self.R.copy(), noisy_visits=self.n.copy(), noisy_transitions=self.m.copy(),
                               width=self.E)


def naive_ucbvi_actions(mdp, K, seed, constants, beta=0.1):
    """UCBVI (docs/derivations.md#readings) written out per (h, s, a) with lowest-index ties, one run."""
    H, S, A = mdp.H, mdp.S, mdp.A
    io = constants.iota_value(H, S, A, K, beta)
    N = np.zeros((H, S, A)); Nn = np.zeros((H, S, A, S)); R = np.zeros((H, S, A))
    Qprev = np.full((H, S, A), float(H))
    rng_env = np.random.default_rng(seed).spawn(3)[0]
    out = []
    for k in range(K):
        V = np.zeros((H + 1, S))
        Q = np.empty((H, S, A))
        for h in reversed(range(H)):
            for s in range(S):
                for a in range(A):
                    n = N[h, s, a]
                    if n == 0:
                        Q[h, s, a] = min(Qprev[h, s, a], H)
                        continue
                    p = Nn[h, s, a] / n
                    mean = p @ V[h + 1]
                    var = max(p @ V[h + 1] ** 2 - mean ** 2, 0.0)
                    b = constants.c_variance * math.sqrt(var * io / n) + constants.c_reward * math.sqrt(io / n)
                    if constants.c_correction > 0 and h < H - 1:
                        ns = N[h + 1].sum(axis=1)
                        g = np.minimum(correction_g(ns, H=H, S=S, A=A, E=0.0, iota=io), H * H)
                        b += constants.c_correction * math.sqrt(io) * math.sqrt(p @ g / n)
                    rr = min(max(R[h, s, a] / n, 0.0), 1.0)
                    Q[h, s, a] = min(Qprev[h, s, a], H, rr + mean + constants.scale * b)
                V[h, s] = Q[h, s].max()
        Qprev = Q
        pi = Q.argmax(axis=-1)
        tr = mdp.rollout(pi[None], rng_env)
        st_, ac, rw = tr.states[0], tr.actions[0], tr.rewards[0]
        for h in range(H):
            N[h, st_[h], ac[h]] += 1; Nn[h, st_[h], ac[h], st_[h + 1]] += 1; R[h, st_[h], ac[h]] += rw[h]
        out.append(ac)
    return np.array(out)


# ----------------------------------------------------------------------------- bonus
def test_iota_matches_spec_reference_value():
    # docs/derivations.md#widths-e reference: S=6, A=2, H=20, K=50,000, beta=0.1 -> iota ~= 25.0
    assert iota(20, 6, 2, 50_000, 0.1) == pytest.approx(math.log(30 * 20 * 6 * 2 * 20 * 50_000 / 0.1))
    assert iota(20, 6, 2, 50_000, 0.1) == pytest.approx(25.0, abs=0.1)


def test_bonus_terms_by_hand():
    # one (s, a) with P~ = (1/2, 1/2), V = (0, 2): Var = 1; N~ = 4; E = 2; H = 3, S = 2, A = 1
    H, S, A, E, io = 3, 2, 1, 2.0, 5.0
    P = np.array([[[[0.5, 0.5]], [[0.5, 0.5]]]])          # (1, S, A, S)
    N = np.full((1, S, A), 4.0)
    V = np.array([[0.0, 2.0]])
    Ns = np.array([[8.0, 1e30]])                            # g(8) and g(huge) -> 0
    c = BonusConstants.theory()
    b = bernstein_bonus(P, N, V, Ns, H=H, E=E, iota=io, constants=c, last_step=False)[0, 0, 0]
    g8 = 1000.0 ** 2 * (H ** 3 * S * A * io ** 2 / 8 + (H ** 4 * S ** 4 * A ** 2 * E ** 2 * io ** 4
                                                        + H ** 6 * S ** 4 * A ** 2 * io ** 4) / 64)
    W = 0.5 * min(g8, H ** 2) + 0.5 * 0.0
    expected = (2 * math.sqrt(1.0 * io / 4) + math.sqrt(2 * io / 4) + 20 * H * S * E * io / 4
                + 4 * math.sqrt(io) * math.sqrt(W / 4))
    assert b == pytest.approx(expected, rel=1e-12)
    # W_H = 0 at the last step
    b_last = bernstein_bonus(P, N, V, None, H=H, E=E, iota=io, constants=c, last_step=True)[0, 0, 0]
    assert b_last == pytest.approx(expected - 4 * math.sqrt(io) * math.sqrt(W / 4), rel=1e-12)


def test_g_is_sum_of_squares_of_f():
    # eq. 31, docs/derivations.md#constants: g(n) = a^2 + b^2 + c^2 for f = a + b + c (eq. 83)
    H, S, A, E, io, n = 4, 3, 2, 7.0, 3.0, 50.0
    a = 1000 * math.sqrt(S * A * H ** 3 * io ** 2 / n)
    b = 1000 * S ** 2 * A * H ** 2 * E * io ** 2 / n
    c = 1000 * S ** 2 * A * H ** 3 * io ** 2 / n
    assert correction_g(n, H=H, S=S, A=A, E=E, iota=io) == pytest.approx(a * a + b * b + c * c, rel=1e-12)
    assert correction_g(0.0, H=H, S=S, A=A, E=E, iota=io) == np.inf


def test_unvisited_pairs_get_infinite_bonus():
    P = np.full((1, 2, 2, 2), 0.5)
    N = np.array([[[0.0, 3.0], [1.0, 0.0]]])
    b = bernstein_bonus(P, N, np.zeros((1, 2)), None, H=2, E=0.0, iota=1.0,
                        constants=BonusConstants.practical(), last_step=True)
    assert np.isinf(b[0, 0, 0]) and np.isinf(b[0, 1, 1]) and np.isfinite(b[0, 0, 1])


def test_bonus_constants_validated():
    with pytest.raises(InputError):
        BonusConstants(mode="fast")
    with pytest.raises(InputError):
        BonusConstants(c_variance=-1.0)
    with pytest.raises(InputError):
        BonusConstants(iota=0.0)


# ----------------------------------------------------------------------------- backward induction
def naive_backward_induction(P, r, N, Qprev, E, io, c):
    runs, H, S, A, _ = P.shape
    Q = np.empty((runs, H, S, A)); V = np.zeros((runs, H + 1, S))
    for i in range(runs):
        for h in reversed(range(H)):
            Ns = N[i, h + 1].sum(-1)[None] if h < H - 1 else None
            b = bernstein_bonus(P[i:i + 1, h], N[i:i + 1, h], V[i:i + 1, h + 1], Ns, H=H, E=E, iota=io,
                                constants=c, last_step=h == H - 1)[0]
            for s in range(S):
                for a in range(A):
                    Q[i, h, s, a] = min(Qprev[i, h, s, a], H, r[i, h, s, a] + P[i, h, s, a] @ V[i, h + 1] + b[s, a])
                V[i, h, s] = Q[i, h, s].max()
    return Q, V


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=st.integers(1, 3), H=st.integers(1, 4), S=st.integers(1, 4), A=st.integers(1, 3),
       E=st.sampled_from([0.0, 0.5, 3.0]), mode=st.sampled_from(["theory", "practical"]),
       seed=st.integers(0, 2 ** 16))
def test_backward_induction_matches_naive_loops(runs, H, S, A, E, mode, seed):
    rng = np.random.default_rng(seed)
    N_sas = rng.integers(0, 5, size=(runs, H, S, A, S)).astype(float) * rng.random((runs, H, S, A, S))
    if E > 0:
        N_sas += E / (2 * S)
    N = N_sas.sum(-1)
    R = rng.random((runs, H, S, A)) * N
    P, r = private_estimates(N_sas, N, R)
    Qprev = np.where(rng.random((runs, H, S, A)) < 0.3, rng.random((runs, H, S, A)) * H, H)
    c = BonusConstants.for_mode(mode)
    if mode == "theory":  # make the theory bonus bite somewhere: scale it down
        c = BonusConstants(scale=1e-7)
    io = 2.0
    Q, V = backward_induction(P, r, N, Qprev, E=E, iota=io, constants=c)
    Qn, Vn = naive_backward_induction(P, r, N, Qprev, E, io, c)
    np.testing.assert_allclose(Q, Qn, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(V, Vn, rtol=1e-12, atol=1e-12)
    assert np.all(Q <= H) and np.all(Q <= Qprev)


def test_private_estimates_valid_and_clipped():
    N_sas = np.array([[[[[1.0, 3.0]], [[0.0, 0.0]]]]])   # (1,1,2,1,2)
    N = N_sas.sum(-1)
    R = np.array([[[[7.0], [0.0]]]])                     # R~ > N~: r~ clipped to 1
    P, r = private_estimates(N_sas, N, R)
    np.testing.assert_allclose(P[0, 0, 0, 0], [0.25, 0.75])
    np.testing.assert_allclose(P[0, 0, 1, 0], [0.5, 0.5])  # unvisited: uniform placeholder
    assert r[0, 0, 0, 0] == 1.0 and r[0, 0, 1, 0] == 0.0
    _, r_neg = private_estimates(N_sas, N, -R)
    assert r_neg[0, 0, 0, 0] == 0.0


def test_greedy_policy_ties():
    Q = np.zeros((2000, 1, 1, 3))
    Q[..., 0] = -1.0  # actions 1 and 2 tie
    assert np.all(greedy_policy(Q, None, "lowest") == 1)
    pi = greedy_policy(Q, np.random.default_rng(0), "random")
    assert set(np.unique(pi)) == {1, 2}
    assert abs((pi == 1).mean() - 0.5) < 0.05  # uniform among maximisers


# ----------------------------------------------------------------------------- run()
def test_ucbvi_equals_naive_reference():
    mdp = random_mdp(3, 2, 3, np.random.default_rng(5))
    K = 60
    for mode in ("practical", "theory"):
        c = BonusConstants.for_mode(mode) if mode == "practical" else BonusConstants(scale=1e-6)
        res = DPUCBVI(ExactCounts(0.0), constants=c, tie_breaking="lowest").run(mdp, K, 11, runs=1)
        expected = naive_ucbvi_actions(mdp, K, 11, c)
        np.testing.assert_array_equal(res.actions[0], expected)


def test_zero_noise_privatizer_reproduces_ucbvi_actions():
    # a privatizer that adds no noise (exact counts, E = 0) through DP-UCBVI == UCBVI, action by action
    pytest.importorskip("dpcheck.algorithms.privatizers", reason="privatizers not available")
    from dpcheck.algorithms.privatizers import NoPrivatizer  # noqa: F401
    env = riverswim(6)
    a = DPUCBVI(ExactCounts(0.0), mode="practical").run(env, 300, 3, runs=4)
    b = UCBVI(mode="practical").run(env, 300, 3, runs=4)
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_allclose(a.regret, b.regret)


def test_monotone_min_and_clip_hold_in_runs():
    env = random_mdp(4, 2, 4, np.random.default_rng(2), reward_noise="bernoulli")
    from dpcheck.audits.lib.tabular import CountAssumptionMonitor
    box = {}

    def hook(counts, priv):
        box.setdefault("mon", CountAssumptionMonitor(3, counts.width, source="test")).update(counts, priv.true_counts())

    res = DPUCBVI(ExactCounts(2.0), mode="practical").run(env, 200, 0, runs=3, release_hook=hook)
    m = res.monitors
    assert np.all(m["monotonicity_violations"] == 0) and np.all(m["above_H"] == 0)
    # exact shifted counts: Assumption 3.1 holds with certainty (judged by the audits' shared monitor)
    mon = box["mon"]
    assert mon.releases == 200 and np.all(mon.error_ratio <= 1.0 + 1e-12)
    assert not (mon.under_violations.any() or mon.sum_violations.any() or mon.kernel_violations.any())
    # the agent's monitors are about Q~ only: the counts are judged once, by CountAssumptionMonitor
    assert not {"good_event", "max_count_error", "underestimates", "min_P"} & set(m)


def test_theory_mode_is_vacuous_on_riverswim():
    # reports/reproductions/dp_ucbvi_fig1/README.md: with the paper's constants the bonus exceeds H, Q~ = H everywhere, optimism is trivial
    env = riverswim(20)
    res = DPUCBVI(ExactCounts(1.0), mode="theory").run(env, 50, 0, runs=2)
    assert np.all(res.monitors["vacuous_fraction_last"] == 1.0)
    assert np.all(res.monitors["optimism_violations"] == 0)
    # regret per episode stays at the level of a policy that does not learn
    assert res.regret[:, -10:].mean() > 1.0


@pytest.mark.slow
def test_practical_mode_learns_riverswim():
    env = riverswim(20)
    res = DPUCBVI(ExactCounts(0.0), mode="practical").run(env, 1500, 0, runs=2)
    late, early = res.regret[:, -200:].mean(), res.regret[:, :50].mean()
    assert late < 0.2 * early and late < 0.3


def test_seeded_runs_are_reproducible_and_streams_separate():
    env = riverswim(5)
    r1 = DPUCBVI(ExactCounts(0.0), mode="practical").run(env, 40, 7, runs=3)
    r2 = DPUCBVI(ExactCounts(0.0), mode="practical").run(env, 40, 7, runs=3)
    np.testing.assert_array_equal(r1.actions, r2.actions)
    np.testing.assert_array_equal(r1.states, r2.states)
    # theory mode + lowest ties: the policy is "action 0 always" whatever the counts, so the
    # environment stream alone fixes the states -- identical for privatizers with different noise
    a = DPUCBVI(ExactCounts(1.0), tie_breaking="lowest").run(env, 20, 9, runs=2)
    b = DPUCBVI(ExactCounts(5.0), tie_breaking="lowest").run(env, 20, 9, runs=2)
    np.testing.assert_array_equal(a.states, b.states)


def test_input_validation():
    env = riverswim(4)
    with pytest.raises(InputError):
        DPUCBVI(object())
    with pytest.raises(InputError):
        DPUCBVI(ExactCounts(), beta=1.5)
    with pytest.raises(InputError):
        DPUCBVI(ExactCounts(), mode="fastest")
    with pytest.raises(InputError):
        DPUCBVI(ExactCounts(), tie_breaking="first")
    with pytest.raises(InputError):
        DPUCBVI(ExactCounts()).run(env, 0, 0)
    with pytest.raises(InputError):
        DPUCBVI(ExactCounts()).run(env, 5, 0, runs=-1)
    with pytest.raises(InputError):
        DPUCBVI(ExactCounts()).run(env, 5, "seed")
    with pytest.raises(InputError):
        DPUCBVI(ExactCounts()).run(object(), 5, 0)


def test_misbehaving_privatizer_is_a_mechanism_error():
    class BadShape(ExactCounts):
        def release(self):
            c = super().release()
            c.visits = c.visits[:, :1]
            return c

    class BadWidth(ExactCounts):
        def start(self, *a, **k):
            super().start(*a, **k)
            self.width = -1.0

    with pytest.raises(MechanismError):
        DPUCBVI(BadShape()).run(riverswim(3), 3, 0)
    with pytest.raises(MechanismError):
        DPUCBVI(BadWidth()).run(riverswim(3), 3, 0)


def test_central_privatizer_without_noise_reproduces_ucbvi_actions():
    # the real Central Privatizer (tree + post-processing LP) with its noise switched off and E = 0
    # releases N~ = N exactly, so DP-UCBVI must send the same actions as UCBVI, episode by episode
    from dpcheck.algorithms.privatizers import CentralPrivatizer

    class Noiseless(CentralPrivatizer):
        def node_scale(self):
            return 0.0

        def _compute_width(self):
            return 0.0

    env = random_mdp(3, 2, 4, np.random.default_rng(4), reward_noise="bernoulli")
    a = DPUCBVI(Noiseless(1.0), mode="practical").run(env, 150, 21, runs=3)
    b = UCBVI(mode="practical").run(env, 150, 21, runs=3)
    assert a.width == 0.0
    np.testing.assert_array_equal(a.actions, b.actions)


def test_backward_induction_with_per_run_widths_equals_scalar_calls():
    rng = np.random.default_rng(3)
    runs, H, S, A = 3, 3, 2, 2
    E = np.array([0.0, 1.5, 7.0])
    N_sas = rng.integers(0, 4, size=(runs, H, S, A, S)).astype(float) + (E / (2 * S))[:, None, None, None, None]
    N = N_sas.sum(-1)
    P, r = private_estimates(N_sas, N, rng.random((runs, H, S, A)) * N)
    Qprev = np.full((runs, H, S, A), float(H))
    for c in (BonusConstants.practical(), BonusConstants(scale=1e-7)):
        Q, V = backward_induction(P, r, N, Qprev, E=E, iota=2.0, constants=c)
        for i in range(runs):
            Qi, Vi = backward_induction(P[i:i + 1], r[i:i + 1], N[i:i + 1], Qprev[i:i + 1], E=float(E[i]),
                                        iota=2.0, constants=c)
            np.testing.assert_allclose(Q[i], Qi[0], rtol=1e-12)
            np.testing.assert_allclose(V[i], Vi[0], rtol=1e-12)


def test_stacked_privatizers_equal_separate_runs():
    # users add no randomness and ties go to the lowest action: everything is deterministic, so a
    # stacked batch must reproduce each configuration's separate run exactly, run by run
    from dpcheck.algorithms.envs.users import HashedUsers
    from dpcheck.algorithms.online.stacking import StackedPrivatizer
    users = HashedUsers.random(40, 3, 2, 3, np.random.default_rng(0))
    parts = [(ExactCounts(0.0), 2), (ExactCounts(2.0), 1), (ExactCounts(9.0), 2)]
    stacked = DPUCBVI(StackedPrivatizer(parts), mode="practical", tie_breaking="lowest").run(users, 40, 0, runs=5)
    assert stacked.width.shape == (5,)
    for (p, n), sl in zip(parts, StackedPrivatizer(parts).slices):
        alone = DPUCBVI(ExactCounts(p.E), mode="practical", tie_breaking="lowest").run(users, 40, 0, runs=n)
        np.testing.assert_array_equal(stacked.actions[sl], alone.actions)
    assert "E=[0, 9] per run" in stacked.summary()


def test_stacked_release_equals_each_privatizers_own_release():
    # the merged post-processing LP of StackedPrivatizer must give what each privatizer releases alone
    import copy
    from dpcheck.algorithms.online.stacking import StackedPrivatizer
    from dpcheck.algorithms.privatizers import CentralPrivatizer, LocalPrivatizer, NoPrivatizer
    parts = [(CentralPrivatizer(3.0, width_mode="nominal"), 2), (NoPrivatizer(), 1),
             (LocalPrivatizer(50.0, width_mode="nominal"), 2), (CentralPrivatizer(100.0), 1)]
    twins = [copy.deepcopy(p) for p, _ in parts]
    st = StackedPrivatizer(parts)
    H, S, A, K = 2, 3, 2, 9
    rng = np.random.default_rng(0)
    st.start(6, H, S, A, K, np.random.default_rng(1))
    for t, g, (p, n) in zip(twins, np.random.default_rng(1).spawn(len(parts)), parts):
        t.start(n, H, S, A, K, g)
    for _ in range(K - 1):
        states = rng.integers(0, S, (6, H + 1)); actions = rng.integers(0, A, (6, H)); rewards = rng.random((6, H))
        st.observe(states, actions, rewards)
        got = st.release()
        for t, sl in zip(twins, st.slices):
            t.observe(states[sl], actions[sl], rewards[sl])
            want = t.release()
            np.testing.assert_allclose(got.transitions[sl], want.transitions, rtol=1e-12, atol=1e-9)
            np.testing.assert_allclose(got.visits[sl], want.visits, rtol=1e-12, atol=1e-9)
            np.testing.assert_allclose(got.rewards[sl], want.rewards, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("A", [1, 2, 3, 5, 9, 12])
def test_folded_max_and_argmax_match_numpy(A):
    from dpcheck.algorithms.online.ucbvi import _argmax_last, _max_last
    x = np.random.default_rng(A).integers(0, 3, (7, 4, A)).astype(float)  # many ties
    np.testing.assert_array_equal(_max_last(x), x.max(-1))
    np.testing.assert_array_equal(_argmax_last(x), x.argmax(-1))
    out = np.empty((7, 4))
    assert _max_last(x, out=out) is out
    np.testing.assert_array_equal(out, x.max(-1))


# --- the column-layout fast path (short rows, many of them) must be bit-identical to the row path ---
def test_sorting_networks_sort_every_zero_one_input():
    """0-1 principle: a comparator network sorts every input iff it sorts every 0/1 input."""
    import itertools
    from dpcheck.algorithms.privatizers import projection as P
    for S in range(2, P._COLUMN_MAX_S + 1):
        X = np.array(list(itertools.product([0.0, 1.0], repeat=S)))
        cols = list(X.T.copy())
        for i, j in P._NETWORKS[S]:
            hi = np.maximum(cols[i], cols[j])
            cols[j] = np.minimum(cols[i], cols[j])
            cols[i] = hi
        assert np.array_equal(np.array(cols).T, -np.sort(-X, axis=1)), S


@pytest.mark.parametrize("S", [2, 3, 6, 7, 12])
def test_column_path_is_bit_identical_to_row_path(S, monkeypatch):
    from dpcheck.algorithms.privatizers import projection as P
    rng = np.random.default_rng(S)
    M = 400
    y = rng.normal(rng.uniform(-5, 40), rng.uniform(0.1, 30), (M, S))
    y[rng.random((M, S)) < 0.2] = 0.0                        # ties and exact zeros
    band = rng.uniform(0, 25, M)
    band[::11] = 0.0
    n = y.sum(1) + rng.normal(0, 40, M)
    n[::7] = -100.0                                          # infeasible rows
    n[::13] = -band[::13]                                    # n + band == 0 exactly
    fast = P.project_counts(y, n, band)
    monkeypatch.setattr(P, "_COLUMN_MIN_ROWS", 10 ** 9)      # force the row-wise solve
    slow = P.project_counts(y, n, band)
    assert fast.infeasible.any() and (~fast.infeasible).any()
    for a, b in ((fast.counts, slow.counts), (fast.value, slow.value), (fast.infeasible, slow.infeasible)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("kind", ["central", "local"])
def test_sparse_observe_equals_the_dense_hook(kind):
    """The privatizers' sparse fast path (_ingest_sparse) gives bit-identical releases to the dense
    _ingest hook a user's subclass would get (the subclass below only forces the dense path)."""
    from dpcheck.algorithms.privatizers import CentralPrivatizer, LocalPrivatizer
    base = CentralPrivatizer if kind == "central" else LocalPrivatizer
    Dense = type("Dense", (base,), {"_ingest": lambda self, v, t, r: base._ingest(self, v, t, r)})
    H, S, A, K, runs = 3, 4, 2, 13, 3
    fast = base(2.0).start(runs, H, S, A, K, np.random.default_rng(5))
    slow = Dense(2.0).start(runs, H, S, A, K, np.random.default_rng(5))
    rng = np.random.default_rng(6)
    for _ in range(K):
        st_, ac, rw = rng.integers(0, S, (runs, H + 1)), rng.integers(0, A, (runs, H)), rng.random((runs, H))
        fast.observe(st_, ac, rw)
        slow.observe(st_, ac, rw)
        a, b = fast.release(), slow.release()
        for name in ("visits", "transitions", "rewards", "noisy_visits", "noisy_transitions"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    a, b = fast.true_counts(), slow.true_counts()
    for name in ("visits", "transitions", "rewards"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
