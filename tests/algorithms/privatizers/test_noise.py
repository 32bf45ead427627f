"""The privatizers' Laplace sampler (algorithms/privatizers/noise.py): distribution, exact symmetry, no
infinities at the ends of the uniform grid, and chunked draws equal to successive draws."""
import math

import numpy as np
import pytest
from scipy import stats

from dpcheck.algorithms.privatizers.noise import ZeroNoise, laplace


class _Grid:
    """A stand-in Generator whose random() returns chosen grid points k / 2^53."""

    def __init__(self, ks):
        self.u = np.asarray(ks, dtype=np.float64) / 2.0 ** 53

    def random(self, out):
        out[...] = self.u
        return out


def test_distribution_is_laplace_with_the_given_scale():
    x = laplace(np.random.default_rng(11), 2.5, 200_000)
    assert stats.kstest(x, stats.laplace(scale=2.5).cdf).pvalue > 0.01
    assert abs(np.abs(x).mean() - 2.5) < 0.03          # E|X| = scale; sd of the mean ~0.0056
    assert abs((x > 0).mean() - 0.5) < 0.005


def test_a_wrong_scale_is_rejected_by_the_same_test():
    x = laplace(np.random.default_rng(11), 2.5, 200_000)
    assert stats.kstest(x, stats.laplace(scale=2.3).cdf).pvalue < 1e-6


def test_ends_of_the_uniform_grid_are_finite_and_the_grid_is_mirrored_exactly():
    top = 2 ** 53 - 1
    ks = [0, 1, 2 ** 52 - 1, 2 ** 52, 2 ** 52 + 1, top - 1, top]
    x = laplace(_Grid(ks), 1.0, len(ks))
    assert np.all(np.isfinite(x))
    # k and 2^53 - 1 - k give exactly opposite values (u < 1/2 negative, u >= 1/2 positive)
    mirrored = laplace(_Grid([top - k for k in ks]), 1.0, len(ks))
    assert np.array_equal(x, -mirrored)
    assert x[0] < 0 < x[-1]
    assert x[0] == pytest.approx(-53 * math.log(2), rel=1e-12)   # the largest magnitude: log(2^53)
    assert abs(x[3]) < 1e-15                                     # u = 1/2: m = 1 - 2^-53


def test_chunked_draw_equals_successive_draws():
    a = laplace(np.random.default_rng(5), 0.7, (3, 4, 5))
    rng = np.random.default_rng(5)
    b = np.stack([laplace(rng, 0.7, (4, 5)) for _ in range(3)])
    assert np.array_equal(a, b)


def test_out_buffer_and_zero_noise():
    out = np.empty((2, 3))
    res = laplace(np.random.default_rng(0), 1.0, (2, 3), out=out)
    assert res is out and np.all(out != 0)
    assert np.array_equal(laplace(ZeroNoise(), 3.0, (2, 3)), np.zeros((2, 3)))
    assert np.all(laplace(np.random.default_rng(0), 0.0, 4) == 0)
    with pytest.raises(ValueError):
        laplace(np.random.default_rng(0), 1.0, 4, out=np.empty(4, dtype=np.float32))
