"""Audits of Private-LinOpt-VI and Private-LinOpt-PO (Zhou, "Differentially Private RL with Linear Function
Approximation"; Zhou 2022): ``dpcheck audit private_linopt_vi`` / ``private_linopt_po``.

The module opens with the two claim tables (the rows both algorithms share are written once; the optimism
row differs: C14 for Algorithm 1, C15 / C16 for Algorithm 2; most regret rows name each one's theorem). One
base class holds ``run``; the two registered subclasses name the algorithm and its table.
The check functions live in audits/lib/linopt/.

What the audit runs (the paper has no experiments; docs/private_linopt.md describes the protocol):

* privacy at the command line's eps (default 1): the JDP black box on scripted users (vacuous when every Q is
  clipped, which is the case at eps = 1 on LM-2: proofs of Theorems 6.4-6.5, docs/derivations.md#noise-calibration scale warning), the declared Gaussian trees accounted
  exactly by PLD against the claim (reporting the eps the calibration really achieves), the calibration
  recomputed from Assumption 1, the hypothesis search over neighbouring users on a replayed transcript (tree
  accounting and billboard premise), and the tree's noise reuse on every counter, matrix ones included;
* Assumption 2, Lemma 3.1 and optimism over repetitions at the same eps;
* regret in the weak-privacy range (Theorem 6.5: eps in {10^2, ..., 10^4}), where the bonus no longer
  saturates at simulable K: the increment exponent (private at the largest eps, and the non-private
  reduction), the privacy-cost scaling in eps, the deterministic eps^(-1/2) scaling of beta_p, and the
  explicit per-run bound at every eps of the grid.

A researcher's stream privatizer: ``--privatizer file.py:Class`` (a :class:`dpcheck.algorithms.linear.StreamPrivatizer`)
runs inside the algorithm for every check; the checks that read the paper's calibration formula read the plug-in's
own declaration instead (its trees' sensitivities, its Assumption 2 constants), and the tree checks need it to
declare trees (docs/privatizers.md).

A user's instance: ``--set instance=PATH.npz`` (arrays psi, varphi, theta_p, theta_r; optional d, init,
reward_noise), validated against Assumption 1 (exit 2 with one line on any violation).
"""
from __future__ import annotations

from dataclasses import replace

from dpcheck.audits.lib import linopt as lib
from dpcheck.audit import Audit, ClaimRow, Defaults
from dpcheck.parallel import with_result_cache
from dpcheck.registry import SAMPLING, SetOption

Z = "Zhou (Private linear mixture RL)"
WEAK_EPS = (1e2, 10 ** 2.5, 1e3, 10 ** 3.5, 1e4)


