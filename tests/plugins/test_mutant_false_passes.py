"""Plug-ins that break their privacy claim in ways each check used to pass (a mutation hunt over the offline,
online tabular and function-approximation families). Every mutant below passed its audit before; each test
names the check that now catches it and, beside it, the correct twin that must still pass.

- offline counts: one noise draw shared by two counts (across states; a pair count and its last triple
  count), zero counts left unnoised, noise sized for H = 1 at every horizon with an honest DpEvent;
- DP-VAPVI's regression statistics: one draw shared by two releases, or copied across a vector;
- online count streams: a binary tree whose node noise is drawn once per level (B(3) - B(2) - B(1) = c3 - c1);
- LinOpt stream privatizers: each of the four trees calibrated to the whole budget, one Gaussian declared;
- GFA selection: keep the top 8 scores (stable ties), then the exponential mechanism.
"""
import math
import textwrap

import numpy as np
import pytest

from dpcheck.audits.lib import privatizers as pa

OFFLINE = textwrap.dedent('''
import math
import numpy as np
import dp_accounting
from dpcheck import Claim
from dpcheck.algorithms.privatizers import OfflineCountPrivatizer


class Honest(OfflineCountPrivatizer):
    name = "honest"

    def __init__(self, rho=1.0, beta=0.1):
        self.rho, self.beta = float(rho), float(beta)

    def _sd(self, H):
        return math.sqrt(2.0 * H / self.rho)

    def width(self, H, S, A):
        return 4.0 * math.sqrt(H * math.log(4.0 * H * S * S * A / self.beta) / self.rho)

    def noisy_counts(self, pair, triple, rng):
        H = pair.shape[1]
        return pair + rng.normal(0, self._sd(H), pair.shape), triple + rng.normal(0, self._sd(H), triple.shape)

    def noise_variance(self, H):
        return self._sd(H) ** 2

    def sensitivity(self, H):
        return math.sqrt(2.0 * H)

    def dp_event(self, H):
        fam = dp_accounting.GaussianDpEvent(self._sd(H) / math.sqrt(2.0 * H))
        return dp_accounting.ComposedDpEvent([fam, fam])

    @property
    def claim(self):
        return Claim(rho=self.rho, notion="zCDP", source="test")


class SharedAcrossStates(Honest):
    def noisy_counts(self, pair, triple, rng):
        R, H, S, A = pair.shape
        zt = rng.normal(0, self._sd(H), (R, H, 1, A, S))
        return pair + rng.normal(0, self._sd(H), pair.shape), triple + np.broadcast_to(zt, triple.shape)


class PairReusesLastTriple(Honest):
    def noisy_counts(self, pair, triple, rng):
        zt = rng.normal(0, self._sd(pair.shape[1]), triple.shape)
        return pair + zt[..., -1], triple + zt


class ZeroCountsUnnoised(Honest):
    def noisy_counts(self, pair, triple, rng):
        p, t = Honest.noisy_counts(self, pair, triple, rng)
        return np.where(pair > 0, p, 0.0), np.where(triple > 0, t, 0.0)


class ExactNtil(Honest):
    """Honest noisy counts reported, but the planner handed the exact counts."""
    def privatize(self, pair, triple, rng):
        out = Honest.privatize(self, pair, triple, rng)
        return type(out)(visits=np.asarray(pair, float).copy(), transitions=np.asarray(triple, float).copy(),
                         noisy_visits=out.noisy_visits, noisy_transitions=out.noisy_transitions, width=out.width)


class SizedForOneStep(Honest):
    def _sd(self, H):
        return math.sqrt(2.0 / self.rho)


class LiesInEvent(Honest):
    """Noise for H = 1 at every horizon, its true variance declared, and the honest horizon's DpEvent."""
    def noisy_counts(self, pair, triple, rng):
        sd = math.sqrt(2.0 / self.rho)
        return pair + rng.normal(0, sd, pair.shape), triple + rng.normal(0, sd, triple.shape)

    def noise_variance(self, H):
        return 2.0 / self.rho
''')


@pytest.fixture(scope="module")
def offline_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("mutants") / "offline_mutants.py"
    p.write_text(OFFLINE)
    return str(p)


