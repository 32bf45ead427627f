"""Layering (DESIGN.md): the core ``dpcheck`` imports neither ``dpcheck.algorithms`` nor ``dpcheck.audits``
(the repository's algorithms/ and audits/ folders, dpcheck/_layout.py), and no two
project modules import each other, directly or through others.

Read from the source with ``ast`` (nothing is imported), so an import hidden inside a function, or a
module name handed to ``importlib.import_module`` / ``__import__`` as a string, counts as much as one at
the top of a module. Audits reach the core through the ``dpcheck.audits`` entry-point group only.
"""
import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("dpcheck", "algorithms", "audits")      # folders of the repository
UPWARD = ("dpcheck.algorithms", "dpcheck.audits")    # their import names


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] != "dpcheck":
        parts.insert(0, "dpcheck")
    return ".".join(parts)


def _is_core(name: str) -> bool:
    return _is_under(name, "dpcheck") and not any(_is_under(name, up) for up in UPWARD)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(path: Path, name: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line, module, names) for every import in the file, at any depth, relative ones resolved
    (names: what ``from module import ...`` takes, empty for ``import module``), plus the string
    arguments of importlib.import_module(...) / __import__(...)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                mod = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.append((node.lineno, mod, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if fname in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                out.append((node.lineno, node.args[0].value, ()))
    return out


def _is_under(mod: str, top: str) -> bool:
    return mod == top or mod.startswith(top + ".")


def test_the_core_imports_neither_algorithms_nor_audits():
    bad = [f"{path.relative_to(ROOT)}:{line} imports {mod}"
           for name, path in _modules().items() if _is_core(name)
           for line, mod, _ in _imports(path, name) if any(_is_under(mod, up) for up in UPWARD)]
    assert not bad, "the core must not import upward:\n" + "\n".join(bad)


def _graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports: ``from pkg import sub`` (sub a module) imports sub;
    ``from pkg import attr`` and ``import pkg.mod`` import the module named."""
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        deps = set()
        for _, mod, names in _imports(path, name):
            subs = [f"{mod}.{n}" for n in names if f"{mod}.{n}" in mods]
            deps.update(subs)
            if len(subs) < len(names) or not names:
                deps.add(mod)
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


@pytest.mark.slow
def test_no_import_cycles_among_project_modules():
    cycles = _cycles(_graph())
    assert not cycles, "modules that import each other (directly or through others):\n" + \
        "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_planted_cycle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(g) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_scanner_sees_imports_inside_functions_and_by_string(tmp_path):
    pkg = tmp_path / "dpcheck"
    pkg.mkdir()
    (pkg / "m.py").write_text(textwrap.dedent("""
        import importlib
        def f():
            from dpcheck.algorithms.envs import TabularMDP
            return importlib.import_module("dpcheck.audits.x"), TabularMDP
        from . import sibling
    """))
    found = {m: names for _, m, names in _imports(pkg / "m.py", "dpcheck.m")}
    assert found["dpcheck.algorithms.envs"] == ("TabularMDP",) and "dpcheck.audits.x" in found
    assert found["dpcheck"] == ("sibling",)


def test_every_public_audit_module_is_an_entry_point():
    import tomllib
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["dpcheck.audits"]
    modules = {f"dpcheck.audits.{p.stem}" for p in (ROOT / "audits").glob("*.py") if not p.stem.startswith("_")}
    assert modules == set(declared.values())


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_the_registry_loads_entry_points_only():
    # with the entry-point group emptied, no built-in audit is found although the audits package is
    # importable: the registry does not scan it
    r = _run("""
        import importlib.metadata as md
        md.entry_points = lambda **kw: []
        from dpcheck import registry
        import dpcheck.audits
        assert registry.load() == {}, sorted(registry.load())
        try:
            registry.get("dp_ucbvi")
        except Exception as e:
            print(e)
    """)
    assert r.returncode == 0, r.stderr
    assert "no audit named 'dp_ucbvi'" in r.stdout and "pip install -e ." in r.stdout


@pytest.mark.slow           # imports every audit module (about 3.7 s)
def test_every_built_in_audit_has_an_entry_named_after_it_that_registers_it():
    # `dpcheck audit NAME` imports the entry named NAME alone (registry.find); a wrong module there
    # would cost the start-up saving (find falls back to importing all), never the audit
    import tomllib
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["dpcheck.audits"]
    from dpcheck import registry
    built_in = {name: spec.run.__module__ for name, spec in registry.load().items()
                if spec.run.__module__.startswith("dpcheck.audits.")}      # other tests register their own
    assert built_in == declared


def test_finding_an_audit_imports_its_module_only_and_falls_back_to_all():
    r = _run("""
        import sys
        from dpcheck import registry
        spec = registry.find("dp_ucbvi")
        assert spec is not None and spec.name == "dp_ucbvi"
        loaded = sorted(m for m in sys.modules if m.startswith("dpcheck.audits.") and m.count(".") == 2 and m != "dpcheck.audits.lib")
        print("ONE", loaded)
        # an entry named after a module (a plug-in's usual form) is found by importing every entry
        import importlib.metadata as md
        real = md.entry_points
        md.entry_points = lambda **kw: [md.EntryPoint("my_plugin_module", "dpcheck.audits.examples", "dpcheck.audits")]
        registry._REGISTRY.clear(); registry._loaded = False
        sys.modules.pop("dpcheck.audits.examples", None)
        print("FALLBACK", registry.find("laplace_example") is not None, registry.find("nope"))
    """)
    assert r.returncode == 0, r.stderr
    assert "ONE ['dpcheck.audits.dp_ucbvi']" in r.stdout, r.stdout
    assert "FALLBACK True None" in r.stdout, r.stdout


@pytest.mark.slow
def test_a_broken_entry_point_is_named_and_does_not_hide_the_others():
    r = _run("""
        import importlib.metadata as md
        real = md.entry_points
        def eps(**kw):
            good = list(real(**kw))
            return good + [md.EntryPoint("broken", "dpcheck.audits.does_not_exist", "dpcheck.audits")]
        md.entry_points = eps
        from dpcheck import registry
        assert "dp_ucbvi" in registry.load()
        try:
            registry.get("nope")
        except Exception as e:
            print(e)
    """)
    assert r.returncode == 0, r.stderr
    assert "broken = dpcheck.audits.does_not_exist failed to load (ModuleNotFoundError" in r.stdout


@pytest.mark.slow
def test_importing_the_core_imports_no_algorithm():
    r = _run("""
        import sys
        import dpcheck, dpcheck.cli, dpcheck.strategies, dpcheck.testing, dpcheck.registry, dpcheck.blackbox
        bad = sorted(m for m in sys.modules if m.split(".")[:2] in (["dpcheck", "algorithms"], ["dpcheck", "audits"])
                     or m.split(".")[0] in ("algorithms", "audits"))
        assert not bad, bad
    """)
    assert r.returncode == 0, r.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_ci_runs_exactly_the_readme_test_command():
    # the README's second command is what CI runs (.ci/run adds only pip's -q)
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [ln.strip() for ln in readme.splitlines() if ln.startswith('pip install -e ".[test]"')]
    assert len(commands) == 1, commands
    assert commands[0].replace("pip install -e", "pip install -q -e") in ci
    assert "pytest-xdist" in (ROOT / "pyproject.toml").read_text() or "-n " not in commands[0]
