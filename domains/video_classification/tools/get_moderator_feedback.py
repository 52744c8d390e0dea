"""The human moderator's verdict on an escalated video: findings, context, minors."""

from sopgym.core.tools import (
    JSON,
    ToolContext,
    arguments_schema,
    not_found,
    require_row,
    result_schema,
    tool,
)
from sopgym.domains.video_classification.tools._common import (
    BOOLEAN,
    CATEGORIES,
    ESCALATION_ID,
    STRING,
)

CONTEXTS = ["none", "news", "educational", "documentary", "artistic", "satire"]


@tool(
    name="get_moderator_feedback",
    description=(
        "Read the human moderator's feedback on an escalation: the policy findings (category "
        "and severity 1 = mild ... 4 = severe), the context the moderator recognised, and "
        "whether a minor is depicted."
    ),
    input_schema=arguments_schema({"escalation_id": ESCALATION_ID}),
    output_schema=result_schema(
        {
            "escalation_id": STRING,
            "moderator_id": STRING,
            "findings": {
                "type": "array",
                "items": result_schema(
                    {
                        "category": {"type": "string", "enum": CATEGORIES},
                        "severity": {"type": "integer", "minimum": 1, "maximum": 4},
                    }
                ),
            },
            "context": {"type": "string", "enum": CONTEXTS},
            "minor_depicted": BOOLEAN,
            "reviewed_at": STRING,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    video_id = args["escalation_id"][4:14]
    require_row(ctx, "videos", "video_id", video_id)
    review = ctx.tables.row("moderator_reviews", "video_id", video_id)
    if review is None:
        raise not_found("moderator review", "escalation_id", args["escalation_id"])
    return {
        "escalation_id": args["escalation_id"],
        "moderator_id": review["moderator_id"],
        "findings": review["findings"],
        "context": review["context"],
        "minor_depicted": review["minor_depicted"],
        "reviewed_at": review["reviewed_at"],
    }
