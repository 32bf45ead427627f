"""Audit of DP-APVI (Qiao & Wang, "Offline Reinforcement Learning with Differential Privacy", Algorithm 1;
Qiao & Wang 2022, Algorithm 1): ``dpcheck audit dp_apvi``.

The claim table below maps every check to the paper's statement and the function that checks it
(``offline.*`` in audits/lib/offline/, ``privatizers.*`` in audits/lib/privatizers/).

Privacy unit: ONE trajectory (Section 2); neighbours replace it. What the adversary sees: the released noisy
counts n' (everything after them is post-processing) and, end to end, the output policy.

Budget: the Gaussian mechanism (default) is rho-zCDP with ``--set rho=R`` (default 1), or with rho chosen
by ``--epsilon E [--delta D]`` through rho = (sqrt(log(1/D) + E) - sqrt(log(1/D)))^2 (docs/derivations.md#noise-calibration; D defaults
to 1e-5), which the zCDP -> DP conversion (G-2) then checks. ``--privatizer laplace`` audits the pure
eps-DP variant (docs/derivations.md#noise-calibration) at ``--epsilon`` (default 1). ``--privatizer file.py:Class`` puts a user's
:class:`dpcheck.algorithms.privatizers.OfflineCountPrivatizer` inside DP-APVI (docs/privatizers.md, "Offline
tabular"): built with ``--epsilon`` / ``--set rho`` / ``--delta`` as given and ``beta``, its own claim, width E and
DpEvent are the algorithm's; the black box then assumes nothing about its noise (learned statistics), the
noise scale is held against its declared ``noise_variance``, the privacy-cost slope against its own E. ``--set beta`` is the paper's UTILITY failure
probability delta (in E and iota), never the delta of (eps, delta)-DP.

Modes: "theory" = Algorithm 1's constants (C1 = sqrt(2), C2 = 16); with them the penalties exceed H for
n below ~1e5 even on the smallest instance (docs/derivations.md#constants), so pessimism / validity hold only vacuously there (the
report says so). The theory claims (validity, pessimism, the eq. 31 bound and its rates) run in theory mode
at n where they are informative; the output-policy black box and the realised-gap rate run in practical
mode (scaled constants, no guarantee). ``--set mode=theory|practical`` forces one mode everywhere; a theory
claim that misses in practical mode is reported INCONCLUSIVE (Audit.soften), not FAIL.

``--set data=PATH.npz`` adds checks on a user's dataset (OfflineDataset.load: states, actions, S, A): the
released-counts black box with one of its trajectories replaced, Lemmas C.2-C.3 and eqs. 3-5 on its counts, and its empirical
coverage against Theorem 3.4's sample-size condition. Utility checks need the true model and run on the
built-in instances (algorithms/offline/instances.py).
"""
from __future__ import annotations

import math

from dpcheck.audits.lib import offline
from dpcheck.audits.lib.offline import APVISpec
from dpcheck.audits.lib.offline.spec import _repeat
from dpcheck.audit import Audit, ClaimRow, Defaults
from dpcheck.errors import InputError
from dpcheck.parallel import with_result_cache
from dpcheck.registry import SAMPLING, SetOption

QW = "Qiao & Wang, Offline RL with DP"
# what this audit's chunks import in a worker (dpcheck.parallel.prestart imports them while the audit starts)
WORKER_IMPORTS = ("dpcheck.algorithms.offline", "dpcheck.algorithms.privatizers.loader",
                  "dpcheck.algorithms.privatizers.offline", "dpcheck.algorithms.privatizers.projection",
                  "dpcheck.loading")
MECHANISMS = ("gaussian", "laplace")
CHOICES = (*MECHANISMS, "none")       # none: the noise switched off, the claim kept (the audit must fail it)
# the budget of the statistics-dominated pessimism point (keyed by "zCDP claim?"): E ~ 0.02 on TAB-PARTIAL either way
# (E_rho ~ rho^{-1/2}, E_eps ~ eps^{-1}; docs/derivations.md#noise-calibration)
STATISTICS_DOMINATED_BUDGET = {True: 1e6, False: 1e4}


