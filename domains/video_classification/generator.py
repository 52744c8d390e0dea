"""Seeded generator for the video moderation dataset: review metadata records (classifier
scores, reports, fingerprints), the shared hash list, moderator verdicts, uploader standing,
and the moderation requests (task inputs).

Videos are metadata records only: nothing is decoded. Scenario lists rotate so that every
SOP branch appears many times; labels are not decided here, the reference policy derives
them from what the tools return.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task
from sopgym.domains.video_classification.tools._common import CATEGORIES, LANGUAGES

TASK_COUNT = 198
ROUTES = [
    "scored",
    "scored",
    "auto",
    "scored",
    "known",
    "scored",
    "reports_only",
    "auto",
    "scored",
    "no_classifier",
    "scored",
]
VERDICTS = [
    "none_found",
    "mild",
    "moderate",
    "serious_plain",
    "serious_context",
    "severe",
    "minor_nudity",
    "serious_repeat",
    "moderate_tie",
]
NO_CLASSIFIER_REPORTS = [3, 30, 12, 25, 0, 41]
TOPICS = [
    "street race",
    "cooking stream",
    "protest footage",
    "prank",
    "workout",
    "vlog",
    "stunt compilation",
    "news clip",
    "makeup tutorial",
    "debate",
    "music video",
]
SOURCES = ["user_report", "proactive_scan", "trusted_flagger"]
HASH_LISTS = ["industry-shared-v4", "internal-confirmed"]


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    videos, known, reviews, uploaders, tasks = [], [], [], [], []
    human = 0  # counts escalated tasks, so verdicts and categories rotate over them only
    for i in range(TASK_COUNT):
        video_id = f"UV{20000000 + i * 7919:08d}"
        uploader_id = f"U-{500000 + i * 13:06d}"
        route = ROUTES[i % len(ROUTES)]
        verdict, category = "none_found", CATEGORIES[i % len(CATEGORIES)]
        if route in ("scored", "reports_only", "no_classifier"):
            verdict = VERDICTS[human % len(VERDICTS)]
            cycle, slot = divmod(human, len(VERDICTS))
            category = CATEGORIES[(cycle + slot) % len(CATEGORIES)]
            human += 1
        fingerprint = f"{rng.getrandbits(64):016x}"
        video = _video(rng, video_id, uploader_id, route, category, fingerprint, i)
        videos.append(video)
        if route == "known":
            known.append(_hash_entry(rng, fingerprint, category))
            verdict = "severe"
        reviews.append(_review(rng, video_id, verdict, category))
        uploaders.append(_uploader(rng, uploader_id, verdict))
        upload = date(2026, 3, 1) + timedelta(days=rng.randrange(120))
        tasks.append(
            Task(
                id=f"video_classification-{i:03d}",
                domain="video_classification",
                inputs={
                    "video_id": video_id,
                    "uploader_id": uploader_id,
                    "title": video["title"],
                    "upload_date": upload.isoformat(),
                    "flag_source": rng.choice(SOURCES),
                },
            )
        )
    for _ in range(15):  # hash-list entries no request matches
        known.append(_hash_entry(rng, f"{rng.getrandbits(64):016x}", rng.choice(CATEGORIES)))
    return GeneratedData(
        tables={
            "videos": pd.DataFrame(videos),
            "known_content": pd.DataFrame(known),
            "moderator_reviews": pd.DataFrame(reviews),
            "uploaders": pd.DataFrame(uploaders),
        },
        tasks=tasks,
    )


def _scores(rng: random.Random, top: str, top_score: float) -> dict[str, float]:
    """Per-category scores whose maximum is ``top_score`` on ``top`` (no ties)."""
    scores = {c: round(rng.uniform(0.01, max(0.02, top_score - 0.05)), 2) for c in CATEGORIES}
    scores[top] = top_score
    return scores


def _video(
    rng: random.Random,
    video_id: str,
    uploader_id: str,
    route: str,
    category: str,
    fingerprint: str,
    i: int,
) -> dict[str, Any]:
    status, scores = "complete", None
    if route == "auto":
        reports = rng.randrange(0, 5)
        scores = _scores(rng, category, rng.choice([0.39, round(rng.uniform(0.06, 0.38), 2)]))
    elif route == "reports_only":
        reports = rng.choice([5, rng.randrange(5, 24), rng.randrange(25, 60)])
        scores = _scores(rng, category, round(rng.uniform(0.10, 0.39), 2))
    elif route == "no_classifier":
        reports = NO_CLASSIFIER_REPORTS[i % len(NO_CLASSIFIER_REPORTS)]
        status = rng.choice(["failed", "timed_out"])
    else:  # scored or known: the classifier saw something (known content may score low)
        reports = rng.randrange(0, 60)
        top = rng.choice(
            [0.40, 0.85, *[round(rng.uniform(0.41, 0.98), 2)] * 4]
        )  # some on a boundary
        if route == "known" and i % 3 == 0:
            top = round(rng.uniform(0.05, 0.35), 2)
        scores = _scores(rng, category, top)
    return {
        "video_id": video_id,
        "uploader_id": uploader_id,
        "title": f"{rng.choice(TOPICS).title()} #{100 + i}",
        "language": rng.choice(LANGUAGES),
        "duration_s": rng.randrange(15, 1800),
        "view_count": rng.randrange(50, 2_000_000),
        "report_count": reports,
        "classifier_status": status,
        "classifier_scores": scores,
        "content_fingerprint": fingerprint,
    }


def _hash_entry(rng: random.Random, fingerprint: str, category: str) -> dict[str, Any]:
    listed = date(2024, 1, 1) + timedelta(days=rng.randrange(700))
    return {
        "fingerprint": fingerprint,
        "category": category,
        "hash_list": rng.choice(HASH_LISTS),
        "listed_on": listed.isoformat(),
    }


def _other(rng: random.Random, category: str) -> str:
    return rng.choice([c for c in CATEGORIES if c != category])


def _review(rng: random.Random, video_id: str, verdict: str, category: str) -> dict[str, Any]:
    """The moderator's verdict; only escalated videos ever have it read."""
    context, minor = "none", False
    findings: list[tuple[str, int]] = []
    if verdict == "mild":
        findings = [(category, 1)] + ([(_other(rng, category), 1)] if rng.random() < 0.4 else [])
    elif verdict == "moderate":
        findings = [(category, 2)] + ([(_other(rng, category), 1)] if rng.random() < 0.4 else [])
        minor = category != "nudity" and rng.random() < 0.3  # a minor alone changes nothing
    elif verdict == "moderate_tie":
        findings = [(category, 2), (_other(rng, category), 2)]
    elif verdict in ("serious_plain", "serious_repeat"):
        findings = [(category, 3)]
        context = rng.choice(["none", "artistic", "satire"])
    elif verdict == "serious_context":
        findings = [(category, 3)] + ([(_other(rng, category), 2)] if rng.random() < 0.4 else [])
        context = rng.choice(["news", "educational", "documentary"])
    elif verdict == "severe":
        findings = [(category, 4)] + ([(_other(rng, category), 2)] if rng.random() < 0.4 else [])
        context = rng.choice(["none", "news"])
    elif verdict == "minor_nudity":
        findings = [("nudity", rng.choice([1, 2]))]
        if category != "nudity":
            findings.append((category, 2))
        minor = True
    reviewed = date(2026, 3, 1) + timedelta(days=rng.randrange(150))
    return {
        "video_id": video_id,
        "moderator_id": f"MOD-{rng.randrange(1000, 9999)}",
        "findings": [{"category": c, "severity": s} for c, s in findings],
        "context": context,
        "minor_depicted": minor,
        "reviewed_at": reviewed.isoformat(),
    }


def _uploader(rng: random.Random, uploader_id: str, verdict: str) -> dict[str, Any]:
    strikes = {
        "serious_plain": rng.choice([0, 1, 2, 2]),
        "serious_repeat": rng.choice([3, 3, 4, 6]),
    }.get(verdict, rng.randrange(0, 6))
    return {
        "uploader_id": uploader_id,
        "account_age_days": rng.randrange(3, 4000),
        "active_strikes": strikes,
        "prior_removals": strikes + rng.randrange(0, 4),
        "verified": rng.random() < 0.2,
        "subscribers": rng.randrange(0, 900_000),
    }
