"""The content-flagging SOP as code: the reference policy that derives every label."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

DEFAULT_CAPTCHA_OUTCOME = "not_presented"
DEFAULT_CLASSIFIER_CONFIDENCE = 0.5
SUSPENSION_STRIKES = 3

ACTION_LADDER = ["allow", "warn", "remove", "ban"]
# SOP §7 decision matrix: severity tier -> trust tier -> base action.
DECISION_MATRIX = {
    "minor": {"high": "allow", "medium": "allow", "low": "warn"},
    "moderate": {"high": "warn", "medium": "warn", "low": "remove"},
    "severe": {"high": "remove", "medium": "remove", "low": "ban"},
    "critical": {"high": "remove", "medium": "ban", "low": "ban"},
}


def bot_risk(bpi: float) -> str:
    """SOP §4: below 0.30 human, 0.30-0.69 suspicious, 0.70 and above likely bot."""
    return "human" if bpi < 0.30 else "suspicious" if bpi < 0.70 else "likely_bot"


def trust_tier(score: int) -> str:
    """SOP §5: 70 and above high, 40-69 medium, below 40 low."""
    return "high" if score >= 70 else "medium" if score >= 40 else "low"


def severity_tier(csi: float) -> str:
    """SOP §6: below 3.0 minor, 3.0-5.9 moderate, 6.0-8.4 severe, 8.5 and above critical."""
    if csi < 3.0:
        return "minor"
    return "moderate" if csi < 6.0 else "severe" if csi < 8.5 else "critical"


def moderation_action(severity: str, trust: str, bot: str) -> str:
    """SOP §7: the matrix, then one step up the ladder for a likely bot (ban stays ban)."""
    action = DECISION_MATRIX[severity][trust]
    if bot == "likely_bot":
        action = ACTION_LADDER[min(ACTION_LADDER.index(action) + 1, len(ACTION_LADDER) - 1)]
    return action


def account_outcome(action: str, record: dict) -> str:
    """SOP §8: what happens to the account once the action is recorded."""
    if action == "ban":
        return "banned"
    if not record["strike_added"]:
        return "no_change"
    return "suspended" if record["active_strikes"] >= SUSPENSION_STRIKES else "strike_added"


def solve(task: Task, run: PolicyRun) -> Solution:
    x = task.inputs
    captcha = x.get("captcha_outcome", DEFAULT_CAPTCHA_OUTCOME)
    confidence = x.get("classifier_confidence", DEFAULT_CLASSIFIER_CONFIDENCE)

    bot = run.call(
        "compute_bot_probability",
        user_id=x["user_id"],
        device_fingerprint=x["device_fingerprint"],
        ip_address=x["ip_address"],
        captcha_outcome=captcha,
        posts_last_hour=x["posts_last_hour"],
        avg_action_interval_seconds=x["avg_action_interval_seconds"],
    )
    bpi = bot["bot_probability_index"]

    trust = run.call(
        "compute_user_trust_score",
        user_id=x["user_id"],
        bot_probability_index=bpi,
        account_age_days=x["account_age_days"],
        identity_verified=x["identity_verified"],
        prior_violations=x["prior_violations"],
        successful_appeals=x["successful_appeals"],
    )
    uts = trust["user_trust_score"]

    severity = run.call(
        "compute_content_severity",
        content_id=x["content_id"],
        violation_category=x["violation_category"],
        classifier_confidence=confidence,
        report_count=x["report_count"],
        audience_reach=x["audience_reach"],
        user_trust_score=uts,
    )
    csi = severity["content_severity_index"]

    levels = {
        "bot_risk": bot_risk(bpi),
        "trust_tier": trust_tier(uts),
        "severity_tier": severity_tier(csi),
    }
    action = moderation_action(levels["severity_tier"], levels["trust_tier"], levels["bot_risk"])

    record = run.call(
        "record_moderation_action",
        flag_id=x["flag_id"],
        user_id=x["user_id"],
        action=action,
        bot_probability_index=bpi,
        user_trust_score=uts,
        content_severity_index=csi,
    )

    return Solution(
        outputs={
            **levels,
            "moderation_action": action,
            "account_outcome": account_outcome(action, record),
        },
        decisions={
            "captcha_defaulted": "captcha_outcome" not in x,
            "confidence_defaulted": "classifier_confidence" not in x,
            "bot_probability_index": bpi,
            "user_trust_score": uts,
            "content_severity_index": csi,
            "matrix_action": DECISION_MATRIX[levels["severity_tier"]][levels["trust_tier"]],
            "bot_escalation": levels["bot_risk"] == "likely_bot",
            "active_strikes": record["active_strikes"],
        },
    )
