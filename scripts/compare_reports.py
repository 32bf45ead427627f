"""Compare two dpcheck JSON reports check by check: same ids in the same order, same kinds and verdicts,
same ``measured`` figures (exact, floats included; NaN equals NaN), and the same overall verdict.

``python scripts/compare_reports.py A.json B.json`` exits 0 when they match, else prints every
difference and exits 1. ``--any-order``: the same checks in any order, each compared with the check of the
same id (for a change that only moves work, so that checks stream in another order). Used to verify that a refactoring of an audit leaves its report unchanged at
the same seed (claim, details and reason may change; they are not compared).
"""
from __future__ import annotations

import json
import math
import sys


def same(a, b) -> bool:
    """Exact equality of JSON values, with NaN == NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def differences(a: dict, b: dict, any_order: bool = False) -> list[str]:
    ca, cb = a.get("checks", []), b.get("checks", [])
    if any_order:
        ca, cb = sorted(ca, key=lambda c: c["id"]), sorted(cb, key=lambda c: c["id"])
    out = []
    if a.get("verdict") != b.get("verdict"):
        out.append(f"overall verdict differs: A {a.get('verdict')!r}, B {b.get('verdict')!r}")
    ids_a, ids_b = [c["id"] for c in ca], [c["id"] for c in cb]
    if ids_a != ids_b:
        out.append(f"check ids differ:\n  A: {ids_a}\n  B: {ids_b}")
    for x, y in zip(ca, cb):
        for key in ("id", "kind", "verdict", "measured"):
            if not same(x.get(key), y.get(key)):
                out.append(f"{x.get('id')}: {key} differs:\n  A: {x.get(key)!r}\n  B: {y.get(key)!r}")
    return out


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    any_order = "--any-order" in argv
    argv = [x for x in argv if x != "--any-order"]
    if len(argv) != 2:
        print("usage: python scripts/compare_reports.py [--any-order] A.json B.json", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        a = json.load(f)
    with open(argv[1]) as f:
        b = json.load(f)
    diff = differences(a, b, any_order)
    if diff:
        print("\n".join(diff))
        return 1
    print(f"identical: {len(a.get('checks', []))} checks (ids, verdicts, measured)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
