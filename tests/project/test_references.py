"""Every reference in code and docs resolves inside the repository.

* No reference to the design specs that are not in the repository: no section signs, no ``specs/`` paths,
  no spec file names, no "the spec", no spec claim / ambiguity / pitfall labels ("claim C7", "(N3)",
  "T-14", "A5"). Papers are cited by theorem / lemma / equation; what a paper leaves open is in
  docs/derivations.md.
* Every ``docs/X.md`` (optionally ``#anchor``) named in code or docs exists, and so does its anchor.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SELF = Path(__file__).resolve()

# Patterns are written with escapes so that this file does not match itself.
SECTION = "\u00a7"
FORBIDDEN = {
    "section sign": re.compile(SECTION),
    "specs/ path": re.compile(r"\bspecs/"),
    "spec file": re.compile(r"(?<![\w/'\"])(?:dp_ucbvi|dp_nash_vi|offline_dp_apvi_vapvi)\.md\b"
                            r"|(?<![\w/])(?<!docs/)(?:private_gfa|private_linopt)\.md\b"),
    "the spec (prose)": re.compile(r"\b(?:a|our|companion|offline|DP-[\w-]+) specs?\b|\bspec's\b|\bspec (?:[A-Z][\w.]* ?\d|[A-Z]?\{)"
                                  r"|\bthe specs\b|\bthe spec\b(?! is empty)"),
    # E1.. and S-1.. are the reproduction scripts' own claims (defined there), not spec labels
    "labelled claim": re.compile(r"\b(?:[Cc]laims?|[Aa]mbiguit(?:y|ies)|[Pp]itfalls?) (?!E\d|S-\d)[A-Z]{1,2}-?\d{1,2}\b"),
    "hyphenated label": re.compile(r"\b(?:T|L)-\d{1,2}\b"),
    # a source that ends in bare labels after the paper's name ("{SOURCE}, A8"), or two-digit G labels
    "trailing label": re.compile(r"\},? (?:[ACGNP]\d{1,2}(?:, )?)+[\"']"),
    "G label": re.compile(r"\bG\d{2}\b"),
    "label list": re.compile(r"\((?:[ABGP]\d{1,2}|N(?:[3-9]|\d\d)|C(?:[3-9]|\d\d)[a-d]?)(?:(?:, |/| / |-)(?:[A-Z]\d{1,2}[a-d]?))*\)"),
}
# Names a module defines itself (so they resolve in the repository), not spec labels.
ALLOWED: dict[str, str] = {}


def _files(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / p for p in out.stdout.split() if (ROOT / p).resolve() != SELF]


def spec_references(text: str) -> list[tuple[int, str, str]]:
    """(line number, pattern name, line) of every spec reference in ``text``."""
    hits = []
    for n, line in enumerate(text.splitlines(), 1):
        for name, pat in FORBIDDEN.items():
            if pat.search(line):
                hits.append((n, name, line.strip()))
    return hits


@pytest.mark.parametrize("line", [
    f"see {SECTION}2.4", "specs/dp_ucbvi.md", "dp_nash_vi.md B3", "as the spec prescribes", "claims N1-N30",
    "(spec C7)", "; spec Theorem 6.4", "Definition 2.3; spec G{4 + alg}", "on the T-2 event", "(C11b)", "(N16)", "Ambiguity A5", "(A12)", "the L-16 cost",
    "private_gfa.md 2.1",
])
def test_the_pattern_catches_spec_labels(line):
    assert spec_references(line)


@pytest.mark.parametrize("line", [
    "docs/private_gfa.md", "(Lemma 5.1)", "C1 = 2, C2 = 10", "spec.name", "def f(spec):", "(N1, N2) noise",
    "K-1 items", "S-1 holds", "GF-3", "LM-2", "Theorem 6.5, eq. 4", "constants (C1, C2)", "claims E1-E4", "the claims S-1..S-3", "plot specs", "(seeds, G-1)",
    '(tmp_path / "dp_nash_vi.md")', "reports/dp_ucbvi.md",
    "the spec is empty", "privatizer specs",
])
def test_the_pattern_spares_legitimate_text(line):
    assert not spec_references(line)


@pytest.mark.slow
def test_no_reference_to_the_absent_specs():
    bad = []
    for path in _files("*.py", "*.md"):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED:
            continue
        bad += [f"{rel}:{n}: [{name}] {line[:120]}" for n, name, line in spec_references(path.read_text("utf-8"))]
    assert not bad, "references to the specs (cite the paper or docs/ instead):\n" + "\n".join(bad)


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def _anchors(md: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*)$", md.read_text("utf-8"), re.M)}


DOC_REF = re.compile(r"(?<![\w.-])((?:\.\./)?docs/[\w./-]*\.md)(#[\w-]+)?")


def test_docs_references_exist():
    missing = []
    for path in _files("*.py", "*.md"):
        rel = path.relative_to(ROOT).as_posix()
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            for m in DOC_REF.finditer(line):
                target = ROOT / m.group(1).removeprefix("../")
                if not target.is_file():
                    missing.append(f"{rel}:{n}: {m.group(1)} does not exist")
                elif m.group(2) and m.group(2)[1:] not in _anchors(target):
                    missing.append(f"{rel}:{n}: {m.group(1)}{m.group(2)}: no such heading")
    assert not missing, "\n".join(missing)


def test_docs_reference_pattern_reads_anchors():
    m = DOC_REF.search("see docs/derivations.md#neighbouring-relation, then")
    assert m.group(1) == "docs/derivations.md" and m.group(2) == "#neighbouring-relation"
    assert "neighbouring-relation" in _anchors(ROOT / "docs/derivations.md")
