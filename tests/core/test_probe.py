"""dpcheck.probe: a user's mechanism must draw from its rng and give single calls the law of a batch."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from examples import mechanisms as M  # noqa: E402

from dpcheck import AuditTarget, Claim, MechanismError  # noqa: E402
from dpcheck.probe import PROBE_SIZE, batch_vs_single_p, probe_target  # noqa: E402


def _target(mech, pairs=((1.0, 0.0),), per_call=False):
    return AuditTarget(name="t", mechanism=mech, pairs=list(pairs), claim=Claim(epsilon=1.0), per_call=per_call)


def test_correct_mechanisms_pass_the_probe():
    for mech, pairs in ((M.laplace_count(1.0), [(0, 1)]), (M.geometric(1.0), [(0, 1)]),
                        (M.noisy_histogram(1.0), [([1, 2, 3], [1, 2, 4])]),
                        (M.report_noisy_max(0.5), [([0] * 5, [1, 0, 0, 0, 0])]),
                        (lambda d, rng, size: np.full(size, d), [(0, 1)])):          # deterministic: fine
        probe_target(_target(mech, pairs))
    labels = AuditTarget.from_single("rr", lambda d, rng: "yes" if rng.random() < 0.7 else "no", [(1, 0)],
                                     Claim(epsilon=1.0))
    probe_target(labels)


def test_batch_centred_noise_is_refused():
    # exact at size 1 (the release a user makes), Laplace-like in a batch: was PASS at 10^5 and 10^6
    def centred(d, rng, size):
        z = rng.laplace(0.0, 1.0, size)
        return float(d) + (z - z.mean())
    with pytest.raises(MechanismError, match="one per call differ in law"):
        probe_target(_target(centred))


def test_one_scale_per_call_is_refused():
    # the noise scale is drawn once per call: a batch shares it, single calls do not
    def shared(d, rng, size):
        return float(d) + rng.choice([0.05, 20.0]) * rng.laplace(0.0, 1.0, size)
    with pytest.raises(MechanismError, match="one per call differ in law"):
        probe_target(_target(shared))


def test_global_state_and_fixed_seeds_are_refused():
    with pytest.raises(MechanismError, match="same rng seed"):
        probe_target(_target(lambda d, rng, size: d + np.random.laplace(0.0, 1.0, size)))
    with pytest.raises(MechanismError, match="different rng seeds"):
        probe_target(_target(lambda d, rng, size: d + np.random.default_rng(7).laplace(0.0, 1.0, size)))


def test_the_comparison_is_valid_under_the_null():
    # same law on both sides: the Bonferroni p-value is (super-)uniform; at level 0.05, 200 seeds, ~5 % or fewer
    rng = np.random.default_rng(0)
    ps = [batch_vs_single_p(rng.laplace(size=(PROBE_SIZE, 3)), rng.laplace(size=(PROBE_SIZE, 3)))
          for _ in range(200)]
    assert sum(p < 0.05 for p in ps) <= 18          # P[Bin(200, 0.05) > 18] < 0.05
    labels = np.array(["a", "b", "c"])
    ps = [batch_vs_single_p(labels[rng.integers(0, 3, PROBE_SIZE)], labels[rng.integers(0, 3, PROBE_SIZE)])
          for _ in range(200)]
    assert sum(p < 0.05 for p in ps) <= 18


def test_a_skewed_label_is_not_taken_for_a_fixed_seed():
    # "yes" with probability 0.99: two 64-output draws coincide often, which proves nothing
    for seed in range(20):
        probe_target(AuditTarget.from_single("skewed", lambda d, rng: "yes" if rng.random() < 0.99 else "no",
                                             [(1, 0)], Claim(epsilon=1.0)), seed=seed)


def _centred(d, rng, size):
    z = rng.laplace(0.0, 1.0, size)
    return float(d) + (z - z.mean())


def test_every_user_entry_probes_and_the_built_in_audits_do_not_refuse(tmp_path, monkeypatch):
    import dpcheck
    from dpcheck.audit import ExecutionOptions
    t = _target(_centred)
    for sequential in (False, True):
        with pytest.raises(MechanismError, match="one per call"):
            dpcheck.audit(t, samples=4000, seed=0, sequential=sequential)
    calls = []
    monkeypatch.setattr("dpcheck.probe.probe_target", lambda *a: calls.append(a))
    ExecutionOptions(alpha=0.05, seed=0, samples=None, workers=1, backend="local", scheduler=None, cache_dir=None,
                     quick=False, progress=None, sequential=False).audit(_target(M.laplace_count(1.0), [(0, 1)]), 2000)
    assert calls == []


def test_the_cli_stops_a_batch_centred_mechanism_with_exit_2(tmp_path):
    import subprocess
    f = tmp_path / "centred.py"
    f.write_text("from dpcheck import AuditTarget, Claim\n"
                 "def mech(d, rng, size):\n"
                 "    z = rng.laplace(0.0, 1.0, size)\n"
                 "    return float(d) + (z - z.mean())\n"
                 "target = AuditTarget(name='centred', mechanism=mech, pairs=[(1.0, 0.0)], claim=Claim(epsilon=1.0))\n")
    r = subprocess.run([sys.executable, "-m", "dpcheck", "audit", f"{f}:target", "--samples", "4000",
                        "--out", str(tmp_path / "out"), "--workers", "1"], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "one per call differ in law" in r.stderr and "Traceback" not in r.stderr


def test_the_sequential_test_refuses_a_type_that_differs_between_inputs():
    import dpcheck

    def mech(d, rng, size):
        x = rng.laplace(0.0, 1.0, size)
        return x.astype(np.float32) if d == 1 else x
    with pytest.raises(MechanismError, match="different types"):
        dpcheck.audit(_target(mech, [(1, 0)]), samples=4000, seed=0, sequential=True, probe=False)


# ------------------------------------------------------------------ built-in targets: rng_finding
def _exe(sequential=False):
    from dpcheck.audit import ExecutionOptions
    return ExecutionOptions(alpha=0.05, seed=0, samples=None, workers=1, backend="local", scheduler=None,
                            cache_dir=None, quick=False, progress=None, sequential=sequential)


def _fixed_noise(d, rng, size):
    # a privatizer that seeds its own noise: the same noise on every call, public with the code
    return float(d) + np.random.default_rng(20220101).laplace(0.0, 1.0, size)


def test_a_built_in_mechanism_with_its_own_fixed_seed_fails():
    # before: the black box saw i.i.d.-looking rows and PASSed (chunks repeating each other)
    for sequential in (False, True):
        res = _exe(sequential).audit(_target(_fixed_noise, [(1.0, 0.0)]), 4000)
        assert res.verdict == "fail" and "fixed" in res.reason and "no epsilon holds" in res.reason
        assert res.rng_probe["varying_rows"] == 63 and res.rng_probe["chance"] == 2.0 ** -63
        check = res.to_check()
        assert check.verdict == "fail" and check.details["rng_probe"]["d_prime_fixed"] is True
        assert res.to_dict()["rng_probe"]["verdict"] == "fail"


def test_fixed_noise_that_ignores_the_data_is_inconclusive():
    def pure_fixed_noise(d, rng, size):
        return np.random.default_rng(3).laplace(0.0, 1.0, size)
    res = _exe().audit(_target(pure_fixed_noise, [(1.0, 0.0)]), 4000)
    assert res.verdict == "inconclusive" and "repeat one draw" in res.reason


def test_honest_and_nearly_constant_mechanisms_are_left_alone():
    from dpcheck.probe import rng_finding
    honest = _target(M.laplace_count(1.0), [(0, 1)])
    res = _exe().audit(honest, 4000)
    assert res.rng_probe is None and "rng_probe" not in res.to_dict()
    # the finding draws from a stream of its own: the result is the unprobed audit's, bit for bit
    import dpcheck
    assert res.to_dict() == dpcheck.audit(honest, samples=4000, seed=0, probe=False).to_dict()
    constant = _target(lambda d, rng, size: np.full(size, d), [(0, 1)])        # deterministic, k = 0: nothing shown
    skewed = _target(lambda d, rng, size: (rng.random(size) < 0.01).astype(np.int64) + d, [(0, 1)])
    # tie-breaking from the generator beside fixed noise: depends on the generator, not this probe's to judge
    partial = _target(lambda d, rng, size: _fixed_noise(d, rng, size) + rng.integers(0, 2, size), [(0, 1)])
    for seed in range(5):
        for t in (honest, constant, skewed, partial):
            assert rng_finding(t, seed) is None


def test_the_chance_of_two_draws_coinciding_is_at_most_two_to_the_minus_varying_rows():
    # the probe's bound, exactly, on a small discrete law: P(second draw == first) = sum over draws with
    # k varying rows of P(draw)^2 <= max P(draw) <= 2^-k; checked by enumeration over 4 rows of a 3-valued law
    import itertools
    from dpcheck.probe import varying_rows
    for p in ([0.7, 0.2, 0.1], [0.4, 0.35, 0.25], [0.95, 0.04, 0.01]):
        for draw in itertools.product(range(3), repeat=4):
            k = varying_rows(np.array(draw))
            assert np.prod([p[v] for v in draw]) <= 2.0 ** -k + 1e-15


def test_varying_rows_counts_rows_off_the_most_common_one():
    from dpcheck.probe import varying_rows
    assert varying_rows(np.array([1, 1, 2, 3])) == 2
    assert varying_rows(np.array([[0, 1], [0, 1], [1, 0]])) == 1
    assert varying_rows(np.array(["a", "b", "b"], dtype=object)) == 1
    assert varying_rows(np.arange(10.0)) == 9
