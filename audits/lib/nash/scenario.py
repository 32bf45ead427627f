"""DP-Nash-VI's audit scenario (Qiao & Wang 2024, arXiv 2404.07559): the constants, the scripted user pairs and
the black-box targets -- the action pairs sent to the other pairs (JDP) and one pair's message (LDP).
"""
from __future__ import annotations


import numpy as np

from dpcheck.audit import Audit
from dpcheck.claims import Claim


SOURCE = "Qiao & Wang 2024, Differentially Private RL with Self-Play (arXiv 2404.07559)"
BETA = 0.1
REGRET_TOLERANCE = 0.1                 # exponent of the increments allowed up to 0.5 + this

# theory vs practical mode: one implementation, the audit base class's (plain functions here)
soften = Audit.soften
vacuous = Audit.vacuous


# ------------------------------------------------------------------ scripted users (JDP audit)
def jdp_scenario(H: int = 2, S: int = 2, A: int = 2, B: int = 2, seed: int = 0, K: int = 3):
    """(D, D'): K scripted user pairs (algorithms/envs/users.py: FixedTrajectoryUsers on joint actions, in
    the game protocol through UserPairs). Every pair starts in state 0 and stays there whatever the actions,
    except the first pair of D', who moves to state S-1 at her first step and stays. The game's known reward:
    1/2 for every joint action at the first step, U[0,1] (seeded) after it. Only the algorithm's randomness
    remains.

    The flat first step makes the first action the learned values' choice alone: the first pair's move to
    S-1 in D' then reaches the other pairs' actions through the kernel as well as through the bonus, so a
    planner that reads the raw transitions (not only one that reads raw visit counts) is seen. With U[0,1]
    rewards there too, the equilibrium of the first stage game was pure with a margin no kernel change crossed,
    and such a planner passed."""
    from dpcheck.algorithms.envs.users import FixedTrajectoryUsers, UserPairs
    rng = np.random.default_rng(seed)
    r = rng.random((H, S, A, B))
    r[0] = 0.5
    states = np.zeros((K, H + 1), dtype=np.int64)
    rewards = np.zeros((K, H))                     # unused: the reward is known in the games setting
    D = FixedTrajectoryUsers(H, S, A * B, states, rewards)
    other = FixedTrajectoryUsers(H, S, A * B, np.r_[0, np.full(H, S - 1)][None, :], rewards[:1])
    pairs = UserPairs(D, r, B, name="jdp scenario D")
    return pairs, UserPairs(D.replace(0, other, 0), r, B, name="jdp scenario D'")


def audit_constants(H, S, E, iota):
    """The JDP audit's constants C1 = 0, C2 = 1 / (H S max(E,1) iota): the privacy term of the bonus is 1/N
    for a raw count and ~2/E for a private one, so a raw count in the bonus changes the deployed actions;
    privacy itself does not depend on C1, C2."""
    return 0.0, 1.0 / (H * S * max(E, 1.0) * iota)


def jdp_mechanism(make_privatizer, K: int = 3, algo_cls=None, **algo_kw):
    """mechanism(game, rng, size) -> (size,) labels of the action pairs sent to pairs 2..K."""
    from dpcheck.algorithms.games.dp_nash_vi import DPNashVI, confidence_log
    from dpcheck.audits.lib import privatizers as pa

    algo_cls = algo_cls or DPNashVI

    def mechanism(game, rng, size):
        priv = make_privatizer()
        # E is public and data-independent: the privatizer declares it from its parameters and the sizes
        E = float(pa.declaration(priv, game.H, game.S, game.A * game.B, K, rewards=False).width)
        iota = confidence_log(game.H, game.S, game.A, game.B, K, BETA)
        C1, C2 = audit_constants(game.H, game.S, E, iota)
        kw = dict(mode="practical", C1=C1, C2=C2)
        kw.update(algo_kw)
        res = algo_cls(priv, beta=BETA, **kw).run(game, K, rng, runs=int(size))
        joint = res.actions_max[:, 1:, :] * game.B + res.actions_min[:, 1:, :]     # (size, K-1, H)
        flat = joint.reshape(int(size), -1)
        base = game.A * game.B
        return flat @ (base ** np.arange(flat.shape[1], dtype=np.int64))          # one label per run

    return mechanism


def jdp_target(make_privatizer, epsilon: float, K: int = 3, claim_source: str = "", delta: float = 0.0, **kw):
    """The JDP black-box target: :func:`jdp_mechanism` on the neighbouring scenarios of :func:`jdp_scenario`,
    one discrete label per run (``kw``: algo_cls and the algorithm's keyword arguments)."""
    from dpcheck.target import AuditTarget
    D, Dp = jdp_scenario(K=K)
    return AuditTarget(name="dp_nash_vi.jdp", mechanism=jdp_mechanism(make_privatizer, K=K, **kw),
                       pairs=[(D, Dp)], claim=Claim(epsilon=epsilon, delta=delta, notion="JDP", source=claim_source),
                       output="discrete")


