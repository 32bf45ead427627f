"""The stream privatizer of Private-LinOpt-VI / -PO: the plug-in interface (Zhou, Section 6.1; docs/privatizers.md;
Zhou, "Differentially Private RL with Linear Function Approximation", Def 6.2 / 6.3, Thm 6.4).

The algorithms read, at the start of episode k and for every step h, four regularised statistics of the
episodes before k (the billboard of Thm 6.4):

    Lambda_{h,p}^k = sum_{j<k} phi phi^T + Z_{h,p}^k  (runs, H, d1, d1)     u_{h,p}^k = sum_{j<k} phi V + z_{h,p}^k  (runs, H, d1)
    Lambda_{h,r}^k = sum_{j<k} varphi varphi^T + Z_{h,r}^k (runs, H, d2, d2)  u_{h,r}^k = sum_{j<k} varphi r + z_{h,r}^k (runs, H, d2)

A *stream privatizer* releases them under (eps, delta)-JDP and declares the Assumption 2 constants
(lambda_min, lambda_max, nu per side) its perturbations Z, z meet with probability >= 1 - alpha; the
confidence radii, bonuses and the regret bound follow from those constants (Lemma 3.1, Thms 4.1 / 5.1).
The paper's :class:`dpcheck.algorithms.linear.Privatizer` (Gaussian binary counters, Section 6.1) is one; a
researcher's (another calibration, another noise, another tree) plugs into ``dpcheck audit
private_linopt_vi --privatizer file.py:Class`` and the audits treat both alike (docs/privatizers.md).

What to implement (subclass :class:`StreamPrivatizer`; constructor ``(epsilon=1.0, delta=0.1)`` at least,
as keywords -- ``--epsilon`` and ``--set delta=`` arrive there; ``epsilon = inf`` should switch the noise off
if you want the audit's non-private reduction to use your class, else raise InputError):

* ``claim(sizes) -> dpcheck.Claim`` (notion "JDP", replacement neighbours);
* ``dp_event(sizes, neighbouring="replacement")`` -> the dp_accounting DpEvent of the noise you draw;
* ``constants(sizes, alpha) -> Assumption2`` (from the parameters and sizes, never from data);
* the noise, either as trees -- ``trees(sizes, neighbouring="replacement")`` -> {counter: TreeCounter}
  for the four counters ``COUNTERS`` (node std, l2 sensitivity of the node vector of the H counters of that
  kind, "gaussian" noise, ``symmetric`` for the matrix counters) and ``shifts(sizes, alpha)`` -> (gamma_p,
  gamma_r), Z = tree noise + gamma I; the base class then draws the noise from ``rng`` in the project's
  binary mechanism and the tree white-box checks apply -- or by overriding ``start(runs, sizes, rng,
  alpha)`` to return your own state with ``observe(x_p, y_p, x_r, y_r)``, ``release() -> (Lambda_p, u_p,
  Lambda_r, u_r)``, ``regularization() -> (Z_p, z_p, Z_r, z_r)`` (checker side), ``exact()`` -> the true sums
  (checker side) and ``shift_p``, ``shift_r``; all randomness from ``rng``.

``noise_off`` (False by default) and ``describe(sizes, alpha)`` (a dict for reports) are optional.
"""
from __future__ import annotations

import abc
import math

import numpy as np

from dpcheck.fingerprint import Memo
from dpcheck.errors import InputError, MechanismError
from dpcheck.loading import call_plugin, probe_rng_use
from dpcheck.algorithms.linear.regularizers import COUNTERS, Assumption2, LinearSizes, Regularizer

INTERFACE = ("claim", "dp_event", "constants", "start")


class StreamPrivatizer(Regularizer, abc.ABC):
    """A :class:`Regularizer` that releases the statistics under JDP and declares its privacy as data
    (module docstring: what a plug-in implements)."""

    name = "stream_privatizer"

    @abc.abstractmethod
    def claim(self, sizes: LinearSizes):
        """The (eps, delta)-JDP :class:`dpcheck.Claim` for K episodes of an (H, d1, d2) model."""

    @abc.abstractmethod
    def dp_event(self, sizes: LinearSizes, neighbouring: str = "replacement"):
        """The dp_accounting DpEvent of the noise drawn, under "replacement" or "add_remove" neighbours."""

    @abc.abstractmethod
    def constants(self, sizes: LinearSizes, alpha: float) -> Assumption2:
        """Assumption 2: lambda_min, lambda_max, nu per side, holding w.p. >= 1 - alpha for all k, h."""

    @property
    def noise_off(self) -> bool:
        return False

    @property
    def tree_based(self) -> bool:
        """True when the noise is declared as trees (``trees``/``shifts``) and drawn by the base class."""
        return type(self).start is Regularizer.start and type(self).trees is not Regularizer.trees

    def describe(self, sizes: LinearSizes, alpha: float) -> dict:
        return {"name": self.name}


def _is_builtin(cls) -> bool:
    return getattr(cls, "__module__", "").startswith("dpcheck.algorithms.")


