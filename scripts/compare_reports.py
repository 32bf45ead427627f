"""Compare two dpcheck JSON reports check by check: ids, verdicts and ``measured`` must be identical.

    python scripts/compare_reports.py A.json B.json

Exit 0 when every check (same order) has the same id, verdict and measured figures (exact, floats
included; NaN equals NaN); otherwise print the differences and exit 1. Claims, details and reasons may
differ (a port that keeps the computations may reword them).
"""
from __future__ import annotations

import json
import math
import sys


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                            and not isinstance(a, bool) and not isinstance(b, bool) and a == b)


def differences(a: dict, b: dict) -> list[str]:
    ca, cb = a.get("checks", []), b.get("checks", [])
    out = []
    if [c["id"] for c in ca] != [c["id"] for c in cb]:
        out.append(f"check ids differ:\n  A: {[c['id'] for c in ca]}\n  B: {[c['id'] for c in cb]}")
    for x, y in zip(ca, cb):
        for key in ("id", "verdict", "measured"):
            if not same(x.get(key), y.get(key)):
                out.append(f"{x.get('id')}: {key} differs:\n  A: {x.get(key)!r}\n  B: {y.get(key)!r}")
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        a = json.load(f)
    with open(argv[1]) as f:
        b = json.load(f)
    diff = differences(a, b)
    for d in diff:
        print(d)
    n = len(a.get("checks", []))
    print(f"{'IDENTICAL' if not diff else 'DIFFERENT'}: {n} checks (id, verdict, measured)")
    return 0 if not diff else 1


if __name__ == "__main__":
    sys.exit(main())