def _offline_checks(path, cls):
    from dpcheck.audits.lib import offline as lo
    from dpcheck.audits.lib.offline import APVISpec, OfflinePlugin
    plugin = OfflinePlugin.load(f"{path}:{cls}", rho=1.0, beta=0.1)
    spec = APVISpec(mechanism=plugin.label, budget=plugin.budget, delta=0.1, plugin=plugin)
    out = lo.noise_calibration_checks(spec, runs=20_000, rng=np.random.default_rng(4), alpha=0.05)
    return {c.id: c for c in out}


# ------------------------------------------------------------------ the screen itself (known answers)
def test_correlation_screen_passes_independent_noise_and_fails_any_shared_draw():
    rng = np.random.default_rng(0)
    labels = [f"c{j}" for j in range(30)]
    for W in (rng.normal(size=(20_000, 30)), rng.laplace(size=(20_000, 30))):
        assert pa.correlation_screen(W, labels, alpha=0.05)["verdict"] == "pass"
        shared = W.copy()
        shared[:, 7] = -2.0 * shared[:, 23]                       # one draw, two coordinates
        sc = pa.correlation_screen(shared, labels, alpha=0.05)
        assert sc["verdict"] == "fail" and set(sc["worst"][0]["between"]) == {"c7", "c23"}
        half = W.copy()
        half[:, 3] = (W[:, 3] + W[:, 4]) / math.sqrt(2.0)        # correlation 0.71
        assert pa.correlation_screen(half, labels, alpha=0.05)["verdict"] == "fail"
    few = rng.normal(size=(300, 30))                              # too few runs to certify |corr| <= 0.1
    assert pa.correlation_screen(few, labels, alpha=0.05)["verdict"] == "unsure"


# ------------------------------------------------------------------ offline counts
@pytest.mark.parametrize("cls, check", [("SharedAcrossStates", "whitebox.noise_independence"),
                                        ("PairReusesLastTriple", "whitebox.noise_independence"),
                                        ("ZeroCountsUnnoised", "whitebox.noise_scale")])
def test_offline_noise_checks_catch_shared_draws_and_unnoised_zero_counts(offline_file, cls, check):
    honest = _offline_checks(offline_file, "Honest")
    assert {c.verdict for c in honest.values()} == {"pass"}
    assert _offline_checks(offline_file, cls)[check].verdict == "fail"


@pytest.mark.slow
def test_offline_count_privatizer_fails_noise_sized_for_one_step_on_its_dp_event(offline_file, tmp_path):
    from dpcheck.cli import main
    args = ["audit", "offline_count_privatizer", "--quick", "--workers", "1", "--set", "rho=1", "--quiet"]
    assert main(args + ["--privatizer", f"{offline_file}:Honest", "--out", str(tmp_path / "h")]) == 0
    assert main(args + ["--privatizer", f"{offline_file}:SizedForOneStep", "--out", str(tmp_path / "m")]) == 1
    import json
    rep = json.loads((tmp_path / "m" / "offline_count_privatizer.json").read_text())
    ev = next(c for c in rep["checks"] if c["id"] == "whitebox.dp_event")
    assert ev["verdict"] == "fail" and "H=3" in ev["reason"]



def test_offline_count_privatizer_fails_a_dp_event_that_describes_noise_not_drawn(offline_file, tmp_path):
    """Noise for H = 1 at every horizon with its true variance declared (so whitebox.noise_scale passes) and the
    horizon's honest DpEvent (so the PLD passes): every check passed, the H = 1 black box included."""
    from dpcheck.audits.lib.offline import OfflinePlugin
    from dpcheck.cli import main
    liar = OfflinePlugin.load(f"{offline_file}:LiesInEvent", rho=1.0, beta=0.1).make(1.0, 0.1)
    assert [pa.event_noise_finding(liar, H)["status"] for H in (1, 3)] == ["consistent", "inconsistent"]
    honest = OfflinePlugin.load(f"{offline_file}:Honest", rho=1.0, beta=0.1).make(1.0, 0.1)
    assert {pa.event_noise_finding(honest, H)["status"] for H in (1, 2, 3, 7)} == {"consistent"}
    args = ["audit", "offline_count_privatizer", "--quick", "--workers", "1", "--set", "rho=1", "--quiet"]
    assert main(args + ["--privatizer", f"{offline_file}:LiesInEvent", "--out", str(tmp_path)]) == 1
    import json
    rep = json.loads((tmp_path / "offline_count_privatizer.json").read_text())
    bad = {c["id"]: c for c in rep["checks"] if c["verdict"] != "pass"}
    assert list(bad) == ["whitebox.dp_event"] and "not drawn" in bad["whitebox.dp_event"]["reason"]


