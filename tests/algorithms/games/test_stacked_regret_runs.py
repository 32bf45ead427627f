"""Stacked regret runs of DP-Nash-VI (algorithms/privatizers/stacked.py, DPNashVI.run's ``blocks``,
lib.nash.regret_stack_job): one batch of runs gives each job exactly the result of its own run from the
common seed, and the CCE solver's batch-wide decisions are taken per block (cce.solve_cce's ``groups``)."""
from __future__ import annotations

import numpy as np
import pytest

from dpcheck.algorithms.games.cce import _warm_start, simplex_cce, solve_cce
from dpcheck.algorithms.games.dp_nash_vi import DPNashVI
from dpcheck.algorithms.games.testbeds import stochastic_pennies
from dpcheck.algorithms.privatizers import NoPrivatizer, load_privatizer
from dpcheck.algorithms.privatizers.stacked import StackedPrivatizers
from dpcheck.audits.lib import nash
from dpcheck.errors import InputError


@pytest.mark.slow
def test_stacked_regret_chunk_equals_one_run_per_job():
    game, K, seeds, common = stochastic_pennies(), 150, 4, 987
    jobs = [("central", 8.0, "strict", K, seeds), ("local", 32.0, "strict", K, seeds),
            ("central", 32.0, "strict", K, seeds), ("none", None, "strict", K, seeds)]
    chunks = nash.regret_chunks(jobs)
    assert sorted(chunks) == [(0, 1, 2), (3,)]
    stacked = nash.regret_stack_job(chunks.index((0, 1, 2)), None, chunks, jobs, game, common)
    for j, got in zip((0, 1, 2), stacked):
        alone = nash.regret_job(j, None, jobs, game, common)
        assert np.array_equal(alone["grid"], got["grid"])
        assert np.array_equal(alone["R"], got["R"])          # exact: the same draws, the same arithmetic
        assert alone["config"] == got["config"]
    single = nash.regret_stack_job(chunks.index((3,)), None, chunks, jobs, game, common)
    assert np.array_equal(single[0]["R"], nash.regret_job(3, None, jobs, game, common)["R"])


def test_regret_chunks_stack_private_jobs_per_horizon_largest_first():
    jobs = [("none", None, "strict", 800, 16), ("none", None, "strict", 100, 16),
            ("central", 4.0, "strict", 800, 16), ("central", 8.0, "strict", 800, 16),
            ("central", 4.0, "strict", 100, 16), ("local", 8.0, "strict", 800, 16), ("local", 8.0, "strict", 100, 16)]
    chunks = nash.regret_chunks(jobs)
    assert sorted(chunks) == sorted([(0,), (1,), (2, 3, 5), (4, 6)])
    assert chunks[0] == (2, 3, 5)                            # the largest batch goes out first
    assert sorted(i for c in chunks for i in c) == list(range(len(jobs)))
    # the default sweep: 8 private runs at one horizon become two batches of 4 (two workers share them)
    eight = [("central", e, "strict", 800, 16) for e in (4.0, 8.0, 16.0, 32.0)] + \
            [("local", e, "strict", 800, 16) for e in (8.0, 16.0, 32.0, 64.0)]
    assert nash.regret_chunks(eight) == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert nash.regret_chunks(eight[:6]) == [(0, 1, 2), (3, 4, 5)]


def _priv(eps):
    return load_privatizer("central", epsilon=eps, beta=0.1, calibration="strict", width_mode="nominal")


def test_blocks_need_a_stack_of_as_many_members():
    game = stochastic_pennies()
    with pytest.raises(InputError, match="blocks"):
        DPNashVI(_priv(8.0), mode="practical").run(game, 5, np.random.default_rng(0), runs=4, blocks=2)
    with pytest.raises(InputError, match="blocks"):
        DPNashVI(StackedPrivatizers([_priv(8.0), _priv(16.0)]), mode="practical").run(
            game, 5, np.random.default_rng(0), runs=5, blocks=2)
    with pytest.raises(InputError, match="mix exact"):
        DPNashVI(StackedPrivatizers([_priv(8.0), NoPrivatizer()]), mode="practical").run(
            game, 5, np.random.default_rng(0), runs=4, blocks=2)


