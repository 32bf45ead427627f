"""Planted defects in the GFA learners (He & Zhou, arXiv 2605.07049) that passed the private_gfa audits
before: each caught by the check named after the broken premise, and the correct learner passing it.

* a declared sensitivity of one step (8 instead of 8H): whitebox.sensitivity (hypothesis search + climb);
* the last update a greedy argmax, outside the mechanism: whitebox.composition (mechanism calls vs updates);
* the same selection noise at every update: whitebox.composition (generator states of the calls);
* the best entry kept whenever it leads clearly (ahead by ln N / beta), whatever the mechanism returned: never
  at the audited temperature, so whitebox.composition's trace at decisive temperatures;
* the exponential mechanism at eps / Delta instead of eps / (2 Delta), in both select and log_probabilities:
  privacy.em_selection and privacy.selection_law (law computed by the check), and for a plug-in declaring
  that law, the law's own log-ratio on selection_pairs.
"""
import copy
import math

import numpy as np
import pytest

from dpcheck.algorithms.gfa import PrivateGeneralMDP, PrivateOutcomeRL, argmax_with_ties, gf3
from dpcheck.algorithms.gfa.selection import ExponentialMechanism
from dpcheck.audits.gfa_selection import selection_law_check
from dpcheck.audits.lib import gfa


def _agent(alg=1, cls=None, **kw):
    inst = gfa.default_instance(alg)
    if cls is None:
        return inst, gfa.make_agent(alg, inst.fclass, epsilon=1.0, delta=1e-5, B=1, eta=1.0, **kw)
    return inst, cls(inst.fclass, epsilon=1.0, delta=1e-5, B=1, eta=1.0, **kw)


# ----------------------------------------------------------------------------- M1: sensitivity of one step
def test_one_step_sensitivity_is_found_by_the_search():
    inst, ag = _agent(1)
    bad = copy.copy(ag)
    bad.sensitivity = 8.0                       # 8 per step, H = 3: the pair found moves the score by 10
    c = gfa.sensitivity_check(bad, gfa.public_init(ag, inst.mdp), examples=200, seed=0)
    assert c.verdict == "fail" and "given" in c.reason and c.measured["max_change"] > 8
    ok = gfa.sensitivity_check(ag, gfa.public_init(ag, inst.mdp), examples=200, seed=0)
    assert ok.verdict == "pass" and "(8H;" in ok.reason


# ----------------------------------------------------------------------------- M8: greedy last update
class _GreedyLast:
    """The last update of a run is a deterministic argmax of the scores once 64 episodes are in."""

    def run(self, env, K, rng, runs=1, **kw):
        self._i, self._M = 0, self.privacy(K).M
        return super().run(env, K, rng, runs, **kw)

    def _choose(self, stats, optimism, beta, rng):
        last = self._i == self._M - 1 and self._i * self.B >= 64
        self._i += 1
        return super()._choose(stats, optimism, math.inf if last else beta, rng)


class GreedyLast(_GreedyLast, PrivateGeneralMDP):
    pass


class GreedyLastOutcome(_GreedyLast, PrivateOutcomeRL):
    pass


@pytest.mark.parametrize("alg, cls", [(1, GreedyLast), (2, GreedyLastOutcome)])
def test_a_greedy_last_update_fails_the_composition(alg, cls):
    inst, bad = _agent(alg, cls)
    c = gfa.composition_check(bad, [16, 256], mdp=inst.mdp)
    assert c.verdict == "fail" and "255 selections for the 256 declared updates" in c.reason
    _, ag = _agent(alg)
    ok = gfa.composition_check(ag, [16, 256], mdp=inst.mdp)
    assert ok.verdict == "pass" and not ok.measured["premises_broken"]


class SwapsTheSelection(PrivateGeneralMDP):
    """Plays another entry than the mechanism returned (here the next one)."""

    def _choose(self, stats, optimism, beta, rng):
        return (super()._choose(stats, optimism, beta, rng) + 1) % self.fclass.N


def test_a_played_entry_the_mechanism_did_not_return_fails():
    inst, bad = _agent(1, SwapsTheSelection)
    c = gfa.composition_check(bad, [16], mdp=inst.mdp)
    assert c.verdict == "fail" and "the mechanism returned" in c.reason


class KeepsAClearLeader(PrivateGeneralMDP):
    """Plays the best entry whenever it leads the second by more than the mechanism's utility radius
    ln N / beta, whatever the mechanism returned: never fires at the audited temperature (the leads stay far
    below the radius there), so only the decisive-temperature trace sees it."""

    def _choose(self, stats, optimism, beta, rng):
        scores = self.score(stats, optimism)
        idx = self._select(scores, beta, rng)
        top2 = np.sort(scores, axis=1)[:, -2:]
        clear = (top2[:, 1] - top2[:, 0]) > math.log(scores.shape[1]) / beta
        return np.where(clear, np.argmax(scores, axis=1), idx)


