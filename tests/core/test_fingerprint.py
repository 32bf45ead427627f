"""dpcheck.fingerprint: the chunk-cache key changes with everything a computation depends on, and only then."""
import importlib
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from dpcheck.fingerprint import Unfingerprintable, fingerprint

ROOT = Path(__file__).resolve().parents[2]


def laplace(scale):
    def mech(d, rng, size):
        return rng.laplace(float(d), scale, size)
    return mech


def test_same_closure_value_same_key_other_value_other_key():
    assert fingerprint(laplace(1.0)) == fingerprint(laplace(1.0))
    assert fingerprint(laplace(1.0)) != fingerprint(laplace(0.1))
    assert fingerprint(laplace(1.0)) != fingerprint(laplace(np.float64(1.0)))     # another type: not assumed equal


def test_code_change_changes_key():
    def a(d, rng, size):
        return rng.laplace(d, 1.0, size)

    def b(d, rng, size):
        return rng.normal(d, 1.0, size)
    assert fingerprint(a) != fingerprint(b)


def test_default_arguments_and_partials_count():
    import functools

    def m(d, rng, size, scale=1.0):
        return rng.laplace(d, scale, size)
    k = fingerprint(m)
    m.__defaults__ = (0.1,)
    assert fingerprint(m) != k
    assert fingerprint(functools.partial(m, scale=1.0)) != fingerprint(functools.partial(m, scale=0.1))


def _module(tmp_path, name, body):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def test_module_level_constants_direct_attribute_and_local_import(tmp_path):
    mod = _module(tmp_path, "fp_helper_mod", """
        SCALE = 1.0
        OFFSET = 0.0
        def mech(d, rng, size):
            return rng.laplace(d + OFFSET, SCALE, size)
        def scale():
            return SCALE
    """)
    k = fingerprint(mod.mech)
    mod.SCALE = 0.1
    assert fingerprint(mod.mech) != k
    mod.SCALE = 1.0
    assert fingerprint(mod.mech) == k

    def via_attribute(d, rng, size):                 # helper.SCALE through the module object
        return rng.laplace(d, mod.SCALE, size)
    k2 = fingerprint(via_attribute)

    def via_import(d, rng, size):                    # a name imported inside the body
        from fp_helper_mod import scale
        return rng.laplace(d, scale(), size)
    k3 = fingerprint(via_import)
    mod.SCALE = 0.1
    assert fingerprint(via_attribute) != k2
    assert fingerprint(via_import) != k3


def test_methods_and_instance_state_count():
    class Mech:
        def __init__(self, scale):
            self.scale = scale

        def __call__(self, d, rng, size):
            return rng.laplace(d, self.scale, size)
    assert fingerprint(Mech(1.0)) == fingerprint(Mech(1.0))
    assert fingerprint(Mech(1.0)) != fingerprint(Mech(0.1))

    class Other(Mech):
        def __call__(self, d, rng, size):
            return rng.normal(d, self.scale, size)
    assert fingerprint(Other(1.0)) != fingerprint(Mech(1.0))


def test_arrays_and_containers():
    a = np.arange(6.0)
    k = fingerprint([a, {"x": 1}, {"s", "t"}])
    b = a.copy()
    b[3] = 3.5
    assert fingerprint([b, {"x": 1}, {"s", "t"}]) != k
    assert fingerprint([a.reshape(2, 3), {"x": 1}, {"s", "t"}]) != k
    assert fingerprint([a, {"x": 1}, {"t", "s"}]) == k


def test_unpicklable_state_is_said_not_guessed():
    lock = threading.Lock()

    def m(d, rng, size):
        with lock:
            return rng.laplace(d, 1.0, size)
    with pytest.raises(Unfingerprintable, match="lock.*reached from .*m"):
        fingerprint(m)


_PROBE = """
import sys
sys.path.insert(0, {root!r})
from examples import mechanisms as M
from dpcheck import AuditTarget, Claim
from dpcheck.fingerprint import fingerprint
t = AuditTarget(name="t", mechanism=M.laplace_count(0.5), pairs=[(0, 1)], claim=Claim(epsilon=0.5))
print(fingerprint(t, {{"a", "b", "c"}}, {{"k": (1, 2.5)}}))
"""


@pytest.mark.slow
def test_stable_across_processes_and_hash_seeds():
    outs = set()
    for hs in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hs, PYTHONPATH=str(ROOT))
        r = subprocess.run([sys.executable, "-c", _PROBE.format(root=str(ROOT))], env=env, capture_output=True,
                           text=True, check=True)
        outs.add(r.stdout.strip())
    assert len(outs) == 1 and len(outs.pop()) == 64


