"""The selection-mechanism plug-in of Algorithms 1 and 2 (docs/privatizers.md, "General function approximation").

The public seam (learners take ``mechanism=``), the loader's guard (one line naming the plug-in for every
misbehaviour), the example (permute-and-flip) and its planted-bug twin (noise scale Delta / eps, 2 eps-DP)."""
import os
import textwrap

import numpy as np
import pytest

import dpcheck.audits.gfa_selection  # noqa: F401  (registers gfa_selection_mechanism: entry points are not reinstalled)
from dpcheck.algorithms.gfa import (ExponentialMechanism, GuardedSelection, PrivateGeneralMDP, PrivateOutcomeRL,
                                    SelectionMechanism, gf3, load_selection_mechanism)
from dpcheck.algorithms.gfa.selection import RecordingMechanism
from dpcheck.audits.lib import gfa
from dpcheck.errors import InputError, MechanismError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "my_selection.py")
GOOD, TWIN = f"{EXAMPLE}:PermuteAndFlip", f"{EXAMPLE}:NoFactorTwoNoisyMax"

BAD = textwrap.dedent('''
    import numpy as np
    from dpcheck.algorithms.gfa import SelectionMechanism

    class Raises(SelectionMechanism):
        def select(self, scores, epsilon, sensitivity, rng):
            raise ValueError("boom")

    class WrongShape(SelectionMechanism):
        def select(self, scores, epsilon, sensitivity, rng):
            return np.zeros((scores.shape[0], 2), dtype=int)

    class NaNs(SelectionMechanism):
        def select(self, scores, epsilon, sensitivity, rng):
            return np.full(scores.shape[0], np.nan)

    class OutOfRange(SelectionMechanism):
        def select(self, scores, epsilon, sensitivity, rng):
            return np.full(scores.shape[0], scores.shape[1])

    class GlobalRandom(SelectionMechanism):
        def select(self, scores, epsilon, sensitivity, rng):
            return np.argmax(scores + np.random.gumbel(size=scores.shape), axis=1)

    class IgnoresRng(SelectionMechanism):
        def select(self, scores, epsilon, sensitivity, rng):
            return np.argmax(scores, axis=1)

    class NoSelect:
        pass

    class BadConstructor(SelectionMechanism):
        def __init__(self):
            raise RuntimeError("no")
        def select(self, scores, epsilon, sensitivity, rng):
            return np.zeros(scores.shape[0], dtype=int)
''')


@pytest.fixture(scope="module")
def bad_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("plugins") / "bad_selection.py"
    p.write_text(BAD)
    return str(p)


@pytest.mark.parametrize("name, words", [
    ("Raises", "raised ValueError in select: boom"),
    ("WrongShape", "returned shape (256, 2), expected (256,)"),
    ("NaNs", "NaN"),
    ("OutOfRange", "outside [0, 4)"),
    ("GlobalRandom", "not deterministic given the rng"),
    ("IgnoresRng", "ignores the rng"),
    ("BadConstructor", "raised RuntimeError in its constructor"),
])
def test_a_misbehaving_plugin_gets_one_line_naming_it(bad_file, name, words):
    with pytest.raises(MechanismError) as e:
        load_selection_mechanism(f"{bad_file}:{name}")
    msg = str(e.value)
    assert f"{bad_file}:{name}" in msg and words in msg and "\n" not in msg


def test_a_class_without_select_is_bad_input(bad_file):
    with pytest.raises(InputError, match="does not implement select"):
        load_selection_mechanism(f"{bad_file}:NoSelect")


