"""Render docs/diffprivlib.md from a report of ``dpcheck audit diffprivlib``.

    dpcheck audit diffprivlib --seed 0 --out reports/diffprivlib
    python scripts/diffprivlib_table.py reports/diffprivlib/diffprivlib.json > docs/diffprivlib.md

One row per mechanism: the verdict, the certified lower bound on epsilon with its confidence, the
claim, the tightness and the power of the budget (the smallest true epsilon it catches about half the
time), and the neighbouring pair (from the audit's claim table).
"""
from __future__ import annotations

import json
import sys


def render(rep: dict) -> str:
    cfg = rep.get("config", {})
    fam = rep.get("family", {})
    out = [
        "# diffprivlib's mechanisms, audited",
        "",
        f"`dpcheck audit diffprivlib` (audits/diffprivlib_audit.py) on diffprivlib {cfg.get('diffprivlib')}: every "
        "mechanism of `diffprivlib.mechanisms` built as its documentation prescribes at epsilon = "
        f"{cfg.get('epsilon')}, {cfg.get('samples_per_side')} outputs per input of its neighbouring pair, "
        f"seed {rep.get('options', {}).get('seed', 0)}; alpha = {fam.get('alpha', 0.05)} family-wise over "
        f"{fam.get('tests', '?')} checks ({fam.get('alpha_per_check', 0):.2g} each). Made by",
        "",
        "    dpcheck audit diffprivlib --seed 0 --out reports/diffprivlib",
        "    python scripts/diffprivlib_table.py reports/diffprivlib/diffprivlib.json > docs/diffprivlib.md",
        "",
        f"Overall verdict: **{rep.get('verdict', '?').upper()}** (run {rep.get('run_id', '?')}).",
        "",
        "| mechanism | verdict | claim (eps, delta) | eps lower bound | tightness | budget detects eps >= | pair |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in rep.get("checks", []):
        m, cl = c.get("measured", {}), c.get("claim", {})
        stmt = cl.get("table", {}).get("statement", "")
        pair = stmt.split("on neighbouring inputs ", 1)[-1] if "on neighbouring inputs " in stmt else ""
        q = c.get("details", {}).get("qualifier")
        verdict = c["verdict"].upper() + (f" ({q})" if q else "")

        def f(x):
            return "n/a" if x is None else f"{x:.3g}"
        out.append(f"| {c['id'].removeprefix('privacy.')} | {verdict} | ({f(m.get('epsilon_claimed'))}, "
                   f"{f(m.get('delta'))}) | {f(m.get('epsilon_lower_bound'))} | {f(m.get('tightness'))} | "
                   f"{f(m.get('power'))} | {pair} |")
    na = cfg.get("not_audited", {})
    if na:
        out += ["", "Not audited: " + "; ".join(f"`{k}`: {v}" for k, v in na.items()) + "."]
    new = cfg.get("new_mechanisms_not_covered") or []
    if new:
        out += ["", "Mechanisms of this diffprivlib version the audit does not know yet: " + ", ".join(new) + "."]
    out += ["", "What the table says and does not: a PASS bounds what these pairs and this budget can show (a "
            "floating-point attack on the Laplace sampler, Mironov 2012, needs targeted inputs and far larger "
            "budgets); a FAIL is a certified violation of the documented guarantee at the stated confidence. "
            "Tightness below 1 at a PASS is expected where the worst-case pair or event is not the one tested "
            "(the Gaussian mechanisms' delta tails, the exponential mechanisms' utility ranges).", ""]
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/diffprivlib_table.py REPORT.json")
    with open(sys.argv[1]) as fh:
        sys.stdout.write(render(json.load(fh)))
