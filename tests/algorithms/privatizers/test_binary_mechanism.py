"""Binary (tree) mechanism (Chan, Shi & Song 2011): the unit tests behind Qiao & Wang 2023 / 2024, Lemma 5.1."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.privatizers.binary_mechanism import (BinaryMechanism, TreeCounter, nodes_containing,
                                                     release_nodes, tree_levels)
from dpcheck.errors import InputError


def test_levels_are_floor_log2_plus_one():
    for K, L in [(1, 1), (2, 2), (3, 2), (4, 3), (7, 3), (8, 4), (50_000, 16)]:
        assert tree_levels(K) == L == int(np.floor(np.log2(K))) + 1


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5000))
def test_release_uses_popcount_nodes_that_partition_the_prefix(t):
    nodes = release_nodes(t)
    assert len(nodes) == bin(t).count("1")
    covered = []
    for j, m in nodes:
        covered.extend(range((m - 1) * 2 ** j + 1, m * 2 ** j + 1))
    assert covered == list(range(1, t + 1))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4096).flatmap(lambda K: st.tuples(st.just(K), st.integers(1, K))))
def test_each_position_is_in_at_most_L_nodes(Kp):
    K, p = Kp
    nodes = nodes_containing(p, K)
    assert len(nodes) <= tree_levels(K)
    # and every release that covers p uses exactly one of these nodes
    for t in range(p, min(K, p + 70) + 1):
        used = [n for n in release_nodes(t) if n in nodes]
        assert len(used) == 1


def test_noise_off_gives_exact_prefix_sums_batched():
    rng = np.random.default_rng(0)
    K = 37
    items = rng.random((K, 3, 4))
    mech = BinaryMechanism(TreeCounter(K, node_scale=0.0), (3, 4), rng)
    assert np.all(mech.release() == 0)                    # B(0) = 0
    for t in range(K):
        mech.step(items[t])
        np.testing.assert_allclose(mech.release(), items[: t + 1].sum(0), rtol=1e-12)
        np.testing.assert_allclose(mech.exact(), items[: t + 1].sum(0), rtol=1e-12)


def replay_releases(mech_cls, K, b, shape, seed, items):
    """Releases of ``mech_cls`` and the releases Chan, Shi & Song 2011 (Algorithm 2) predict from the same noise draws.

    The correct mechanism draws one node per step, node (j, m) at step m 2^j, from rng in that order;
    replaying the same seed gives each node's noise, and B(t) must be the sum over release_nodes(t).
    """
    mech = mech_cls(TreeCounter(K, node_scale=b), shape, np.random.default_rng(seed))
    replay = np.random.default_rng(seed)
    node_noise = {}
    got, want = [], []
    for t in range(1, K + 1):
        mech.step(items[t - 1])
        j = (t & -t).bit_length() - 1
        node_noise[(j, t >> j)] = replay.laplace(0.0, b, size=shape)
        got.append(mech.release())
        want.append(items[:t].sum(0) + sum(node_noise[n] for n in release_nodes(t)))
    return mech, np.array(got), np.array(want)


def test_node_noise_is_drawn_once_and_reused():
    rng = np.random.default_rng(1)
    K = 45
    items = rng.integers(0, 2, (K, 5)).astype(float)
    mech, got, want = replay_releases(BinaryMechanism, K, 2.0, (5,), 123, items)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert mech.node_draws == K                            # one node per step, never redrawn
    # consecutive releases share the noise of their common nodes: B(3) - B(2) is node (0,3) only
    np.testing.assert_allclose(got[2] - got[1], want[2] - want[1])


class FreshNoiseMechanism(BinaryMechanism):
    """Planted defect (the Chowdhury & Zhou code, reports/reproductions/dp_ucbvi_fig1/README.md / docs/derivations.md#readings): fresh noise at every release."""

    def release(self):
        t = self.t
        out = self.exact()
        for _ in release_nodes(t):
            out = out + self.counter.draw(self.rng, self.shape)
        return out


def test_fresh_noise_defect_is_caught_by_the_reuse_test():
    rng = np.random.default_rng(2)
    K = 12
    items = rng.integers(0, 2, (K, 5)).astype(float)
    _, got, want = replay_releases(FreshNoiseMechanism, K, 2.0, (5,), 9, items)
    assert not np.allclose(got, want)


def test_release_noise_covariance_matches_shared_nodes():
    """Cov(B(t), B(t')) = (#shared nodes) 2 b^2; the fresh-noise defect has zero covariance."""
    from dpcheck.audits.lib.privatizers import tree_noise_structure
    ok = tree_noise_structure(BinaryMechanism, K=8, b=1.0, counters=20_000, seed=3)
    bad = tree_noise_structure(FreshNoiseMechanism, K=8, b=1.0, counters=20_000, seed=3)
    assert ok["max_z"] < 6
    assert bad["max_z"] > 20


def test_gaussian_nodes_and_dp_events():
    import dp_accounting
    tc = TreeCounter(16, node_scale=3.0, sensitivity=2.0, noise="gaussian")
    assert isinstance(tc.dp_event(), dp_accounting.GaussianDpEvent)
    assert tc.dp_event().noise_multiplier == pytest.approx(1.5)
    mech = BinaryMechanism(tc, (20_000,), np.random.default_rng(4))
    mech.step(np.zeros(20_000))
    assert np.std(mech.release()) == pytest.approx(3.0, rel=0.03)
    lap = TreeCounter(16, node_scale=4.0, sensitivity=2.0)
    assert lap.dp_event().noise_multiplier == pytest.approx(2.0) and lap.epsilon == pytest.approx(0.5)


def test_bad_input():
    with pytest.raises(InputError):
        TreeCounter(0, 1.0)
    with pytest.raises(InputError):
        TreeCounter(4, -1.0)
    with pytest.raises(InputError):
        TreeCounter(4, 1.0, noise="cauchy")
    mech = BinaryMechanism(TreeCounter(2, 1.0), (3,), np.random.default_rng(0))
    with pytest.raises(InputError):
        mech.step(np.zeros(4))
    mech.step(np.zeros(3))
    mech.step(np.zeros(3))
    with pytest.raises(InputError):
        mech.step(np.zeros(3))
