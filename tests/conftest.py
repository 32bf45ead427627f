import os

import pytest
from hypothesis import settings

# Deterministic, CI-friendly hypothesis profile: fixed seed, no deadline (machines are shared and noisy).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

os.environ.setdefault("MPLBACKEND", "Agg")
