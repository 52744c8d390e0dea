"""Hand-checked cases of the video moderation SOP (VM-03) and its tools' refusals.

Each case builds a one-video dataset by hand, runs the reference policy against the real
tool implementations and compares with outcomes worked out from the SOP text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest

from sopgym.core.domain import PolicyRun
from sopgym.core.tables import Tables
from sopgym.core.tasks import Solution, Task
from sopgym.domains.video_classification import DOMAIN
from tests.domains.refusals import assert_refused

VID = "UV20007919"
UPLOADER = "U-500013"
FINGERPRINT = "00ff00ff00ff00ff"
LOW = {
    "violence": 0.1,
    "self_harm": 0.05,
    "nudity": 0.2,
    "hate_speech": 0.1,
    "dangerous_acts": 0.02,
    "misinformation": 0.3,
}


def dataset(
    scores: dict[str, float] | None = None,
    reports: int = 10,
    status: str = "complete",
    findings: Sequence[tuple[str, int]] = (),
    context: str = "none",
    minor: bool = False,
    strikes: int = 0,
    known_category: str | None = None,
) -> Tables:
    """One flagged video; by default it is escalated on its reports and nothing is found."""
    video = {
        "video_id": VID,
        "uploader_id": UPLOADER,
        "title": "Stunt Compilation #7",
        "language": "en",
        "duration_s": 300,
        "view_count": 1200,
        "report_count": reports,
        "classifier_status": status,
        "classifier_scores": scores or LOW,
        "content_fingerprint": FINGERPRINT,
    }
    known = [
        {
            "fingerprint": "abcdefabcdefabcd",
            "category": "violence",
            "hash_list": "internal",
            "listed_on": "2025-01-01",
        },
    ]
    if known_category:
        known.append({**known[0], "fingerprint": FINGERPRINT, "category": known_category})
    review = {
        "video_id": VID,
        "moderator_id": "MOD-1234",
        "findings": [{"category": c, "severity": s} for c, s in findings],
        "context": context,
        "minor_depicted": minor,
        "reviewed_at": "2026-03-02",
    }
    uploader = {
        "uploader_id": UPLOADER,
        "account_age_days": 400,
        "active_strikes": strikes,
        "prior_removals": strikes,
        "verified": False,
        "subscribers": 100,
    }
    return Tables(
        {
            "videos": pd.DataFrame([video]),
            "known_content": pd.DataFrame(known),
            "moderator_reviews": pd.DataFrame([review]),
            "uploaders": pd.DataFrame([uploader]),
        }
    )


def solve(tables: Tables) -> tuple[Solution, PolicyRun]:
    run = PolicyRun(DOMAIN.tool_map(), DOMAIN.context(tables, None))
    task = Task(
        id="video_classification-t",
        domain="video_classification",
        inputs={
            "video_id": VID,
            "uploader_id": UPLOADER,
            "title": "Stunt Compilation #7",
            "upload_date": "2026-03-01",
            "flag_source": "user_report",
        },
    )
    return DOMAIN.solve(task, run), run


def names(run: PolicyRun) -> list[str]:
    return [c.name for c in run.calls]


def call(tables: Tables, name: str, **arguments: Any) -> dict:
    return DOMAIN.tool_map()[name](arguments, DOMAIN.context(tables, None))


def outcome(solution: Solution) -> tuple[str, ...]:
    o = solution.outputs
    route, priority, tags = o["review_route"], o["escalation_priority"], o["moderation_tags"]
    return route, priority, tags, o["content_warning"], o["moderation_decision"]


# -- triage -------------------------------------------------------------------------------


def test_known_content_is_removed_without_escalation_even_with_low_scores() -> None:
    solution, run = solve(dataset(reports=0, known_category="dangerous_acts"))
    assert outcome(solution) == ("known_content", "none", "dangerous_acts", "none", "remove")
    assert names(run) == [
        "get_review_metadata",
        "match_known_content",
        "apply_moderation_tags",
        "record_moderation_decision",
    ]
    assert run.calls[2].arguments == {"video_id": VID, "tags": ["dangerous_acts"]}
    assert run.calls[3].arguments == {"video_id": VID, "action": "remove"}


def test_low_scores_and_few_reports_auto_clear() -> None:
    solution, run = solve(dataset(scores={**LOW, "misinformation": 0.39}, reports=4))
    assert outcome(solution) == ("auto_clear", "none", "none", "none", "keep")
    assert names(run) == [
        "get_review_metadata",
        "match_known_content",
        "record_moderation_decision",
    ]


@pytest.mark.parametrize(
    ("scores", "reports", "queue", "priority"),
    [
        ({**LOW, "misinformation": 0.39}, 5, "misinformation", "standard"),  # 5 reports
        ({**LOW, "nudity": 0.40}, 0, "nudity", "standard"),  # 0.40 is not below 0.40
        ({**LOW, "violence": 0.85}, 0, "violence", "urgent"),
        ({**LOW, "violence": 0.84}, 24, "violence", "standard"),
        ({**LOW, "violence": 0.5}, 25, "violence", "urgent"),
        ({**LOW, "violence": 0.6, "hate_speech": 0.6}, 1, "violence", "standard"),  # tie
        ({**LOW, "nudity": 0.6, "hate_speech": 0.6}, 1, "nudity", "standard"),
    ],
)
def test_escalation_queue_and_priority(
    scores: dict, reports: int, queue: str, priority: str
) -> None:
    solution, run = solve(dataset(scores=scores, reports=reports))
    assert solution.outputs["review_route"] == "human_review"
    assert solution.outputs["escalation_priority"] == priority
    escalate = next(c for c in run.calls if c.name == "escalate_to_moderator")
    assert escalate.arguments == {"video_id": VID, "queue": queue, "priority": priority}


@pytest.mark.parametrize(("reports", "priority"), [(24, "standard"), (25, "urgent")])
def test_unavailable_classifier_goes_to_the_general_queue(reports: int, priority: str) -> None:
    solution, run = solve(dataset(status="timed_out", reports=reports))
    assert solution.outputs["escalation_priority"] == priority
    assert run.calls[2].arguments["queue"] == "general"
    assert (
        call(dataset(status="failed"), "get_review_metadata", video_id=VID)["classifier_scores"]
        is None
    )


# -- decision matrix ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("review", "expected"),
    [
        ({}, ("none", "none", "keep")),
        ({"findings": [("violence", 1)]}, ("violence", "none", "keep")),
        ({"findings": [("violence", 2)]}, ("violence", "graphic_content", "keep")),
        (
            {"findings": [("nudity", 2), ("self_harm", 2)]},
            ("nudity,self_harm", "sensitive_topic", "keep"),
        ),  # tie: self_harm listed first
        (
            {"findings": [("misinformation", 2), ("hate_speech", 1)]},
            ("hate_speech,misinformation", "disputed_claims", "keep"),
        ),
        (
            {"findings": [("hate_speech", 3)], "context": "news"},
            ("hate_speech", "sensitive_topic", "keep"),
        ),
        (
            {"findings": [("dangerous_acts", 3)], "context": "documentary"},
            ("dangerous_acts", "graphic_content", "keep"),
        ),
        (
            {"findings": [("nudity", 3)], "context": "artistic"},
            ("nudity", "mature_content", "age_restrict"),
        ),
        (
            {"findings": [("violence", 3)], "context": "satire", "strikes": 2},
            ("violence", "graphic_content", "age_restrict"),
        ),
        ({"findings": [("violence", 3)], "strikes": 3}, ("violence", "none", "remove")),
        (
            {"findings": [("self_harm", 4), ("nudity", 1)], "context": "news"},
            ("nudity,self_harm", "none", "remove"),
        ),
        ({"findings": [("nudity", 1)], "minor": True}, ("nudity", "none", "remove")),
        (
            {"findings": [("violence", 2)], "minor": True},
            ("violence", "graphic_content", "keep"),
        ),  # a minor alone changes nothing
    ],
)
def test_decision_matrix(review: dict, expected: tuple[str, str, str]) -> None:
    solution, _ = solve(dataset(scores={**LOW, "violence": 0.7}, reports=3, **review))
    assert outcome(solution) == ("human_review", "standard", *expected)


def test_uploader_history_is_read_only_for_age_restrictions() -> None:
    _, kept = solve(dataset(findings=[("violence", 2)], strikes=5))
    assert "get_uploader_history" not in names(kept)
    _, restricted = solve(dataset(findings=[("violence", 3)], strikes=5))
    assert names(restricted) == [
        "get_review_metadata",
        "match_known_content",
        "escalate_to_moderator",
        "get_moderator_feedback",
        "get_uploader_history",
        "apply_moderation_tags",
        "record_moderation_decision",
    ]
    record = restricted.calls[-1].arguments
    assert record == {"video_id": VID, "action": "remove", "escalation_id": f"ESC-{VID}-MIS"}


def test_warning_and_tags_are_applied_before_the_decision() -> None:
    _, run = solve(dataset(findings=[("nudity", 3)], context="satire", strikes=0))
    assert names(run)[-3:] == [
        "apply_moderation_tags",
        "set_content_warning",
        "record_moderation_decision",
    ]
    assert run.calls[-2].arguments == {"video_id": VID, "warning_type": "mature_content"}
    assert run.calls[-1].arguments["action"] == "age_restrict"


# -- tool refusals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "code", "field"),
    [
        ("get_review_metadata", {"video_id": "UV99999999"}, "not_found", None),
        ("get_uploader_history", {"uploader_id": "U-999999"}, "not_found", None),
        ("get_moderator_feedback", {"escalation_id": "ESC-UV99999999-GEN"}, "not_found", None),
        (
            "escalate_to_moderator",
            {"video_id": "UV99999999", "queue": "general", "priority": "standard"},
            "not_found",
            None,
        ),
        (
            "record_moderation_decision",
            {"video_id": "UV99999999", "action": "keep"},
            "not_found",
            None,
        ),
        (  # tags must be distinct known categories
            "apply_moderation_tags",
            {"video_id": VID, "tags": ["violence", "violence"]},
            "invalid_value",
            None,
        ),
        ("apply_moderation_tags", {"video_id": VID, "tags": []}, "invalid_value", None),
        (
            "set_content_warning",
            {"video_id": VID, "warning_type": "none"},
            "invalid_value",
            "warning_type",
        ),
    ],
)
def test_refusals(tool: str, arguments: dict, code: str, field: str | None) -> None:
    assert_refused(DOMAIN, DOMAIN.context(dataset(), None), tool, arguments, code, field)


def test_fingerprint_without_a_match_is_a_fact_not_an_error() -> None:
    answer = call(dataset(), "match_known_content", content_fingerprint="1234567890abcdef")
    assert answer == {
        "match_found": False,
        "matched_category": None,
        "hash_list": None,
        "listed_on": None,
    }
