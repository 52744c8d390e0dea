"""Bot Probability Index: behavioural, device and network signals fused into one 0-1 index.

Points are kept in hundredths (integers) so that the index is exact and the SOP's
thresholds never meet a floating-point rounding surprise.
"""

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.content_flagging.tools._common import (
    COUNT,
    DEVICE_FINGERPRINT,
    IP_ADDRESS,
    USER_ID,
    points_for,
)

CAPTCHA_POINTS = {"passed": 0, "passed_after_retry": 10, "not_presented": 15, "failed": 30}
POSTING_RATE_BANDS = [(11, 0), (31, 10), (61, 20)]  # posts in the last hour
POSTING_RATE_ABOVE = 30
ACTION_TIMING_BANDS = [(0.5, 25), (2.0, 15), (5.0, 5)]  # mean seconds between actions
ACTION_TIMING_ABOVE = 0
NETWORK_POINTS = {"residential": 0, "mobile": 0, "datacenter": 15, "unknown": 5}
UNREGISTERED_DEVICE_POINTS = 10
EMULATOR_POINTS = 10


def device_points(device: dict | None) -> int:
    """Unregistered devices and devices shared by many accounts are typical of bot farms."""
    if device is None:
        return UNREGISTERED_DEVICE_POINTS
    linked = device["linked_accounts"]
    shared = 20 if linked >= 5 else 10 if linked >= 2 else 0
    return shared + (EMULATOR_POINTS if device["emulator_detected"] else 0)


def network_type(ctx: ToolContext, ip_address: str) -> str:
    """Network class of the /16 range the address belongs to ("unknown" when unlisted)."""
    if any(int(octet) > 255 for octet in ip_address.split(".")):
        raise ToolError("invalid_value", "ip_address has an octet above 255", "ip_address")
    prefix = ".".join(ip_address.split(".")[:2])
    network = ctx.tables.row("ip_ranges", "network_prefix", prefix)
    return "unknown" if network is None else network["network_type"]


@tool(
    name="compute_bot_probability",
    description=(
        "Step 1 of content flagging. Compute the Bot Probability Index (BPI, 0.00-1.00, two "
        "decimals) of the account that posted flagged content from its captcha outcome, "
        "posting rate, action timing, device fingerprint and network. Returns the index and "
        "the points of each signal."
    ),
    input_schema=arguments_schema(
        {
            "user_id": USER_ID,
            "device_fingerprint": DEVICE_FINGERPRINT,
            "ip_address": IP_ADDRESS,
            "captcha_outcome": {"type": "string", "enum": list(CAPTCHA_POINTS)},
            "posts_last_hour": COUNT,
            "avg_action_interval_seconds": {"type": "number", "minimum": 0},
        }
    ),
    output_schema={
        "type": "object",
        "properties": {
            "bot_probability_index": {"type": "number", "minimum": 0, "maximum": 1},
            "signal_points": {
                "type": "object",
                "properties": {
                    k: {"type": "number"}
                    for k in ("captcha", "posting_rate", "action_timing", "device", "network")
                },
            },
            "device_registered": {"type": "boolean"},
            "linked_accounts": {"type": "integer"},
            "emulator_detected": {"type": "boolean"},
            "network_type": {"type": "string", "enum": list(NETWORK_POINTS)},
        },
        "required": ["bot_probability_index", "signal_points", "network_type"],
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "users", "user_id", args["user_id"])
    device = ctx.tables.row("devices", "device_fingerprint", args["device_fingerprint"])
    network = network_type(ctx, args["ip_address"])
    hundredths = {
        "captcha": CAPTCHA_POINTS[args["captcha_outcome"]],
        "posting_rate": points_for(args["posts_last_hour"], POSTING_RATE_BANDS, POSTING_RATE_ABOVE),
        "action_timing": points_for(
            args["avg_action_interval_seconds"], ACTION_TIMING_BANDS, ACTION_TIMING_ABOVE
        ),
        "device": device_points(device),
        "network": NETWORK_POINTS[network],
    }
    return {
        "bot_probability_index": min(sum(hundredths.values()), 100) / 100,
        "signal_points": {k: v / 100 for k, v in hundredths.items()},
        "device_registered": device is not None,
        "linked_accounts": 0 if device is None else device["linked_accounts"],
        "emulator_detected": bool(device and device["emulator_detected"]),
        "network_type": network,
    }
