"""Seeded generator for the customer-service dataset and task inputs.

Each stage of the SOP has its own rotation of scenarios, advanced only by the tasks that
reach that stage (an outage scenario matters only for an eligible account), so every branch
is exercised several times. Scenarios shape the data; the labels are derived by the policy.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

if TYPE_CHECKING:  # pandas loads when data is generated, not with the pack
    import pandas as pd

TASK_COUNT = 208
REGIONS = ["NE", "SE", "MW", "SW", "PN"]
NODE_KIND = {"fiber": "FBR", "cable": "CAB", "dsl": "DSL"}
PLANS = {
    "fiber": [("Fiber 300", 300), ("Fiber 500", 500), ("Fiber 1000", 1000)],
    "cable": [("Cable 200", 200), ("Cable 400", 400), ("Cable 800", 800)],
    "dsl": [("DSL 25", 25), ("DSL 50", 50), ("DSL 100", 100)],
}
MODELS = {
    "fiber": [("ONT-420", (5, 12, 3)), ("ONT-560", (6, 10, 4))],
    "cable": [("CGM-3000", (3, 11, 2)), ("CGM-4100", (4, 14, 6))],
    "dsl": [("VDX-210", (2, 10, 5)), ("VDX-350", (7, 13, 1))],
}
RETIRED_MODELS = [("ONT-300", (4, 2, 9)), ("CGM-2000", (2, 20, 0))]
CAUSES = ["fiber cut", "power failure", "line card failure", "storm damage", "planned maintenance"]
FRAGMENTS = {
    "no_service": [
        "There is no internet at all since this morning.",
        "The modem shows no signal on its status page.",
        "Our laptops cannot connect to anything.",
        "The whole line is completely down.",
        "The router says offline and nothing loads.",
    ],
    "intermittent": [
        "The connection drops every few minutes.",
        "The Wi-Fi disconnects several times an hour.",
        "It has been on and off all week.",
        "Video calls keep freezing because the link is unstable in the evenings.",
        "The service is intermittent after rain.",
    ],
    "slow_speed": [
        "Pages are very slow to load.",
        "Streaming keeps buffering.",
        "Online games lag badly.",
        "Downloads take forever.",
        "Everything feels sluggish after 6pm.",
    ],
    "neutral": [
        "I work from home and need this fixed.",
        "This started after the storm on Tuesday.",
        "Please look into it.",
        "The router lights look normal to me.",
        "We already restarted the router once.",
        "I also have a question about the equipment fee on my bill.",
    ],
}
# (no_service, intermittent, slow_speed) fragment counts, ties and empty texts included
ISSUE_PROFILES = [
    (1, 0, 0),
    (0, 1, 0),
    (0, 0, 1),
    (2, 1, 0),
    (1, 2, 0),
    (0, 1, 1),
    (1, 0, 1),
    (0, 0, 0),
    (0, 2, 1),
    (1, 1, 1),
    (0, 1, 2),
    (2, 0, 1),
    (0, 0, 0),
]
AUTH = ["ok"] * 3 + ["unknown_token"] + ["ok"] * 4 + ["revoked"] + ["ok"] * 4
AUTH += ["other_account"] + ["ok"] * 4 + ["expired", "ok"]
STANDING = ["current", "current", "current", "closed", "current", "arrangement"]
STANDING += ["current", "suspended", "arrears_below", "current", "restricted", "current"]
OUTAGES = ["none", "open_match", "none", "other_service", "none", "restored_before"]
OUTAGES += ["none", "window_match", "none", "planned_later", "none", "old_only"]
DEVICES = ["online"] * 8 + ["offline"]
FAULTS: list[tuple[str, ...]] = [
    (),
    ("latency",),
    ("packet_loss",),
    ("jitter",),
    ("bandwidth",),
    ("latency", "bandwidth"),
    (),
    ("packet_loss", "jitter"),
    ("bandwidth",),
    ("jitter", "bandwidth"),
    ("latency",),
    ("packet_loss", "latency", "bandwidth"),
]
FIRMWARE = ["current", "outdated", "current_newer", "current", "outdated_lexical"]
AFTERMATH = ["fixed", "one_left", "fixed", "loss_left", "fixed", "two_left", "no_effect"]
FAULT_ORDER = ("packet_loss", "latency", "jitter", "bandwidth")
# the remote action that removes a fault's root cause (device behaviour, not the SOP)
CURE = {
    "packet_loss": "line_reprofile",
    "latency": "remote_reboot",
    "jitter": "remote_reboot",
    "bandwidth": "speed_profile_sync",
}
GOOD = {"latency_ms": (8, 45), "jitter_ms": (0.5, 12), "packet_loss_pct": (0.0, 0.6)}
BAD = {"latency_ms": (75, 220), "jitter_ms": (26, 70), "packet_loss_pct": (1.6, 9.0)}
METRIC = {"latency": "latency_ms", "jitter": "jitter_ms", "packet_loss": "packet_loss_pct"}


Scenario = TypeVar("Scenario")


class Rotation(Generic[Scenario]):
    """A scenario list consumed in order, one step per task that reaches the stage."""

    def __init__(self, items: Sequence[Scenario]) -> None:
        self._items, self._next = items, count()

    def take(self) -> Scenario:
        return self._items[next(self._next) % len(self._items)]


@dataclass
class Dataset:
    tables: dict[str, list[dict]] = field(
        default_factory=lambda: {
            name: []
            for name in (
                "sessions",
                "accounts",
                "billing",
                "nodes",
                "outages",
                "devices",
                "line_tests",
            )
        }
    )
    outage_ids: count = field(default_factory=lambda: count(1))


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    data = Dataset()
    standings, outages, devices = Rotation(STANDING), Rotation(OUTAGES), Rotation(DEVICES)
    fault_sets, firmwares, aftermaths = Rotation(FAULTS), Rotation(FIRMWARE), Rotation(AFTERMATH)
    account_ids = [f"AC-{3100000 + i * 4133:07d}" for i in range(TASK_COUNT)]
    tokens: set[str] = set()
    tasks = []
    for i, account_id in enumerate(account_ids):
        reported = datetime(2026, 2, 2, 6) + timedelta(minutes=rng.randrange(200 * 24 * 60))
        auth = AUTH[i % len(AUTH)]
        # a stage's rotation advances only when the SOP would reach it; other tasks draw noise
        standing = standings.take() if auth == "ok" else rng.choice(STANDING)
        eligible = auth == "ok" and standing in ("current", "arrangement", "arrears_below")
        outage = outages.take() if eligible else rng.choice(OUTAGES)
        reaches_device = eligible and outage not in ("open_match", "window_match")
        device = devices.take() if reaches_device else rng.choice(DEVICES)
        tested = reaches_device and device == "online"
        faults = fault_sets.take() if tested else rng.choice(FAULTS)
        troubleshoot = tested and bool(faults)
        firmware = firmwares.take() if troubleshoot else rng.choice(FIRMWARE)
        aftermath = aftermaths.take() if troubleshoot else rng.choice(AFTERMATH)

        service = rng.choice(list(PLANS))
        token = _session(rng, data, auth, account_id, account_ids, reported, tokens)
        account = _account(rng, data, i, account_id, service, standing)
        _outages(rng, data, account, outage, reported)
        _device(rng, data, account, reported, device, faults, firmware, aftermath)
        tasks.append(
            Task(
                id=f"customer_service-{i:03d}",
                domain="customer_service",
                inputs={
                    "account_id": account_id,
                    "session_token": token,
                    "reported_at": stamp(reported),
                    "issue_description": _issue_text(rng, ISSUE_PROFILES[i % len(ISSUE_PROFILES)]),
                    "contact_channel": rng.choice(["web_form", "email", "chat", "app"]),
                },
            )
        )
    frames = {name: pd.DataFrame(rows) for name, rows in data.tables.items()}
    frames["firmware"] = _firmware_catalog()
    return GeneratedData(tables=frames, tasks=tasks)


def _token(rng: random.Random, tokens: set[str]) -> str:
    while True:
        token = f"ST-{rng.getrandbits(48):012X}"
        if token not in tokens:
            tokens.add(token)
            return token


def _session(
    rng: random.Random,
    data: Dataset,
    scenario: str,
    account_id: str,
    account_ids: list[str],
    reported: datetime,
    tokens: set[str],
) -> str:
    issued = reported - timedelta(minutes=rng.randrange(10, 20 * 60))
    if scenario == "expired":
        issued = reported - timedelta(hours=rng.randrange(25, 72))
    owner = account_id
    if scenario == "other_account":
        owner = account_ids[(account_ids.index(account_id) + 17) % len(account_ids)]
    token = _token(rng, tokens)
    session = {
        "session_token": token,
        "token_account_id": owner,
        "issued_at": stamp(issued),
        "expires_at": stamp(issued + timedelta(hours=24)),
        "revoked": scenario == "revoked",
    }
    data.tables["sessions"].append(session)
    # an older, expired session of the same account: never the one on the request
    old = issued - timedelta(days=rng.randrange(3, 40))
    data.tables["sessions"].append(
        {
            **session,
            "session_token": _token(rng, tokens),
            "token_account_id": account_id,
            "issued_at": stamp(old),
            "expires_at": stamp(old + timedelta(hours=24)),
            "revoked": False,
        }
    )
    return _token(rng, tokens) if scenario == "unknown_token" else token


def _account(
    rng: random.Random, data: Dataset, i: int, account_id: str, service: str, standing: str
) -> dict:
    plan_name, speed = rng.choice(PLANS[service])
    region = rng.choice(REGIONS)
    state = standing if standing in ("closed", "suspended") else "active"
    reason = {
        "closed": rng.choice(["customer_request", "relocation"]),
        "suspended": rng.choice(["non_payment", "fraud_review", "customer_request"]),
    }.get(state)
    account = {
        "account_id": account_id,
        "account_state": state,
        "customer_tier": "business" if rng.random() < 0.3 else "residential",
        "service_type": service,
        "plan_name": plan_name,
        "plan_download_mbps": speed,
        "serving_node": f"{region}-{NODE_KIND[service]}-{1000 + i * 7 % 9000:04d}",
        "billing_account_id": f"BA-{40000000 + i * 1543:08d}",
        "state_reason": reason,
    }
    data.tables["accounts"].append(account)
    data.tables["nodes"].append(
        {
            "serving_node": account["serving_node"],
            "region": region,
            "cabinet_type": NODE_KIND[service].lower(),
        }
    )
    days = {
        "current": 0,
        "arrears_below": rng.choice([12, 30, 44, 45]),
        "arrangement": rng.randrange(46, 121),
        "restricted": rng.choice([46, rng.randrange(47, 121)]),
    }.get(standing, rng.randrange(0, 150))
    data.tables["billing"].append(
        {
            "billing_account_id": account["billing_account_id"],
            "balance_due": round(days * rng.uniform(1.5, 4.0), 2),
            "days_past_due": days,
            "payment_arrangement": standing == "arrangement"
            or (standing not in ("restricted", "arrangement") and rng.random() < 0.2),
            "autopay_enabled": rng.random() < 0.5,
            "last_payment_date": (datetime(2026, 1, 25) - timedelta(days=days)).date().isoformat(),
        }
    )
    return account


def _outages(
    rng: random.Random, data: Dataset, account: dict, scenario: str, reported: datetime
) -> None:
    mine = account["service_type"]
    others = [s for s in PLANS if s != mine]

    def add(start: datetime, end: datetime | None, services: list[str]) -> None:
        data.tables["outages"].append(
            {
                "outage_id": f"OUT-{next(data.outage_ids):05d}",
                "serving_node": account["serving_node"],
                "affected_services": services,
                "started_at": stamp(start),
                "restored_at": None if end is None else stamp(end),
                "cause": rng.choice(CAUSES),
            }
        )

    def hours(low: int, high: int) -> timedelta:
        return timedelta(minutes=rng.randrange(low * 60, high * 60))

    with_mine = sorted({mine, *rng.sample(others, rng.randrange(0, 3))})
    if scenario == "old_only" or rng.random() < 0.25:  # history nobody asked about
        start = reported - timedelta(days=rng.randrange(5, 60))
        add(start, start + hours(1, 12), with_mine)
    if scenario == "open_match":
        add(reported - hours(1, 20), None, with_mine)
    elif scenario == "window_match":
        add(reported - hours(1, 10), reported + hours(1, 30), with_mine)
    elif scenario == "other_service":
        add(reported - hours(1, 20), None, others)
    elif scenario == "restored_before":
        start = reported - hours(20, 60)
        add(start, reported - hours(1, 15), with_mine)
    elif scenario == "planned_later":
        start = reported + hours(2, 48)
        add(start, start + hours(1, 6), with_mine)


def _version(parts: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in parts)


def _installed_firmware(rng: random.Random, recommended: tuple[int, ...], scenario: str) -> str:
    major, minor, patch = recommended
    return _version(
        {
            "current": recommended,
            "current_newer": (major, minor, patch + 7),  # e.g. 5.12.10 vs 5.12.3
            "outdated": rng.choice([(major, minor, patch - 1), (major - 1, minor + 5, 0)]),
            "outdated_lexical": (major, 9, 14),  # e.g. 5.9.14 vs 5.12.3
        }[scenario]
    )


def _metrics(rng: random.Random, faults: tuple[str, ...], plan: int) -> dict:
    line = {}
    for fault, key in METRIC.items():
        low, high = (BAD if fault in faults else GOOD)[key]
        line[key] = round(rng.uniform(low, high), 2 if key == "packet_loss_pct" else 1)
    share = rng.uniform(0.15, 0.62) if "bandwidth" in faults else rng.uniform(0.78, 1.02)
    line["downstream_mbps"] = round(plan * share, 1)
    line["upstream_mbps"] = round(plan * rng.uniform(0.1, 0.4), 1)
    return line


def _device(
    rng: random.Random,
    data: Dataset,
    account: dict,
    reported: datetime,
    scenario: str,
    faults: tuple[str, ...],
    firmware: str,
    aftermath: str,
) -> None:
    model, recommended = rng.choice(MODELS[account["service_type"]])
    device_id = f"DV-{rng.getrandbits(40):010X}"
    online = scenario == "online"
    seen = reported - (timedelta(minutes=2) if online else timedelta(hours=rng.randrange(2, 72)))
    data.tables["devices"].append(
        {
            "account_id": account["account_id"],
            "device_id": device_id,
            "model": model,
            "firmware_version": _installed_firmware(rng, recommended, firmware),
            "online": online,
            "last_seen": stamp(seen),
            "uptime_hours": rng.randrange(1, 2000) if online else 0,
        }
    )
    plan = account["plan_download_mbps"]
    ordered = [f for f in FAULT_ORDER if f in faults]
    cure = "none"
    if ordered:
        cure = "firmware_upgrade" if firmware.startswith("outdated") else CURE[ordered[0]]
    left: tuple[str, ...] = {
        "fixed": (),
        "one_left": (rng.choice(["latency", "jitter", "bandwidth"]),),
        "loss_left": ("packet_loss",),
        "two_left": tuple(rng.sample(["latency", "jitter", "bandwidth"], 2)),
        "no_effect": (),
    }[aftermath]
    if aftermath == "no_effect":
        cure = "none"  # the fault's cause is beyond any remote action
    before, after = _metrics(rng, faults, plan), _metrics(rng, left, plan)
    data.tables["line_tests"].append(
        {
            "device_id": device_id,
            "online": online,
            **before,
            "effective_action": cure,
            **{f"after_{key}": value for key, value in after.items()},
        }
    )


def _issue_text(rng: random.Random, profile: tuple[int, int, int]) -> str:
    sentences: list[str] = []
    for family, wanted in zip(("no_service", "intermittent", "slow_speed"), profile, strict=True):
        sentences += rng.sample(FRAGMENTS[family], wanted)
    sentences += rng.sample(FRAGMENTS["neutral"], rng.randrange(1, 3))
    rng.shuffle(sentences)
    return " ".join(sentences)


def _firmware_catalog() -> pd.DataFrame:
    import pandas as pd

    rows = []
    for model, recommended in [m for models in MODELS.values() for m in models] + RETIRED_MODELS:
        rows.append(
            {
                "model": model,
                "recommended_version": _version(recommended),
                "minimum_supported_version": _version((recommended[0] - 1, 0, 0)),
                "release_date": f"2025-{1 + sum(recommended) % 12:02d}-15",
            }
        )
    return pd.DataFrame(rows)
