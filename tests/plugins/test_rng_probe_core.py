"""One rng probe for every kind of plug-in (dpcheck.loading.probe_rng_use): the core's two halves, and each
family's probe (online count privatizers, offline and regression privatizers, stream privatizers, selection
mechanisms) raising its own message, word for word, through it."""
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.errors import MechanismError
from dpcheck.loading import probe_rng_use

MSG = dict(nondeterministic="same seed, different release", ignores="different seeds, same release")


def _noisy(rng):
    return rng.normal(size=3)


def test_a_release_drawn_from_its_rng_passes():
    probe_rng_use(_noisy, (1, 2), **MSG)


def test_a_release_from_global_state_is_nondeterministic():
    state = np.random.default_rng(0)            # a generator of its own, advancing between calls
    with pytest.raises(MechanismError, match="^same seed, different release$"):
        probe_rng_use(lambda rng: state.normal(size=3), (1, 2), **MSG)


def test_a_release_that_ignores_its_rng_is_caught_only_when_conclusive():
    fixed = lambda rng: np.random.default_rng(0).normal(size=3)
    with pytest.raises(MechanismError, match="^different seeds, same release$"):
        probe_rng_use(fixed, (1, 2), **MSG)
    probe_rng_use(fixed, (1, 2), conclusive=lambda out: False, **MSG)      # e.g. no noise at all: left to the audits


def test_ignores_none_checks_determinism_only_and_draws_twice():
    calls = []
    probe_rng_use(lambda rng: calls.append(1) or np.zeros(2), (1, 2), nondeterministic="x", ignores=None)
    assert len(calls) == 2


def test_same_decides_equality():
    with pytest.raises(MechanismError, match="^different seeds, same release$"):
        probe_rng_use(_noisy, (1, 2), same=lambda a, b: True, **MSG)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1))
def test_property_rng_use_passes_and_a_constant_release_fails_for_any_two_seeds(s0, s1):
    if s0 == s1:
        return
    probe_rng_use(_noisy, (s0, s1), **MSG)
    with pytest.raises(MechanismError, match="different seeds"):
        probe_rng_use(lambda rng: np.ones(3), (s0, s1), **MSG)


# ----------------------------------------------------------------------------- every family, its own message
def test_offline_count_privatizer_messages():
    from dpcheck.algorithms.privatizers.loader import probe_rng_use as probe
    state = np.random.default_rng(0)
    out = lambda v: SimpleNamespace(noisy_visits=v, noisy_transitions=np.zeros(2))
    with pytest.raises(MechanismError) as e:
        probe(SimpleNamespace(privatize=lambda p, t, rng: out(state.normal(size=2))), "P")
    assert str(e.value) == ("privatizer 'P': privatize() gave different releases for the same rng seed "
                            "(it draws from global or hidden state; all randomness must come from rng)")
    with pytest.raises(MechanismError) as e:
        probe(SimpleNamespace(privatize=lambda p, t, rng: out(np.ones(2))), "P")
    assert str(e.value) == ("privatizer 'P': privatize() gave the same release for different rng seeds "
                            "(it ignores the rng it is given)")
    probe(SimpleNamespace(privatize=lambda p, t, rng: out(rng.normal(size=2))), "P")


def test_regression_privatizer_messages():
    from dpcheck.algorithms.privatizers.loader import probe_regression_rng_use as probe
    state = np.random.default_rng(0)
    noise = lambda g: SimpleNamespace(**{k: g(2) for k in ("g1", "g2", "g3", "N1", "N2")})
    widths = lambda *a: (1.0, 1.0)
    with pytest.raises(MechanismError) as e:
        probe(SimpleNamespace(draw=lambda rng, *a: noise(state.normal), widths=widths), "R")
    assert str(e.value) == ("privatizer 'R': draw() gave different noise for the same rng seed (it draws "
                            "from global or hidden state; all randomness must come from rng)")
    with pytest.raises(MechanismError) as e:
        probe(SimpleNamespace(draw=lambda rng, *a: noise(np.ones), widths=widths), "R")
    assert str(e.value) == ("privatizer 'R': draw() gave the same noise for different rng seeds (it "
                            "ignores the rng it is given)")
    probe(SimpleNamespace(draw=lambda rng, *a: noise(rng.normal), widths=widths), "R")