class GuardedStreamPrivatizer(StreamPrivatizer):
    """Delegates to a user's stream privatizer: its exceptions become :class:`dpcheck.MechanismError` naming
    it, and every release is validated (shapes for the sizes asked, finite values, symmetric matrices)."""

    def __init__(self, inner, label: str):
        self.inner, self.label = inner, label
        self.name = str(getattr(inner, "name", type(inner).__name__))

    def _call(self, what, fn, *a, **kw):
        return call_plugin(f"stream privatizer {self.label!r}", what, fn, *a, **kw)

    def _bad(self, msg):
        return MechanismError(f"stream privatizer {self.label!r}: {msg}")

    def claim(self, sizes):
        from dpcheck.claims import Claim
        c = self._call("claim", self.inner.claim, sizes)
        if not isinstance(c, Claim):
            raise self._bad(f"claim() must return a dpcheck.Claim, got {type(c).__name__}")
        return c

    def dp_event(self, sizes, neighbouring="replacement"):
        import dp_accounting
        e = self._call("dp_event", self.inner.dp_event, sizes, neighbouring)
        if not isinstance(e, dp_accounting.DpEvent):
            raise self._bad(f"dp_event() must return a dp_accounting DpEvent, got {type(e).__name__}")
        return e

    def constants(self, sizes, alpha):
        c = self._call("constants", self.inner.constants, sizes, alpha)
        if not isinstance(c, Assumption2):
            raise self._bad(f"constants() must return an Assumption2, got {type(c).__name__}")
        vals = (c.lambda_min_p, c.lambda_max_p, c.nu_p, c.lambda_min_r, c.lambda_max_r, c.nu_r)
        if not all(math.isfinite(v) for v in vals) or min(c.lambda_min_p, c.lambda_min_r) <= 0 \
                or min(c.nu_p, c.nu_r) < 0:
            raise self._bad(f"constants() are not finite with lambda_min > 0 and nu >= 0: {c}")
        return c

    def floors(self, sizes, alpha):
        if hasattr(self.inner, "floors"):
            return self._call("floors", self.inner.floors, sizes, alpha)
        return super().floors(sizes, alpha)

    def trees(self, sizes, neighbouring="replacement"):
        import inspect
        try:
            takes = len(inspect.signature(self.inner.trees).parameters) >= 2
        except (TypeError, ValueError):
            takes = False
        if takes:
            return self._call("trees", self.inner.trees, sizes, neighbouring)
        return self._call("trees", self.inner.trees, sizes)

    def shifts(self, sizes, alpha):
        return self._call("shifts", self.inner.shifts, sizes, alpha)

    @property
    def tree_based(self) -> bool:
        return bool(getattr(self.inner, "tree_based", False))

    @property
    def noise_off(self) -> bool:
        return bool(self._call("noise_off", getattr, self.inner, "noise_off", False))

    def describe(self, sizes, alpha):
        if hasattr(self.inner, "describe"):
            return dict(self._call("describe", self.inner.describe, sizes, alpha))
        return {"name": self.name}

    def start(self, runs, sizes, rng, alpha):
        state = self._call("start", self.inner.start, runs, sizes, rng, alpha)
        return GuardedState(state, self, int(runs), sizes)

    def __repr__(self):
        return f"Guarded({self.label})"


class GuardedState:
    """The running state of a guarded plug-in: exceptions named, releases validated."""

    def __init__(self, inner, owner: GuardedStreamPrivatizer, runs: int, sizes: LinearSizes):
        self.inner, self.owner, self.runs, self.sizes = inner, owner, runs, sizes
        H, d1, d2 = sizes.H, sizes.d1, sizes.d2
        self._shapes = ((runs, H, d1, d1), (runs, H, d1), (runs, H, d2, d2), (runs, H, d2))

    def __getattr__(self, item):
        if item.startswith("__") or item in ("inner", "owner"):
            raise AttributeError(item)
        return self.owner._call(item, getattr, self.inner, item)

    def observe(self, *rows):
        return self.owner._call("observe", self.inner.observe, *rows)

    def _validated(self, what, out):
        if not isinstance(out, (tuple, list)) or len(out) != 4:
            raise self.owner._bad(f"{what}() must return 4 arrays (Lambda_p, u_p, Lambda_r, u_r)")
        out = tuple(np.asarray(x, dtype=np.float64) for x in out)
        for name, x, shp in zip(("Lambda_p", "u_p", "Lambda_r", "u_r"), out, self._shapes):
            if x.shape != shp:
                raise self.owner._bad(f"{what}().{name} has shape {x.shape}, expected {shp}")
            if not np.all(np.isfinite(x)):
                raise self.owner._bad(f"{what}().{name} contains NaN or infinity")
        for name, x in (("Lambda_p", out[0]), ("Lambda_r", out[2])):
            if not np.array_equal(x, np.swapaxes(x, -1, -2)):
                raise self.owner._bad(f"{what}().{name} is not symmetric")
        return out

    def release(self):
        return self._validated("release", self.owner._call("release", self.inner.release))

    def regularization(self):
        return self._validated("regularization", self.owner._call("regularization", self.inner.regularization))

    def exact(self):
        return self.owner._call("exact", self.inner.exact)


def probe(p: StreamPrivatizer, label: str) -> None:
    """Refuse, with one line, a plug-in whose releases are not a function of (rows, rng): two generators with
    the same seed must give the same releases, two with different seeds different ones (unless its noise is
    off). Run on a 2-step, 2 x 2 model for 3 episodes."""
    if p.noise_off:
        return
    sizes = LinearSizes(4, 2, 2, 2)
    rows = (np.full((2, 2, 2), 0.5), np.full((2, 2), 1.0), np.full((2, 2, 2), 0.5), np.full((2, 2), 0.5))

    def releases(rng):
        st = p.start(2, sizes, rng, 0.05)
        out = []
        for _ in range(3):
            st.observe(*rows)
            out.append(np.concatenate([np.ravel(x) for x in st.release()]))
        return np.concatenate(out)

    probe_rng_use(releases, (11, 12),
                  nondeterministic=f"stream privatizer {label!r}: releases are not deterministic given the rng (two "
                  "generators with the same seed gave different releases): all randomness must come "
                  "from the rng passed to start",
                  ignores=f"stream privatizer {label!r}: releases ignore the rng (the same releases for two "
                  "different generators): no noise is drawn from it, so nothing is private")


_CLASSES: Memo = Memo()     # spec -> [class, probed] in this process (a declared memo: not part of any cache key)
