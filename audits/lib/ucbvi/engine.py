"""The compiled engine against the numpy engine, on the audit's own configurations (Qiao & Wang 2023,
Algorithm 1; algorithms/online/compiled.py).

Why in the audit: every privacy and assumption check of dp_ucbvi runs the numpy engine (monitors, hooks and
scripted users force it; the privatizer checks call the objects), while the regret runs use the compiled one
whenever it covers them (``engine="auto"``). What the regret checks measure is evidence about DP-UCBVI only if
the compiled engine is the numpy engine, and nothing else in the audit looks: a kernel that left the reward
family without tree noise (max |R~ - R| = 1e-14 after a compiled run, 165 after a numpy one) passed every check.
The unit tests hold the engines bit-identical (tests/algorithms/online/test_compiled_engine.py); this check holds
the gate to it.
"""
from __future__ import annotations

import numpy as np

from dpcheck.checks import FAIL, PASS, Check, vacuous
from dpcheck.audits.lib.ucbvi.spec import AgentSpec, SOURCE

ENGINE_RUNS = 4        # runs per configuration: the comparison is exact, a few runs exercise every code path


def _differences(a, b, path: str = "") -> list[str]:
    """Where two exported states / releases differ (bit for bit; NaN equal to NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k}: only one engine has it" for k in sorted(set(a) ^ set(b), key=str)]
        for k in sorted(set(a) & set(b), key=str):
            out += _differences(a[k], b[k], f"{path}.{k}" if path else str(k))
        return out
    if a is None or b is None:
        return [] if a is None and b is None else [f"{path}: None in one engine only"]
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape:
        return [f"{path}: shapes {x.shape} vs {y.shape}"]
    same = np.array_equal(x, y, equal_nan=x.dtype.kind == "f" and y.dtype.kind == "f")
    return [] if same else [f"{path}: {int(np.sum(x != y))} of {x.size} entries differ"]


def _release(priv) -> dict:
    """The release the started privatizer would hand the next episode and its noise per family,
    max |N^ - N| and max |R~ - R| (what the engine left it with)."""
    c, t = priv.release(), priv.true_counts()
    out = {"visits": c.visits, "transitions": c.transitions, "rewards": c.rewards,
           "noisy_visits": c.noisy_visits, "noisy_transitions": c.noisy_transitions}
    noise = {}
    for name, noisy, true in (("visits", c.noisy_visits, t.visits), ("transitions", c.noisy_transitions, t.transitions),
                              ("rewards", c.rewards, t.rewards)):
        if noisy is not None and true is not None:
            noise[name] = float(np.max(np.abs(np.asarray(noisy, float) - np.asarray(true, float))))
    return out, noise


def _one(label: str, spec: AgentSpec, env, K: int, runs: int, seed: int) -> dict:
    """Run ``spec`` on ``env`` with engine="auto" (what the regret runs use) and with the numpy engine, same
    seed; compare what the users get and what the privatizer holds afterwards."""
    from dpcheck.algorithms.online import compiled
    from dpcheck.algorithms.online.ucbvi import UCBVI, DPUCBVI
    kw = dict(runs=runs, record=True, monitor=False, regret=True)
    a_auto, a_numpy = spec.make(), spec.make()
    r_auto = a_auto.run(env, K, np.random.default_rng(seed), engine="auto", **kw)
    row = {"config": label, "agent": spec.describe(), "engine": r_auto.config.get("engine")}
    if row["engine"] != "compiled":
        variant = None if type(a_auto) in (DPUCBVI, UCBVI) else type(a_auto).__name__
        row["why_numpy"] = compiled.ineligible(env, runs, privatizer=a_auto.privatizer, constants=a_auto.constants,
                                               variant=variant, monitor=False, release_hook=None)
        return row
    r_numpy = a_numpy.run(env, K, np.random.default_rng(seed), engine="numpy", **kw)
    diffs = []
    for name in ("actions", "states", "regret"):
        diffs += _differences(getattr(r_auto, name), getattr(r_numpy, name), name)
    p_auto, p_numpy = a_auto.privatizer, a_numpy.privatizer
    if callable(getattr(p_auto, "export_state", None)):
        diffs += _differences(p_auto.export_state(), p_numpy.export_state(), "privatizer state")
    rel_auto, noise_auto = _release(p_auto)
    rel_numpy, noise_numpy = _release(p_numpy)
    diffs += _differences(rel_auto, rel_numpy, "release after the run")
    row.update(differences=diffs, noise_compiled=noise_auto, noise_numpy=noise_numpy)
    return row


def engine_check(configs, env, *, K: int, seed: int, runs: int = ENGINE_RUNS) -> Check:
    """whitebox.compiled_engine: for each (label, AgentSpec) of ``configs`` (the regret runs' configurations), the
    engine the regret runs get (``engine="auto"``: compiled when it covers the run) reproduces the numpy engine
    bit for bit from the same seed: the actions and states of every episode, the exact regret of every policy,
    the privatizer's exported state (true counts, tree / local sums) and the release it makes next. Deterministic:
    one difference FAILs (level 0: both engines are deterministic functions of the seed). Vacuous when no
    configuration runs compiled (numba absent, a variant agent, a privatizer without a compiled noise plan):
    then every run of the audit is a numpy run, which the privacy and assumption checks exercise."""
    rows = [_one(label, spec, env, K, runs, seed) for label, spec in configs]
    compared = [r for r in rows if r["engine"] == "compiled"]
    bad = [r for r in compared if r["differences"]]
    details = {"env": repr(env), "K": K, "runs": runs, "seed": seed, "configurations": rows,
               "noise": "max |N^ - N| / |R~ - R| per family in the release after each engine's run "
                        "(noise_compiled vs noise_numpy): a family the compiled engine leaves unnoised shows ~0"}
    claim = {"statement": "the compiled engine the regret runs use reproduces the numpy engine (the one the privacy "
                          "and assumption checks run) bit for bit: same actions, states and regret, and the same "
                          "privatizer state and next release, from the same seed",
             "source": f"{SOURCE}, Algorithm 1 (one algorithm, two engines; algorithms/online/compiled.py)"}
    measured = {"configurations": len(rows), "compared": len(compared), "violations": len(bad), "confidence": 1.0}
    if bad:
        first = bad[0]
        reason = (f"the compiled engine departs from the numpy engine on {len(bad)} of {len(compared)} configurations "
                  f"({first['config']}: {'; '.join(first['differences'][:3])}; noise after the run, compiled "
                  f"{_fmt(first['noise_compiled'])} vs numpy {_fmt(first['noise_numpy'])}): the regret checks "
                  "measured another algorithm than the one the privacy checks audited")
        return Check(id="whitebox.compiled_engine", kind="whitebox", verdict=FAIL, claim=claim, measured=measured,
                     details=details, reason=reason)
    reason = (f"the compiled engine reproduced the numpy engine bit for bit on {len(compared)} of {len(rows)} "
              f"configurations ({K} episodes x {runs} runs each)")
    c = Check(id="whitebox.compiled_engine", kind="whitebox", verdict=PASS, claim=claim, measured=measured,
              details=details, reason=reason)
    why = None if compared else ("no configuration of the audit runs the compiled engine ("
                                 + "; ".join(sorted({str(r.get('why_numpy')) for r in rows}))
                                 + "): every run is a numpy run, which the privacy and assumption checks exercise")
    return vacuous(c, why)


def _fmt(noise: dict) -> str:
    return "{" + ", ".join(f"{k}: {v:.3g}" for k, v in noise.items()) + "}"