def _validate(o) -> None:
    """Cross-option rules (before any work): the mechanism, and which flags choose its budget."""
    priv = o.privatizer or "gaussian"
    if priv not in CHOICES and ":" not in str(priv):
        raise InputError(f"dp_apvi: --privatizer must be gaussian (rho-zCDP), laplace (pure eps-DP), none "
                         f"(noise off, against the Gaussian claim) or file.py:Class (an OfflineCountPrivatizer, "
                         f"docs/privatizers.md), got {priv!r}")
    if ":" in str(priv):
        if o.epsilon is not None and "rho" in o.extra:
            raise InputError("dp_apvi: give --set rho or --epsilon for the plug-in's budget, not both")
    elif priv == "laplace":
        if "rho" in o.extra:
            raise InputError("dp_apvi: --set rho is the Gaussian budget; the laplace variant takes --epsilon")
        if o.delta is not None:
            raise InputError("dp_apvi: --delta is not used by the laplace variant (pure eps-DP)")
    else:
        if o.epsilon is not None and "rho" in o.extra:
            raise InputError("dp_apvi: give --set rho or --epsilon (with --delta), not both")
        if o.delta is not None and o.epsilon is None:
            raise InputError("dp_apvi: --delta is used only with --epsilon (the (eps, delta) that selects rho)")
    if o.delta is not None and not 0 < o.delta < 1:
        raise InputError(f"dp_apvi: --delta must lie in (0, 1), got {o.delta!r}")


