"""The counts an offline algorithm reads from a dataset (Qiao & Wang, Offline RL with DP, Algorithm 1 line 1 and
Algorithm 2's sums over the K trajectories): :func:`counting_check`, shared by the dp_apvi and dp_vapvi audits.

Both algorithms see a dataset only through n_h(s,a) = #{tau: s_h^tau = s, a_h^tau = a}, n_h(s,a,s') (the same with
s_{h+1}^tau = s') and, for DP-VAPVI, the observed reward sums; every privacy and utility statement is about those.
A user's dataset is counted by ``OfflineDataset.counts(engine="auto")``: the compiled one-pass kernel
(algorithms/offline/_count_kernel.py) when numba imports, else the numpy path. The audits' own checks draw counts
from their law (``sample_counts``) or use the numpy engine, so this check is the one that exercises the engine a
user gets.
"""
from __future__ import annotations

import numpy as np

from dpcheck.checks import FAIL, PASS, Check, vacuous
from dpcheck.errors import InputError

from dpcheck.audits.lib.offline.spec import SOURCE


def _tally(data):
    """Direct tally, one np.add.at over every (run, trajectory, h): (visits, transitions, reward sums or None)."""
    runs, n, H = data.actions.shape
    S, A = data.S, data.A
    r = np.broadcast_to(np.arange(runs)[:, None, None], (runs, n, H))
    h = np.broadcast_to(np.arange(H)[None, None, :], (runs, n, H))
    s, a, s2 = data.states[:, :, :H], data.actions, data.states[:, :, 1:]
    trip = np.zeros((runs, H, S, A, S))
    np.add.at(trip, (r, h, s, a, s2), 1.0)
    rsum = None
    if data.rewards is not None:
        rsum = np.zeros((runs, H, S, A))
        np.add.at(rsum, (r, h, s, a), data.rewards)
    return trip.sum(-1), trip, rsum


def _compare(got, ref) -> list[str]:
    """Where two TabularCounts-like triples (visits, transitions, reward sums) differ: counts bit for bit, reward
    sums to rounding (the compiled kernel adds them in trajectory order, numpy block by block)."""
    out = []
    for name, x, y in (("n_h(s,a)", got[0], ref[0]), ("n_h(s,a,s')", got[1], ref[1])):
        if not np.array_equal(x, y):
            out.append(f"{name} differs at {int((x != y).sum())} entries (max |diff| {float(np.abs(x - y).max()):g})")
    if (got[2] is None) != (ref[2] is None):
        out.append("reward sums present in one count and not the other")
    elif got[2] is not None and not np.allclose(got[2], ref[2], rtol=1e-9, atol=1e-9):
        out.append(f"reward sums differ (max |diff| {float(np.abs(got[2] - ref[2]).max()):.3g})")
    return out


def counting_check(datasets, *, id: str = "whitebox.counting") -> Check:
    """whitebox.counting: on each ``(label, OfflineDataset)``, the counts of the engine a user gets
    (``counts(engine="auto")``: compiled when numba imports) equal the numpy reference bit for bit, and the numpy
    reference equals a direct tally (n_h(s,a,s') counts s_{h+1}, not s_h); with and without reward sums.

    Exact (no randomness): FAIL on any difference. Without numba, "auto" IS the numpy path: the engine comparison
    is vacuous (the numpy path is still held against the tally) and the pass is qualified so."""
    claim = {"statement": "the counts the algorithm reads from a dataset (engine 'auto', as for a user's data) are "
                          "n_h(s,a) and n_h(s,a,s') = #{tau: (s_h, a_h, s_{h+1}) = (s, a, s')} and the reward sums, "
                          "identical to the numpy reference and to a direct tally",
             "source": f"{SOURCE}, Algorithm 1 (counts), Algorithm 2 (sums over the trajectories)"}
    try:
        datasets[0][1].counts(engine="compiled")
        compiled = True
    except InputError:
        compiled = False
    rows, bad = [], []
    for label, data in datasets:
        tally = _tally(data)
        for rewards in (True, False):
            if rewards and data.rewards is None:
                continue
            ref = data.counts(engine="numpy", rewards=rewards)
            auto = data.counts(engine="auto", rewards=rewards)
            want = tally if rewards else (tally[0], tally[1], None)
            diff_auto = _compare((auto.visits, auto.transitions, auto.reward_sums),
                                 (ref.visits, ref.transitions, ref.reward_sums))
            diff_ref = _compare((ref.visits, ref.transitions, ref.reward_sums), want)
            bad += [f"{label}: engine 'auto' vs numpy: {d}" for d in diff_auto]
            bad += [f"{label}: numpy vs a direct tally: {d}" for d in diff_ref]
            rows.append({"data": label, "rewards": rewards, "runs": data.runs, "n": data.n, "H": data.H,
                         "auto_equals_numpy": not diff_auto, "numpy_equals_tally": not diff_ref})
    bad = list(dict.fromkeys(bad))                      # the same count difference with and without reward sums
    steps = sum(r["runs"] * r["n"] * r["H"] for r in rows if not r["rewards"])
    c = Check(id=id, kind="whitebox", verdict=FAIL if bad else PASS, claim=claim,
              measured={"datasets": rows, "compiled_engine": compiled, "confidence": 1.0},
              details={"engines": "auto (compiled when numba imports) vs numpy vs np.add.at tally"},
              reason=("; ".join(bad[:3]) + (f" (and {len(bad) - 3} more)" if len(bad) > 3 else "") if bad else
                      f"{'compiled' if compiled else 'numpy'} engine ('auto') = numpy reference = direct tally on "
                      f"{len(datasets)} dataset(s), {steps} trajectory steps"
                      + (", with and without reward sums" if any(r["rewards"] for r in rows) else "")))
    return vacuous(c, None if compiled else "numba is not installed, so engine 'auto' is the numpy path: there is "
                                            "no compiled counter to compare (numpy was held against a direct tally)")