def test_misbehaviour_exits_2_with_one_line_through_the_cli(bad_file, capsys):
    from dpcheck.cli import main
    rc = main(["audit", "gfa_selection_mechanism", "--quick", "--quiet", "--privatizer", f"{bad_file}:IgnoresRng"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "IgnoresRng" in err[0] and "ignores the rng" in err[0]


def test_builtin_is_the_exponential_mechanism_and_plugins_are_guarded():
    assert type(load_selection_mechanism(None)) is ExponentialMechanism
    assert type(load_selection_mechanism("exponential")) is ExponentialMechanism
    m = load_selection_mechanism(GOOD)
    assert isinstance(m, GuardedSelection) and isinstance(m.inner, SelectionMechanism)
    assert m.log_probabilities(np.zeros((1, 3)), 1.0, 1.0) is None


def test_the_learner_takes_its_mechanism_as_a_parameter():
    """The seam: a plug-in's select is called once per update, at eps0 = 2 Delta_S beta_EM, and the built-in
    draws exactly what the exponential mechanism draws (same rng)."""
    inst = gf3()
    ag = PrivateGeneralMDP(inst.fclass, epsilon=4.0, B=4, mechanism=GOOD)
    rec = RecordingMechanism(ag.mechanism)
    ag.mechanism = rec
    res = ag.run(inst.mdp, 20, np.random.default_rng(0), runs=3)
    p = ag.privacy(20)
    assert len(rec.calls) == res.M == p.M == 5
    assert all(eps == pytest.approx(p.eps0) and sens == p.sensitivity for _, eps, sens in rec.calls)
    a = PrivateGeneralMDP(inst.fclass, epsilon=4.0, B=4).run(inst.mdp, 20, np.random.default_rng(1), runs=3)
    b = PrivateGeneralMDP(inst.fclass, epsilon=4.0, B=4, mechanism="exponential").run(
        inst.mdp, 20, np.random.default_rng(1), runs=3)
    np.testing.assert_array_equal(a.selected, b.selected)


def test_backward_messages_are_the_exponential_mechanisms_sampler_only():
    inst = gf3()
    with pytest.raises(InputError, match="needs sampler='enumerate'"):
        PrivateGeneralMDP(inst.fclass, sampler="messages", mechanism=GOOD)


def test_the_audits_read_scores_and_updates_through_the_mechanism():
    """score_dataset and the observed composition see a plug-in's calls (no monkeypatching of _select)."""
    inst = gf3()
    ag = PrivateGeneralMDP(inst.fclass, epsilon=2.0, B=3, mechanism=GOOD, s1=inst.s1)
    assert gfa.score_dataset_check(ag, inst.mdp, K=12, runs=2, seed=0).verdict == "pass"
    n, beta = gfa.observed_updates(ag, inst.mdp, 12)
    assert n == 4 and beta == pytest.approx(ag.privacy(12).beta_em)
    assert gfa.composition_check(ag, [12], mdp=inst.mdp).verdict == "pass"


def test_example_passes_and_twin_fails_the_black_box_of_the_selection():
    good = gfa.selection_blackbox_check(load_selection_mechanism(GOOD), 1.0, 1.0, samples=20_000, seed=3)
    twin = gfa.selection_blackbox_check(load_selection_mechanism(TWIN), 1.0, 1.0, samples=20_000, seed=3)
    assert good.verdict == "pass" and good.measured["epsilon_lower_bound"] <= 1.0
    assert twin.verdict == "fail" and twin.measured["epsilon_lower_bound"] > 1.0


def test_utility_check_fails_a_mechanism_noisier_than_it_declares(tmp_path):
    p = tmp_path / "noisy.py"
    p.write_text(textwrap.dedent('''
        import numpy as np
        from dpcheck.algorithms.gfa import SelectionMechanism
        class Noisy(SelectionMechanism):
            utility_constant = 2.0
            def select(self, scores, epsilon, sensitivity, rng):      # 4x the permute-and-flip noise
                return np.argmax(scores + rng.exponential(8 * sensitivity / epsilon, size=scores.shape), axis=1)
    '''))
    assert gfa.selection_utility_check(load_selection_mechanism(f"{p}:Noisy"), 1.0, 1.0, runs=2000).verdict == "fail"
    assert gfa.selection_utility_check(load_selection_mechanism(GOOD), 1.0, 1.0, runs=2000).verdict == "pass"
    assert gfa.selection_utility_check(ExponentialMechanism(), 1.0, 1.0, runs=2000).verdict == "pass"


def test_outcome_learner_takes_a_plugin_too():
    from dpcheck.algorithms.gfa import appendix_d
    inst = appendix_d("easy")
    res = PrivateOutcomeRL(inst.fclass, epsilon=4.0, B=8, mechanism=GOOD).run(inst.mdp, 32, np.random.default_rng(0))
    assert res.M == 4


@pytest.mark.slow
def test_standalone_audit_passes_the_example_and_fails_the_twin():
    import dpcheck
    good = dpcheck.run("gfa_selection_mechanism", quick=True, privatizer=GOOD, workers=1)
    assert good.verdict == "pass"
    twin = dpcheck.run("gfa_selection_mechanism", quick=True, privatizer=TWIN, workers=1)
    assert twin.verdict == "fail"
    failed = {c["id"] for c in twin.checks if c["verdict"] == "fail"}
    assert failed == {"privacy.blackbox"}


@pytest.mark.slow
@pytest.mark.xdist_group("private_gfa_plugin")
def test_private_gfa_quick_with_the_example_plugin(quick_audit):
    """The algorithm audit with the plug-in inside: no check INCONCLUSIVE because of an assumed noise law."""
    import dpcheck
    # the run of tests/plugins/test_plugin_decisive.py[private_gfa] (conftest's quick_audit, seed 0, one worker)
    code, r = quick_audit("private_gfa", "--privatizer", GOOD)
    checks = {c["id"]: c for c in r["checks"]}
    assert "privacy.em_selection" not in checks                      # no closed form declared
    assert checks["privacy.selection.blackbox"]["verdict"] == "pass"
    assert checks["whitebox.composition"]["verdict"] == "pass"
    assert checks["assumption.selection_utility"]["verdict"] == "pass"
    assert r["verdict"] == "pass", [(c["id"], c["verdict"], c.get("reason")) for c in r["checks"] if c["verdict"] != "pass"]
    # the twin inside the algorithm: its selection at the eps0 really used is caught black box
    twin = dpcheck.run("private_gfa", quick=True, privatizer=TWIN, workers=1)
    failed = {c["id"] for c in twin.checks if c["verdict"] == "fail"}
    assert twin.verdict == "fail" and failed == {"privacy.selection.blackbox"}


def test_none_and_unknown_names_are_bad_input():
    with pytest.raises(InputError, match="baseline"):
        load_selection_mechanism("none")
    with pytest.raises(InputError, match="unknown selection mechanism"):
        load_selection_mechanism("gumbel")
