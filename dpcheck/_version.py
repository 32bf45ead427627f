"""The package version, in a module of its own: modules of the package read it from here rather than
from ``dpcheck`` itself, whose ``__init__`` imports them back (tests/project/test_layering.py: no cycles)."""
__version__ = "0.1.0"
