"""Issue 18 item 5 for the offline and privatizer audit libraries: audits/lib/offline/, offline_linear/ and
privatizers/ are packages of one concern a module, each module at most ~600 lines, the package re-exporting its
public names (claim tables name ``offline.rate_checks``, ``privatizers.sensitivity_check``); and no audit reads a
private attribute of an object it did not define -- algorithms expose what audits need as public members.

Read from the source with ``ast`` (nothing imported) except where the re-exports are compared.
"""
import ast
import importlib
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPLIT = ("offline", "offline_linear", "privatizers", "gfa", "linopt", "nash", "ucbvi")   # audits/lib/<name>/ packages
MAX_LINES = 600


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_reads(source: str) -> list[tuple[int, str]]:
    """(line, what) for every read of a private member in ``source`` that is not the module's own business:

    * ``x._name`` where ``x`` is not ``self`` / ``cls`` / a module the file imports (a module's private helper
      is that module's, not an object's state) -- ``algo._private_counts``, ``agent.monitor._n``, ``type(p)._x``;
    * ``getattr / hasattr / setattr / delattr(x, "_name")`` and ``x.__dict__["_name"]`` / ``x.__dict__.get("_name")``
      (the same read, spelled to dodge the attribute syntax);
    * ``from dpcheck.algorithms... import _name`` and imports through a private module of dpcheck.algorithms
      (``dpcheck.algorithms.envs._validate``): an algorithm's private function is its private member too.

    Not counted: keyword arguments (``load_offline_privatizer(klass, _label=...)``: the loader's keywords are
    underscored to stay out of the user's constructor keywords, not to hide them), and private names an audit
    module imports from another module of dpcheck.audits (helpers of the audit layer itself)."""
    tree = ast.parse(source)
    modules, out = set(), []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in n.names}
            out += [(n.lineno, f"import {a.name}") for a in n.names
                    if a.name.startswith("dpcheck.algorithms") and any(_private(p) for p in a.name.split("."))]
        elif isinstance(n, ast.ImportFrom) and (n.module or "").startswith("dpcheck.algorithms"):
            out += [(n.lineno, f"from {n.module} import {a.name}") for a in n.names
                    if _private(a.name) or any(_private(p) for p in n.module.split("."))]
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and _private(n.attr):
            if isinstance(n.value, ast.Name) and (n.value.id in ("self", "cls") or n.value.id in modules):
                continue
            out.append((n.lineno, ast.unparse(n)))
        elif isinstance(n, ast.Call):
            f, args = n.func, n.args
            if isinstance(f, ast.Name) and f.id in ("getattr", "hasattr", "setattr", "delattr") and len(args) >= 2 \
                    and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str) and _private(args[1].value):
                out.append((n.lineno, ast.unparse(n)))
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "__dict__" \
                    and args and isinstance(args[0], ast.Constant) and _private(str(args[0].value)):
                out.append((n.lineno, ast.unparse(n)))
        elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) and n.value.attr == "__dict__" \
                and isinstance(n.slice, ast.Constant) and _private(str(n.slice.value)):
            out.append((n.lineno, ast.unparse(n)))
    return out


# Reads that remain on purpose, as "path: what" -- each with the reason it is legitimate. Empty: every read the
# audits needed became a public, documented member (ClaimedTemplate.privatizer, loader.load_class / unwrap,
# dataset.scalar_int, envs.as_policy).
ALLOWED: set[str] = set()


def test_no_audit_reads_a_private_member_of_an_object_it_did_not_define():
    found = [f"{p.relative_to(ROOT)}:{line}: {what}" for p in sorted((ROOT / "audits").rglob("*.py"))
             for line, what in private_reads(p.read_text())
             if f"{p.relative_to(ROOT)}: {what}" not in ALLOWED]
    assert not found, ("audits read private members (expose them as public, documented members of the "
                       "algorithm):\n" + "\n".join(found))


def test_the_private_read_scanner_sees_every_spelling_and_leaves_own_state_alone():
    planted = textwrap.dedent("""
        import numpy as np
        from dpcheck.algorithms.privatizers.loader import _load_class
        from dpcheck.algorithms.envs._validate import as_policy
        import dpcheck.algorithms.envs._validate
        from dpcheck.audits.lib.offline.spec import _counts          # the audit layer's own helper
        class Mine:
            def f(self, algo, agent, p):
                a = algo._private_counts
                b = agent.monitor._n
                c = getattr(agent, "_n", None)
                d = p.__dict__.get("_inner", p)
                e = p.__dict__["_inner"]
                ok = (self._x, Mine.__name__, np._NoValue, getattr(p, "__class__"), p.__dict__.get("name"))
                return a, b, c, d, e, ok, _counts, _load_class, as_policy
            @classmethod
            def g(cls):
                return cls._y
    """)
    found = sorted(what for _, what in private_reads(planted))
    assert found == sorted([
        "from dpcheck.algorithms.privatizers.loader import _load_class",
        "from dpcheck.algorithms.envs._validate import as_policy",
        "import dpcheck.algorithms.envs._validate",
        "algo._private_counts", "agent.monitor._n", "getattr(agent, '_n', None)",
        "p.__dict__.get('_inner', p)", "p.__dict__['_inner']"]), found


def _split_modules():
    return [p for name in SPLIT for p in sorted((ROOT / "audits" / "lib" / name).glob("*.py"))]


def test_the_split_libraries_are_packages_of_modules_of_at_most_600_lines():
    for name in SPLIT:
        assert not (ROOT / "audits" / "lib" / f"{name}.py").exists(), name
        assert (ROOT / "audits" / "lib" / name / "__init__.py").is_file(), name
    mods = _split_modules()
    assert len(mods) >= 3 * len(SPLIT)
    every = sorted((ROOT / "audits" / "lib").rglob("*.py"))     # the split packages and every other lib file
    long = {str(p.relative_to(ROOT)): n for p in every if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


@pytest.mark.parametrize("name", SPLIT)
def test_each_package_reexports_every_public_name_of_its_modules(name):
    pkg = importlib.import_module(f"dpcheck.audits.lib.{name}")
    for path in sorted((ROOT / "audits" / "lib" / name).glob("*.py")):
        if path.name == "__init__.py":
            continue
        mod = importlib.import_module(f"dpcheck.audits.lib.{name}.{path.stem}")
        tree = ast.parse(path.read_text())
        public = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                  if isinstance(t, ast.Name) and not t.id.startswith("_")]
        public += [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                   and not n.name.startswith("_")]
        for nm in public:
            assert nm in pkg.__all__ and getattr(pkg, nm) is getattr(mod, nm), f"{name}.{path.stem}.{nm}"
    assert len(set(pkg.__all__)) == len(pkg.__all__)


def test_every_claim_table_row_naming_a_split_package_resolves():
    from dpcheck import registry
    from dpcheck.audit import Audit
    registry.load()
    classes, todo = [], [Audit]
    while todo:
        c = todo.pop()
        classes.append(c)
        todo.extend(c.__subclasses__())
    rows = [r for c in classes for r in (getattr(c, "claims", None) or ())
            if getattr(r, "method", "") and r.method.split(".")[0] in SPLIT]
    assert len(rows) >= 30
    for r in rows:
        mod, _, fn = r.method.partition(".")
        assert callable(getattr(importlib.import_module(f"dpcheck.audits.lib.{mod}"), fn)), r
