"""Built-in audits: one module per algorithm, each registering itself with dpcheck.registry.

Each public module here is declared in pyproject.toml's ``dpcheck.audits`` entry-point group, the
only way dpcheck.registry finds audits (tests/project/test_layering.py checks that none is missing);
modules whose name starts with an underscore are helpers and are not entry points.
"""
