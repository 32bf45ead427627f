"""Reference implementations of the DP-RL algorithms dpcheck verifies, and their substrate."""
