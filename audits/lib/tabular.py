"""Assumption 3.1 on private counts, as separate Check records (Qiao & Wang 2023, Assumption 3.1, Qiao & Wang 2024, Assumption 3.1).

Shared by the privatizer audits and the DP-UCBVI / DP-Nash-VI audits. Feed a monitor every release
(batched over runs) and ask it for the checks at the end:

    mon = CountAssumptionMonitor(runs, width=E, source="Qiao & Wang 2023, Assumption 3.1 / Lemma 5.4")
    for k in ...:
        mon.update(privatizer.release(), privatizer.true_counts())
    for check in mon.checks(beta=beta, alpha=alpha):
        ctx.add(check)

Checks (ids fixed; each carries its claim's source):
* ``assumption.count_error`` (probability, Assumption 3.1 part 1): per run, the event "for all
  (h,s,a,s',k): |N~ - N| <= E for both count types and |R~ - R| <= E" must hold with probability
  >= 1 - beta/3: exact binomial bound over the runs (dpcheck.checks.probability_check).
  Details log the good event |N^ - N| <= E/4 per run as well (Lemmas 5.1/5.6; Lemmas 5.1/5.4): the hypothesis of the
  post-processing lemma (``good_event_lemma``: DP-UCBVI's Lemma 5.4, DP-Nash-VI's Lemma 5.8).
* ``assumption.sum_consistency`` (invariant, part 2): N~(s,a) = sum_s' N~(s,a,s') (relative 1e-9).
* ``assumption.no_underestimation`` (invariant on the good event, part 2 / ``good_event_lemma``):
  N~(s,a) >= N(s,a) whenever |N^ - N| <= E/4 held in that run (deterministic there). Vacuous when no true count
  reached E/4 in a good-event run: there the clip at 0 alone gives N~ >= N (a shift of E/4 where E/2 is needed
  passed at K = 64, where N <= 64 and E/4 is in the thousands).
* ``assumption.valid_transition`` (invariant, Remark 3.2 / full-support P~): P~(.|s,a) has entries > 0
  summing to 1 -- always, including outside the good event thanks to the fallback.
"""
from __future__ import annotations

import numpy as np

from dpcheck.checks import INCONCLUSIVE, FAIL, Check, invariant_check, probability_check

REL_TOL = 1e-9          # float rounding of sums of O(S) terms of size up to ~1e6


def _runs_max(x: np.ndarray) -> np.ndarray:
    """max over every axis but the first (runs)."""
    return x.reshape(x.shape[0], -1).max(axis=1) if x.size else np.zeros(x.shape[0])


