"""Device lookups shared by the tools that talk to a device through the network."""

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, require_row


def reachable_device(args: JSON, ctx: ToolContext) -> JSON:
    """The line-test row of an online device; an offline device cannot be reached at all."""
    device = require_row(ctx, "line_tests", "device_id", args["device_id"], "device")
    if not device["online"]:
        raise ToolError(
            "invalid_value",
            f"device {args['device_id']} is offline and cannot be reached remotely",
            "device_id",
        )
    return device
