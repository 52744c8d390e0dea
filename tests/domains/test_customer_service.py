"""Hand-checked cases of the customer-service SOP, one small world per branch."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from sopgym.core.domain import PolicyRun
from sopgym.core.registry import load_domain
from sopgym.core.tables import Tables
from sopgym.core.tasks import Task
from sopgym.domains.customer_service import rules
from tests.domains.refusals import assert_refused

DOMAIN = load_domain("customer_service")
ACCOUNT, OTHER = "AC-3100000", "AC-3104133"
TOKEN, DEVICE, NODE, BILLING = "ST-00000000000A", "DV-00000000AA", "NE-FBR-1000", "BA-40000000"
REPORTED = "2026-03-10T12:00:00Z"
GOOD_LINE = {
    "latency_ms": 20.0,
    "jitter_ms": 4.0,
    "packet_loss_pct": 0.1,
    "downstream_mbps": 450.0,
    "upstream_mbps": 100.0,
}
NOISY_TEXT = "The connection drops every few minutes. It has been on and off all week."


def world(
    session: dict | None = None,
    account: dict | None = None,
    billing: dict | None = None,
    outages: list[dict] | None = None,
    device: dict | None = None,
    line: dict | None = None,
    after: dict | None = None,
    effective_action: str = "none",
    recommended: str = "5.12.3",
) -> Tables:
    """One fiber account on a 500 Mb/s plan, healthy unless a part is overridden."""
    device_row = {
        "account_id": ACCOUNT,
        "device_id": DEVICE,
        "model": "ONT-420",
        "firmware_version": "5.12.3",
        "online": True,
        "last_seen": REPORTED,
        "uptime_hours": 10,
        **(device or {}),
    }
    before = {**GOOD_LINE, **(line or {})}
    retest = {**GOOD_LINE, **(after or {})}
    return Tables(
        {
            "sessions": pd.DataFrame(
                [
                    {
                        "session_token": TOKEN,
                        "token_account_id": ACCOUNT,
                        "issued_at": "2026-03-10T08:00:00Z",
                        "expires_at": "2026-03-11T08:00:00Z",
                        "revoked": False,
                        **(session or {}),
                    }
                ]
            ),
            "accounts": pd.DataFrame(
                [
                    {
                        "account_id": ACCOUNT,
                        "account_state": "active",
                        "customer_tier": "residential",
                        "service_type": "fiber",
                        "plan_name": "Fiber 500",
                        "plan_download_mbps": 500,
                        "serving_node": NODE,
                        "billing_account_id": BILLING,
                        "state_reason": None,
                        **(account or {}),
                    }
                ]
            ),
            "billing": pd.DataFrame(
                [
                    {
                        "billing_account_id": BILLING,
                        "balance_due": 0.0,
                        "days_past_due": 0,
                        "payment_arrangement": False,
                        "autopay_enabled": True,
                        "last_payment_date": "2026-02-25",
                        **(billing or {}),
                    }
                ]
            ),
            "nodes": pd.DataFrame([{"serving_node": NODE, "region": "NE", "cabinet_type": "fbr"}]),
            "outages": pd.DataFrame(
                [
                    {"outage_id": f"OUT-{n:05d}", "serving_node": NODE, "cause": "fiber cut", **o}
                    for n, o in enumerate(outages or [])
                ],
                columns=[
                    "outage_id",
                    "serving_node",
                    "cause",
                    "affected_services",
                    "started_at",
                    "restored_at",
                ],
            ),
            "devices": pd.DataFrame([device_row]),
            "line_tests": pd.DataFrame(
                [
                    {
                        "device_id": DEVICE,
                        "online": device_row["online"],
                        **before,
                        "effective_action": effective_action,
                        **{f"after_{k}": v for k, v in retest.items()},
                    }
                ]
            ),
            "firmware": pd.DataFrame(
                [
                    {
                        "model": "ONT-420",
                        "recommended_version": recommended,
                        "minimum_supported_version": "4.0.0",
                        "release_date": "2025-06-15",
                    }
                ]
            ),
        }
    )


def solve(tables: Tables, text: str = NOISY_TEXT) -> tuple[dict[str, Any], list[str]]:
    task = Task(
        id="customer_service-t",
        domain="customer_service",
        inputs={
            "account_id": ACCOUNT,
            "session_token": TOKEN,
            "reported_at": REPORTED,
            "issue_description": text,
            "contact_channel": "email",
        },
    )
    run = PolicyRun(DOMAIN.tool_map(), DOMAIN.context(tables, None))
    solution = DOMAIN.solve(task, run)
    return solution.outputs, [call.name for call in run.calls]


def call(tables: Tables, tool: str, **arguments: Any) -> dict:
    return DOMAIN.tool_map()[tool](arguments, DOMAIN.context(tables, None))


@pytest.mark.parametrize(
    "session",
    [
        {"session_token": "ST-00000000000B"},  # the request's token does not exist
        {"revoked": True},
        {"token_account_id": OTHER},
        {"expires_at": "2026-03-10T11:59:59Z"},
    ],
)
def test_failed_authentication_stops_everything(session: dict) -> None:
    outputs, calls = solve(world(session=session))
    assert calls == ["validate_session"]
    assert outputs == {
        "auth_status": "failed",
        "account_eligibility": "not_checked",
        "issue_category": "not_classified",
        "outage_status": "not_checked",
        "diagnostic_result": "not_run",
        "primary_fault": "not_applicable",
        "troubleshooting_action": "none",
        "escalation_level": "none",
        "resolution_code": "authentication_failed",
        "ticket_priority": "none",
        "priority_score": 0,
        "bandwidth_ratio": None,
    }


def test_token_expiring_at_the_report_moment_is_still_valid() -> None:
    outputs, _ = solve(world(session={"expires_at": REPORTED}))
    assert outputs["auth_status"] == "verified"


@pytest.mark.parametrize(
    ("account", "billing", "eligibility", "escalation", "billing_checked"),
    [
        ({"account_state": "closed"}, None, "closed", "none", False),
        ({"account_state": "suspended"}, None, "suspended", "billing", False),
        ({}, {"days_past_due": 46}, "restricted", "billing", True),
    ],
)
def test_ineligible_accounts_get_no_diagnosis(
    account: dict, billing: dict | None, eligibility: str, escalation: str, billing_checked: bool
) -> None:
    outputs, calls = solve(world(account={**account, "customer_tier": "business"}, billing=billing))
    expected_calls = ["validate_session", "get_account"]
    expected_calls += ["check_billing_standing"] * billing_checked + ["create_support_ticket"]
    assert calls == expected_calls
    assert outputs["account_eligibility"] == eligibility
    assert outputs["escalation_level"] == escalation
    assert outputs["resolution_code"] == "account_action_required"
    assert (outputs["issue_category"], outputs["diagnostic_result"]) == (
        "not_classified",
        "not_run",
    )
    assert (outputs["priority_score"], outputs["ticket_priority"]) == (2, "P3")  # business only


@pytest.mark.parametrize(
    "billing", [{"days_past_due": 45}, {"days_past_due": 90, "payment_arrangement": True}]
)
def test_arrears_at_the_limit_or_under_arrangement_stay_eligible(billing: dict) -> None:
    outputs, _ = solve(world(billing=billing))
    assert outputs["account_eligibility"] == "eligible"


@pytest.mark.parametrize(
    ("hits", "category"),
    [
        ({"no_service": 0, "intermittent": 0, "slow_speed": 0}, "general"),
        ({"no_service": 1, "intermittent": 1, "slow_speed": 1}, "no_service"),
        ({"no_service": 0, "intermittent": 1, "slow_speed": 1}, "intermittent"),
        ({"no_service": 1, "intermittent": 0, "slow_speed": 2}, "slow_speed"),
    ],
)
def test_issue_category_most_hits_then_tie_order(hits: dict, category: str) -> None:
    assert rules.issue_category(hits) == category


def test_issue_text_keywords_are_counted_as_whole_words() -> None:
    hits = call(
        world(),
        "analyze_issue_text",
        account_id=ACCOUNT,
        issue_description="Streaming keeps buffering, pages are slow, slowly flagged as offline.",
    )["keyword_hits"]
    assert hits == {"no_service": 1, "intermittent": 0, "slow_speed": 2}


@pytest.mark.parametrize(
    ("outage", "linked"),
    [
        ({"affected_services": ["fiber"], "started_at": "2026-03-10T09:00:00Z"}, True),
        (
            {
                "affected_services": ["cable", "fiber"],
                "started_at": "2026-03-10T09:00:00Z",
                "restored_at": "2026-03-10T15:00:00Z",
            },
            True,
        ),
        # restored exactly at the report: no longer covering it
        (
            {
                "affected_services": ["fiber"],
                "started_at": "2026-03-10T09:00:00Z",
                "restored_at": REPORTED,
            },
            False,
        ),
        ({"affected_services": ["cable", "dsl"], "started_at": "2026-03-10T09:00:00Z"}, False),
        ({"affected_services": ["fiber"], "started_at": "2026-03-10T14:00:00Z"}, False),
    ],
)
def test_outage_covers_the_report_only_for_its_services_and_window(
    outage: dict, linked: bool
) -> None:
    outputs, calls = solve(world(outages=[{"restored_at": None, **outage}]))
    if linked:
        assert outputs["outage_status"] == "outage_linked"
        assert outputs["resolution_code"] == "outage_pending"
        assert "get_device_status" not in calls
        # intermittent (1) + outage (1)
        assert (outputs["priority_score"], outputs["ticket_priority"]) == (2, "P3")
    else:
        assert outputs["outage_status"] == "no_outage"
        assert "run_line_test" in calls


def test_offline_device_goes_to_a_field_technician() -> None:
    outputs, calls = solve(
        world(account={"customer_tier": "business"}, device={"online": False}),
        text="There is no internet at all since this morning.",
    )
    assert "run_line_test" not in calls
    assert outputs["diagnostic_result"] == "device_unreachable"
    assert outputs["primary_fault"] == "not_applicable"
    assert (outputs["escalation_level"], outputs["resolution_code"]) == (
        "field_technician",
        "escalated",
    )
    assert (outputs["priority_score"], outputs["ticket_priority"]) == (8, "P1")  # 2+2+3+1
    assert outputs["bandwidth_ratio"] is None


def test_passing_line_is_no_fault_found() -> None:
    outputs, calls = solve(world(line={"downstream_mbps": 352.0}))  # ratio 0.704 -> 0.70
    assert calls[-2:] == ["run_line_test", "create_support_ticket"]
    assert outputs["diagnostic_result"] == "pass"
    assert outputs["primary_fault"] == "none"
    assert outputs["resolution_code"] == "no_fault_found"
    assert outputs["bandwidth_ratio"] == 0.7
    assert (outputs["priority_score"], outputs["ticket_priority"]) == (1, "P4")


def test_bandwidth_below_ratio_with_current_firmware_syncs_the_speed_profile() -> None:
    outputs, _ = solve(
        world(
            line={"downstream_mbps": 200.0},
            effective_action="speed_profile_sync",
            recommended="5.12.3",
        )
    )
    assert (outputs["diagnostic_result"], outputs["primary_fault"]) == ("degraded", "bandwidth")
    assert outputs["troubleshooting_action"] == "speed_profile_sync"
    assert (outputs["resolution_code"], outputs["escalation_level"]) == (
        "resolved_remotely",
        "none",
    )
    assert outputs["bandwidth_ratio"] == 0.4


@pytest.mark.parametrize(
    ("installed", "recommended", "action"),
    [
        ("5.9.14", "5.12.3", "firmware_upgrade"),  # older, though it sorts later as text
        ("5.12.2", "5.12.3", "firmware_upgrade"),
        ("5.12.10", "5.12.3", "remote_reboot"),  # newer, though it sorts earlier as text
        ("5.12.3", "5.12.3", "remote_reboot"),
    ],
)
def test_firmware_is_compared_numerically(installed: str, recommended: str, action: str) -> None:
    outputs, _ = solve(
        world(
            device={"firmware_version": installed},
            line={"latency_ms": 90.0},
            recommended=recommended,
            effective_action=action,
        )
    )
    assert outputs["troubleshooting_action"] == action
    assert outputs["resolution_code"] == "resolved_remotely"


@pytest.mark.parametrize(
    ("after", "effective", "escalation"),
    [
        ({"jitter_ms": 30.0}, "line_reprofile", "tier2"),
        ({"packet_loss_pct": 2.0}, "line_reprofile", "field_technician"),
        ({"latency_ms": 80.0, "jitter_ms": 30.0}, "line_reprofile", "field_technician"),
        # the action does not touch the cause: the retest repeats the first test
        ({}, "none", "field_technician"),
    ],
)
def test_retest_decides_the_escalation(after: dict, effective: str, escalation: str) -> None:
    outputs, calls = solve(
        world(
            line={"packet_loss_pct": 3.0, "jitter_ms": 25.0},
            after=after,
            effective_action=effective,
        )
    )
    assert calls[-3:] == ["get_firmware_catalog", "execute_remote_action", "create_support_ticket"]
    assert (outputs["diagnostic_result"], outputs["primary_fault"]) == ("fail", "packet_loss")
    assert outputs["troubleshooting_action"] == "line_reprofile"
    assert (outputs["escalation_level"], outputs["resolution_code"]) == (escalation, "escalated")
    field_point = 1 if escalation == "field_technician" else 0
    assert outputs["priority_score"] == 1 + 2 + field_point


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("get_account", {"account_id": "AC-9999999"}, "not_found"),
        ("check_billing_standing", {"billing_account_id": "BA-99999999"}, "not_found"),
        ("check_service_outages", {"serving_node": "SW-DSL-9999"}, "not_found"),
        ("get_device_status", {"account_id": "AC-9999999"}, "not_found"),
        ("run_line_test", {"device_id": "DV-FFFFFFFFFF"}, "not_found"),
        ("get_firmware_catalog", {"model": "XYZ-999"}, "not_found"),
        (
            "create_support_ticket",
            {
                "account_id": "AC-9999999",
                "issue_category": "general",
                "resolution_code": "no_fault_found",
                "escalation_level": "none",
                "ticket_priority": "P4",
            },
            "not_found",
        ),
    ],
)
def test_lookups_of_unknown_records_are_refused(tool: str, arguments: dict, code: str) -> None:
    assert_refused(DOMAIN, DOMAIN.context(world(), None), tool, arguments, code)


@pytest.mark.parametrize(
    ("tool", "extra"),
    [("run_line_test", {}), ("execute_remote_action", {"action": "remote_reboot"})],
)
def test_an_offline_device_cannot_be_reached(tool: str, extra: dict) -> None:
    ctx = DOMAIN.context(world(device={"online": False}), None)
    arguments = {"device_id": DEVICE, **extra}
    assert_refused(DOMAIN, ctx, tool, arguments, "invalid_value", "device_id")


def test_unknown_session_token_is_a_fact_not_an_error() -> None:
    result = call(world(), "validate_session", account_id=ACCOUNT, session_token="ST-0000000000FF")
    assert result == {
        "token_found": False,
        "token_account_id": None,
        "issued_at": None,
        "expires_at": None,
        "revoked": None,
    }
