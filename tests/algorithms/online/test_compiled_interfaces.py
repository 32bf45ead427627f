"""The public interfaces the compiled UCBVI engine goes through: privatizer export_state / import_state,
the model's sampling_tables(), projection.sorting_network(), and the KernelArgs record of the kernel's
arguments. (That the two engines agree bit for bit is tests/algorithms/online/test_compiled_engine.py.)"""
import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

from dpcheck.algorithms.envs import riverswim
from dpcheck.algorithms.envs.games import MarkovGame
from dpcheck.algorithms.online import compiled
from dpcheck.algorithms.privatizers import CentralPrivatizer, LocalPrivatizer, NoPrivatizer
from dpcheck.algorithms.privatizers.projection import _NETWORKS, sorting_network
from dpcheck.errors import InputError

ROOT = Path(__file__).resolve().parents[3]
H, S, A, K, RUNS = 3, 2, 2, 8, 3


def _episodes(seed, k):
    """k episodes of arbitrary trajectories (the privatizers accept any; no model needed)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        states = rng.integers(0, S, size=(RUNS, H + 1))
        actions = rng.integers(0, A, size=(RUNS, H))
        rewards = rng.random((RUNS, H))
        out.append((states, actions, rewards))
    return out


def _started(kind, seed):
    p = {"central": CentralPrivatizer, "local": LocalPrivatizer, "none": NoPrivatizer}[kind](epsilon=1.0)
    return p.start(RUNS, H, S, A, K, np.random.default_rng(seed), rewards=True)


def _same_release(a, b):
    ra, rb = a.release(), b.release()
    for name in ("visits", "transitions", "rewards", "noisy_visits", "noisy_transitions"):
        np.testing.assert_array_equal(getattr(ra, name), getattr(rb, name), err_msg=name)


@pytest.mark.parametrize("kind", ["central", "local", "none"])
def test_import_of_an_export_continues_exactly_where_the_original_is(kind):
    eps = _episodes(1, 5)
    a, b = _started(kind, 7), _started(kind, 99)
    for e in eps:
        a.observe(*e)
    state = a.export_state()
    assert state["episodes"] == 5
    b.import_state(state)
    assert b.episodes == a.episodes
    _same_release(a, b)
    ta, tb = a.true_counts(), b.true_counts()
    np.testing.assert_array_equal(ta.visits, tb.visits)
    np.testing.assert_array_equal(ta.rewards, tb.rewards)
    if kind == "central":
        assert (b.mechanism.t, b.mechanism.node_draws, b.mechanism.last_level) == \
               (a.mechanism.t, a.mechanism.node_draws, a.mechanism.last_level)
        np.testing.assert_array_equal(b.mechanism.exact(), a.mechanism.exact())


@pytest.mark.parametrize("kind", ["central", "local", "none"])
def test_an_export_is_a_copy(kind):
    eps = _episodes(2, 3)
    a = _started(kind, 3)
    for e in eps:
        a.observe(*e)
    before = a.release()
    state = a.export_state()
    state["visits"] += 100.0
    for key in ("noisy_visits", "noisy_transitions"):
        if key in state:
            state[key] += 100.0
    if "tree" in state:
        state["tree"]["prefix"] += 100.0
    after = a.release()
    np.testing.assert_array_equal(before.noisy_visits, after.noisy_visits)
    np.testing.assert_array_equal(a.true_counts().visits, a.export_state()["visits"])


def test_import_refuses_more_episodes_than_the_horizon():
    p = _started("central", 0)
    state = p.export_state()
    state["episodes"] = K + 1
    with pytest.raises(InputError, match="outside 0..K"):
        p.import_state(state)
    state = p.export_state()
    state["tree"]["t"] = K + 1
    with pytest.raises(InputError, match="outside 0..K"):
        p.import_state(state)


def test_sampling_tables_are_the_read_only_cdfs_reset_and_step_use():
    env = riverswim(S=3, H=4)
    init_cdf, cdf = env.sampling_tables()
    assert cdf.shape == (4, 3, 2, 3) and init_cdf.shape == (3,)
    np.testing.assert_allclose(cdf, np.cumsum(env.P, axis=-1))
    assert np.all(cdf[..., -1] == 1.0) and init_cdf[-1] == 1.0
    with pytest.raises(ValueError):
        cdf[0, 0, 0, 0] = 0.5
    # step draws the next state as #(cdf <= u): the same uniform gives the same state
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    s = np.array([0, 1, 2])
    a = np.array([1, 0, 1])
    nxt, _ = env.step(0, s, a, rng_a)
    u = rng_b.random(3)
    np.testing.assert_array_equal(nxt, (cdf[0, s, a] <= u[:, None]).sum(axis=-1))
    game = MarkovGame(np.full((2, 2, 2, 2, 2), 0.5), np.zeros((2, 2, 2, 2)), 0)
    assert game.sampling_tables()[1].shape == (2, 2, 2, 2, 2)


def test_sorting_network_is_a_copy_of_the_column_solver_s():
    for s in range(1, 10):
        net = sorting_network(s)
        assert net == list(_NETWORKS.get(s, []))
        net.append((0, 0))
        assert sorting_network(s) == list(_NETWORKS.get(s, []))


@pytest.mark.skipif(not compiled.available(), reason="numba not installed")
def test_kernel_args_name_the_kernel_s_parameters_in_order():
    from dpcheck.algorithms.online._kernels import run_episodes
    params = list(inspect.signature(run_episodes.py_func).parameters)
    assert list(compiled.KernelArgs._fields) == params


def test_the_compiled_engine_touches_no_other_object_s_private_fields():
    tree = ast.parse((ROOT / "algorithms/online/compiled.py").read_text())
    bad = [f"line {n.lineno}: {ast.unparse(n)}" for n in ast.walk(tree)
           if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
           and not (isinstance(n.value, ast.Name) and n.value.id == "self")
           and not n.attr == "_replace"]          # NamedTuple._replace is public API
    assert not bad, bad


@pytest.mark.parametrize("kind", ["central", "local"])
def test_a_compiled_plan_draws_exactly_what_observe_draws(kind):
    """CompiledNoise.draw of n episodes = the noise n observe() calls draw, from the same stream position,
    also into a strided view (a part of a stacked batch)."""
    n = 5
    a, b = _started(kind, 11), _started(kind, 11)
    plan = a.compiled_noise()
    assert plan.process == {"central": "tree", "local": "sum"}[kind]
    C = H * S * A * (S + 2)
    big = np.full((n, RUNS + 2, C), np.nan)
    plan.draw(big[:, 1:RUNS + 1])                              # strided: the middle runs of a batch
    assert np.all(np.isnan(big[:, 0])) and np.all(np.isnan(big[:, -1]))
    w = big[:, 1:RUNS + 1]
    zero = (np.zeros((RUNS, H + 1), dtype=int), np.zeros((RUNS, H), dtype=int), np.zeros((RUNS, H)))
    for e in range(n):
        before = b.export_state()
        b.observe(*zero)
        after = b.export_state()
        if kind == "central":
            np.testing.assert_array_equal(w[e], b.mechanism.last_noise)
        else:
            HSA = H * S * A
            z = np.zeros((RUNS, C))
            z[:, 0] = z[:, HSA] = float(H)      # all H visits at (h, 0, 0) -> flat index h*S*A; summed below
            got = np.concatenate([(after[k] - before[k]).reshape(RUNS, -1)
                                  for k in ("noisy_visits", "noisy_transitions", "noisy_rewards")], axis=1)
            inc = np.concatenate([(after[k] - before[k]).reshape(RUNS, -1)
                                  for k in ("visits", "transitions", "rewards")], axis=1)
            np.testing.assert_allclose(got - inc, w[e], atol=1e-9)
    # the plan consumed the stream exactly as far as the n observes did
    assert a.rng.bit_generator.state == b.rng.bit_generator.state


def test_no_privatizer_plans_the_exact_process_and_other_classes_none():
    from dpcheck.algorithms.privatizers.base import CompiledNoise, CountPrivatizer
    assert _started("none", 0).compiled_noise() == CompiledNoise("exact")
    with pytest.raises(InputError):
        CompiledNoise("tree")                                  # a noisy process needs draw
    assert CountPrivatizer.compiled_noise(object()) is None     # the default: the Python path


@pytest.mark.parametrize("hook", ["_start_noise", "_ingest", "_noisy_counts", "_compute_width"])
def test_a_no_privatizer_subclass_that_overrides_a_noise_hook_is_not_planned_exact(hook):
    """The no-noise hooks are mixed in (ExactRelease), not NoPrivatizer's own members: a subclass that adds
    noise in any of them must leave the exact plan, or the compiled engine would run it noiseless."""
    from dpcheck.algorithms.privatizers.nonprivate import NoPrivatizer
    base = getattr(NoPrivatizer, hook)
    Noisy = type("Noisy", (NoPrivatizer,), {hook: lambda self, *a, **k: base(self, *a, **k)})
    p = Noisy().start(2, 2, 2, 3, 2, np.random.default_rng(0))
    assert p.compiled_noise() is None


def test_the_compiled_engine_never_asks_what_class_a_privatizer_is():
    src = (ROOT / "algorithms/online/compiled.py").read_text()
    for name in ("CentralPrivatizer", "LocalPrivatizer", "NoPrivatizer", "BinaryMechanism", "laplace"):
        assert name not in src, name
    tree = ast.parse(src)
    calls = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id in ("type", "isinstance")]
    # the environment's type, the stacked batch's parts, and a privatizer's name in a message: nothing else
    assert set(calls) <= {"type(env)", "isinstance(priv, StackedPrivatizer)", "type(p)"}, calls
    assert "type(p) is" not in src and "type(p) not in" not in src and "type(p) in" not in src
