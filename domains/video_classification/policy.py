"""The video moderation SOP (VM-03) as code: the reference policy that derives every label."""

from __future__ import annotations

from typing import Any

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task
from sopgym.domains.video_classification.tools._common import CATEGORIES

AUTO_CLEAR_MAX_SCORE = 0.40  # every score strictly below, and ...
AUTO_CLEAR_MAX_REPORTS = 5  # ... fewer reports than this -> auto-clear
URGENT_SCORE = 0.85
URGENT_REPORTS = 25
CONTEXT_EXCEPTIONS = ("news", "educational", "documentary")
REPEAT_OFFENDER_STRIKES = 3
WARNING_BY_CATEGORY = {
    "violence": "graphic_content",
    "dangerous_acts": "graphic_content",
    "nudity": "mature_content",
    "self_harm": "sensitive_topic",
    "hate_speech": "sensitive_topic",
    "misinformation": "disputed_claims",
}


def top_category(scores: dict[str, float]) -> tuple[str, float]:
    """Highest score; a tie goes to the category listed first in the SOP."""
    best = max(CATEGORIES, key=lambda c: (scores[c], -CATEGORIES.index(c)))
    return best, scores[best]


def priority(top_score: float | None, reports: int) -> str:
    urgent = reports >= URGENT_REPORTS or (top_score is not None and top_score >= URGENT_SCORE)
    return "urgent" if urgent else "standard"


def preliminary_decision(feedback: dict[str, Any]) -> str:
    """SOP §6: the decision matrix, first matching row wins."""
    findings = feedback["findings"]
    if not findings:
        return "keep"
    worst = max(f["severity"] for f in findings)
    if worst == 4:
        return "remove"
    if feedback["minor_depicted"] and any(f["category"] == "nudity" for f in findings):
        return "remove"
    if worst == 3:
        return "keep" if feedback["context"] in CONTEXT_EXCEPTIONS else "age_restrict"
    return "keep"


def warning_for(findings: list[dict[str, Any]], decision: str) -> str:
    """SOP §8: warn on kept or restricted videos whose worst finding is severity 2 or more."""
    if decision == "remove" or not findings:
        return "none"
    worst = max(findings, key=lambda f: (f["severity"], -CATEGORIES.index(f["category"])))
    return WARNING_BY_CATEGORY[worst["category"]] if worst["severity"] >= 2 else "none"


def _finish(
    run: PolicyRun,
    video_id: str,
    *,
    route: str,
    urgency: str,
    tags: list[str],
    warning: str,
    decision: str,
    escalation_id: str | None = None,
    decisions: dict[str, Any] | None = None,
) -> Solution:
    """SOP §7-9: tags, warning, then the recorded decision."""
    if tags:
        run.call("apply_moderation_tags", video_id=video_id, tags=tags)
    if warning != "none":
        run.call("set_content_warning", video_id=video_id, warning_type=warning)
    escalation = {"escalation_id": escalation_id} if escalation_id else {}
    run.call("record_moderation_decision", video_id=video_id, action=decision, **escalation)
    return Solution(
        outputs={
            "review_route": route,
            "escalation_priority": urgency,
            "moderation_tags": ",".join(tags) or "none",
            "content_warning": warning,
            "moderation_decision": decision,
        },
        decisions=decisions or {},
    )


def solve(task: Task, run: PolicyRun) -> Solution:
    x = task.inputs
    video_id = x["video_id"]

    meta = run.call("get_review_metadata", video_id=video_id)
    known = run.call("match_known_content", content_fingerprint=meta["content_fingerprint"])
    if known["match_found"]:
        return _finish(
            run,
            video_id,
            route="known_content",
            urgency="none",
            tags=[known["matched_category"]],
            warning="none",
            decision="remove",
            decisions={"branch": "hash_match"},
        )

    reports = meta["report_count"]
    if meta["classifier_status"] == "complete":
        queue, score = top_category(meta["classifier_scores"])
        if score < AUTO_CLEAR_MAX_SCORE and reports < AUTO_CLEAR_MAX_REPORTS:
            return _finish(
                run,
                video_id,
                route="auto_clear",
                urgency="none",
                tags=[],
                warning="none",
                decision="keep",
                decisions={"branch": "auto_clear", "top_score": score},
            )
    else:
        queue, score = "general", None
    urgency = priority(score, reports)

    escalation = run.call("escalate_to_moderator", video_id=video_id, queue=queue, priority=urgency)
    feedback = run.call("get_moderator_feedback", escalation_id=escalation["escalation_id"])
    decision = preliminary_decision(feedback)
    strikes = None
    if decision == "age_restrict":
        history = run.call("get_uploader_history", uploader_id=x["uploader_id"])
        strikes = history["active_strikes"]
        if strikes >= REPEAT_OFFENDER_STRIKES:
            decision = "remove"

    findings = feedback["findings"]
    tags = sorted({f["category"] for f in findings})
    return _finish(
        run,
        video_id,
        route="human_review",
        urgency=urgency,
        tags=tags,
        warning=warning_for(findings, decision),
        decision=decision,
        escalation_id=escalation["escalation_id"],
        decisions={"branch": "human_review", "queue": queue, "active_strikes": strikes},
    )
