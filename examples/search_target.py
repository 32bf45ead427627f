"""Input search (docs/input_search.md): a leak that shows only at inputs nobody lists.

``count_with_hidden_leak``: a count over 8 bits released with Lap(1/eps) noise, except that a dataset
whose count is exactly 6 gets a quarter of the noise. The obvious pairs (all zeros vs one 1, all ones vs
one 0) never touch count 6, so auditing them PASSes; a pair with count 6 on one side has privacy loss
ln 4 + 1 = 2.39 at eps = 1 (the densities at the output 6).

    dpcheck audit examples/search_target.py:obvious_pairs      # PASS: the leak is not among these pairs
    dpcheck audit examples/search_target.py:searched           # FAIL: the search finds a count-6 pair
    dpcheck audit examples/search_target.py:searched_correct   # PASS: the same search, no leak
"""
from __future__ import annotations

import numpy as np

from dpcheck import AuditTarget, Claim, PairSearch

EPS = 1.0
BITS = 8


def count_with_hidden_leak(data, rng: np.random.Generator, size: int) -> np.ndarray:
    count = int(np.sum(data))
    scale = (0.25 if count == 6 else 1.0) / EPS
    return rng.laplace(float(count), scale, size)


def count_correct(data, rng: np.random.Generator, size: int) -> np.ndarray:
    return rng.laplace(float(np.sum(data)), 1.0 / EPS, size)


def neighbouring_datasets(rng: np.random.Generator):
    """A random dataset of BITS bits and the same with one bit flipped (add/remove-one neighbours)."""
    d = rng.integers(0, 2, BITS)
    dp = d.copy()
    dp[rng.integers(BITS)] ^= 1
    return d, dp


OBVIOUS = [(np.zeros(BITS, dtype=int), np.r_[1, np.zeros(BITS - 1, dtype=int)]),
           (np.ones(BITS, dtype=int), np.r_[np.ones(BITS - 1, dtype=int), 0])]

obvious_pairs = AuditTarget("count_with_hidden_leak", count_with_hidden_leak, OBVIOUS, Claim(epsilon=EPS))
searched = AuditTarget("count_with_hidden_leak_searched", count_with_hidden_leak, OBVIOUS, Claim(epsilon=EPS),
                       search=PairSearch(neighbouring_datasets, candidates=32, samples=2000))
searched_correct = AuditTarget("count_correct_searched", count_correct, [], Claim(epsilon=EPS),
                               search=PairSearch(neighbouring_datasets, candidates=32, samples=2000))
