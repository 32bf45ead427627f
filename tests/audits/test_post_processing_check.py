"""whitebox.post_processing (audits/lib/privatizers/post_processing.py): Lemma 5.4's conclusions on adversarial
good-event inputs fed through the privatizer's own release(). A shift of E/4 where the lemma needs E/2 passed every
statistical check (no true count of a short run reaches E/4); here it FAILs."""
import numpy as np
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.privatizers import CentralPrivatizer, LocalPrivatizer, PrivateCounts
from dpcheck.algorithms.privatizers.projection import post_process
from dpcheck.audits.lib.privatizers.post_processing import adversarial_inputs, post_processing_check
from dpcheck.checks import FAIL, PASS


class QuarterShift(CentralPrivatizer):
    """Defect: N~ shifted by E/4 in all (E/(4S) per s') instead of E/2: underestimates on the good event."""

    def post_processed(self, noisy_visits, noisy_transitions, rewards=None):
        E = self.width
        trans = post_process(noisy_transitions, noisy_visits, E).transitions - E / (4.0 * self.S)
        return PrivateCounts(visits=trans.sum(-1), transitions=trans, rewards=rewards, noisy_visits=noisy_visits,
                             noisy_transitions=noisy_transitions, width=E)


class OwnRelease(CentralPrivatizer):
    """Not a defect: a release() of its own cannot be fed chosen N^, and the check says so."""

    def release(self):
        nv, nt, rw = self._noisy_counts()
        pp = post_process(nt, nv, self.width)
        return PrivateCounts(visits=pp.visits, transitions=pp.transitions, rewards=rw, noisy_visits=nv,
                             noisy_transitions=nt, width=self.width)


def test_correct_privatizers_meet_the_lemma_on_every_corner():
    for p in (CentralPrivatizer(1.0), LocalPrivatizer(1.0), CentralPrivatizer(5.0)):
        c = post_processing_check(p)
        assert c.verdict == PASS and c.measured["violations"] == 0 and c.measured["cases"] > 2000


def test_a_shift_of_E_over_4_underestimates_and_fails():
    c = post_processing_check(QuarterShift(1.0))
    assert c.verdict == FAIL
    assert c.details["violations_by_conclusion"]["N~(s,a) < N(s,a)"] > 0
    assert c.details["first_violations"]["N~(s,a) < N(s,a)"]["pattern"]


def test_a_release_of_its_own_is_vacuous_not_a_pass_of_evidence():
    c = post_processing_check(OwnRelease(1.0))
    assert c.verdict == PASS and c.details.get("qualifier") == "vacuous"


def test_the_inputs_stay_in_the_good_event():
    Nv, Nt, dv, dt = adversarial_inputs(48, 2, 3, 2, 100.0, np.random.default_rng(0))
    assert np.all(np.abs(dv) <= 25.0) and np.all(np.abs(dt) <= 25.0) and np.array_equal(Nv, Nt.sum(-1))
    assert np.any(dv == -25.0) and np.any(dt == 25.0) and Nt.min() == 0 and Nt.max() > 200


@settings(max_examples=25, deadline=None)
@given(S=st.integers(2, 5), A=st.integers(1, 3), H=st.integers(1, 3), eps=st.sampled_from([0.5, 1.0, 4.0]))
def test_the_lemma_holds_for_every_small_shape(S, A, H, eps):
    assert post_processing_check(CentralPrivatizer(eps), H=H, S=S, A=A).verdict == PASS