@pytest.mark.slow
def test_offline_plugin_black_box_watches_what_the_planner_reads(offline_file):
    """The counts black box read only the noisy n' a plug-in reports; a plug-in that hands the planner the exact
    counts passed it (dp_apvi then failed only through its policy black box, when that happened to leak)."""
    from dpcheck.audits.lib.offline import OfflinePlugin
    from dpcheck.blackbox import audit
    for cls, verdict in (("Honest", "pass"), ("ExactNtil", "fail")):
        priv = OfflinePlugin.load(f"{offline_file}:{cls}", rho=1.0, beta=0.1).make(1.0, 0.1)
        tgt, _ = pa.offline_privatizer_plugin_target(priv, H=1, seed=0, pilot=5_000)
        assert audit(tgt, samples=20_000, seed=1).verdict == verdict, cls


# ------------------------------------------------------------------ DP-VAPVI's regression statistics
def test_release_independence_catches_noise_shared_between_releases_or_coordinates():
    from dpcheck.audits.lib.offline_linear import release_independence_check
    rng = np.random.default_rng(1)
    runs, H = 20_000, 3
    noise = {"sigma_matrix": rng.normal(size=(runs, H, 3)), "beta_vector": rng.normal(size=(runs, H, 2)),
             "theta_vector": rng.normal(size=(runs, H, 2)), "lambda_matrix": rng.normal(size=(runs, H, 3)),
             "w_vector": rng.normal(size=(runs, H, 2))}
    assert release_independence_check(noise, runs=runs, alpha=0.05).verdict == "pass"
    gram = dict(noise, lambda_matrix=noise["sigma_matrix"].copy())                  # N2 = N1
    assert release_independence_check(gram, runs=runs, alpha=0.05).verdict == "fail"
    vec = dict(noise, w_vector=np.repeat(noise["w_vector"][..., :1], 2, axis=2))      # one draw per vector
    c = release_independence_check(vec, runs=runs, alpha=0.05)
    assert c.verdict == "fail" and "w_vector" in c.reason


# ------------------------------------------------------------------ online count streams
def _reuse_per_level_class():
    from dpcheck.algorithms.privatizers import BinaryMechanism, CentralPrivatizer

    class PerLevelTree(BinaryMechanism):
        """One noise vector per tree level, reused by every later node of that level: each release has a
        correct tree's law, and B(3) - B(2) - B(1) = c3 - c1 exactly."""

        def _draw(self, i):
            if not hasattr(self, "_lvl"):
                self._lvl = {}
            if i not in self._lvl:
                self._lvl[i] = self.counter.draw(self.rng, self.shape)
            self.last_noise = self._lvl[i]
            return self._lvl[i]

    class ReusePerLevel(CentralPrivatizer):
        name = "reuse_per_level"

        def _start_noise(self, rng):
            nv, nt, nr = self._sizes()
            self._tree = PerLevelTree(self.tree(), (self.runs, nv + nt + nr), rng)
    return ReusePerLevel


def test_stream_degeneracy_finds_node_noise_reused_per_level_and_spares_correct_streams():
    from dpcheck.algorithms.privatizers import load_privatizer
    from dpcheck.audits.lib.privatizers import stream_degeneracy
    for spec in ("central", "local"):
        assert stream_degeneracy(load_privatizer(spec, epsilon=1.0), seed=0) is None
    ev = stream_degeneracy(_reuse_per_level_class()(epsilon=1.0), seed=0)
    assert ev is not None and abs(ev["value_D"] - ev["value_D_prime"]) > 1e-3


