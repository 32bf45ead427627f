"""The noise the online privatizers draw against the scale they declare (whitebox.noise_scale /
whitebox.noise_independence, dpcheck.audits.lib.privatizers.drawn_noise) and the good event in the privatizer
audits (assumption.good_event). Each planted defect below passed every check the audits ran before
(mutation hunt 2): the white-box checks read the declaration, the drawn-noise checks ran at H = A = 1, K <= 16.

* central node scale without H (real eps = H eps)                   -> whitebox.noise_scale
* local message scale without H                                       -> whitebox.noise_scale
* tree levels >= 5 un-noised / node scale for L(min(K, 16)) levels    -> whitebox.noise_scale
* central node noise drawn per (h, s), shared by the actions          -> whitebox.noise_independence
* local reward noise a copy of the visit noise / shared by actions    -> whitebox.noise_independence
* the local server summing the raw rewards (R~ = R)                    -> whitebox.noise_scale
* the central E computed for one family (E / 3)                       -> assumption.good_event
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from dpcheck.algorithms.privatizers import CentralPrivatizer, LocalPrivatizer
from dpcheck.algorithms.privatizers.binary_mechanism import BinaryMechanism, TreeCounter
from dpcheck.algorithms.privatizers.noise import laplace
from dpcheck.audits.lib import privatizers as pa
from dpcheck.checks import FAIL, PASS

K = 1024          # 11 tree levels: enough for every planted defect, ~0.3 s per privatizer


def _law(p, kind, **kw):
    kw.setdefault("K", K)
    return {c.id: c for c in pa.noise_law_checks(p, kind=kind, claim_source="test", alpha=0.05, runs=48, seed=3,
                                                 **kw)}


# ------------------------------------------------------------------ planted defects (the hunt's mutants)
# plain functions on the built-in's own members (no zero-argument super()), so that a test can also plant them in
# the built-in class itself (monkeypatch), as the hunt did: a subclass outside dpcheck is audited as a plug-in
_TREE, _SPLIT = CentralPrivatizer.tree, LocalPrivatizer._split


def _tree_without_H(self, neighbouring="replacement"):
    """The node noise drawn with F L / eps (strict: 2 F L / eps): H left out, the declaration keeps it."""
    t = _TREE(self, neighbouring)
    return TreeCounter(horizon=t.horizon, node_scale=t.node_scale / self.H, sensitivity=t.sensitivity,
                       noise="laplace")


def _tree_capped_at_16(self, neighbouring="replacement"):
    """The drawn node scale computed for L(min(K, 16)) = 5 levels: real eps = eps L / 5."""
    t = _TREE(self, neighbouring)
    return TreeCounter(horizon=t.horizon, node_scale=self.scale_for(self.H, min(self.K, 16), self.families),
                       sensitivity=t.sensitivity, noise="laplace")


def _split_reward_is_visit(self, flat, runs):
    """One noise buffer for the two (h,s,a)-indexed families: R~ - R = N^ - N coordinate by coordinate."""
    v, t, r = _SPLIT(self, flat, runs)
    if r is not None:
        r[...] = v
    return v, t, r


class CentralScaleWithoutH(CentralPrivatizer):
    tree = _tree_without_H


class LocalScaleWithoutH(LocalPrivatizer):
    def message_noise(self, rng, runs, n=1, out=None):
        per_run = self.H * self.S * self.A * (self.S + (2 if self.rewards else 1))
        return laplace(rng, self.noise_scale() / self.H, (n, runs * per_run), out=out)


class HighLevelsNoNoise(BinaryMechanism):
    def _draw(self, i):
        noise = super()._draw(i)
        return noise if i < 5 else np.zeros_like(noise)


class CentralHighLevelsUnnoised(CentralPrivatizer):
    """Tree nodes of level >= 5 (32 episodes and beyond) released without noise."""

    def _start_noise(self, rng):
        nv, nt, nr = self._sizes()
        self._tree = HighLevelsNoNoise(self.tree(), (self.runs, nv + nt + nr), rng)


class CentralLevelsCappedAt16(CentralPrivatizer):
    tree = _tree_capped_at_16


@dataclass(frozen=True)
class PerStateCounter(TreeCounter):
    """Node noise drawn per (h, s) and broadcast over the actions (visits, transitions, rewards)."""
    HS: int = 1
    A: int = 1
    S: int = 1

    def draw(self, rng, shape, out=None):
        w = super().draw(rng, shape, out)
        lead, nv = w.shape[:-1], self.HS * self.A
        v = w[..., :nv].reshape(lead + (self.HS, self.A))
        v[...] = v[..., :1]
        t = w[..., nv:nv * (self.S + 1)].reshape(lead + (self.HS, self.A, self.S))
        t[...] = t[..., :1, :]
        if w.shape[-1] > nv * (self.S + 1):
            r = w[..., nv * (self.S + 1):].reshape(lead + (self.HS, self.A))
            r[...] = r[..., :1]
        return w


class CentralSharedAcrossActions(CentralPrivatizer):
    def _start_noise(self, rng):
        nv, nt, nr = self._sizes()
        t = self.tree()
        counter = PerStateCounter(t.horizon, t.node_scale, t.sensitivity, t.noise, False, self.H * self.S, self.A,
                                  self.S)
        self._tree = BinaryMechanism(counter, (self.runs, nv + nt + nr), rng)


class LocalRewardNoiseIsVisitNoise(LocalPrivatizer):
    _split = _split_reward_is_visit


class LocalSharedAcrossActions(LocalPrivatizer):
    def message_noise(self, rng, runs, n=1, out=None):
        w = super().message_noise(rng, runs, n, out)
        HS, HSA = self.H * self.S, self.H * self.S * self.A
        nv, nt = runs * HSA, runs * HSA * self.S
        v = w[:, :nv].reshape(n, runs * HS, self.A)
        v[...] = v[:, :, :1]
        t = w[:, nv:nv + nt].reshape(n, runs * HS, self.A, self.S)
        t[...] = t[:, :, :1]
        if self.rewards:
            r = w[:, nv + nt:].reshape(n, runs * HS, self.A)
            r[...] = r[:, :, :1]
        return w


class LocalServerSumsRawRewards(LocalPrivatizer):
    """message() is correct; the server adds the raw rewards to R~ instead of the messages' rho~."""

    def _ingest_sparse(self, sa, sas, rewards):
        self._pending = None
        v, t, r = self._split(self.message_noise(self.rng, self.runs)[0], self.runs)
        v.reshape(-1)[sa] += 1.0
        t.reshape(-1)[sas] += 1.0
        self._sum_v += v
        self._sum_t += t
        if self.rewards:
            self._sum_r.reshape(-1)[sa] += rewards
        return True


