"""dpcheck.strategies.episode_sizes / episode_states / episode_actions: one episode's (H, S, A), its H + 1
states in 0..S-1 and H actions in 0..A-1 as lists (what the audits' sensitivity searches draw)."""
from hypothesis import given, settings, strategies as st

from dpcheck.strategies import episode_actions, episode_sizes, episode_states


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 4).flatmap(lambda H: st.integers(1, 4).flatmap(
    lambda S: st.tuples(st.just(H), st.just(S), episode_states(H, S), episode_actions(H, S)))))
def test_one_episode_has_H_plus_1_states_and_H_actions_in_range(case):
    H, n, states, actions = case
    assert isinstance(states, list) and len(states) == H + 1 and all(0 <= s < n for s in states)
    assert isinstance(actions, list) and len(actions) == H and all(0 <= a < n for a in actions)


@settings(max_examples=5, deadline=None, derandomize=True)
@given(episode_states(2, 1), episode_actions(2, 1))
def test_one_state_and_one_action_give_the_all_zero_episode(states, actions):
    assert states == [0, 0, 0] and actions == [0, 0]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 3).flatmap(lambda m: st.tuples(st.just(m), st.composite(
    lambda draw: episode_sizes(draw, min_states=m))())))
def test_episode_sizes_are_small_and_respect_the_least_number_of_states(case):
    m, (H, S, A) = case
    assert 1 <= H <= 3 and m <= S <= 3 and 1 <= A <= 2
