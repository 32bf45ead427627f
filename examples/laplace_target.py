"""A user's audit target: `dpcheck audit examples/laplace_target.py:target`."""
import numpy as np
from dpcheck import AuditTarget, Claim

def noisy_count(count, rng: np.random.Generator, size: int):
    return count + rng.laplace(0.0, 1.0 / 1.0, size)      # Lap(1/eps), eps = 1, sensitivity 1

target = AuditTarget(name="noisy_count", mechanism=noisy_count, pairs=[(10, 11)],
                     claim=Claim(epsilon=1.0, source="Dwork et al. 2006, Laplace mechanism"))
