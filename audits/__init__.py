"""Built-in audits: one module per algorithm, each registering itself with dpcheck.registry.

Every module here is imported by ``dpcheck.registry.load()``; modules whose name
starts with an underscore are helpers and are not imported automatically.
"""
