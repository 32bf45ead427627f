"""Registry of named audits.

``dpcheck`` imports neither ``algorithms`` nor ``audits`` (tests/project/test_layering.py):
every audit, the built-in ones included, reaches the registry through the ``dpcheck.audits``
entry-point group. An entry point names a module that registers its audits with :func:`register`
when :func:`load` imports it; the built-in audits are declared in this project's pyproject.toml
(``[project.entry-points."dpcheck.audits"]``) exactly as a third-party package declares its own, one
entry per audit, named after it, so that :func:`find` imports only the module of the audit asked for.

An audit is a function ``run(ctx: AuditContext) -> None`` that adds checks to
``ctx`` as it finishes them (so a crash later loses no finished work).

Each audit declares the options it honours (``uses``: AuditOptions field names, see
:data:`dpcheck.options.COMMON`) and its ``--set`` keys (``options``: a table of
:class:`dpcheck.options.SetOption`); the command line refuses any other option before the audit
starts (:meth:`AuditSpec.check_options`), so no option is ever silently ignored.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dpcheck.errors import InputError
from dpcheck.fingerprint import Memo
from dpcheck.options import COMMON, DEFAULT_USES, PARALLEL, SAMPLING, SetOption, check_uses, parse_set  # noqa: F401


@dataclass(frozen=True)
class AuditSpec:
    name: str
    run: Callable
    algorithm: str
    notion: str
    claim: str
    privatizers: tuple[str, ...] = ()
    plugin_privatizers: bool = True   # --privatizer file.py:CLASS accepted (count privatizers of the online audits)
    uses: tuple[str, ...] = DEFAULT_USES
    options: tuple[SetOption, ...] = ()
    validate: Callable | None = None
    claims: tuple = ()      # the claim table (dpcheck.audit.ClaimRow), for `dpcheck list --claims`

    def check_options(self, options, given) -> None:
        """Refuse options this audit does not use; parse its ``--set`` keys into ``options.extra``.

        ``given``: the AuditOptions fields set on the command line. ``options.extra`` holds the raw
        ``--set`` values on entry and the parsed ones (defaults filled in) on exit; then the audit's
        own cross-option check ``validate(options)`` runs, if it has one.
        """
        check_uses(self.uses, given, self.name, self.claim)
        options.extra = parse_set(self.options, dict(options.extra or {}), self.name)
        if self.validate is not None:
            self.validate(options)

    def options_type(self) -> type:
        """Its ``--set`` keys as a frozen dataclass (dpcheck.options.options_dataclass)."""
        from dpcheck.options import options_dataclass
        return options_dataclass(f"{self.name}_options", self.options)


# What this process has registered (declared memos, dpcheck.fingerprint.Memo): no computation reads them, so a
# cache key that reaches them (an audit class -> Audit.register -> register) must not change with what other
# audits the process has loaded or a user has registered since.
_REGISTRY: Memo = Memo()            # name -> AuditSpec
_loaded = False
_LOAD_ERRORS: Memo = Memo()         # entry point -> why it failed to load (named by get())


def register(name: str, *, algorithm: str, notion: str, claim: str,
             privatizers: tuple[str, ...] = (), plugin_privatizers: bool = True,
             uses: tuple[str, ...] | None = None, options: tuple[SetOption, ...] = (),
             validate: Callable | None = None, claims: tuple = ()):
    """Decorator: register ``run(ctx)`` as the audit ``name``.

    uses:     the common options the audit reads (AuditOptions field names: epsilon, delta,
              privatizer, samples, seed, alpha, workers, backend, scheduler, quick, cache_dir,
              timeout; ``*PARALLEL`` for the three parallel ones, ``SAMPLING`` for what a
              sampling audit honours). Default: seed and alpha only.
    options:  its ``--set`` keys, a tuple of SetOption (name, type, choices, default, help, bounds).
    validate: ``validate(options)`` for constraints between options (raise InputError); it runs
              after the values are parsed and before the audit starts.
    """
    uses = tuple(DEFAULT_USES if uses is None else uses)
    unknown = [u for u in uses if u not in COMMON]
    if unknown:
        raise ValueError(f"register({name!r}): unknown option(s) in uses: {unknown}; known: {list(COMMON)}")
    names = [o.name for o in options]
    if len(set(names)) != len(names) or not all(isinstance(o, SetOption) for o in options):
        raise ValueError(f"register({name!r}): options must be SetOptions with distinct names")

    def deco(fn):
        _REGISTRY[name] = AuditSpec(name=name, run=fn, algorithm=algorithm, notion=notion, claim=claim,
                                    privatizers=tuple(privatizers), plugin_privatizers=plugin_privatizers,
                                    uses=uses, options=tuple(options),
                                    validate=validate, claims=tuple(claims))
        return fn
    return deco


def _load_entry(ep) -> None:
    try:
        ep.load()
    except Exception as e:  # noqa: BLE001 - reported by get(), see load()
        _LOAD_ERRORS[f"{ep.name} = {ep.value}"] = f"{type(e).__name__}: {e}"


def load() -> dict[str, AuditSpec]:
    """Import every module of the ``dpcheck.audits`` entry-point group, once.

    A module that fails to import does not break the others or ``dpcheck list`` (a broken third-party
    plugin must not take the built-in audits down); why it failed is kept and :func:`get` names it
    when the audit asked for is missing.
    """
    global _loaded
    if not _loaded:
        _loaded = True
        from importlib.metadata import entry_points
        for ep in sorted(entry_points(group="dpcheck.audits"), key=lambda e: e.name):
            _load_entry(ep)
    return dict(_REGISTRY)


def find(name: str) -> AuditSpec | None:
    """The audit ``name``, importing as little as it can: an entry point *named* ``name`` is imported
    alone first (the built-in group has one entry per audit, so ``dpcheck audit dp_ucbvi`` imports one
    module, not all of them: about 3 s less start-up); when that does not register ``name`` (or no entry
    has that name, e.g. a plug-in whose entries name modules), every entry is imported as by :func:`load`.
    None if no entry registers it."""
    if name not in _REGISTRY and not _loaded:
        ep = _entry_named(name)
        if ep is not None:
            _load_entry(ep)
    if name not in _REGISTRY:
        load()
    return _REGISTRY.get(name)


def module_of(name: str) -> str | None:
    """The module of the entry point named ``name`` in the ``dpcheck.audits`` group, without importing it (None:
    no such entry)."""
    ep = _entry_named(name)
    return None if ep is None else ep.module


def _entry_named(name: str):
    from importlib.metadata import entry_points
    return next((ep for ep in entry_points(group="dpcheck.audits") if ep.name == name), None)


def get(name: str) -> AuditSpec:
    spec = find(name)
    if spec is None:
        reg = load()
        known = ", ".join(sorted(reg)) or "(none)"
        broken = "".join(f"; entry point {ep} failed to load ({why})" for ep, why in sorted(_LOAD_ERRORS.items()))
        hint = "" if reg or broken else " (is the package installed? `pip install -e .` declares the built-in ones)"
        raise InputError(f"no audit named {name!r}; registered audits: {known}{hint}{broken}")
    return spec