# The claim tables. Both algorithms share the privacy rows, the Assumption 2 / Lemma 3.1 rows and two regret
# rows (the non-private reduction, the radius scaling) word for word (one tuple each, written once); the
# optimism row and the other regret rows name each algorithm's own equation or theorem and are written out in
# each table.
PRIVACY_ROWS = (
    ClaimRow("privacy.jdp.blackbox", "privacy",
             "the actions sent to all other users are (eps + eps^2/(16 H ln(4H/delta)), delta)-JDP (black box, "
             "scripted users)",
             f"{Z}, Thm 6.4, Def 2.2", "linopt.jdp_blackbox_check"),
    ClaimRow("privacy.release.blackbox", "privacy",
             "the Privatizer's released statistics {Lambda^k, u^k} (the billboard every planner reads) are (eps', "
             "delta)-DP in one user (black box, optimal Gaussian statistic, transcript replayed)",
             f"{Z}, Thm 6.4 (billboard lemma)", "linopt.release_blackbox_check"),
    ClaimRow("whitebox.dp_event", "whitebox",
             "the 4H Gaussian binary counters, accounted exactly (PLD, replacement), meet the claimed (eps, delta); "
             "the eps the calibration achieves is reported",
             f"{Z}, Thm 6.4", "linopt.dp_event_check"),
    ClaimRow("whitebox.calibration", "whitebox",
             "each counter kind is eps^2/(64 H ln(4H/delta))-zCDP with the noise it draws and the sensitivity "
             "Assumption 1 implies (d1 H^2, sqrt(d1) H^2, 1, 1)",
             f"{Z}, proof of Thm 6.4, docs/derivations.md#audit-modes", "linopt.calibration_check"),
    ClaimRow("whitebox.sensitivity", "whitebox",
             "conditioned on the transcript, one user changes only her item of each stream: <= m nodes per counter, "
             "node-vector change <= declared sqrt(H m) Delta_c",
             f"{Z}, Lemma 6.1", "linopt.stream_sensitivity_check"),
    ClaimRow("privacy.dataflow", "whitebox",
             "the actions depend only on the releases and the user's own states (billboard lemma's premise): "
             "under a replayed release stream, Q before and after the clip and the actions coincide",
             f"{Z}, proof of Thm 6.4", "linopt.stream_sensitivity_check"),
    ClaimRow("whitebox.tree_noise_reuse", "whitebox",
             "node noise drawn once, with the declared sigma, and reused (tree covariance per entry), matrix "
             "releases exactly symmetric",
             f"Chan, Shi & Song 2011; {Z}, Section 6.1", "linopt.tree_reuse_check"),
    ClaimRow("whitebox.noise_scale", "whitebox",
             "the node noise drawn at the instance's H, d1, d2 has the declared variance sigma_c^2 at every tree level "
             "(to the regret sweep's K), step h, counter kind and entry",
             f"{Z}, Section 6.1, proof of Thm 6.4", "linopt.noise_law_checks"),
    ClaimRow("whitebox.noise_independence", "whitebox",
             "no two released coordinates (steps h, Gram vs vector counters, entries) share a node draw",
             f"{Z}, Section 6.1, proof of Thm 6.4", "linopt.noise_law_checks"),
)
ASSUMPTION_ROWS = (           # Assumption 2 and Lemma 3.1
    ClaimRow("assumption.lambda_min*", "assumption",
             "||(Z_h^k)^{-1}|| <= 1/lambda_min for all k, h w.p. >= 1 - alpha",
             f"{Z}, Assumption 2, proof of Thm 6.5", "linopt.assumption_checks"),
    ClaimRow("assumption.lambda_max*", "assumption",
             "||Z_h^k|| <= lambda_max for all k, h w.p. >= 1 - alpha",
             f"{Z}, Assumption 2, proof of Thm 6.5", "linopt.assumption_checks"),
    ClaimRow("assumption.nu*", "assumption",
             "||z_h^k||_{(Z_h^k)^{-1}} <= nu for all k, h w.p. >= 1 - alpha",
             f"{Z}, Assumption 2, proof of Thm 6.5", "linopt.assumption_checks"),
    ClaimRow("assumption.confidence_set*", "assumption",
             "theta_{h,p}, theta_{h,r} lie in their confidence ellipsoids for all k, h w.p. >= 1 - 3 alpha",
             f"{Z}, Lemma 3.1", "linopt.assumption_checks"),
)
NONPRIVATE_ROWS = (           # the non-private reduction of both algorithms
    ClaimRow("regret.exponent.nonprivate", "regret",
             "the non-private reduction (Z = I) has O~(d sqrt(H^3 T)) regret: increment exponent <= 0.5 + 0.1",
             f"{Z}, Remark 6.7", "linopt.exponent_check"),
)
RADIUS_ROWS = (               # the confidence radius of both algorithms
    ClaimRow("regret.radius_scaling", "regret",
             "beta_p(alpha) ~ eps^(-1/2) once the noise dominates",
             f"{Z}, Thm 6.5 derivation", "linopt.radius_scaling_check"),
)
VI_CLAIMS = (                 # private_linopt_vi: Algorithm 1, Thm 4.1, Thm 6.5 eq. 4
    *PRIVACY_ROWS,
    *ASSUMPTION_ROWS,
    ClaimRow("assumption.optimism*", "assumption",
             "on the good event of Lemma 3.1, Q_h^k >= Q_h^* for all k, h, s, a",
             f"{Z}, Lemma 7.2", "linopt.assumption_checks"),
    ClaimRow("regret.exponent", "regret",
             "Regret = O~(sqrt(T)) at fixed eps (weak-privacy range): increment exponent <= 0.5 + 0.1",
             f"{Z}, Thm 6.5 eq. 4", "linopt.exponent_check"),
    *NONPRIVATE_ROWS,
    ClaimRow("regret.privacy_scaling", "regret",
             "the privacy cost R_private - R_nonprivate scales like eps^(-1/2) (between eps^-1.1 and eps^-0.2 on a "
             "gapped instance); it never grows with eps",
             f"{Z}, Thm 6.5 eq. 4", "linopt.scaling_checks"),
    *RADIUS_ROWS,
    ClaimRow("regret.explicit_bound", "regret",
             "R(K) <= the explicit bound of Thm 4.1 (T1 + T2 + T3) in every run, w.p. >= 1 - 4 alpha",
             f"{Z}, Thm 4.1 (T1 + T2 + T3)", "linopt.explicit_bound_check"),
)
PO_CLAIMS = (                 # private_linopt_po: Algorithm 2, Thm 5.1, Thm 6.5 eq. 5
    *PRIVACY_ROWS,
    *ASSUMPTION_ROWS,
    ClaimRow("assumption.optimism*", "assumption",
             "on the good event, 0 <= -iota_h^k <= 2 (Gamma_p + Gamma_r) and the lower clip never binds",
             f"{Z}, eq. 3 / eq. 7", "linopt.assumption_checks"),
    ClaimRow("regret.exponent", "regret",
             "Regret = O~(sqrt(T)) at fixed eps (weak-privacy range): increment exponent <= 0.5 + 0.1",
             f"{Z}, Thm 6.5 eq. 5", "linopt.exponent_check"),
    *NONPRIVATE_ROWS,
    ClaimRow("regret.privacy_scaling", "regret",
             "the privacy cost R_private - R_nonprivate scales like eps^(-1/2) (between eps^-1.1 and eps^-0.2 on a "
             "gapped instance); it never grows with eps",
             f"{Z}, Thm 6.5 eq. 5", "linopt.scaling_checks"),
    *RADIUS_ROWS,
    ClaimRow("regret.explicit_bound", "regret",
             "R(K) <= the explicit bound of Thm 5.1 (mirror + martingale + T1 + T2) in every run, w.p. >= 1 - 4 alpha",
             f"{Z}, Thm 5.1 (mirror + martingale + T1 + T2)", "linopt.explicit_bound_check"),
)


