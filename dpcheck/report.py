"""Reports: the JSON (schema dpcheck.report/1) and the views rendered from it alone.

Markdown, HTML (with plots) and JUnit XML are functions of the JSON dict and
nothing else, so ``dpcheck report FILE.json`` re-renders any report exactly.

Plots: a check may carry ``details["plots"]``, a list of dicts
``{"title", "xlabel", "ylabel", "logx", "logy", "kind": "line"|"hist"|"bar",
"series": [{"label", "x", "y", "lo", "hi"}], "hlines": [{"y", "label"}],
"vlines": [{"x", "label"}], "threshold": x}`` (lo/hi: a band; threshold: an event's cut).
"""
from __future__ import annotations

import base64
import html
import io
import json
import re
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

from dpcheck.errors import InputError

SCHEMA = "dpcheck.report/1"
_REQUIRED = ("schema", "target", "dpcheck_version", "seed", "alpha", "started", "duration_s", "verdict", "checks")


def load(path) -> dict:
    """Read and validate a JSON report."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"no such report file: {path}")
    try:
        rep = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path} is not a JSON report: {e}") from None
    validate(rep, str(path))
    return rep


def validate(rep, where: str = "report") -> None:
    if not isinstance(rep, dict) or rep.get("schema") != SCHEMA:
        raise InputError(f"{where} is not a dpcheck report (schema {SCHEMA!r} expected)")
    missing = [k for k in _REQUIRED if k not in rep]
    if missing:
        raise InputError(f"{where} lacks the fields {', '.join(missing)}")
    for c in rep["checks"]:
        for k in ("id", "kind", "verdict", "claim", "measured"):
            if k not in c:
                raise InputError(f"{where}: a check lacks the field {k!r}")


def _fmt(v) -> str:
    if isinstance(v, float):
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
            return f"{v:.3e}"
        return f"{v:.4g}"
    if isinstance(v, list):
        if len(v) > 6:
            return "[" + ", ".join(_fmt(x) for x in v[:6]) + f", … ({len(v)})]"
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in list(v.items())[:6]) + "}"
    return str(v)


HEADLINE_KEYS = ("epsilon_lower_bound", "epsilon_pld", "epsilon_realised", "tightness", "exponent", "slope",
                 "slope_difference", "ci", "max_z", "failure_rate", "violations", "confidence")


def _headline(c: dict) -> str:
    """The two or three figures that say most about a check, for summary tables."""
    m = c.get("measured", {})
    keys = [k for k in HEADLINE_KEYS if m.get(k) is not None]
    if "epsilon_pld" in keys or "epsilon_realised" in keys:  # exact white-box figures: no lower bound to show
        keys = [k for k in keys if k != "epsilon_lower_bound"]
    return ", ".join(f"{k}={_fmt(m[k])}" for k in keys[:3])


def summary_rows(rep: dict) -> list[tuple[str, str, str, str]]:
    return [(c["verdict"], c["id"], _headline(c), c.get("reason", "")) for c in rep["checks"]]


def summary_table(rep: dict, width: int = 140) -> str:
    """The plain-text table the CLI prints at the end."""
    rows = summary_rows(rep)
    if not rows:
        return "(no checks)"
    idw = max(len(r[1]) for r in rows)
    lines = [f"{'verdict':12s} {'check':{idw}s}  measured"]
    for v, i, h, _ in rows:
        lines.append(f"{v.upper():12s} {i:{idw}s}  {h}"[:width])
    if rep.get("error"):
        lines.append(f"INCOMPLETE: {rep['error']}")
    lines.append(f"overall: {rep['verdict'].upper()}  ({len(rows)} check{'s' if len(rows) != 1 else ''}, "
                 f"confidence of each stated in the report; seed={rep['seed']}, alpha={rep['alpha']})")
    return "\n".join(lines)


# ---------------------------------------------------------------- Markdown
def to_markdown(rep: dict) -> str:
    out = [f"# dpcheck report: {rep['target']}", "",
           f"**Verdict: {rep['verdict'].upper()}**  ", f"dpcheck {rep['dpcheck_version']} · seed {rep['seed']} · "
           f"alpha {rep['alpha']} · started {rep['started']} · {rep['duration_s']:.1f} s", ""]
    if rep.get("error"):
        out += [f"> **Incomplete:** {rep['error']}", ""]
    if rep.get("config"):
        out += ["## Configuration", ""] + [f"- **{k}**: {_fmt(v)}" for k, v in rep["config"].items()] + [""]
    out += ["## Summary", "", "| verdict | check | kind | measured | reason |", "|---|---|---|---|---|"]
    for c in rep["checks"]:
        reason = c.get("reason", "").replace("|", "\\|")
        out.append(f"| {c['verdict']} | `{c['id']}` | {c['kind']} | {_headline(c)} | {reason} |")
    out += ["", "## Checks", ""]
    for c in rep["checks"]:
        out += [f"### `{c['id']}` — {c['verdict']}", "", c.get("reason", ""), ""]
        src = c["claim"].get("source") if isinstance(c["claim"], dict) else None
        out += ["**Claim**" + (f" ({src})" if src else "") + ":", ""]
        out += [f"- {k}: {_fmt(v)}" for k, v in c["claim"].items() if k != "source"] + [""]
        out += ["**Measured**:", ""] + [f"- {k}: {_fmt(v)}" for k, v in c["measured"].items()] + [""]
        det = {k: v for k, v in c.get("details", {}).items() if k != "plots"}
        if det:
            out += ["<details><summary>details</summary>", ""]
            out += [f"- {k}: {_fmt(v)}" for k, v in det.items()] + ["", "</details>", ""]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- HTML
def _plot_png(spec: dict) -> str | None:
    """Render one plot spec to a base64 PNG (None if matplotlib is unavailable or the spec is empty)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    series = spec.get("series") or []
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=90)
    kind = spec.get("kind", "line")
    for s in series:
        x, y = s.get("x"), s.get("y")
        if y is None:
            continue
        if x is None:
            x = list(range(len(y)))
        if kind == "bar":
            ax.bar([str(v) for v in x], y, alpha=0.6, label=s.get("label"))
        elif kind == "hist":
            ax.step(x, y, where="mid", label=s.get("label"))
        else:
            ax.plot(x, y, marker="o" if len(y) <= 20 else None, ms=3, label=s.get("label"))
        if s.get("lo") is not None and s.get("hi") is not None:
            ax.fill_between(x, s["lo"], s["hi"], alpha=0.2)
    for ref in spec.get("hlines", []) or []:
        ax.axhline(ref.get("y"), ls="--", color="gray", lw=1)
        if ref.get("label"):
            ax.annotate(ref["label"], (0.01, ref["y"]), xycoords=("axes fraction", "data"), fontsize=7, color="gray")
    vlines = list(spec.get("vlines") or [])
    if spec.get("threshold") is not None:
        vlines.append({"x": spec["threshold"], "label": "event threshold"})
    for ref in vlines:
        try:
            ax.axvline(float(ref["x"]), ls=":", color="black", lw=1, label=ref.get("label"))
        except (TypeError, ValueError):
            pass
    from matplotlib.ticker import NullFormatter
    if spec.get("logx"):
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels of a log axis overlap
        xs = sorted({float(v) for s_ in series for v in (s_.get("x") or []) if isinstance(v, (int, float)) and v > 0})
        if 2 <= len(xs) <= 10:  # a short grid: label its own points
            ax.set_xticks(xs, [f"{v:g}" for v in xs])
    if spec.get("logy"):
        ax.set_yscale("symlog" if spec.get("logy") == "symlog" else "log")
    ax.set_title(spec.get("title", ""), fontsize=10)
    ax.set_xlabel(spec.get("xlabel", ""))
    ax.set_ylabel(spec.get("ylabel", ""))
    if any(s.get("label") for s in series):
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%;font-size:14px}td,th{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
.pass{color:#17703a;font-weight:bold}.fail{color:#b00020;font-weight:bold}.inconclusive{color:#a36a00;font-weight:bold}
code{background:#f4f4f4;padding:1px 3px}section{border-top:1px solid #ccc;margin-top:1.5em}img{max-width:100%}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:14px}dt{font-weight:bold}"""


def _dl(d: dict) -> str:
    return "<dl>" + "".join(f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(_fmt(v))}</dd>" for k, v in d.items()) + "</dl>"


def to_html(rep: dict) -> str:
    e = html.escape
    v = rep["verdict"]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>dpcheck: {e(rep['target'])}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>dpcheck report: <code>{e(rep['target'])}</code></h1>",
             f"<p>Verdict: <span class='{e(v)}'>{e(v.upper())}</span> &middot; dpcheck {e(rep['dpcheck_version'])}"
             f" &middot; seed {rep['seed']} &middot; alpha {rep['alpha']} &middot; {e(rep['started'])}"
             f" &middot; {rep['duration_s']:.1f} s</p>"]
    if rep.get("error"):
        parts.append(f"<p class='fail'>Incomplete: {e(rep['error'])}</p>")
    if rep.get("config"):
        parts.append("<h2>Configuration</h2>" + _dl(rep["config"]))
    parts.append("<h2>Summary</h2><table><tr><th>verdict</th><th>check</th><th>kind</th><th>measured</th><th>reason</th></tr>")
    for i, c in enumerate(rep["checks"]):
        parts.append(f"<tr><td class='{e(c['verdict'])}'>{e(c['verdict'])}</td><td><a href='#c{i}'><code>{e(c['id'])}</code></a></td>"
                     f"<td>{e(c['kind'])}</td><td>{e(_headline(c))}</td><td>{e(c.get('reason', ''))}</td></tr>")
    parts.append("</table>")
    for i, c in enumerate(rep["checks"]):
        parts.append(f"<section id='c{i}'><h3><code>{e(c['id'])}</code> — <span class='{e(c['verdict'])}'>{e(c['verdict'])}</span></h3>"
                     f"<p>{e(c.get('reason', ''))}</p><h4>Claim</h4>{_dl(c['claim'])}<h4>Measured</h4>{_dl(c['measured'])}")
        det = c.get("details", {})
        for spec in det.get("plots", []) or []:
            png = _plot_png(spec)
            if png:
                parts.append(f"<img alt='{e(spec.get('title', 'plot'))}' src='data:image/png;base64,{png}'>")
        rest = {k: v for k, v in det.items() if k != "plots"}
        if rest:
            parts.append(f"<details><summary>details</summary>{_dl(rest)}</details>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)


# ---------------------------------------------------------------- JUnit
def to_junit(rep: dict) -> str:
    """JUnit XML: one testcase per check; fail -> <failure>, inconclusive -> <skipped>."""
    checks = rep["checks"]
    n_fail = sum(c["verdict"] == "fail" for c in checks)
    n_skip = sum(c["verdict"] == "inconclusive" for c in checks)
    name = xml_escape(str(rep["target"]), {'"': "&quot;"})
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="dpcheck" tests="{len(checks)}" failures="{n_fail}" errors="{1 if rep.get("error") else 0}" skipped="{n_skip}">',
           f'<testsuite name="{name}" tests="{len(checks)}" failures="{n_fail}" errors="{1 if rep.get("error") else 0}" '
           f'skipped="{n_skip}" time="{rep["duration_s"]}" timestamp="{xml_escape(rep["started"])}">']
    for c in checks:
        cid = xml_escape(c["id"], {'"': "&quot;"})
        msg = xml_escape(c.get("reason", ""), {'"': "&quot;"})
        body = xml_escape(json.dumps({"claim": c["claim"], "measured": c["measured"]}, indent=1))
        out.append(f'<testcase classname="{name}.{xml_escape(c["kind"])}" name="{cid}">')
        if c["verdict"] == "fail":
            out.append(f'<failure message="{msg}">{body}</failure>')
        elif c["verdict"] == "inconclusive":
            out.append(f'<skipped message="{msg}"/>')
        out.append(f"<system-out>{body}</system-out></testcase>")
    if rep.get("error"):
        out.append(f'<testcase classname="{name}" name="audit"><error message="{xml_escape(rep["error"], {chr(34): "&quot;"})}"/></testcase>')
    out += ["</testsuite>", "</testsuites>"]
    return "\n".join(out) + "\n"


def stem_for(target: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", target).strip(".") or "report"


def write_all(rep: dict, out_dir, *, stem: str | None = None, json_path=None, formats=("json", "md", "html", "xml")) -> dict:
    """Write the JSON and its views; returns {format: path}."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = stem or stem_for(rep["target"])
    paths = {}
    text = json.dumps(rep, indent=2, allow_nan=False)
    jp = Path(json_path) if json_path else out_dir / f"{stem}.json"
    jp.parent.mkdir(parents=True, exist_ok=True)
    if "json" in formats or json_path:
        _atomic_write(jp, text)
        paths["json"] = jp
    if "md" in formats:
        paths["md"] = _atomic_write(out_dir / f"{stem}.md", to_markdown(rep))
    if "html" in formats:
        paths["html"] = _atomic_write(out_dir / f"{stem}.html", to_html(rep))
    if "xml" in formats:
        paths["junit"] = _atomic_write(out_dir / f"{stem}.junit.xml", to_junit(rep))
    return paths


def _atomic_write(path: Path, text: str) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path
