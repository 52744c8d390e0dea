"""Catalog lookup of a clip's technical metadata: the facts the input requirements test."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.video_annotation.tools._common import (
    INTEGER,
    NUMBER,
    STRING,
    VIDEO_ID,
    nullable,
)

PROBED = (
    "container_format",
    "video_codec",
    "frame_rate",
    "width",
    "height",
    "color_depth_bits",
    "frame_count",
)
CATALOGED = ("duration_s", "camera_position", "capture_date")


@tool(
    name="get_video_metadata",
    description=(
        "Look a driving clip up in the video catalog and return its technical metadata as "
        "probed at ingest: container, codec, frame rate, resolution, colour depth (bits per "
        "channel), duration and frame count. Fields the encoder did not report are null."
    ),
    input_schema=arguments_schema({"video_id": VIDEO_ID}),
    output_schema=result_schema(
        {
            "video_found": {"type": "boolean"},
            "container_format": nullable(STRING),
            "video_codec": nullable(STRING),
            "frame_rate": nullable(NUMBER),
            "width": nullable(INTEGER),
            "height": nullable(INTEGER),
            "color_depth_bits": nullable(INTEGER),
            "duration_s": nullable(NUMBER),
            "frame_count": nullable(INTEGER),
            "camera_position": nullable(STRING),
            "capture_date": nullable(STRING),
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    row = ctx.tables.row("videos", "video_id", args["video_id"])
    if row is None:
        return {"video_found": False, **dict.fromkeys((*PROBED, *CATALOGED))}
    probe = row["probe"]
    return {
        "video_found": True,
        **{name: probe.get(name) for name in PROBED},
        **{name: row[name] for name in CATALOGED},
    }
