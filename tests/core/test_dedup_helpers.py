"""The helpers that replaced per-module copies: dpcheck.options.as_float (every numeric parameter's first
step), dpcheck.loading.call_plugin (a user's plug-in raising), PaperSources (the built-in privatizers'
sources by paper). Each caller keeps its own message."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.errors import DPCheckError, InputError, MechanismError
from dpcheck.loading import call_plugin
from dpcheck.options import as_float


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6)))
def test_as_float_is_float_for_numbers_and_their_text(x):
    for v in (x, str(x)):
        got = as_float("x", v)
        assert (math.isnan(got) and math.isnan(float(x))) or got == float(x)


@pytest.mark.parametrize("bad", [True, False, None, "abc", [1.0], {}])
def test_as_float_refuses_bools_and_non_numbers_in_one_line(bad):
    with pytest.raises(InputError) as e:
        as_float("epsilon", bad, "a number > 0")
    assert str(e.value) == f"epsilon must be a number > 0, got {bad!r}"


@pytest.mark.parametrize("parse, call, message", [
    ("dpcheck.algorithms.gfa.privacy", lambda m: m._budget("epsilon", "x", allow_inf=True),
     "epsilon must be a number, got 'x'"),
    ("dpcheck.algorithms.gfa.privacy", lambda m: m._budget("epsilon", 0.0, allow_inf=False),
     "epsilon must be a finite number > 0, got 0.0"),
    ("dpcheck.algorithms.linear.privatizer", lambda m: m._number("delta", True), "delta must be a number, got True"),
    ("dpcheck.algorithms.linear.privatizer", lambda m: m._number("delta", float("nan")),
     "delta must be a finite number, got nan"),
    ("dpcheck.algorithms.offline.dataset", lambda m: m.positive_budget("rho", None),
     "rho must be a number > 0, got None"),
    ("dpcheck.algorithms.offline.dataset", lambda m: m.positive_budget("rho", -1),
     "rho must be a number > 0 (inf = noise off), got -1"),
    ("dpcheck.options", lambda m: m.parse_epsilon("abc"), "--epsilon must be a number, got 'abc'"),
    ("dpcheck.options", lambda m: m.parse_epsilon(float("inf")), "--epsilon must be a finite number, got inf"),
])
def test_every_numeric_parser_keeps_its_message(parse, call, message):
    import importlib
    with pytest.raises(InputError) as e:
        call(importlib.import_module(parse))
    assert str(e.value) == message


def test_call_plugin_names_the_plugin_and_passes_dpcheck_errors():
    def boom(a, b=0):
        raise ZeroDivisionError(f"{a}/{b}")

    with pytest.raises(MechanismError) as e:
        call_plugin("privatizer 'x.py:C'", "release", boom, 1, b=0)
    assert str(e.value) == "privatizer 'x.py:C' raised ZeroDivisionError in release: 1/0"
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    own = InputError("already a one-line error")
    with pytest.raises(InputError) as e:
        call_plugin("privatizer 'x'", "start", lambda: (_ for _ in ()).throw(own))
    assert e.value is own and isinstance(e.value, DPCheckError)
    assert call_plugin("p", "w", lambda *a, **k: (a, k), 1, z=2) == ((1,), {"z": 2})


def test_plugin_constructor_errors_name_the_family():
    from dpcheck.algorithms.gfa.selection import load_selection_mechanism, SelectionMechanism
    from dpcheck.algorithms.linear import load_stream_privatizer
    from dpcheck.algorithms.linear.privatizer import Privatizer

    class BadSel(SelectionMechanism):
        def __init__(self):
            raise ValueError("no")

        def select(self, scores, epsilon, sensitivity, rng):
            return None

    with pytest.raises(MechanismError, match=r"^selection mechanism 'BadSel' raised ValueError in its constructor: no$"):
        load_selection_mechanism(BadSel)

    class BadStream(Privatizer):          # the paper's interface, a constructor that raises
        def __init__(self, epsilon, delta):
            raise KeyError("k")

    with pytest.raises(MechanismError, match=r"^stream privatizer 'BadStream' raised KeyError in its constructor"):
        load_stream_privatizer(BadStream)


def test_built_in_privatizers_cite_the_paper_of_their_setting():
    from dpcheck.algorithms.privatizers import CentralPrivatizer, LocalPrivatizer
    c, loc = CentralPrivatizer(epsilon=1.0), LocalPrivatizer(epsilon=1.0)
    assert c.source == CentralPrivatizer.source_for(True) == \
        "Qiao & Wang 2023 (DP-UCBVI), Lemma 5.1: Central Privatizer is eps-JDP"
    assert c.source_for(False) == "Qiao & Wang 2024 (DP-Nash-VI), Lemma 5.1: Central Privatizer is eps-JDP"
    assert loc.source == "Qiao & Wang 2023 (DP-UCBVI), Lemma 5.6: Local Privatizer is eps-LDP"
    assert LocalPrivatizer.source_for(False) == "Qiao & Wang 2024 (DP-Nash-VI), Lemma 5.4: Local Privatizer is eps-LDP"


@pytest.mark.parametrize("load, spec, message", [
    ("selection", "none", "selection mechanism 'none': the non-private learner (argmax, Remark 3.7) is the audit's "
     "own baseline (regret.exponent.nonprivate), not a mechanism to audit; use 'exponential' or file.py:Class"),
    ("selection", "gumbel", "unknown selection mechanism 'gumbel'; expected 'exponential', "
     "'path/to/file.py:Class' or 'pkg.module:Class'"),
    ("stream", "none", "stream privatizer 'none': the non-private reduction (ridge, Z = I) is the audit's own "
     "baseline (regret.exponent.nonprivate), not a privatizer to audit; use 'paper' or file.py:Class"),
    ("stream", "tree", "unknown stream privatizer 'tree'; expected 'paper', 'path/to/file.py:Class' or "
     "'pkg.module:Class'"),
    ("offline", "tree", "unknown offline privatizer 'tree'; expected gaussian, laplace, 'path/to/file.py:ClassName' "
     "or 'pkg.module:ClassName'"),
    ("offline", 3, "offline privatizer must be a name, 'file.py:Class' or a class, got 3"),
    ("regression", "tree", "unknown regression privatizer 'tree'; expected gaussian, 'path/to/file.py:ClassName' "
     "or 'pkg.module:ClassName'"),
    ("regression", 3, "regression privatizer must be a name, 'file.py:Class' or a class, got 3"),
])
def test_plugin_specs_that_name_nothing_keep_their_messages(load, spec, message):
    from dpcheck.algorithms.gfa.selection import load_selection_mechanism
    from dpcheck.algorithms.linear import load_stream_privatizer
    from dpcheck.algorithms.privatizers.loader import load_offline_privatizer, load_regression_privatizer
    fn = {"selection": load_selection_mechanism, "stream": load_stream_privatizer,
          "offline": load_offline_privatizer, "regression": load_regression_privatizer}[load]
    with pytest.raises(InputError) as e:
        fn(spec)
    assert str(e.value) == message


def test_sizes_read_off_array_axes_and_cannot_be_set():
    import numpy as np
    from dpcheck.algorithms.envs import random_mdp
    from dpcheck.algorithms.envs._validate import axis_length

    mdp = random_mdp(3, 2, 4, np.random.default_rng(0))           # S = 3, A = 2, H = 4
    assert (mdp.H, mdp.S, mdp.A) == (4, 3, 2) == mdp.P.shape[:3] and all(type(v) is int for v in (mdp.H, mdp.S, mdp.A))

    class Result:
        K = axis_length("regret", 1)

        def __init__(self):
            self.regret = np.zeros((5, 7))

    r = Result()
    assert r.K == 7 and isinstance(Result.K, axis_length)
    with pytest.raises(AttributeError, match="K is read off regret.shape"):
        r.K = 3