def test_key_does_not_depend_on_whether_a_local_import_has_run(tmp_path):
    _module(tmp_path, "fp_lazy_user", """
        def mech(d, rng, size):
            from fp_lazy_dep import SCALE
            return rng.laplace(d, SCALE, size)
    """)
    (tmp_path / "fp_lazy_dep.py").write_text("SCALE = 1.0\n")
    import fp_lazy_user
    sys.path.insert(0, str(tmp_path))
    try:
        assert "fp_lazy_dep" not in sys.modules
        before = fingerprint(fp_lazy_user.mech)
        fp_lazy_user.mech(0.0, np.random.default_rng(0), 3)
        assert fingerprint(fp_lazy_user.mech) == before
        sys.modules["fp_lazy_dep"].SCALE = 0.1
        assert fingerprint(fp_lazy_user.mech) != before
    finally:
        sys.path.remove(str(tmp_path))


def test_cached_and_jitted_style_wrappers_are_walked(tmp_path):
    mod = _module(tmp_path, "fp_wrapped_mod", """
        import functools
        SCALE = 1.0
        @functools.lru_cache(maxsize=None)
        def scale(k):
            return SCALE * k
    """)
    k = fingerprint(mod.scale)
    mod.SCALE = 0.1
    assert fingerprint(mod.scale) != k


def test_module_attribute_read_by_getattr_string(tmp_path):
    mod = _module(tmp_path, "fp_getattr_mod", "SCALE = 1.0\n")

    def mech(d, rng, size):
        return rng.laplace(d, getattr(mod, "SCALE"), size)
    k = fingerprint(mech)
    mod.SCALE = 0.1
    assert fingerprint(mech) != k


class _Lazy:
    def __init__(self, scale):
        self.scale = scale

    @__import__("functools").cached_property
    def table(self):
        return np.arange(3) * self.scale


def test_key_does_not_depend_on_whether_a_cached_property_was_computed():
    a, b = _Lazy(2.0), _Lazy(2.0)
    before = fingerprint(a)
    a.table                                   # computed and stored in a.__dict__
    assert "table" in vars(a) and fingerprint(a) == before == fingerprint(b)
    assert fingerprint(_Lazy(3.0)) != before  # the state it derives from still counts


def test_markov_game_key_is_the_same_before_and_after_its_joint_mdp_is_built():
    # the regression: dp_nash_vi's assumption batches rebuilt after a resume (the game's cached joint MDP)
    from dpcheck.algorithms.envs.generators import random_game
    g = random_game(3, 2, 2, 3, np.random.default_rng(0))
    before = fingerprint(g)
    g.joint_mdp()
    assert fingerprint(g) == before


def test_user_pairs_key_is_the_same_before_and_after_an_episode():
    # the regression: dp_nash_vi's JDP black box recomputed its certification chunks on a --cache rerun,
    # because the scripted user pairs' episode in flight (UserPairs._episode, left by the last
    # reset/step of the selection pass) was hashed, and differed when that pass was read from the cache
    from dpcheck.audits.lib.nash.scenario import jdp_scenario
    fresh, _ = jdp_scenario()
    used, _ = jdp_scenario()
    rng = np.random.default_rng(0)
    s = used.reset(rng, 5, episode=0)
    used.step(0, s, np.zeros(5, dtype=np.int64), np.zeros(5, dtype=np.int64), rng, episode=0)
    assert used._episode is not None
    assert fingerprint(used) == fingerprint(fresh)
    other, _ = jdp_scenario(seed=1)            # what the episodes depend on (the reward) still counts
    assert fingerprint(other) != fingerprint(fresh)


class _Scratch:
    __fingerprint_transient__ = frozenset({"_buf"})

    def __init__(self, scale):
        self.scale, self._buf = scale, None


def test_declared_transient_attributes_are_left_out_of_the_key():
    a = _Scratch(1.0)
    before = fingerprint(a)
    a._buf = np.arange(7)
    assert fingerprint(a) == before == fingerprint(_Scratch(1.0))
    assert fingerprint(_Scratch(2.0)) != before


def test_ufuncs_are_library_code_named_by_name():
    """numpy / scipy ufuncs cannot be pickled; they are fingerprinted by name and version (a plug-in
    privatizer calibrated with scipy.special.ndtr must still be cacheable)."""
    import numpy as np
    import scipy.special as sp
    from dpcheck.fingerprint import fingerprint

    def make(f):
        return lambda x: f(x) + 1
    assert fingerprint(make(np.log)) == fingerprint(make(np.log))
    assert fingerprint(make(np.log)) != fingerprint(make(np.exp))
    assert fingerprint(make(sp.ndtr)) != fingerprint(make(sp.erf))


def test_a_compiled_regex_is_fingerprinted_by_its_pattern_and_flags():
    import re
    from dpcheck.fingerprint import fingerprint
    assert fingerprint(re.compile("a+")) == fingerprint(re.compile("a+"))
    assert fingerprint(re.compile("a+")) != fingerprint(re.compile("b+"))
    assert fingerprint(re.compile("a+")) != fingerprint(re.compile("a+", re.I))


