"""Run one remote troubleshooting action on a device and re-test the line (step 8).

Only the action that addresses the device's actual fault changes the line; any other action
completes but the re-test shows the same metrics as before.
"""

import hashlib

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.customer_service.tools._common import (
    DEVICE_ID,
    METRICS_SCHEMA,
    REMOTE_ACTIONS,
    metrics,
)
from sopgym.domains.customer_service.tools._devices import reachable_device


@tool(
    name="execute_remote_action",
    description=(
        "Execute a remote troubleshooting action on an online device (remote_reboot, "
        "firmware_upgrade, line_reprofile or speed_profile_sync), then re-run the line test and "
        "return the re-test metrics."
    ),
    input_schema=arguments_schema(
        {
            "device_id": DEVICE_ID,
            "action": {"type": "string", "enum": REMOTE_ACTIONS},
        }
    ),
    output_schema=result_schema(
        {
            "job_id": {"type": "string"},
            "action": {"enum": REMOTE_ACTIONS},
            "completed": {"type": "boolean"},
            "retest": METRICS_SCHEMA,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    device = reachable_device(args, ctx)
    effective = args["action"] == device["effective_action"]
    digest = hashlib.sha256(f"{args['device_id']}|{args['action']}".encode()).hexdigest()
    return {
        "job_id": f"JOB-{digest[:8].upper()}",
        "action": args["action"],
        "completed": True,
        "retest": metrics(device, "after_" if effective else ""),
    }
