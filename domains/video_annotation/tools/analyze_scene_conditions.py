"""Scene conditions of a frame batch: the lighting and weather facts that pick a detector."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, not_found, result_schema, tool
from sopgym.domains.video_annotation.tools._common import (
    FRAME_BATCH_ID,
    INTEGER,
    NUMBER,
    STRING,
    frames_sampled,
    parse_batch,
)


@tool(
    name="analyze_scene_conditions",
    description=(
        "Measure the lighting and weather of a frame batch: mean luminance (0-255), "
        "precipitation index (0-1, share of frames with rain, snow or spray), glare fraction "
        "and the dominant road type."
    ),
    input_schema=arguments_schema({"frame_batch_id": FRAME_BATCH_ID}),
    output_schema=result_schema(
        {
            "frames_analyzed": INTEGER,
            "mean_luminance": INTEGER,
            "precipitation_index": NUMBER,
            "glare_fraction": NUMBER,
            "road_type": STRING,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    clip, rate = parse_batch(ctx, args["frame_batch_id"])
    scene = ctx.tables.row("scene_analysis", "video_id", clip["video_id"])
    if scene is None:
        raise not_found("scene analysis", "video_id", clip["video_id"])
    return {
        "frames_analyzed": frames_sampled(clip, rate),
        "mean_luminance": scene["mean_luminance"],
        "precipitation_index": scene["precipitation_index"],
        "glare_fraction": scene["glare_fraction"],
        "road_type": scene["road_type"],
    }
