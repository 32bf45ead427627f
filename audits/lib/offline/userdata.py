"""A user's dataset for DP-APVI (``dpcheck audit dp_apvi --set data=FILE.npz``, docs/dp_apvi.md).

:func:`check_data_size` (the size limits, before any work; :func:`data_cost`) and :func:`user_model` (what the
.npz may carry besides the data: the behaviour policy, the true MDP).
"""
from __future__ import annotations

import numpy as np

from dpcheck.errors import InputError


# ============================================================ user data: what it may carry, what it may cost
# Measured on the reference machine (this module, docs/dp_apvi.md "Size limits"): privatising one
# count entry (noise, clip, the eqs. 3-4 LP) costs ~350 ns in the black box and ~550 ns in the count checks, and the
# count checks hold ~100 bytes per entry and repetition; an entry is one of the H S A (S + 1) pair and triple
# counts. Counting a step of a trajectory costs < 50 ns; the trajectories are held ~6 times (the neighbours).
NS_BLACKBOX, NS_COUNT_CHECKS, BYTES_PER_ENTRY, NS_STEP = 400e-9, 600e-9, 100, 50e-9
BLACKBOX_BATCH = 1 << 22            # entries privatised at once by counts_target (its max_batch)


def data_cost(sizes: dict, *, samples: int, reps: int) -> tuple[float, float]:
    """(bytes, seconds) of the checks that run on a user's dataset of sizes H, S, A, n (dp_apvi --set data):
    the data black box (2 x samples privatisations), the count checks (``reps`` repetitions), the counting."""
    H, S, A, n = (float(sizes[k]) for k in ("H", "S", "A", "n"))
    entries = H * S * A * (S + 1)
    mem = BYTES_PER_ENTRY * entries * (reps + 2) + BYTES_PER_ENTRY * max(BLACKBOX_BATCH, entries) \
        + 6 * 8 * n * (2 * H + 1)
    sec = entries * (2 * samples * NS_BLACKBOX + reps * NS_COUNT_CHECKS) + n * H * NS_STEP
    return mem, sec


def check_data_size(path: str, H: int, S: int, A: int, n: int, *, samples: int, reps: int) -> None:
    """Exit 2 (InputError) before any work when the data checks of a dataset this large would not fit the memory
    or time limit (dpcheck.limits.check_input_cost), naming the largest S, A, H or n that fits."""
    from dpcheck.limits import check_input_cost
    check_input_cost(f"--set data={path}", {"H": H, "S": S, "A": A, "n": n},
                     lambda z: data_cost(z, samples=samples, reps=reps),
                     unit=f"H S A (S+1) counts privatised {2 * samples + reps} times")


def user_model(arrays: dict, data, path: str):
    """What a user's .npz may carry besides the data (docs/dp_apvi.md): ``behaviour`` (H, S, A), the behaviour
    policy mu; with it ``P`` (H, S, A, S), ``r`` (H, S, A), ``init`` (S,), the true MDP -> (behaviour or None,
    OfflineInstance or None). The data must be possible under what is supplied (an action taken where mu = 0,
    a transition where P = 0: InputError)."""
    from dpcheck.algorithms.envs import as_policy
    H, S, A = data.H, data.S, data.A
    mu = arrays.get("behaviour")
    given = [k for k in ("P", "r", "init") if k in arrays]
    if mu is None:
        if given:
            raise InputError(f"{path}: 'P', 'r', 'init' need the behaviour policy 'behaviour' (H, S, A) too")
        return None, None
    mu = np.asarray(mu)
    if mu.dtype.kind in "iu":
        mu = mu.astype(float)
    pol, _ = as_policy(mu, H, S, A, name=f"{path}: behaviour")
    mu = np.asarray(pol, float)
    st, ac = data.states[0], data.actions[0]
    h = np.broadcast_to(np.arange(H), ac.shape)
    taken = mu[h, st[:, :H], ac] <= 0
    if taken.any():
        t, j = (int(i) for i in np.argwhere(taken)[0])
        raise InputError(f"{path}: trajectory {t} takes action {int(ac[t, j])} at step {j + 1} in state "
                         f"{int(st[t, j])}, where the supplied behaviour policy has probability 0")
    if not given:
        return mu, None
    if len(given) != 3:
        raise InputError(f"{path}: an MDP needs all of 'P', 'r' and 'init' (found only {given})")
    from dpcheck.algorithms.envs.tabular import TabularMDP
    from dpcheck.algorithms.offline.instances import OfflineInstance
    try:
        mdp = TabularMDP(arrays["P"], arrays["r"], arrays["init"], name=path)
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    if (mdp.H, mdp.S, mdp.A) != (H, S, A):
        raise InputError(f"{path}: the MDP has (H, S, A) = {(mdp.H, mdp.S, mdp.A)}, the data {(H, S, A)}")
    if np.any(mdp.init[st[:, 0]] <= 0) or np.any(mdp.P[h, st[:, :H], ac, st[:, 1:]] <= 0):
        raise InputError(f"{path}: the data contain a start or transition that has probability 0 under the "
                         "supplied MDP")
    return mu, OfflineInstance(mdp=mdp, behaviour=mu, name=f"your MDP {path}")
