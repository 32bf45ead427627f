"""DP-Nash-VI's privatizers (Qiao & Wang 2024): built by name, their declared widths and privacy terms
(Theorems 5.2 / 5.5, eq. 48), a user's privatizer's width-matched sweep, and the privatizer audits of
audits/lib/privatizers/ in the games setting (joint actions A*B, 2 stream families).
"""
from __future__ import annotations


import numpy as np

from dpcheck.checks import Check
from dpcheck.claims import Claim
from dpcheck.audits.lib.nash.scenario import BETA
from dpcheck.audits.lib.privatizers.targets import PLANNER_VIEW_SAMPLES   # one budget for every audit's planner view


def theorem_privacy_term(spec: str, eps: float, calibration: str, game, K_grid) -> np.ndarray:
    """The K-dependence of the privacy term of Theorems 5.2 / 5.5: H^2 S^2 A B E(K) iota(K)^2 (eq. 48), with
    the privatizer's own (public, data-independent) width E(K) at horizon K: polylog for the Central
    privatizer, sqrt(K) polylog for the Local one. Only its shape in K is used."""
    from dpcheck.algorithms.games.dp_nash_vi import confidence_log
    from dpcheck.algorithms.privatizers import load_privatizer
    from dpcheck.audits.lib import privatizers as pa
    out = []
    for K in K_grid:
        p = load_privatizer(spec, epsilon=eps, beta=BETA, calibration=calibration, width_mode="nominal")
        E = pa.declaration(p, game.H, game.S, game.A * game.B, int(K), rewards=False).width
        iota = confidence_log(game.H, game.S, game.A, game.B, int(K), BETA)
        out.append(max(float(E), 1.0) * iota ** 2)
    return np.array(out)


def cost_eps_slope(spec: str, calibration: str, game, K: int, eps_grid) -> float:
    """The claimed slope in eps of the privacy cost at fixed K: -1 (E ~ 1/eps) for the built-in Laplace
    privatizers; for a user's privatizer the slope of its own declared width E(eps) over the sweep
    (dpcheck.audits.lib.privatizers.width_eps_slope, as in dp_ucbvi), since Theorems 5.2 / 5.5 bound the cost
    linearly in E (through Assumption 3.1) and a Gaussian tree's E ~ eps^-1/2 at large eps."""
    from dpcheck.algorithms.privatizers import load_privatizer
    from dpcheck.audits.lib import privatizers as pa
    make = lambda e: load_privatizer(spec, epsilon=e, beta=BETA, calibration=calibration, width_mode="nominal")
    if not pa.is_plugin(make(float(eps_grid[0]))):
        return -1.0
    return pa.width_eps_slope(make, eps_grid, H=game.H, S=game.S, A=game.A * game.B, K=int(K), rewards=False)


def declared_width(spec: str, eps: float, calibration: str, game, K: int) -> float:
    """The width E that privatizer ``spec`` at budget ``eps`` declares for a K-episode run on ``game``
    (nominal width mode, as the regret runs use; joint actions A*B, no rewards)."""
    from dpcheck.algorithms.privatizers import load_privatizer
    from dpcheck.audits.lib import privatizers as pa
    p = load_privatizer(spec, epsilon=float(eps), beta=BETA, calibration=calibration, width_mode="nominal")
    return float(pa.declaration(p, game.H, game.S, game.A * game.B, int(K), rewards=False).width)


def width_matched_grid(spec: str, ref_spec: str, ref_grid, calibration: str, game, K: int):
    """A user's privatizer's regret sweep: for each budget e of the built-in privatizer ``ref_spec``'s sweep,
    the eps at which ``spec`` declares the same width E as ``ref_spec`` at e (horizon K). The regime of the
    privacy cost -- saturated while the bonus E/N exceeds the game's scale, buried in the non-private
    regret's noise when E is tiny -- is set by E, not by eps (DP-Nash-VI plans with E only), so matching E puts
    the plug-in's sweep where the built-in's is informative whatever its noise law. (examples/my_privatizer.py's
    Gaussian tree declares more than 3x the Central privatizer's E at eps = 8 and matches its E at eps = 8, 16,
    32 only at eps ~ 220, 740, 2700 for K = 2000; swept at --epsilon x (1, 2, 4, 8) its cost was saturated and
    every rate check inconclusive.) Bisection in log eps on the declared width, assumed non-increasing in eps
    (only the ends are checked). Returns None when no eps in [1e-3, 1e6] matches (the width does not fall with
    eps, or not far enough, or the privatizer refuses those budgets): the caller keeps its default sweep."""
    from dpcheck.errors import MechanismError
    try:
        return _width_matched(spec, ref_spec, ref_grid, calibration, game, K)
    except (MechanismError, ValueError):         # a budget the privatizer refuses: no matching
        return None


