"""Outages recorded on the account's serving node, past, open and planned (step 4).

All of the node's outages are returned: deciding which one covers the customer's report
(service type and time window) is the SOP's rule.
"""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.customer_service.tools._common import SERVING_NODE

_OUTAGE_FIELDS = ("outage_id", "affected_services", "started_at", "restored_at", "cause")


@tool(
    name="check_service_outages",
    description=(
        "List the outages recorded on a serving network node (open, restored and planned), "
        "each with the service types it affects, when it started and when service was "
        "restored (null while still open)."
    ),
    input_schema=arguments_schema({"serving_node": SERVING_NODE}),
    output_schema=result_schema(
        {
            "serving_node": {"type": "string"},
            "region": {"type": "string"},
            "outages": {
                "type": "array",
                "items": result_schema(
                    {
                        "outage_id": {"type": "string"},
                        "affected_services": {"type": "array", "items": {"type": "string"}},
                        "started_at": {"type": "string"},
                        "restored_at": {"type": ["string", "null"]},
                        "cause": {"type": "string"},
                    }
                ),
            },
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    node = require_row(ctx, "nodes", "serving_node", args["serving_node"], "serving node")
    outages = sorted(
        ctx.tables.rows("outages", "serving_node", args["serving_node"]),
        key=lambda outage: (outage["started_at"], outage["outage_id"]),
    )
    return {
        "serving_node": node["serving_node"],
        "region": node["region"],
        "outages": [{key: outage[key] for key in _OUTAGE_FIELDS} for outage in outages],
    }
