"""Plug-in offline count privatizers for DP-APVI (issue 19; docs/privatizers.md, "Offline tabular").

The documented example (examples/offline_privatizer.py: the geometric mechanism, eps-DP) must pass its
standalone audit (``offline_count_privatizer``) and ``dp_apvi`` with --quick; its planted twin (calibrated
to one family's sensitivity 2H instead of 4H: 2 eps-DP) must fail the black box and the sensitivity check.
Misbehaving plug-ins get exit 2 and one line naming them.
"""
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dpcheck.audits.privatizer_audits  # noqa: F401  (registers offline_count_privatizer)
from dpcheck.algorithms.offline import DPAPVI, tab_full
from dpcheck.algorithms.privatizers import (
    OfflineCountPrivatizer, OfflineGaussianPrivatizer, OfflineLaplacePrivatizer, load_offline_privatizer,
)
from dpcheck.audits.lib import offline as lo
from dpcheck.audits.lib.offline import APVISpec, OfflinePlugin
from dpcheck.errors import InputError, MechanismError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = f"{ROOT / 'examples' / 'offline_privatizer.py'}"
GOOD, TWIN = f"{EXAMPLE}:GeometricCountPrivatizer", f"{EXAMPLE}:GeometricCountPrivatizerOneFamily"

BAD = textwrap.dedent('''
import numpy as np
from dpcheck import Claim
from dpcheck.algorithms.privatizers import OfflineCountPrivatizer


class Base(OfflineCountPrivatizer):
    name = "bad"

    def __init__(self, epsilon=1.0, beta=0.1):
        self.epsilon, self.beta = epsilon, beta

    def width(self, H, S, A):
        return 100.0

    def dp_event(self, H):
        import dp_accounting
        return dp_accounting.LaplaceDpEvent(1.0 / self.epsilon)

    @property
    def claim(self):
        return Claim(epsilon=self.epsilon, notion="DP", source="test")

    def noisy_counts(self, pair, triple, rng):
        return pair + rng.laplace(0, 4.0, pair.shape), triple + rng.laplace(0, 4.0, triple.shape)


class Raises(Base):
    def noisy_counts(self, pair, triple, rng):
        raise RuntimeError("boom")


class WrongShape(Base):
    def noisy_counts(self, pair, triple, rng):
        return pair[:, :1] + rng.laplace(0, 4.0, pair[:, :1].shape), triple


class Nan(Base):
    def noisy_counts(self, pair, triple, rng):
        return pair * np.nan, triple


class GlobalState(Base):
    def noisy_counts(self, pair, triple, rng):
        return pair + np.random.laplace(0, 4.0, pair.shape), triple + np.random.laplace(0, 4.0, triple.shape)


class IgnoresRng(Base):
    def noisy_counts(self, pair, triple, rng):
        own = np.random.default_rng(0)
        return pair + own.laplace(0, 4.0, pair.shape), triple + own.laplace(0, 4.0, triple.shape)


class BadWidth(Base):
    def width(self, H, S, A):
        return float("nan")


class NoHooks:
    name = "nohooks"
''')


@pytest.fixture
def bad_file(tmp_path):
    p = tmp_path / "bad_offline.py"
    p.write_text(BAD)
    return str(p)


def _cli(args, out):
    cmd = [sys.executable, "-m", "dpcheck", "audit", *args, "--workers", "1", "--quiet", "--out", str(out),
           "--json", str(out / "r.json")]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(out), env=dict(os.environ, PYTHONPATH=str(ROOT)))
    checks = {}
    if (out / "r.json").exists():
        checks = {c["id"]: c for c in json.loads((out / "r.json").read_text())["checks"]}
    return proc.returncode, checks, proc.stderr


