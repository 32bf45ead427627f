"""Reports: the JSON (schema dpcheck.report/1) and the views rendered from it alone.

Markdown, HTML (with plots) and JUnit XML are functions of the JSON dict and
nothing else, so ``dpcheck report FILE.json`` re-renders any report exactly.

Run identity and completeness. Every report carries ``run_id`` (one per
``dpcheck audit`` invocation), ``status`` (``running`` while checks are still
being added, ``interrupted`` after SIGINT/SIGTERM, ``error`` after an exception,
``complete`` when every check finished) and ``complete`` (true only for
``status: complete``). A report that is not complete never has the verdict
``pass``: the checks it never ran cannot vouch for it, so a pass-so-far is
written as ``inconclusive`` (a ``fail`` stays: a violation found is a violation).
Each view repeats the run id (HTML ``<meta name="dpcheck-run-id">``, a Markdown
comment on the first line, a JUnit ``<property name="run_id">``) and says
"incomplete" when the JSON does; an incomplete JUnit file carries an ``<error>``,
so a CI job that reads it sees a failure, never a stale pass.

The on-disk invariant (:class:`ReportWriter`). The files of one report are
``STEM.json``, ``STEM.md``, ``STEM.html``, ``STEM.junit.xml`` and the optional
``--json PATH`` copy. One run at a time writes them: :mod:`dpcheck.report_lock`
holds an OS lock on them from before the first write to after the last. Each
file is written whole to a temporary file in its own directory and moved into
place with ``os.replace``, so no file is ever seen half-written. The JSON is the
commit point: the order of the writes makes a kill at any moment (SIGKILL
included) leave one of these:

1. the previous run's files only: its JSON unchanged (or no JSON) and a subset
   of its views -- a kill before the new run's first JSON replaced the old one;
2. files of the new run only, whose JSON says ``complete: false`` and whose
   verdict is not ``pass``; every view present says incomplete too;
3. files of the new run only, whose JSON says ``complete: true``; each view
   present says what the JSON says, or is still an incomplete one (a kill
   in the last step, between the final JSON and the last final view:
   ``dpcheck report STEM.json`` renders the missing ones).

So all files present carry one run id, and no view (Markdown, HTML, JUnit, the
copy) says complete or ``pass`` unless the JSON beside it is complete with the
same run id: a view may lag behind the JSON, never run ahead of it. Whoever
needs the whole truth reads the JSON. The order:

- begin: remove the old ``--json`` copy, JUnit, HTML and Markdown (in that
  order: what a CI reads goes first), then write the new incomplete JSON
  (replacing the old one), then the incomplete JUnit and ``--json`` copy;
- after each check: the JSON, then the JUnit and the copy (all incomplete);
- end (complete or not): every text is rendered first, then written: the JSON,
  the copy, the JUnit, the Markdown, the HTML.

Plots: a check may carry ``details["plots"]``, a list of dicts
``{"title", "xlabel", "ylabel", "logx", "logy", "kind": "line"|"hist"|"bar",
"series": [{"label", "x", "y", "lo", "hi"}], "hlines": [{"y", "label"}],
"vlines": [{"x", "label"}], "threshold": x}`` (lo/hi: a band; threshold: an event's cut).
A bar chart with more than :data:`MAX_BARS` categories is drawn as a sorted
profile (values against their rank) instead: 300 bars are not readable, a
sorted curve shows the maximum, the median and how many lie above a line.

Qualified passes: a check that passes only trivially says so with
``details["qualifier"]`` = ``"vacuous"`` or ``"uninformative"`` (see
:func:`dpcheck.checks.qualify`; older reports with a bare ``details["vacuous"]``
are read the same way). Its verdict stays ``pass`` (exit 0), but every view
shows it as its own state, e.g. ``PASS (vacuous)``, so nobody takes it for evidence.
"""
from __future__ import annotations

import base64
import functools
import html
import io
import json
import math
import os
import re
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

from dpcheck.errors import InputError

SCHEMA = "dpcheck.report/1"
_REQUIRED = ("schema", "target", "dpcheck_version", "seed", "alpha", "started", "duration_s", "verdict", "checks")
VERDICTS = ("pass", "fail", "inconclusive")
STATUSES = ("running", "interrupted", "error", "complete")
QUALIFIERS = ("vacuous", "uninformative")
MAX_BARS = 40          # more categories than this: a sorted profile instead of bars
VIEW_SUFFIXES = (".junit.xml", ".html", ".md")   # removal order at the start of a run: what CI reads first


