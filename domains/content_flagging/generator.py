"""Seeded generator for the content-flagging dataset and task inputs.

Each task is one flag raised on one piece of content. Bot, trust and severity profiles rotate
independently so that every cell of the SOP's decision matrix, the bot escalation and both
missing-signal defaults occur several times. The generator only draws signals; the labels
are derived by the reference policy from what the tools compute.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path
from typing import NotRequired, TypedDict

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

TASK_COUNT = 226
TODAY = date(2026, 3, 2)
BOT_PROFILES = ["human", "suspicious", "human", "likely_bot", "human"]
TRUST_PROFILES = ["high", "medium", "low"]
SEVERITY_PROFILES = ["minor", "moderate", "severe", "critical"]
CATEGORIES = {
    "minor": ["spam", "misinformation"],
    "moderate": ["harassment", "adult_content", "misinformation"],
    "severe": ["hate_speech", "harassment"],
    "critical": ["violent_threat", "hate_speech"],
}
NETWORKS = [  # (network type, country) of the listed /16 ranges
    ("residential", "US"),
    ("residential", "DE"),
    ("mobile", "BR"),
    ("mobile", "IN"),
    ("residential", "JP"),
    ("datacenter", "NL"),
    ("datacenter", "US"),
    ("datacenter", "SG"),
]
HANDLE_WORDS = ["river", "pixel", "maple", "orbit", "nova", "ember", "cobalt", "lumen", "fern"]
CONTENT_TYPES = ["post", "comment", "image", "video", "review"]


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    ranges = _ip_ranges(rng)
    by_type: dict[str, list[str]] = {}
    for r in ranges:
        by_type.setdefault(r["network_type"], []).append(r["network_prefix"])
    users, devices, contents, flags, tasks = [], [], [], [], []
    for i in range(TASK_COUNT):
        bot = BOT_PROFILES[i % len(BOT_PROFILES)]
        trust = TRUST_PROFILES[(i // 5) % len(TRUST_PROFILES)]
        severity = SEVERITY_PROFILES[(i // 15) % len(SEVERITY_PROFILES)]
        user_id, content_id, flag_id = f"U{1000000 + i}", f"C{20000000 + i}", f"FLG-{300000 + i}"
        fingerprint = f"{rng.getrandbits(64):016x}"
        history = _history(rng, trust)
        users.append(
            {
                "user_id": user_id,
                "handle": f"{rng.choice(HANDLE_WORDS)}_{rng.choice(HANDLE_WORDS)}{i}",
                "joined_on": (TODAY - timedelta(days=history["account_age_days"])).isoformat(),
                "active_strikes": rng.choice([0, 0, 0, 1, 1, 2]),
                "account_state": "active",
            }
        )
        signals = _bot_signals(rng, bot, i, by_type)
        device = signals.pop("device")
        if device is not None:
            devices.append({"device_fingerprint": fingerprint, **device})
        contents.append(
            {
                "content_id": content_id,
                "author_user_id": user_id,
                "content_type": rng.choice(CONTENT_TYPES),
                "posted_at": (TODAY - timedelta(hours=rng.randrange(1, 240))).isoformat(),
            }
        )
        source = "user_report" if i % 7 == 3 else "classifier"
        flags.append(
            {
                "flag_id": flag_id,
                "content_id": content_id,
                "user_id": user_id,
                "flag_source": source,
            }
        )
        inputs = {
            "flag_id": flag_id,
            "content_id": content_id,
            "user_id": user_id,
            "flag_source": source,
            "device_fingerprint": fingerprint,
            **signals,
            **history,
            **_content_signals(rng, severity, source),
        }
        if i % 9 == 4:  # the captcha service had no record for this session
            del inputs["captcha_outcome"]
        tasks.append(Task(id=f"content_flagging-{i:03d}", domain="content_flagging", inputs=inputs))
    return GeneratedData(
        tables={
            "users": pd.DataFrame(users),
            "devices": pd.DataFrame(devices),
            "ip_ranges": pd.DataFrame(ranges),
            "contents": pd.DataFrame(contents),
            "flags": pd.DataFrame(flags),
        },
        tasks=tasks,
    )


def _ip_ranges(rng: random.Random) -> list[dict]:
    """Listed /16 ranges; the generator also draws addresses from unlisted ones."""
    prefixes = rng.sample(range(11, 223), 4 * len(NETWORKS))
    return [
        {
            "network_prefix": f"{first}.{rng.randrange(256)}",
            "network_type": NETWORKS[j % len(NETWORKS)][0],
            "country": NETWORKS[j % len(NETWORKS)][1],
        }
        for j, first in enumerate(prefixes)
    ]


def _address(rng: random.Random, prefix: str) -> str:
    return f"{prefix}.{rng.randrange(256)}.{rng.randrange(1, 255)}"


class Device(TypedDict):
    """What the device-fingerprinting service knows about an account's device."""

    linked_accounts: int
    emulator_detected: bool
    first_seen: NotRequired[str]


