"""The audits of the count privatizers: what one replaced user can change, measured.

``central_privatizer`` (eps-JDP, DP-UCBVI Lemma 5.1), ``local_privatizer`` (eps-LDP, DP-UCBVI Lemma 5.6),
``offline_gaussian_privatizer`` (rho-zCDP, offline eq. 2 / docs/derivations.md#neighbouring-relation) and ``offline_laplace_privatizer``
(eps-DP, docs/derivations.md#noise-calibration), ``offline_count_privatizer`` (any DP-APVI count privatizer, a plug-in included) and
``offline_regression_privatizer`` (any privatizer of DP-VAPVI's released statistics). The module opens with the claim tables; the checks themselves are the reusable
functions of :mod:`dpcheck.audits.lib.privatizers` (black-box targets, the plug-in search, the PLD of the
declared DpEvent, the sensitivity search, the tree-covariance test) and :mod:`dpcheck.audits.lib.tabular`
(Assumption 3.1).

* ``privacy.blackbox`` -- black-box epsilon lower bound (dpcheck.blackbox.audit) on what the adversary
  sees when one user is replaced by the worst case (Qiao & Wang 2023 Lemma 5.6, Qiao & Wang 2024 Lemma 5.4, Qiao & Wang 2022 Lemma C.1): Central, the whole released
  stream; Local, one user's message; offline, the released noisy counts n'. The statistic is the
  Neyman-Pearson log-likelihood ratio of the declared noise; instances are small (H = 1, S = 2) so that a
  tight bound is reachable from 10^6 samples (:func:`dpcheck.audits.lib.privatizers.central_target`).
* ``privacy.blackbox.planner_view`` (built-ins) -- the same worst-case neighbours, on the counts N~ the planner
  reads (the LP of N^): a release that feeds the LP anything but N^ and E leaves N^ untouched.
* ``whitebox.post_processing`` -- Lemma 5.4 / 5.8 on adversarial good-event inputs fed to ``post_processed``.
* A user's privatizer (``--privatizer file.py:Class``) is audited black box only, nothing assumed about
  its noise: the searched stream audit (Local adds ``privacy.blackbox.stream``) and one user's message
  (:func:`dpcheck.audits.lib.privatizers.plugin_blackbox`). The white-box ``sensitivity`` / ``tree_noise_reuse``
  checks need the built-ins' scale and structure and run on built-ins only.
* ``whitebox.dp_event`` -- the privacy profile computed exactly (dp_accounting PLD) from the privatizer's
  declared DpEvent (``declare()``: from its parameters and the sizes, nothing run), against its Claim;
  ``whitebox.zcdp_conversion`` (offline, a zCDP claim) -- Lemma E.15, and the rho that ``--epsilon`` /
  ``--delta`` chose converting back to that epsilon.
* ``whitebox.sensitivity``, ``whitebox.tree_noise_reuse`` (Central), the Assumption 3.1 checks and the good event
  |N^ - N| <= E/4 (online) and the noise bound (offline, Lemma C.2).
* ``whitebox.noise_scale`` / ``whitebox.noise_independence`` (online) -- the release noise the built-in draws at
  H = 2, S = 3, A = 2 over every tree level up to K = 2^11, per level, family and coordinate, against its declared
  scale, and the correlation of every pair of coordinates (:func:`dpcheck.audits.lib.privatizers.noise_law_checks`):
  the black boxes run at H = A = 1, K = 2, and dp_event / sensitivity read the declaration.
* ``whitebox.noise_scale`` / ``whitebox.noise_independence`` (offline) -- the noise the audited class draws at
  H = 3 against the variance its claim implies (eq. 2): the black box and the DpEvent run at H = 1, so a noise
  computed for H = 1 at every horizon would otherwise pass.

Paper calibration under replacement (docs/derivations.md#neighbouring-relation, Qiao & Wang 2024): the paper calibrates to the
add/remove sensitivity H per family, so under the replacement relation of its own definitions the
mechanism is only 2 eps-DP. With ``--set calibration=paper`` the white-box checks report eps_realised =
2 eps and FAIL, and the black-box bound typically exceeds eps and FAILS too: the documented finding, not
a bug of the audit. The default calibration is "strict" (eps under replacement).
"""
from __future__ import annotations

from typing import ClassVar

from dpcheck.algorithms.offline import DPAPVI
from dpcheck.audit import Audit, ClaimRow, Defaults
from dpcheck.checks import PASS
from dpcheck.errors import InputError
from dpcheck.registry import SAMPLING, SetOption

from dpcheck.audits.lib import privatizers as pa

UCBVI = "Qiao & Wang 2023 (DP-UCBVI)"
NASH = "Qiao & Wang 2024 (DP-Nash-VI)"
OFFLINE = "Qiao & Wang, Offline RL with Differential Privacy"

