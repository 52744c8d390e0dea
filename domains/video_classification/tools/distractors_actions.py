"""Enforcement tools outside the SOP's authority.

Suspending accounts, demonetising, geo-blocking or messaging the uploader are real actions of
the platform, but this SOP never takes them: the only enforcement it records is the final
action on the video itself.
"""

from sopgym.core.tools import (
    JSON,
    Tool,
    ToolContext,
    arguments_schema,
    require_row,
    result_schema,
    tool,
)
from sopgym.domains.video_classification.tools._common import (
    BOOLEAN,
    INTEGER,
    STRING,
    UPLOADER_ID,
    VIDEO_ID,
    receipt,
)

EXAMPLE_VIDEO = {"video_id": "UV20000000"}
EXAMPLE_UPLOADER = {"uploader_id": "U-500000"}
# the id argument an action targets -> (the table it must exist in, its schema)
_TARGETS = {"video_id": ("videos", VIDEO_ID), "uploader_id": ("uploaders", UPLOADER_ID)}


def _enforcement(
    name: str, description: str, prefix: str, target: str, options: JSON, example: JSON
) -> Tool:
    """A tool that applies one enforcement action to an existing video or uploader.

    ``target`` is the id argument (``video_id`` or ``uploader_id``), ``options`` the further
    arguments. The receipt id is derived from the target and the options in order (a list
    option sorted), so repeated calls answer identically.
    """
    table, target_schema = _TARGETS[target]

    @tool(
        name=name,
        description=description,
        input_schema=arguments_schema({target: target_schema, **options}, examples=[example]),
        output_schema=result_schema({"receipt_id": STRING, "applied": BOOLEAN}),
    )
    def run(args: JSON, ctx: ToolContext) -> JSON:
        require_row(ctx, table, target, args[target])
        parts: list[object] = [args[target]]
        for option in options:
            value = args[option]
            parts.extend(sorted(value) if isinstance(value, list) else [value])
        return {"receipt_id": receipt(prefix, *parts), "applied": True}

    return run


notify_uploader = _enforcement(
    "notify_uploader",
    "Send the uploader a templated message about their video.",
    "MSG",
    "video_id",
    {"template": {"type": "string", "enum": ["policy_reminder", "under_review"]}},
    {**EXAMPLE_VIDEO, "template": "under_review"},
)
suspend_uploader_account = _enforcement(
    "suspend_uploader_account",
    "Suspend an uploader's account for a number of days.",
    "SUS",
    "uploader_id",
    {"days": {"type": "integer", "minimum": 1, "maximum": 365}},
    {**EXAMPLE_UPLOADER, "days": 7},
)
demonetize_video = _enforcement(
    "demonetize_video",
    "Turn off advertising revenue on a video.",
    "DMN",
    "video_id",
    {},
    EXAMPLE_VIDEO,
)
geo_block_video = _enforcement(
    "geo_block_video",
    "Block a video in the given countries (ISO 3166 alpha-2 codes).",
    "GEO",
    "video_id",
    {
        "region_codes": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[A-Z]{2}$"},
            "minItems": 1,
        }
    },
    {**EXAMPLE_VIDEO, "region_codes": ["DE"]},
)
add_to_watchlist = _enforcement(
    "add_to_watchlist",
    "Put an uploader on the trust-and-safety watchlist for proactive review.",
    "WCH",
    "uploader_id",
    {"reason": {"type": "string", "minLength": 3}},
    {**EXAMPLE_UPLOADER, "reason": "repeat reports"},
)


@tool(
    name="estimate_viral_risk",
    description="Projected views over the next 48 hours, for prioritising proactive sweeps.",
    input_schema=arguments_schema({"video_id": VIDEO_ID}, examples=[EXAMPLE_VIDEO]),
    output_schema=result_schema({"projected_views_48h": INTEGER}),
)
def estimate_viral_risk(args: JSON, ctx: ToolContext) -> JSON:
    video = require_row(ctx, "videos", "video_id", args["video_id"])
    return {"projected_views_48h": video["view_count"] * 3}


ACTION_DISTRACTORS = [
    notify_uploader,
    suspend_uploader_account,
    demonetize_video,
    geo_block_video,
    add_to_watchlist,
    estimate_viral_risk,
]
