"""Built-in example audit: a counting query released with Lap(1/eps) (the README's first run).

``dpcheck audit laplace_example`` audits it black-box; ``--epsilon`` changes the eps the
mechanism is calibrated to and claims. It is also the template of an algorithm audit
(docs/interfaces.md "How to add an algorithm audit"): claim table first, then ``run``.
"""
from __future__ import annotations

from dpcheck.audit import Audit, ClaimRow, Defaults
from dpcheck.registry import SAMPLING

SOURCE = "Dwork, McSherry, Nissim & Smith 2006, Laplace mechanism"


class LaplaceExample(Audit):
    name = "laplace_example"
    algorithm = "Laplace mechanism (example)"
    notion = "DP"
    summary = "epsilon = 1"
    uses = SAMPLING
    defaults = Defaults(epsilon=1.0, samples=(10**6, 10**5))
    claims = (
        ClaimRow("privacy.blackbox", "privacy", "a count of sensitivity 1 plus Lap(1/eps) is eps-DP",
                 SOURCE + " (Example 1)", "run"),
    )

    def run(self) -> None:
        from dpcheck import AuditTarget, Claim

        eps = self.epsilon
        scale = 1.0 / eps                          # sensitivity 1 / eps (Dwork et al. 2006)

        def noisy_count(count, rng, size):
            return rng.laplace(float(count), scale, size)

        target = AuditTarget(name="laplace_example", mechanism=noisy_count, pairs=[(10, 11)],
                             claim=Claim(epsilon=eps, source=SOURCE))
        samples = self.samples()
        self.config["mechanism"] = f"count + Lap(1/{eps:g})"
        self.config["claim"] = target.claim.to_dict()
        check, _ = self.blackbox(target, id="privacy.blackbox", samples=samples, claim_source=SOURCE)
        self.add(check)


LaplaceExample.register()
