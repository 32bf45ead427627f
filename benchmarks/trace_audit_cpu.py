"""Where an audit's time goes: wall seconds and the CPU seconds of the whole process tree (the audit's process and
its loky workers, alive or not) at each progress line of one run.

    python benchmarks/trace_audit_cpu.py private_gfa_outcome --workers 2 [--quick] [--seed 0]

A phase whose CPU grows with --workers while its wall does not is paying for parallelism (worker start,
contention); one whose wall equals its CPU at 2 workers runs in one process. No report files are written.
"""
from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    import psutil

    from dpcheck import registry
    from dpcheck.context import AuditContext, AuditOptions
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("audit")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    me = psutil.Process()
    cpu_of: dict[int, float] = {}          # last CPU seen per process: a finished worker keeps its share
    t0 = time.perf_counter()

    def tree_cpu() -> float:
        for p in [me, *me.children(recursive=True)]:
            try:
                c = p.cpu_times()
            except psutil.Error:
                continue
            cpu_of[p.pid] = c.user + c.system
        return sum(cpu_of.values())

    def line(msg: str) -> None:
        print(f"{time.perf_counter() - t0:7.1f} s wall {tree_cpu():7.1f} s CPU  {msg[:100]}", flush=True)

    class Traced(AuditContext):
        def progress(self, msg: str) -> None:
            line(msg)

    ctx = Traced(a.audit, AuditOptions(seed=a.seed, workers=a.workers, quick=a.quick))
    registry.load()[a.audit].run(ctx)
    line("end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