# ------------------------------------------------------------------ GFA selection
def test_selection_black_box_catches_a_top_k_exponential_mechanism():
    from dpcheck.algorithms.gfa import SelectionMechanism
    from dpcheck.audits.lib import gfa

    class TopK(SelectionMechanism):
        """Keep the 8 best scores (stable order on ties), then the exponential mechanism among them."""
        name = "top_k"

        def select(self, scores, epsilon, sensitivity, rng):
            scores = np.asarray(scores, float)
            order = np.argsort(-scores, axis=1, kind="stable")[:, :8]
            top = np.take_along_axis(scores, order, axis=1) * epsilon / (2 * sensitivity)
            pick = np.argmax(top + rng.gumbel(size=top.shape), axis=1)
            return order[np.arange(len(order)), pick]

    c = gfa.selection_blackbox_check(TopK(), 1.0, 1.0, samples=20_000, seed=3)
    assert c.verdict == "fail"
    assert c.measured["epsilon_lower_bound"] > 3


def _gumbel_em(scores, epsilon, sensitivity, rng, keep=None):
    g = epsilon / (2.0 * sensitivity) * (scores - scores.max(axis=1, keepdims=True)) + rng.gumbel(size=scores.shape)
    return np.argmax(g if keep is None else np.where(keep, g, -np.inf), axis=1)


def _gap_mutants():
    from dpcheck.algorithms.gfa import SelectionMechanism

    class ArgmaxWhenFarAhead(SelectionMechanism):
        """The exact argmax once the leader is 2 Delta ahead ('no neighbour can change the winner')."""
        def select(self, scores, epsilon, sensitivity, rng):
            top2 = np.sort(scores, axis=1)[:, -2:]
            far = top2[:, 1] - top2[:, 0] > 2.0 * sensitivity
            return np.where(far, np.argmax(scores, axis=1), _gumbel_em(scores, epsilon, sensitivity, rng))

    class PrunedFar(SelectionMechanism):
        """Entries more than 8 Delta / eps below the max dropped ('their probability is below e^-4 anyway')."""
        def select(self, scores, epsilon, sensitivity, rng):
            keep = scores >= scores.max(axis=1, keepdims=True) - 8.0 * sensitivity / epsilon
            return _gumbel_em(scores, epsilon, sensitivity, rng, keep)

    class Top64(SelectionMechanism):
        """The exponential mechanism over the 64 best raw scores ('for speed on large classes')."""
        def select(self, scores, epsilon, sensitivity, rng):
            order = np.argsort(-scores, axis=1, kind="stable")[:, :64]
            top = np.take_along_axis(scores, order, axis=1)
            return order[np.arange(len(order)), _gumbel_em(top, epsilon, sensitivity, rng)]
    return {"far_ahead": ArgmaxWhenFarAhead, "pruned": PrunedFar, "top64": Top64}


@pytest.mark.parametrize("name", ["far_ahead", "pruned", "top64"])
def test_selection_black_box_sees_mechanisms_that_switch_on_large_gaps_or_truncate(name):
    """Each is the exponential mechanism on the close scores of the first four pairs (at most 64 entries, gaps up to
    4 Delta) and passed gfa_selection_mechanism; the staircase, the far leaders and 4N entries expose them."""
    from dpcheck.audits.lib import gfa
    c = gfa.selection_blackbox_check(_gap_mutants()[name](), 1.0, 1.0, samples=40_000, seed=3)
    assert c.verdict == "fail" and c.measured["epsilon_lower_bound"] > 2


# ------------------------------------------------------------------ LinOpt stream privatizers
def test_linopt_dp_event_holds_the_trees_drawn_not_only_the_declaration():
    import dp_accounting
    from dpcheck.algorithms.linear import Privatizer
    from dpcheck.algorithms.privatizers import TreeCounter
    from dpcheck.audits.lib import linopt as lib

    class WholeBudgetPerTree(Privatizer):
        """Each of the four trees with a tenth of the paper's node noise (the paper's accounting has a large
        slack), and the paper's DpEvent declared unchanged."""

        def trees(self, sizes, neighbouring="replacement"):
            return {c: TreeCounter(t.horizon, node_scale=t.node_scale / 10.0, sensitivity=t.sensitivity,
                                   noise="gaussian", symmetric=t.symmetric)
                    for c, t in super().trees(sizes, neighbouring).items()}

        def dp_event(self, sizes, neighbouring="replacement"):
            return dp_accounting.ComposedDpEvent([t.dp_event() for t in Privatizer.trees(self, sizes, neighbouring)
                                                  .values()])
    from dpcheck.algorithms.linear import lm2
    env = lm2()
    assert lib.dp_event_check(lib.LinOptSpec(epsilon=1.0, delta=0.1), env, 256).verdict == "pass"
    c = lib.dp_event_check(lib.LinOptSpec(epsilon=1.0, delta=0.1, privatizer_class=WholeBudgetPerTree), env, 256)
    assert c.verdict == "fail" and "trees" in c.reason