# -- the claim tables of the four audits. The Assumption 3.1 rows (central, local) and the noise rows
# (offline) are the same word for word in both audits of a pair and written once each.
ASSUMPTION_ROWS = (            # Assumption 3.1 of both online papers, over repetitions
    ClaimRow("assumption.count_error", "assumption",
             "w.p. >= 1 - beta/3, |N~ - N| <= E and |R~ - R| <= E for all (h,s,a,s',k)",
             f"{UCBVI} / {NASH}, Assumption 3.1 part 1 via Lemma 5.4", "check_assumption"),
    ClaimRow("assumption.sum_consistency", "assumption",
             "N~(s,a) = sum_s' N~(s,a,s')",
             f"{UCBVI} / {NASH}, Assumption 3.1 part 2", "check_assumption"),
    ClaimRow("assumption.no_underestimation", "assumption",
             "N~(s,a) >= N(s,a) on the good event |N^ - N| <= E/4",
             f"{UCBVI}, Lemma 5.4; {NASH}, Lemma 5.8 (Assumption 3.1 part 2)", "check_assumption"),
    ClaimRow("assumption.valid_transition", "assumption",
             "P~(.|s,a) is a full-support distribution",
             f"{UCBVI} / {NASH}, Remark 3.2", "check_assumption"),
    ClaimRow("assumption.good_event", "assumption",
             "w.p. >= 1 - beta/3, |N^ - N| <= E/4 for all (h,s,a,s',k) (the hypothesis of no_underestimation)",
             f"{UCBVI}, Lemmas 5.1 / 5.6 (Lemma 5.4's hypothesis); {NASH}, Lemmas 5.1 / 5.4", "check_assumption"),
    ClaimRow("whitebox.post_processing", "whitebox",
             "for every N^ with |N^ - N| <= E/4 (noise at the corners of the box): N <= N~(s,a) <= N + E, "
             "N~(s,a,s') > 0, |N~(s,a,s') - N| <= E (the random runs never reach E/4)",
             f"{UCBVI}, Lemma 5.4 (proof, eq. 85); {NASH}, Lemma 5.8", "check_assumption"),
)
NOISE_ROWS = (                 # the noise the built-ins draw, at H = 2, S = 3, A = 2 and every tree level to K = 2^11
    ClaimRow("whitebox.noise_scale", "whitebox",
             "the release noise drawn at H = 2, S = 3, A = 2 up to K = 2^11 has the declared variance at every tree "
             "level (central) / range of episodes (local), count family and coordinate",
             f"{UCBVI}, Lemmas 5.1 / 5.6; docs/privatizers.md", "check_whitebox"),
    ClaimRow("whitebox.noise_independence", "whitebox",
             "fresh independent noise for every released coordinate: no two (actions of a state, count families) "
             "share a draw", f"{UCBVI}, Lemmas 5.1 / 5.6 (one mechanism per coordinate)", "check_whitebox"),
)
PLANNER_ROWS = (ClaimRow("privacy.blackbox.planner_view", "privacy",
                        "the counts N~ the planner reads (the LP of N^) are eps-DP in one user (a built-in's release "
                        "feeding the LP anything but N^ and E shows here, not on N^)",
                        f"{UCBVI}, Lemma 5.1 / 5.6 (post-processing); {NASH}, Lemma 5.8", "check_planner_view"),)
