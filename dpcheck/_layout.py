"""Where ``dpcheck.algorithms`` and ``dpcheck.audits`` live.

dpcheck occupies one import name. Installed (a wheel, or ``pip install -e .``), the reference
algorithms and the audits are the subpackages ``dpcheck.algorithms`` and ``dpcheck.audits``
(pyproject.toml maps them there). The repository keeps them at its top level (``algorithms/``,
``audits/``) beside ``dpcheck/``, so that a checkout run as ``python -m dpcheck`` or ``python -m pytest``
from its root (the current directory first on ``sys.path``) finds the same two subpackages in *this*
checkout, never in another one or in an installed copy: :func:`install` puts a finder for exactly those
two names in front of the import system. Their submodules are then found through the subpackage's
``__path__`` as usual. Nothing else of the checkout becomes importable under ``dpcheck``.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

SUBPACKAGES = ("algorithms", "audits")


class _CheckoutFinder(importlib.abc.MetaPathFinder):
    def __init__(self, package: str, root: str):
        self.package, self.root = package, root

    def find_spec(self, fullname, path=None, target=None):
        head, _, tail = fullname.rpartition(".")
        if head != self.package or tail not in SUBPACKAGES:
            return None
        directory = os.path.join(self.root, tail)
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(directory, "__init__.py"), submodule_search_locations=[directory])


def install(package: str, package_path: list[str]) -> None:
    """In a source checkout (``<root>/dpcheck`` without the two subpackages, ``<root>/algorithms`` and
    ``<root>/audits`` beside it, and the project's ``pyproject.toml``), map ``dpcheck.algorithms`` /
    ``dpcheck.audits`` to the checkout's folders. Installed copies hold the subpackages themselves and
    are left alone."""
    inside = os.path.abspath(package_path[0])
    here = os.path.dirname(inside)
    if any(os.path.isdir(os.path.join(inside, s)) for s in SUBPACKAGES):
        return
    if not all(os.path.isfile(os.path.join(here, s, "__init__.py")) for s in SUBPACKAGES) \
            or not os.path.isfile(os.path.join(here, "pyproject.toml")):
        return
    if any(isinstance(f, _CheckoutFinder) and f.package == package for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _CheckoutFinder(package, here))
