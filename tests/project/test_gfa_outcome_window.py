"""benchmarks/gfa_outcome_window.py decides with the audit's own rule (gfa.private_exponent_check), so its table
says what the audit would: on known curves its letters are the check's verdicts, the vacuity softening included."""
import importlib.util
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bench():
    spec = importlib.util.spec_from_file_location("gfa_outcome_window",
                                                  os.path.join(ROOT, "benchmarks", "gfa_outcome_window.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_window_benchmark_letters_are_the_audit_verdicts():
    from dpcheck.audits.lib.gfa import RateSetting, _difference, private_exponent_check
    from dpcheck.stats import pass_level
    b = _bench()
    inst_C = b.instance()
    K = np.asarray(b.K_FULL, float)
    rng = np.random.default_rng(1)
    Rn = 10 * np.sqrt(K) * (1 + 0.02 * rng.standard_normal((24, len(K))))
    letters = {}
    for name, cost in {"slow": 3 * K ** 0.45, "steep": 1e-3 * K ** 1.6, "flat": np.full_like(K, 50.0)}.items():
        P = Rn.mean(0) + cost * (1 + 0.05 * rng.standard_normal((48, len(K))))
        letter, upper = b.decide(P, Rn, b.WINDOWS["2^9..2^12"], 0, 0.05 / 12, inst_C)
        sel = slice(0, 4)
        with pass_level(0.05):
            rates = RateSetting(2, inst_C[0], b.K_FULL[sel], 8.0, 1e-5, inst_C[1], "paper", 0.05 / 12, 0)
            c = private_exponent_check(rates, _difference(P[:, sel], Rn[:, sel]), {})
        assert letter == c.verdict[0].upper() + ("u" if "qualifier" in c.details else "")
        assert np.isnan(upper) == (name == "flat")
        letters[name] = letter
    # the outcome instance's bound is vacuous on 2^9..2^12: a steep cost is I there, never the F the old copy said
    # a flat cost has mean increments within noise of 0: no exponent is defined, INCONCLUSIVE (it was Pu, a pass
    # without a fit)
    assert letters == {"slow": "P", "steep": "I", "flat": "I"}