@pytest.mark.slow
def test_plugin_black_box_fails_a_tree_that_reuses_node_noise_per_level():
    """Before, the learned per-coordinate statistics chose K = 2 (no level used twice) and passed it at any budget;
    central_privatizer, dp_ucbvi and dp_nash_vi all said PASS."""
    from dpcheck.audit import ExecutionOptions
    cls = _reuse_per_level_class()
    p = cls(epsilon=1.0)
    template = pa.ClaimedTemplate(p, pa.claim_for_families(p, True), True)
    c = pa.plugin_blackbox(template, ExecutionOptions(seed=0), search="stream", samples=20_000)
    assert c.verdict == "fail" and "carries no noise" in c.reason
    assert c.details["degenerate_combination"]["K"] == 8
    # 4,000 of 4,000 vs 0 of 4,000, Clopper-Pearson at alpha/2 each: a certified bound, not an assertion
    assert 6 < c.measured["epsilon_lower_bound"] < 9
    # a claim above what 4,000 streams can certify: the exact leak still never lets the check PASS
    big = cls(epsilon=20.0)
    c = pa.plugin_blackbox(pa.ClaimedTemplate(big, pa.claim_for_families(big, True), True), ExecutionOptions(seed=0),
                           search="stream", samples=20_000)
    assert c.verdict != "pass" and "true epsilon is infinite" in c.reason


def test_a_tree_plugins_blind_release_pass_is_uninformative_as_the_builtins_is():
    """The loader's guard hides a plug-in's gdp_mu, so its blind-pair PASS stayed a plain PASS; the worst case's mu
    now comes from the Gaussian trees its noise is drawn from."""
    import os
    from dpcheck import accounting
    from dpcheck.algorithms.linear import LinearSizes, load_stream_privatizer
    from dpcheck.audits.lib.linopt import LinOptSpec
    from dpcheck.audits.lib.linopt.transcript import _worst_case_mu
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    good = os.path.join(root, "examples", "my_stream_privatizer.py") + ":AnalyticGaussianTrees"
    spec = LinOptSpec(plugin=good)
    priv = load_stream_privatizer(good, epsilon=1.0, delta=0.1)
    sizes = LinearSizes(64, 1, 2, 2)
    mu = _worst_case_mu(spec, priv, sizes)
    trees = priv.trees(sizes, "replacement")
    assert mu == pytest.approx(accounting.gaussian_mu((t.sensitivity, t.node_scale) for t in trees.values()))
    assert 0 < mu < math.inf


# ------------------------------------------------------------------ algorithm-side mutants (built-in privatizers)
def test_dp_apvi_dataflow_catches_a_fallback_decided_on_raw_counts(monkeypatch):
    """The uniform fallback decided on the raw n(s,a) <= E instead of ntil: at n = 10^4 every raw count is far above
    E, so datasets A and B took the same branch; where counts are near E they do not."""
    from dpcheck.algorithms.offline import DPAPVI, tab_full
    from dpcheck.audits.lib import offline as lo
    from dpcheck.audits.lib.offline import APVISpec
    inst = tab_full(np.random.default_rng(0), S=2, A=2, H=3)
    spec = APVISpec(mechanism="gaussian", budget=1.0, delta=0.1)
    assert lo.dataflow_check(spec, inst, n=10**4, runs=20, seed=3).verdict == "pass"
    real = DPAPVI.private_counts

    def leaky(self, counts, rng):
        out = real(self, counts, rng)
        E = out.width
        covered = counts.visits > E                                # the raw count decides the fallback
        return type(out)(visits=np.where(covered, np.maximum(out.visits, E + 1.0), 0.0),
                         transitions=np.where(covered[..., None], out.transitions, 0.0),
                         noisy_visits=out.noisy_visits, noisy_transitions=out.noisy_transitions, width=E)
    monkeypatch.setattr(DPAPVI, "private_counts", leaky)
    c = lo.dataflow_check(spec, inst, n=10**4, runs=20, seed=3)
    assert c.verdict == "fail" and str(c.details["n"][1]) in c.reason


