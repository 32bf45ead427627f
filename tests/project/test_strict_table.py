"""docs/interfaces.md "`--strict`: which checks can fail it": every built-in audit has a row, and every check id the
table names is in that audit's claim table (so the table cannot silently drift from the code)."""
import fnmatch
import re
from pathlib import Path

from dpcheck.registry import load as _load


def load():
    """The built-in audits (tests register throwaway audits named _...; leave those out)."""
    return {k: v for k, v in _load().items() if not k.startswith("_")}

DOC = Path(__file__).resolve().parents[2] / "docs" / "interfaces.md"


def _rows() -> dict:
    text = DOC.read_text()
    sec = text.split("## `--strict`: which checks can fail it", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in sec.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for name in re.findall(r"`([a-z_]+)`", cells[0]):
            rows[name] = cells[1:]
    return rows


def test_every_builtin_audit_has_a_row():
    rows = _rows()
    assert set(load()) <= set(rows), sorted(set(load()) - set(rows))
    assert set(rows) <= set(load()), sorted(set(rows) - set(load()))


def test_every_named_check_is_in_the_audits_claim_table():
    audits = load()
    for name, cells in _rows().items():
        rows = [r.id for r in audits[name].claims]
        for cid in re.findall(r"`([a-z_]+\.[A-Za-z0-9_.*]+)`", " ".join(cells)):
            if cid.startswith(("dpcheck.", "regret.*")):
                continue
            ok = any(fnmatch.fnmatchcase(r, cid) or fnmatch.fnmatchcase(cid, r) or
                     (r.endswith("*") and cid.startswith(r[:-1])) for r in rows)
            assert ok, f"{name}: {cid} is not in its claim table"
