"""The compiled backward pass of DP-Nash-VI (algorithms/games/_plan_kernel.py) against the numpy ``plan``.

Qb, Qu, Vb, Vu must agree with the numpy path to rounding, every policy must be a verified CCE of its stage game
(Qiao & Wang 2024, Algorithm 1 line 14), whole runs must follow the same trajectories, and a subclass that
overrides a planning method (a planted defect) must run its own code, never the kernel.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.games import _plan_kernel as kernel_module
from dpcheck.algorithms.games.cce import cce_residual
from dpcheck.algorithms.games.dp_nash_vi import DPNashVI, confidence_log
from dpcheck.algorithms.games.testbeds import stochastic_pennies
from dpcheck.algorithms.privatizers import CentralPrivatizer, LocalPrivatizer, NoPrivatizer
from dpcheck.errors import InputError

pytest.importorskip("numba")


def plan_inputs(rng, runs, H, S, A, B, *, unvisited, warm):
    r = rng.uniform(0, 1, size=(H, S, A, B))
    N = rng.integers(1, 40, size=(runs, H, S, A, B)).astype(float)
    P = rng.dirichlet(np.ones(S), size=(runs, H, S, A, B))
    unv = rng.random((runs, H, S, A, B)) < 0.2 if unvisited else None
    hint = rng.dirichlet(np.ones(A * B), size=(runs, H, S)).reshape(runs, H, S, A, B) if warm else None
    basis = None
    if warm:
        # bases a real earlier solve could have left: slack columns and some structural ones
        basis = np.stack([rng.permutation(A * B + A + B)[:A + B] for _ in range(runs * H * S)])
        basis = basis.reshape(runs, H, S, A + B)
    return r, P, N, unv, hint, basis


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), A=st.integers(1, 3), B=st.integers(1, 3), S=st.integers(1, 3),
       unvisited=st.booleans(), warm=st.booleans(), E=st.sampled_from([0.0, 1.0, 7.5]))
def test_compiled_plan_agrees_with_numpy_and_returns_verified_cces(seed, A, B, S, unvisited, warm, E):
    rng = np.random.default_rng(seed)
    runs, H = 4, 3
    r, P, N, unv, hint, basis = plan_inputs(rng, runs, H, S, A, B, unvisited=unvisited, warm=warm)
    iota = confidence_log(H, S, A, B, 100, 0.1)
    out = {}
    for engine in ("numpy", "compiled"):
        algo = DPNashVI(mode="practical", engine=engine)
        out[engine] = algo.plan(r, P, N, E, iota, unv, hint=hint, hint_basis=basis)
    pi_n, Qb_n, Qu_n, Vb_n, Vu_n, st_n = out["numpy"]
    pi_c, Qb_c, Qu_c, Vb_c, Vu_c, st_c = out["compiled"]
    # values: to rounding (different CCEs of one stage game give the same <pi, Q> only when unique, so compare
    # the last step, where both see the same Q, and the CCE validity everywhere)
    np.testing.assert_allclose(Qb_c[:, -1], Qb_n[:, -1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Qu_c[:, -1], Qu_n[:, -1], rtol=1e-12, atol=1e-12)
    assert np.all(cce_residual(pi_c, Qb_c, Qu_c) <= 1e-8 * H)
    np.testing.assert_allclose(pi_c.sum(axis=(-1, -2)), 1.0, atol=1e-12)
    assert np.all(pi_c >= 0)
    np.testing.assert_allclose(Vb_c[:, :H], np.einsum("rhsab,rhsab->rhs", pi_c, Qb_c), atol=1e-12)
    np.testing.assert_allclose(Vu_c[:, :H], np.einsum("rhsab,rhsab->rhs", pi_c, Qu_c), atol=1e-12)
    assert sum(st_c[k] for k in ("pure", "hint", "simplex", "highs")) == runs * H * S
    if np.allclose(pi_c, pi_n, atol=1e-9):
        # the same CCEs chosen (to the LP solvers' 1e-9): everything upstream agrees to what that moves a value,
        # |pi diff| x A B x max |Q| <= 1e-9 x 9 x H per step (seed 720, A = B = 2: 5e-10 apart)
        np.testing.assert_allclose(Qb_c, Qb_n, rtol=0, atol=1e-8 * H * A * B)
        np.testing.assert_allclose(Vb_c, Vb_n, rtol=0, atol=1e-8 * H * A * B)


def test_the_kernel_usually_picks_the_numpy_paths_cce():
    """Same pivoting rules, same warm starts: on random instances the chosen CCE is the numpy path's in nearly
    every stage game (any CCE would do, but the runs should stay the same runs)."""
    rng = np.random.default_rng(11)
    same = total = 0
    for _ in range(20):
        r, P, N, unv, hint, basis = plan_inputs(rng, 8, 2, 3, 3, 3, unvisited=False, warm=True)
        iota = confidence_log(2, 3, 3, 3, 100, 0.1)
        a = DPNashVI(mode="practical", engine="numpy").plan(r, P, N, 1.0, iota, None, hint=hint, hint_basis=basis)
        b = DPNashVI(mode="practical", engine="compiled").plan(r, P, N, 1.0, iota, None, hint=hint, hint_basis=basis)
        close = np.all(np.abs(a[0] - b[0]) <= 1e-9, axis=(-1, -2))
        same += int(close.sum())
        total += close.size
    assert same / total > 0.95


@pytest.mark.parametrize("make", [NoPrivatizer, lambda: CentralPrivatizer(epsilon=64.0),
                                  lambda: LocalPrivatizer(epsilon=64.0)])
def test_whole_runs_follow_the_same_trajectories(make):
    game = stochastic_pennies()
    res = {}
    for engine in ("numpy", "compiled"):
        # C2 = 0.002: the private runs' bonuses are below H from the start, so their stage games are mixed
        res[engine] = DPNashVI(make(), mode="practical", C2=0.002, engine=engine, record_values=True).run(
            game, 150, np.random.default_rng(4), runs=6)
    a, b = res["numpy"], res["compiled"]
    assert np.array_equal(a.states, b.states) and np.array_equal(a.actions_max, b.actions_max)
    assert np.array_equal(a.actions_min, b.actions_min) and np.array_equal(a.k_out, b.k_out)
    np.testing.assert_allclose(b.Qb, a.Qb, atol=1e-10)
    np.testing.assert_allclose(b.pi, a.pi, atol=1e-10)
    np.testing.assert_allclose(b.certificate, a.certificate, atol=1e-10)
    assert a.cce_stats["simplex"] > 0, "the scenario must exercise the simplex, not only pure profiles"
    for key in ("pure", "hint", "simplex", "highs"):
        assert a.cce_stats[key] == b.cce_stats[key]


class LowerQOverride(DPNashVI):
    def lower_q(self, r, PVu, gamma, Gamma, H):
        return np.maximum(r + PVu - gamma + Gamma, 0.0)


def test_an_overridden_planning_method_runs_its_own_code():
    assert DPNashVI(mode="practical")._plan_kernel() is kernel_module
    assert LowerQOverride(mode="practical")._plan_kernel() is None
    with pytest.raises(InputError, match="overrides lower_q"):
        LowerQOverride(mode="practical", engine="compiled")._plan_kernel()
    patched = DPNashVI(mode="practical")
    patched.upper_q = lambda r, PVb, gamma, Gamma, H: np.full_like(PVb, H)
    assert patched._plan_kernel() is None
    with pytest.raises(InputError, match="cce_method"):
        DPNashVI(cce_method="highs", engine="compiled")._plan_kernel()
    with pytest.raises(InputError, match="engine"):
        DPNashVI(engine="fast")
    # and the override changes what plan returns (the kernel would have hidden it)
    rng = np.random.default_rng(2)
    r, P, N, _, _, _ = plan_inputs(rng, 3, 2, 2, 2, 2, unvisited=False, warm=False)
    iota = confidence_log(2, 2, 2, 2, 100, 0.1)
    good = DPNashVI(mode="practical").plan(r, P, N, 1.0, iota)[2]
    bad = LowerQOverride(mode="practical").plan(r, P, N, 1.0, iota)[2]
    assert np.any(bad > good)


class _ForcedFallback:
    """The real kernel, but every simplex-settled stage game is handed back as NEEDS_FALLBACK."""

    def __getattr__(self, name):
        return getattr(kernel_module, name)

    def plan_step(self, *args):
        kernel_module.plan_step(*args)
        status = args[-2]
        status[status == kernel_module.SIMPLEX] = kernel_module.NEEDS_FALLBACK


def test_stage_games_the_kernel_cannot_settle_go_to_highs(monkeypatch):
    rng = np.random.default_rng(8)
    r, P, N, _, _, _ = plan_inputs(rng, 5, 2, 3, 2, 2, unvisited=False, warm=False)
    iota = confidence_log(2, 3, 2, 2, 100, 0.1)
    algo = DPNashVI(mode="practical")
    monkeypatch.setattr(algo, "_plan_kernel", lambda: _ForcedFallback())
    pi, Qb, Qu, Vb, Vu, stats = algo.plan(r, P, N, 1.0, iota)
    assert stats["highs"] > 0 and stats["simplex"] == 0
    assert np.all(cce_residual(pi, Qb, Qu) <= 1e-8 * 2)
    np.testing.assert_allclose(Vb[:, :2], np.einsum("rhsab,rhsab->rhs", pi, Qb), atol=1e-12)


def test_warm_starts_settle_the_same_stage_games_as_the_numpy_path():
    """A warm start read the objective row while updating it in place: where a basic column preceded a later
    one its cost was lost, the simplex "converged" to a non-CCE, the verification rejected it and HiGHS solved
    the game (the results stayed right, but on a game with A = 2, B = 3 most warm starts went to HiGHS: 19,340 of
    108,000 stage games of a 60-run x 200-episode batch, 23 s of CPU instead of 0.4 s). Now the kernel settles
    exactly the games the numpy path settles."""
    from dpcheck.algorithms.envs.generators import random_game
    game = random_game(2, 2, 3, 3, np.random.default_rng(0))
    stats = {engine: DPNashVI(NoPrivatizer(), mode="practical", C1=1.0, C2=0.005, engine=engine).run(
        game, 60, np.random.default_rng(1), runs=8).cce_stats for engine in ("numpy", "compiled")}
    assert stats["compiled"]["simplex"] > 0 and stats["compiled"]["highs"] == 0
    for key in ("pure", "hint", "simplex", "highs"):
        assert stats["compiled"][key] == stats["numpy"][key]