CENTRAL_CLAIMS = (             # central_privatizer: the binary tree mechanism, eps-JDP
    ClaimRow("privacy.blackbox", "privacy",
             "the released stream (N^, R~ after each episode) is eps-DP in one user, so the actions are eps-JDP "
             "(Billboard lemma)",
             f"{UCBVI}, Lemma 5.1; {NASH}, Lemma 5.1", "check_blackbox"),
    *PLANNER_ROWS,
    ClaimRow("whitebox.dp_event", "whitebox",
             "the PLD of the declared DpEvent does not exceed the claimed epsilon (replacement neighbours)",
             f"{UCBVI}, Lemma 5.1", "check_dp_event"),
    ClaimRow("whitebox.sensitivity", "whitebox",
             "per-family l1 sensitivity of the node p-sums <= 2 H L under replacement; eps = sum_f Delta_f / b",
             f"{UCBVI}, Lemma 5.1; {NASH}", "check_whitebox"),
    ClaimRow("whitebox.tree_noise_reuse", "whitebox",
             "node noise drawn once and reused: Cov(B(t), B(t')) = #shared nodes x 2 b^2",
             "Chan, Shi & Song 2011; docs/derivations.md#noise-calibration", "check_whitebox"),
    *NOISE_ROWS,
    *ASSUMPTION_ROWS,
)
LOCAL_CLAIMS = (               # local_privatizer: the Laplace randomiser, eps-LDP
    ClaimRow("privacy.blackbox", "privacy",
             "one user's message is eps-DP in her trajectory (eps-LDP)",
             f"{UCBVI}, Lemma 5.6; {NASH}, Lemma 5.4", "check_blackbox"),
    ClaimRow("privacy.blackbox.stream", "privacy",
             "the released stream (sums of messages) is eps-DP (post-processing of the messages); a user's class "
             "without message()",
             f"{UCBVI}, Lemma 5.6", "check_plugin_blackbox"),
    *PLANNER_ROWS,
    ClaimRow("whitebox.dp_event", "whitebox",
             "the PLD of the declared DpEvent does not exceed the claimed epsilon (replacement neighbours)",
             f"{UCBVI}, Lemma 5.6", "check_dp_event"),
    ClaimRow("whitebox.sensitivity", "whitebox",
             "per-family l1 sensitivity of one message <= 2 H under replacement; eps = sum_f Delta_f / b",
             f"{UCBVI}, Lemma 5.6; {NASH}", "check_whitebox"),
    *NOISE_ROWS,
    *ASSUMPTION_ROWS,
)
OFFLINE_ROWS = (               # the offline noise bound and the released counts
    ClaimRow("assumption.noise_bound", "assumption",
             "w.p. >= 1 - delta, |n' - n| <= E/2 uniformly",
             f"{OFFLINE}, Lemma C.2 / docs/derivations.md#noise-calibration", "check_noise"),
    ClaimRow("assumption.sum_consistency", "assumption",
             "ntil(s,a) = sum_s' ntil(s,a,s'), ntil >= 0",
             f"{OFFLINE}, eq. 3-4 (Section 3.3)", "check_noise"),
    ClaimRow("assumption.valid_transition", "assumption",
             "P~ is a distribution",
             f"{OFFLINE}, eq. 5, Remark 3.3", "check_noise"),
)
OFFLINE_NOISE_ROWS = (         # the noise actually drawn at H = 3 (the black box and the DpEvent run at H = 1)
    ClaimRow("whitebox.noise_scale", "whitebox",
             "at H = 3 the noise drawn has the variance the claim implies (2H/rho; 2 (4H/eps)^2)",
             f"{OFFLINE}, eq. 2, docs/derivations.md#noise-calibration", "check_noise_scale"),
    ClaimRow("whitebox.noise_independence", "whitebox", "fresh noise for every count and every step h: no two "
             "released counts share a draw", f"{OFFLINE}, eq. 2, Lemma C.1", "check_noise_scale"),
)
OFFLINE_GAUSSIAN_CLAIMS = (    # offline_gaussian_privatizer: rho-zCDP
    ClaimRow("privacy.blackbox", "privacy",
             "n' = {n + N(0, 2H/rho)}^+ is rho-zCDP in one trajectory",
             f"{OFFLINE}, Lemma C.1 / Theorem 3.4", "check_blackbox"),
    ClaimRow("whitebox.dp_event", "whitebox",
             "the PLD of the declared DpEvent stays within the rho-zCDP profile",
             f"{OFFLINE}, Lemma C.1 (docs/derivations.md#neighbouring-relation)", "check_dp_event"),
    ClaimRow("whitebox.zcdp_conversion", "whitebox",
             "rho-zCDP => (rho + 2 sqrt(rho log(1/delta_dp)), delta_dp)-DP; the rho --epsilon / --delta chose "
             "converts back to that epsilon exactly", f"{OFFLINE}, Lemma E.15, docs/derivations.md#noise-calibration",
             "check_zcdp_conversion"),
    ClaimRow("whitebox.sensitivity", "whitebox",
             "one replaced trajectory moves each family by <= sqrt(2H) in l2",
             f"{OFFLINE}, docs/derivations.md#neighbouring-relation", "check_sensitivity"),
    *OFFLINE_NOISE_ROWS,
    *OFFLINE_ROWS,
)
OFFLINE_LAPLACE_CLAIMS = (     # offline_laplace_privatizer: eps-DP
    ClaimRow("privacy.blackbox", "privacy",
             "n' = {n + Lap(4H/eps)}^+ is eps-DP in one trajectory",
             f"{OFFLINE}, docs/derivations.md#noise-calibration", "check_blackbox"),
    ClaimRow("whitebox.dp_event", "whitebox",
             "the PLD of the declared DpEvent does not exceed the claimed eps",
             f"{OFFLINE}, docs/derivations.md#noise-calibration", "check_dp_event"),
    ClaimRow("whitebox.sensitivity", "whitebox",
             "one replaced trajectory moves both families by <= 4H in l1",
             f"{OFFLINE}, docs/derivations.md#noise-calibration", "check_sensitivity"),
    *OFFLINE_NOISE_ROWS,
    *OFFLINE_ROWS,
)

class PrivatizerAudit(Audit):
    """What every privatizer audit shares (its black-box budget is declared per audit: pa.PRIVATIZER_SAMPLES)."""


