"""Parameter choices: the theory's eta and B (He & Zhou 2026, Appendix E) and the Appendix D
"PoC-default" configuration of docs/private_gfa.md (methods of Appendix D).

:func:`theory_parameters` evaluates Appendix E exactly as written (constants the paper leaves unspecified set to 1,
Algorithm 1 and 2 keep their own kappa and C); ``eta_form`` picks Appendix E's displayed O(.) expression
("displayed", for paper runs) or the exact balancing value sqrt(2 K Delta_S L / (C eps0)) ("balancing", for
bound checks). B is rounded up and clipped to [1, K]; eps0 comes from the realised M = ceil(K/B) (docs/derivations.md#noise-calibration).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcheck.errors import InputError
from dpcheck.algorithms.gfa.privacy import _budget, _positive_int, number_of_updates, per_update_epsilon, sensitivity

PAPER_METHODS = ("non_private_no_batch", "non_private_batched", "private_eps_8", "private_eps_5")


@dataclass(frozen=True)
class TheoryParameters:
    """Appendix E's figures for one (algorithm, K, eps, ...): kappa, C, L = ln(|F| K / alpha), Delta_S, eta_np,
    eta_p (in the chosen ``eta_form``), eta = max(eta_np, eta_p), B (integer in [1, K]), M, eps0, beta_EM."""

    algorithm: int
    K: int
    epsilon: float
    delta: float
    alpha: float
    kappa: float
    C: float
    L: float
    sensitivity: float
    eta_np: float
    eta_p: float
    eta_form: str
    eta: float
    B_real: float
    B: int
    M: int
    eps0: float
    beta_em: float


def theory_parameters(algorithm: int, *, K: int, H: int, N: int, C_cov: float, epsilon: float, delta: float,
                      alpha: float = 0.05, eta_form: str = "displayed", c_kappa: float = 1.0,
                      sensitivity_kind: str = "paper", eps0_rule: str = "exact") -> TheoryParameters:
    """Appendix E for Algorithm 1 (``C_cov``) or Algorithm 2 (``C_cov`` = C'_cov)."""
    K, H, N = _positive_int("K", K), _positive_int("H", H), _positive_int("|F|", N)
    eps = _budget("epsilon", epsilon, allow_inf=False)
    C_cov = _budget("C_cov", C_cov, allow_inf=False)
    if not 0 < alpha < 1 or not 0 < delta < 1:
        raise InputError("alpha and delta must lie in (0, 1)")
    if eta_form not in ("displayed", "balancing"):
        raise InputError(f"eta_form must be 'displayed' or 'balancing', got {eta_form!r}")
    L = math.log(N * K / alpha)
    d_s = sensitivity(algorithm, H, sensitivity_kind)
    if algorithm == 1:
        kappa = math.log(N / alpha) + math.log(H / alpha)
        C = H * C_cov * math.log(1 + C_cov * K / kappa)
        eta_np = math.sqrt(3 * K * H * kappa / C)
    else:
        kappa = c_kappa * H ** 3 * L
        C = H * C_cov * math.log(1 + K * H / kappa)
        eta_np = math.sqrt(2 * K * kappa / C)
    lnd = math.log(1 / delta)
    B_real = K ** 0.6 * d_s ** 0.4 * L ** 0.4 * lnd ** 0.2 / (eps ** 0.4 * C ** 0.4)
    B = min(K, max(1, math.ceil(B_real)))
    M = number_of_updates(K, B)
    eps0 = per_update_epsilon(eps, delta, M, eps0_rule)
    if eta_form == "displayed":
        eta_p = K ** 0.75 * d_s ** 0.5 * L ** 0.5 * lnd ** 0.25 / (B ** 0.25 * eps ** 0.5 * C ** 0.5)
    else:
        eta_p = math.sqrt(2 * K * d_s * L / (C * eps0))
    return TheoryParameters(algorithm=algorithm, K=K, epsilon=eps, delta=delta, alpha=alpha, kappa=kappa, C=C,
                            L=L, sensitivity=d_s, eta_np=eta_np, eta_p=eta_p, eta_form=eta_form,
                            eta=max(eta_np, eta_p), B_real=B_real, B=B, M=M, eps0=eps0,
                            beta_em=eps0 / (2 * d_s))


def poc_default(method: str, function_class, K: int = 300, *, delta: float = 1e-5, eta: float = 1.0,
                tie_breaking: str = "random"):
    """An Algorithm 2 learner configured as docs/private_gfa.md's PoC-default for one of Appendix D's methods.

    non_private_no_batch: B = 1, argmax; non_private_batched: B = ceil(sqrt K) (Remark 3.7);
    private_eps_8 / private_eps_5: B = ceil(K^{3/5} / eps^{2/5}), eps the total JDP budget (Appendix D), delta = 1e-5,
    eps0 by the exact solve, Delta_S = 1 (exact for the binary Appendix D class).
    """
    from dpcheck.algorithms.gfa.batched_em import NonPrivateOutcomeRL, PrivateOutcomeRL, remark_3_7_batch_size
    K = _positive_int("K", K)
    if method == "non_private_no_batch":
        return NonPrivateOutcomeRL(function_class, B=1, eta=eta, tie_breaking=tie_breaking)
    if method == "non_private_batched":
        return NonPrivateOutcomeRL(function_class, B=remark_3_7_batch_size(K), eta=eta, tie_breaking=tie_breaking)
    if method in ("private_eps_8", "private_eps_5"):
        eps = 8.0 if method.endswith("8") else 5.0
        B = min(K, math.ceil(K ** 0.6 / eps ** 0.4))
        return PrivateOutcomeRL(function_class, epsilon=eps, delta=delta, B=B, eta=eta, sensitivity="binary",
                                tie_breaking=tie_breaking)
    raise InputError(f"method must be one of {PAPER_METHODS}, got {method!r}")