def test_dp_ucbvi_dataflow_sees_a_planner_that_reads_the_privatizers_true_counts():
    from dpcheck.algorithms.online.ucbvi import DPUCBVI
    from dpcheck.audits.lib.ucbvi import AgentSpec
    from dpcheck.audits.lib.ucbvi.privacy import dataflow_check

    class TrueCountsBonus(DPUCBVI):
        """The bonus from the privatizer's true_counts() (documented for checkers only)."""

        def _estimates(self, counts):
            P, r, n = super()._estimates(counts)
            return P, r, np.asarray(self.privatizer.true_counts().visits, float) + counts.width / 2

    assert dataflow_check(AgentSpec(mode="practical"), seed=0).verdict == "pass"
    assert dataflow_check(AgentSpec(agent_class=TrueCountsBonus, mode="practical"), seed=0).verdict == "fail"


def test_dp_ucbvi_dataflow_compares_the_planned_q_not_only_the_actions():
    """A bonus floored at the raw count changes Q~ only where user 1 went (a state no other user visits): the
    actions sent to users 2..K coincide, and the action-only comparison passed it."""
    from dpcheck.algorithms.online.ucbvi import DPUCBVI
    from dpcheck.audits.lib.ucbvi import AgentSpec
    from dpcheck.audits.lib.ucbvi.privacy import dataflow_check

    class RawFloorBonus(DPUCBVI):
        def _estimates(self, counts):
            P, r, n = super()._estimates(counts)
            return P, r, np.maximum(n, np.asarray(self.privatizer.true_counts().visits, float))

    c = dataflow_check(AgentSpec(agent_class=RawFloorBonus, mode="practical"), seed=0)
    assert c.verdict == "fail" and c.details["differences"]["actions"] == 0 and c.details["differences"]["Q"] > 0


def test_dp_ucbvi_monotone_check_reads_a_batch_where_the_min_and_clip_act(monkeypatch):
    """In theory mode Q~ = H everywhere: an agent without the min with Q~^{k-1} and the clip at H held "in all
    cases". The practical batch exercises them; a theory batch alone is marked vacuous."""
    from dpcheck.algorithms.envs.generators import random_mdp
    from dpcheck.algorithms.online import ucbvi as U
    from dpcheck.audits.lib import ucbvi
    from dpcheck.audits.lib.ucbvi import AgentSpec
    env = random_mdp(3, 2, 3, np.random.default_rng(0), reward_noise="bernoulli")
    theory, practical = AgentSpec(mode="theory"), AgentSpec(mode="practical")

    def monotone(**kw):
        batch = ucbvi.monitored_run(theory, env, K=64, runs=20, seed=0)
        more = (ucbvi.monitored_run(practical, env, K=64, runs=20, seed=1),) if kw.get("practical") else ()
        cs = ucbvi.assumption_checks(theory, env, K=64, runs=20, seed=0, alpha=0.05, run=batch, monotone_runs=more)
        return next(c for c in cs if c.id == "assumption.monotone")
    alone = monotone()
    assert alone.verdict == "pass" and alone.details.get("qualifier") == "vacuous"
    assert monotone(practical=True).verdict == "pass" and monotone(practical=True).details.get("qualifier") is None
    orig = U.backward_induction
    monkeypatch.setattr(U, "backward_induction",
                        lambda P, r, n, Q_previous, **kw: orig(P, r, n, np.full_like(Q_previous, np.inf), **kw))
    assert monotone(practical=True).verdict == "fail"


