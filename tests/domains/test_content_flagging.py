"""Hand-checked cases of the content-flagging reference policy and its tools' refusals.

Every expected score below was worked out by hand from the SOP's tables and the tools'
documented point ladders, so a change to either shows up here as a concrete diff.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from sopgym.core.domain import PolicyRun
from sopgym.core.registry import load_domain
from sopgym.core.tables import Tables
from sopgym.core.tasks import Task
from sopgym.core.tools import ToolContext
from sopgym.domains.content_flagging.policy import (
    bot_risk,
    moderation_action,
    severity_tier,
    trust_tier,
)
from tests.domains.refusals import assert_refused

DOMAIN = load_domain("content_flagging")

USERS = {"U1000001": 0, "U1000002": 2, "U1000003": 0, "U1000004": 0, "U1000005": 1}


def _tables() -> Tables:
    users = [
        {"user_id": u, "handle": f"h{u}", "joined_on": "2024-01-01", "active_strikes": s}
        for u, s in USERS.items()
    ]
    devices = [
        {"device_fingerprint": "a" * 16, "linked_accounts": 1, "emulator_detected": False},
        {"device_fingerprint": "b" * 16, "linked_accounts": 12, "emulator_detected": True},
        {"device_fingerprint": "c" * 16, "linked_accounts": 3, "emulator_detected": False},
    ]
    ranges = [
        {"network_prefix": "10.20", "network_type": "residential", "country": "US"},
        {"network_prefix": "52.10", "network_type": "datacenter", "country": "NL"},
        {"network_prefix": "100.64", "network_type": "mobile", "country": "BR"},
    ]
    contents = [
        {"content_id": f"C2000000{n}", "author_user_id": f"U100000{n}", "content_type": "post"}
        for n in range(1, 6)
    ]
    flags = [
        {"flag_id": f"FLG-30000{n}", "content_id": f"C2000000{n}", "user_id": f"U100000{n}"}
        for n in range(1, 6)
    ]
    return Tables(
        {
            "users": pd.DataFrame(users),
            "devices": pd.DataFrame(devices),
            "ip_ranges": pd.DataFrame(ranges),
            "contents": pd.DataFrame(contents),
            "flags": pd.DataFrame(flags),
        }
    )


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> ToolContext:
    return DOMAIN.context(_tables(), tmp_path_factory.mktemp("files"))


def _solve(ctx: ToolContext, n: int, **inputs: Any) -> tuple[dict, PolicyRun]:
    base = {
        "flag_id": f"FLG-30000{n}",
        "content_id": f"C2000000{n}",
        "user_id": f"U100000{n}",
        "flag_source": "classifier",
    }
    run = PolicyRun(DOMAIN.tool_map(), ctx)
    task = Task(id=f"content_flagging-t{n}", domain="content_flagging", inputs={**base, **inputs})
    return DOMAIN.solve(task, run).outputs, run


# Each case: (n, inputs, expected outputs, {(call index, argument): value the policy passed}).
CASES = [
    pytest.param(
        # BPI 0.00; UTS 50+10+15 = 75; CSI: spam 20*(0.5+0.30) = 16, trust -5 -> 1.1
        1,
        {
            "device_fingerprint": "a" * 16,
            "ip_address": "10.20.1.1",
            "captcha_outcome": "passed",
            "posts_last_hour": 2,
            "avg_action_interval_seconds": 12.0,
            "account_age_days": 800,
            "identity_verified": True,
            "prior_violations": 0,
            "successful_appeals": 0,
            "violation_category": "spam",
            "classifier_confidence": 0.30,
            "report_count": 1,
            "audience_reach": 200,
        },
        {
            "bot_risk": "human",
            "trust_tier": "high",
            "severity_tier": "minor",
            "moderation_action": "allow",
            "account_outcome": "no_change",
        },
        {(3, "action"): "allow"},
        id="clean-account-minor-spam-is-allowed",
    ),
    pytest.param(
        # captcha absent -> not_presented 0.15; posts 0.30; timing 0.25; shared emulator 0.30;
        # datacenter 0.15 -> capped 1.00. UTS 50-15-30-40 -> 0. CSI: spam at the default
        # confidence 0.5 -> 20, reports +5, reach +5, low trust +10 -> 4.0 moderate.
        # Matrix moderate/low = remove, likely bot -> ban.
        2,
        {
            "flag_source": "user_report",
            "device_fingerprint": "b" * 16,
            "ip_address": "52.10.9.9",
            "posts_last_hour": 80,
            "avg_action_interval_seconds": 0.3,
            "account_age_days": 10,
            "identity_verified": False,
            "prior_violations": 3,
            "successful_appeals": 0,
            "violation_category": "spam",
            "report_count": 4,
            "audience_reach": 5000,
        },
        {
            "bot_risk": "likely_bot",
            "trust_tier": "low",
            "severity_tier": "moderate",
            "moderation_action": "ban",
            "account_outcome": "banned",
        },
        {
            (0, "captcha_outcome"): "not_presented",
            (2, "classifier_confidence"): 0.5,
            (1, "bot_probability_index"): 1.0,
            (2, "user_trust_score"): 0,
        },
        id="bot-escalation-and-missing-signal-defaults",
    ),
    pytest.param(
        # BPI .10+.10+.15+.10+.05 (unlisted range) = 0.50; UTS 50+10+5-20 = 45;
        # CSI: hate speech 55*1.2 = 66, reports +10, reach +5 -> 8.1 severe -> remove.
        # The user already has 2 active strikes; this one makes 3.
        3,
        {
            "device_fingerprint": "c" * 16,
            "ip_address": "230.1.2.3",
            "captcha_outcome": "passed_after_retry",
            "posts_last_hour": 20,
            "avg_action_interval_seconds": 1.5,
            "account_age_days": 400,
            "identity_verified": False,
            "prior_violations": 0,
            "successful_appeals": 1,
            "violation_category": "hate_speech",
            "classifier_confidence": 0.70,
            "report_count": 12,
            "audience_reach": 20000,
            "user_id": "U1000002",
            "flag_id": "FLG-300002",
            "content_id": "C20000003",
        },
        {
            "bot_risk": "suspicious",
            "trust_tier": "medium",
            "severity_tier": "severe",
            "moderation_action": "remove",
            "account_outcome": "suspended",
        },
        {},
        id="third-strike-suspends-the-account",
    ),
    pytest.param(
        # unregistered device 0.10 -> BPI 0.10; UTS 50+15+15-4 = 76;
        # CSI: harassment 40*1.1 = 44, +5 +5 -5 -> 4.9 moderate -> warn.
        4,
        {
            "device_fingerprint": "d" * 16,
            "ip_address": "10.20.3.4",
            "captcha_outcome": "passed",
            "posts_last_hour": 5,
            "avg_action_interval_seconds": 8.0,
            "account_age_days": 2000,
            "identity_verified": True,
            "prior_violations": 0,
            "successful_appeals": 0,
            "violation_category": "harassment",
            "classifier_confidence": 0.60,
            "report_count": 5,
            "audience_reach": 2000,
        },
        {
            "bot_risk": "human",
            "trust_tier": "high",
            "severity_tier": "moderate",
            "moderation_action": "warn",
            "account_outcome": "strike_added",
        },
        {(2, "user_trust_score"): 76},
        id="warning-adds-a-strike",
    ),
    pytest.param(
        # BPI .10+.05 = 0.15; UTS 50-10+10-6 = 44; CSI: violent threat 65*1.45 = 94.25 -> 94,
        # +15 +10 -> capped 10.0 critical. Matrix critical/medium = ban (no bot escalation).
        5,
        {
            "device_fingerprint": "a" * 16,
            "ip_address": "100.64.0.1",
            "captcha_outcome": "passed",
            "posts_last_hour": 15,
            "avg_action_interval_seconds": 3.0,
            "account_age_days": 200,
            "identity_verified": False,
            "prior_violations": 1,
            "successful_appeals": 2,
            "violation_category": "violent_threat",
            "classifier_confidence": 0.95,
            "report_count": 120,
            "audience_reach": 500000,
        },
        {
            "bot_risk": "human",
            "trust_tier": "medium",
            "severity_tier": "critical",
            "moderation_action": "ban",
            "account_outcome": "banned",
        },
        {},
        id="critical-content-from-a-medium-trust-account-is-a-ban",
    ),
]


@pytest.mark.parametrize(("n", "inputs", "expected", "passed"), CASES)
def test_policy_cases(
    ctx: ToolContext, n: int, inputs: dict[str, Any], expected: dict, passed: dict
) -> None:
    outputs, run = _solve(ctx, n, **inputs)
    assert outputs == expected
    assert [c.name for c in run.calls] == [t.name for t in DOMAIN.tools]
    assert {(i, k): run.calls[i].arguments[k] for i, k in passed} == passed


@pytest.mark.parametrize(
    ("severity", "expected"),
    [
        ("minor", ["allow", "allow", "warn"]),
        ("moderate", ["warn", "warn", "remove"]),
        ("severe", ["remove", "remove", "ban"]),
        ("critical", ["remove", "ban", "ban"]),
    ],
)
def test_decision_matrix(severity: str, expected: list[str]) -> None:
    tiers = ["high", "medium", "low"]
    assert [moderation_action(severity, t, "human") for t in tiers] == expected
    assert [moderation_action(severity, t, "suspicious") for t in tiers] == expected
    ladder = ["allow", "warn", "remove", "ban", "ban"]
    escalated = [ladder[ladder.index(a) + 1] for a in expected]
    assert [moderation_action(severity, t, "likely_bot") for t in tiers] == escalated


def test_tier_boundaries() -> None:
    assert [bot_risk(v) for v in (0.29, 0.30, 0.69, 0.70)] == [
        "human",
        "suspicious",
        "suspicious",
        "likely_bot",
    ]
    assert [trust_tier(v) for v in (39, 40, 69, 70)] == ["low", "medium", "medium", "high"]
    assert [severity_tier(v) for v in (2.9, 3.0, 5.9, 6.0, 8.4, 8.5)] == [
        "minor",
        "moderate",
        "moderate",
        "severe",
        "severe",
        "critical",
    ]


BOT_ARGS = {
    "user_id": "U1000001",
    "device_fingerprint": "a" * 16,
    "ip_address": "10.20.1.1",
    "captcha_outcome": "passed",
    "posts_last_hour": 1,
    "avg_action_interval_seconds": 9.0,
}
TRUST_ARGS = {
    "user_id": "U1000001",
    "bot_probability_index": 0.2,
    "account_age_days": 5,
    "identity_verified": False,
    "prior_violations": 0,
    "successful_appeals": 0,
}
SEVERITY_ARGS = {
    "content_id": "C20000001",
    "violation_category": "spam",
    "classifier_confidence": 0.5,
    "report_count": 0,
    "audience_reach": 0,
    "user_trust_score": 50,
}
RECORD_ARGS = {
    "flag_id": "FLG-300001",
    "user_id": "U1000001",
    "action": "warn",
    "bot_probability_index": 0.1,
    "user_trust_score": 60,
    "content_severity_index": 4.0,
}


@pytest.mark.parametrize(
    ("tool", "arguments", "code", "field"),
    [
        (
            "compute_bot_probability",
            {**BOT_ARGS, "user_id": "U9999999"},
            "not_found",
            "user_id",
        ),
        (
            "compute_user_trust_score",
            {**TRUST_ARGS, "user_id": "U9999999"},
            "not_found",
            "user_id",
        ),
        (
            "compute_content_severity",
            {**SEVERITY_ARGS, "content_id": "C29999999"},
            "not_found",
            "content_id",
        ),
        (
            "record_moderation_action",
            {**RECORD_ARGS, "flag_id": "FLG-999999"},
            "not_found",
            "flag_id",
        ),
        (
            "compute_bot_probability",
            {**BOT_ARGS, "ip_address": "10.20.300.1"},
            "invalid_value",
            "ip_address",
        ),
        (  # the flag was raised on another user
            "record_moderation_action",
            {**RECORD_ARGS, "user_id": "U1000002"},
            "invalid_value",
            "user_id",
        ),
        (
            "compute_user_trust_score",
            {**TRUST_ARGS, "bot_probability_index": 1.5},
            "invalid_value",
            "bot_probability_index",
        ),
    ],
)
def test_refusals(ctx: ToolContext, tool: str, arguments: dict, code: str, field: str) -> None:
    assert_refused(DOMAIN, ctx, tool, arguments, code, field)


def test_allow_adds_no_strike(ctx: ToolContext) -> None:
    result = DOMAIN.tool_map()["record_moderation_action"](
        {**RECORD_ARGS, "flag_id": "FLG-300002", "user_id": "U1000002", "action": "allow"}, ctx
    )
    assert (result["strike_added"], result["active_strikes"]) == (False, 2)
    assert result["content_visibility"] == "visible"
