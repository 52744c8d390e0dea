"""Frame sampling: turns a clip into a frame batch that the perception tools work on."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.video_annotation.tools._common import (
    INTEGER,
    NUMBER,
    SAMPLE_RATES,
    STRING,
    VIDEO_ID,
    batch_id,
    frames_sampled,
    nullable,
)


@tool(
    name="extract_frames",
    description=(
        "Decode a clip and sample frames at the requested rate (frames per second of video). "
        "Returns the frame batch id that scene analysis and detection take as input."
    ),
    input_schema=arguments_schema(
        {
            "video_id": VIDEO_ID,
            "sample_rate_fps": {"type": "integer", "enum": SAMPLE_RATES},
        }
    ),
    output_schema=result_schema(
        {
            "frame_batch_id": STRING,
            "frames_extracted": INTEGER,
            "sample_rate_fps": INTEGER,
            "source_frame_rate": nullable(NUMBER),
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    clip = require_row(ctx, "videos", "video_id", args["video_id"])
    rate = args["sample_rate_fps"]
    return {
        "frame_batch_id": batch_id(clip["video_id"], rate),
        "frames_extracted": frames_sampled(clip, rate),
        "sample_rate_fps": rate,
        "source_frame_rate": clip["probe"]["frame_rate"],
    }
