"""Spatial accuracy: IoU of the run's boxes (and masks) against auditor-drawn references."""

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.video_annotation.tools._audits import AUDIT_SAMPLE_MAX, audit
from sopgym.domains.video_annotation.tools._common import (
    DETECTION_RUN_ID,
    INTEGER,
    NUMBER,
    SEGMENTATION_RUN_ID,
    kept_objects,
    nullable,
    parse_detection_run,
    parse_segmentation_run,
)


@tool(
    name="measure_spatial_accuracy",
    description=(
        "Compare a detection run's bounding boxes with the auditors' reference boxes and "
        "return their mean intersection-over-union. When a segmentation run of the same "
        "detection run is given, its masks are audited too (mask IoU is null otherwise)."
    ),
    input_schema=arguments_schema(
        {"detection_run_id": DETECTION_RUN_ID, "segmentation_run_id": SEGMENTATION_RUN_ID},
        required=["detection_run_id"],
    ),
    output_schema=result_schema(
        {
            "boxes_audited": INTEGER,
            "box_mean_iou": NUMBER,
            "masks_audited": INTEGER,
            "mask_mean_iou": nullable(NUMBER),
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    detection = parse_detection_run(ctx, args["detection_run_id"])
    record = audit(ctx, detection.video["video_id"])
    sample = min(len(kept_objects(ctx, detection)), AUDIT_SAMPLE_MAX)
    masks_audited, mask_iou = 0, None
    if "segmentation_run_id" in args:
        base, mode = parse_segmentation_run(ctx, args["segmentation_run_id"])
        if base.run_id != detection.run_id:
            raise ToolError(
                "invalid_value",
                "segmentation_run_id was not built on this detection_run_id",
                "segmentation_run_id",
            )
        masks_audited, mask_iou = sample, record[f"mask_iou_{mode}"]
    return {
        "boxes_audited": sample,
        "box_mean_iou": record[f"box_iou_{detection.profile}"],
        "masks_audited": masks_audited,
        "mask_mean_iou": mask_iou,
    }
