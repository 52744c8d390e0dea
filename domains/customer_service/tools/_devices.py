"""Device lookups shared by the tools that talk to a device through the network."""

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, not_found


def reachable_device(args: JSON, ctx: ToolContext) -> JSON:
    """The line-test row of an online device; an offline device cannot be reached at all."""
    device = ctx.tables.row("line_tests", "device_id", args["device_id"])
    if device is None:
        raise not_found("device", "device_id", args["device_id"])
    if not device["online"]:
        raise ToolError(
            "invalid_value",
            f"device {args['device_id']} is offline and cannot be reached remotely",
            "device_id",
        )
    return device
