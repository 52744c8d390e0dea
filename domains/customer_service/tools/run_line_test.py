"""Active line test from the network side: the metrics the SOP's thresholds apply to (step 6)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.customer_service.tools._common import DEVICE_ID, METRICS_SCHEMA, metrics
from sopgym.domains.customer_service.tools._devices import reachable_device


@tool(
    name="run_line_test",
    description=(
        "Run an active line test against an online device: round-trip latency, jitter, packet "
        "loss, and measured downstream/upstream throughput. Refused for an offline device."
    ),
    input_schema=arguments_schema({"device_id": DEVICE_ID}),
    output_schema=result_schema(
        {
            "device_id": {"type": "string"},
            "test_id": {"type": "string"},
            "samples": {"type": "integer"},
            **METRICS_SCHEMA["properties"],
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    device = reachable_device(args, ctx)
    return {
        "device_id": device["device_id"],
        "test_id": f"LT-{device['device_id'][3:]}-1",
        "samples": 50,
        **metrics(device),
    }
