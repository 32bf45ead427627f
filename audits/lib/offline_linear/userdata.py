"""A user's dataset for DP-VAPVI (``dpcheck audit dp_vapvi --set data=FILE.npz``, docs/dp_vapvi.md).

:func:`load_linear_data` (an .npz with states, actions, rewards and features; every defect a one-line
InputError), :func:`user_setup` and :func:`check_data_size` (the size limits and the feature scale that keeps
the Gram matrices finite, before any work).
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck.errors import InputError
from dpcheck.layout import CHUNK     # black-box outputs per chunk

from dpcheck.audits.lib.offline_linear.setup import Setup


# ============================================================================ user data
def load_linear_data(path: str, *, samples: int | None = None, runs: int = 2000):
    """(OfflineDataset, features) from an .npz: ``states`` (n, H+1) or (1, n, H+1), ``actions`` (n, H),
    ``rewards`` (n, H) in [0, 1], ``features`` (S, A, d); optional ``S``, ``A`` (default: from the feature
    map) and ``d``. Every defect is a one-line InputError."""
    from dpcheck.algorithms.offline import OfflineDataset, check_features
    try:
        z = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"data file not found: {path}") from None
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read {path} as .npz: {e}") from None
    keys = set(getattr(z, "files", ()))
    missing = [k for k in ("states", "actions", "rewards", "features") if k not in keys]
    if missing:
        raise InputError(f"{path}: missing array(s) {', '.join(missing)} (need states, actions, rewards, features)")
    unknown = sorted(keys - {"states", "actions", "rewards", "features", "S", "A", "d"})
    if unknown:         # a misspelt optional array would be ignored without a word
        raise InputError(f"{path}: unknown array(s) {', '.join(map(repr, unknown))} (expected states, actions, "
                         "rewards, features; optional S, A, d)")
    feats = np.asarray(z["features"])
    if feats.ndim != 3:
        raise InputError(f"feature map has the wrong dimension: need (S, A, d), got shape {feats.shape}")

    def size(key, default):
        if key not in keys:
            return default
        v = np.asarray(z[key])
        if v.shape != () or v.dtype.kind not in "iu":
            raise InputError(f"{path}: {key} must be an integer scalar")
        return int(v)

    S, A = size("S", feats.shape[0]), size("A", feats.shape[1])
    d = size("d", None)
    phi = check_features(feats, S, A, d)
    st, ac = z["states"], z["actions"]
    if samples is not None and getattr(ac, "ndim", 0) in (2, 3) and ac.dtype != object:
        norm = float(np.sqrt((phi ** 2).sum(-1)).max()) if np.abs(phi).max() < 1e150 else float(np.abs(phi).max())
        m = samples(S, A, phi.shape[2]) if callable(samples) else samples
        check_data_size(path, H=int(ac.shape[-1]), S=S, A=A, d=phi.shape[2], n=int(ac.shape[-2]), samples=m,
                        runs=runs, max_norm=norm)
    data = OfflineDataset.from_arrays(st, ac, z["rewards"], S=S, A=A)
    if data.runs != 1:
        raise InputError(f"{path}: one dataset expected (states (n, H+1)), got {data.runs} runs")
    return data, phi


def user_setup(path: str, *, samples: int | None = None, runs: int = 2000) -> Setup:
    """Setup of a user's dataset; with ``samples`` (the black-box samples per side) the dataset is first checked
    against the size limits (:func:`check_data_size`), before anything is counted."""
    from dpcheck.algorithms.offline import empirical_kappa
    data, phi = load_linear_data(path, samples=samples, runs=runs)
    c = data.counts()
    k = float(empirical_kappa(c, phi)[0])
    sig = np.einsum("rhsa,sai,saj->rhij", c.visits / c.n, phi, phi)[0]
    eig = np.linalg.eigvalsh(sig)
    nxt = float(eig[:, 1].min()) if phi.shape[2] > 1 else float("nan")
    used = k if k > 1e-12 else (nxt if nxt > 1e-12 else 1.0)
    return Setup(name=f"user data {path}", features=phi, instance=None, data=data, kappa=max(k, 0.0),
                 kappa_used=used, kappa_exact=False, next_eigenvalue=nxt)


# Measured on the reference machine (docs/dp_vapvi.md "Size limits"): one black-box sample of DP-VAPVI on a user's
# dataset costs ~650 ns per unit of u = H S^2 A + H S A d^2 + H d^3 (the replicated counts, the feature outer
# products, the d x d solves) and holds ~8 bytes per unit; counting a step of a trajectory < 50 ns.
NS_UNIT, BYTES_UNIT, NS_STEP = 650e-9, 8, 50e-9
# Features: the Gram matrices sum n outer products (entries up to n max||phi||^2) and the algorithm squares them
# (norms, solves): max ||phi|| sqrt(n) <= FEATURE_SCALE keeps (n max||phi||^2)^2 <= 1e300, below float overflow
# (1.8e308) with room for the noise and the ridge.
FEATURE_SCALE = 1e75


def data_cost(z: dict, *, samples: int, runs: int) -> tuple[float, float]:
    H, S, A, d, n = (float(z[k]) for k in ("H", "S", "A", "d", "n"))
    u = H * S * S * A + H * S * A * d * d + H * d ** 3
    mem = min(samples, CHUNK) * u * BYTES_UNIT + 6 * 8 * n * (2 * H + 1) + 4 * 8 * H * S * A * (S + d * d)
    sec = (4 * samples + 3 * runs) * u * NS_UNIT + n * H * NS_STEP
    return mem, sec


def check_data_size(path: str, *, H: int, S: int, A: int, d: int, n: int, samples: int, runs: int,
                    max_norm: float) -> None:
    """Exit 2 (InputError) before any work: features whose Gram matrices would overflow, or a dataset whose checks
    would not fit the memory or time limit (dpcheck.limits.check_input_cost, naming the sizes that fit)."""
    from dpcheck.limits import check_input_cost
    scale = max_norm * math.sqrt(n)
    if not scale <= FEATURE_SCALE:
        fit = FEATURE_SCALE / math.sqrt(n)
        raise InputError(f"--set data={path}: max ||phi|| = {max_norm:.3g} with n = {n} trajectories: the Gram "
                         f"matrices (n ||phi||^2) would overflow; features up to max ||phi|| = {fit:.3g} fit "
                         f"(max ||phi|| sqrt(n) <= {FEATURE_SCALE:.0e}); rescale them (the analysis takes ||phi|| <= 1)")
    check_input_cost(f"--set data={path}", {"H": H, "S": S, "A": A, "d": d, "n": n},
                     lambda z: data_cost(z, samples=samples, runs=runs),
                     unit=f"{4 * samples + 3 * runs} runs of DP-VAPVI on H S^2 A + H S A d^2 + H d^3 units")
