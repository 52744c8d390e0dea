"""Schema fragments and helpers shared by the customer-service tools.

Identifiers have fixed shapes so that a malformed id is refused as ``invalid_value`` before
any lookup; line-test metrics have one shape whether they come from the first test or from
the re-test after a remote action, so the SOP's thresholds apply to both unchanged.
"""

from __future__ import annotations

from typing import Any

from sopgym.core.tools import JSON, result_schema

ACCOUNT_ID = {"type": "string", "pattern": "^AC-[0-9]{7}$"}
BILLING_ACCOUNT_ID = {"type": "string", "pattern": "^BA-[0-9]{8}$"}
SESSION_TOKEN = {"type": "string", "pattern": "^ST-[0-9A-F]{12}$"}
DEVICE_ID = {"type": "string", "pattern": "^DV-[0-9A-F]{10}$"}
SERVING_NODE = {"type": "string", "pattern": "^[A-Z]{2}-(FBR|CAB|DSL)-[0-9]{4}$"}
DEVICE_MODEL = {"type": "string", "pattern": "^[A-Z]{2,4}-[0-9]{3,4}$"}
TIMESTAMP = {
    "type": "string",
    "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$",
}
NULLABLE_TIMESTAMP = {"type": ["string", "null"]}

REMOTE_ACTIONS = ["remote_reboot", "firmware_upgrade", "line_reprofile", "speed_profile_sync"]
ISSUE_CATEGORIES = ["no_service", "intermittent", "slow_speed", "general", "not_classified"]

METRIC_KEYS = ("latency_ms", "jitter_ms", "packet_loss_pct", "downstream_mbps", "upstream_mbps")
METRICS_SCHEMA: JSON = result_schema({key: {"type": "number"} for key in METRIC_KEYS})


def metrics(row: dict[str, Any], prefix: str = "") -> JSON:
    """The five line metrics stored in ``row`` under ``prefix`` + metric name."""
    return {key: row[prefix + key] for key in METRIC_KEYS}