def ldp_target(make_privatizer, epsilon: float, claim_source: str = "", *, H: int = 2, S: int = 2, A: int = 2,
               B: int = 2):
    """One pair's message for the worst neighbouring trajectories (different (s,a,b) and (s,a,b,s') at every
    step), in the games setting (joint actions A*B, rewards=False). The statistic is the Laplace
    log-likelihood ratio of the message (a post-processing, so a bound on it bounds the message); tight
    for the Laplace randomiser. Built by audits/privatizers.local_target (one implementation for both)."""
    from dpcheck.audits.lib import privatizers as pa
    claim = Claim(epsilon=epsilon, notion="LDP", source=claim_source)
    return pa.local_target(pa.ClaimedTemplate(make_privatizer(), claim, False), H=H, S=S, A=A * B, rewards=False)


def dataflow_check(make_privatizer, *, algo_cls=None, K: int = 4, runs: int = 64, seed: int = 0):
    """privacy.dataflow (Lemma 5.1 by post-processing; the billboard lemma's premise): the actions sent to pairs
    2..K and everything planned (pi, Qb, Qu, Vb, Vu of every episode) depend on the data only through the
    released counts N~ and the width E.

    The privatizer's release stream is recorded on D (:func:`jdp_scenario`) and replayed, with the same seed, on
    D' (the first pair replaced) and on D again (which must reproduce the run, else the algorithm is not a
    function of the releases and its seed, and the check cannot speak: INCONCLUSIVE). The replaying privatizer
    answers everything else (``true_counts()``) with the counts of the data really played, so a planner that
    reads them acts differently on D and D'. Any difference fails; the actions alone do not suffice (a planner
    reading the raw data where Q is clipped, or without flipping an action in this scenario, would pass)."""
    from dpcheck.algorithms.games.dp_nash_vi import DPNashVI, confidence_log
    from dpcheck.audits.lib import privatizers as pa
    from dpcheck.audits.lib.ucbvi.privacy import Recorder, ReplayPrivatizer
    from dpcheck.checks import INCONCLUSIVE, Check, invariant_check

    D, Dp = jdp_scenario(K=K)
    cls = algo_cls or DPNashVI
    probe = make_privatizer()
    E = float(pa.declaration(probe, D.H, D.S, D.A * D.B, K, rewards=False).width)
    C1, C2 = audit_constants(D.H, D.S, E, confidence_log(D.H, D.S, D.A, D.B, K, BETA))

    def run(priv, game):
        return cls(priv, beta=BETA, mode="practical", C1=C1, C2=C2, record_values=True).run(
            game, K, np.random.default_rng(seed), runs=runs)

    fields = ("actions_max", "actions_min", "pi", "Qb", "Qu", "Vb", "Vu")

    def differences(x, y):
        out = {}
        for f in fields:
            u, v = getattr(x, f), getattr(y, f)
            if f.startswith("actions"):
                u, v = u[:, 1:], v[:, 1:]               # the replaced pair's own actions may differ
            out[f] = int((~((u == v) | (np.isnan(u) & np.isnan(v)) if u.dtype.kind == "f" else u == v)).sum())
        return out

    rec = Recorder(make_privatizer())
    a = run(rec, D)
    claim = {"statement": "the actions sent to pairs 2..K and pi, Qb, Qu, Vb, Vu of every episode depend on the data "
                          "only through the released N~ and E",
             "source": f"{SOURCE}, Lemma 5.1 (post-processing; billboard lemma, Hsu et al. 2014)"}
    again = differences(a, run(ReplayPrivatizer(rec.releases, rec.width), D))
    if any(again.values()):
        return Check(id="privacy.dataflow", kind="whitebox", verdict=INCONCLUSIVE, claim=claim,
                     measured={"violations": None, "confidence": 1.0}, details={"not_reproduced": again},
                     reason="the algorithm is not reproducible under a replayed release stream (hidden randomness?)")
    diff = differences(a, run(ReplayPrivatizer(rec.releases, rec.width), Dp))
    changed = [f for f, n in diff.items() if n]
    return invariant_check(
        id="privacy.dataflow", kind="whitebox", violations=sum(diff.values()),
        total=int(sum(getattr(a, f)[:, 1:].size if f.startswith("actions") else getattr(a, f).size for f in fields)),
        claim=claim,
        details={"privatizer": type(probe).__name__, "runs": runs, "K": K, "changed": changed, "differences": diff,
                 "method": "record the release stream on D, replay it on D' (first pair replaced) and on D, same "
                           "seed; compare the other pairs' actions and everything planned, exactly"},
        what="actions of pairs 2..K and the planned pi, Qb, Qu, Vb, Vu unchanged when only the first pair's data changes")
