"""Planted defects in the LinOpt Privatizer's node noise (Zhou 2022, Section 6.1) and tree depth (proof of Thm 6.4)
that whitebox.tree_noise_reuse (H = 1, d = 2, K <= 16, one counter kind at a time) and whitebox.calibration (m read
from the LinearSizes it audits) passed: whitebox.noise_scale / noise_independence measure the noise drawn at the
instance's H, d1, d2 over every tree level; whitebox.calibration recomputes m from K."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpcheck.algorithms.linear import Privatizer, lm2
from dpcheck.algorithms.linear.regularizers import LinearSizes, TreeStatistics
from dpcheck.audits.lib import linopt as lib

K = 2 ** 10            # 10 tree levels: fast (~0.15 s a check), and beyond the levels K <= 16 reaches


def _only_step_one(tree, draw):
    def f(i):
        w = draw(i)
        w[:, 1:] = 0.0                        # steps 2..H released exactly
        return w
    return f


def _shared_across_steps(tree, draw):
    def f(i):
        one = tree.counter.draw(tree.rng, tree.shape[:1] + tree.shape[2:])
        w = np.broadcast_to(one[:, None], tree.shape).copy()     # one draw for the H step counters
        tree.last_noise = w
        if tree._noise is not None:
            tree._noise[i] = w
        return w
    return f


def _levels_below_four(tree, draw):
    def f(i):
        w = draw(i)
        return w if i < 4 else np.zeros_like(w)                     # levels >= 4 without noise
    return f


def _patched(patch, kinds=("p1", "p2", "r1", "r2")):
    class State(TreeStatistics):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            for c in kinds:
                t = self.trees[c]
                t._draw = patch(t, t._draw)
    return type(f"Planted{patch.__name__}", (Privatizer,),
                {"start": lambda self, runs, sizes, rng, alpha: State(self, runs, sizes, rng, alpha)})


class _VectorReusesGram(TreeStatistics):
    """The p2 node noise is a rescaled column of the p1 node's draw (same marginal variance)."""

    def observe(self, x_p, y_p, x_r, y_r):
        p1, p2 = self.trees["p1"], self.trees["p2"]
        if self.episodes + 1 <= self.sizes.insertions:
            p1.step(x_p[..., :, None] * x_p[..., None, :])
            w = p1.last_noise[..., :, 0] * (p2.counter.node_scale / p1.counter.node_scale)
            p2._draw = lambda i, w=w: w
            p2.step(x_p * y_p[..., None])
            self.trees["r1"].step(x_r[..., :, None] * x_r[..., None, :])
            self.trees["r2"].step(x_r * y_r[..., None])
        self.episodes += 1


class VectorReusesGram(Privatizer):
    def start(self, runs, sizes, rng, alpha):
        return _VectorReusesGram(self, runs, sizes, rng, alpha)


def _checks(cls=None):
    spec = lib.LinOptSpec() if cls is None else lib.LinOptSpec(privatizer_class=cls)
    return {c.id: c for c in lib.noise_law_checks(spec, lm2(), K, seed=0)}


def test_the_paper_privatizer_passes_noise_scale_and_independence():
    c = _checks()
    assert c["whitebox.noise_scale"].verdict == "pass", c["whitebox.noise_scale"].reason
    assert c["whitebox.noise_independence"].verdict == "pass", c["whitebox.noise_independence"].reason
    assert c["whitebox.noise_scale"].measured["levels"] == 10


@pytest.mark.parametrize("patch, fails, where", [
    (_only_step_one, "whitebox.noise_scale", "step h=2"),
    (_levels_below_four, "whitebox.noise_scale", "level"),
    (_shared_across_steps, "whitebox.noise_independence", "h=")])
def test_node_noise_defects_are_caught(patch, fails, where):
    c = _checks(_patched(patch))
    assert c[fails].verdict == "fail", c[fails].reason
    assert where in c[fails].reason


def test_vector_noise_reusing_the_gram_draw_is_caught():
    c = _checks(VectorReusesGram)
    bad = c["whitebox.noise_independence"]
    assert bad.verdict == "fail", bad.reason
    assert "p1" in bad.reason and "p2" in bad.reason
    # its marginal variance is the declared one: only the correlation shows it
    assert c["whitebox.noise_scale"].verdict == "pass"


def test_a_tree_depth_of_ceil_ln_k_fails_the_calibration_check(monkeypatch):
    env = lm2()
    assert lib.calibration_check(lib.LinOptSpec(), env, 16384).verdict == "pass"
    monkeypatch.setattr(LinearSizes, "m", property(lambda self: max(1, math.ceil(math.log(self.K)))))
    bad = lib.calibration_check(lib.LinOptSpec(), env, 16384)
    assert bad.verdict == "fail" and "ceil(log2 K) = 14" in bad.reason, bad.reason
    # at K = 8 ceil(ln 8) = ceil(log2 8) = 3: the same tree, nothing to catch
    assert lib.calibration_check(lib.LinOptSpec(), env, 8).verdict == "pass"
    assert lib.tree_depth(8) == 3 and lib.tree_depth(12) == 4 and lib.tree_depth(1) == 1 and lib.tree_depth(2) == 1
