"""Episodes per second of UCBVI and DP-UCBVI on RiverSwim (H = 20), against rlberry's UCBVI agent.

Baseline: ``rlberry_scool.agents.ucbvi.UCBVIAgent`` (stage-dependent, simplified Bernstein bonus,
numba backward induction) on the same RiverSwim (rlberry's ``FiniteMDP``), one run, timed in the same
invocation. rlberry-scool pins versions that clash with ours, so it is looked for in this
interpreter first and then in the interpreter named by ``$RLBERRY_PYTHON`` (e.g. a venv made with
``python -m venv /tmp/rlberry_venv && /tmp/rlberry_venv/bin/pip install rlberry-scool``); if neither
has it, the ratio is skipped with a message and only our numbers are printed.

Ours is batched over independent runs: a batch of ``runs`` runs of K episodes counts as runs * K
episodes (that is the throughput an audit or a reproduction sees). Reported per configuration:
episodes/s at runs = 1 and at a large batch, and the ratio to rlberry's episodes/s.
Goal (issue #4): >= 100x rlberry's episodes/s.

Usage: python benchmarks/bench_ucbvi.py [--K 2000] [--runs 1,64,1024]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RLBERRY_SNIPPET = textwrap.dedent("""
    import json, sys, time, warnings
    import numpy as np
    warnings.filterwarnings("ignore")
    from rlberry.envs.finite_mdp import FiniteMDP
    from rlberry_scool.agents.ucbvi import UCBVIAgent
    H, S, n = int(sys.argv[1]), 6, int(sys.argv[2])
    P = np.zeros((S, 2, S)); st = np.arange(S)
    P[st, 0, np.maximum(st - 1, 0)] = 1.0
    for s in range(1, S - 1):
        P[s, 1, s + 1] = 0.35; P[s, 1, s] = 0.60; P[s, 1, s - 1] = 0.05
    P[0, 1, 1] = 0.60; P[0, 1, 0] = 0.40; P[S - 1, 1, S - 1] = 0.60; P[S - 1, 1, S - 2] = 0.40
    R = np.zeros((S, 2)); R[0, 0] = 0.005; R[S - 1, 1] = 1.0
    env = FiniteMDP(R, P, initial_state_distribution=0)
    agent = UCBVIAgent(env, horizon=H, stage_dependent=True, gamma=1.0)
    agent.fit(budget=20)  # warm-up: numba compilation is not part of the rate
    t = time.perf_counter(); agent.fit(budget=n); dt = time.perf_counter() - t
    print(json.dumps({"episodes": n, "seconds": dt, "episodes_per_second": n / dt}))
""")


def rlberry_rate(H: int, episodes: int):
    """rlberry's UCBVI episodes/s, or (None, why) when it is not installed anywhere we can see."""
    candidates = [sys.executable]
    if os.environ.get("RLBERRY_PYTHON"):
        candidates.append(os.environ["RLBERRY_PYTHON"])
    elif os.path.exists("/tmp/rlberry_venv/bin/python"):
        candidates.append("/tmp/rlberry_venv/bin/python")
    for py in candidates:
        try:
            out = subprocess.run([py, "-c", RLBERRY_SNIPPET, str(H), str(episodes)], capture_output=True,
                                 text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip():
            res = json.loads(out.stdout.strip().splitlines()[-1])
            res["python"] = py
            return res, None
    return None, ("rlberry-scool not found (pip install rlberry-scool in a venv and set RLBERRY_PYTHON); "
                  "skipping the ratio")


def our_rate(kind: str, H: int, K: int, runs: int, seed: int = 0) -> dict:
    from algorithms.envs.riverswim import riverswim
    from algorithms.online.ucbvi import DPUCBVI, UCBVI
    from algorithms.privatizers import CentralPrivatizer, LocalPrivatizer
    env = riverswim(H)
    if kind == "UCBVI":
        agent = UCBVI(mode="practical")
    elif kind == "DP-UCBVI central":
        agent = DPUCBVI(CentralPrivatizer(1.0, width_mode="nominal"), mode="practical")
    else:
        agent = DPUCBVI(LocalPrivatizer(1.0, width_mode="nominal"), mode="practical")
    # learning only: no recording, no monitors, no regret evaluation (what rlberry's fit does)
    t = time.perf_counter()
    agent.run(env, K, np.random.default_rng(seed), runs=runs, record=False, monitor=False, regret=False)
    dt = time.perf_counter() - t
    return {"algorithm": kind, "runs": runs, "K": K, "seconds": dt, "episodes_per_second": runs * K / dt}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--K", type=int, default=2000)
    ap.add_argument("--H", type=int, default=20)
    ap.add_argument("--runs", default="1,64,1024")
    ap.add_argument("--rlberry-episodes", type=int, default=500)
    a = ap.parse_args(argv)
    base, why = rlberry_rate(a.H, a.rlberry_episodes)
    if base is None:
        print(f"SKIP ratio: {why}")
    else:
        print(f"rlberry UCBVIAgent (RiverSwim H={a.H}, 1 run): {base['episodes_per_second']:.0f} episodes/s "
              f"({base['episodes']} episodes in {base['seconds']:.2f} s; {base['python']})")
    rows = []
    for kind in ("UCBVI", "DP-UCBVI central", "DP-UCBVI local"):
        for runs in (int(r) for r in a.runs.split(",")):
            K = max(50, a.K // max(1, runs // 16)) if runs > 16 else a.K
            r = our_rate(kind, a.H, K, runs)
            if base is not None:
                r["ratio_vs_rlberry"] = r["episodes_per_second"] / base["episodes_per_second"]
            rows.append(r)
            ratio = f"  ratio {r['ratio_vs_rlberry']:8.1f}x" if base is not None else ""
            print(f"{kind:18s} runs={runs:5d} K={K:6d}: {r['episodes_per_second']:10.0f} episodes/s{ratio}")
    print(json.dumps({"rlberry": base, "ours": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
