"""Privacy declared without running: ``declare(H, S, A, K, rewards)`` gives the claim, the DpEvent and the
width E from a privatizer's parameters and the sizes, and they are exactly what a started privatizer
reports (the declaration and the noise come from the same parameters)."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.privatizers import (CentralPrivatizer, CountPrivatizer, Declaration, LocalPrivatizer, NoPrivatizer,
                                    OfflineGaussianPrivatizer, OfflineLaplacePrivatizer, load_privatizer)
from dpcheck.audits.lib import privatizers as pa

ROOT = pathlib.Path(__file__).resolve().parents[2]


def started(p, H, S, A, K, rewards, seed=0):
    import copy
    q = copy.deepcopy(p)
    return q.start(1, H, S, A, K, np.random.default_rng(seed), rewards=rewards)


def same_declaration(d: Declaration, q) -> None:
    assert (d.claim.to_dict() if d.claim is not None else None) == (q.claim.to_dict() if q.claim is not None else None)
    assert d.width == q.width
    for n in ("replacement", "add_remove"):
        assert repr(d.dp_event(n)) == repr(q.dp_event(n))


def no_start(self, *a, **k):
    raise AssertionError("declare() must not start the privatizer")


@settings(max_examples=25, deadline=None, derandomize=True)
@given(cls=st.sampled_from([CentralPrivatizer, LocalPrivatizer, NoPrivatizer]), H=st.integers(1, 4),
       S=st.integers(1, 4), A=st.integers(1, 3), K=st.integers(1, 70), rewards=st.booleans(),
       calibration=st.sampled_from(["paper", "strict"]), width_mode=st.sampled_from(["rigorous", "nominal"]),
       eps=st.sampled_from([0.3, 1.0, 4.0]))
def test_builtin_declaration_is_what_a_started_privatizer_reports(cls, H, S, A, K, rewards, calibration, width_mode, eps):
    p = cls(eps, calibration=calibration, width_mode=width_mode)
    d = p.declare(H, S, A, K, rewards=rewards)
    assert not p._started
    same_declaration(d, started(p, H, S, A, K, rewards))
    q = started(p, H, S, A, K, rewards)
    if cls is CentralPrivatizer:
        assert d.scale == q.node_scale() and d.sensitivity == q.tree("replacement").sensitivity
    elif cls is LocalPrivatizer:
        assert d.scale == q.noise_scale() and d.sensitivity == 2.0 * H


def test_builtins_declare_without_starting(monkeypatch):
    for cls in (CentralPrivatizer, LocalPrivatizer, NoPrivatizer):
        monkeypatch.setattr(cls, "start", no_start)
        d = cls(1.0).declare(2, 3, 2, 6)
        assert d.width is not None and d.dp_event() is not None


def test_calibrated_width_needs_the_rng_start_would_spawn():
    # the calibrated E is a Monte-Carlo quantile: without an rng it is not declared; with the child
    # stream start() spawns from its rng it is the started privatizer's E exactly
    for cls in (CentralPrivatizer, LocalPrivatizer):
        p = cls(1.0, width_mode="calibrated")
        assert p.declare(2, 2, 2, 8).width is None
        d = p.declare(2, 2, 2, 8, rng=np.random.default_rng(7).spawn(1)[0])
        assert d.width == started(p, 2, 2, 2, 8, True, seed=7).width


def test_a_subclass_that_changes_the_noise_is_declared_from_a_started_copy():
    class NoLevelSplit(CentralPrivatizer):
        def node_scale(self):
            return self.sensitivity_factor * self.families * self.H / self.epsilon

    class SmallLocal(LocalPrivatizer):
        def noise_scale(self):
            return 1.0 / self.epsilon

    for p in (NoLevelSplit(1.0), SmallLocal(1.0)):
        d = p.declare(2, 3, 2, 6)
        same_declaration(d, started(p, 2, 3, 2, 6, True))
        pure = type(p).__mro__[1](1.0).declare(2, 3, 2, 6)
        assert repr(d.dp_event()) != repr(pure.dp_event())     # the subclass's own (weaker) noise
        assert not p._started


def test_plugin_without_declare_falls_back_and_is_not_touched():
    class MyTree(CountPrivatizer):
        """A user's class with the hooks only (no declare): the plug-in fallback starts a copy."""
        notion = "JDP"

        def _start_noise(self, rng):
            self._noise = rng

        def _ingest(self, v, t, r):
            pass

        def _noisy_counts(self):
            return self._N.copy(), self._Ntr.copy(), self._R

        def _compute_width(self):
            return 3.0 * self.K

        def dp_event(self, neighbouring="replacement"):
            import dp_accounting
            return dp_accounting.LaplaceDpEvent(noise_multiplier=float(self.H * self.K))

        @property
        def claim(self):
            from dpcheck import Claim
            return Claim(epsilon=self.epsilon, notion="JDP", source="test")

    p = load_privatizer(MyTree, epsilon=2.0)
    d = pa.declaration(p, 2, 3, 2, 5, True)
    assert d.width == 15.0 and repr(d.dp_event()) == repr(started(p, 2, 3, 2, 5, True).dp_event())
    assert d.claim.epsilon == 2.0 and pa.claim_for_families(p, False).epsilon == 2.0
    assert not p._started


def test_duck_typed_plugin_without_declare_uses_the_fallback():
    class Duck:
        """No CountPrivatizer base, no declare: only start / claim / dp_event / width."""

        def start(self, runs, H, S, A, K, rng, rewards=True):
            self.K = K
            return self

        @property
        def width(self):
            return float(self.K)

        @property
        def claim(self):
            from dpcheck import Claim
            return Claim(epsilon=1.0, notion="JDP", source="duck")

        def dp_event(self, neighbouring="replacement"):
            import dp_accounting
            return dp_accounting.LaplaceDpEvent(noise_multiplier=1.0)

    duck = Duck()
    d = pa.declaration(duck, 1, 2, 1, 9, True)
    assert d.width == 9.0 and d.claim.source == "duck" and not hasattr(duck, "K")


def test_example_gaussian_tree_declares_what_it_draws():
    spec = importlib.util.spec_from_file_location("my_privatizer_decl", ROOT / "examples" / "my_privatizer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    p = load_privatizer(mod.GaussianTreePrivatizer, epsilon=1.0)
    for rewards in (True, False):
        d = pa.declaration(p, 2, 3, 2, 6, rewards)
        q = started(p, 2, 3, 2, 6, rewards)
        same_declaration(d, q)
        assert d.scale == q.sigma()


@pytest.mark.parametrize("priv", [OfflineGaussianPrivatizer(rho=0.7), OfflineLaplacePrivatizer(epsilon=1.5)])
def test_offline_declaration(priv):
    d = priv.declare(3, 2, 2)
    assert repr(d.dp_event()) == repr(priv.dp_event(3)) and d.width == priv.width(3, 2, 2)
    assert d.claim == priv.claim and d.sensitivity == priv.sensitivity(3)
    with pytest.raises(Exception, match="replacement only"):
        d.dp_event("add_remove")