class OnlinePrivatizerAudit(PrivatizerAudit):
    """What the central and local privatizer audits share: the privatizer from the command line, the
    black-box audit (tight for the built-ins, searched for a user's class), the declared DpEvent, the
    white-box checks of the built-ins and Assumption 3.1 over repetitions."""

    kind: ClassVar[str]                       # "central" | "local": the default --privatizer
    uses = ("privatizer", *SAMPLING)
    defaults = Defaults(epsilon=1.0, samples=pa.PRIVATIZER_SAMPLES)     # both audits
    options = (
        SetOption("calibration", str, choices=("paper", "strict"), default="strict",
                  help="noise scale: strict = the replacement neighbouring relation, paper = add/remove"),
        SetOption("width_mode", str, choices=("rigorous", "calibrated", "nominal"),
                  help="the privatizer's noise-width bound (default: the privatizer's own)"),
        SetOption("beta", float, bounds=(0, 1), help="failure probability of the noise bound (default: the "
                                                     "privatizer's own, 0.1 for the built-ins)"),
        SetOption("games", bool, default=False, help="the games setting: 2 stream families, no rewards"),
    )
    # the white-box instance (dp_event, sensitivity): small enough to search, L = 3 tree levels
    H, S, A, K = 2, 3, 2, 6

    def privatizer(self):
        """(privatizer, rewards) from --privatizer / --epsilon / --set; records them in the config."""
        from dpcheck.algorithms.privatizers import load_privatizer
        eps = self.epsilon
        calibration = self.params.calibration
        spec = self.opts.privatizer or self.kind
        kw = {"epsilon": eps, "calibration": calibration}
        if self.params.width_mode is not None:
            kw["width_mode"] = self.params.width_mode
        if self.params.beta is not None:
            kw["beta"] = float(self.params.beta)
        p = load_privatizer(spec, **kw)
        games = bool(self.params.games)
        self.config.update(privatizer=spec, epsilon=eps, calibration=calibration, neighbouring="replacement",
                           stream_families=2 if games else 3,
                           width_mode=kw.get("width_mode", getattr(p, "width_mode", None)))
        return p, not games

    def run(self) -> None:
        from dpcheck.algorithms.privatizers.base import CountPrivatizer
        p, rewards = self.privatizer()
        claim = pa.claim_for_families(p, rewards)
        builtin = isinstance(p, CountPrivatizer) and not pa.is_plugin(p)
        template = pa.ClaimedTemplate(p, claim, rewards)
        if builtin:
            self.check_blackbox(template, claim, rewards)
            self.check_planner_view(template, claim)
        else:
            self.check_plugin_blackbox(p, template, claim, rewards)
        self.check_dp_event(p, claim, rewards)
        if builtin:
            # white box (built-ins only: they need the noise scale and structure); for a plug-in the
            # searched black-box stream audit is the evidence (docs/privatizers.md)
            self.check_whitebox(p, claim, rewards)
        self.check_assumption(p, claim, rewards)

    # -- privacy, black box -----------------------------------------------------------------------------
    def target(self, template, rewards):
        raise NotImplementedError

    def check_blackbox(self, template, claim, rewards) -> None:
        """privacy.blackbox of a built-in: the worst-case neighbours, the Laplace LLR statistic."""
        self.progress(f"{self.kind} privatizer: black-box audit of the worst-case neighbours")
        check, _ = self.blackbox(self.target(template, rewards), id="privacy.blackbox",
                                 samples=self.samples(), seed=self.int_seed("blackbox"),
                                 claim_source=claim.source)
        self.add(check)

    def check_planner_view(self, template, claim) -> None:
        """privacy.blackbox.planner_view of a built-in: the counts N~ the planner reads. N~ = the LP of N^ is
        post-processing only if release() feeds the LP nothing but N^ and E; one that hands it a raw count (where
        N^ < 0, say) leaves N^, all privacy.blackbox sees, untouched (a user's class is searched on every view)."""
        self.progress(f"{self.kind} privatizer: black box on the counts the planner reads (N~)")
        tgt = pa.central_target(template, view="planner")
        check, _ = self.blackbox(tgt, id="privacy.blackbox.planner_view",
                                 samples=min(self.samples(), pa.PLANNER_VIEW_SAMPLES),
                                 seed=self.int_seed("planner-view"), claim_source=claim.source)
        self.add(check)

    def plugin_options(self, claim, rewards) -> dict:
        """pa.plugin_blackbox's arguments besides the execution options (self.exe, passed whole)."""
        return dict(samples=self.samples(), seed=self.int_seed("blackbox"), source=claim.source, rewards=rewards)

    def check_plugin_blackbox(self, p, template, claim, rewards) -> None:
        raise NotImplementedError

    # -- privacy, white box -----------------------------------------------------------------------------
    def check_dp_event(self, p, claim, rewards) -> None:
        """whitebox.dp_event: the PLD of the DpEvent the privatizer declares for (H, S, A, K)."""
        H, S, A, K = self.H, self.S, self.A, self.K
        d = pa.declaration(p, H, S, A, K, rewards)
        self.add(pa.dp_event_check(d.dp_event("replacement"), claim, add_remove_event=d.dp_event("add_remove"),
                                   label=f"{pa.privatizer_class(p).__name__}(H={H}, S={S}, A={A}, K={K})"))

    def check_whitebox(self, p, claim, rewards) -> None:
        """whitebox.sensitivity (both), whitebox.tree_noise_reuse (central) and the noise drawn
        (whitebox.noise_scale / noise_independence, pa.noise_law_checks) of a built-in."""
        self.add(pa.sensitivity_check(p, kind=self.kind, claim=claim, H=self.H, S=self.S, A=self.A, K=self.K,
                                      rewards=rewards, examples=self.exe.pick(300, 100)))
        self.check_noise_law(p, claim, rewards)

    def check_noise_law(self, p, claim, rewards) -> None:
        """whitebox.noise_scale / noise_independence: the release noise drawn at H = 2, S = 3, A = 2 over every tree
        level up to K = 2^11 against the declared scale (the other checks read the declaration or run at H = 1,
        A = 1, K <= 16). Cost ~0.3-0.5 s CPU: K calls of the privatizer's observe()."""
        self.progress(f"{self.kind} privatizer: the noise drawn, up to K = {pa.NOISE_LAW_K}")
        for c in pa.noise_law_checks(p, kind=self.kind, claim_source=claim.source, alpha=self.exe.alpha,
                                     runs=self.exe.pick(*pa.NOISE_LAW_RUNS), seed=self.int_seed("noise-law"),
                                     rewards=rewards):
            self.add(c)

    # -- Assumption 3.1 ---------------------------------------------------------------------------------
    def check_assumption(self, p, claim, rewards) -> None:
        """Assumption 3.1 part by part over R repetitions (dpcheck.audits.lib.tabular.CountAssumptionMonitor)."""
        self.progress(f"{self.kind} privatizer: Assumption 3.1 over repetitions")
        src = claim.source
        # 0 failures in R runs certify a rate <= beta/3 only when R >~ 3.7 / (beta/3): 150 / 400 runs for beta = 0.1
        asrc = f"{UCBVI if rewards else NASH}, Assumption 3.1 via Lemma 5.4 / {src.split(', ')[-1]}"
        for c in pa.assumption_checks(p, runs=self.exe.pick(400, 150), rewards=rewards, rng=self.rng("assumption"),
                                      beta=getattr(p, "beta", 0.1), alpha=self.exe.alpha, source=asrc):
            self.add(c)
        # Lemma 5.4 itself, on adversarial N^: no count of the random runs reaches E/4 (no_underestimation is vacuous);
        # white box, so built-ins only (a user's class is wrapped and audited black box)
        if not pa.is_plugin(p):
            self.add(pa.post_processing_check(p, seed=self.int_seed("post-processing"),
                                              lemma=f"{UCBVI}, Lemma 5.4; {NASH}, Lemma 5.8"))


