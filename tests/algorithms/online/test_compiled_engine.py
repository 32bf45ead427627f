"""The compiled engine of DPUCBVI.run (algorithms/online/compiled.py) against the numpy engine.

Both engines draw the same random numbers in the same order and do the same arithmetic (up to the
last bit of the value iteration's dot products), so on these seeds every trajectory, every regret
value and the privatizers' final state must be identical. A wrong stream order, a wrong tree level,
a projection or bonus term off by one ulp that flips an action, or a state not written back all show
up as a mismatch here.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcheck.algorithms.envs.riverswim import riverswim
from dpcheck.algorithms.envs.strategies import tabular_mdps
from dpcheck.algorithms.online import compiled
from dpcheck.algorithms.online.stacking import StackedPrivatizer
from dpcheck.algorithms.online.ucbvi import DPUCBVI, UCBVI
from dpcheck.algorithms.privatizers import CentralPrivatizer, LocalPrivatizer, NoPrivatizer
from dpcheck.errors import InputError

pytestmark = pytest.mark.skipif(not compiled.available(), reason="numba not installed")


def _agent(kind, eps=1.0, **kw):
    kw.setdefault("mode", "practical")
    if kind == "ucbvi":
        return UCBVI(**kw)
    if kind == "central":
        return DPUCBVI(CentralPrivatizer(eps, width_mode="nominal"), **kw)
    if kind == "local":
        return DPUCBVI(LocalPrivatizer(eps, width_mode="nominal"), **kw)
    if kind == "stacked":
        parts = [(NoPrivatizer(), 2), (CentralPrivatizer(eps, width_mode="nominal"), 2),
                 (LocalPrivatizer(4 * eps, width_mode="nominal"), 1), (CentralPrivatizer(8 * eps), 1)]
        return DPUCBVI(StackedPrivatizer(parts), **kw)
    raise ValueError(kind)


def _state(priv):
    parts = priv.parts if isinstance(priv, StackedPrivatizer) else [(priv, None)]
    out = []
    for p, _ in parts:
        tc = p.true_counts()
        out += [tc.visits, tc.transitions, tc.rewards, np.array(p.episodes)]
        if isinstance(p, CentralPrivatizer):
            out += [p._tree._psum, p._tree._prefix, np.array(p._tree.t), np.array(p._tree.node_draws)]
        if isinstance(p, LocalPrivatizer):
            out += [p._sum_v, p._sum_t, p._sum_r]
        out.append(p.release().transitions)
    return out


def _both(make, env, K, seed, runs, **run_kw):
    res = {}
    for engine in ("numpy", "compiled"):
        agent = make()
        r = agent.run(env, K, np.random.default_rng(seed), runs=runs, monitor=False, engine=engine, **run_kw)
        assert r.config["engine"] == engine
        res[engine] = (r, _state(agent.privatizer))
    return res["numpy"], res["compiled"]


def _assert_same(a, b):
    (ra, sa), (rb, sb) = a, b
    assert np.array_equal(ra.actions, rb.actions)
    assert np.array_equal(ra.states, rb.states)
    assert np.array_equal(ra.regret, rb.regret)
    for x, y in zip(sa, sb):
        assert np.array_equal(x, y)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["ucbvi", "central", "local", "stacked"])
@pytest.mark.parametrize("ties,noise", [("random", "deterministic"), ("lowest", "bernoulli")])
def test_engines_agree_on_riverswim(kind, ties, noise):
    env = riverswim(6, reward_noise=noise)
    runs = 6 if kind == "stacked" else 3
    _assert_same(*_both(lambda: _agent(kind, tie_breaking=ties), env, 150, 7, runs))


@pytest.mark.parametrize("kind", ["central", "local", "stacked"])
def test_engines_agree_across_many_small_chunks(kind, monkeypatch):
    # a chunk of one or two episodes: the tree level, the stream positions and the written-back
    # state must continue exactly across kernel calls
    monkeypatch.setattr(compiled, "_CHUNK_ELEMENTS", 1500)
    env = riverswim(4, S=4)
    runs = 6 if kind == "stacked" else 2
    _assert_same(*_both(lambda: _agent(kind), env, 37, 3, runs))


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(mdp=tabular_mdps(S=st.integers(1, 4), A=st.integers(1, 3), H=st.integers(1, 3),
                        reward_noise=st.sampled_from(["deterministic", "bernoulli"])),
       kind=st.sampled_from(["ucbvi", "central", "local"]), eps=st.sampled_from([0.5, 8.0, 1e4]),
       seed=st.integers(0, 2 ** 16))
def test_engines_agree_on_any_small_mdp(mdp, kind, eps, seed):
    # S = 1 (no sort), A = 1 (no choice), tiny and huge noise (the LP shifting almost every row / none)
    _assert_same(*_both(lambda: _agent(kind, eps=eps), mdp, 40, seed, 2))


def test_auto_uses_the_compiled_engine_only_where_it_applies():
    env = riverswim(4)
    rng = np.random.default_rng(0)
    assert _agent("central").run(env, 5, rng, monitor=False).config["engine"] == "compiled"
    # monitors, theory-mode bonus (term 4), agent variants and non-tabular environments fall back
    assert _agent("central").run(env, 5, rng, monitor=True).config["engine"] == "numpy"
    assert _agent("central", mode="theory").run(env, 5, rng, monitor=False).config["engine"] == "numpy"

    class Variant(DPUCBVI):
        pass

    v = Variant(CentralPrivatizer(1.0, width_mode="nominal"), mode="practical")
    assert v.run(env, 5, rng, monitor=False).config["engine"] == "numpy"
    with pytest.raises(InputError, match="variant"):
        Variant(CentralPrivatizer(1.0), mode="practical").run(env, 5, rng, monitor=False, engine="compiled")
    with pytest.raises(InputError, match="monitors"):
        _agent("local").run(env, 5, rng, monitor=True, engine="compiled")
    with pytest.raises(InputError, match="engine must be one of"):
        _agent("local").run(env, 5, rng, engine="gpu")


def test_progress_is_reported_from_the_compiled_engine(monkeypatch):
    monkeypatch.setattr(compiled, "_CHUNK_ELEMENTS", 5000)
    seen = []
    _agent("central").run(riverswim(4), 50, 0, monitor=False, regret=False, record=False,
                          progress=seen.append, engine="compiled")
    assert len(seen) == 10 and seen[-1].endswith("50/50")


@pytest.mark.parametrize("kind", ["central", "local"])
def test_engines_agree_beyond_the_sorting_networks(kind):
    # S = 14 > 12: numpy sorts LP rows with np.sort, the kernel with an insertion sort
    env = riverswim(3, S=14)
    _assert_same(*_both(lambda: _agent(kind, eps=0.5), env, 40, 1, 2))


# -- the seam (CountPrivatizer.compiled_noise): what a plug-in researcher implements ------------------
class _HalfScaleTree(CentralPrivatizer):
    """A plug-in on the seam: the central tree at half the node scale, with its own compiled plan (the
    "tree" process, its noise drawn by its own counter from its own stream)."""

    def scale_for(self, H, K, families):
        return super().scale_for(H, K, families) / 2

    def compiled_noise(self):
        from dpcheck.algorithms.privatizers.base import CompiledNoise
        counter, rng = self.mechanism.counter, self.mechanism.rng

        def draw(out):
            out[...] = counter.draw(rng, out.shape)
        return CompiledNoise("tree", draw)


class _NoPlan(CentralPrivatizer):
    """A plug-in that changes a hook the plan stands for (here only by calling up): no compiled plan."""

    def _noisy_counts(self):
        return super()._noisy_counts()


def test_a_plugin_s_own_compiled_plan_runs_compiled_and_agrees_with_its_python_path():
    env = riverswim(4, 5)
    a, b = _both(lambda: DPUCBVI(_HalfScaleTree(1.0, width_mode="nominal"), mode="practical"), env, 24, 3, 3)
    _assert_same(a, b)
    # and it is its own noise, not the built-in's: the built-in's trajectories differ
    c, _ = _both(lambda: _agent("central"), env, 24, 3, 3)
    assert not np.array_equal(a[0].actions, c[0].actions)


def test_a_plugin_without_a_compiled_plan_falls_back_to_the_python_path():
    env = riverswim(4, 5)
    p = _NoPlan(1.0, width_mode="nominal").start(2, 5, 4, 2, 8, np.random.default_rng(0))
    assert p.compiled_noise() is None
    r = DPUCBVI(_NoPlan(1.0, width_mode="nominal"), mode="practical").run(env, 16, np.random.default_rng(4),
                                                                         runs=3, monitor=False)
    assert r.config["engine"] == "numpy"
    base = _agent("central").run(env, 16, np.random.default_rng(4), runs=3, monitor=False, engine="compiled")
    assert np.array_equal(r.actions, base.actions)       # the same privatizer, whichever path runs it
    with pytest.raises(InputError, match="compiled_noise"):
        DPUCBVI(_NoPlan(1.0), mode="practical").run(env, 4, np.random.default_rng(0), monitor=False,
                                                   engine="compiled")
