"""Escalation: put the video in a human moderation queue with a priority."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.video_classification.tools._common import INTEGER, QUEUE_CODES, STRING, VIDEO_ID

SLA_HOURS = {"standard": 24, "urgent": 4}


@tool(
    name="escalate_to_moderator",
    description=(
        "Escalate a video to the human moderation team: choose the specialist queue (a policy "
        "category, or 'general') and the priority. Returns the escalation id and the SLA."
    ),
    input_schema=arguments_schema(
        {
            "video_id": VIDEO_ID,
            "queue": {"type": "string", "enum": list(QUEUE_CODES)},
            "priority": {"type": "string", "enum": list(SLA_HOURS)},
        }
    ),
    output_schema=result_schema(
        {
            "escalation_id": STRING,
            "queue": STRING,
            "sla_hours": INTEGER,
            "assigned_team": STRING,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "videos", "video_id", args["video_id"])
    queue = args["queue"]
    return {
        "escalation_id": f"ESC-{row['video_id']}-{QUEUE_CODES[queue]}",
        "queue": queue,
        "sla_hours": SLA_HOURS[args["priority"]],
        "assigned_team": f"trust-safety-{queue.replace('_', '-')}",
    }