# ---------------------------------------------------------------- reading
def load(path) -> dict:
    """Read and validate a JSON report (one clear InputError for anything that is not one)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"no such report file: {path}")
    try:
        rep = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path} is not a JSON report (truncated or not JSON: {e})") from None
    except OSError as e:
        raise InputError(f"cannot read {path}: {e}") from None
    validate(rep, str(path))
    return rep


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def validate(rep, where: str = "report") -> None:
    """The fields the views read, with the types they need; InputError names the first problem."""
    if not isinstance(rep, dict) or rep.get("schema") != SCHEMA:
        raise InputError(f"{where} is not a dpcheck report (schema {SCHEMA!r} expected)")
    missing = [k for k in _REQUIRED if k not in rep]
    if missing:
        raise InputError(f"{where} lacks the fields {', '.join(missing)}")
    bad = [k for k, ok in (("target", isinstance(rep["target"], str)),
                           ("dpcheck_version", isinstance(rep["dpcheck_version"], str)),
                           ("seed", _number(rep["seed"])), ("alpha", _number(rep["alpha"])),
                           ("started", isinstance(rep["started"], str)), ("duration_s", _number(rep["duration_s"])),
                           ("verdict", rep["verdict"] in VERDICTS), ("checks", isinstance(rep["checks"], list)),
                           ("status", rep.get("status", "complete") in STATUSES),
                           ("complete", isinstance(rep.get("complete", True), bool))) if not ok]
    if bad:
        raise InputError(f"{where}: invalid field{'s' if len(bad) > 1 else ''} {', '.join(bad)}")
    if rep["verdict"] == "pass" and not is_complete(rep):
        raise InputError(f"{where} says pass but is incomplete (status {status_of(rep)}): not a valid report")
    for i, c in enumerate(rep["checks"]):
        if not isinstance(c, dict):
            raise InputError(f"{where}: check {i} is not an object")
        for k in ("id", "kind", "verdict", "claim", "measured"):
            if k not in c:
                raise InputError(f"{where}: a check lacks the field {k!r}")
        if not (isinstance(c["id"], str) and isinstance(c["kind"], str) and c["verdict"] in VERDICTS
                and isinstance(c["claim"], dict) and isinstance(c["measured"], dict)
                and isinstance(c.get("details", {}), dict) and isinstance(c.get("reason", ""), str)):
            raise InputError(f"{where}: check {i} ({c.get('id')!r}) has a field of the wrong type")


def status_of(rep: dict) -> str:
    """running | interrupted | error | complete (reports written before ``status`` existed: from complete/error)."""
    s = rep.get("status")
    if s in STATUSES:
        return s
    if rep.get("complete") is False or rep.get("error"):
        return "error"
    return "complete"


def is_complete(rep: dict) -> bool:
    return status_of(rep) == "complete" and rep.get("complete", True) is True


def qualifier(c: dict) -> str | None:
    """``"vacuous"`` or ``"uninformative"`` for a pass that says little, else None (only passes are qualified)."""
    if c.get("verdict") != "pass":
        return None
    det = c.get("details") or {}
    q = det.get("qualifier")
    if q in QUALIFIERS:
        return q
    if det.get("vacuous"):  # the marker audits wrote before ``qualifier``: the reason tells which kind
        return "uninformative" if "uninformative" in str(c.get("reason", "")) else "vacuous"
    return None


def verdict_label(c: dict) -> str:
    """``pass``, ``pass (vacuous)``, ``pass (uninformative)``, ``fail`` or ``inconclusive``."""
    q = qualifier(c)
    return f"{c['verdict']} ({q})" if q else c["verdict"]


# ---------------------------------------------------------------- formatting
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
    """(verdict, id, headline figures, reason) per check; the verdict as ``PASS``, ``PASS (vacuous)``, ``FAIL``..."""
    return [(c["verdict"].upper() + (f" ({qualifier(c)})" if qualifier(c) else ""), c["id"], _headline(c),
             c.get("reason", "")) for c in rep["checks"]]


def _overall(rep: dict) -> str:
    """The overall line: verdict, completeness and how many passes are only vacuous or uninformative."""
    n = len(rep["checks"])
    q = sum(qualifier(c) is not None for c in rep["checks"])
    s = rep["verdict"].upper()
    if not is_complete(rep):
        s = f"INCOMPLETE ({status_of(rep)}), {s} so far"
    extra = f"; {q} of them pass only vacuously or uninformatively" if q else ""
    return f"{s}  ({n} check{'s' if n != 1 else ''}{extra})"


def family_line(rep: dict) -> str:
    """How the run's alpha is split: "alpha 0.05 family-wise: 24 checks at 0.00208 each"."""
    f = rep.get("family")
    if not f:
        return f"alpha {rep['alpha']}"
    s = f"alpha {f['alpha']:g} family-wise ({f['tests']} check{'s' if f['tests'] != 1 else ''} at {f['alpha_per_check']:.3g} each"
    if not f.get("controlled", True):
        s += f"; WARNING: the checks spent {f['error_bound']:.3g} > alpha"
    return s + ")"