class DPAPVIAudit(Audit):
    name = "dp_apvi"
    algorithm = "DP-APVI (Qiao & Wang, Offline RL with DP, Algorithm 1)"
    notion = "zCDP/DP"
    summary = ("rho-zCDP (Gaussian) / eps-DP (Laplace) in one trajectory; v* - v^pi_hat <= O~(sum d* sqrt(Var/(n d_mu))) "
               "+ O~(S H^2 E_rho / (n dbar_m))")
    privatizers = MECHANISMS         # and file.py:Class: an OfflineCountPrivatizer inside DP-APVI (docs/privatizers.md)
    # epsilon: the laplace variant's (the Gaussian's budget is --set rho, default 1); the black box on the
    # user's data draws whole datasets per sample, hence its smaller budget
    defaults = Defaults(epsilon=1.0, samples=(10**6, 2 * 10**5),
                        samples_for=(("privacy.blackbox.data", (2 * 10**5, 5 * 10**4)),))
    claims = (
        # -- privacy (Theorem 3.4 / Lemma C.1; docs/derivations.md#noise-calibration; Lemma E.15)
        ClaimRow("privacy.blackbox.counts", "privacy",
                 "the released noisy counts n' are rho-zCDP (eps-DP) in one trajectory (black box, scripted datasets "
                 "differing in one step-swapping trajectory)", f"{QW}, Theorem 3.4 / Lemma C.1, docs/derivations.md#noise-calibration",
                 "offline.counts_target"),
        ClaimRow("privacy.blackbox.data", "privacy",
                 "the same on YOUR dataset (--set data) with one of its trajectories replaced",
                 f"{QW}, Theorem 3.4 / Lemma C.1", "offline.counts_target"),
        ClaimRow("privacy.blackbox.policy", "privacy",
                 "the output policy pi_hat is rho-zCDP (eps-DP) in one trajectory (post-processing; black box)",
                 f"{QW}, Theorem 3.4 (post-processing)", "offline.policy_target"),
        ClaimRow("privacy.dataflow", "whitebox",
                 "the output depends on the data only through the released noisy counts n' (everything after them "
                 "is post-processing): same release, different data -> identical output",
                 f"{QW}, Algorithm 1 / Lemma C.1 (post-processing)", "offline.dataflow_check"),
        ClaimRow("whitebox.counting", "whitebox",
                 "the counts n_h(s,a), n_h(s,a,s') the algorithm reads from a dataset, through the engine a user's "
                 "data goes through (compiled when numba imports), equal the numpy reference and a direct tally",
                 f"{QW}, Algorithm 1 (the counts)", "offline.counting_check"),
        ClaimRow("whitebox.dp_event", "whitebox",
                 "the algorithm's declared DpEvent (two Gaussian families of sensitivity sqrt(2H), or one Laplace of "
                 "l1 sensitivity 4H), accounted exactly (PLD), stays within the claim",
                 f"{QW}, Lemma C.1 / Lemma C.1, docs/derivations.md#noise-calibration (composition)", "offline.dp_event_check"),
        ClaimRow("whitebox.zcdp_conversion", "whitebox",
                 "rho-zCDP => (rho + 2 sqrt(rho log(1/delta_dp)), delta_dp)-DP; the rho chosen from (eps, delta_dp) "
                 "converts back exactly", f"{QW}, Lemma E.15, docs/derivations.md#noise-calibration", "offline.zcdp_conversion_check"),
        ClaimRow("whitebox.sensitivity", "whitebox",
                 "one replaced trajectory moves each count family by <= sqrt(2H) in l2 (both by <= 4H in l1), "
                 "brute force over all trajectories of an H = S = A = 2 model", f"{QW}, Lemma C.1 (sensitivity)",
                 "privatizers.offline_sensitivity_check"),
        ClaimRow("whitebox.sensitivity.search", "whitebox",
                 "the same, searched with hypothesis over neighbouring DATASETS through the algorithm's counting",
                 f"{QW}, Lemma C.1 / docs/derivations.md#noise-calibration (sensitivity; Laplace variant)", "offline.sensitivity_search_check"),
        ClaimRow("whitebox.noise_scale", "whitebox",
                 "the injected noise has the variance the claimed budget implies: 2H/rho (Gaussian; a VARIANCE) "
                 "or 2 (4H/eps)^2 (Laplace), at three budgets", f"{QW}, eq. 2, docs/derivations.md#noise-calibration (noise variance)",
                 "offline.noise_calibration_checks"),
        ClaimRow("whitebox.noise_independence", "whitebox",
                 "fresh independent noise for every count and every step h", f"{QW}, eq. 2, Lemma C.1",
                 "offline.noise_calibration_checks"),
        # -- assumptions (Lemmas C.2-C.3 and eqs. 3-5, Lemma C.6, Lemma C.10, coverage)
        ClaimRow("assumption.noise_bound*", "assumption", "w.p. >= 1 - delta, |n' - n| <= E/2 for every count",
                 f"{QW}, Lemma C.2 / docs/derivations.md#noise-calibration", "offline.count_checks"),
        ClaimRow("assumption.consistency*", "assumption",
                 "always: ntil >= 0, ntil(s,a) = sum_s' ntil(s,a,s'), |ntil(s,a) - n'(s,a)| <= E/2",
                 f"{QW}, eq. 3-4, Remark 3.2", "offline.count_checks"),
        ClaimRow("assumption.count_accuracy*", "assumption", "on the Lemma C.2 event, |ntil - n| <= E for every count",
                 f"{QW}, Lemma C.3", "offline.count_checks"),
        ClaimRow("assumption.valid_transition*", "assumption",
                 "P~ is a distribution, uniform exactly where ntil(s,a) <= E", f"{QW}, eq. 5, Remark 3.3",
                 "offline.count_checks"),
        ClaimRow("assumption.penalty_validity*", "assumption",
                 "w.p. >= 1 - 2 delta, |(P~ - P) Vtil_{h+1}| <= Gamma where ntil >= 3E (.noise_dominated: at a budget "
                 "where the DP noise exceeds the sampling error; .statistics_dominated: at a budget where Gamma's "
                 "statistical term dominates)", f"{QW}, Lemma C.6", "offline.pessimism_checks", tests=3),
        ClaimRow("assumption.pessimism*", "assumption",
                 "w.p. >= 1 - 4 delta, Vtil_h <= V^{pi_hat}_h and Qbar_h <= Q^{pi_hat}_h (exact values from the true "
                 "model; .noise_dominated, .statistics_dominated as above, the latter with pairs in the ntil <= E "
                 "fallback)", f"{QW}, Lemma C.10, eq. 34 (Theorem 3.4)", "offline.pessimism_checks",
                 tests=3),                  # three operating points, each a probability check
        ClaimRow("assumption.coverage*", "assumption",
                 "Assumption 2.1 and the coverage dbar_m (instance, exact); .data: your data's empirical dbar_m vs "
                 "n > max(H^2, E) iota / dbar_m", f"{QW}, Assumption 2.1, Theorem 3.4", "offline.coverage_check"),
        # -- rates (eq. 31, Lemma C.10; Theorem 3.4; eq. 7; docs/derivations.md#noise-calibration)
        ClaimRow("regret.bound.n", "regret",
                 "the data-dependent bound 2 sum d^{pi*} Gamma falls at least like n^{-1/2} (main term), theory constants",
                 f"{QW}, Theorem 3.4, eq. 31 (eq. 31, Lemma C.10)", "offline.rate_checks"),
        ClaimRow("regret.privacy_cost.n", "regret",
                 "the privacy cost B_DP - B_APVI is the lower-order O~(S H^2 E/(n dbar_m)) term: slope -1 in n",
                 f"{QW}, Theorem 3.4 vs eq. 7", "offline.rate_checks"),
        ClaimRow("regret.privacy_cost.budget", "regret",
                 "the privacy cost scales like E: rho^{-1/2} (Gaussian) / eps^{-1} (Laplace)",
                 f"{QW}, Theorem 3.4, docs/derivations.md#noise-calibration (eq. 7; Section 5)", "offline.rate_checks"),
        ClaimRow("regret.suboptimality_bound", "regret",
                 "w.p. >= 1 - 4 delta, v* - v^{pi_hat} <= 2 sum_h sum d^{pi*}_h Gamma_h (exact)",
                 f"{QW}, eq. 31 + Lemma C.10", "offline.rate_checks"),
        ClaimRow("regret.suboptimality.budget", "regret",
                 "the privacy part of the realised sub-optimality, gap(DP-APVI) - gap(noise off) on the same data, "
                 "falls at least like E: rho^{-1/2} / eps^{-1} (practical constants)",
                 f"{QW}, Theorem 3.4 vs eq. 7, docs/derivations.md#noise-calibration",
                 "offline.suboptimality_budget_check"),
        ClaimRow("regret.suboptimality.n", "regret",
                 "the realised sub-optimality falls at least like n^{-1/2} (practical constants)",
                 f"{QW}, Theorem 3.4", "offline.suboptimality_rate_check"),
    )
    options = (
        SetOption("rho", float, bounds=(0, None),
                  help="the zCDP budget of the Gaussian variant (default 1; or chosen by --epsilon with --delta)"),
        SetOption("beta", float, bounds=(0, 1), default=0.1,
                  help="the paper's utility failure probability delta (in E and iota; not the DP delta)"),
        SetOption("mode", str, choices=("theory", "practical"),
                  help="run every check in this mode (default: each check in its own mode, see docs/dp_apvi.md)"),
        SetOption("penalty", str, choices=("bernstein", "hoeffding"), default="bernstein",
                  help="Algorithm 1's Bernstein penalty or the Hoeffding variant (eq. 8)"),
        SetOption("data", str, help="PATH.npz: your dataset (states (n, H+1), actions (n, H), S, A; optional "
                                    "behaviour (H, S, A), with it P, r, init: the true MDP) for the data checks"),
    )
    uses = ("delta", "privatizer", *SAMPLING)

    # -- configuration ---------------------------------------------------------------------
    def spec(self) -> tuple[APVISpec, tuple | None]:
        o = self.opts
        choice = o.privatizer or "gaussian"
        if ":" in str(choice):
            # a plug-in: built (and probed) once here, before any work; its claim names its budget
            kw = {"beta": float(self.params.beta)}
            if o.epsilon is not None:
                kw["epsilon"] = float(o.epsilon)
            if o.delta is not None:
                kw["delta"] = float(o.delta)
            if self.params.rho is not None:
                kw["rho"] = float(self.params.rho)
            plugin = offline.OfflinePlugin.load(choice, **kw)
            spec = APVISpec(mechanism=plugin.label, budget=plugin.budget, delta=float(self.params.beta),
                            penalty=self.params.penalty, mode=self.params.mode or "theory", plugin=plugin)
            spec.make()
            return spec, None
        mech = "gaussian" if choice == "none" else choice
        approx = None
        if mech == "laplace":
            budget = self.epsilon
        elif o.epsilon is not None:
            from dpcheck.algorithms.privatizers.offline import OfflineGaussianPrivatizer
            d = float(o.delta) if o.delta is not None else 1e-5
            budget = OfflineGaussianPrivatizer.from_approx_dp(float(o.epsilon), d).rho
            approx = (float(o.epsilon), d)
        else:
            budget = float(self.params.rho) if self.params.rho is not None else 1.0
        if not (budget > 0 and math.isfinite(budget)):
            raise InputError(f"dp_apvi: the privacy budget must be a finite number > 0, got {budget!r}")
        spec = APVISpec(mechanism=mech, budget=budget, delta=float(self.params.beta), penalty=self.params.penalty,
                        mode=self.params.mode or "theory", noise_off=choice == "none")
        spec.make()                                # bad constants / budget: InputError before any work
        return spec, approx

    def load_data(self):
        """The user's dataset (--set data), with what it may carry (behaviour policy, MDP: offline.user_model),
        refused before any work when the data checks would not fit the memory or time limit."""
        path = self.params.data
        if path is None:
            return None
        from dpcheck.algorithms.offline.dataset import OfflineDataset, load_npz_arrays, scalar_int
        arrays = load_npz_arrays(path)
        for key in ("states", "actions", "S", "A"):
            if key not in arrays:
                raise InputError(f"{path}: missing array {key!r} (need states, actions, S, A; optional rewards, "
                                 "behaviour, P, r, init)")
        unknown = sorted(set(arrays) - {"states", "actions", "S", "A", "rewards", "behaviour", "P", "r", "init"})
        if unknown:     # a misspelt optional array ('behavior', 'reward') would be ignored without a word
            raise InputError(f"{path}: unknown array(s) {', '.join(map(repr, unknown))} (expected states, actions, S, "
                             "A; optional rewards, behaviour, P, r, init)")
        S, A = (scalar_int(path, k, arrays[k]) for k in ("S", "A"))
        st, ac = arrays["states"], arrays["actions"]
        if getattr(ac, "ndim", 0) in (2, 3) and ac.dtype != object:
            # sizes first: the counts are dense (H, S, A, S) arrays, so S = 10^12 must stop here
            offline.check_data_size(path, H=int(ac.shape[-1]), S=S, A=A, n=int(ac.shape[-2]),
                                    samples=self.samples("privacy.blackbox.data"), reps=self.exe.pick(300, 100))
        data = OfflineDataset.from_arrays(st, ac, arrays.get("rewards"), S=S, A=A)
        if data.runs != 1:
            raise InputError(f"{path}: one dataset expected (states (n, H+1)), got {data.runs} runs")
        if data.S < 2:
            raise InputError(f"{path}: S = {data.S}; replacing a trajectory by one that visits other states needs S >= 2")
        self.user_behaviour, self.user_model = offline.user_model(arrays, data, path)
        return data

    def instances(self):
        """TAB-FULL S = A = 2, H = 3 (pessimism, the eq. 31 bound and its rates), TAB-PARTIAL S = 4,
        A = 3, H = 3 (the count checks and the statistics-dominated pessimism point: uncovered pairs exercise the
        uniform fallback; S = 4 makes a skipped consistency LP visible), TAB-FULL S = A = 5, H = 3 (the realised
        gap: more actions, so the gap falls over a window of n instead of vanishing at once)."""
        from dpcheck.algorithms.offline import tab_full, tab_partial
        full = tab_full(self.rng("instance", "full"), S=2, A=2, H=3)
        partial = tab_partial(self.rng("instance", "partial"), S=4, A=3, H=3)
        wide = tab_full(self.rng("instance", "wide"), S=5, A=5, H=3)
        return full, partial, wide

    # -- the run ----------------------------------------------------------------------------
    def run(self) -> None:
        spec, approx = self.spec()
        data = self.load_data()
        full, partial, wide = self.instances()
        forced = self.params.mode
        self.config.update({
            "algorithm": "DP-APVI" if not spec.noise_off else "DP-APVI with the noise off (--privatizer none)",
            "mechanism": spec.mechanism if not spec.noise_off else "none", spec.budget_name: spec.budget,
            "budget_from": ("--epsilon/--delta via rho = (sqrt(log(1/delta)+eps) - sqrt(log(1/delta)))^2"
                            if approx else ("the plug-in's claim" if spec.plugin is not None else
                                            "--epsilon" if spec.mechanism == "laplace" else "--set rho (default 1)")),
            "approx_dp": {"epsilon": approx[0], "delta_dp": approx[1]} if approx else None,
            "utility_delta": spec.delta, "penalty": spec.penalty,
            "mode": {"privacy_counts": "mode-free", "privacy_policy": forced or "practical",
                     "assumptions": forced or "theory", "rates_bound": forced or "theory",
                     "rate_realised_gap": forced or "practical"},
            "constants": {"theory": offline.THEORY, "practical": offline.PRACTICAL},
            "instances": {"pessimism_and_rates": full.name, "counts_and_statistics_dominated_pessimism": partial.name,
                          "realised_gap": wide.name},
            "data": self.params.data,
            "neighbouring": "replacement of one trajectory",
        })
        self.privacy(spec, approx, data, forced)
        self.assumptions(spec, data, full, partial, forced)
        self.rates(spec, full, wide, forced)

    # -- privacy -----------------------------------------------------------------------------
    def privacy(self, spec: APVISpec, approx, data, forced) -> None:
        exe = self.exe
        self.progress("dp_apvi: privacy (black box on the released counts and the policy, declared event, sensitivity)")
        tgt, det = offline.counts_target(spec, seed=self.int_seed("bb-counts-pilot"))
        check, _ = self.blackbox(tgt, id="privacy.blackbox.counts", samples=self.samples(),
                                 seed=self.int_seed("bb-counts"))
        self.add(_with_details(check, det))
        if data is not None:
            tgt, det = offline.counts_target(spec, data=data, seed=self.int_seed("bb-data-pilot"))
            check, _ = self.blackbox(tgt, id="privacy.blackbox.data", samples=self.samples("privacy.blackbox.data"),
                                     seed=self.int_seed("bb-data"))
            self.add(_with_details(check, det))
        tgt, det = offline.policy_target(spec, mode=forced or "practical")
        check, _ = self.blackbox(tgt, id="privacy.blackbox.policy", samples=self.samples(),
                                   seed=self.int_seed("bb-policy"))
        self.add(offline.qualify_policy(_with_details(check, det)))
        full, partial = self.instances()[:2]
        self.add(offline.dataflow_check(spec, full, n=10**4, runs=exe.pick(50, 20), seed=self.int_seed("dataflow")))
        # the counting engine a user's dataset goes through (compiled when numba imports); everything else here
        # draws counts from their law or counts with numpy
        sets = [(f"{partial.name}, collected", partial.collect(500, self.rng("counting"), runs=3))]
        if data is not None:
            sets.append((f"your dataset {self.params.data}", data))
        self.add(offline.counting_check(sets))
        H, S, A = 3, 2, 2
        self.add(offline.dp_event_check(spec, H, S, A))
        if spec.gaussian:
            self.add(offline.zcdp_conversion_check(spec, H, approx=approx))
        for c in offline.sensitivity_checks(spec, examples=exe.pick(200, 60)):
            self.add(c)
        for c in offline.noise_calibration_checks(spec, runs=offline.CALIBRATION_RUNS, rng=self.rng("noise-calibration"),
                                                  alpha=exe.alpha):
            self.add(c)

    # -- assumptions ---------------------------------------------------------------------------
    def assumptions(self, spec: APVISpec, data, full, partial, forced) -> None:
        exe = self.exe
        self.progress("dp_apvi: noise bound, consistency, accuracy and validity of P~ over repetitions")
        runs = exe.pick(1000, 300)        # 0 failures in 300 runs certify a rate <= 0.01 < delta
        counts = partial.sample_counts(1000, self.rng("counts-data"), runs)
        for c in offline.count_checks(spec, counts, rng=self.rng("counts-noise"), alpha=exe.alpha,
                                      what=f"{partial.name}, n = 1000"):
            self.add(c)
        self.add(offline.coverage_check(full))
        if data is not None:
            dc = data.counts(rewards=False)
            reps = _repeat(dc, exe.pick(300, 100))
            for c in offline.count_checks(spec, reps, rng=self.rng("counts-user"), alpha=exe.alpha,
                                          what=f"your dataset {self.params.data}", suffix=".data"):
                self.add(c)
            self.add(offline.coverage_check(counts=dc, spec=spec, id="assumption.coverage.data", alpha=exe.alpha,
                                            behaviour=self.user_behaviour, model=self.user_model))
        self.progress("dp_apvi: penalty validity and pessimism (exact values from the true model)")
        mode = forced or "theory"
        s = spec if spec.mode == mode else _mode(spec, mode)
        # operating point: the audit's budget at n where the paper's penalties fall below H (docs/derivations.md#constants)
        for c in offline.pessimism_checks(s, full, n=10**6, runs=exe.pick(1000, 300), rng=self.rng("pessimism"),
                                          alpha=exe.alpha, regime="operating point: the audit's budget, n = 1e6"):
            self.add(self.soften(c, mode == "practical"))
        # noise-dominated: a budget at which the DP noise on the counts exceeds their sampling error
        # (sigma^2 S >> n d_mu > 3E): there the privacy term of Gamma is what keeps the algorithm pessimistic
        nd_budget = 1e-4 if spec.gaussian else 0.05
        for c in offline.pessimism_checks(s, full, n=3 * 10**4 if spec.gaussian else 10**5, runs=exe.pick(1000, 300),
                                          rng=self.rng("pessimism-nd"), alpha=exe.alpha, budget=nd_budget,
                                          suffix=".noise_dominated",
                                          regime=f"noise-dominated: {spec.budget_name} = {nd_budget:g}"):
            self.add(self.soften(c, mode == "practical"))
        # statistics-dominated: a budget so large that E ~ 0.02 and the statistical (Bernstein) term is ~3/4 of Gamma
        # (median over pairs); at the two points above the privacy term is ~99% of Gamma, so a statistical term
        # that is silently 0 (the variance of the wrong V) passed both. TAB-PARTIAL: its uncovered pairs have ntil <= E,
        # the only place the eq. 5 fallback (uniform P~, Gamma = C H) is exercised (details: fallback_pairs_fraction,
        # statistical_share)
        sd_budget = STATISTICS_DOMINATED_BUDGET[spec.gaussian]
        for c in offline.pessimism_checks(s, partial, n=10**6, runs=exe.pick(1000, 300), rng=self.rng("pessimism-sd"),
                                          alpha=exe.alpha, budget=sd_budget, suffix=".statistics_dominated",
                                          regime=f"statistics-dominated: {spec.budget_name} = {sd_budget:g}, "
                                                 f"{partial.name} (uncovered pairs: the ntil <= E fallback)"):
            self.add(self.soften(c, mode == "practical"))

    # -- rates -----------------------------------------------------------------------------------
    def rates(self, spec: APVISpec, full, wide, forced) -> None:
        exe = self.exe
        self.progress("dp_apvi: rates in n and in the budget")
        mode = forced or "theory"
        s = spec if spec.mode == mode else _mode(spec, mode)
        n_grid = exe.pick((1e5, 3e5, 1e6, 3e6, 1e7), (1e5, 1e6, 1e7))
        for c in offline.rate_checks(s, full, n_grid=n_grid, budget_factors=(0.1, 0.3, 1.0, 3.0, 10.0),
                                     runs=exe.pick(100, 40), seed=self.int_seed("rates"), alpha=exe.alpha):
            self.add(self.soften(c, mode == "practical") if c.id == "regret.suboptimality_bound" else c)
        gap_mode = forced or "practical"
        # the gap starts to fall once ntil clears the width E (fallback and C*H below it): a grid in units of E
        # (the claimed mechanism's width, also when --privatizer none switches the noise off)
        E = _mode(spec, gap_mode, noise_off=False).make().width(wide.mdp.H, wide.mdp.S, wide.mdp.A)
        factors = (10, 15, 20, 30, 40, 60, 80, 120, 160, 320)        # cheap (counts drawn from their law)
        self.add(offline.suboptimality_rate_check(_mode(spec, gap_mode), wide,
                                                  n_grid=tuple(int(round(f * E)) for f in factors),
                                                  runs=200, seed=self.int_seed("gap"), alpha=exe.alpha,
                                                  mode=gap_mode))
        # E ~ rho^{-1/2} but eps^{-1}: the Laplace grid spans the same range of widths
        factors = (0.1, 0.3, 1.0, 3.0, 10.0) if spec.gaussian else (0.32, 0.55, 1.0, 1.73, 3.16)
        self.add(offline.suboptimality_budget_check(_mode(spec, gap_mode), wide, n=int(round(40 * E)),
                                                    budget_factors=factors,
                                                    runs=200, seed=self.int_seed("gap-budget"),
                                                    alpha=exe.alpha, mode=gap_mode))


def _mode(spec: APVISpec, mode: str, **kw) -> APVISpec:
    from dataclasses import replace
    return replace(spec, mode=mode, **kw)


def _with_details(check, det: dict):
    from dataclasses import replace
    d = dict(check.details)
    d["target"] = det
    return replace(check, details=d)


DPAPVIAudit.register(validate=_validate, wrap=with_result_cache)
