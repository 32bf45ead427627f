"""User inputs (issue 17, item 5): assumption checks on a user's dataset / features pass only what the input
establishes (INCONCLUSIVE with the reason when it cannot, FAIL when the input itself disproves it), and every
user input is size-checked before any work (exit 2, one line naming the sizes that fit, no traceback)."""
from __future__ import annotations

import numpy as np
import pytest

from dpcheck.algorithms.envs.planning import greedy, optimal_values
from dpcheck.algorithms.offline import OfflineDataset, tab_full
from dpcheck.algorithms.offline.instances import OfflineInstance
from dpcheck.audits.lib import offline as lo
from dpcheck.audits.lib import offline_linear as ol
from dpcheck.audits.lib.offline import APVISpec
from dpcheck import limits
from dpcheck.cli import main
from dpcheck.errors import InputError


# ---------------------------------------------------------------- dp_apvi: assumption.coverage.data
def _avoiding_optimal(n=100_000, seed=0):
    """TAB-FULL (S = A = 2, H = 3) and data of a behaviour policy that NEVER takes the optimal action."""
    inst = tab_full(np.random.default_rng(seed), S=2, A=2, H=3)
    opt = greedy(optimal_values(inst.mdp)[0])                          # (H, S)
    mu = np.eye(2)[1 - opt]                                             # the other action, everywhere
    data = OfflineDataset.collect(inst.mdp, mu, n, np.random.default_rng(seed + 1))
    return inst, mu, data


def test_data_whose_behaviour_never_takes_the_optimal_action_is_not_passed():
    inst, mu, data = _avoiding_optimal()
    c = lo.coverage_check(counts=data.counts(rewards=False), spec=APVISpec(), id="assumption.coverage.data")
    # n = 1e5 satisfies the old empirical sample-size rule (which passed it); Assumption 2.1 fails in truth
    assert c.verdict == "inconclusive", c.reason
    assert "never occur" in c.reason and "behaviour" in c.reason
    assert not OfflineInstance(inst.mdp, mu, name="x").coverage().assumption_2_1


def test_with_the_true_mdp_supplied_the_same_data_fail_exactly():
    inst, mu, data = _avoiding_optimal()
    model = OfflineInstance(inst.mdp, mu, name="yours")
    c = lo.coverage_check(counts=data.counts(rewards=False), spec=APVISpec(), behaviour=mu, model=model)
    assert c.verdict == "fail" and "optimal policy reaches" in c.reason


def test_a_partial_behaviour_policy_without_the_mdp_stays_inconclusive():
    _, mu, data = _avoiding_optimal()
    c = lo.coverage_check(counts=data.counts(rewards=False), spec=APVISpec(), behaviour=mu)
    assert c.verdict == "inconclusive" and "mu = 0" in c.reason and "P, r, init" in c.reason


def test_full_coverage_establishes_the_assumption():
    inst = tab_full(np.random.default_rng(0), S=2, A=2, H=3)
    big = inst.sample_counts(10**6, np.random.default_rng(1), 1)
    c = lo.coverage_check(counts=big, spec=APVISpec())
    assert c.verdict == "pass" and c.measured["assumption_2_1"] is True
    # the sample-size condition uses a lower confidence bound on dbar_m, never above the empirical one
    assert 0 < c.measured["dbar_m_lower"] <= c.measured["dbar_m_empirical"]
    # a full-support behaviour policy with the true MDP: exact, PASS
    data = inst.collect(10**5, np.random.default_rng(2))
    c = lo.coverage_check(counts=data.counts(rewards=False), spec=APVISpec(), behaviour=inst.behaviour, model=inst)
    assert c.verdict == "pass" and c.measured["dbar_m"] == pytest.approx(inst.coverage().dbar_m)


def test_supplied_behaviour_or_mdp_must_be_possible_under_the_data(tmp_path):
    inst, mu, data = _avoiding_optimal(n=50)
    arrays = {"behaviour": 1.0 - mu}                        # zero exactly where the data act
    with pytest.raises(InputError, match="probability 0"):
        lo.user_model(arrays, data, "d.npz")
    with pytest.raises(InputError, match="behaviour"):
        lo.user_model({"P": inst.mdp.P}, data, "d.npz")
    b, m = lo.user_model({"behaviour": mu, "P": inst.mdp.P, "r": inst.mdp.r, "init": inst.mdp.init}, data, "d.npz")
    assert m is not None and np.array_equal(b, mu)