# ------------------------------------------------------------------ tree noise scale
def test_tree_noise_reuse_fails_node_noise_below_the_declared_scale():
    """A Central privatizer whose tree draws 0.95 x the node scale it declares (and accounts in its DpEvent and width,
    eps x 1.05): the covariance z test stays under its threshold 6 at 1,000 runs and passed it."""
    from dpcheck.algorithms.privatizers import BinaryMechanism, CentralPrivatizer, TreeCounter

    class DrawsLess(CentralPrivatizer):
        def _start_noise(self, rng):
            nv, nt, nr = self._sizes()
            t = self.tree()
            self._tree = BinaryMechanism(TreeCounter(horizon=t.horizon, node_scale=0.95 * t.node_scale,
                                                     sensitivity=t.sensitivity, noise="laplace"),
                                         (self.runs, nv + nt + nr), rng)
    ok = pa.tree_reuse_check(CentralPrivatizer(epsilon=1.0), runs=1_000, seed=0, alpha=0.002)
    bad = pa.tree_reuse_check(DrawsLess(epsilon=1.0), runs=1_000, seed=0, alpha=0.002)
    assert ok.verdict == "pass" and bad.verdict == "fail" and "less noise than declared" in bad.reason
    assert bad.measured["max_z"] < 6 and abs(bad.measured["node_variance_ratio"] - 0.9025) < 0.01


# ------------------------------------------------------------------ GFA learners: a batch schedule decided on data
@pytest.mark.parametrize("mixin, verdict", [("CorrectLoopMixin", "pass"), ("AdaptiveBatchEndMixin", "fail")])
def test_batched_jdp_black_box_sees_a_batch_that_ends_on_the_returns(mixin, verdict):
    """Algorithm 1 with a batch ended early once 5 of its episodes returned 0: at B = 1 the rule cannot fire, and
    private_gfa passed it; with batches of 6 over 12 users, user 6 gets f^(2) under U and f^(1) under U'."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _gfa_learner_mutants as LM
    from dpcheck.audit import ExecutionOptions
    from dpcheck.audits.lib import gfa
    inst = gfa.default_instance(1)
    agent = gfa.make_agent(1, inst.fclass, epsilon=1.0, delta=1e-5, B=6, eta=1.0, s1=inst.s1,
                           agent_class=LM.make(getattr(LM, mixin), 1))
    c = gfa.jdp_blackbox_check(agent, inst.mdp, ExecutionOptions(workers=1), K=12, samples=20_000)
    assert c.verdict == verdict
    if verdict == "fail":
        assert c.measured["epsilon_lower_bound"] > 2


@pytest.mark.parametrize("alg", [1, 2])
def test_composition_counts_the_selections_a_learner_makes_around_its_mechanism(alg):
    """A redraw at every episode of a batch, through the sampler called directly: whitebox.composition counted the
    draws made through the learner's mechanism (M = 5 at K = 1024) and passed; the entry played changed ~1,000 times."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _gfa_learner_mutants as LM
    from dpcheck.algorithms.gfa import coverability
    from dpcheck.audits.lib import gfa
    inst = gfa.default_instance(alg)
    B, eta, _ = gfa.tuned(alg, inst, 1024, 1.0, delta=1e-5, tuning="theory",
                          C_cov=coverability(inst.mdp, inst.fclass).value)

    def check(mixin):
        agent = gfa.make_agent(alg, inst.fclass, epsilon=1.0, delta=1e-5, B=B, eta=eta, s1=inst.s1,
                               agent_class=LM.make(getattr(LM, mixin), alg))
        return gfa.composition_check(agent, [1024], mdp=inst.mdp)
    assert check("CorrectLoopMixin").verdict == "pass"
    bad = check("EveryEpisodeResampleMixin")
    assert bad.verdict == "fail" and bad.details["grid"][0]["M"] > 500


