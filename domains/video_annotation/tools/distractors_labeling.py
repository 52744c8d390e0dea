"""Perception and project tools near the SOP's steps that the SOP never calls.

Each answers a neighbouring question (lanes, depth, motion, cost, export formats) or repeats a
step with a weaker method (the preview detector, the stand-alone tracker), so an agent that
picks tools by name alone gets them wrong.
"""

from sopgym.core.tools import (
    JSON,
    ToolContext,
    arguments_schema,
    not_found,
    require_row,
    result_schema,
    tool,
)
from sopgym.domains.video_annotation.tools._common import (
    DETECTION_RUN_ID,
    FRAME_BATCH_ID,
    INTEGER,
    NUMBER,
    PROJECT_CODE,
    STRING,
    VIDEO_ID,
    frames_sampled,
    kept_objects,
    parse_batch,
    parse_detection_run,
)

EXAMPLE_BATCH = {"frame_batch_id": "FB-VID-100000-R10"}
EXAMPLE_RUN = {"detection_run_id": "DR-VID-100000-R10-STD-T50"}
COST_PER_MINUTE_USD = {"none": 4.0, "instance": 9.5, "panoptic": 14.0}


def _batch_facts(ctx: ToolContext, frame_batch_id: str) -> tuple[JSON, int]:
    clip, rate = parse_batch(ctx, frame_batch_id)
    return clip, frames_sampled(clip, rate)


@tool(
    name="run_object_detection_preview",
    description=(
        "Fast low-resolution detector for previews: one frame in ten, a fixed threshold, no "
        "profiles. Its counts are not suitable for annotation deliverables."
    ),
    input_schema=arguments_schema({"frame_batch_id": FRAME_BATCH_ID}, examples=[EXAMPLE_BATCH]),
    output_schema=result_schema({"frames_previewed": INTEGER, "approx_objects": INTEGER}),
)
def run_object_detection_preview(args: JSON, ctx: ToolContext) -> JSON:
    clip, frames = _batch_facts(ctx, args["frame_batch_id"])
    outputs = ctx.tables.row("model_outputs", "video_id", clip["video_id"])
    objects = outputs["objects"] if outputs else []
    return {
        "frames_previewed": frames // 10,
        "approx_objects": sum(o["confidence"] >= 0.7 for o in objects),
    }


@tool(
    name="detect_lane_markings",
    description="Detect lane markings in a frame batch and report the lanes seen per frame.",
    input_schema=arguments_schema({"frame_batch_id": FRAME_BATCH_ID}, examples=[EXAMPLE_BATCH]),
    output_schema=result_schema({"frames_processed": INTEGER, "mean_lanes_visible": NUMBER}),
)
def detect_lane_markings(args: JSON, ctx: ToolContext) -> JSON:
    clip, frames = _batch_facts(ctx, args["frame_batch_id"])
    return {"frames_processed": frames, "mean_lanes_visible": 2.0 + int(clip["video_id"][-1]) / 5}


@tool(
    name="estimate_depth_map",
    description="Monocular depth estimation over a frame batch; returns the median depth.",
    input_schema=arguments_schema({"frame_batch_id": FRAME_BATCH_ID}, examples=[EXAMPLE_BATCH]),
    output_schema=result_schema({"frames_processed": INTEGER, "median_depth_m": NUMBER}),
)
def estimate_depth_map(args: JSON, ctx: ToolContext) -> JSON:
    clip, frames = _batch_facts(ctx, args["frame_batch_id"])
    return {"frames_processed": frames, "median_depth_m": 12.0 + int(clip["video_id"][-2:]) / 4}


@tool(
    name="compute_optical_flow",
    description="Dense optical flow between consecutive sampled frames (ego-motion proxy).",
    input_schema=arguments_schema({"frame_batch_id": FRAME_BATCH_ID}, examples=[EXAMPLE_BATCH]),
    output_schema=result_schema({"frame_pairs": INTEGER, "mean_flow_px": NUMBER}),
)
def compute_optical_flow(args: JSON, ctx: ToolContext) -> JSON:
    clip, frames = _batch_facts(ctx, args["frame_batch_id"])
    return {
        "frame_pairs": max(frames - 1, 0),
        "mean_flow_px": round((clip["probe"]["frame_rate"] or 0) / 7, 2),
    }


@tool(
    name="track_objects",
    description=(
        "Stand-alone multi-object tracker over a detection run; reports track count only. "
        "It does not measure identity switches."
    ),
    input_schema=arguments_schema({"detection_run_id": DETECTION_RUN_ID}, examples=[EXAMPLE_RUN]),
    output_schema=result_schema({"tracks": INTEGER, "tracker": STRING}),
)
def track_objects(args: JSON, ctx: ToolContext) -> JSON:
    detection = parse_detection_run(ctx, args["detection_run_id"])
    return {"tracks": len(kept_objects(ctx, detection)), "tracker": "sort-v2"}


@tool(
    name="export_coco_format",
    description="Convert a detection run to a COCO JSON export in the scratch bucket.",
    input_schema=arguments_schema({"detection_run_id": DETECTION_RUN_ID}, examples=[EXAMPLE_RUN]),
    output_schema=result_schema({"export_uri": STRING, "annotations": INTEGER}),
)
def export_coco_format(args: JSON, ctx: ToolContext) -> JSON:
    detection = parse_detection_run(ctx, args["detection_run_id"])
    return {
        "export_uri": f"s3://av-scratch/coco/{detection.run_id}.json",
        "annotations": len(kept_objects(ctx, detection)),
    }


@tool(
    name="list_project_annotators",
    description="List the annotators staffed on an annotation project.",
    input_schema=arguments_schema(
        {"project_code": PROJECT_CODE}, examples=[{"project_code": "AVP-URB"}]
    ),
    output_schema=result_schema({"annotator_ids": {"type": "array", "items": STRING}}),
)
def list_project_annotators(args: JSON, ctx: ToolContext) -> JSON:
    staffed = ctx.tables.rows("annotators", "project_code", args["project_code"])
    if not staffed:
        raise not_found("project", "project_code", args["project_code"])
    return {"annotator_ids": sorted(a["annotator_id"] for a in staffed)}


@tool(
    name="estimate_labeling_cost",
    description="Estimate the labelling cost of a clip for budgeting, by mask mode.",
    input_schema=arguments_schema(
        {
            "video_id": VIDEO_ID,
            "segmentation_mode": {"type": "string", "enum": list(COST_PER_MINUTE_USD)},
        },
        examples=[{"video_id": "VID-100000", "segmentation_mode": "instance"}],
    ),
    output_schema=result_schema({"estimated_cost_usd": NUMBER, "currency": STRING}),
)
def estimate_labeling_cost(args: JSON, ctx: ToolContext) -> JSON:
    clip = require_row(ctx, "videos", "video_id", args["video_id"])
    rate = COST_PER_MINUTE_USD[args["segmentation_mode"]]
    return {"estimated_cost_usd": round(clip["duration_s"] / 60 * rate, 2), "currency": "USD"}


LABELING_DISTRACTORS = [
    run_object_detection_preview,
    detect_lane_markings,
    estimate_depth_map,
    compute_optical_flow,
    track_objects,
    export_coco_format,
    list_project_annotators,
    estimate_labeling_cost,
]