def test_bad_behaviour_in_the_dataset_exits_2_through_the_cli(tmp_path, capsys):
    inst, mu, data = _avoiding_optimal(n=50)
    p = tmp_path / "d.npz"
    np.savez(p, states=data.states[0], actions=data.actions[0], S=2, A=2, behaviour=1.0 - mu)
    assert main(["audit", "dp_apvi", "--quick", "--set", f"data={p}", "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "probability 0" in err and "Traceback" not in err


# ---------------------------------------------------------------- dp_vapvi: assumption.coverage on user data
def _linear(tmp_path, features, n=60, seed=0, actions=None):
    rng = np.random.default_rng(seed)
    S, A, _ = features.shape
    H = 3
    p = tmp_path / "lin.npz"
    np.savez(p, states=rng.integers(0, S, (n, H + 1)),
             actions=rng.integers(0, A, (n, H)) if actions is None else actions,
             rewards=rng.random((n, H)), features=features)
    return str(p)


def test_features_spanning_fewer_than_d_dimensions_fail_coverage(tmp_path):
    phi = np.zeros((2, 2, 4))
    phi[..., :3] = np.eye(3)[[0, 1, 2, 0]].reshape(2, 2, 3)            # rank 3 < d = 4
    setup = ol.user_setup(_linear(tmp_path, phi))
    c = ol.coverage_check(setup, 0.1)
    assert c.verdict == "fail" and "span 3 < d = 4" in c.reason


def test_full_rank_features_with_a_singular_data_gram_are_inconclusive(tmp_path):
    phi = np.eye(4).reshape(2, 2, 4)
    setup = ol.user_setup(_linear(tmp_path, phi, actions=np.zeros((60, 3), int)))     # action 1 never taken
    c = ol.coverage_check(setup, 0.1)
    assert c.verdict == "inconclusive" and "cannot tell" in c.reason


def test_data_spanning_the_features_establish_kappa_positive(tmp_path):
    setup = ol.user_setup(_linear(tmp_path, np.eye(4).reshape(2, 2, 4), n=200))
    c = ol.coverage_check(setup, min(1.0, setup.kappa_used / 2))
    assert c.verdict == "pass" and "established" in c.reason


# ---------------------------------------------------------------- size guards: each probe exits 2 at once
def _cli(capsys, tmp_path, *argv):
    code = main(["audit", *argv, "--quick", "--out", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "internal error" not in err, err
    return err


def _apvi_data(tmp_path, S, A, name="d.npz"):
    rng = np.random.default_rng(0)
    p = tmp_path / name
    np.savez(p, states=rng.integers(0, 2, (40, 4)), actions=rng.integers(0, 2, (40, 3)), S=np.int64(S),
             A=np.int64(A))
    return p


@pytest.mark.parametrize("S,A", [(10**12, 2), (10**5, 10**5)])
def test_dp_apvi_huge_state_or_action_sets_exit_2(tmp_path, capsys, S, A):
    err = _cli(capsys, tmp_path, "dp_apvi", "--set", f"data={_apvi_data(tmp_path, S, A)}")
    assert "S = 10^" in err and ("memory limit" in err or "time limit" in err)
    if A == 2:
        assert "what fits: S <=" in err


def test_dp_vapvi_huge_features_exit_2(tmp_path, capsys):
    p = _linear(tmp_path, np.eye(4).reshape(2, 2, 4) * 1e300)
    err = _cli(capsys, tmp_path, "dp_vapvi", "--set", f"data={p}")
    assert "max ||phi|| = 1e+300" in err and "overflow" in err


def test_dp_vapvi_large_state_set_exits_2(tmp_path, capsys):
    rng = np.random.default_rng(0)
    p = tmp_path / "v.npz"
    np.savez(p, states=rng.integers(0, 2, (30, 4)), actions=rng.integers(0, 2, (30, 3)),
             rewards=rng.random((30, 3)), features=np.zeros((10**4, 2, 4)), S=np.int64(10**4))
    err = _cli(capsys, tmp_path, "dp_vapvi", "--set", f"data={p}")
    assert "S = 10^4" in err and "what fits: S <=" in err


@pytest.mark.parametrize("name", ["private_linopt_vi", "private_linopt_po"])
def test_linopt_long_horizon_exits_2(tmp_path, capsys, name):
    from dpcheck.algorithms.linear import lm2
    e, H = lm2(), 10**5
    p = tmp_path / "inst.npz"
    np.savez(p, psi=e.psi, varphi=e.varphi, theta_p=np.tile(e.theta_p[:1], (H, 1)),
             theta_r=np.tile(e.theta_r[:1], (H, 1)))
    err = _cli(capsys, tmp_path, name, "--set", f"instance={p}")
    assert "H = 10^5" in err and "what fits: H <=" in err


@pytest.mark.slow
@pytest.mark.parametrize("name", ["private_gfa", "private_gfa_outcome"])
def test_gfa_huge_function_class_exits_2(tmp_path, capsys, name):
    from dpcheck.audits.lib import gfa
    inst = gfa.default_instance(1 if name == "private_gfa" else 2)
    H, S, A = inst.mdp.H, inst.mdp.S, inst.mdp.A
    N = 200_000 if name == "private_gfa" else 20_000
    p = tmp_path / "fc.npz"
    np.savez(p, values=np.random.default_rng(0).random((N, H, S, A)).astype(np.float32))
    err = _cli(capsys, tmp_path, name, "--set", f"function_class={p}")
    assert f"N = {N}" in err and "what fits: N <=" in err and "time limit" in err


# ---------------------------------------------------------------- the guards let ordinary inputs through
def test_built_in_sized_user_inputs_are_not_refused(tmp_path):
    from dpcheck.algorithms.linear import lm2
    from dpcheck.audits.lib import gfa, linopt
    from dpcheck.audits.private_gfa import PrivateGFAAudit, PrivateGFAOutcomeAudit
    lo.check_data_size("d.npz", H=3, S=4, A=3, n=10**4, samples=2 * 10**5, reps=300)
    ol.check_data_size("d.npz", H=3, S=2, A=2, d=4, n=10**4, samples=100_000, runs=2000, max_norm=1.0)
    linopt.check_instance_size("i.npz", lm2(), quick=False, samples=200_000)
    for alg, cls in ((1, PrivateGFAAudit), (2, PrivateGFAOutcomeAudit)):
        gfa.check_class_size("c.npz", gfa.default_instance(alg), cls.sizes["default"], K=1024)


def test_the_size_named_as_fitting_does_fit(monkeypatch):
    monkeypatch.setenv(limits.ENV, "1G")
    cost = lambda z: lo.data_cost(z, samples=50_000, reps=100)
    sizes = {"H": 3, "S": 10**6, "A": 2, "n": 40}
    with pytest.raises(InputError) as e:
        limits.check_input_cost("x", sizes, cost, vary=("S",))
    fit = int(str(e.value).split("S <= ")[1].split()[0])
    limits.check_input_cost("x", {**sizes, "S": fit}, cost)                   # fits
    with pytest.raises(InputError):
        limits.check_input_cost("x", {**sizes, "S": fit + 1}, cost)           # one more does not


def test_time_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv(limits.TIME_ENV, "off")
    assert limits.time_limit()[0] == float("inf")
    monkeypatch.setenv(limits.TIME_ENV, "7200")
    assert limits.time_limit() == (7200.0, limits.TIME_ENV)
    monkeypatch.setenv(limits.TIME_ENV, "soon")
    with pytest.raises(InputError, match="DPCHECK_TIME_LIMIT"):
        limits.time_limit()


def test_a_misspelt_optional_array_is_refused_not_ignored(tmp_path, capsys):
    # 'behavior' (US spelling) and 'reward' were ignored without a word: the checks ran on the data alone
    p = _apvi_data(tmp_path, 2, 2)
    arrays = dict(np.load(p))
    np.savez(tmp_path / "typo.npz", **arrays, behavior=np.full((3, 2, 2), 0.5))
    err = _cli(capsys, tmp_path, "dp_apvi", "--set", f"data={tmp_path / 'typo.npz'}")
    assert "unknown array(s) 'behavior'" in err
    q = _linear(tmp_path, np.eye(4).reshape(2, 2, 4))
    np.savez(tmp_path / "lin.npz", **dict(np.load(q)), reward=np.zeros(3))
    err = _cli(capsys, tmp_path, "dp_vapvi", "--set", f"data={tmp_path / 'lin.npz'}")
    assert "unknown array(s) 'reward'" in err


@pytest.mark.parametrize("where", ["mechanism", "import", "factory"])
def test_sys_exit_in_user_code_is_an_error_not_exit_0(tmp_path, capsys, where):
    # sys.exit(0) in a mechanism (its 4th call) or at a target file's import: dpcheck exited 0, its report
    # left "running" (or none written)
    import json
    f = tmp_path / "t.py"
    body = ("import sys\nfrom dpcheck import AuditTarget, Claim\ncalls = [0]\n"
            "def mech(d, rng, size):\n    calls[0] += 1\n    if calls[0] >= 4:\n        sys.exit(0)\n"
            "    return d + rng.laplace(0, 1, size)\n"
            "target = AuditTarget(name='x', mechanism=mech, pairs=[(0, 1)], claim=Claim(epsilon=1.0))\n")
    f.write_text({"mechanism": body, "import": "import sys\nsys.exit(0)\n",
                  "factory": "import sys\ndef target():\n    sys.exit(0)\n"}[where])
    code = main(["audit", f"{f}:target", "--samples", "20000", "--workers", "1", "--out", str(tmp_path / "r"),
                 "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "sys.exit(0) was called" in err and "Traceback" not in err, err
    if where == "mechanism":
        assert json.loads((tmp_path / "r" / "t-target.json").read_text())["status"] == "error"
