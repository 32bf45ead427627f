"""--workers 1 against --workers 2 for every built-in algorithm audit's run (issue 20 item 3: each at least
1.6x faster with 2 workers on 2 idle cores; the main job ``dpcheck audit dp_nash_vi`` under 60 s on 2 cores).

For each audit: ``python -m dpcheck audit NAME --workers W --seed S [--quick]`` in a child process from this
checkout, W = 1 then 2; wall seconds, and CPU seconds (user + system) of the child and the worker processes it
waited for (``resource.getrusage(RUSAGE_CHILDREN)``). Prints the table with the speedup wall(1) / wall(2)
and checks that both reports agree (scripts/compare_reports.py: same ids, verdicts and measured figures),
then writes benchmarks/results/audit_scaling.json and .md with the command that made them.

On a shared machine the wall times (and so the speedup) are distorted by the other load, which is printed;
CPU(1) / 2 is the ideal 2-core wall of a perfectly parallel run, so wall(2) against it shows the serial part.
The ceiling wall(1) / (CPU(2) / 2) is the most the 2-worker run could gain with the CPU it actually spent (its
worker start-up and imports included) even if every second of it were packed onto both cores: an audit whose
ceiling is below the goal cannot reach it by scheduling alone, only by spending less CPU with 2 workers.
The default runs of all algorithm audits take tens of CPU minutes: run them on an idle machine.

    python benchmarks/bench_audit_scaling.py [--quick] [--audit NAME ...] [--seed 0] [--out benchmarks/results]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the ten audits of issue 20 item 3: the algorithm audits (docs/DESIGN layout: offline, online, games, general FA)
# and the two online privatizers'; the mechanism-level audits (examples, diffprivlib, offline privatizers) are left out
ALGORITHM_AUDITS = ("dp_apvi", "dp_vapvi", "dp_ucbvi", "dp_nash_vi", "private_linopt_vi", "private_linopt_po",
                    "private_gfa", "private_gfa_outcome", "central_privatizer", "local_privatizer")
SPEEDUP_GOAL = 1.6


def run_audit(name: str, workers: int, seed: int, quick: bool, out: Path) -> dict:
    """One audit run in a child process: wall and CPU seconds, exit code, path of its JSON report."""
    report = out / f"{name}-w{workers}.json"
    cmd = [sys.executable, "-m", "dpcheck", "audit", name, "--workers", str(workers), "--seed", str(seed),
           "--quiet", "--out", str(out / f"{name}-w{workers}"), "--json", str(report)]
    if quick:
        cmd.append("--quick")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"workers": workers, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "exit": proc.returncode,
            "report": str(report), "stderr_tail": proc.stderr.strip().splitlines()[-1:] if proc.returncode > 1 else []}


def ceiling(w1: dict, w2: dict) -> float:
    """wall(1) / (CPU(2) / 2): the 2-worker speedup if the 2-worker run's CPU seconds filled both cores throughout."""
    return w1["wall_s"] / max(w2["cpu_s"] / 2, 1e-9)


def same_reports(a: str, b: str) -> bool | None:
    if not (os.path.exists(a) and os.path.exists(b)):
        return None
    sys.path.insert(0, str(ROOT / "scripts"))
    from compare_reports import differences
    with open(a) as fa, open(b) as fb:
        return not differences(json.load(fa), json.load(fb))


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [f"# Audit scaling: --workers 1 vs --workers 2 ({'--quick' if meta['quick'] else 'default runs'})", "",
             f"Made by `{meta['command']}` on {meta['cpus']} CPUs, load average before {meta['load_before']}, "
             f"after {meta['load_after']} (a shared machine inflates the wall times).", "",
             "| audit | wall 1 (s) | wall 2 (s) | speedup | CPU 1 (s) | CPU 2 (s) | CPU 1 / 2 (s) | ceiling "
             "| same report |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        w1, w2 = r["runs"]
        lines.append(f"| {r['audit']} | {w1['wall_s']} | {w2['wall_s']} | {r['speedup']:.2f} | {w1['cpu_s']} | "
                     f"{w2['cpu_s']} | {w1['cpu_s'] / 2:.1f} | {r['ceiling']:.2f} | {r['same_report']} |")
    lines += ["", f"speedup = wall(1) / wall(2), goal >= {SPEEDUP_GOAL} on 2 idle cores; CPU 1 / 2 is the ideal "
                  "2-core wall of the 1-worker run's work; ceiling = wall(1) / (CPU(2) / 2), the speedup of a "
                  "perfectly packed run with the 2-worker run's CPU."]
    below = [r["audit"] for r in rows if r["ceiling"] < SPEEDUP_GOAL]
    if below:
        lines.append(f"Ceiling below the goal (unreachable by scheduling alone): {', '.join(below)}.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the --quick runs (a check that the bench works)")
    ap.add_argument("--audit", action="append", default=None, metavar="NAME",
                    help="only this audit (repeatable); default: " + ", ".join(ALGORITHM_AUDITS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"), help="where audit_scaling.{json,md} go")
    args = ap.parse_args(argv)
    names = args.audit or list(ALGORITHM_AUDITS)
    command = "python benchmarks/bench_audit_scaling.py" + "".join(f" {shlex.quote(a)}" for a in
                                                                   (argv if argv is not None else sys.argv[1:]))
    meta = {"command": command, "quick": args.quick, "seed": args.seed, "cpus": os.cpu_count(),
            "load_before": [round(x, 2) for x in os.getloadavg()], "python": sys.version.split()[0]}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_audit_scaling_") as tmp:
        for name in names:
            runs = [run_audit(name, w, args.seed, args.quick, Path(tmp)) for w in (1, 2)]
            r = {"audit": name, "runs": runs, "speedup": runs[0]["wall_s"] / max(runs[1]["wall_s"], 1e-9),
                 "same_report": same_reports(runs[0]["report"], runs[1]["report"]),
                 "ceiling": ceiling(runs[0], runs[1])}
            for x in runs:
                del x["report"]
            rows.append(r)
            w1, w2 = runs
            print(f"{name:22s} wall {w1['wall_s']:8.1f} s -> {w2['wall_s']:8.1f} s  speedup {r['speedup']:.2f}  "
                  f"CPU {w1['cpu_s']:.1f} / {w2['cpu_s']:.1f} s  ceiling {r['ceiling']:.2f}  "
                  f"exit {w1['exit']}/{w2['exit']}  "
                  f"same report: {r['same_report']}", flush=True)
    meta["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "audit_scaling.json").write_text(json.dumps({**meta, "goal_speedup": SPEEDUP_GOAL, "audits": rows},
                                                       indent=2) + "\n")
    (out / "audit_scaling.md").write_text(markdown(rows, meta))
    print(f"wrote {out / 'audit_scaling.json'} and {out / 'audit_scaling.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
