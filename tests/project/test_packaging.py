"""One import name: installed, dpcheck occupies ``dpcheck`` only.

The repository keeps ``algorithms/`` and ``audits/`` at its top level; pyproject.toml installs them as
``dpcheck.algorithms`` / ``dpcheck.audits`` and a source checkout maps them the same way
(dpcheck/_layout.py). The slow test builds the wheel, installs it (not editable) into a fresh virtual
environment and runs the documented examples from a research repository that has packages of its own
named ``algorithms`` and ``audits``: neither side may import the other's.
"""
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _folders() -> set[str]:
    out = set()
    for top in ("dpcheck", "algorithms", "audits"):
        for init in (ROOT / top).rglob("__init__.py"):
            parts = list(init.parent.relative_to(ROOT).parts)
            out.add(".".join(parts if parts[0] == "dpcheck" else ["dpcheck", *parts]))
    return out


def test_pyproject_installs_every_package_folder_under_dpcheck():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(cfg["packages"]) == _folders()
    assert cfg["package-dir"] == {"dpcheck": "dpcheck", "dpcheck.algorithms": "algorithms",
                                  "dpcheck.audits": "audits"}
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["dpcheck.audits"]
    assert all(v.startswith("dpcheck.audits.") for v in eps.values()), eps


def test_no_module_of_the_project_imports_the_bare_names():
    bad = []
    for top in ("dpcheck", "algorithms", "audits", "tests", "examples", "scripts", "benchmarks"):
        for p in (ROOT / top).rglob("*.py"):
            if p.resolve() == Path(__file__).resolve():    # the user packages written below
                continue
            for i, line in enumerate(p.read_text().splitlines(), 1):
                s = line.strip()
                if s.startswith(("from algorithms", "from audits", "import algorithms", "import audits")):
                    bad.append(f"{p.relative_to(ROOT)}:{i}: {s}")
    assert not bad, "\n".join(bad)


@pytest.mark.slow
def test_a_checkout_maps_the_subpackages_to_its_own_folders():
    r = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys, dpcheck, dpcheck.algorithms.envs, dpcheck.audits.lib
        print(dpcheck.algorithms.__file__); print(dpcheck.audits.lib.__file__)
        assert not [m for m in sys.modules if m.split(".")[0] in ("algorithms", "audits")]
    """)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(ROOT / "algorithms" / "__init__.py"), str(ROOT / "audits" / "lib" / "__init__.py")]


USER_PACKAGES = {
    # a research repository with packages of the two common names, one of them shadowing a documented
    # dpcheck module path
    "algorithms/__init__.py": "WHO = 'user algorithms'\n",
    "algorithms/privatizers.py": "WHO = 'user privatizers'\n",
    "audits/__init__.py": "WHO = 'user audits'\n",
    "audits/lib.py": "WHO = 'user audits.lib'\n",
}


@pytest.mark.slow
def test_the_wheel_installs_one_import_name_and_runs_the_docs_examples(tmp_path):
    wheels, src = tmp_path / "wheels", tmp_path / "src"
    # built from a copy: an in-tree build would leave build/ in the checkout
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "reports", "build", "dist", "*.egg-info",
                                                             "__pycache__", ".hypothesis", ".dpcheck-cache"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", str(wheels)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and "Could not" in r.stderr + r.stdout and "setuptools" in r.stderr + r.stdout:
        pytest.skip(f"cannot fetch the build backend: {r.stderr[-300:]}")
    assert r.returncode == 0, r.stderr
    (wheel,) = wheels.glob("dpcheck-*.whl")
    # the dependencies come from the running interpreter's site-packages; dpcheck itself only from the wheel
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
                        "--no-index", str(wheel)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr

    user = tmp_path / "research"
    for rel, text in USER_PACKAGES.items():
        (user / rel).parent.mkdir(parents=True, exist_ok=True)
        (user / rel).write_text(text)
    for example in ("my_privatizer.py", "laplace_target.py"):
        (user / example).write_text((ROOT / "examples" / example).read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DPCHECK_CACHE")}

    def run(*args, timeout=900):
        return subprocess.run(list(args), cwd=user, capture_output=True, text=True, env=env, timeout=timeout)

    r = run(str(py), "-c", textwrap.dedent("""
        import sys, dpcheck, dpcheck.algorithms.privatizers, dpcheck.audits.lib
        import algorithms, algorithms.privatizers, audits, audits.lib
        assert algorithms.WHO == 'user algorithms' and algorithms.privatizers.WHO == 'user privatizers'
        assert audits.lib.WHO == 'user audits.lib'
        assert '/venv/' in dpcheck.__file__ and '/venv/' in dpcheck.audits.lib.__file__, dpcheck.__file__
        from dpcheck.algorithms.privatizers import CountPrivatizer
        from dpcheck import registry
        reg = registry.load()
        assert {'dp_nash_vi', 'dp_apvi', 'private_gfa', 'laplace_example'} <= set(reg), sorted(reg)
        assert all(s.run.__module__.startswith('dpcheck.audits.') for s in reg.values())
        print('ok')
    """))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    dp = str(venv / "bin" / "dpcheck")
    # the docs' plug-in example, PASS on its standalone audit; the docs' target file
    r = run(dp, "audit", "central_privatizer", "--privatizer", "my_privatizer.py:GaussianTreePrivatizer",
            "--quick", "--seed", "3", "--out", str(tmp_path / "r1"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    r = run(dp, "audit", "laplace_target.py:target", "--quick", "--seed", "3", "--out", str(tmp_path / "r2"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert any((tmp_path / "r1").glob("*.json")) and any((tmp_path / "r2").glob("*.json"))
    # the pytest plugin loads from the wheel's pytest11 entry point (no -p, no conftest)
    (user / "test_gate.py").write_text(textwrap.dedent("""
        from laplace_target import target
        def test_gate(dpcheck_audit):
            assert dpcheck_audit(target, samples=20_000, seed=1).verdict == "pass"
    """))
    r = run(str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_gate.py")
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
