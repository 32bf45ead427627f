"""dpcheck.hypothesis_search: a search's examples depend on its seed and arguments only -- not on which
local modules the process has loaded (hypothesis mines constants from them), not on the search function's
source text (what ``derandomize=True`` seeds from), not on the hypothesis profile loaded."""
import importlib
import sys

import pytest
from hypothesis import HealthCheck, given, seed as fix_seed, settings, strategies as st

from dpcheck.hypothesis_search import controls_local_constants, explore, provenance, without_local_constants

STRATEGY = st.lists(st.integers(0, 10**6), min_size=3, max_size=3)


def _plant_module(tmp_path, name: str, base: int):
    """Import a new local module holding 200 integer constants in the strategy's range: hypothesis adds them to
    the pool it draws ~5% of its integers from."""
    body = "\n".join(f"C{i} = {base + 7919 * i}" for i in range(200))
    (tmp_path / f"{name}.py").write_text(body + "\n")
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def _pinned_draws(seed=11):
    seen = []
    explore(lambda x: seen.append(tuple(x)), STRATEGY, examples=300, seed=seed)
    return seen


def _plain_draws(seed=11):
    seen = []

    @fix_seed(seed)
    @settings(max_examples=300, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(STRATEGY)
    def run(x):
        seen.append(tuple(x))

    run()
    return seen


def test_the_installed_hypothesis_has_the_pool_dpcheck_empties():
    # fails on a hypothesis release that moves the pool: dpcheck's searches would then depend on the loaded
    # modules again (reports say so: provenance()["local_constants"])
    assert controls_local_constants()
    assert provenance(4) == {"engine": provenance(4)["engine"], "seed": 4, "local_constants": "excluded"}


@pytest.mark.slow
def test_examples_do_not_depend_on_the_modules_loaded(tmp_path):
    before = _pinned_draws()
    plain_before = _plain_draws()
    _plant_module(tmp_path, "dpcheck_planted_constants_a", 100_003)
    assert _pinned_draws() == before
    # the control: without dpcheck the same seeded run draws other examples once the module is loaded
    assert _plain_draws() != plain_before


def _pool(monkeypatch, integers):
    """Make hypothesis's mined pool hold ``integers``: what another process (a dask worker, a wheel install,
    a user's project) would have mined from the modules it has loaded."""
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants
    pool = Constants(integers=set(integers))
    monkeypatch.setattr(providers, "_get_local_constants", lambda: pool)
    providers.CONSTANTS_CACHE.cache.clear()


def _gfa_search(seed=2):
    import copy
    from dpcheck.algorithms.gfa import PrivateGeneralMDP, gf3
    from dpcheck.audits.lib import gfa
    ag = PrivateGeneralMDP(gf3().fclass, epsilon=1.0, delta=1e-5, B=4, s1=0)
    ag.fclass = gfa.extreme_class(3, seed=0)
    return gfa.sensitivity_search(copy.copy(ag), 0, examples=60, seed=seed)


def test_a_whitebox_search_gives_the_same_figures_whatever_pool_the_process_has(monkeypatch):
    # private_gfa's score-sensitivity search (audits/lib/gfa/privacy.py): before dpcheck.hypothesis_search its
    # worst pair and maximum changed with the modules loaded (12.25 in the main process, 16 in a dask worker)
    _pool(monkeypatch, [])
    first = _gfa_search()
    _pool(monkeypatch, [0, 1, 2, 3])
    assert _gfa_search() == first
    assert first["hypothesis"]["local_constants"] == "excluded" and first["hypothesis"]["seed"] == 2


def test_the_pool_changes_a_plain_search(monkeypatch):
    # the control of the test above: the pools it sets change the examples of a plain seeded run
    _pool(monkeypatch, [])
    empty = _plain_draws()
    _pool(monkeypatch, [0, 1, 2, 3, 999_999])
    assert _plain_draws() != empty


@pytest.mark.slow
def test_examples_depend_on_the_seed_not_on_the_source_of_the_search():
    a, b = [], []

    def body(x):
        a.append(tuple(x))

    def another_name_and_source(x):   # a different function digest: derandomize=True would draw other examples
        b.append(tuple(x))            # (this comment too)

    explore(body, STRATEGY, examples=50, seed=5)
    explore(another_name_and_source, STRATEGY, examples=50, seed=5)
    assert a == b
    assert _pinned_draws(seed=6) != _pinned_draws(seed=7)


def test_a_loaded_profile_does_not_change_the_search():
    before = _pinned_draws()
    settings.register_profile("dpcheck-test-narrow", max_examples=2, phases=[], derandomize=True)
    current = settings._current_profile
    settings.load_profile("dpcheck-test-narrow")
    try:
        assert _pinned_draws() == before and len(before) == 300
    finally:
        settings.load_profile(current)


def test_the_pool_is_restored_when_the_search_raises():
    from hypothesis.internal.conjecture import providers
    mined = providers._get_local_constants

    def body(x):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        explore(body, STRATEGY, examples=5, seed=0)
    assert providers._get_local_constants is mined
    with without_local_constants() as pinned:
        assert pinned and len(providers._get_local_constants().integers) == 0
    assert providers._get_local_constants is mined


def test_a_search_can_be_cached_and_is_keyed_on_the_hypothesis_version(monkeypatch):
    # the chunk cache keys side work that runs a search (private_gfa's sensitivity check beside the regret
    # batches): the guard's lock must not make it unfingerprintable, and another hypothesis draws other examples
    import hypothesis
    from dpcheck.audits.lib import gfa
    from dpcheck.fingerprint import fingerprint
    key = fingerprint(gfa.sensitivity_check)
    monkeypatch.setattr(hypothesis, "__version__", "0.0.1")
    assert fingerprint(gfa.sensitivity_check) != key


_FRESH = """
import sys
from hypothesis import given, seed, settings, strategies as st
from dpcheck.hypothesis_search import explore
LOCAL_CONSTANTS = (123457, 765431, 0.3125)    # this file is a local module: plain hypothesis mines these
seen = []


def body(x):
    seen.append(x)


if sys.argv[1] == "dpcheck":
    explore(body, st.integers(0, 10**6), examples=50, seed=1)
else:
    seed(1)(settings(max_examples=50, database=None)(given(st.integers(0, 10**6))(body)))()
"""


def test_a_search_writes_nothing_into_the_working_directory(tmp_path):
    # plain hypothesis caches the constants it mines under ./.hypothesis/ (the control); a dpcheck audit run
    # from a user's folder must not leave that behind
    import subprocess
    for how, expect in (("dpcheck", False), ("plain", True)):
        cwd = tmp_path / how
        cwd.mkdir()
        (cwd / "probe.py").write_text(_FRESH)
        subprocess.run([sys.executable, "probe.py", how], cwd=cwd, check=True, timeout=120)
        assert (cwd / ".hypothesis").exists() == expect, how