class CentralPrivatizerAudit(OnlinePrivatizerAudit):
    name = "central_privatizer"
    algorithm = "Central Privatizer (binary tree mechanism)"
    notion = "JDP"
    summary = "epsilon-JDP (DP-UCBVI Lemma 5.1; DP-Nash-VI Lemma 5.1)"
    privatizers = ("central",)
    claims = CENTRAL_CLAIMS
    kind = "central"

    def target(self, template, rewards):
        return pa.central_target(template, rewards=rewards)

    def check_plugin_blackbox(self, p, template, claim, rewards) -> None:
        """privacy.blackbox of a user's class: black box only, K / position / statistic searched."""
        self.progress(f"{self.kind} privatizer (plug-in): black-box search over K, position and statistic")
        self.add(pa.plugin_blackbox(template, self.exe, search="stream", **self.plugin_options(claim, rewards)))

    def check_whitebox(self, p, claim, rewards) -> None:
        super().check_whitebox(p, claim, rewards)
        self.add(pa.tree_reuse_check(p, runs=self.exe.pick(4_000, 1_000), seed=self.opts.seed, rewards=rewards,
                                     source=claim.source, alpha=self.exe.alpha))


class LocalPrivatizerAudit(OnlinePrivatizerAudit):
    name = "local_privatizer"
    algorithm = "Local Privatizer (Laplace randomiser)"
    notion = "LDP"
    summary = "epsilon-LDP (DP-UCBVI Lemma 5.6; DP-Nash-VI Lemma 5.4)"
    privatizers = ("local",)
    claims = LOCAL_CLAIMS
    kind = "local"

    def target(self, template, rewards):
        return pa.local_target(template, rewards=rewards)

    def check_plugin_blackbox(self, p, template, claim, rewards) -> None:
        """privacy.blackbox (one user's message, searched) and privacy.blackbox.stream of a user's class."""
        par = self.plugin_options(claim, rewards)
        self.progress(f"{self.kind} privatizer (plug-in): black-box search on one user's message")
        # INCONCLUSIVE without message(): the stream below cannot establish eps-LDP
        self.add(pa.plugin_message_blackbox(template, self.exe, stream_id="privacy.blackbox.stream", **par))
        # the released stream (sums of messages) is a post-processing of the messages: a valid, weaker
        # bound, and the only one that sees the counts the planner reads
        self.progress(f"{self.kind} privatizer (plug-in): black-box search on the released stream")
        self.add(pa.plugin_blackbox(template, self.exe, search="stream", id="privacy.blackbox.stream", **par))


# ============================================================ offline (DP-APVI)
REGRESSION_NOISE_RUNS = 50_000    # offline_regression_privatizer's noise checks, default and --quick alike (~1 s)


class APVIWithPrivatizerClass(DPAPVI):
    """DP-APVI with the AUDITED count privatizer class in place of the built-in one, at any budget
    (``privatizer_class(budget, beta=delta)``), so that :func:`dpcheck.audits.lib.offline.noise_calibration_checks`
    sweeps budgets through the very class under audit (``APVISpec(algorithm=..., extra={"privatizer_class": ...})``)."""

    def __init__(self, rho=None, *, epsilon=None, privatizer_class=None, **kw):
        super().__init__(rho=rho, epsilon=epsilon, **kw)
        if self.privatizer is not None and privatizer_class is not None:
            self.privatizer = privatizer_class(self.rho if self.rho is not None else self.epsilon, beta=self.delta)


