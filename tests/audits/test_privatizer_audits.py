"""The privatizer audits, and the planted defects each is meant to catch (issue #3 item 7).

Defects are subclasses injected into the same audit functions the registered audits run:
* the tree without the split of eps over its L levels      -> privacy.blackbox, whitebox.dp_event, whitebox.sensitivity
* fresh node noise at every release                          -> whitebox.tree_noise_reuse
* the Local privatizer with Laplace scale 1/eps, not 3H/eps  -> privacy.blackbox, whitebox.dp_event
* a projection that ignores nonnegativity                    -> assumption.valid_transition
* an E smaller than the noise can honour                     -> assumption.count_error
* offline noise drawn for H = 1 at every horizon             -> whitebox.noise_scale (offline_gaussian/laplace)
"""
import numpy as np
import pytest

from dpcheck.algorithms.privatizers import CentralPrivatizer, LocalPrivatizer, OfflineLaplacePrivatizer, PrivateCounts
from dpcheck.algorithms.privatizers.binary_mechanism import BinaryMechanism, release_nodes
from dpcheck.audits.lib import privatizers as ap
from dpcheck.blackbox import audit
from dpcheck.checks import FAIL, PASS

SAMPLES = 200_000


# ------------------------------------------------------------------ planted defects
class NoLevelSplit(CentralPrivatizer):
    """Defect: per-node scale F H / eps -- eps' = eps / (F H), forgetting the L tree levels."""

    def node_scale(self):
        return self.sensitivity_factor * self.families * self.H / self.epsilon


class FreshNoiseTree(BinaryMechanism):
    def release(self):
        out = self.exact()
        for _ in release_nodes(self.t):
            out = out + self.counter.draw(self.rng, self.shape)
        return out


class FreshNoiseCentral(CentralPrivatizer):
    """Defect: noise redrawn at every release (the Chowdhury & Zhou shortcut, docs/derivations.md#readings)."""

    def _start_noise(self, rng):
        nv, nt, nr = self._sizes()
        self._tree = FreshNoiseTree(self.tree(), (self.runs, nv + nt + nr), rng)


class UnscaledLocal(LocalPrivatizer):
    """Defect: Laplace scale 1/eps instead of 3H/eps (6H/eps strict)."""

    def noise_scale(self):
        return 1.0 / self.epsilon


class NegativeProjection(CentralPrivatizer):
    """Defect: post-processing without x >= 0 (shift y evenly into the sum band)."""

    def release(self):
        nv, nt, rw = self._noisy_counts()
        E = self.width
        total = nt.sum(-1)
        target = np.clip(total, nv - E / 4, nv + E / 4)
        x = nt + ((target - total) / self.S)[..., None] + E / (2 * self.S)
        return PrivateCounts(visits=x.sum(-1), transitions=x, rewards=rw, noisy_visits=nv,
                             noisy_transitions=nt, width=E)


class NarrowWidth(CentralPrivatizer):
    """Defect: E declared 20x smaller than the rigorous width."""

    def _compute_width(self):
        return super()._compute_width() / 20


# ------------------------------------------------------------------ black box
@pytest.mark.slow
def test_central_strict_passes_and_is_reasonably_tight():
    r = audit(ap.central_target(CentralPrivatizer(1.0)), samples=SAMPLES, seed=1)
    assert r.verdict == PASS
    assert 0.4 < r.epsilon_lower_bound <= 1.0


@pytest.mark.slow
def test_central_paper_calibration_is_only_2eps_under_replacement():
    """docs/derivations.md#neighbouring-relation: the paper's scale certifies 2 eps under replacement; the black-box bound exceeds eps."""
    r = audit(ap.central_target(CentralPrivatizer(1.0, calibration="paper")), samples=SAMPLES, seed=1)
    assert r.verdict == FAIL and 1.0 < r.epsilon_lower_bound <= 2.0


@pytest.mark.slow
def test_no_level_split_is_caught_black_box_and_white_box():
    bad = NoLevelSplit(1.0)
    r = audit(ap.central_target(bad, search=False), samples=SAMPLES, seed=2)
    assert r.verdict == FAIL and r.epsilon_lower_bound > 1.2
    q = NoLevelSplit(1.0).start(1, 2, 3, 2, 6, np.random.default_rng(0))
    assert ap.dp_event_check(q.dp_event(), q.claim).verdict == FAIL          # eps = L = 3
    assert ap.sensitivity_check(bad, kind="central", claim=q.claim, examples=30).verdict == FAIL