class CountAssumptionMonitor:
    """Accumulates, per run, everything Assumption 3.1 needs; ``checks()`` turns it into records.

    runs:   number of independent runs (leading axis of every array it is fed).
    width:  E (public). With E = 0 (exact counts) the error bounds are checked with tolerance only.
    source: the claim's source, e.g. "Qiao & Wang 2023 (DP-UCBVI), Assumption 3.1; Lemmas 5.1, 5.4".
    good_event_lemma: the paper's post-processing lemma whose hypothesis is the good event |N^ - N| <= E/4
            and which gives N~ >= N on it (named in the no_underestimation claim): "Lemma 5.4" in
            DP-UCBVI (Qiao & Wang 2023), "Lemma 5.8" in DP-Nash-VI (Qiao & Wang 2024).
    """

    def __init__(self, runs: int, width: float, *, source: str, has_rewards: bool = True,
                 good_event_lemma: str = "Lemma 5.4"):
        self.runs = int(runs)
        self.good_event_lemma = good_event_lemma
        self.E = float(width)
        self.source = source
        self.has_rewards = has_rewards
        z = lambda: np.zeros(self.runs)
        self.error_ratio = z()          # max |N~ - N| / E   (and |R~ - R| / E)
        self.noise_ratio = z()          # max |N^ - N| / (E/4)
        self.reward_ratio = z()         # max |R~ - R| / E
        self.sum_violations = np.zeros(self.runs, dtype=np.int64)
        self.under_violations = np.zeros(self.runs, dtype=np.int64)
        self.kernel_violations = np.zeros(self.runs, dtype=np.int64)
        self.noise_seen = False         # did the releases carry N^ (noisy_*)? Without it the good event is unknown
        self.max_count = z()            # max true N(s,a) per run: where no count reaches E/4, no_underestimation is untested
        self.cases = 0                  # (h,s,a) rows checked per run
        self.releases = 0
        self.worst = {}                 # a counterexample per invariant, for the report

    def update(self, private, true) -> None:
        """One release. ``private``: PrivateCounts-like (visits, transitions, rewards, noisy_*);
        ``true``: TrueCounts-like (visits, transitions, rewards). Shapes (runs, H, S, A[, S])."""
        E = self.E
        v, t = np.asarray(private.visits, float), np.asarray(private.transitions, float)
        Nv, Nt = np.asarray(true.visits, float), np.asarray(true.transitions, float)
        scale = max(E, 1.0)
        err = np.maximum(_runs_max(np.abs(v - Nv)), _runs_max(np.abs(t - Nt)))
        if getattr(private, "rewards", None) is not None and getattr(true, "rewards", None) is not None:
            rerr = _runs_max(np.abs(np.asarray(private.rewards) - np.asarray(true.rewards)))
            self.reward_ratio = np.maximum(self.reward_ratio, rerr / scale)
            err = np.maximum(err, rerr)
        self.error_ratio = np.maximum(self.error_ratio, err / (E if E > 0 else 1e-12))
        nv, nt = getattr(private, "noisy_visits", None), getattr(private, "noisy_transitions", None)
        if nv is not None and nt is not None:
            nerr = np.maximum(_runs_max(np.abs(np.asarray(nv) - Nv)), _runs_max(np.abs(np.asarray(nt) - Nt)))
            self.noise_ratio = np.maximum(self.noise_ratio, nerr / (E / 4 if E > 0 else 1e-12))
            self.noise_seen = True
        # part 2: sum identity
        tsum = t.sum(axis=-1)
        bad_sum = np.abs(v - tsum) > REL_TOL * np.maximum(1.0, np.abs(v))
        self.sum_violations += bad_sum.reshape(self.runs, -1).sum(axis=1)
        # part 2: no underestimation (deterministic on the Lemma 5.4 good event; recorded for all runs)
        under = v < Nv - REL_TOL * np.maximum(1.0, Nv)
        self.max_count = np.maximum(self.max_count, _runs_max(Nv))
        self.under_violations += under.reshape(self.runs, -1).sum(axis=1)
        # valid P~: entries > 0, rows sum to 1
        with np.errstate(invalid="ignore", divide="ignore"):
            P = t / v[..., None]
        bad_P = ~(np.all(P > 0, axis=-1) & (np.abs(P.sum(axis=-1) - 1.0) <= 1e-9))
        self.kernel_violations += bad_P.reshape(self.runs, -1).sum(axis=1)
        for key, mask in (("sum_consistency", bad_sum), ("no_underestimation", under), ("valid_transition", bad_P)):
            if key not in self.worst and mask.any():
                idx = tuple(int(i) for i in np.argwhere(mask)[0])
                self.worst[key] = {"index (run,h,s,a)": idx, "release": self.releases,
                                   "N~(s,a)": float(v[idx]), "sum N~(s,a,.)": float(tsum[idx]),
                                   "N(s,a)": float(Nv[idx]), "P~(.|s,a)": P[idx]}
        self.cases += int(np.prod(v.shape[1:]))
        self.releases += 1

    @property
    def good_event(self) -> np.ndarray:
        """Per run: did |N^ - N| <= E/4 hold at every release (``good_event_lemma``'s hypothesis)? All True when the
        releases carry no N^ (``noise_seen`` False): then it is unknown, and checks() says so."""
        return self.noise_ratio <= 1.0

    def good_event_check(self, *, id: str, beta: float, alpha: float, claim: dict, details: dict,
                         what: str = "the good event |N^ - N| <= E/4") -> Check:
        """The good event as a probability check (``good_event_lemma``'s hypothesis, w.p. >= 1 - beta/3; ``beta``
        is that level). INCONCLUSIVE when the releases carried no N^ (``noise_seen`` False: a user's
        privatizer may leave noisy_* None): the event was never observed, and counting every run as good would
        pass a privatizer whose N^ errors exceed E/4 at every release."""
        if self.releases and not self.noise_seen:
            return Check(id=id, kind="assumption", verdict=INCONCLUSIVE, claim=claim,
                         measured={"confidence": None, "runs": self.runs},
                         details={**details, "good_event": "unobservable (the releases carry no N^)"},
                         reason="the releases carry no N^ (noisy_visits / noisy_transitions are None): the good "
                                "event |N^ - N| <= E/4 cannot be observed")
        return probability_check(id=id, failures=int((~self.good_event).sum()), runs=self.runs, beta=beta,
                                 alpha=alpha, claim=claim, details=details, what=what)

    def checks(self, *, beta: float, alpha: float, prefix: str = "assumption") -> list:
        claim_base = {"source": self.source}
        fails = self.error_ratio > 1.0
        good = self.good_event
        details = {"width_E": self.E, "releases_per_run": self.releases,
                   "max_error_ratio_per_run": self.error_ratio, "max_noise_ratio_per_run (|N^-N|/(E/4))": self.noise_ratio,
                   "good_event_runs": int(good.sum()),
                   "plots": [{"title": "max |N~ - N| / E per run", "xlabel": "run", "ylabel": "ratio",
                              "kind": "bar", "logx": False, "logy": False,
                              "series": [{"label": "max |N~-N|/E", "x": list(range(self.runs)),
                                          "y": self.error_ratio.tolist()}]}]}
        if self.has_rewards:
            details["max_reward_ratio_per_run"] = self.reward_ratio
        out = [probability_check(
            id=f"{prefix}.count_error", failures=int(fails.sum()), runs=self.runs, beta=beta / 3, alpha=alpha,
            claim=dict(claim_base, statement="w.p. >= 1 - beta/3, |N~ - N| <= E and |R~ - R| <= E for all "
                       "(h,s,a,s',k) (Assumption 3.1 part 1)", beta_over_3=beta / 3),
            details=details, what="the uniform count-error bound")]
        total = self.cases * self.runs
        out.append(invariant_check(
            id=f"{prefix}.sum_consistency", violations=int(self.sum_violations.sum()), total=total,
            claim=dict(claim_base, statement="N~(s,a) = sum_s' N~(s,a,s') (Assumption 3.1 part 2)"),
            details={"counterexample": self.worst.get("sum_consistency")}, what="sum consistency"))
        n_good = int(good.sum())
        under = invariant_check(
            id=f"{prefix}.no_underestimation", violations=int(self.under_violations[good].sum()),
            total=self.cases * n_good,
            claim=dict(claim_base, statement="N~(s,a) >= N(s,a) on the good event |N^ - N| <= E/4 "
                       f"(Assumption 3.1 part 2; {self.good_event_lemma})"),
            details={"counterexample": self.worst.get("no_underestimation"), "good_event_runs": n_good,
                     "violations_outside_good_event": int(self.under_violations[~good].sum())},
            what="no underestimation on the good event",
            vacuous=("the good event held in no run" if not n_good else
                     f"no true count N(s,a) reached E/4 = {self.E / 4:.4g} in a good-event run (largest "
                     f"{self.max_count[good].max():.4g}): N^ may be below 0 there and the clip at 0 alone keeps "
                     "N~ >= N, whatever the post-processing's shift" if self.E > 0 and
                     not (self.max_count[good] >= self.E / 4).any() else None))
        if not self.noise_seen and self.releases and under.verdict == FAIL:
            # releases without N^ (a user's privatizer may omit noisy_*): the good event cannot be told
            # apart, every run counted as good, so an underestimate is no proof against a claim made on it
            under = Check(id=under.id, kind=under.kind, verdict=INCONCLUSIVE, claim=under.claim,
                          measured=under.measured, details={**under.details, "good_event": "unobservable"},
                          reason=under.reason + " (the releases carry no N^: the good event |N^ - N| <= E/4 "
                                                "is unobservable, so this is not a violation of the claim)")
        out.append(under)
        out.append(invariant_check(
            id=f"{prefix}.valid_transition", violations=int(self.kernel_violations.sum()), total=total,
            claim=dict(claim_base, statement="P~(.|s,a) = N~(s,a,.)/N~(s,a) is a full-support distribution "
                       "(Remark 3.2; always, via the fallback)"),
            details={"counterexample": self.worst.get("valid_transition")}, what="valid P~"))
        return out