def _width_matched(spec, ref_spec, ref_grid, calibration, game, K):
    lo_e, hi_e = 1e-3, 1e6
    w_lo, w_hi = declared_width(spec, lo_e, calibration, game, K), declared_width(spec, hi_e, calibration, game, K)
    out = []
    for e in ref_grid:
        target = declared_width(ref_spec, e, calibration, game, K)
        if not (w_hi <= target <= w_lo) or w_hi >= w_lo:
            return None
        a, b = np.log(lo_e), np.log(hi_e)
        for _ in range(60):
            m = 0.5 * (a + b)
            if declared_width(spec, np.exp(m), calibration, game, K) > target:
                a = m
            else:
                b = m
        out.append(float(f"{np.exp(b):.3g}"))
    out = tuple(sorted(set(out)))
    return out if len(out) == len(tuple(ref_grid)) else None


# ------------------------------------------------------------------ privatizer-level checks
#: steps of the privatizer black boxes (privacy.privatizer.blackbox, privacy.ldp.blackbox): the Laplace scales grow
#: with H (b = F H / eps, Lemmas 5.1 / 5.4); at H = 1 a scale that drops H is the right one and passes (at H = 2 a
#: Local or Central privatizer calibrated for H = 1 shows eps_lb 1.8 / 1.3 > 1 at the default samples)
BLACKBOX_H = 2
#: K of whitebox.noise_scale / noise_independence (default, --quick): every tree level the regret runs use (K up to
#: 8000 / 2000); K observe() calls, ~0.1 ms each
NASH_NOISE_LAW_K = (2 ** 13, 2 ** 11)


def privatizer_checks(make_privatizer, claim: Claim, notion: str, *, quick: bool, samples: int, seed: int,
                      blackbox, exe=None, noise_law: bool = True) -> list[Check]:
    """The privatizer audits of audits/lib/privatizers/ in the games setting (joint actions A*B, rewards=False,
    2 stream families): whitebox.dp_event (dp_accounting PLD of the declared DpEvent), whitebox.sensitivity
    and whitebox.tree_noise_reuse (built-in privatizers), and the tight black box on what the privatizer
    releases (privacy.privatizer.blackbox: the Central stream N^; for LDP the message audit is
    privacy.ldp.blackbox), both at H = :data:`BLACKBOX_H` steps, and, for the built-ins, the black box on the
    counts N~ the planner reads (privacy.privatizer.planner_view, :data:`PLANNER_VIEW_SAMPLES`).

    ``blackbox(target, id=, samples=, claim_source=) -> (Check, AuditResult)``: the audit's black-box
    runner (:meth:`dpcheck.audit.Audit.blackbox`, which carries --alpha, --seed, --workers and --cache).
    ``exe`` (the audit's ExecutionOptions): a user's (plug-in) privatizer gets the searched black-box audit
    (privatizers.plugin_blackbox) on the privatizer audits' budget (privatizers.PRIVATIZER_SAMPLES), as in
    dp_ucbvi. ``noise_law=False`` leaves out whitebox.noise_scale / noise_independence (:func:`noise_law_games`), which
    the audit runs as a chunk of its regret pool instead (:func:`noise_law_task`: K observe() calls in one process)."""
    from dpcheck.audits.lib import privatizers as pa
    from dpcheck.algorithms.privatizers.base import CountPrivatizer

    p = make_privatizer()
    H, S, AB, K = 2, 3, 4, 6                         # A = B = 2: joint actions A*B = 4
    d = pa.declaration(p, H, S, AB, K, rewards=False)
    out = [pa.dp_event_check(d.dp_event("replacement"), claim, add_remove_event=d.dp_event("add_remove"),
                             label=f"{getattr(p, 'name', type(p).__name__)}(H={H}, S={S}, A*B={AB}, K={K}, 2 families)")]
    kind = "central" if notion == "JDP" else "local"
    # the sensitivity search and the tree-reuse test read the noise structure of a private privatizer;
    # the non-private baseline (notion "none") has none, and its dp_event check already fails
    if isinstance(p, CountPrivatizer) and getattr(p, "notion", None) in ("JDP", "LDP"):
        out.append(pa.sensitivity_check(p, kind=kind, claim=claim, H=H, S=S, A=AB, K=K, rewards=False,
                                        examples=100 if quick else 300))
        if kind == "central":
            out.append(pa.tree_reuse_check(p, runs=1_000 if quick else 4_000, seed=int(seed), rewards=False,
                                           source=claim.source, alpha=exe.alpha if exe is not None else 0.05))
        if noise_law:
            out += noise_law_games(make_privatizer, claim, notion, quick=quick, seed=seed,
                                   alpha=exe.alpha if exe is not None else 0.05)
        # Lemma 5.8 on adversarial N^ (no count of the audit's runs reaches E/4); built-ins only, as the noise law
        if not pa.is_plugin(p):
            out.append(pa.post_processing_check(p, seed=int(seed), lemma="Qiao & Wang 2024, Lemma 5.8"))
    claimed = pa.ClaimedTemplate(p, claim, False)
    if exe is not None and pa.is_plugin(p):
        pb = dict(source=claim.source, A=AB, rewards=False)
        if kind == "local":
            # eps-LDP is about one pair's message; INCONCLUSIVE without message() (the stream cannot show it)
            out.append(pa.plugin_message_blackbox(claimed, exe, id="privacy.ldp.blackbox",
                                                  stream_id="privacy.privatizer.blackbox", **pb))
        out.append(pa.plugin_blackbox(claimed, exe, search="stream", id="privacy.privatizer.blackbox", **pb))
        return out
    if kind == "central":
        tgt = pa.central_target(claimed, H=BLACKBOX_H, A=AB, rewards=False)
        out.append(blackbox(tgt, id="privacy.privatizer.blackbox", samples=samples, claim_source=claim.source)[0])
    else:
        tgt = pa.local_target(claimed, H=BLACKBOX_H, A=AB, rewards=False)
        out.append(blackbox(tgt, id="privacy.ldp.blackbox", samples=samples, claim_source=claim.source)[0])
    # N~ = the Section 5.1.1 LP applied to N^ is post-processing only if release() feeds the LP nothing but N^
    # and E: a release that hands the LP a raw count anywhere (e.g. where N^ < 0) leaves N^ -- all the check
    # above sees -- untouched. For the Local privatizer the stream is a post-processing of the messages, so
    # eps-LDP bounds it too (Lemma 5.4).
    tgt = pa.central_target(claimed, A=AB, rewards=False, view="planner")
    out.append(blackbox(tgt, id="privacy.privatizer.planner_view", samples=min(samples, PLANNER_VIEW_SAMPLES),
                        claim_source=claim.source)[0])
    return out


