"""Compare two dpcheck JSON reports check by check: ids (in order), verdicts and measured figures must
be identical (exact, floats included; NaN == NaN). claim / details / reason may differ.

    python scripts/compare_reports.py A.json B.json

Exit 0 when they match, else print the differences and exit 1. Used to verify that a refactoring of
an audit leaves its reports unchanged at the same seed.
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
    return type(a) is type(b) and a == b


def differences(a: dict, b: dict) -> list[str]:
    ca, cb = a.get("checks", []), b.get("checks", [])
    out = []
    ia, ib = [c["id"] for c in ca], [c["id"] for c in cb]
    if ia != ib:
        out.append(f"check ids differ:\n  A: {ia}\n  B: {ib}")
    for x, y in zip(ca, cb):
        if x["id"] != y["id"]:
            continue
        for field in ("verdict", "measured"):
            if not same(x.get(field), y.get(field)):
                out.append(f"{x['id']}: {field} differs:\n  A: {x.get(field)!r}\n  B: {y.get(field)!r}")
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    a, b = (json.loads(open(p).read()) for p in argv)
    diff = differences(a, b)
    for d in diff:
        print(d)
    n = len(a.get("checks", []))
    print(f"{'identical' if not diff else 'DIFFERENT'}: {n} vs {len(b.get('checks', []))} checks "
          "(id, verdict, measured)")
    return 0 if not diff else 1


if __name__ == "__main__":
    sys.exit(main())