@pytest.mark.slow
def test_local_strict_passes_tightly_and_unscaled_local_fails():
    r = audit(ap.local_target(LocalPrivatizer(1.0)), samples=SAMPLES, seed=3)
    assert r.verdict == PASS and r.epsilon_lower_bound > 0.75
    bad = audit(ap.local_target(UnscaledLocal(1.0), search=False), samples=SAMPLES, seed=3)
    assert bad.verdict == FAIL and bad.epsilon_lower_bound > 2.0
    q = UnscaledLocal(1.0).start(1, 2, 3, 2, 6, np.random.default_rng(0))
    assert ap.dp_event_check(q.dp_event(), q.claim).verdict == FAIL


def test_offline_laplace_black_box():
    r = audit(ap.offline_target(OfflineLaplacePrivatizer(1.0), gaussian=False), samples=SAMPLES, seed=4)
    assert r.verdict == PASS and r.epsilon_lower_bound > 0.7


# ------------------------------------------------------------------ white box
def test_sensitivity_search_finds_the_replacement_worst_case():
    """Lemma 5.1's sensitivity: per family the true node vectors move by <= 2 H L, attained by the worst-case pair."""
    p = CentralPrivatizer(1.0)
    res = ap.sensitivity_search(p, kind="central", H=2, S=3, A=2, K=6, examples=40)
    L = 3
    assert max(res["max_distance"]) <= 2 * 2 * L
    assert res["worst_pair_distance"] == [2 * 2 * L] * 3
    strict = ap.sensitivity_check(p, kind="central", claim=p.claim, examples=30)
    assert strict.verdict == PASS and strict.measured["epsilon_realised"] == pytest.approx(1.0)
    paper = CentralPrivatizer(1.0, calibration="paper")
    chk = ap.sensitivity_check(paper, kind="central", claim=paper.claim, examples=30)
    assert chk.verdict == FAIL
    assert chk.measured["epsilon_realised"] == pytest.approx(2.0)
    assert chk.measured["epsilon_realised_add_remove"] == pytest.approx(1.0)


def test_local_sensitivity_and_games():
    p = LocalPrivatizer(1.0)
    claim = LocalPrivatizer(1.0).start(1, 1, 2, 1, 1, np.random.default_rng(0), rewards=False).claim
    chk = ap.sensitivity_check(p, kind="local", claim=claim, rewards=False, examples=30)
    assert chk.verdict == PASS and chk.measured["epsilon_realised"] == pytest.approx(1.0)   # 2 families x 2H / 4H


def test_dp_event_check_for_zcdp_claims():
    from dpcheck.algorithms.privatizers import OfflineGaussianPrivatizer
    g = OfflineGaussianPrivatizer(rho=0.5)
    assert ap.dp_event_check(g.dp_event(3), g.claim).verdict == PASS
    loose = OfflineGaussianPrivatizer(rho=0.5)
    loose.sigma = lambda H: np.sqrt(2 * H / 0.5) / 2                 # defect: noise 2x too small
    assert ap.dp_event_check(loose.dp_event(3), loose.claim).verdict == FAIL


def test_fresh_noise_defect_is_caught_by_the_reuse_check():
    assert ap.tree_reuse_check(CentralPrivatizer(1.0), runs=1500, seed=1).verdict == PASS
    chk = ap.tree_reuse_check(FreshNoiseCentral(1.0), runs=1500, seed=1)
    assert chk.verdict == FAIL and chk.measured["max_z"] > 20


# ------------------------------------------------------------------ Assumption 3.1
def _by_id(checks):
    return {c.id: c for c in checks}


def test_assumption_checks_pass_for_correct_privatizers():
    for p in (CentralPrivatizer(1.0), LocalPrivatizer(1.0)):
        c = _by_id(ap.assumption_checks(p, runs=150, K=32, rng=np.random.default_rng(0), source="test"))
        assert [c[k].verdict for k in ("assumption.count_error", "assumption.sum_consistency",
                                       "assumption.no_underestimation", "assumption.valid_transition")] == [PASS] * 4
        assert c["assumption.count_error"].claim["source"] == "test"