def _package(tmp_path, name, user, init=""):
    """Package ``name`` (``__init__`` = ``init``, submodule ``sub`` with SCALE = 1.0) and the module
    ``<name>_user`` holding the code ``user``."""
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text(init)
    (pkg / "sub.py").write_text("SCALE = 1.0\n")
    (tmp_path / f"{name}_user.py").write_text(textwrap.dedent(user))


def test_key_does_not_depend_on_whether_a_submodule_was_imported_yet(tmp_path):
    # a package gains an attribute per submodule when anyone imports it; the key of a function that
    # names the package must not change with that (a second audit run in one process missed its cache)
    _package(tmp_path, "fp_pkg_a", """
        import fp_pkg_a

        def f(x):
            return x * fp_pkg_a.sub.SCALE      # reaches the submodule through the package's attribute
    """)
    sys.path.insert(0, str(tmp_path))
    try:
        user_a = importlib.import_module("fp_pkg_a_user")
        before = fingerprint(user_a.f)
        assert "fp_pkg_a.sub" in sys.modules       # the fingerprint reached it (and imported it) itself
        importlib.import_module("fp_pkg_a.sub")
        assert fingerprint(user_a.f) == before
        # and what the submodule holds is in the key
        sys.modules["fp_pkg_a.sub"].SCALE = 2.0
        assert fingerprint(user_a.f) != before
    finally:
        sys.path.remove(str(tmp_path))


def test_from_import_does_not_walk_the_packages_above_the_module(tmp_path):
    # "from pkg.sub import SCALE" binds no name for pkg: pkg's other attributes (here a function that happens to
    # share a name the code uses, as dpcheck.run did) are not in the key; "import pkg.sub" binds pkg, so they are
    _package(tmp_path, "fp_pkg_c", """
        def f(agent):
            from fp_pkg_c.sub import SCALE
            return agent.run(SCALE)

        def g(agent):
            import fp_pkg_c.sub
            return agent.run(fp_pkg_c.sub.SCALE)
    """, init="def run(x):\n    return x\n")
    sys.path.insert(0, str(tmp_path))
    try:
        user = importlib.import_module("fp_pkg_c_user")
        pkg_mod = importlib.import_module("fp_pkg_c")
        f0, g0 = fingerprint(user.f), fingerprint(user.g)
        pkg_mod.run = lambda x: 2 * x
        assert fingerprint(user.f) == f0          # not reachable from f
        assert fingerprint(user.g) != g0          # reachable by name from g
        sys.modules["fp_pkg_c.sub"].SCALE = 2.0
        assert fingerprint(user.f) != f0          # what f imports is in its key
    finally:
        sys.path.remove(str(tmp_path))


def test_a_hypothesis_strategy_keys_the_same_before_and_after_it_is_drawn_from():
    """A strategy fills caches on first use (validation recorded under id(), its repr, label, emptiness,
    a lazy strategy's built strategy): none may enter the key, which must stay a function of the
    definition (dpcheck.fingerprint._LIBRARY_TRANSIENT)."""
    import hypothesis.strategies as st
    from hypothesis import Phase, find, settings

    from dpcheck.algorithms.envs.strategies import markov_games, tabular_mdps
    fresh = [st.lists(st.integers(0, 3), min_size=1).map(sum), tabular_mdps(), markov_games()]
    before = [fingerprint(s) for s in fresh]
    for s in fresh:
        find(s, lambda v: True, settings=settings(max_examples=1, database=None, phases=[Phase.generate]))
        repr(s)
    assert [fingerprint(s) for s in fresh] == before
    assert fingerprint(st.integers(0, 3)) == fingerprint(st.integers(0, 3))
    assert fingerprint(st.integers(0, 3)) != fingerprint(st.integers(0, 4))     # the definition still counts


class _AddLaplace:
    """A decorator class: what it computes is its own state and ``__call__`` as much as the function it wraps."""

    def __init__(self, fn, scale):
        import functools
        functools.update_wrapper(self, fn)
        self.scale = scale

    def __call__(self, d, rng, size):
        return self.__wrapped__(d) + rng.laplace(0.0, self.scale, size)


def _count(d):
    return float(d)


def test_a_wrapper_object_keys_on_its_state_and_class_not_only_what_it_wraps():
    # the regression: an object with a __wrapped__ function was hashed by its class name and that function
    # only, so a --cache rerun with a quarter of the noise scale reused the chunks and kept its PASS
    assert fingerprint(_AddLaplace(_count, 1.0)) == fingerprint(_AddLaplace(_count, 1.0))
    assert fingerprint(_AddLaplace(_count, 1.0)) != fingerprint(_AddLaplace(_count, 0.25))

    class Gaussian(_AddLaplace):
        def __call__(self, d, rng, size):
            return self.__wrapped__(d) + rng.normal(0.0, self.scale, size)
    assert fingerprint(Gaussian(_count, 1.0)) != fingerprint(_AddLaplace(_count, 1.0))


