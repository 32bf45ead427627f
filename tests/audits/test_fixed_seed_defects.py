"""Privatizers that seed their own noise (a fixed ``default_rng(...)`` instead of the generator they are given):
the noise is public with the code, and the black box's chunks repeat each other. Each PASSed every audit of its
privatizer before the built-in black boxes asked whether their outputs depend on the generator
(dpcheck.probe.rng_finding); the audits' own black-box functions now FAIL them, and leave the correct
privatizers alone."""
import numpy as np

from dpcheck.algorithms.privatizers import CentralPrivatizer
from dpcheck.algorithms.privatizers.binary_mechanism import BinaryMechanism
from dpcheck.algorithms.privatizers.offline import OfflineGaussianPrivatizer
from dpcheck.audit import ExecutionOptions
from dpcheck.audits.lib import privatizers as ap
from dpcheck.checks import FAIL


def _exe():
    return ExecutionOptions(alpha=0.05, seed=0, samples=None, workers=1, backend="local", scheduler=None,
                            cache_dir=None, quick=False, progress=None, sequential=False)


class FixedSeedCentral(CentralPrivatizer):
    """Defect: the tree's noise from a generator of its own, the same on every run of the algorithm."""

    def _start_noise(self, rng):
        nv, nt, nr = self._sizes()
        self._tree = BinaryMechanism(self.tree(), (self.runs, nv + nt + nr), np.random.default_rng(0))


class FixedSeedGaussian(OfflineGaussianPrivatizer):
    """Defect: the offline counts' noise from a generator of its own ("reproducible noise")."""

    def noisy_counts(self, pair, triple, rng):
        return super().noisy_counts(pair, triple, np.random.default_rng(20220101))


def test_a_fixed_seed_tree_fails_the_central_black_box():
    res = _exe().audit(ap.central_target(FixedSeedCentral(1.0), search=False), 2_000)
    assert res.verdict == FAIL and res.rng_probe["d_prime_fixed"] and res.rng_probe["varying_rows"] >= 20
    ok = _exe().audit(ap.central_target(CentralPrivatizer(1.0)), 2_000)
    assert ok.verdict != FAIL and ok.rng_probe is None


def test_fixed_seed_offline_noise_fails_the_offline_black_box():
    res = _exe().audit(ap.offline_target(FixedSeedGaussian(rho=1.0)), 2_000)
    assert res.verdict == FAIL and "no epsilon holds" in res.reason
    ok = _exe().audit(ap.offline_target(OfflineGaussianPrivatizer(rho=1.0)), 2_000)
    assert ok.verdict != FAIL and ok.rng_probe is None