def summary_table(rep: dict, width: int = 140) -> str:
    """The plain-text table the CLI prints at the end."""
    rows = summary_rows(rep)
    if not rows:
        lines = ["(no checks)"]
    else:
        idw = max(len(r[1]) for r in rows)
        vw = max(12, *(len(r[0]) for r in rows))
        lines = [f"{'verdict':{vw}s} {'check':{idw}s}  measured"]
        for v, i, h, _ in rows:
            lines.append(f"{v:{vw}s} {i:{idw}s}  {h}"[:width])
    if rep.get("error"):
        lines.append(f"INCOMPLETE: {rep['error']}")
    lines.append(f"overall: {_overall(rep)}; confidence of each stated in the report; seed={rep['seed']}, "
                 f"{family_line(rep)}" + (f", run {rep['run_id']}" if rep.get("run_id") else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------- Markdown
def to_markdown(rep: dict) -> str:
    rid = rep.get("run_id", "")
    out = [f"<!-- dpcheck-run-id: {rid} status: {status_of(rep)} -->" if rid else f"<!-- status: {status_of(rep)} -->",
           f"# dpcheck report: {rep['target']}", "",
           f"**Verdict: {rep['verdict'].upper()}**" + ("" if is_complete(rep) else f" — **INCOMPLETE ({status_of(rep)})**")
           + "  ", f"dpcheck {rep['dpcheck_version']} · seed {rep['seed']} · "
           f"{family_line(rep)} · started {rep['started']} · {rep['duration_s']:.1f} s"
           + (f" · run {rid}" if rid else ""), ""]
    if not is_complete(rep):
        why = rep.get("error") or "the audit has not finished (still running, or killed)"
        out += [f"> **Incomplete:** {why}. The verdict covers only the {len(rep['checks'])} finished checks.", ""]
    q = sum(qualifier(c) is not None for c in rep["checks"])
    if q:
        out += [f"> {q} of the passing checks pass only vacuously or uninformatively (marked below): they are "
                "not evidence for their claim.", ""]
    out += ["## Summary", "", "| verdict | check | kind | measured | reason |", "|---|---|---|---|---|"]
    for c in rep["checks"]:
        reason = c.get("reason", "").replace("|", "\\|")
        v = verdict_label(c)
        out.append(f"| {('**' + v + '**') if qualifier(c) else v} | `{c['id']}` | {c['kind']} | {_headline(c)} | {reason} |")
    if rep.get("config"):
        out += ["", "## Configuration", ""] + [f"- **{k}**: {_fmt(v)}" for k, v in rep["config"].items()]
    out += ["", "## Checks", ""]
    for c in rep["checks"]:
        out += [f"### `{c['id']}` — {verdict_label(c)}", "", c.get("reason", ""), ""]
        src = c["claim"].get("source")
        out += ["**Claim**" + (f" ({src})" if src else "") + ":", ""]
        out += [f"- {k}: {_fmt(v)}" for k, v in c["claim"].items() if k != "source"] + [""]
        out += ["**Measured**:", ""] + [f"- {k}: {_fmt(v)}" for k, v in c["measured"].items()] + [""]
        det = {k: v for k, v in c.get("details", {}).items() if k != "plots"}
        if det:
            out += ["<details><summary>details</summary>", ""]
            out += [f"- {k}: {_fmt(v)}" for k, v in det.items()] + ["", "</details>", ""]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- plots
def _num(v) -> float | None:
    if _number(v):
        return float(v)
    if v in ("inf", "-inf"):
        return float(v)
    return None


def _finite_points(s: dict):
    """x, y (and the band lo, hi) of a line/hist series with the points the JSON cannot carry as
    numbers dropped: NaN is stored as null and +-inf as "inf"/"-inf" (dpcheck.checks._jsonable)."""
    y = [_num(v) for v in s["y"]]
    x = s.get("x") if s.get("x") is not None else list(range(len(y)))
    xn = [_num(v) for v in x]
    categorical = any(isinstance(v, str) and v not in ("inf", "-inf") for v in x)
    band = s.get("lo") is not None and s.get("hi") is not None
    lo = [_num(v) for v in s["lo"]] if band else None
    hi = [_num(v) for v in s["hi"]] if band else None
    keep = [i for i in range(min(len(x), len(y)))
            if y[i] is not None and math.isfinite(y[i]) and (categorical or (xn[i] is not None and math.isfinite(xn[i])))
            and (not band or (i < len(lo) and i < len(hi) and lo[i] is not None and hi[i] is not None
                              and math.isfinite(lo[i]) and math.isfinite(hi[i])))]
    xs = [str(x[i]) if categorical else xn[i] for i in keep]
    return (xs, [y[i] for i in keep], [lo[i] for i in keep] if band else None, [hi[i] for i in keep] if band else None)


def plot_plan(spec: dict) -> dict:
    """How a plot spec will be drawn, decided before drawing (so it can be tested without pixels).

    Returns {"kind": "line"|"hist"|"bar"|"profile", "categories": n, "bars": bars drawn, "rotate": bool}.
    A bar chart with more than MAX_BARS categories becomes a "profile": each series' values
    sorted (in the order of the first series, so paired series stay paired) against their rank.
    """
    kind = spec.get("kind", "line")
    series = [s for s in spec.get("series") or [] if s.get("y") is not None]
    n = max((len(s["y"]) for s in series), default=0)
    if kind != "bar":
        return {"kind": kind if kind in ("line", "hist") else "line", "categories": n, "bars": 0, "rotate": False}
    if n > MAX_BARS:
        return {"kind": "profile", "categories": n, "bars": 0, "rotate": False}
    return {"kind": "bar", "categories": n, "bars": n * len(series), "rotate": n > 12}


def _plain_log_axis(axis, limits, *, minor_labels: bool) -> None:
    """A log axis in plain-text labels ("100", "0.01", "2e+05") instead of matplotlib's default mathtext
    ("$10^{2}$", a pyparsing parse per label), and, where the range spans a decade or more, without the up
    to 8 unlabelled minor ticks per decade. Together they were a third of a report's plotting time. A
    narrower range keeps its minor ticks (labelled on y), since it may hold no decade."""
    from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator
    plain = FuncFormatter(lambda v, _pos: f"{v:g}")
    lo, hi = sorted(limits)
    axis.set_major_formatter(plain)
    if lo > 0 and hi / lo >= 10:
        axis.set_minor_locator(NullLocator())
    else:
        axis.set_minor_formatter(plain if minor_labels else NullFormatter())


def _plot_png(spec: dict) -> str | None:
    """Render one plot spec to a base64 PNG (None if matplotlib is unavailable or the spec is empty)."""
    fig = plot_figure(spec)
    if fig is None:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return base64.b64encode(buf.getvalue()).decode()


def plot_figure(spec: dict):
    """The matplotlib Figure of one plot spec (None if matplotlib is unavailable or the spec is empty)."""
    try:
        from matplotlib.figure import Figure      # no pyplot: no global figure registry, no GUI backend
    except ImportError:
        return None
    series = [s for s in spec.get("series") or [] if s.get("y") is not None]
    if not series:
        return None
    plan = plot_plan(spec)
    fig = Figure(figsize=(6.4, 3.8), dpi=90)
    ax = fig.subplots()
    xlabel = spec.get("xlabel", "")
    if plan["kind"] == "bar":
        width = 0.8 / len(series)
        labels = None
        for j, s in enumerate(series):
            y = [_num(v) if _num(v) is not None else math.nan for v in s["y"]]
            x = s.get("x") if s.get("x") is not None else list(range(len(y)))
            labels = labels or [str(v) for v in x]
            ax.bar([i + (j - (len(series) - 1) / 2) * width for i in range(len(y))], y, width=width,
                   alpha=0.75, label=s.get("label"))
        ax.set_xticks(range(len(labels)), labels, rotation=90 if plan["rotate"] else 0,
                      fontsize=6 if plan["rotate"] else 8)
    elif plan["kind"] == "profile":
        first = [_num(v) for v in series[0]["y"]]
        order = sorted(range(len(first)), key=lambda i: -(first[i] if first[i] is not None and not math.isnan(first[i])
                                                           else -math.inf))
        for s in series:
            y = [_num(s["y"][i]) if i < len(s["y"]) else None for i in order]
            y = [math.nan if v is None else v for v in y]
            ax.step(range(1, len(y) + 1), y, where="mid", label=s.get("label"))
        what = xlabel or "category"
        xlabel = (f"rank of the {plan['categories']} {what}s, sorted by "
                  f"{series[0].get('label') or 'value'} (largest first)")
    else:
        for s in series:
            x, y, lo, hi = _finite_points(s)
            if plan["kind"] == "hist":
                ax.step(x, y, where="mid", label=s.get("label"))
            else:
                ax.plot(x, y, marker="o" if len(y) <= 20 else None, ms=3, label=s.get("label"))
            if lo is not None:
                ax.fill_between(x, lo, hi, alpha=0.2)
    for ref in spec.get("hlines", []) or []:
        ax.axhline(ref.get("y"), ls="--", color="gray", lw=1)
        if ref.get("label"):
            ax.annotate(ref["label"], (0.01, ref["y"]), xycoords=("axes fraction", "data"), fontsize=7, color="gray")
    vlines = list(spec.get("vlines") or []) if plan["kind"] in ("line", "hist") else []
    if spec.get("threshold") is not None and plan["kind"] in ("line", "hist"):
        vlines.append({"x": spec["threshold"], "label": "event threshold"})
    for ref in vlines:
        try:
            ax.axvline(float(ref["x"]), ls=":", color="black", lw=1, label=ref.get("label"))
        except (TypeError, ValueError):
            pass
    if spec.get("logx") and plan["kind"] in ("line", "hist"):
        ax.set_xscale("log")
        _plain_log_axis(ax.xaxis, ax.get_xlim(), minor_labels=False)   # minor x labels of a log axis overlap
        xs = sorted({float(v) for s_ in series for v in (s_.get("x") or []) if isinstance(v, (int, float)) and v > 0})
        if 2 <= len(xs) <= 10:  # a short grid: label its own points
            ax.set_xticks(xs, [f"{v:g}" for v in xs])
    if spec.get("logy") == "symlog":
        ax.set_yscale("symlog")
    elif spec.get("logy"):
        ax.set_yscale("log")
        _plain_log_axis(ax.yaxis, ax.get_ylim(), minor_labels=True)
    ax.set_title(spec.get("title", ""), fontsize=10)
    ax.set_xlabel(xlabel, fontsize=8 if plan["kind"] == "profile" else 10)
    ax.set_ylabel(spec.get("ylabel", ""))
    if any(s.get("label") for s in series) or vlines:
        ax.legend(fontsize=7)
    # fixed margins, not tight_layout(): that draws the figure once more only to measure it, which was 1/3 of
    # a report's writing time (19 plots of dp_nash_vi --quick: 7.4 -> 4.9 CPU s); the labels fit these
    # margins at this size (rotated category labels get a deeper bottom margin)
    fig.subplots_adjust(left=0.12, right=0.97, top=0.9, bottom=0.28 if plan["rotate"] else 0.14)
    return fig


# ---------------------------------------------------------------- HTML
_CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:1em auto;padding:0 1em;color:#222}
h1{font-size:1.35em;margin:.2em 0}h2{font-size:1.1em;margin:.8em 0 .3em}
table{border-collapse:collapse;width:100%;font-size:12.5px}
td,th{border:1px solid #ddd;padding:1px 6px;text-align:left;vertical-align:top}
td.v,td.id,td.kind{white-space:nowrap}td.reason{max-width:0;width:100%}
.cut{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}td.fig .cut{max-width:min(24em,28vw)}
@media (max-width:1000px){.kind{display:none}}
.v{font-weight:bold;white-space:nowrap}
.pass{color:#17703a;background:#e6f4ea}.fail{color:#b00020;background:#fde7ea}
.inconclusive{color:#8a5a00;background:#fff3d6}.qualified{color:#1f4e8c;background:#e4ecf7;font-style:italic}
.banner{padding:.45em .8em;border-radius:4px;font-size:1.05em;margin:.4em 0}
.meta{color:#555;font-size:13px;margin:.2em 0}.legend{font-size:12px;color:#444;margin:.3em 0}
code{background:#f4f4f4;padding:1px 3px}td code{font-size:12px}a.pl{font-size:11px;color:#666}
.gallery{display:grid;grid-template-columns:repeat(auto-fill,minmax(270px,1fr));gap:8px}
.gallery figure{margin:0;border:1px solid #ddd;padding:3px}.gallery figure.big{grid-column:1/-1}
.gallery img{width:100%;cursor:zoom-in}.gallery figure.big img{cursor:zoom-out;max-width:900px}
figcaption{font-size:12px}details.check{border-top:1px solid #ccc;padding:.3em 0}
details.check>summary{cursor:pointer}img{max-width:100%}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:13px}dt{font-weight:bold}"""

_JS = """document.querySelectorAll('.gallery figure img').forEach(function(i){i.addEventListener('click',
function(){i.parentNode.classList.toggle('big')})});
function openTarget(){var t=document.getElementById(location.hash.slice(1));if(t&&t.tagName=='DETAILS')t.open=true}
window.addEventListener('hashchange',openTarget);openTarget();"""


def _dl(d: dict) -> str:
    return "<dl>" + "".join(f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(_fmt(v))}</dd>" for k, v in d.items()) + "</dl>"


def _vclass(c: dict) -> str:
    return "qualified" if qualifier(c) else c["verdict"]


def to_html(rep: dict, png=None) -> str:
    """One page: verdict banner and summary table, then a gallery of every plot, then the checks collapsed.

    The first screen holds the verdict, the summary (one line per check; the full reason
    is in the tooltip and in the check's section) and the start of the plot gallery.
    ``png(spec)`` renders one plot (default: here; dpcheck.sidework.PlotPrefetch: rendered ahead).
    """
    png_of = png or _plot_png
    e = html.escape
    v = rep["verdict"]
    rid = rep.get("run_id", "")
    complete = is_complete(rep)
    checks = rep["checks"]
    n_q = sum(qualifier(c) is not None for c in checks)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>dpcheck: {e(rep['target'])}</title>"
             f"<meta name='dpcheck-run-id' content='{e(rid)}'><meta name='dpcheck-status' content='{e(status_of(rep))}'>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>dpcheck report: <code>{e(rep['target'])}</code></h1>"]
    if complete:
        note = f" &middot; {n_q} of {len(checks)} checks pass only vacuously or uninformatively" if n_q else ""
        parts.append(f"<div class='banner {e(v)}'>Verdict: <b>{e(v.upper())}</b> &middot; {len(checks)} checks{note}</div>")
    else:
        why = rep.get("error") or "the audit has not finished (still running, or killed)"
        parts.append(f"<div class='banner fail'>INCOMPLETE ({e(status_of(rep))}): {e(why)} &middot; verdict of the "
                     f"{len(checks)} finished checks: <b>{e(v.upper())}</b></div>")
    parts.append(f"<p class='meta'>dpcheck {e(rep['dpcheck_version'])} &middot; seed {rep['seed']} &middot; "
                 f"{e(family_line(rep))} &middot; {e(rep['started'])} &middot; {rep['duration_s']:.1f} s"
                 + (f" &middot; run <code>{e(rid)}</code>" if rid else "") + "</p>")

    # plots, rendered once; the gallery shows them, the check sections link to them
    figs, plots_of = [], {}
    for i, c in enumerate(checks):
        for spec in (c.get("details") or {}).get("plots", []) or []:
            if not isinstance(spec, dict):
                continue
            try:
                png = png_of(spec)
            except Exception:  # a malformed plot must not cost the report: the figures are in the JSON
                png = None
            if png:
                plots_of.setdefault(i, []).append(len(figs))
                figs.append((i, c, spec, png))

    parts.append("<table><tr><th>verdict</th><th>check</th><th class='kind'>kind</th><th>measured</th>"
                 "<th>reason</th></tr>")
    for i, c in enumerate(checks):
        nplots = len(plots_of.get(i, []))
        pl = (f" <a class='pl' href='#f{plots_of[i][0]}'>{'plot' if nplots == 1 else f'{nplots} plots'}</a>"
              if nplots else "")
        parts.append(f"<tr><td class='v {_vclass(c)}'>{e(verdict_label(c))}</td>"
                     f"<td class='id'><a href='#c{i}'><code>{e(c['id'])}</code></a>{pl}</td>"
                     f"<td class='kind'>{e(c['kind'])}</td>"
                     f"<td class='fig'><div class='cut' title='{e(_headline(c))}'>{e(_headline(c))}</div></td>"
                     f"<td class='reason'><div class='cut' title='{e(c.get('reason', ''))}'>{e(c.get('reason', ''))}"
                     "</div></td></tr>")
    parts.append("</table>")
    if n_q:
        parts.append("<p class='legend'><span class='qualified'>pass (vacuous)</span> held only trivially (e.g. a "
                     "saturated bonus makes optimism true by construction); <span class='qualified'>pass "
                     "(uninformative)</span> the measurement cannot tell the claim from its negation here. "
                     "Neither fails the run; neither is evidence for the claim.</p>")
    if figs:
        parts.append("<h2>Plots</h2><div class='gallery'>")
        for k, (i, c, spec, png) in enumerate(figs):
            parts.append(f"<figure id='f{k}'><img alt='{e(spec.get('title', 'plot'))}' src='data:image/png;base64,{png}'>"
                         f"<figcaption><span class='v {_vclass(c)}'>{e(verdict_label(c))}</span> "
                         f"<a href='#c{i}'><code>{e(c['id'])}</code></a></figcaption></figure>")
        parts.append("</div>")
    parts.append("<h2>Checks</h2>")
    for i, c in enumerate(checks):
        det = c.get("details") or {}
        rest = {k: x for k, x in det.items() if k != "plots"}
        links = " ".join(f"<a href='#f{k}'>figure {k + 1}</a>" for k in plots_of.get(i, []))
        parts.append(f"<details class='check' id='c{i}'{' open' if c['verdict'] == 'fail' else ''}><summary>"
                     f"<span class='v {_vclass(c)}'>{e(verdict_label(c))}</span> <code>{e(c['id'])}</code> "
                     f"&mdash; {e(c.get('reason', ''))}</summary>"
                     f"<h4>Claim</h4>{_dl(c['claim'])}<h4>Measured</h4>{_dl(c['measured'])}"
                     + (f"<p>Plots: {links}</p>" if links else "")
                     + (f"<h4>Details</h4>{_dl(rest)}" if rest else "") + "</details>")
    if rep.get("config"):
        parts.append("<details class='check'><summary>Configuration</summary>" + _dl(rep["config"]) + "</details>")
    parts.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(parts)


# ---------------------------------------------------------------- JUnit
def _xa(s) -> str:
    return xml_escape(str(s), {'"': "&quot;"})


def to_junit(rep: dict) -> str:
    """JUnit XML: one testcase per check; fail -> <failure>, inconclusive -> <skipped>.

    An incomplete report (running, interrupted, error) adds a testcase ``audit`` with an
    ``<error>``: a CI that reads this file after a kill sees an error, not a pass.
    """
    checks = rep["checks"]
    n_fail = sum(c["verdict"] == "fail" for c in checks)
    n_skip = sum(c["verdict"] == "inconclusive" for c in checks)
    complete = is_complete(rep)
    n_err = 0 if complete else 1
    n_tests = len(checks) + n_err
    name = _xa(rep["target"])
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="dpcheck" tests="{n_tests}" failures="{n_fail}" errors="{n_err}" skipped="{n_skip}">',
           f'<testsuite name="{name}" tests="{n_tests}" failures="{n_fail}" errors="{n_err}" '
           f'skipped="{n_skip}" time="{rep["duration_s"]}" timestamp="{_xa(rep["started"])}">',
           "<properties>"
           + (f'<property name="run_id" value="{_xa(rep["run_id"])}"/>' if rep.get("run_id") else "")
           + f'<property name="status" value="{_xa(status_of(rep))}"/>'
           f'<property name="complete" value="{str(complete).lower()}"/>'
           f'<property name="verdict" value="{_xa(rep["verdict"])}"/></properties>']
    for c in checks:
        cid = _xa(c["id"])
        msg = _xa(c.get("reason", ""))
        body = xml_escape(json.dumps({"verdict": verdict_label(c), "claim": c["claim"], "measured": c["measured"]},
                                     indent=1))
        out.append(f'<testcase classname="{name}.{_xa(c["kind"])}" name="{cid}">')
        if c["verdict"] == "fail":
            out.append(f'<failure message="{msg}">{body}</failure>')
        elif c["verdict"] == "inconclusive":
            out.append(f'<skipped message="{msg}"/>')
        out.append(f"<system-out>{body}</system-out></testcase>")
    if not complete:
        why = rep.get("error") or "the audit has not finished (still running, or killed)"
        out.append(f'<testcase classname="{name}" name="audit"><error type="{_xa(status_of(rep))}" '
                   f'message="incomplete: {_xa(why)}"/></testcase>')
    out += ["</testsuite>", "</testsuites>"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- files
def stem_for(target: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", target).strip(".") or "report"


def _json_text(rep: dict) -> str:
    return json.dumps(rep, indent=2, allow_nan=False)


def write_all(rep: dict, out_dir, *, stem: str | None = None, json_path=None, formats=("json", "md", "html", "xml")) -> dict:
    """Write the JSON and its views, each atomically; returns {format: path}.

    Every text is rendered before the first write. The views about to be written are removed
    first (a view of another run must not sit next to this JSON), then the JSON (and the copy)
    is written, then the views: no view is ever ahead of the JSON beside it (module docstring)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = stem or stem_for(rep["target"])
    main = out_dir / f"{stem}.json"
    views = [(key, out_dir / f"{stem}{suffix}", render) for fmt, key, suffix, render in (
        ("xml", "junit", ".junit.xml", to_junit), ("md", "md", ".md", to_markdown), ("html", "html", ".html", to_html))
        if fmt in formats]
    texts = [(key, path, render(rep)) for key, path, render in views]
    text = _json_text(rep) if ("json" in formats or json_path) else None
    for _, path, _ in texts:
        _remove(path)
    paths = {}
    if text is not None:
        if "json" in formats:
            paths["json"] = _atomic_write(main, text)
        if json_path and Path(json_path).resolve() != main.resolve():
            paths["json_copy" if "json" in paths else "json"] = _atomic_write(Path(json_path), text)
        elif json_path and "json" not in paths:
            paths["json"] = _atomic_write(main, text)
    for key, path, t in texts:
        paths[key] = _atomic_write(path, t)
    return dict(sorted(paths.items(), key=lambda kv: ("json", "md", "html", "junit", "json_copy").index(kv[0])))


class ReportWriter:
    """Writes one run's report files in the order that keeps the on-disk set consistent (module docstring).

    ``begin(rep)`` once before the first check, ``stream(rep)`` after each check, ``finish(rep)``
    at the end (complete or not). ``rep`` is the report dict of this run; ``begin`` and
    ``stream`` refuse a complete one, since only ``finish`` may commit a run.
    """

    def __init__(self, out_dir, stem: str, json_path=None, plots=None):
        self.plots = plots          # a dpcheck.sidework.PlotPrefetch: the HTML's plots rendered as checks arrive
        self.out_dir = Path(out_dir)
        self.stem = stem
        self.main = self.out_dir / f"{stem}.json"
        jp = Path(json_path) if json_path else None
        own = {p.resolve() for p in self.views()}
        if jp is not None and jp.resolve() in own:      # the copy would be overwritten by (or overwrite) a view
            from dpcheck.errors import InputError
            raise InputError(f"--json {json_path}: that is one of this run's own report files; give another path")
        self.copy = jp if jp is not None and jp.resolve() != self.main.resolve() else None

    def views(self) -> list[Path]:
        return [self.out_dir / f"{self.stem}{s}" for s in VIEW_SUFFIXES]

    def begin(self, rep: dict) -> None:
        """Remove the previous run's views, then put this run's incomplete JSON and JUnit in place."""
        self._refuse_complete(rep)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self.copy is not None:
            self.copy.parent.mkdir(parents=True, exist_ok=True)
        for p in ([self.copy] if self.copy is not None else []) + self.views():
            _remove(p)
        self.stream(rep)

    def stream(self, rep: dict) -> None:
        """The report so far: the JSON first (it replaces the previous run's), then the JUnit and the copy."""
        self._refuse_complete(rep)
        text = _json_text(rep)
        _atomic_write(self.main, text)
        _atomic_write(self.out_dir / f"{self.stem}.junit.xml", to_junit(rep))
        if self.copy is not None:
            _atomic_write(self.copy, text)
        if self.plots is not None:
            self.plots.prefetch(rep)

    def finish(self, rep: dict) -> dict:
        """The JSON (the commit point of the run), then the ``--json`` copy, the JUnit, the Markdown
        and the HTML: a kill between two writes leaves views that lag behind the JSON, never ahead.
        Every text is rendered before the first write (the HTML's plots take longest)."""
        paths = {"json": self.main, "md": self.out_dir / f"{self.stem}.md",
                 "html": self.out_dir / f"{self.stem}.html", "junit": self.out_dir / f"{self.stem}.junit.xml"}
        text = _json_text(rep)
        try:
            html_text = to_html(rep, png=self.plots.png if self.plots is not None else None)
        finally:
            if self.plots is not None:
                self.plots.close()
        views = [(paths["junit"], to_junit(rep)), (paths["md"], to_markdown(rep)), (paths["html"], html_text)]
        _atomic_write(self.main, text)
        if self.copy is not None:
            paths["json_copy"] = _atomic_write(self.copy, text)
        for path, t in views:
            _atomic_write(path, t)
        return paths

    @staticmethod
    def _refuse_complete(rep: dict) -> None:
        if is_complete(rep) or rep.get("verdict") == "pass":
            raise ValueError("an in-progress report must be incomplete and must not say pass")


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


@functools.lru_cache(maxsize=1)     # read once per process (os.umask can only be read by setting it)
def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


def _atomic_write(path: Path, text: str) -> Path:
    """Write ``text`` to a temporary file next to ``path`` (``.NAME.XXXXXXXX.tmp``, see
    :func:`remove_stale_temps`) and move it into place (os.replace is atomic)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), 0o666 & ~_umask())  # mkstemp makes 0600; a report is as readable as any file
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def report_files(out_dir, stem: str) -> list[Path]:
    """The files of report STEM in ``out_dir`` (without the ``--json`` copy)."""
    return [Path(out_dir) / f"{stem}{s}" for s in (".json",) + VIEW_SUFFIXES]


def remove_stale_temps(paths) -> list[Path]:
    """Remove the temporary files :func:`_atomic_write` left next to ``paths`` (a killed run's).

    Only for a caller that holds the lock of these files (:mod:`dpcheck.report_lock`): then no
    live run is writing them. The name must match mkstemp's exactly (``.NAME.`` + 8 characters of
    its alphabet + ``.tmp``), so the temporaries of another report (``.NAME.json.…``) are left alone.
    """
    removed = []
    for path in paths:
        path = Path(path)
        pat = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.tmp")
        try:
            names = os.listdir(path.parent)
        except OSError:
            continue
        for n in names:
            if pat.fullmatch(n):
                try:
                    os.unlink(path.parent / n)
                    removed.append(path.parent / n)
                except FileNotFoundError:
                    pass
    return removed
