"""Temporal consistency: how often tracked objects swap identity between sampled frames."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.video_annotation.tools._audits import audit
from sopgym.domains.video_annotation.tools._common import (
    DETECTION_RUN_ID,
    INTEGER,
    kept_objects,
    parse_detection_run,
)


@tool(
    name="measure_temporal_consistency",
    description=(
        "Link a detection run's boxes into tracks across the sampled frames and count the "
        "identity switches (a track jumping to another object) over the evaluated frames."
    ),
    input_schema=arguments_schema({"detection_run_id": DETECTION_RUN_ID}),
    output_schema=result_schema(
        {
            "frames_evaluated": INTEGER,
            "tracks": INTEGER,
            "id_switches": INTEGER,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    detection = parse_detection_run(ctx, args["detection_run_id"])
    record = audit(ctx, detection.video["video_id"])
    frames = detection.frames_sampled
    return {
        "frames_evaluated": frames,
        "tracks": len(kept_objects(ctx, detection)),
        "id_switches": round(record["switches_per_100_frames"] * frames / 100),
    }