def _stream(draw):
    state = SimpleNamespace(observe=lambda *rows: None)
    return SimpleNamespace(noise_off=False, start=lambda runs, sizes, rng, alpha: SimpleNamespace(
        observe=state.observe, release=lambda: (draw(rng),)))


def test_stream_privatizer_messages():
    from dpcheck.algorithms.linear.stream_privatizer import probe
    state = np.random.default_rng(0)
    with pytest.raises(MechanismError) as e:
        probe(_stream(lambda rng: state.normal(size=2)), "S")
    assert str(e.value) == ("stream privatizer 'S': releases are not deterministic given the rng (two "
                            "generators with the same seed gave different releases): all randomness must come "
                            "from the rng passed to start")
    with pytest.raises(MechanismError) as e:
        probe(_stream(lambda rng: np.ones(2)), "S")
    assert str(e.value) == ("stream privatizer 'S': releases ignore the rng (the same releases for two "
                            "different generators): no noise is drawn from it, so nothing is private")
    probe(_stream(lambda rng: rng.normal(size=2)), "S")


def test_selection_mechanism_messages():
    from dpcheck.algorithms.gfa.selection import probe
    state = np.random.default_rng(0)
    mech = lambda f: SimpleNamespace(select=lambda scores, eps, sens, rng: f(scores, rng))
    with pytest.raises(MechanismError) as e:
        probe(mech(lambda s, rng: state.integers(4, size=len(s))), "M")
    assert str(e.value) == ("selection mechanism 'M': select() is not deterministic given the rng "
                            "(two generators with the same seed gave different selections): all randomness "
                            "must come from the rng passed in")
    with pytest.raises(MechanismError) as e:
        probe(mech(lambda s, rng: np.argmax(s, axis=1)), "M")
    assert str(e.value) == ("selection mechanism 'M': select() ignores the rng (the same selection for "
                            "every generator and every run on equal scores): a deterministic selection is not "
                            "differentially private")
    # nondeterministic on spread scores only: caught by the second half of the probe
    with pytest.raises(MechanismError, match="not deterministic given the rng"):
        probe(mech(lambda s, rng: rng.integers(4, size=len(s)) if s[0, 0] == s[0, -1]
                   else state.integers(4, size=len(s))), "M")
    probe(mech(lambda s, rng: rng.integers(4, size=len(s))), "M")


def test_online_count_privatizer_messages():
    from dpcheck.algorithms.privatizers import CentralPrivatizer
    from dpcheck.algorithms.privatizers.probe import check_rng_use
    glob = np.random.default_rng(0)

    class GlobalState(CentralPrivatizer):
        def release(self):
            out = super().release()
            out.visits[...] += glob.laplace(0.0, 1.0)
            return out

    class OwnSeed(CentralPrivatizer):
        def start(self, runs, H, S, A, K, rng, rewards=True):
            return super().start(runs, H, S, A, K, np.random.default_rng(0), rewards=rewards)

    with pytest.raises(MechanismError) as e:
        check_rng_use(lambda: GlobalState(epsilon=1.0), "G")
    assert str(e.value) == (
        "privatizer 'G': two runs started with the same rng released different counts: it draws "
        "randomness outside the rng passed to start() (numpy's global state, its own generator, the clock); "
        "draw every noise value from that rng")
    with pytest.raises(MechanismError) as e:
        check_rng_use(lambda: OwnSeed(epsilon=1.0), "O")
    assert str(e.value) == (
        "privatizer 'O': runs started with different rngs released identical noisy counts: it ignores "
        "the rng passed to start() (a fixed seed of its own?); draw every noise value from that rng")
    check_rng_use(lambda: CentralPrivatizer(epsilon=1.0), "C")

    class Broken(CentralPrivatizer):
        def observe(self, *a, **k):
            raise RuntimeError("cannot run the tiny model")

    check_rng_use(lambda: Broken(epsilon=1.0), "B")     # left to the audit, which reports what it did