class CentralWidthForOneFamily(CentralPrivatizer):
    def _compute_width(self):
        return self.width_for(self.H, self.S, self.A, self.K, self.rewards, self.scale_for(self.H, self.K, 1),
                              self._width_rng())


# ------------------------------------------------------------------ the correct privatizers pass
@pytest.mark.parametrize("cls,kind", [(CentralPrivatizer, "central"), (LocalPrivatizer, "local")])
@pytest.mark.parametrize("rewards", [True, False])
def test_correct_privatizers_pass_the_drawn_noise_checks(cls, kind, rewards):
    c = _law(cls(1.0), kind, rewards=rewards)
    assert c["whitebox.noise_scale"].verdict == PASS, c["whitebox.noise_scale"].reason
    assert c["whitebox.noise_independence"].verdict == PASS, c["whitebox.noise_independence"].reason
    assert abs(c["whitebox.noise_scale"].measured["pooled_ratio"] - 1) < 0.02
    assert c["whitebox.noise_scale"].measured["epsilon_ratio_upper"] < 1.15


def test_release_times_are_closed_under_the_tree_decomposition():
    T = set(pa.release_times(4096).tolist())
    assert {1, 2, 4, 4096} <= T and all(t - (t & -t) in T | {0} for t in T)


# ------------------------------------------------------------------ the planted defects fail
@pytest.mark.parametrize("planted,kind,check", [
    (CentralScaleWithoutH, "central", "whitebox.noise_scale"),
    (LocalScaleWithoutH, "local", "whitebox.noise_scale"),
    (CentralHighLevelsUnnoised, "central", "whitebox.noise_scale"),
    (CentralLevelsCappedAt16, "central", "whitebox.noise_scale"),
    (CentralSharedAcrossActions, "central", "whitebox.noise_independence"),
    (LocalRewardNoiseIsVisitNoise, "local", "whitebox.noise_independence"),
    (LocalSharedAcrossActions, "local", "whitebox.noise_independence"),
    (LocalServerSumsRawRewards, "local", "whitebox.noise_scale"),
])
def test_planted_noise_defects_fail(planted, kind, check):
    c = _law(planted(1.0), kind)
    assert c[check].verdict == FAIL, c[check].reason


