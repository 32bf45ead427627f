"""The binary mechanism on matrix-valued streams (Zhou 2022, Section 6.1, footnote 3)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.privatizers.binary_mechanism import (
    BinaryMechanism, TreeCounter, release_nodes, symmetric_gaussian,
)
from dpcheck.errors import InputError


def _integer_psd_items(rng, K, lead, n):
    """Integer rank-one items x x^T (exact in float64, so every p-sum is exact whatever the order)."""
    x = rng.integers(-3, 4, (K,) + lead + (n,)).astype(float)
    return x[..., :, None] * x[..., None, :]


def _replay(mech, items):
    """Step through ``items``; per step record the completed node's (true p-sum, noise) and the release."""
    nodes, releases = {}, []
    for t in range(1, len(items) + 1):
        mech.step(items[t - 1])
        (j, m), psum = mech.completed_node()
        nodes[(j, m)] = (psum, mech.last_noise.copy())
        releases.append(mech.release())
    return nodes, releases


@settings(max_examples=25, deadline=None)
@given(K=st.integers(1, 40), n=st.integers(1, 4), seed=st.integers(0, 2 ** 16))
def test_matrix_release_is_true_prefix_plus_its_node_noises_exactly(K, n, seed):
    rng = np.random.default_rng(seed)
    items = _integer_psd_items(rng, K, (2, 3), n)
    mech = BinaryMechanism(TreeCounter(K, 2.5, noise="gaussian", symmetric=True), (2, 3, n, n), rng,
                           keep_noise=True)
    nodes, releases = _replay(mech, items)
    for t in range(1, K + 1):
        used = release_nodes(t)                                   # most significant node first
        want = nodes[used[0]][0] + nodes[used[0]][1]
        for node in used[1:]:
            want = want + (nodes[node][0] + nodes[node][1])
        assert np.array_equal(releases[t - 1], want)              # bitwise: same nodes, same order
        true_sum = sum(nodes[nd][0] for nd in used)
        assert np.array_equal(true_sum, items[:t].sum(0))         # integer items: the p-sums are exact
    np.testing.assert_allclose(releases[-1], mech.exact() + mech.noise(), rtol=0, atol=1e-12)
    assert mech.node_draws == K


def test_releases_are_exactly_symmetric():
    rng = np.random.default_rng(3)
    K, n = 33, 5
    x = rng.random((K, 4, n))
    mech = BinaryMechanism(TreeCounter(K, 7.0, noise="gaussian", symmetric=True), (4, n, n), rng)
    for t in range(K):
        mech.step(x[t][:, :, None] * x[t][:, None, :])
        B = mech.release()
        assert np.array_equal(B, np.swapaxes(B, -1, -2))           # footnote 3, bitwise


def test_symmetric_noise_has_variance_sigma2_on_and_off_the_diagonal():
    #: neither W + W^T (diagonal variance 4 sigma^2 / 2 sigma^2 off) nor independent halves
    rng = np.random.default_rng(4)
    W = symmetric_gaussian(rng, 2.0, (40_000, 3, 3))
    assert np.array_equal(W, np.swapaxes(W, -1, -2))
    var = W.var(axis=0)
    np.testing.assert_allclose(var, 4.0, rtol=0.05)               # 40k draws: std error of var ~ 0.7%
    assert abs(np.corrcoef(W[:, 0, 1], W[:, 0, 2])[0, 1]) < 0.03


class RedrawnNoiseMechanism(BinaryMechanism):
    """Planted defect: every release redraws the noise of each of its nodes."""

    def release(self):
        out = self.exact()
        for _ in release_nodes(self.t):
            out = out + self.counter.draw(self.rng, self.shape)
        return out


def _reuse_residuals(cls, K=16, sigma=1.0, seed=5):
    """B(k) - B(k-1) - item_k - (noise of the leaf completed at k) for k = 2^i + 1, i >= 1: the level-i node of
    B(2^i) is reused by B(2^i + 1), so for the correct tree the residual is 0 (Section 6.1)."""
    rng = np.random.default_rng(seed)
    items = _integer_psd_items(rng, K, (), 3)
    mech = cls(TreeCounter(K, sigma, noise="gaussian", symmetric=True), (3, 3), np.random.default_rng(seed + 1))
    prev, out = mech.release(), []
    for t in range(1, K + 1):
        mech.step(items[t - 1])
        rel = mech.release()
        if t > 2 and ((t - 1) & (t - 2)) == 0:                    # t - 1 = 2^i, i >= 1: t adds a leaf
            out.append(np.abs(rel - prev - items[t - 1] - mech.last_noise).max())
        prev = rel
    return np.array(out)


def test_node_noise_is_reused_across_releases_and_a_redrawing_tree_is_detected():
    good = _reuse_residuals(BinaryMechanism)
    assert good.max() < 1e-9
    bad = _reuse_residuals(RedrawnNoiseMechanism)
    assert bad.min() > 1e-3


def test_noise_off_matrix_tree_gives_exact_sums_and_keep_noise_is_zero():
    rng = np.random.default_rng(6)
    items = _integer_psd_items(rng, 20, (2,), 3)
    mech = BinaryMechanism(TreeCounter(20, 0.0, noise="gaussian", symmetric=True), (2, 3, 3), rng, keep_noise=True)
    for t in range(20):
        mech.step(items[t])
        assert np.array_equal(mech.release(), items[: t + 1].sum(0))
        assert np.all(mech.noise() == 0)


def test_symmetric_tree_rejects_bad_configurations():
    with pytest.raises(InputError, match="Gaussian"):
        TreeCounter(8, 1.0, noise="laplace", symmetric=True)
    with pytest.raises(InputError, match="square"):
        BinaryMechanism(TreeCounter(8, 1.0, noise="gaussian", symmetric=True), (2, 3), np.random.default_rng(0))
    with pytest.raises(InputError, match="keep_noise"):
        BinaryMechanism(TreeCounter(8, 1.0), (2,), np.random.default_rng(0)).noise()
