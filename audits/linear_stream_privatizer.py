"""``dpcheck audit linear_stream_privatizer``: the stream privatizer of Private-LinOpt-VI / -PO (Zhou,
"Differentially Private RL with Linear Function Approximation", Section 6.1, Thm 6.4; docs/privatizers.md)
audited alone -- the paper's Privatizer (``--privatizer paper``, the default) or a researcher's
:class:`dpcheck.algorithms.linear.StreamPrivatizer` (``--privatizer file.py:Class``, built as
``Class(epsilon=, delta=)``).

On LM-2 (Zhou, Section 6.1), at ``--epsilon`` (default 1) and ``--set delta=`` (default 0.1):

* ``privacy.release.blackbox``: the released statistics {Lambda^k, u^k} with one user replaced, a transcript
  replayed on both sides, a linear statistic of the implied tree nodes (any statistic is a valid event);
* ``whitebox.dp_event``: the declared DpEvent accounted exactly by PLD against the claim;
* ``whitebox.calibration``: the built-in's calibration formula, or a plug-in's declared tree
  sensitivities against what Assumption 1 implies;
* ``whitebox.sensitivity`` / ``privacy.dataflow``: the hypothesis search over neighbouring users (trees);
* ``whitebox.tree_noise_reuse``: node noise drawn once and reused (trees);
* ``whitebox.noise_scale`` / ``whitebox.noise_independence``: the node noise drawn at the instance's H, d1, d2 over
  every level of a tree of 2^12 episodes (--quick 2^11; 4 x its own K), against the declared trees (trees);
* ``assumption.regularizer``: Assumption 2 with the declared constants, over repetitions.
"""
from __future__ import annotations

from dpcheck.audit import Audit, ClaimRow, Defaults
from dpcheck.audits.lib import linopt as lib
from dpcheck.registry import SAMPLING, SetOption

Z = "Zhou (Private linear mixture RL)"


class LinearStreamPrivatizerAudit(Audit):
    name = "linear_stream_privatizer"
    algorithm = "The stream privatizer of Private-LinOpt-VI / -PO (the paper's Gaussian trees or a plug-in)"
    notion = "JDP"
    summary = "the released statistics are (eps', delta)-DP in one user (Thm 6.4); Assumption 2 constants hold"
    privatizers = ("paper",)
    uses = ("privatizer", *SAMPLING)
    options = (
        SetOption("delta", float, bounds=(0, 1), default=0.1, help="the JDP delta"),
        SetOption("utility_alpha", float, bounds=(0, 1), default=0.05,
                  help="failure probability alpha of Assumption 2"),
    )
    defaults = Defaults(epsilon=1.0, samples=(200_000, 20_000))
    claims = (
        ClaimRow("privacy.release.blackbox", "privacy", "the released statistics {Lambda^k, u^k} are (eps', delta)-DP "
                 "in one user (black box, transcript replayed)", f"{Z}, Thm 6.4 (billboard lemma)",
                 "linopt.release_blackbox_check"),
        ClaimRow("whitebox.dp_event", "whitebox", "the declared DpEvent, accounted exactly (PLD, replacement), meets "
                 "the claimed (eps', delta)", f"{Z}, Thm 6.4", "linopt.dp_event_check"),
        ClaimRow("whitebox.calibration", "whitebox", "the noise drawn covers the sensitivity Assumption 1 implies",
                 f"{Z}, proof of Thm 6.4, Lemma 6.1", "linopt.calibration_check"),
        ClaimRow("whitebox.sensitivity", "whitebox", "one user changes <= m nodes per counter, node-vector change <= "
                 "the declared sensitivity", f"{Z}, Lemma 6.1", "linopt.stream_sensitivity_check"),
        ClaimRow("privacy.dataflow", "whitebox", "the actions depend only on the releases and the user's own states: "
                 "under a replayed release stream, Q before and after the clip and the actions coincide",
                 f"{Z}, proof of Thm 6.4", "linopt.stream_sensitivity_check"),
        ClaimRow("whitebox.tree_noise_reuse", "whitebox", "node noise drawn once, with the declared sigma, and reused; releases symmetric",
                 f"Chan, Shi & Song 2011; {Z}, Section 6.1", "linopt.tree_reuse_check"),
        ClaimRow("whitebox.noise_scale", "whitebox",
                 "the node noise drawn at the instance's H, d1, d2 has the declared variance at every tree level "
                 "(K = 2^12), step, counter kind and entry",
                 f"{Z}, Section 6.1, proof of Thm 6.4", "linopt.noise_law_checks"),
        ClaimRow("whitebox.noise_independence", "whitebox", "no two released coordinates (steps, Gram vs vector "
                 "counters, entries) share a node draw", f"{Z}, Section 6.1, proof of Thm 6.4",
                 "linopt.noise_law_checks"),
        ClaimRow("assumption.regularizer", "assumption", "Assumption 2 (lambda_min, lambda_max, nu) for all k = 1..K "
                 "(release 1 included), h, w.p. >= 1 - alpha; Z, z = release - exact sums", f"{Z}, Assumption 2", "linopt.assumption2_alone_check"),
    )

    def run(self) -> None:
        exe = self.exe
        env = lib.load_instance(None)
        eps = self.epsilon
        plugin = self.opts.privatizer
        if plugin is not None and plugin.strip().lower() == "paper":
            plugin = None
        spec = lib.LinOptSpec(epsilon=eps, delta=float(self.params.delta), alpha=float(self.params.utility_alpha),
                              plugin=plugin)
        priv = spec.privatizer()                       # loads, checks and probes a plug-in before any work
        K = exe.pick(1024, 256)
        self.config.update(privatizer=plugin or "paper", epsilon=eps, delta=spec.delta, instance=repr(env),
                           K_whitebox=K, neighbouring="replacement")
        self.progress(f"{self.name}: white box (PLD, calibration, tree reuse, sensitivity search)")
        self.add(lib.dp_event_check(spec, env, K))
        self.add(lib.calibration_check(spec, env, K))
        self.add(lib.tree_reuse_check(spec, runs=exe.pick(2_000, 1_000), seed=exe.seed, alpha=exe.alpha))
        # the node noise drawn at the instance's H, d1, d2 over every level of the largest tree the audit runs
        for c in lib.noise_law_checks(spec, env, exe.pick(2 ** 12, 2 ** 11), seed=exe.seed, alpha=exe.alpha):
            self.add(c)
        sens, flow = lib.stream_sensitivity_check(spec, env, K=exe.pick(12, 8), examples=exe.pick(150, 40), seed=exe.seed)
        self.add(sens)
        self.add(flow)
        self.progress(f"{self.name}: black box on the released statistics")
        samples = self.samples()
        self.add(lib.release_blackbox_check(spec, env, exe, samples=samples))
        self.progress(f"{self.name}: Assumption 2 over repetitions")
        self.add(lib.assumption2_alone_check(priv, lib.sizes_for(env, exe.pick(256, 64)), runs=exe.pick(300, 100),
                                             seed=self.int_seed("assumption2"), alpha=exe.alpha, beta=spec.alpha))


LinearStreamPrivatizerAudit.register()