def test_levels_capped_at_16_need_a_tree_deeper_than_16():
    """The defect is invisible at K <= 16 (where the tree_noise_reuse check looks): the check must run deeper."""
    assert _law(CentralLevelsCappedAt16(1.0), "central", K=16)["whitebox.noise_scale"].verdict != FAIL
    assert _law(CentralLevelsCappedAt16(1.0), "central", K=64)["whitebox.noise_scale"].verdict == FAIL


def test_width_for_one_family_fails_the_good_event():
    c = {x.id: x for x in pa.assumption_checks(CentralWidthForOneFamily(1.0), runs=150, K=32,
                                               rng=np.random.default_rng(0), source="t")}
    assert c["assumption.good_event"].verdict == FAIL
    ok = {x.id: x for x in pa.assumption_checks(CentralPrivatizer(1.0), runs=150, K=32,
                                                rng=np.random.default_rng(0), source="t")}
    assert ok["assumption.good_event"].verdict == PASS


# ------------------------------------------------------------------ through the registered audits
def _run(name, **extra):
    from dpcheck.context import AuditContext, AuditOptions
    from dpcheck.registry import get
    ctx = AuditContext(name, AuditOptions(quick=True, seed=0, **extra))
    get(name).run(ctx)
    return {c.id: c.verdict for c in ctx.checks}


@pytest.mark.parametrize("name,method,planted,check", [
    ("central_privatizer", "tree", _tree_without_H, "whitebox.noise_scale"),
    ("local_privatizer", "_ingest_sparse", LocalServerSumsRawRewards._ingest_sparse, "whitebox.noise_scale"),
    ("central_privatizer", "_compute_width", CentralWidthForOneFamily._compute_width, "assumption.good_event"),
])
def test_privatizer_audits_catch_the_planted_defects(monkeypatch, name, method, planted, check):
    """The defect planted in the built-in class itself (as the hunt did: a subclass would be audited as a plug-in);
    the black boxes are skipped (H = 1: blind to these defects, and slow)."""
    from dpcheck.audits import privatizer_audits as pva
    cls = CentralPrivatizer if name == "central_privatizer" else LocalPrivatizer
    monkeypatch.setattr(cls, method, planted)
    monkeypatch.setattr(pva.OnlinePrivatizerAudit, "check_blackbox", lambda self, *a: None)
    v = _run(name)
    assert v[check] == FAIL, v
    assert v["whitebox.dp_event"] == v["whitebox.sensitivity"] == PASS      # what passed the defect before


@pytest.mark.slow
@pytest.mark.parametrize("privatizer,method,planted,check", [
    ("central", "tree", _tree_capped_at_16, "whitebox.noise_scale"),
    ("local", "_split", _split_reward_is_visit, "whitebox.noise_independence"),
])
def test_dp_ucbvi_privacy_section_catches_the_planted_defects(monkeypatch, privatizer, method, planted, check):
    from dpcheck.audits.dp_ucbvi import DPUCBVIAudit
    cls = CentralPrivatizer if privatizer == "central" else LocalPrivatizer
    monkeypatch.setattr(cls, method, planted)
    monkeypatch.setattr(DPUCBVIAudit, "assumptions", lambda self, *a: None)
    monkeypatch.setattr(DPUCBVIAudit, "regret", lambda self, *a: None)
    v = _run("dp_ucbvi", privatizer=privatizer, samples=20_000)
    assert v[check] == FAIL, v


class CentralWithoutNoisyFields(CentralPrivatizer):
    def release(self):
        from dataclasses import replace
        return replace(super().release(), noisy_visits=None, noisy_transitions=None)


def test_releases_without_noisy_counts_are_inconclusive_not_failed():
    c = _law(CentralWithoutNoisyFields(1.0), "central", K=64)
    assert {x.verdict for x in c.values()} == {"inconclusive"} and "noisy_visits" in c["whitebox.noise_scale"].reason