class OfflinePrivatizerAudit(PrivatizerAudit):
    """What the offline count privatizer audits share: black box on the released counts n', the PLD of
    the declared DpEvent, the brute-force sensitivity, the noise drawn at H = 3 and the uniform noise bound
    (Theorem 3.4 / Lemma C.1; eq. 2; Lemma C.2)."""

    gaussian: ClassVar[bool]
    uses = SAMPLING
    approx: tuple | None = None       # (eps, delta_dp) when --epsilon / --delta chose rho (Lemma E.15)

    def privatizer(self):
        raise NotImplementedError

    def run(self) -> None:
        priv = self.privatizer()
        self.check_blackbox(priv)
        self.check_dp_event(priv)
        self.check_zcdp_conversion(priv)
        self.check_sensitivity(priv)
        self.check_noise_scale(priv)
        self.check_noise(priv)

    def apvi_spec(self, priv):
        """DP-APVI with the audited privatizer CLASS at any budget, for the checks shared with dp_apvi."""
        from dpcheck.audits.lib.offline import APVISpec
        return APVISpec(mechanism="gaussian" if self.gaussian else "laplace",
                        budget=float(priv.rho if self.gaussian else priv.epsilon), delta=float(priv.beta),
                        algorithm=APVIWithPrivatizerClass, extra={"privatizer_class": type(priv)})

    def check_zcdp_conversion(self, priv) -> None:
        """whitebox.zcdp_conversion (Lemma E.15, dp_apvi's check) of a zCDP claim, with the round trip when --epsilon /
        --delta chose rho. Every other check judges the rho the audit built: an --epsilon read as rho passed."""
        if priv.claim.rho is not None:
            from dpcheck.audits.lib import offline
            self.add(offline.zcdp_conversion_check(self.apvi_spec(priv), 3, approx=self.approx))

    def check_noise_scale(self, priv) -> None:
        """whitebox.noise_scale / noise_independence: the noise the audited class DRAWS at H = 3 (S = A = 2), through
        DP-APVI's release, against the variance its claim implies (2H/rho; 2 (4H/eps)^2), at budget x {1/4, 1, 4}
        (audits/lib/offline/whitebox.py). The black box and the DpEvent run at H = 1 and the sensitivity check reads
        the declared sigma: without this, noise drawn for H = 1 at every horizon (rho-zCDP claimed, 3 rho at H = 3)
        passed. Cost: ~1 s (offline.CALIBRATION_RUNS, default and --quick alike)."""
        from dpcheck.audits.lib import offline
        for c in offline.noise_calibration_checks(self.apvi_spec(priv), runs=offline.CALIBRATION_RUNS,
                                                  rng=self.rng("noise-scale"), alpha=self.exe.alpha):
            self.add(c)

    def check_blackbox(self, priv) -> None:
        """privacy.blackbox: one trajectory of 21 replaced by the worst case; LLR of the declared noise."""
        check, _ = self.blackbox(pa.offline_target(priv, H=1, gaussian=self.gaussian), id="privacy.blackbox",
                                 samples=self.samples(), seed=self.int_seed("blackbox"),
                                 claim_source=priv.claim.source)
        self.add(check)

    def check_dp_event(self, priv) -> None:
        """whitebox.dp_event: the PLD of the declared DpEvent against the claim at H = 1 (the black box's horizon)
        and H = 3 (the noise checks'): a DpEvent that composes over the H steps must still meet the claim, and one
        judged at H = 1 alone passed noise sized for H = 1 at every horizon (3x the claimed rho at H = 3). The
        first failing horizon is reported, else H = 3."""
        checks = [pa.dp_event_check(priv.declare(H, 2, 1).dp_event(), priv.claim,
                                    label=f"{pa.privatizer_class(priv).__name__}(H={H})") for H in (1, 3)]
        check = next((c for c in checks if c.verdict != PASS), checks[-1])
        # the event must describe the noise drawn (whose variance whitebox.noise_scale measures)
        self.add(pa.tie_event(check, [pa.event_noise_finding(priv, H) for H in (1, 3)]))

    def check_sensitivity(self, priv) -> None:
        """whitebox.sensitivity: brute force over every pair of trajectories of an H = S = A = 2 model."""
        self.add(pa.offline_sensitivity_check(priv, gaussian=self.gaussian))

    def check_noise(self, priv) -> None:
        """assumption.noise_bound / sum_consistency / valid_transition over R repetitions."""
        for c in pa.offline_noise_checks(priv, runs=self.exe.pick(1000, 200), rng=self.rng("offline-noise"),
                                         alpha=self.exe.alpha):
            self.add(c)


def _offline_gaussian_options(o) -> None:
    """--set rho and --epsilon both choose the privatizer's rho: one of them; --delta only with --epsilon."""
    if o.epsilon is not None and "rho" in o.extra:
        raise InputError("offline_gaussian_privatizer: give --set rho or --epsilon (with --delta), not both")
    if o.delta is not None and o.epsilon is None:
        raise InputError("offline_gaussian_privatizer: --delta is used only with --epsilon "
                         "(the (eps, delta) that selects rho)")


class OfflineGaussianPrivatizerAudit(OfflinePrivatizerAudit):
    name = "offline_gaussian_privatizer"
    algorithm = "DP-APVI Gaussian count privatizer"
    notion = "zCDP"
    summary = "rho-zCDP (Qiao & Wang 2022, Lemma C.1)"
    uses = ("delta", *SAMPLING)
    options = (SetOption("rho", float, bounds=(0, None),
                         help="the zCDP budget (default 1; or chosen by --epsilon with --delta, default 1e-5)"),)
    defaults = Defaults(samples=pa.PRIVATIZER_SAMPLES)            # the budget is rho (--set rho)
    claims = OFFLINE_GAUSSIAN_CLAIMS
    gaussian = True

    def privatizer(self):
        from dpcheck.algorithms.privatizers.offline import OfflineGaussianPrivatizer
        o = self.opts
        if o.epsilon is not None:        # --epsilon (with --delta) selects rho through the zCDP conversion
            self.approx = (float(o.epsilon), float(o.delta or 1e-5))
            priv = OfflineGaussianPrivatizer.from_approx_dp(*self.approx)
        else:
            priv = OfflineGaussianPrivatizer(rho=float(self.params.rho if self.params.rho is not None else 1.0))
        self.config.update(privatizer="offline_gaussian", rho=priv.rho,
                           approx_dp={"epsilon": self.approx[0], "delta_dp": self.approx[1]} if self.approx else None)
        return priv


class OfflineLaplacePrivatizerAudit(OfflinePrivatizerAudit):
    name = "offline_laplace_privatizer"
    algorithm = "DP-APVI Laplace count privatizer"
    notion = "DP"
    summary = "epsilon-DP (docs/derivations.md#noise-calibration)"
    defaults = Defaults(epsilon=1.0, samples=pa.PRIVATIZER_SAMPLES)
    claims = OFFLINE_LAPLACE_CLAIMS
    gaussian = False

    def privatizer(self):
        from dpcheck.algorithms.privatizers.offline import OfflineLaplacePrivatizer
        priv = OfflineLaplacePrivatizer(epsilon=self.epsilon)
        self.config.update(privatizer="offline_laplace", epsilon=priv.epsilon)
        return priv


