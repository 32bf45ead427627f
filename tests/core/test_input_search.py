"""Input search (dpcheck.search, docs/input_search.md): an AuditTarget with a PairSearch finds the pair
whose leak the given pairs miss, on outputs kept apart from certification, so its bound stays valid."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from examples import search_target as S  # noqa: E402

import dpcheck  # noqa: E402
from dpcheck import AuditTarget, Claim, PairSearch  # noqa: E402
from dpcheck.errors import InputError, MechanismError  # noqa: E402
from dpcheck.search import SEARCH_TAG, search_pairs  # noqa: E402


def _flip(t):
    d = np.array(t[0])
    dp = d.copy()
    dp[t[1]] ^= 1
    return d, dp


BITS_STRATEGY = st.tuples(st.lists(st.integers(0, 1), min_size=S.BITS, max_size=S.BITS),
                          st.integers(0, S.BITS - 1)).map(_flip)


def test_the_obvious_pairs_miss_the_leak_and_the_search_finds_it():
    fixed = dpcheck.audit(S.obvious_pairs, samples=20_000, seed=0)
    assert fixed.verdict == "pass" and fixed.search is None
    found = dpcheck.audit(S.searched, samples=20_000, seed=0)
    assert found.verdict == "fail" and found.epsilon_lower_bound > 2 * S.EPS
    chosen = found.search["chosen"][0]
    d, dp = (np.array(json.loads(chosen[k])) for k in ("D", "D'"))
    assert 6 in (d.sum(), dp.sum()) and np.abs(d - dp).sum() == 1      # a count-6 pair, neighbours
    assert found.pair == chosen["audited_pair"] == 2                    # after the two given pairs
    assert found.search["candidates"] == 32 and found.search["search_outputs"] == 2 * 32 * 2000


def test_a_correct_mechanism_passes_with_the_search():
    res = dpcheck.audit(S.searched_correct, samples=20_000, seed=0)
    assert res.verdict == "pass" and res.epsilon_lower_bound <= S.EPS
    assert len(res.pairs_table) == 1 and res.search["given_pairs"] == 0          # the one pair found


@pytest.mark.slow
def test_the_bound_after_a_search_stays_valid():
    """Every neighbouring pair of the correct count has privacy loss exactly eps, so the search picks
    whichever looked worst by chance (its winner's curse). Certified on outputs the search never saw, the
    bound still exceeds eps in at most ~alpha of runs: 0 expected among 60 seeds at alpha = 0.05 (its
    bounds are conservative), at most 6 allowed (P[Binomial(60, 0.05) > 6] < 0.05)."""
    t = AuditTarget("correct", S.count_correct, [], Claim(epsilon=S.EPS),
                    search=PairSearch(S.neighbouring_datasets, candidates=16, samples=300))
    over = [dpcheck.audit(t, samples=4000, seed=s).epsilon_lower_bound > S.EPS for s in range(60)]
    assert sum(over) <= 6


def test_search_outputs_come_from_their_own_seed_stream():
    """The search's estimates are computed from SeedSequence([seed, SEARCH_TAG]): a different seed stream
    from the audit's SeedSequence(seed), and the search record says which."""
    res = dpcheck.audit(S.searched, samples=2000, seed=3)
    assert res.search["seed_stream"] == f"SeedSequence([3, {SEARCH_TAG}])"
    a = np.random.SeedSequence([3, SEARCH_TAG]).generate_state(4)
    b = np.random.SeedSequence(3).generate_state(4)
    assert not np.array_equal(a, b)


def test_same_seed_same_search_and_result():
    a = dpcheck.audit(S.searched, samples=5000, seed=1)
    b = dpcheck.audit(S.searched, samples=5000, seed=1)
    assert a.search == b.search and a.epsilon_lower_bound == b.epsilon_lower_bound
    c = dpcheck.audit(S.searched, samples=5000, seed=2)
    assert c.search["top"] != a.search["top"]


def test_the_search_ranks_by_what_would_certify():
    """The candidate ranked first is the one with the largest projected bound, and a leaking pair ranks
    above every non-leaking one."""
    pairs, rec = search_pairs(S.searched, 20_000, 0.05, 0, 0.25)
    est = [r["estimate"] for r in rec["top"]]
    assert est == sorted(est, reverse=True) and rec["chosen"][0]["estimate"] == est[0]
    assert len(pairs) == 3 and pairs[:2] == list(S.searched.pairs)


@pytest.mark.slow
def test_a_hypothesis_strategy_domain_is_searched_deterministically():
    t = AuditTarget("h", S.count_with_hidden_leak, [], Claim(epsilon=S.EPS),
                    search=PairSearch(BITS_STRATEGY, candidates=100, samples=500))
    a = dpcheck.audit(t, samples=20_000, seed=0)
    b = dpcheck.audit(t, samples=20_000, seed=0)
    assert a.verdict == "fail" and a.search == b.search
    assert "hypothesis strategy" in a.search["domain"]


def test_sequential_audit_uses_the_search_too():
    res = dpcheck.audit(S.searched, samples=20_000, seed=0, sequential=True)
    assert res.verdict == "fail" and res.search["chosen"][0]["audited_pair"] == 2


@pytest.mark.parametrize("kw,msg", [
    (dict(candidates=0), "candidates must be an integer >= 1"),
    (dict(samples=5), "samples must be an integer >= 20"),
    (dict(keep=3, candidates=2), "keep (3) exceeds candidates (2)"),
    (dict(candidates=2.5), "candidates must be an integer"),
])
def test_bad_search_settings_are_input_errors(kw, msg):
    with pytest.raises(InputError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        PairSearch(S.neighbouring_datasets, **kw)


def test_a_domain_that_is_neither_function_nor_strategy_is_refused():
    with pytest.raises(InputError, match="domain must be a function"):
        PairSearch([(0, 1)])
    with pytest.raises(InputError, match="search must be a dpcheck.PairSearch"):
        AuditTarget("x", S.count_correct, [(0, 1)], Claim(epsilon=1.0), search=S.neighbouring_datasets)
    with pytest.raises(InputError, match="needs at least one neighbouring pair"):
        AuditTarget("x", S.count_correct, [], Claim(epsilon=1.0))


def test_a_domain_that_raises_or_returns_no_pair_is_named():
    def raises(rng):
        raise ValueError("no data")
    t = AuditTarget("x", S.count_correct, [], Claim(epsilon=1.0), search=PairSearch(raises, candidates=2, samples=20))
    with pytest.raises(MechanismError, match="search domain of target 'x' raised ValueError: no data"):
        dpcheck.audit(t, samples=1000)
    t = AuditTarget("x", S.count_correct, [], Claim(epsilon=1.0),
                    search=PairSearch(lambda rng: np.zeros(3), candidates=2, samples=20))
    with pytest.raises(InputError, match=r"not a \(D, D'\) pair"):
        dpcheck.audit(t, samples=1000)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "dpcheck", "audit", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.slow
def test_cli_reports_the_search(tmp_path):
    out = tmp_path / "rep"
    p = _cli("examples/search_target.py:searched", "--samples", "20000", "--out", str(out), "--quiet")
    assert p.returncode == 1, p.stderr
    check = json.loads(next(out.glob("*.json")).read_text())["checks"][0]
    assert check["verdict"] == "fail" and check["details"]["search"]["candidates"] == 32
    assert check["details"]["search"]["chosen"][0]["audited_pair"] == check["measured"]["pair"] == 2
    assert "input search" in (out / f"{next(out.glob('*.json')).stem}.md").read_text()


@pytest.mark.slow
def test_cli_domain_error_exits_2_with_one_line(tmp_path):
    (tmp_path / "t.py").write_text(
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from examples import search_target as S\nfrom dpcheck import AuditTarget, Claim, PairSearch\n"
        "def dom(rng):\n    raise RuntimeError('boom')\n"
        "bad = AuditTarget('bad', S.count_correct, [], Claim(epsilon=1.0), search=PairSearch(dom))\n")
    p = _cli(f"{tmp_path / 't.py'}:bad", "--samples", "1000", "--out", str(tmp_path / "rep"), "--quiet")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "search domain of target 'bad' raised RuntimeError: boom" in p.stderr.strip().splitlines()[-1]


def test_the_batch_black_box_alone_refuses_a_search_target_and_says_where_to_go():
    from dpcheck.blackbox import audit as batch_only
    with pytest.raises(InputError, match="carries a PairSearch: audit it with dpcheck.audit"):
        batch_only(S.searched_correct, samples=1000)


def test_sequential_refuses_the_batch_event_bound_instead_of_ignoring_it():
    with pytest.raises(InputError, match="event_bound='best' is the batch black box's"):
        dpcheck.audit(S.obvious_pairs, samples=1000, sequential=True, event_bound="best")


def test_candidates_with_d_equal_to_d_prime_are_skipped_and_counted():
    # a domain bug that copies D into D' (every candidate eps = 0) must not end in a plain PASS
    def copies(rng):
        d = rng.integers(0, 2, S.BITS)
        return d, d.copy()
    t = AuditTarget("copies", S.count_correct, [], Claim(epsilon=S.EPS), search=PairSearch(copies, candidates=4,
                                                                                           samples=200))
    with pytest.raises(InputError, match="only pairs with D == D'"):
        dpcheck.audit(t, samples=4000, seed=0)

    def half(rng):
        d, dp = S.neighbouring_datasets(rng)
        return (d, d.copy()) if rng.random() < 0.5 else (d, dp)
    t = AuditTarget("half", S.count_correct, [], Claim(epsilon=S.EPS), search=PairSearch(half, candidates=8,
                                                                                         samples=200))
    r = dpcheck.audit(t, samples=4000, seed=0)
    assert r.search["identical_skipped"] > 0
    assert all(not np.array_equal(*map(np.array, (json.loads(c["D"]), json.loads(c["D'"]))))
               for c in r.search["chosen"])
