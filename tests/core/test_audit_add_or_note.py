"""Audit.add_or_note: a check is added as by Audit.add; a check the configuration cannot run (None) is not
silently dropped but leaves its reason in the config (private_gfa's and gfa_selection_mechanism's selection-law
checks for a mechanism without a closed form)."""
from dpcheck.audit import Audit, ClaimRow
from dpcheck.checks import PASS, Check
from dpcheck.context import AuditContext, AuditOptions


class _Law(Audit):
    name = "_audit_add_or_note"
    algorithm = "test"
    notion = "DP"
    summary = "nothing"
    claims = (ClaimRow("privacy.law", "privacy", "the law holds", "Paper, Lemma 1", "run"),)

    def run(self) -> None:
        pass


def _law_check():
    return Check(id="privacy.law", kind="privacy", verdict=PASS, claim={"statement": "s"},
                 measured={"confidence": 1.0}, reason="r")


def test_a_check_is_added_with_its_table_row_and_nothing_noted():
    ctx = AuditContext("_audit_add_or_note", AuditOptions())
    a = _Law(ctx)
    out = a.add_or_note(_law_check(), "law", "not checked: no closed form")
    assert out is not None and out.claim["table"]["source"] == "Paper, Lemma 1"
    assert [c.id for c in ctx.checks] == ["privacy.law"] and "law" not in a.config


def test_a_check_that_cannot_run_leaves_its_reason_in_the_config():
    ctx = AuditContext("_audit_add_or_note", AuditOptions())
    a = _Law(ctx)
    assert a.add_or_note(None, "law", "not checked: no closed form") is None
    assert ctx.checks == [] and a.config["law"] == "not checked: no closed form"
