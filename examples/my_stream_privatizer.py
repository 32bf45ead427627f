"""A user's stream privatizer for Private-LinOpt-VI / -PO: the same four Gaussian binary counters as the
paper's Privatizer, calibrated exactly instead of by zCDP basic composition.

Use it with
    dpcheck audit linear_stream_privatizer --privatizer examples/my_stream_privatizer.py:AnalyticGaussianTrees
    dpcheck audit private_linopt_vi        --privatizer examples/my_stream_privatizer.py:AnalyticGaussianTrees

The paper (Zhou, Thm 6.4) calibrates every counter to eps^2 / (64 H ln(4H/delta))-zCDP and converts the
total by rho + 2 sqrt(rho ln(1/delta)), which leaves a large slack (the audit reports an achieved eps far
below the claim). Here the whole transcript is one Gaussian mechanism: tree c (the H counters of kind c,
every item in at most m = max(1, ceil(log2 K)) nodes) has l2 sensitivity sqrt(H m) Delta_c under
replacement (Assumption 1: Delta_p1 = sqrt(2) d1 H^2, Delta_p2 = 2 sqrt(d1) H^2, Delta_r1 = sqrt(2),
Delta_r2 = 2), so with node std sigma_c = sqrt(H m) Delta_c x 2 / mu the four trees are mu-GDP together,
and mu is the largest value whose (eps, delta) profile meets the budget exactly (Balle & Wang 2018, Thm 8;
Dong, Roth & Su 2022, Cor 2.13). Assumption 2's constants follow from sigma_c with the paper's Lemma
B.4 / B.5 bounds (dimension d1 in Sigma_p).

``ForgetsTreeDepth`` is its planted-bug twin: it calibrates as if each item entered one node (sqrt(H), not
sqrt(H m)), and declares the same: ``whitebox.calibration`` and ``whitebox.sensitivity`` fail it.
"""
import math


from dpcheck import Claim
from dpcheck.algorithms.linear import Assumption2, StreamPrivatizer
from dpcheck.algorithms.privatizers import TreeCounter

COUNTERS = ("p1", "p2", "r1", "r2")


def gaussian_delta(mu: float, eps: float) -> float:
    """delta(eps) of mu-GDP: the Gaussian mechanism with noise multiplier 1 / mu (Balle & Wang 2018, Thm 8;
    dpcheck.accounting.gaussian_delta)."""
    from dpcheck.accounting import gaussian_delta as profile
    return profile(1.0 / mu, eps)


def gdp_mu_for(eps: float, delta: float) -> float:
    """The largest mu with delta(eps; mu) <= delta (bisection in log mu)."""
    lo, hi = 1e-8, 1e7
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if gaussian_delta(mid, eps) <= delta else (lo, mid)
    return lo


class AnalyticGaussianTrees(StreamPrivatizer):
    name = "analytic_gaussian_trees"
    depth_in_sensitivity = True          # every item is in m nodes of its tree

    def __init__(self, epsilon=1.0, delta=0.1):
        self.epsilon, self.delta = float(epsilon), float(delta)

    # -- the one source of truth: per-item norms, tree sensitivities, node stds ------------------------
    def item_sensitivities(self, sizes):
        H2 = float(sizes.H) ** 2
        return {"p1": math.sqrt(2) * sizes.d1 * H2, "p2": 2 * math.sqrt(sizes.d1) * H2,
                "r1": math.sqrt(2), "r2": 2.0}

    def trees(self, sizes, neighbouring="replacement"):
        levels = sizes.m if self.depth_in_sensitivity else 1
        mu = gdp_mu_for(self.epsilon, self.delta)
        out = {}
        for c, D in self.item_sensitivities(sizes).items():
            sens = math.sqrt(sizes.H * levels) * D
            out[c] = TreeCounter(sizes.insertions, node_scale=2.0 * sens / mu, sensitivity=sens,
                                 noise="gaussian", symmetric=c.endswith("1"))
        return out

    def noise_radii(self, sizes, alpha):
        s = {c: t.node_scale for c, t in self.trees(sizes).items()}
        K, H, m = sizes.K, sizes.H, sizes.m
        tail_N = math.sqrt(8.0 * math.log(8.0 * K * H / alpha))
        tail_z = math.sqrt(2.0 * math.log(4.0 * K * H / alpha))
        return {"Sigma_p": s["p1"] * math.sqrt(m) * (4.0 * math.sqrt(sizes.d1) + tail_N),
                "Sigma_r": s["r1"] * math.sqrt(m) * (4.0 * math.sqrt(sizes.d2) + tail_N),
                "z_p": s["p2"] * math.sqrt(m) * (math.sqrt(sizes.d1) + tail_z),
                "z_r": s["r2"] * math.sqrt(m) * (math.sqrt(sizes.d2) + tail_z)}

    def shifts(self, sizes, alpha):
        R = self.noise_radii(sizes, alpha)
        return 2.0 * R["Sigma_p"], 2.0 * R["Sigma_r"]

    def constants(self, sizes, alpha):
        R = self.noise_radii(sizes, alpha)
        return Assumption2(R["Sigma_p"], 3.0 * R["Sigma_p"], R["z_p"] / math.sqrt(R["Sigma_p"]),
                           R["Sigma_r"], 3.0 * R["Sigma_r"], R["z_r"] / math.sqrt(R["Sigma_r"]))

    # -- privacy as data -----------------------------------------------------------------------------
    def dp_event(self, sizes, neighbouring="replacement"):
        import dp_accounting
        return dp_accounting.ComposedDpEvent([t.dp_event() for t in self.trees(sizes).values()])

    def claim(self, sizes):
        return Claim(epsilon=self.epsilon, delta=self.delta, notion="JDP", neighbouring="replacement",
                     source="Zhou, Thm 6.4 (billboard lemma) with an exact Gaussian calibration "
                            "(Balle & Wang 2018, Thm 8)")

    def describe(self, sizes, alpha):
        return {"name": self.name, "gdp_mu": gdp_mu_for(self.epsilon, self.delta),
                **{f"sigma_{c}": t.node_scale for c, t in self.trees(sizes).items()}}


class ForgetsTreeDepth(AnalyticGaussianTrees):
    """PLANTED BUG: sensitivity sqrt(H) Delta instead of sqrt(H m) Delta (one node per item)."""

    name = "forgets_tree_depth"
    depth_in_sensitivity = False