def noise_law_games(make_privatizer, claim: Claim, notion: str, *, quick: bool, seed: int, alpha: float) -> list:
    """whitebox.noise_scale / noise_independence of a private CountPrivatizer in the games setting: the noise drawn at
    H = 2, S = 3, A*B = 4 over every tree level of the regret runs' K (:data:`NASH_NOISE_LAW_K`) against the
    declared scale (the black boxes run at K <= 16); [] for the non-private baseline and for a user's class that
    declares no scale."""
    from dpcheck.audits.lib import privatizers as pa
    from dpcheck.algorithms.privatizers.base import CountPrivatizer
    p = make_privatizer()
    if not (isinstance(p, CountPrivatizer) and getattr(p, "notion", None) in ("JDP", "LDP")) or pa.is_plugin(p):
        return []                  # white box: a user's class is audited black box (its noise is its own)
    return pa.noise_law_checks(p, kind="central" if notion == "JDP" else "local", claim_source=claim.source,
                               alpha=alpha, runs=pa.NOISE_LAW_RUNS[bool(quick)], seed=int(seed), rewards=False,
                               K=NASH_NOISE_LAW_K[bool(quick)], shape=(2, 3, 4))


def noise_law_task(j, _seed_seq, make_privatizer, claim: Claim, notion: str, quick: bool, seed: int,
                   alpha: float) -> list:
    """:func:`noise_law_games` as a chunk of dp_nash_vi's regret pool (its own ``seed``: the same checks in any
    process)."""
    return noise_law_games(make_privatizer, claim, notion, quick=quick, seed=seed, alpha=alpha)


# ------------------------------------------------------------------ privatizers by name
def privatizer_factory(spec, epsilon, calibration, width_mode):
    """make() -> a fresh privatizer ``spec`` (a built-in name or path.py:Class) at this budget."""
    from dpcheck.algorithms.privatizers import load_privatizer

    def make():
        kw = {"epsilon": epsilon, "beta": BETA, "calibration": calibration, "width_mode": width_mode}
        return load_privatizer(spec, **kw)
    return make


def accepts(spec, eps, calibration) -> bool:
    """Does the privatizer accept this budget? (a user's class may refuse, e.g. Gaussian needs eps <= 1)."""
    from dpcheck.errors import MechanismError
    try:
        privatizer_factory(spec, eps, calibration, "nominal")()
        return True
    except (MechanismError, ValueError):
        return False
