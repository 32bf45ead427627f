"""The test suite's layout (tests/README.md): one folder per package, unique basenames (pytest's default
``prepend`` import mode imports each test file by its basename), every cited test path exists, and the
README's development section names the fast tier."""
import re
import subprocess
from collections import Counter

import pytest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
FOLDERS = {"core", "cli", "plugins", "audits", "project", "algorithms/envs", "algorithms/privatizers",
           "algorithms/online", "algorithms/games", "algorithms/offline", "algorithms/linear", "algorithms/gfa"}


def _test_files():
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_file_is_in_a_package_folder():
    stray = [p.relative_to(ROOT).as_posix() for p in _test_files()
             if p.parent.relative_to(TESTS).as_posix() not in FOLDERS]
    assert not stray, "move these into a folder of tests/README.md's layout: " + ", ".join(stray)


def test_test_basenames_are_unique():
    dup = [n for n, c in Counter(p.name for p in _test_files()).items() if c > 1]
    assert not dup, dup


def test_the_folders_have_no_init_and_one_conftest():
    # prepend import mode with unique basenames: an __init__.py would rename the modules, a second
    # conftest would have to be imported under a unique name
    assert not list(TESTS.rglob("__init__.py"))
    assert [p.relative_to(TESTS).as_posix() for p in TESTS.rglob("conftest.py")] == ["conftest.py"]


TEST_PATH = re.compile(r"(?<![\w/.-])tests/[\w/]*test_\w+\.py")


def test_every_cited_test_path_exists():
    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.toml", ".ci/run"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    missing = []
    for rel in files:
        if rel.startswith("reports/") or not (ROOT / rel).is_file():
            continue
        for n, line in enumerate((ROOT / rel).read_text("utf-8").splitlines(), 1):
            missing += [f"{rel}:{n}: {m}" for m in TEST_PATH.findall(line) if not (ROOT / m).is_file()]
    assert not missing, "\n".join(missing)


def test_the_cited_path_pattern_reads_nested_paths():
    top = "tests/" + "test_x.py"             # split so that this file cites no missing path
    assert TEST_PATH.findall(f"see tests/core/test_family.py and {top}.") == ["tests/core/test_family.py", top]


def test_the_readme_documents_the_fast_tier_and_tests_readme_the_folders():
    readme = (ROOT / "README.md").read_text()
    assert 'python -m pytest -q -m "not slow"' in readme
    layout = (TESTS / "README.md").read_text()
    assert all(f"{f}/" in layout for f in FOLDERS), [f for f in FOLDERS if f"{f}/" not in layout]


def _shared_run_users():
    """(file, test, has xdist_group) for every test function taking conftest's quick_audit fixture."""
    import ast
    out = []
    for p in _test_files():
        for node in ast.walk(ast.parse(p.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(a.arg == "quick_audit" for a in node.args.args):
                grouped = any("xdist_group" in ast.unparse(d) for d in node.decorator_list)
                out.append((p.name, node.name, grouped))
    return out


@pytest.mark.slow
def test_tests_sharing_an_audit_run_are_grouped_on_one_worker():
    # without the group, -n auto may run both consumers of one shared run on different workers: each
    # pays the whole audit (correct, but the saving is lost)
    users = _shared_run_users()
    assert len(users) >= 4, users
    assert [u for u in users if not u[2]] == []
    import tomllib
    assert "--dist loadgroup" in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