# ------------------------------------------------------------------ regression privatizers: the event and the noise
def _regression_mutants():
    """The documented example (examples/regression_privatizer.py) with an even split, and two planted twins."""
    import os
    import sys
    import dp_accounting
    from dpcheck.algorithms.offline import gaussian_dp_event
    from dpcheck.audits.lib.offline_linear import STATS
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from examples.regression_privatizer import SplitBudgetGaussian

    def Honest():
        return SplitBudgetGaussian(1.0, weights={k: 1.0 / len(STATS) for k in STATS})

    class FourStatistics(SplitBudgetGaussian):
        """The budget split over 4 statistics per step, the 5th drawn anyway: its DpEvent lists the 4 (rho 1.25)."""
        def step_budget(self, H):
            return {k: self.rho / (4.0 * H) for k in STATS}

        def dp_event(self, H, sensitivities):
            s = self.noise_stds(H, sensitivities)
            return dp_accounting.ComposedDpEvent([dp_accounting.GaussianDpEvent(s[k] / sensitivities[k])
                                                  for _ in range(H) for k in STATS[:4]])

    class HalfTheSteps(SplitBudgetGaussian):
        """rho0 = rho / (5 ceil(H/2)) and an event over ceil(H/2) steps (rho 1.5 at H = 3)."""
        def step_budget(self, H):
            return {k: self.rho / (5.0 * math.ceil(H / 2)) for k in STATS}

        def dp_event(self, H, sensitivities):
            return gaussian_dp_event(self.noise_stds(H, sensitivities), sensitivities, math.ceil(H / 2))
    return Honest, FourStatistics, HalfTheSteps


def test_a_regression_privatizers_event_must_account_for_every_release_it_draws():
    """Both mutants passed offline_regression_privatizer and dp_vapvi: their PLD is within the claim, their stds are
    the ones drawn, and the black box cannot resolve 1.25-1.5 x rho."""
    from dpcheck.audits.lib import offline_linear as ol
    honest, four, half = (c() for c in _regression_mutants())
    sens = ol.standalone_sensitivities(3)
    assert ol.event_noise_finding(honest, 3, sens)["status"] == "consistent"
    for mutant, rho in ((four, 1.25), (half, 1.5)):
        f = ol.event_noise_finding(mutant, 3, sens)
        assert f["status"] == "inconsistent" and f["rho_drawn"] == pytest.approx(rho * f["rho_event"], rel=1e-9)


# ------------------------------------------------------------------ DP-APVI's own Gaussian: law and data size
@pytest.mark.parametrize("bug", ["uniform", "laplace", "shrinks_with_n"])
def test_offline_noise_scale_checks_the_law_and_a_large_dataset(monkeypatch, bug):
    """Uniform or Laplace noise of the right variance, or noise whose scale shrinks like sqrt(2000 / n): every check
    of dp_apvi passed the first and the last (the counts black box reads a statistic linear in n', the noise was
    drawn at ~300 trajectories only)."""
    from dpcheck.algorithms.privatizers import offline as po
    from dpcheck.audits.lib import offline as lo
    from dpcheck.audits.lib.offline import APVISpec
    spec = APVISpec(mechanism="gaussian", budget=1.0, delta=0.1)

    def scale_check():
        cs = lo.noise_calibration_checks(spec, runs=lo.CALIBRATION_RUNS, rng=np.random.default_rng(4), alpha=0.05 / 23)
        return next(c for c in cs if c.id == "whitebox.noise_scale")
    assert scale_check().verdict == "pass"
    orig = po.OfflineGaussianPrivatizer.noisy_counts

    def noisy_counts(self, pair, triple, rng):
        p2, t2 = orig(self, pair, triple, rng)
        sd = math.sqrt(2.0 * pair.shape[1] / self.rho)
        if bug == "uniform":
            a = math.sqrt(3.0) * sd
            return pair + rng.uniform(-a, a, pair.shape), triple + rng.uniform(-a, a, triple.shape)
        if bug == "laplace":
            return pair + rng.laplace(0, sd / math.sqrt(2), pair.shape), triple + rng.laplace(0, sd / math.sqrt(2), triple.shape)
        n = np.asarray(pair, float)[:, 0].sum(axis=(-1, -2))
        f = np.minimum(1.0, np.sqrt(2000.0 / np.maximum(n, 1.0)))
        return pair + f[:, None, None, None] * (p2 - pair), triple + f[:, None, None, None, None] * (t2 - triple)
    monkeypatch.setattr(po.OfflineGaussianPrivatizer, "noisy_counts", noisy_counts)
    c = scale_check()
    assert c.verdict == "fail"
    assert ("law" in c.reason) == (bug != "shrinks_with_n")
