"""The customer-premises device on the account: identity, firmware and reachability (step 5)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.customer_service.tools._common import ACCOUNT_ID

_FIELDS = ("device_id", "model", "firmware_version", "online", "last_seen", "uptime_hours")


@tool(
    name="get_device_status",
    description=(
        "Retrieve the gateway/modem installed on an account from device management: device id, "
        "model, installed firmware version, whether it currently answers management polls "
        "(online), when it was last seen and its uptime."
    ),
    input_schema=arguments_schema({"account_id": ACCOUNT_ID}),
    output_schema=result_schema(
        {
            "device_id": {"type": "string"},
            "model": {"type": "string"},
            "firmware_version": {"type": "string"},
            "online": {"type": "boolean"},
            "last_seen": {"type": "string"},
            "uptime_hours": {"type": "integer"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    device = require_row(ctx, "devices", "account_id", args["account_id"], "device for account")
    return {key: device[key] for key in _FIELDS}
