"""Built-in example audit: a counting query released with Lap(1/eps) (the README's first run).

``dpcheck audit laplace_example`` audits it black-box; ``--epsilon`` changes the eps the
mechanism is calibrated to and claims.
"""
from __future__ import annotations

from dpcheck.registry import PARALLEL, register


@register("laplace_example", algorithm="Laplace mechanism (example)", notion="DP", claim="epsilon = 1",
          description="counting query + Lap(1/eps), audited black-box", default_epsilon=1.0,
          uses=("epsilon", "samples", "seed", "alpha", *PARALLEL, "quick", "cache_dir"))
def run(ctx) -> None:
    from dpcheck import AuditTarget, Claim
    from dpcheck.blackbox import audit

    o = ctx.options
    eps = o.epsilon if o.epsilon is not None else 1.0
    scale = 1.0 / eps                          # sensitivity 1 / eps (Dwork et al. 2006)

    def noisy_count(count, rng, size):
        return rng.laplace(float(count), scale, size)

    target = AuditTarget(name="laplace_example", mechanism=noisy_count, pairs=[(10, 11)],
                         claim=Claim(epsilon=eps, source="Dwork, McSherry, Nissim & Smith 2006, Laplace mechanism"))
    samples = o.samples if o.samples is not None else (10**5 if o.quick else 10**6)
    ctx.config["mechanism"] = f"count + Lap(1/{eps:g})"
    ctx.config["claim"] = target.claim.to_dict()
    result = audit(target, samples=samples, alpha=o.alpha, seed=o.seed, workers=o.workers, backend=o.backend,
                   scheduler=o.scheduler, progress=ctx.progress, cache_dir=o.cache_dir)
    ctx.add(result.to_check(id="privacy.blackbox", claim_source=target.claim.source))