def test_an_object_with_a_py_func_keys_on_its_state_unless_it_is_a_numba_dispatcher(tmp_path):
    class Scaled:                       # not numba: py_func is only an attribute name
        def __init__(self, fn, k):
            self.py_func, self.k = fn, k

        def __call__(self, d):
            return self.py_func(d) * self.k
    assert fingerprint(Scaled(_count, 1.0)) != fingerprint(Scaled(_count, 4.0))

    pytest.importorskip("numba")
    mod = _module(tmp_path, "fp_numba_mod", """
        import numba
        SCALE = 1.0
        @numba.njit
        def scale(x):
            return SCALE * x
    """)
    k = fingerprint(mod.scale)
    mod.SCALE = 0.1
    assert fingerprint(mod.scale) != k


def test_a_frompyfunc_ufunc_disables_the_cache_and_np_vectorize_is_walked(tmp_path):
    # the regression: every ufunc was keyed by its name, so the Python code inside np.frompyfunc was not
    mod = _module(tmp_path, "fp_ufunc_mod", """
        import numpy as np
        SCALE = 1.0
        def _noisy(c, u):
            return c + SCALE * u
        noisy = np.frompyfunc(_noisy, 2, 1)
        vnoisy = np.vectorize(_noisy, otypes=[float])
    """)

    def mech(d, rng, size):
        return mod.noisy(float(d), rng.random(size)).astype(float)
    with pytest.raises(Unfingerprintable, match="_noisy \\(vectorized\\).*reached from .*mech"):
        fingerprint(mech)
    k = fingerprint(mod.vnoisy)
    mod.vnoisy(0.0, np.arange(3.0))           # fills its cache of np.frompyfunc ufuncs: derived, left out
    assert fingerprint(mod.vnoisy) == k
    mod.SCALE = 0.25
    assert fingerprint(mod.vnoisy) != k


def test_globals_read_under_a_computed_name_count(tmp_path):
    # the regression: globals()["SCALE"] named no global the walk could see
    mod = _module(tmp_path, "fp_namespace_mod", """
        import sys
        SCALE = 1.0
        def by_globals(d):
            return d * globals()["SC" + "ALE"]
        def by_eval(d):
            return d * eval("SCALE")
        def by_sys_modules(d):
            return d * sys.modules[__name__].SCALE
    """)
    fs = (mod.by_globals, mod.by_eval, mod.by_sys_modules)
    before = [fingerprint(f) for f in fs]
    mod.SCALE = 0.25
    assert all(fingerprint(f) != k for f, k in zip(fs, before))


def test_ordinary_mechanisms_are_still_cached():
    """No over-disabling: closures, lambdas, partials, lru_cache wrappers and the example factories all have a key."""
    import functools
    sys.path.insert(0, str(ROOT))
    from examples import mechanisms as M
    factories = [M.laplace_count(1.0), M.gaussian(1.0), M.geometric(1.0), M.noisy_histogram(1.0),
                 M.report_noisy_max(1.0), M.report_noisy_max_exponential(1.0), M.sparse_vector(1.0),
                 lambda d, rng, size: rng.laplace(d, 1.0, size), functools.partial(laplace(1.0), size=3),
                 functools.lru_cache(maxsize=None)(_count), laplace(1.0)]
    assert len({fingerprint(f) for f in factories}) == len(factories)


_WRAPPER_FILE = """
import functools
class AddLaplace:
    def __init__(self, fn, scale):
        functools.update_wrapper(self, fn)       # copies fn.__module__, a per-process name for this file
        self.scale = scale
    def __call__(self, d, rng, size):
        return self.__wrapped__(d) + rng.laplace(0.0, self.scale, size)
def count(d):
    return float(d)
mech = AddLaplace(count, 1.0)
"""


@pytest.mark.slow
def test_a_wrapper_in_a_users_file_keys_the_same_in_every_process(tmp_path):
    (tmp_path / "wrapped_target.py").write_text(_WRAPPER_FILE)
    code = ("from dpcheck.loading import load_object; from dpcheck.fingerprint import fingerprint; "
            f"print(fingerprint(load_object({str(tmp_path / 'wrapped_target.py:mech')!r})))")
    outs = {subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONHASHSEED=hs, PYTHONPATH=str(ROOT)),
                           capture_output=True, text=True, check=True).stdout.strip() for hs in ("1", "2")}
    assert len(outs) == 1 and len(outs.pop()) == 64
