"""A run of an offline learner does not import dp_accounting: the result's ``dp_event`` is declared when it is
read (OfflineResult.declare). The audits call these learners as black-box mechanisms in fresh worker
processes, where the import (about 1.6 s, for scipy.signal) would be paid in each one for nothing."""
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from dpcheck.algorithms.offline import APVI, DPAPVI, DPVAPVI, PEVI, lin_tab, tab_full
    rng = np.random.default_rng(0)
    inst = tab_full(rng, S=2, A=2, H=3)
    counts = inst.sample_counts(200, rng, runs=3)
    lin = lin_tab(inst)
    data = lin.collect(40, rng, runs=3)
    runs = {"DPAPVI": DPAPVI(rho=1.0).run(counts, inst.mdp, rng), "APVI": APVI().run(counts, inst.mdp, rng),
            "DPVAPVI": DPVAPVI(rho=1.0, Dpen=1.0).run(data, lin.features, rng),
            "PEVI": PEVI().run(data, lin.features, rng)}
    assert "dp_accounting" not in sys.modules, "a run imported dp_accounting"
    import dp_accounting
    ev = {k: r.dp_event for k, r in runs.items()}
    assert isinstance(ev["DPAPVI"], dp_accounting.ComposedDpEvent), ev["DPAPVI"]
    assert isinstance(ev["DPVAPVI"], dp_accounting.ComposedDpEvent), ev["DPVAPVI"]
    assert len(ev["DPVAPVI"].events) == 5 * 3                      # 5H Gaussian releases
    assert isinstance(ev["APVI"], dp_accounting.NonPrivateDpEvent), ev["APVI"]
    assert isinstance(ev["PEVI"], dp_accounting.NonPrivateDpEvent), ev["PEVI"]
    print("ok")
""")


@pytest.mark.slow
def test_runs_do_not_import_dp_accounting_and_declare_on_read():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"