# ------------------------------------------------------------------ the interface
def test_builtins_implement_the_interface_and_draw_pair_then_triple():
    for priv in (OfflineGaussianPrivatizer(rho=1.0), OfflineLaplacePrivatizer(epsilon=1.0)):
        assert isinstance(priv, OfflineCountPrivatizer)
        assert priv.noise_variance(2) > 0 and priv.declare(2, 2, 1).sensitivity > 0
    g = OfflineGaussianPrivatizer(rho=2.0)
    pair, triple = np.full((3, 2, 2, 1), 50.0), np.full((3, 2, 2, 1, 2), 25.0)
    out = g.privatize(pair, triple, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    np.testing.assert_array_equal(out.noisy_visits, np.maximum(pair + rng.normal(0, g.sigma(2), pair.shape), 0))
    np.testing.assert_array_equal(out.noisy_transitions, np.maximum(triple + rng.normal(0, g.sigma(2), triple.shape), 0))


def test_example_loads_guarded_and_runs_inside_dp_apvi():
    p = load_offline_privatizer(GOOD, epsilon=1.0, beta=0.1)
    assert type(p).__name__ == "GuardedOfflinePrivatizer" and p.claim.epsilon == 1.0
    algo = DPAPVI(privatizer=p, delta=0.1)
    inst = tab_full(np.random.default_rng(0), S=2, A=2, H=3)
    counts = inst.sample_counts(2000, np.random.default_rng(1), 4)
    pc = algo.private_counts(counts, np.random.default_rng(2))           # the public release
    assert pc.width == p.width(3, 2, 2) and np.all(pc.noisy_visits == np.round(pc.noisy_visits))
    res = algo.run(counts, inst.mdp, np.random.default_rng(2))
    assert res.width == pc.width and res.config["mechanism"] == "geometric_counts"
    assert res.dp_event == p.dp_event(3)


def test_example_width_holds_and_variance_is_declared():
    """Lemma C.2's event for the geometric noise, and its variance 2 e^-a / (1 - e^-a)^2."""
    p = load_offline_privatizer(GOOD, epsilon=2.0, beta=0.1)
    H, S, A = 2, 2, 2
    out = p.privatize(np.full((4000, H, S, A), 1e4), np.full((4000, H, S, A, S), 1e4), np.random.default_rng(0))
    err = np.maximum(np.abs(out.noisy_visits - 1e4).reshape(4000, -1).max(1),
                     np.abs(out.noisy_transitions - 1e4).reshape(4000, -1).max(1))
    assert (err > p.width(H, S, A) / 2).mean() <= 0.1
    assert abs(np.var(out.noisy_transitions - 1e4) / p.noise_variance(H) - 1) < 0.05


def test_plugin_budget_name_and_width_exponent():
    pl = OfflinePlugin.load(GOOD, epsilon=0.5, beta=0.1)
    assert (pl.budget_name, pl.budget) == ("epsilon", 0.5)
    spec = APVISpec(mechanism=pl.label, budget=pl.budget, plugin=pl)
    assert not spec.gaussian and spec.claim(2.0).epsilon == 2.0
    # the geometric width is ~ log(.)/a with a = eps/4H: exponent -1 up to the ceiling
    assert abs(spec.width_exponent(3, 2, 2, [0.1, 0.3, 1.0, 3.0, 10.0]) + 1) < 0.1
    assert APVISpec(mechanism="gaussian").width_exponent(3, 2, 2, [1, 2]) == -0.5


def test_twin_fails_sensitivity_and_example_passes():
    for spec_, want in ((GOOD, "pass"), (TWIN, "fail")):
        pl = OfflinePlugin.load(spec_, epsilon=1.0, beta=0.1)
        spec = APVISpec(mechanism=pl.label, budget=pl.budget, plugin=pl)
        assert {c.id: c.verdict for c in lo.sensitivity_checks(spec, examples=20)} == {
            "whitebox.sensitivity": want, "whitebox.sensitivity.search": want}


# ------------------------------------------------------------------ misbehaving plug-ins
@pytest.mark.parametrize("cls, words", [
    ("Raises", "raised RuntimeError in privatize: boom"),
    ("WrongShape", "noisy_counts() returned shapes (1, 1, 2, 1)"),
    ("Nan", "returned NaN or infinity"),
    ("GlobalState", "different releases for the same rng seed"),
    ("IgnoresRng", "ignores the rng"),
])
def test_misbehaving_plugin_is_a_mechanism_error_naming_it(bad_file, cls, words):
    with pytest.raises(MechanismError) as e:
        load_offline_privatizer(f"{bad_file}:{cls}", epsilon=1.0)
    assert f"{bad_file}:{cls}" in str(e.value) and words in str(e.value)


def test_bad_width_and_missing_hooks(bad_file):
    with pytest.raises(MechanismError, match=r"BadWidth.*width\(2, 2, 1\) returned nan"):
        load_offline_privatizer(f"{bad_file}:BadWidth", epsilon=1.0)
    with pytest.raises(InputError, match="missing privatize, width, dp_event, claim, declare"):
        load_offline_privatizer(f"{bad_file}:NoHooks")
    with pytest.raises(MechanismError, match="constructor"):
        load_offline_privatizer(f"{bad_file}:Base", rho=1.0)          # a keyword it does not take


@pytest.mark.slow
@pytest.mark.parametrize("audit", ["offline_count_privatizer", "dp_apvi"])
def test_misbehaving_plugin_exits_2_with_one_line(bad_file, tmp_path, audit):
    rc, checks, err = _cli([audit, "--privatizer", f"{bad_file}:IgnoresRng", "--quick"], tmp_path)
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert rc == 2 and len(lines) == 1 and "IgnoresRng" in lines[0] and "ignores the rng" in lines[0], err


# ------------------------------------------------------------------ whole audits
@pytest.mark.slow
def test_example_passes_its_standalone_audit_and_twin_fails(tmp_path):
    rc, checks, err = _cli(["offline_count_privatizer", "--privatizer", GOOD, "--quick"], tmp_path)
    assert rc == 0, (err, {k: c["verdict"] for k, c in checks.items()})
    assert all(c["verdict"] == "pass" for c in checks.values())
    (tmp_path / "t").mkdir()
    rc, checks, err = _cli(["offline_count_privatizer", "--privatizer", TWIN, "--quick"], tmp_path / "t")
    assert rc == 1
    assert checks["privacy.blackbox"]["verdict"] == "fail" and checks["whitebox.sensitivity"]["verdict"] == "fail"
    assert checks["privacy.blackbox"]["measured"]["epsilon_lower_bound"] > 1.0


@pytest.mark.slow
@pytest.mark.xdist_group("dp_apvi_plugin")
def test_example_passes_dp_apvi_and_twin_fails_the_counts_black_box(tmp_path, quick_audit):
    # the example's run is that of tests/plugins/test_plugin_decisive.py[dp_apvi] (conftest's quick_audit, seed 0):
    # eps = 1 is dp_apvi's default (audits/dp_apvi.py Defaults), so no --epsilon 1 there
    from dpcheck.audits.dp_apvi import DPAPVIAudit
    assert DPAPVIAudit.defaults.epsilon == 1.0
    rc, rep = quick_audit("dp_apvi", "--privatizer", GOOD)
    checks = {c["id"]: c for c in rep["checks"]}
    verdicts = {k: c["verdict"] for k, c in checks.items()}
    assert rc == 0 and "inconclusive" not in verdicts.values(), verdicts
    # a correct plug-in: no check INCONCLUSIVE because it assumed the built-in's noise law
    for i in ("privacy.blackbox.counts", "whitebox.noise_scale", "whitebox.sensitivity", "regret.privacy_cost.budget"):
        assert verdicts[i] == "pass", (i, checks[i]["reason"])
    (tmp_path / "t").mkdir()
    rc, checks, err = _cli(["dp_apvi", "--privatizer", TWIN, "--epsilon", "1", "--quick"], tmp_path / "t")
    assert rc == 1 and checks["privacy.blackbox.counts"]["verdict"] == "fail", err


@pytest.mark.slow
def test_plugin_counts_target_on_a_users_dataset_watches_only_the_differing_counts_when_large():
    from dpcheck.algorithms.offline import OfflineDataset
    pl = OfflinePlugin.load(GOOD, epsilon=1.0, beta=0.1)
    spec = APVISpec(mechanism=pl.label, budget=pl.budget, plugin=pl)
    rng = np.random.default_rng(0)
    H, S, A, n = 2, 30, 5, 50                        # H S A (S + 1) = 9300 counts > 4096
    data = OfflineDataset.from_arrays(rng.integers(0, S, (1, n, H + 1)), rng.integers(0, A, (1, n, H)), S=S, A=A)
    tgt, det = lo.counts_target(spec, data=data, seed=1)
    out = tgt.sample(tgt.pairs[0][0], np.random.default_rng(2), 7)
    # the differing counts of n' and of the ntil the planner reads, and the 4 learned statistics
    assert out.shape[0] == 7 and out.shape[1] <= 2 * det["differing_coordinates"] + 4 and np.all(np.isfinite(out))


def test_plugin_without_declared_variance_is_inconclusive_on_the_scale_only(bad_file):
    """Base (Laplace noise, no noise_variance): nothing to compare the measured variance with -> INCONCLUSIVE
    saying so; the independence check needs no noise law and still decides."""
    pl = OfflinePlugin.load(f"{bad_file}:Base", epsilon=1.0, beta=0.1)
    spec = APVISpec(mechanism=pl.label, budget=pl.budget, plugin=pl)
    assert spec.declared_variance(3) is None
    scale, indep = lo.noise_calibration_checks(spec, runs=20_000, rng=np.random.default_rng(0), alpha=0.05)
    assert scale.verdict == "inconclusive" and "declares no noise_variance" in scale.reason
    assert indep.verdict == "pass"


def test_declarations_of_the_wrong_kind_are_the_plugins_error(tmp_path):
    # a claim that is not a Claim, a noise_variance below 0 or NaN, a dp_event that is not a DpEvent: an
    # "internal error: AttributeError / ValueError / TypeError" before, now a MechanismError naming the plug-in
    src = tmp_path / "decl.py"
    src.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from examples.offline_privatizer import GeometricCountPrivatizer as G
        class BadClaim(G):
            @property
            def claim(self): return 7
        class NegVar(G):
            def noise_variance(self, H): return -1.0
        class NaNVar(G):
            def noise_variance(self, H): return float("nan")
        class BadEvent(G):
            def dp_event(self, H): return "not an event"
        """))
    with pytest.raises(MechanismError, match=r"BadClaim.*its claim is a int, not a dpcheck.Claim"):
        OfflinePlugin.load(f"{src}:BadClaim", epsilon=1.0, beta=0.1)
    for cls, words in (("NegVar", "returned -1.0"), ("NaNVar", "returned nan")):
        pl = OfflinePlugin.load(f"{src}:{cls}", epsilon=1.0, beta=0.1)
        spec = APVISpec(mechanism=pl.label, budget=pl.budget, plugin=pl)
        with pytest.raises(MechanismError, match=rf"{cls}.*noise_variance\(3\) {words}"):
            spec.declared_variance(3)
    pl = OfflinePlugin.load(f"{src}:BadEvent", epsilon=1.0, beta=0.1)
    with pytest.raises(MechanismError, match="dp_event is a str, not a dp_accounting DpEvent"):
        lo.dp_event_check(APVISpec(mechanism=pl.label, budget=pl.budget, plugin=pl), 2, 2, 1)
