"""Put a viewer-facing content warning (interstitial) in front of a video."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.video_classification.tools._common import (
    BOOLEAN,
    STRING,
    VIDEO_ID,
    WARNINGS,
    receipt,
)


@tool(
    name="set_content_warning",
    description=("Show viewers a warning interstitial of the given type before the video plays."),
    input_schema=arguments_schema(
        {
            "video_id": VIDEO_ID,
            "warning_type": {"type": "string", "enum": WARNINGS},
        }
    ),
    output_schema=result_schema({"warning_record_id": STRING, "interstitial_enabled": BOOLEAN}),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "videos", "video_id", args["video_id"])
    return {
        "warning_record_id": receipt("WRN", args["video_id"], args["warning_type"]),
        "interstitial_enabled": True,
    }