def test_simplex_iteration_cap_is_decided_per_group():
    # instance 6 of this draw converges within 2 iterations, instance 18 needs 6: with a cap of 3, group 0
    # alone converges, and one call without groups would mark it unconverged too
    M = np.random.default_rng(3).normal(size=(20, 4, 4))[[6, 6, 18]]
    groups = np.array([0, 0, 1])
    alone0, alone1 = simplex_cce(M[:2], max_iter=3), simplex_cce(M[2:], max_iter=3)
    assert alone0[1].all() and not alone1[1].any()
    both = simplex_cce(M, max_iter=3, groups=groups)
    assert np.array_equal(both[1], np.concatenate([alone0[1], alone1[1]]))
    assert np.array_equal(both[0], np.concatenate([alone0[0], alone1[0]]))
    assert not simplex_cce(M, max_iter=3)[1].any()


def test_warm_start_singular_fallback_is_decided_per_group():
    # instance 0: basis columns exactly singular (the batched solve raises); instance 1: det 1e-10, below the
    # fallback's 1e-9 cut but solvable, so alone it IS warm-started
    T = np.zeros((2, 3, 5))
    T[0, :2, :2] = [[1.0, 1.0], [1.0, 1.0]]
    T[1, :2, :2] = [[1.0, 1.0], [1.0, 1.0 + 1e-10]]
    T[:, :2, 2:4] = np.eye(2)
    T[:, :2, -1] = 1.0
    T[:, 2, :2] = -1.0

    def start(Ts, groups=None):
        Ts = Ts.copy()
        basis = np.tile(np.arange(2, 4), (len(Ts), 1))
        _warm_start(Ts, basis, np.tile([0, 1], (len(Ts), 1)), 2, groups)
        return Ts, basis

    T1, b1 = start(T[1:])
    assert b1.tolist() == [[0, 1]]                           # alone: warm-started
    Tg, bg = start(T, groups=np.array([0, 1]))
    assert bg.tolist() == [[2, 3], [0, 1]] and np.array_equal(Tg[1], T1[0])
    _, bn = start(T)                                         # one batch: the fallback cuts instance 1 too
    assert bn.tolist() == [[2, 3], [2, 3]]


def test_solve_cce_groups_match_separate_calls():
    rng = np.random.default_rng(11)
    Qb, Qu = rng.uniform(0, 2, size=(2, 10, 3, 3))
    one = [solve_cce(Qb[i * 5:(i + 1) * 5], Qu[i * 5:(i + 1) * 5], H=2.0) for i in range(2)]
    both = solve_cce(Qb, Qu, H=2.0, groups=np.repeat([0, 1], 5))
    assert np.array_equal(both.pi, np.concatenate([o.pi for o in one]))
    assert np.array_equal(both.basis, np.concatenate([o.basis for o in one]))


def test_stacked_release_post_processes_all_blocks_in_one_call_with_the_members_results():
    members = [_priv(4.0), load_privatizer("local", epsilon=16.0, beta=0.1, calibration="strict",
                                           width_mode="nominal")]
    stack = StackedPrivatizers(members).start(32, 2, 2, 4, 50, np.random.default_rng(8), rewards=False)
    alone = [m.start(16, 2, 2, 4, 50, np.random.default_rng(8), rewards=False) for m in
             (_priv(4.0), load_privatizer("local", epsilon=16.0, beta=0.1, calibration="strict", width_mode="nominal"))]
    assert stack._joint_release
    rng = np.random.default_rng(0)
    for _ in range(3):
        states, actions = rng.integers(0, 2, size=(16, 3)), rng.integers(0, 4, size=(16, 2))
        stack.observe(np.tile(states, (2, 1)), np.tile(actions, (2, 1)))
        for m in alone:
            m.observe(states, actions)
        got, want = stack.release(), [m.release() for m in alone]
        assert np.array_equal(got.transitions, np.concatenate([w.transitions for w in want]))
        assert np.array_equal(got.visits, np.concatenate([w.visits for w in want]))
    assert np.array_equal(stack.width, np.repeat([m.width for m in alone], 16))