def _offline_count_options(o) -> None:
    """--set rho and --epsilon both choose a budget: one of them."""
    if o.epsilon is not None and "rho" in o.extra:
        raise InputError("offline_count_privatizer: give --set rho or --epsilon, not both")


class OfflineCountPrivatizerAudit(OfflinePrivatizerAudit):
    """Any :class:`dpcheck.algorithms.privatizers.OfflineCountPrivatizer` alone, as ``central_privatizer`` is
    for the online ones: ``--privatizer gaussian | laplace | file.py:Class`` (default gaussian). The budget goes
    to its constructor as given (``--epsilon``, ``--set rho``, ``--delta``) with ``--set beta``. One audit
    for every offline count privatizer, built-in or plug-in, treated alike except where a check needs the
    noise law: the black box of a plug-in assumes none (learned statistics) and the noise scale is held
    against the variance it declares (``offline_gaussian_privatizer`` / ``offline_laplace_privatizer`` stay the
    built-ins' audits at the paper's calibration)."""

    name = "offline_count_privatizer"
    algorithm = "DP-APVI count privatizer (built-in or yours: --privatizer file.py:Class)"
    notion = "zCDP/DP"
    summary = "the privatizer's own claim (rho-zCDP or eps-DP) in one trajectory; Lemma C.2's width"
    privatizers = ("gaussian", "laplace")
    uses = ("delta", "privatizer", *SAMPLING)
    options = (SetOption("rho", float, bounds=(0, None), help="a zCDP budget (the Gaussian built-in: default 1)"),
               SetOption("beta", float, bounds=(0, 1), default=0.1,
                         help="the width's failure probability (the paper's utility delta, not the DP delta)"))
    defaults = Defaults(epsilon=1.0, samples=pa.PRIVATIZER_SAMPLES)
    claims = (
        ClaimRow("privacy.blackbox", "privacy", "the released noisy counts n' meet the privatizer's claim in one "
                 "trajectory (black box; a plug-in's noise law is not assumed)", f"{OFFLINE}, Lemma C.1, docs/derivations.md#noise-calibration",
                 "check_blackbox"),
        ClaimRow("whitebox.dp_event", "whitebox", "the PLD of the declared DpEvent stays within the claim",
                 f"{OFFLINE}, Lemma C.1 (docs/derivations.md#neighbouring-relation)", "check_dp_event"),
        ClaimRow("whitebox.zcdp_conversion", "whitebox", "a zCDP claim: the PLD epsilon of the declared DpEvent "
                 "stays within rho + 2 sqrt(rho log(1/delta_dp))", f"{OFFLINE}, Lemma E.15", "check_zcdp_conversion"),
        ClaimRow("whitebox.sensitivity", "whitebox", "one replaced trajectory moves the counts by no more than the "
                 "sensitivity the noise is calibrated for (sqrt(2H) l2 per family / 4H l1 both)",
                 f"{OFFLINE}, docs/derivations.md#neighbouring-relation", "check_sensitivity"),
        ClaimRow("whitebox.noise_scale", "whitebox", "the noise has the variance declared (built-ins: the claim's)",
                 f"{OFFLINE}, eq. 2, docs/derivations.md#noise-calibration", "check_noise_scale"),
        ClaimRow("whitebox.noise_independence", "whitebox", "fresh noise for every count and every step h: no two "
                 "released counts share a draw",
                 f"{OFFLINE}, eq. 2, Lemma C.1", "check_noise_scale"),
        *OFFLINE_ROWS,
    )

    def privatizer(self):
        from dpcheck.audits.lib.offline import APVISpec, OfflinePlugin
        o = self.opts
        choice = (o.privatizer or "gaussian").strip()
        kw = {"beta": float(self.params.beta)}
        if o.epsilon is not None:
            kw["epsilon"] = float(o.epsilon)
        if self.params.rho is not None:
            kw["rho"] = float(self.params.rho)
        if ":" in choice:
            if o.delta is not None:
                kw["delta"] = float(o.delta)
            plugin = OfflinePlugin.load(choice, **kw)
            self.spec = APVISpec(mechanism=plugin.label, budget=plugin.budget, delta=kw["beta"], plugin=plugin)
        elif choice.lower() in ("gaussian", "laplace"):
            gauss = choice.lower() == "gaussian"
            if o.delta is not None:
                raise InputError("offline_count_privatizer: --delta is used by plug-ins only")
            if gauss and "epsilon" in kw or not gauss and "rho" in kw:
                raise InputError(f"offline_count_privatizer: the {choice} built-in takes "
                                 f"{'--set rho' if gauss else '--epsilon'}")
            budget = kw.get("rho", kw.get("epsilon", 1.0))
            self.spec = APVISpec(mechanism=choice.lower(), budget=budget, delta=kw["beta"])
        else:
            raise InputError(f"offline_count_privatizer: --privatizer must be gaussian, laplace or file.py:Class, "
                             f"got {choice!r}")
        priv = self.spec.make().privatizer
        self.gaussian = self.spec.gaussian
        self.config.update(privatizer=choice, claim=priv.claim.describe(), beta=kw["beta"],
                           plugin=self.spec.plugin is not None)
        return priv

    def run(self) -> None:
        priv = self.privatizer()
        self.check_blackbox(priv)
        self.check_dp_event(priv)
        self.check_zcdp_conversion(priv)
        self.check_sensitivity(priv)
        self.check_noise_scale(priv)
        self.check_noise(priv)

    def apvi_spec(self, priv):
        return self.spec

    def check_blackbox(self, priv) -> None:
        if self.spec.plugin is None:
            return super().check_blackbox(priv)
        tgt, det = pa.offline_privatizer_plugin_target(priv, H=1, seed=self.int_seed("blackbox-pilot"))
        check, _ = self.blackbox(tgt, id="privacy.blackbox", samples=self.samples(), seed=self.int_seed("blackbox"),
                                 claim_source=priv.claim.source)
        from dataclasses import replace
        self.add(replace(check, details=dict(check.details, target=det)))

    def check_noise_scale(self, priv) -> None:
        """whitebox.noise_scale / noise_independence through DP-APVI's release (audits/lib/offline/whitebox.py)."""
        from dpcheck.audits.lib import offline
        for c in offline.noise_calibration_checks(self.apvi_spec(priv), runs=offline.CALIBRATION_RUNS,
                                                  rng=self.rng("noise-scale"), alpha=self.exe.alpha):
            self.add(c)


