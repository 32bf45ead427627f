"""dpcheck: verification and property testing for differentially private RL.

Public API:
    run(target, ...)            -- any audit, as ``dpcheck audit`` runs it; returns a Report (dpcheck.api)
    Report                      -- verdict, checks, config, to_json(), write(out_dir)
    Claim, AuditTarget          -- what is promised, and by what mechanism
    PairSearch                  -- a domain of neighbouring pairs an AuditTarget may search
    audit(target, ...)          -- black-box epsilon lower bound with confidence
    Check                       -- one verified claim (what a report is made of)
"""
from dpcheck import _layout

_layout.install(__name__, __path__)

from dpcheck.claims import Claim
from dpcheck.target import AuditTarget
from dpcheck.target import PairSearch
from dpcheck.checks import Check, PASS, FAIL, INCONCLUSIVE
from dpcheck.errors import DPCheckError, InputError, MechanismError

from dpcheck._version import __version__


def run(target, **kwargs):
    """Run an audit as ``dpcheck audit`` does and return its Report; see :func:`dpcheck.api.run`."""
    from dpcheck.api import run as _run
    return _run(target, **kwargs)


def __getattr__(name):
    if name == "Report":            # imported on first use: ``import dpcheck`` stays light
        from dpcheck.api import Report
        return Report
    raise AttributeError(f"module 'dpcheck' has no attribute {name!r}")


def audit(target, *args, **kwargs):
    """Black-box audit of ``target``; see :func:`dpcheck.blackbox.audit` (and ``sequential=True``:
    :func:`dpcheck.sequential.audit_sequential`; a target with a ``search``: :mod:`dpcheck.search`)."""
    from dpcheck.sequential import audit as _audit
    return _audit(target, *args, **kwargs)


__all__ = ["run", "Report", "Claim", "AuditTarget", "PairSearch", "Check", "audit", "PASS", "FAIL", "INCONCLUSIVE",
           "DPCheckError", "InputError", "MechanismError", "__version__"]