def test_narrow_width_fails_the_count_error_check():
    c = _by_id(ap.assumption_checks(NarrowWidth(1.0), runs=150, K=32, rng=np.random.default_rng(0), source="t"))
    assert c["assumption.count_error"].verdict == FAIL


def test_projection_without_nonnegativity_fails_valid_transition():
    c = _by_id(ap.assumption_checks(NegativeProjection(5.0, width_mode="nominal"), runs=150, K=32,
                                    rng=np.random.default_rng(0), source="t"))
    assert c["assumption.valid_transition"].verdict == FAIL
    assert c["assumption.valid_transition"].details["counterexample"] is not None


# ------------------------------------------------------------------ registered audits
def test_registered():
    from dpcheck.registry import load
    reg = load()
    for name in ("central_privatizer", "local_privatizer", "offline_gaussian_privatizer", "offline_laplace_privatizer"):
        assert name in reg


@pytest.mark.slow
@pytest.mark.parametrize("name,extra,expected", [
    ("central_privatizer", {}, PASS), ("local_privatizer", {}, PASS),
    ("central_privatizer", {"calibration": "paper"}, FAIL),
    ("offline_gaussian_privatizer", {}, PASS), ("offline_laplace_privatizer", {}, PASS),
    ("local_privatizer", {"games": "1"}, PASS)])
def test_registered_audits_run_end_to_end(name, extra, expected):
    from dpcheck.context import AuditContext, AuditOptions
    from dpcheck.registry import get
    ctx = AuditContext(name, AuditOptions(quick=True, samples=100_000, extra=extra))
    get(name).run(ctx)
    verdicts = {c.id: c.verdict for c in ctx.checks}
    if expected == PASS:
        assert all(v == PASS for v in verdicts.values()), verdicts
    else:
        assert verdicts["whitebox.dp_event"] == FAIL and verdicts["whitebox.sensitivity"] == FAIL
    for c in ctx.checks:
        assert c.claim.get("source")


# ------------------------------------------------------------------ review (issue #3): what the planner reads
class RawPlannerCounts(CentralPrivatizer):
    """Defect in a user privatizer: honest noisy_* fields, but the counts the PLANNER reads (visits,
    transitions) are post-processed RAW counts. Auditing only the self-reported N^ misses it."""

    def release(self):
        pc = super().release()
        from dpcheck.algorithms.privatizers.projection import post_process
        tc = self.true_counts()
        raw = post_process(tc.transitions, tc.visits, self.width)
        return PrivateCounts(visits=raw.visits, transitions=raw.transitions, rewards=pc.rewards,
                             noisy_visits=pc.noisy_visits, noisy_transitions=pc.noisy_transitions, width=pc.width)


@pytest.mark.slow
def test_planner_view_audit_catches_raw_counts_behind_honest_noisy_fields():
    honest_view = audit(ap.central_target(RawPlannerCounts(1.0), search=False), samples=50_000, seed=4)
    assert honest_view.verdict == PASS                       # the self-reported N^ look fine ...
    planner = audit(ap.central_target(RawPlannerCounts(1.0), view="planner"), samples=50_000, seed=4)
    assert planner.verdict == FAIL and planner.epsilon_lower_bound > 3   # ... what the planner reads is not
    ok = audit(ap.central_target(CentralPrivatizer(1.0), view="planner"), samples=50_000, seed=4)
    assert ok.verdict == PASS


@pytest.mark.slow
def test_user_privatizer_audit_sees_the_planner_view(tmp_path):
    """For a user's class run_online audits every field of the release (N~, R~ and N^) black box
    (plugin_stream_search): a raw count behind honest noisy_* fields fails privacy.blackbox."""
    from dpcheck.context import AuditContext, AuditOptions
    from dpcheck.registry import get
    f = tmp_path / "rawplanner.py"
    import inspect
    f.write_text("import numpy as np\nfrom dpcheck.algorithms.privatizers import CentralPrivatizer, PrivateCounts\n\n"
                 + inspect.getsource(RawPlannerCounts))
    ctx = AuditContext("central_privatizer", AuditOptions(quick=True, samples=30_000,
                                                          privatizer=f"{f}:RawPlannerCounts"))
    get("central_privatizer").run(ctx)
    verdicts = {c.id: c.verdict for c in ctx.checks}
    assert verdicts["privacy.blackbox"] == FAIL
    bb = next(c for c in ctx.checks if c.id == "privacy.blackbox")
    assert bb.measured["epsilon_lower_bound"] > 3 and "planner" in bb.details["search"][0]["statistic"]
    assert "whitebox.sensitivity" not in verdicts and "whitebox.tree_noise_reuse" not in verdicts