class OfflineRegressionPrivatizerAudit(PrivatizerAudit):
    """A :class:`dpcheck.algorithms.offline.RegressionPrivatizer` (DP-VAPVI's released statistics) alone:
    ``--privatizer gaussian | file.py:Class`` (default: the paper's), built with ``rho=`` (``--set rho``, default
    1). At H = 3, d = 2 and the sensitivities of docs/derivations.md#neighbouring-relation (one replaced trajectory, ||phi|| <= 1): a black box on the 5H
    releases shifted by their full sensitivities (no noise law assumed), the declared DpEvent, the declared
    stds, fresh noise per step, Lemma D.2's event with its own (E, L). The sensitivities themselves are
    DP-VAPVI's (``dp_vapvi``'s whitebox.sensitivity)."""

    name = "offline_regression_privatizer"
    algorithm = "DP-VAPVI privatizer of the released regression statistics (built-in or yours)"
    notion = "zCDP"
    summary = "the privatizer's own claim for the 5H releases, one trajectory replaced; Lemma D.2's widths"
    privatizers = ("gaussian",)
    uses = ("privatizer", *SAMPLING)
    options = (SetOption("rho", float, bounds=(0, None), help="the zCDP budget passed to the privatizer (default 1)"),
               SetOption("beta", float, bounds=(0, 1), default=0.1, help="the failure probability delta of Lemma D.2"))
    defaults = Defaults(samples=pa.PRIVATIZER_SAMPLES)            # the budget is rho (--set rho)
    claims = (
        ClaimRow("privacy.blackbox", "privacy", "the 5H releases, each shifted by its l2 sensitivity, meet the claim "
                 "(black box; no noise law assumed)", f"{OFFLINE}, Theorem 4.1 / Lemma D.1",
                 "offline_linear.regression_release_target"),
        ClaimRow("whitebox.dp_event", "whitebox", "the PLD of the declared DpEvent stays within the claim",
                 f"{OFFLINE}, Lemma D.1, Lemma E.16/E.17", "privatizers.dp_event_check"),
        ClaimRow("whitebox.noise_calibration", "whitebox", "each release's noise has the declared std",
                 f"{OFFLINE}, docs/derivations.md#noise-calibration", "offline_linear.regression_noise_checks"),
        ClaimRow("whitebox.noise_independence", "whitebox", "fresh noise for every release, coordinate and step h: "
                 "no two released coordinates share a draw", f"{OFFLINE}, footnote 8",
                 "offline_linear.regression_noise_checks"),
        ClaimRow("assumption.noise_bound", "assumption", "w.p. >= 1 - delta the noise stays within the declared (E, L)",
                 f"{OFFLINE}, Lemma D.2", "offline_linear.regression_noise_checks"),
    )

    def run(self) -> None:
        from dpcheck.algorithms.privatizers.loader import load_regression_privatizer
        from dpcheck.audits.lib import offline_linear as ol
        spec = (self.opts.privatizer or "gaussian").strip()
        rho = float(self.params.rho) if self.params.rho is not None else 1.0
        priv = load_regression_privatizer(spec, rho=rho)
        H, d = 3, 2
        self.config.update(privatizer=spec, claim=priv.claim.describe(), H=H, d=d, beta=float(self.params.beta))
        tgt, det = ol.regression_release_target(priv, H=H, d=d, seed=self.int_seed("blackbox-pilot"))
        check, _ = self.blackbox(tgt, id="privacy.blackbox", samples=self.samples(), seed=self.int_seed("blackbox"),
                                 claim_source=priv.claim.source)
        from dataclasses import replace
        self.add(replace(check, details=dict(check.details, target=det)))
        sens = ol.standalone_sensitivities(H)
        ev = pa.dp_event_check(priv.dp_event(H, sens), priv.claim, label=f"{pa.privatizer_class(priv).__name__}(H={H})")
        self.add(pa.tie_event(ev, ol.event_noise_finding(priv, H, sens)))   # the event must account for the noise
        # REGRESSION_NOISE_RUNS under --quick too: the draw is cheap, and a PASS must certify each release's
        # variance to 2% (privatizers.variance_band; at 2,000 runs every seed was INCONCLUSIVE)
        for c in ol.regression_noise_checks(priv, H=H, d=d, runs=REGRESSION_NOISE_RUNS, rng=self.rng("noise"),
                                            alpha=self.exe.alpha, delta=float(self.params.beta)):
            self.add(c)


CentralPrivatizerAudit.register()
LocalPrivatizerAudit.register()
OfflineGaussianPrivatizerAudit.register(validate=_offline_gaussian_options)
OfflineLaplacePrivatizerAudit.register()
OfflineCountPrivatizerAudit.register(validate=_offline_count_options)
OfflineRegressionPrivatizerAudit.register()
