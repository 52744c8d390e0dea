"""The customer-service SOP as code: the reference policy that derives every label."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task
from sopgym.domains.customer_service import rules


@dataclass
class Summary:
    """The resolution summary (SOP §11), filled in as the steps run."""

    auth_status: str = "failed"
    account_eligibility: str = "not_checked"
    issue_category: str = "not_classified"
    outage_status: str = "not_checked"
    diagnostic_result: str = "not_run"
    primary_fault: str = "not_applicable"
    troubleshooting_action: str = "none"
    escalation_level: str = "none"
    resolution_code: str = "authentication_failed"
    ticket_priority: str = "none"
    priority_score: int = 0
    bandwidth_ratio: float | None = None


def solve(task: Task, run: PolicyRun) -> Solution:
    x = task.inputs
    account_id, reported_at = x["account_id"], x["reported_at"]
    out = Summary()
    decisions: dict = {"branch": "authentication_failed"}

    session = run.call("validate_session", account_id=account_id, session_token=x["session_token"])
    if not rules.session_is_valid(session, account_id, reported_at):
        return Solution(outputs=asdict(out), decisions=decisions)
    out.auth_status = "verified"

    account = run.call("get_account", account_id=account_id)
    billing = None
    if account["account_state"] == "active":
        billing = run.call(
            "check_billing_standing", billing_account_id=account["billing_account_id"]
        )
    out.account_eligibility = rules.eligibility(account, billing)
    outage_linked = False
    if out.account_eligibility != "eligible":
        decisions["branch"] = f"ineligible_{out.account_eligibility}"
        out.resolution_code = "account_action_required"
        out.escalation_level = "none" if out.account_eligibility == "closed" else "billing"
    else:
        outage_linked = _diagnose(run, x, account, out, decisions)

    out.priority_score = rules.priority_score(
        account["customer_tier"],
        out.issue_category,
        out.diagnostic_result,
        outage_linked,
        out.escalation_level,
    )
    out.ticket_priority = rules.ticket_priority(out.priority_score)
    run.call(
        "create_support_ticket",
        account_id=account_id,
        issue_category=out.issue_category,
        resolution_code=out.resolution_code,
        escalation_level=out.escalation_level,
        ticket_priority=out.ticket_priority,
    )
    return Solution(outputs=asdict(out), decisions=decisions)


def _diagnose(run: PolicyRun, x: dict, account: dict, out: Summary, decisions: dict) -> bool:
    """SOP §5-9 for an eligible account; returns whether a node outage covers the report."""
    text = run.call(
        "analyze_issue_text", account_id=x["account_id"], issue_description=x["issue_description"]
    )
    out.issue_category = rules.issue_category(text["keyword_hits"])

    node = run.call("check_service_outages", serving_node=account["serving_node"])
    if any(
        rules.outage_applies(o, account["service_type"], x["reported_at"]) for o in node["outages"]
    ):
        out.outage_status = "outage_linked"
        out.resolution_code = "outage_pending"
        decisions["branch"] = "outage_linked"
        return True
    out.outage_status = "no_outage"

    device = run.call("get_device_status", account_id=x["account_id"])
    if not device["online"]:
        out.diagnostic_result = "device_unreachable"
        out.escalation_level = "field_technician"
        out.resolution_code = "escalated"
        decisions["branch"] = "device_unreachable"
        return False

    plan = account["plan_download_mbps"]
    line = run.call("run_line_test", device_id=device["device_id"])
    out.bandwidth_ratio = rules.bandwidth_ratio(line, plan)
    failed = rules.failed_metrics(line, plan)
    out.diagnostic_result = rules.diagnostic_result(failed)
    decisions["failed_metrics"] = failed
    if not failed:
        out.primary_fault = "none"
        out.resolution_code = "no_fault_found"
        decisions["branch"] = "no_fault_found"
        return False
    out.primary_fault = failed[0]

    catalog = run.call("get_firmware_catalog", model=device["model"])
    out.troubleshooting_action = rules.troubleshooting_action(
        out.primary_fault, device["firmware_version"], catalog["recommended_version"]
    )
    job = run.call(
        "execute_remote_action", device_id=device["device_id"], action=out.troubleshooting_action
    )
    still_failing = rules.failed_metrics(job["retest"], plan)
    out.escalation_level = rules.escalation_after_retest(still_failing)
    out.resolution_code = "resolved_remotely" if out.escalation_level == "none" else "escalated"
    decisions["still_failing"] = still_failing
    decisions["branch"] = f"remote_{out.resolution_code}"
    return False