def test_keeping_a_clear_leader_is_caught_at_decisive_temperatures():
    inst, ag = _agent(1)
    bad = copy.copy(ag)
    bad.__class__ = KeepsAClearLeader
    # at the declared temperature the override never fires: the trace there is clean
    assert all(not gfa.trace_updates(bad, inst.mdp, K, runs=8)["problems"] for K in (16, 256))
    c = gfa.composition_check(bad, [16, 256], mdp=inst.mdp)
    d = c.details["decisive_trace"]
    assert c.verdict == "fail" and "the mechanism returned" in c.reason and len(d["problems"]) >= 2
    ok = gfa.composition_check(ag, [16, 256], mdp=inst.mdp)
    d = ok.details["decisive_trace"]
    assert ok.verdict == "pass" and not d["problems"] and d["selections"] >= 7 * 64 * 64
    assert d["betas"][-1] == pytest.approx(64 * d["betas"][0]) and "played what the mechanism returned" in ok.reason


class RaisesWhenHot(ExponentialMechanism):
    """A user's mechanism that refuses temperatures far above any its declaration asks for."""

    limit = 1.0

    def select(self, scores, epsilon, sensitivity, rng):
        if self.temperature(epsilon, sensitivity) > self.limit:
            raise OverflowError("exp overflow")
        return super().select(scores, epsilon, sensitivity, rng)


def test_a_mechanism_that_cannot_run_hot_stops_the_decisive_sweep_without_failing():
    from dpcheck.algorithms.gfa.selection import load_selection_mechanism
    inst, ag = _agent(1)
    betas = gfa.decisive_trace(ag, inst.mdp)["betas"]
    mech = RaisesWhenHot()
    mech.limit = math.sqrt(betas[2] * betas[3])             # runs the first three temperatures, not the fourth
    user = copy.copy(ag)
    user.mechanism = load_selection_mechanism(mech)
    c = gfa.composition_check(user, [16], mdp=inst.mdp)
    d = c.details["decisive_trace"]
    assert c.verdict == "pass" and d["stopped"].startswith("stopped at beta") and "exp overflow" in d["stopped"]
    assert d["betas"] == pytest.approx(betas[:3]) and "stopped at beta" in c.reason


# ----------------------------------------------------------------------------- M5: noise reused
class ReusedNoise(PrivateGeneralMDP):
    """A selection generator re-made from one seed at every update: the same noise each time."""

    def _choose(self, stats, optimism, beta, rng):
        return super()._choose(stats, optimism, beta, np.random.default_rng(1234))


def test_noise_reused_across_updates_fails_the_composition():
    inst, bad = _agent(1, ReusedNoise)
    c = gfa.composition_check(bad, [16], mdp=inst.mdp)
    assert c.verdict == "fail" and "same state" in c.reason


# ----------------------------------------------------------------------------- M15: temperature eps / Delta
class HotExponential(ExponentialMechanism):
    """The exponential mechanism at eps / Delta, declared so (log_probabilities shares the temperature)."""

    @staticmethod
    def temperature(epsilon, sensitivity):
        return float(epsilon) / float(sensitivity)


def test_the_builtin_at_twice_the_temperature_fails_the_law(monkeypatch):
    _, ag = _agent(1)
    assert gfa.selection_check(ag, 1024, draws=50_000, seed=1).verdict == "pass"
    assert selection_law_check(ExponentialMechanism(), 1.0, 1.0, draws=50_000, alpha=0.05, seed=0).verdict == "pass"
    monkeypatch.setattr(ExponentialMechanism, "temperature", HotExponential.__dict__["temperature"])
    assert gfa.selection_check(ag, 1024, draws=50_000, seed=1).verdict == "fail"
    assert selection_law_check(ExponentialMechanism(), 1.0, 1.0, draws=50_000, alpha=0.05, seed=0).verdict == "fail"


def test_a_plugin_declaring_a_law_that_is_not_eps0_dp_fails():
    _, ag = _agent(1)
    bad = copy.copy(ag)
    bad.mechanism = HotExponential()            # draws match its declared law; the law itself is 2 eps0-DP
    c = gfa.selection_check(bad, 1024, draws=20_000, seed=1)
    assert c.verdict == "fail" and "not eps0-DP" in c.reason
    law = selection_law_check(HotExponential(), 1.0, 1.0, draws=20_000, alpha=0.05, seed=0)
    assert law.verdict == "fail" and law.measured["declared_law_log_ratio"] > 1.0


def test_a_call_that_draws_nothing_is_not_taken_for_reused_noise():
    # the recorder notes whether each call moved its generator: a repeated state after a call that drew nothing is
    # legitimate (whitebox.composition flags a repeat only after a call that drew)
    from dpcheck.algorithms.gfa.selection import RecordingMechanism, SelectionMechanism

    class ArgmaxWhenTied(SelectionMechanism):
        def select(self, scores, epsilon, sensitivity, rng):
            return np.argmax(np.asarray(scores), axis=-1)          # draws nothing

    rng = np.random.default_rng(0)
    quiet = RecordingMechanism(ArgmaxWhenTied())
    quiet.select(np.zeros((2, 3)), 1.0, 1.0, rng)
    quiet.select(np.zeros((2, 3)), 1.0, 1.0, rng)
    assert quiet.rng_drew == [False, False] and quiet.rng_states[0] == quiet.rng_states[1]
    drawing = RecordingMechanism(ExponentialMechanism())
    drawing.select(np.zeros((2, 3)), 1.0, 1.0, rng)
    assert drawing.rng_drew == [True]