def _bot_signals(rng: random.Random, profile: str, i: int, by_type: dict[str, list[str]]) -> dict:
    """Behaviour, device and network draws typical of a person, a suspicious or a bot account."""
    device: Device | None
    if profile == "human":
        captcha = rng.choice(["passed", "passed", "passed_after_retry"])
        posts, interval = rng.randrange(0, 9), round(rng.uniform(6, 45), 1)
        device = {"linked_accounts": 1, "emulator_detected": False}
        network = rng.choice(["residential", "mobile"])
    elif profile == "suspicious":
        captcha = rng.choice(["passed_after_retry", "passed", "failed"])
        posts, interval = rng.randrange(12, 45), round(rng.uniform(0.8, 4.5), 1)
        device = {"linked_accounts": rng.randrange(2, 5), "emulator_detected": False}
        network = rng.choice(["residential", "mobile", "unknown"])
    else:
        captcha = rng.choice(["failed", "failed", "passed_after_retry"])
        posts, interval = rng.randrange(35, 160), round(rng.uniform(0.1, 1.6), 1)
        device = {
            "linked_accounts": rng.randrange(5, 30),
            "emulator_detected": rng.random() < 0.5,
        }
        network = rng.choice(["datacenter", "datacenter", "unknown"])
    if i % 10 == 6:  # device never seen by the fingerprinting service
        device = None
    if device is not None:
        device["first_seen"] = (TODAY - timedelta(days=rng.randrange(1, 900))).isoformat()
    if network == "unknown":
        address = f"{rng.randrange(223, 240)}.{rng.randrange(256)}.{rng.randrange(256)}.7"
    else:
        address = _address(rng, rng.choice(by_type[network]))
    return {
        "device": device,
        "ip_address": address,
        "captcha_outcome": captcha,
        "posts_last_hour": posts,
        "avg_action_interval_seconds": interval,
    }


def _history(rng: random.Random, profile: str) -> dict:
    if profile == "high":
        age, verified = rng.randrange(400, 3000), True
        violations, appeals = 0, rng.choice([0, 1, 2])
    elif profile == "medium":
        age, verified = rng.randrange(120, 1000), rng.random() < 0.3
        violations, appeals = rng.choice([0, 0, 1]), rng.choice([0, 1])
    else:
        age, verified = rng.randrange(1, 45), False
        violations, appeals = rng.randrange(1, 6), 0
    return {
        "account_age_days": age,
        "identity_verified": verified,
        "prior_violations": violations,
        "successful_appeals": appeals,
    }


def _content_signals(rng: random.Random, profile: str, source: str) -> dict:
    low, high = {"minor": (0.1, 0.5), "moderate": (0.4, 0.8), "severe": (0.5, 0.8)}.get(
        profile, (0.85, 0.99)
    )
    reports = {
        "minor": (0, 3),
        "moderate": (3, 25),
        "severe": (10, 50),
        "critical": (50, 400),
    }[profile]
    reach = {
        "minor": (10, 1_000),
        "moderate": (500, 60_000),
        "severe": (5_000, 100_000),
        "critical": (100_000, 2_000_000),
    }[profile]
    signals = {
        "violation_category": rng.choice(CATEGORIES[profile]),
        "report_count": rng.randrange(*reports),
        "audience_reach": rng.randrange(*reach),
    }
    if source == "classifier":
        signals["classifier_confidence"] = round(rng.uniform(low, high), 2)
    return signals
