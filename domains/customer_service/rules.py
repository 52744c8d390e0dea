"""The customer-service SOP's decision rules as pure functions over tool facts.

Kept apart from the call sequence in policy.py so each threshold and table can be checked
by hand in the domain tests.
"""

from __future__ import annotations

from datetime import datetime

from sopgym.core.tools import JSON

MAX_LATENCY_MS = 60.0
MAX_JITTER_MS = 20.0
MAX_PACKET_LOSS_PCT = 1.0
MIN_BANDWIDTH_RATIO = 0.70
MAX_DAYS_PAST_DUE = 45
FAULT_ORDER = ("packet_loss", "latency", "jitter", "bandwidth")
CATEGORY_ORDER = ("no_service", "intermittent", "slow_speed")
ACTION_FOR_FAULT = {
    "packet_loss": "line_reprofile",
    "latency": "remote_reboot",
    "jitter": "remote_reboot",
    "bandwidth": "speed_profile_sync",
}
ISSUE_POINTS = {"no_service": 2, "intermittent": 1, "slow_speed": 1}
DIAGNOSTIC_POINTS = {"device_unreachable": 3, "fail": 2, "degraded": 1}


def timestamp(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def session_is_valid(session: JSON, account_id: str, reported_at: str) -> bool:
    """SOP §3: token exists, not revoked, issued to this account, not expired at the report."""
    return (
        session["token_found"]
        and not session["revoked"]
        and session["token_account_id"] == account_id
        and timestamp(reported_at) <= timestamp(session["expires_at"])
    )


def eligibility(account: JSON, billing: JSON | None) -> str:
    """SOP §4: closed and suspended first; an active account is restricted by arrears."""
    if account["account_state"] in ("closed", "suspended"):
        return account["account_state"]
    if billing is None:
        raise ValueError("an active account's billing standing is always checked")
    overdue = billing["days_past_due"] > MAX_DAYS_PAST_DUE
    return "restricted" if overdue and not billing["payment_arrangement"] else "eligible"


def issue_category(hits: dict[str, int]) -> str:
    """SOP §5: the family with most hits; ties in CATEGORY_ORDER; no hits at all -> general."""
    best = max(hits[family] for family in CATEGORY_ORDER)
    if best == 0:
        return "general"
    return next(family for family in CATEGORY_ORDER if hits[family] == best)


def outage_applies(outage: JSON, service_type: str, reported_at: str) -> bool:
    """SOP §6: affects this service type and was open at the moment of the report."""
    moment = timestamp(reported_at)
    if service_type not in outage["affected_services"]:
        return False
    if timestamp(outage["started_at"]) > moment:
        return False
    return outage["restored_at"] is None or moment < timestamp(outage["restored_at"])


def bandwidth_ratio(line: JSON, plan_download_mbps: int) -> float:
    """SOP §8: measured downstream over the plan's speed, rounded to two decimals."""
    return round(line["downstream_mbps"] / plan_download_mbps, 2)


def failed_metrics(line: JSON, plan_download_mbps: int) -> list[str]:
    """The metrics outside their thresholds, in the SOP's fault priority order."""
    failing = {
        "packet_loss": line["packet_loss_pct"] > MAX_PACKET_LOSS_PCT,
        "latency": line["latency_ms"] > MAX_LATENCY_MS,
        "jitter": line["jitter_ms"] > MAX_JITTER_MS,
        "bandwidth": bandwidth_ratio(line, plan_download_mbps) < MIN_BANDWIDTH_RATIO,
    }
    return [fault for fault in FAULT_ORDER if failing[fault]]


def diagnostic_result(failed: list[str]) -> str:
    return "pass" if not failed else "degraded" if len(failed) == 1 else "fail"


def version_tuple(version: str) -> tuple[int, ...]:
    """Dotted versions compare numerically, part by part ("5.9.2" is older than "5.12.0")."""
    return tuple(int(part) for part in version.split("."))


def troubleshooting_action(primary_fault: str, installed: str, recommended: str) -> str:
    """SOP §9: outdated firmware is upgraded first; otherwise the fault picks the action."""
    if version_tuple(installed) < version_tuple(recommended):
        return "firmware_upgrade"
    return ACTION_FOR_FAULT[primary_fault]


def escalation_after_retest(still_failing: list[str]) -> str:
    """SOP §9: resolved, tier 2, or a field visit for loss or several remaining faults."""
    if not still_failing:
        return "none"
    if "packet_loss" in still_failing or len(still_failing) >= 2:
        return "field_technician"
    return "tier2"


def priority_score(
    customer_tier: str, category: str, diagnostic: str, outage_linked: bool, escalation: str
) -> int:
    """SOP §10: additive points."""
    return (
        (2 if customer_tier == "business" else 0)
        + ISSUE_POINTS.get(category, 0)
        + DIAGNOSTIC_POINTS.get(diagnostic, 0)
        + (1 if outage_linked else 0)
        + (1 if escalation == "field_technician" else 0)
    )


def ticket_priority(score: int) -> str:
    return "P1" if score >= 6 else "P2" if score >= 4 else "P3" if score >= 2 else "P4"
