"""Enforce and log the final action on a video (the last step of every review)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.video_classification.tools._common import (
    ACTIONS,
    BOOLEAN,
    ESCALATION_ID,
    INTEGER,
    STRING,
    VIDEO_ID,
    receipt,
)

APPEAL_WINDOW_DAYS = {"keep": 0, "age_restrict": 30, "remove": 60}


@tool(
    name="record_moderation_decision",
    description=(
        "Enforce the final action on a video (keep, age_restrict or remove), log it with the "
        "escalation it came from when there was one, and notify the uploader of any "
        "enforcement."
    ),
    input_schema=arguments_schema(
        {
            "video_id": VIDEO_ID,
            "action": {"type": "string", "enum": ACTIONS},
            "escalation_id": ESCALATION_ID,
        },
        required=["video_id", "action"],
    ),
    output_schema=result_schema(
        {
            "decision_record_id": STRING,
            "uploader_notified": BOOLEAN,
            "appeal_window_days": INTEGER,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "videos", "video_id", args["video_id"])
    action = args["action"]
    return {
        "decision_record_id": receipt(
            "DEC", args["video_id"], action, args.get("escalation_id", "")
        ),
        "uploader_notified": action != "keep",
        "appeal_window_days": APPEAL_WINDOW_DAYS[action],
    }
