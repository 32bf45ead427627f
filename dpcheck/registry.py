"""Registry of named audits.

``dpcheck`` imports no algorithm at module level (DESIGN.md): built-in audits
live in the top-level ``audits`` package, whose modules register themselves
with :func:`register` when :func:`load` imports them; third-party packages can
add audits through the ``dpcheck.audits`` entry-point group.

An audit is a function ``run(ctx: AuditContext) -> None`` that adds checks to
``ctx`` as it finishes them (so a crash later loses no finished work).
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

from dpcheck.errors import InputError


@dataclass(frozen=True)
class AuditSpec:
    name: str
    run: Callable
    algorithm: str
    notion: str
    claim: str
    description: str = ""
    privatizers: tuple[str, ...] = ()
    default_epsilon: float | None = None


_REGISTRY: dict[str, AuditSpec] = {}
_loaded = False


def register(name: str, *, algorithm: str, notion: str, claim: str, description: str = "",
             privatizers: tuple[str, ...] = (), default_epsilon: float | None = None):
    """Decorator: register ``run(ctx)`` as the audit ``name``."""
    def deco(fn):
        _REGISTRY[name] = AuditSpec(name=name, run=fn, algorithm=algorithm, notion=notion, claim=claim,
                                    description=description, privatizers=tuple(privatizers),
                                    default_epsilon=default_epsilon)
        return fn
    return deco


def load() -> dict[str, AuditSpec]:
    """Import every module of the built-in ``audits`` package and every entry point, once."""
    global _loaded
    if not _loaded:
        _loaded = True
        try:
            import audits
        except ImportError:  # running without the reference implementations
            audits = None
        if audits is not None:
            for mod in sorted(pkgutil.iter_modules(audits.__path__), key=lambda m: m.name):
                if not mod.name.startswith("_"):
                    importlib.import_module(f"audits.{mod.name}")
        try:
            from importlib.metadata import entry_points
            for ep in entry_points(group="dpcheck.audits"):
                ep.load()
        except Exception:  # a broken third-party plugin must not break `dpcheck list`
            pass
    return dict(_REGISTRY)


def get(name: str) -> AuditSpec:
    reg = load()
    if name not in reg:
        known = ", ".join(sorted(reg)) or "(none)"
        raise InputError(f"no audit named {name!r}; registered audits: {known}")
    return reg[name]
