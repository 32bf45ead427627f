"""Errors that the command line turns into exit code 2 with one clear line."""


class DPCheckError(Exception):
    """Base class: bad input or a usage error. Message is shown to the user as is."""


class InputError(DPCheckError, ValueError):
    """The user handed us something malformed (a target, an MDP, a claim, a file)."""


class MechanismError(DPCheckError):
    """A user's mechanism or privatizer raised, or returned something unusable."""


class DPCheckInconclusiveWarning(UserWarning):
    """An audit in a test ended INCONCLUSIVE and the test was let pass (not strict), or passed uninformatively (a
    budget that could not reliably see a 2x excess): the pytest plugin and :func:`dpcheck.testing.assert_dp` warn
    with it, so a budget too small to decide is seen, not silent."""
