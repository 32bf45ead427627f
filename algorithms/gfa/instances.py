"""Test instances of He & Zhou 2026: GF-3 (Algorithm 1) and the Appendix D environment (Appendix D,
Algorithm 2) with their function classes.

* :func:`gf3` -- S = {0,1,2}, A = {0,1}, H = 3, fixed s_1 = 0, reward only at the last step; the class
  F_1 x F_2 x F_3 (8 x 6 x 4 = 192 entries) built backwards by exact Bellman backups, so completeness holds by
  construction and Q* is entry 0 (F_h[0] = T_h F_{h+1}[0]).
* :func:`appendix_d` -- contexts x in {0,1}^6 (uniform rho, known), states s_h = (x, a_1..a_{h-1}), outcome
  reward 1 iff the actions match the hidden hypothesis' target and x passes its gate; the class of 3 gates x
  3^H stage-rule assignments (243 entries for H = 4, 27 for the H = 2 unit-test version, Appendix D).

State encoding of the Appendix D environment (the paper leaves it free): context index
x = sum_j x_j 2^(j-1) (x_1 is bit 0); prefix code p_1 = 0, p_{h+1} = 2 p_h + a_h (a_1 most significant);
state index x * 2^(H-1) + p_h, plus one absorbing sink state (index 64 * 2^(H-1)) with zero reward. State
indices mean different prefixes at different steps (the MDP is non-stationary); codes p >= 2^(h-1) are
unreachable at step h and move to the sink, as does every state after the last step (terminal, never acted
in). The sink keeps Q* = 0 off the reachable states, where every hypothesis' Q-function is 0 too: without it
an unreachable code could wrap into a rewarded one and Q* would leave the class (realizability would fail
for an artefact of the encoding).

Hypothesis entries are ordered gate-major, rules in base 3 with c_1 most significant:
entry = gate * 3^H + sum_h c_h 3^(H-h). Easy target (g0, (0,1,0,1)) = entry 10; hard (g2, (2,1,2,1)) = entry 232.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs.tabular import TabularMDP
from dpcheck.algorithms.gfa.function_class import FunctionClass


@dataclass(frozen=True, eq=False)
class GFAInstance:
    """A known MDP with a function class.

    mdp       the TabularMDP (exact evaluation: ``dpcheck.algorithms.gfa.evaluation``)
    fclass    the FunctionClass
    name      label
    target    entry of the class equal to Q* (the hidden hypothesis for Appendix D)
    s1        the fixed public initial state (Algorithm 1), or None when s_1 ~ rho (Algorithm 2)
    params    generating figures (e.g. gate, rules)
    """

    mdp: TabularMDP
    fclass: FunctionClass
    name: str
    target: int
    s1: int | None = None
    params: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ GF-3
def _gf3_mdp() -> TabularMDP:
    S, A, H = 3, 2, 3
    P = np.zeros((H, S, A, S))
    P[0, :, 0] = (0.0, 0.6, 0.4)
    P[0, :, 1] = (0.0, 0.2, 0.8)
    P[1, 0, 0] = (1.0, 0.0, 0.0)
    P[1, 0, 1] = (0.0, 0.5, 0.5)
    P[1, 1, 0] = (0.1, 0.8, 0.1)
    P[1, 1, 1] = (0.5, 0.2, 0.3)
    P[1, 2, 0] = (0.3, 0.3, 0.4)
    P[1, 2, 1] = (0.0, 0.1, 0.9)
    P[2] = np.eye(S)[:, None, :]           # h = 3: irrelevant (terminal afterwards); stay put
    r = np.zeros((H, S, A))
    r[2] = [[0.1, 0.0], [0.3, 0.6], [1.0, 0.2]]
    return TabularMDP(P, r, 0, name="GF-3")


def gf3() -> GFAInstance:
    """GF-3, a small stochastic tabular MDP with a finite Bellman-complete class, with its Bellman-complete 192-entry class (Q* = entry 0)."""
    mdp = _gf3_mdp()
    S = mdp.S

    def backup(h, g):                      # [T_h g](s, a), exact
        return mdp.r[h] + mdp.P[h] @ g.max(axis=-1)

    R3 = mdp.r[2]
    D3 = np.array([[0.1, 0.0], [0.3, 1.0], [0.2, 0.2]])
    F3 = np.stack([R3, 1.0 - R3, np.full((S, 2), 0.5), D3])
    D2 = np.array([[0.64, 0.27], [0.04, 0.02], [0.81, 0.91]])
    F2 = np.concatenate([np.stack([backup(1, g) for g in F3]), np.ones((1, S, 2)), D2[None]])
    D1 = np.tile([0.2, 0.95], (S, 1))
    F1 = np.concatenate([np.stack([backup(0, g) for g in F2]), D1[None], np.zeros((1, S, 2))])
    fc = FunctionClass.product((F1, F2, F3), name="GF-3 class")
    return GFAInstance(mdp=mdp, fclass=fc, name="GF-3", target=0, s1=0)


# ------------------------------------------------------------------------------------------ Appendix D
GATES = ("g0", "g1", "g2")


def _contexts() -> np.ndarray:
    """x_1..x_6 of the 64 contexts (64, 6) int, x_j = bit j-1 of the context index."""
    return (np.arange(64)[:, None] >> np.arange(6)[None, :]) & 1


def _gate(g: int, x: np.ndarray) -> np.ndarray:
    if g == 0:
        return np.ones(x.shape[0], dtype=np.int64)
    if g == 1:
        return x[:, 4] ^ x[:, 5]                       # x5 XOR x6
    if g == 2:
        return x[:, 0] ^ x[:, 2] ^ x[:, 4]             # x1 XOR x3 XOR x5
    raise InputError(f"gate must be 0, 1 or 2, got {g!r}")


def _targets(rules, x: np.ndarray) -> np.ndarray:
    """a*(x) (64, H) of stage rules c (H,) in {0,1,2}: u0 = x1^x2, u1 = x3^a_{h-1} (a_0 = 0),
    u2 = parity(a_1..a_{h-1}) ^ x4."""
    H = len(rules)
    a = np.zeros((x.shape[0], H), dtype=np.int64)
    for h, c in enumerate(rules):
        if c == 0:
            a[:, h] = x[:, 0] ^ x[:, 1]
        elif c == 1:
            a[:, h] = x[:, 2] ^ (a[:, h - 1] if h > 0 else 0)
        elif c == 2:
            a[:, h] = (a[:, :h].sum(axis=1) % 2) ^ x[:, 3]
        else:
            raise InputError(f"stage rules must be 0, 1 or 2, got {c!r}")
    return a


def _prefix_codes(a: np.ndarray) -> np.ndarray:
    """p_h (64, H+1) of the action sequences a (64, H): p_1 = 0, p_{h+1} = 2 p_h + a_h."""
    p = np.zeros((a.shape[0], a.shape[1] + 1), dtype=np.int64)
    for h in range(a.shape[1]):
        p[:, h + 1] = 2 * p[:, h] + a[:, h]
    return p


def hypothesis(entry: int, H: int = 4) -> tuple[int, tuple]:
    """(gate, rules) of a class entry (module docstring ordering)."""
    n = 3 ** H
    if not 0 <= entry < 3 * n:
        raise InputError(f"entry must lie in 0..{3 * n - 1}, got {entry!r}")
    rules = tuple(int(d) for d in np.base_repr(entry % n, 3).zfill(H))
    return entry // n, rules


def hypothesis_entry(gate: int, rules, H: int = 4) -> int:
    if len(rules) != H:
        raise InputError(f"rules must have H = {H} stage rules, got {rules!r}")
    return int(gate) * 3 ** H + int(sum(c * 3 ** (H - 1 - h) for h, c in enumerate(rules)))


def _q_function(gate: int, rules, H: int, x: np.ndarray) -> np.ndarray:
    """f_h(s_h, a) = 1 iff g(x) = 1, prefix = a*_{1..h-1}(x) and a = a*_h(x) (Appendix D) -> (H, S, 2)."""
    width = 2 ** (H - 1)
    S = 64 * width + 1                                       # + the sink
    f = np.zeros((H, S, 2))
    ok = _gate(gate, x) == 1
    a = _targets(rules, x)
    p = _prefix_codes(a)
    xs = np.flatnonzero(ok)
    for h in range(H):
        f[h, xs * width + p[xs, h], a[xs, h]] = 1.0
    return f


def appendix_d(kind: str = "easy", H: int = 4) -> GFAInstance:
    """The Appendix D environment: ``kind`` "easy" (g0, rules (0,1,0,1)) or "hard" (g2, (2,1,2,1)).

    ``H = 2`` is Appendix D's unit-test version (27 hypotheses; the instance's rules are the first two stages).
    """
    if kind not in ("easy", "hard"):
        raise InputError(f"kind must be 'easy' or 'hard', got {kind!r}")
    if H not in (1, 2, 3, 4):
        raise InputError(f"H must be 1..4 (prefix codes fit 2^(H-1) slots), got {H!r}")
    gate, rules = (0, (0, 1, 0, 1)) if kind == "easy" else (2, (2, 1, 2, 1))
    rules = rules[:H]
    x = _contexts()
    width = 2 ** (H - 1)
    sink = 64 * width
    S, A = sink + 1, 2
    states = np.arange(sink)
    xi, p = states // width, states % width
    P = np.zeros((H, S, A, S))
    P[:, sink, :, sink] = 1.0
    for h in range(H):
        for act in range(A):
            live = p < 2 ** h if h + 1 < H else np.zeros(sink, bool)
            nxt = np.where(live, xi * width + 2 * p + act, sink)
            P[h, states, act, nxt] = 1.0
    r = np.zeros((H, S, A))
    r[H - 1] = _q_function(gate, rules, H, x)[H - 1]        # R_H = 1 iff target completed on a gated context
    init = np.zeros(S)
    init[np.arange(64) * width] = 1.0 / 64
    mdp = TabularMDP(P, r, init, name=f"appendix-D {kind} (H={H})")
    values = np.stack([_q_function(*hypothesis(e, H), H, x) for e in range(3 * 3 ** H)])
    fc = FunctionClass.from_values(values, name=f"appendix-D class (H={H})")
    return GFAInstance(mdp=mdp, fclass=fc, name=f"appendix-D-{kind}", target=hypothesis_entry(gate, rules, H),
                       params={"gate": GATES[gate], "rules": rules, "H": H, "state_width": width})