class _PrivateLinOptAudit(Audit):
    """Shared body of the two audits (module docstring); subclasses set ``algorithm_key``."""

    algorithm_key = "vi"
    notion = "JDP"
    options = (
        SetOption("instance", str, help="lm2 (default), tabular (|S| = |A| = 2, H = 3) or PATH.npz "
                                        "(psi, varphi, theta_p, theta_r; optional d, init, reward_noise)"),
        SetOption("delta", float, bounds=(0, 1), default=0.1, help="the JDP delta"),
        SetOption("utility_alpha", float, bounds=(0, 1), default=0.05,
                  help="failure probability alpha of Assumption 2 / Lemma 3.1 / the regret bound"),
        SetOption("radius_dim", str, choices=("d", "d1"), default="d", help="Sigma_{p,1} with sqrt(d) or sqrt(d1) (Lemma B.4)"),
        SetOption("sensitivity_mode", str, choices=("paper", "replacement"), default="paper",
                  help="noise for the paper's one-item sensitivity or for replacement neighbours (docs/derivations.md#neighbouring-relation)"),
        SetOption("target", str, choices=("paper", "exact"), default="paper",
                  help="claim eps + eps^2/(16 H ln(4H/delta)) (paper) or calibrate to exactly eps (Theorem 6.4)"),
    )
    uses = ("privatizer", *SAMPLING)
    # --privatizer paper (the Section 6.1 Privatizer, default) or file.py:Class, a researcher's
    # dpcheck.algorithms.linear.StreamPrivatizer built as Class(epsilon=, delta=) (docs/privatizers.md)
    privatizers = ("paper",)
    defaults = Defaults(epsilon=1.0, samples=(200_000, 20_000))     # both audits (their claim tables: _claims)

    def spec(self, **kw) -> lib.LinOptSpec:
        plugin = self.opts.privatizer
        if plugin is not None and plugin.strip().lower() == "paper":
            plugin = None
        return lib.LinOptSpec(algorithm=self.algorithm_key, epsilon=self.epsilon, delta=float(self.params.delta),
                              alpha=float(self.params.utility_alpha), radius_dim=self.params.radius_dim,
                              sensitivity_mode=self.params.sensitivity_mode, target=self.params.target,
                              plugin=plugin, **kw)

    def run(self) -> None:
        env = lib.load_instance(self.params.instance)
        exe = self.exe
        if self.params.instance not in (None, "lm2", "tabular"):
            lib.check_instance_size(self.params.instance, env, quick=exe.quick,
                                    samples=self.samples())
        spec = self.spec()
        spec.privatizer()                       # a bad flag / budget is an InputError before any work
        K_regret = exe.pick(16384, 8192)
        # a plug-in runs the weak-privacy checks where its own noise matches the paper's at WEAK_EPS
        self.weak_eps = lib.equivalent_eps_grid(spec, env, K_regret, WEAK_EPS)
        self.config.update({"algorithm": spec.label, "instance": repr(env), "spec": spec.describe(),
                            "weak_privacy_eps": list(self.weak_eps), "paper_equivalent_eps": list(WEAK_EPS),
                            "K_regret": K_regret,
                            "note": "privacy and assumption checks at the command line's eps; regret rates in the "
                                    "weak-privacy range (Theorem 6.5, proofs of Theorems 6.4-6.5, docs/derivations.md#noise-calibration scale warning)"})
        self.privacy(spec, env, K_regret)
        self.assumptions(spec, env)
        self.regret(spec, env, K_regret)

    def privacy(self, spec, env, K) -> None:
        exe = self.exe
        self.progress(f"{self.name}: white box (PLD, calibration, tree reuse, sensitivity search)")
        self.add(lib.dp_event_check(spec, env, K))
        self.add(lib.calibration_check(spec, env, K))
        self.add(lib.tree_reuse_check(spec, runs=exe.pick(2_000, 1_000), seed=exe.seed, alpha=exe.alpha))
        # the node noise drawn at the instance's H, d1, d2 over every level of the largest tree the audit runs
        for c in lib.noise_law_checks(spec, env, K, seed=exe.seed, alpha=exe.alpha):
            self.add(c)
        sens, flow = lib.stream_sensitivity_check(spec, env, K=exe.pick(12, 8), examples=exe.pick(150, 40),
                                                  seed=exe.seed)
        self.add(sens)
        self.add(flow)
        self.progress(f"{self.name}: black box on the released statistics and on the actions (scripted users)")
        samples = self.samples()
        self.add(lib.release_blackbox_check(spec, env, exe, samples=samples))
        self.add(lib.jdp_blackbox_check(spec, env, exe, samples=samples))

    def assumptions(self, spec, env) -> None:
        exe = self.exe
        self.progress(f"{self.name}: Assumption 2, Lemma 3.1, optimism")
        runs = exe.pick(300, 100)      # 0 failures in >= 59 runs certify alpha = 0.05 at 95%
        for c in lib.assumption_checks(spec, env, K=exe.pick(256, 64), runs=runs, seed=exe.seed + 1,
                                       alpha=exe.alpha):
            self.add(c)
        # at eps = 1 every Q is clipped (optimism holds by construction); the same claims at the weak-privacy
        # end of the regret grid, where the bonus no longer saturates, are the informative ones
        weak = replace(spec, epsilon=self.weak_eps[-1])
        self.progress(f"{self.name}: the same at eps = {self.weak_eps[-1]:g} (ids *.weak_privacy)")
        for c in lib.assumption_checks(weak, env, K=exe.pick(1024, 256), runs=runs, seed=exe.seed + 3,
                                       alpha=exe.alpha, suffix=".weak_privacy"):
            self.add(c)

    def regret(self, spec, env, K) -> None:
        exe = self.exe
        self.progress(f"{self.name}: regret in the weak-privacy range (K = {K})")
        runs = exe.pick(6, 4)
        weak = self.weak_eps
        grid = lib.regret_grid(spec, env, K=K, runs=runs, seed=exe.seed + 2, eps_grid=weak, exe=exe)
        label = f"{spec.label} (eps = {weak[-1]:g})"
        self.add(lib.exponent_check(grid["private"][weak[-1]], K, id="regret.exponent", alpha=exe.alpha,
                                    seed=exe.seed, label=label))
        self.add(lib.exponent_check(grid["nonprivate"], K, id="regret.exponent.nonprivate", alpha=exe.alpha,
                                    seed=exe.seed, label="non-private reduction"))
        x_map = dict(zip(weak, WEAK_EPS)) if spec.plugin is not None else None
        for c in lib.scaling_checks(grid, alpha=exe.alpha, seed=exe.seed, x_map=x_map):
            self.add(c)
        self.add(lib.radius_scaling_check(spec, env, K))
        self.add(lib.explicit_bound_check(grid, spec, alpha=exe.alpha))


class PrivateLinOptVIAudit(_PrivateLinOptAudit):
    name = "private_linopt_vi"
    algorithm = "Private-LinOpt-VI (Zhou, Algorithm 1 with the Privatizer, Def 6.2)"
    summary = ("(eps + eps^2/(16 H ln(4H/delta)), delta)-JDP; Regret O~(d sqrt(T H^3) + "
               "d^{7/4} sqrt(T H^4) ln(H/delta)^{1/4} / eps^{1/2})")
    algorithm_key = "vi"
    claims = VI_CLAIMS


class PrivateLinOptPOAudit(_PrivateLinOptAudit):
    name = "private_linopt_po"
    algorithm = "Private-LinOpt-PO (Zhou, Algorithm 2 with the Privatizer, Def 6.3)"
    summary = ("(eps + eps^2/(16 H ln(4H/delta)), delta)-JDP; Regret O~(d sqrt(T H^3) + sqrt(T H^3 ln|A|) + "
               "d^{7/4} sqrt(T H^4) ln(H/delta)^{1/4} / eps^{1/2})")
    algorithm_key = "po"
    claims = PO_CLAIMS


PrivateLinOptVIAudit.register(wrap=with_result_cache)
PrivateLinOptPOAudit.register(wrap=with_result_cache)
