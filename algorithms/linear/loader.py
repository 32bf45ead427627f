"""Loading a stream privatizer by name, file spec or class (kept apart from the interface module so that
the built-in Privatizer, which implements the interface, and the loader do not import each other)."""
from __future__ import annotations



from dpcheck.errors import InputError, MechanismError
from dpcheck.loading import call_plugin, check_plugin_spec
from dpcheck.algorithms.linear.stream_privatizer import _CLASSES, GuardedStreamPrivatizer, INTERFACE, StreamPrivatizer, _is_builtin, probe


def load_stream_privatizer(spec, *, epsilon: float = 1.0, delta: float = 0.1, **builtin_kw) -> StreamPrivatizer:
    """The stream privatizer for ``spec``: "paper" (the built-in :class:`Privatizer` with ``builtin_kw``: its
    radius_dim, sensitivity_mode, target flags), a ``file.py:Class`` / ``pkg.module:Class`` spec, or a class.
    User classes are instantiated as ``Class(epsilon=..., delta=...)``, probed once per class
    (:func:`probe`) and wrapped in :class:`GuardedStreamPrivatizer`."""
    from dpcheck.algorithms.linear.privatizer import Privatizer
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "paper"):
        return Privatizer(epsilon, delta=delta, **builtin_kw)
    if isinstance(spec, str):
        check_plugin_spec(spec, "stream privatizer", "paper", "reduction (ridge, Z = I)")
        key = spec
        if key not in _CLASSES:
            from dpcheck.loading import load_object
            _CLASSES[key] = [load_object(spec, "stream privatizer", import_error=MechanismError), False]
        cls, label = _CLASSES[key][0], spec
    elif isinstance(spec, type):
        key, cls, label = spec, spec, spec.__name__
        _CLASSES.setdefault(key, [spec, False])
    else:
        raise InputError(f"stream privatizer must be 'paper', 'file.py:Class' or a class, got {spec!r}")
    if not isinstance(cls, type):
        raise InputError(f"stream privatizer {label!r} is not a class")
    missing = [m for m in INTERFACE if not callable(getattr(cls, m, None))
               or getattr(getattr(cls, m), "__isabstractmethod__", False)]
    if missing:
        raise InputError(f"stream privatizer {label!r} does not implement {', '.join(missing)} (subclass "
                         f"dpcheck.algorithms.linear.StreamPrivatizer; see docs/privatizers.md)")
    obj = call_plugin(f"stream privatizer {label!r}", "its constructor", cls, epsilon=epsilon, delta=delta)
    if _is_builtin(cls):
        return obj
    guarded = GuardedStreamPrivatizer(obj, label)
    if not _CLASSES[key][1]:
        probe(guarded, label)
        _CLASSES[key][1] = True
    return guarded