def test_monitor_without_noisy_counts_does_not_fail_no_underestimation():
    """Assumption 3.1's no-underestimation item is claimed on the good event |N^ - N| <= E/4 only. A release
    without N^ (noisy_*) leaves that event unobservable: an underestimate is then inconclusive, while with
    N^ inside the good event it fails."""
    from types import SimpleNamespace
    from dpcheck.audits.lib.tabular import CountAssumptionMonitor

    N = np.full((3, 1, 2, 1), 5.0)
    true = SimpleNamespace(visits=N, transitions=np.stack([N / 2, N / 2], axis=-1), rewards=None)
    low = N - 1.0                                       # underestimates by 1 < E
    rel = SimpleNamespace(visits=low, transitions=np.stack([low / 2, low / 2], axis=-1), rewards=None)
    mon = CountAssumptionMonitor(3, 8.0, source="test", has_rewards=False)
    mon.update(rel, true)
    c = {c.id: c for c in mon.checks(beta=0.1, alpha=0.05)}["assumption.no_underestimation"]
    assert c.verdict == "inconclusive" and "unobservable" in c.reason
    rel.noisy_visits, rel.noisy_transitions = N, true.transitions        # N^ = N: inside the good event
    mon = CountAssumptionMonitor(3, 8.0, source="test", has_rewards=False)
    mon.update(rel, true)
    c = {c.id: c for c in mon.checks(beta=0.1, alpha=0.05)}["assumption.no_underestimation"]
    assert c.verdict == "fail"


# ------------------------------------------------------------------ offline privatizers: the noise drawn at H > 1
from dpcheck.algorithms.privatizers.offline import OfflineGaussianPrivatizer  # noqa: E402


class NoiseForOneStep(OfflineGaussianPrivatizer):
    """Defect: the noise std is sigma(1) = sqrt(2/rho) at every horizon (declared sigma(H), DpEvent and width
    unchanged): 3 rho-zCDP at H = 3. The black box and the DpEvent run at H = 1, the sensitivity check reads the
    declared sigma: only a check of the noise drawn at H > 1 sees it."""

    def _noise(self, rng, shape, H):
        return rng.normal(0.0, self.sigma(1), size=shape)


class LaplaceForOneStep(OfflineLaplacePrivatizer):
    """The same defect in the Laplace privatizer: scale 4/eps instead of 4H/eps."""

    def _noise(self, rng, shape, H):
        return rng.laplace(0.0, self.scale(1), size=shape)


@pytest.mark.parametrize("name,planted,expected", [
    ("offline_gaussian_privatizer", None, PASS), ("offline_gaussian_privatizer", NoiseForOneStep, FAIL),
    ("offline_laplace_privatizer", None, PASS), ("offline_laplace_privatizer", LaplaceForOneStep, FAIL)])
def test_offline_privatizer_audits_check_the_noise_drawn_at_H_3(monkeypatch, name, planted, expected):
    from dpcheck.context import AuditContext, AuditOptions
    from dpcheck.registry import get
    from dpcheck.audits import privatizer_audits as pva
    cls = pva.OfflineGaussianPrivatizerAudit if "gaussian" in name else pva.OfflineLaplacePrivatizerAudit
    monkeypatch.setattr(cls, "check_blackbox", lambda self, priv: None)          # H = 1: blind to this defect
    if planted is not None:
        monkeypatch.setattr(cls, "privatizer", lambda self: planted(1.0))
    ctx = AuditContext(name, AuditOptions(quick=True, seed=0))
    get(name).run(ctx)
    v = {c.id: c.verdict for c in ctx.checks}
    assert v["whitebox.noise_scale"] == expected, v
    # what the audit ran before: all of it passes the planted privatizer
    assert v["whitebox.dp_event"] == v["whitebox.sensitivity"] == v["assumption.noise_bound"] == PASS
