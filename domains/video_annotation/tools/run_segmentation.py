"""Mask generation on top of a detection run (instance or panoptic masks)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.video_annotation.tools._common import (
    DETECTION_RUN_ID,
    INTEGER,
    MODE_CODES,
    STRING,
    kept_objects,
    parse_detection_run,
)

# Panoptic output also labels the background "stuff" regions of every sampled frame.
STUFF_CLASSES = ["road", "sidewalk", "vegetation", "sky"]


@tool(
    name="run_segmentation",
    description=(
        "Generate pixel masks for the objects of a detection run: 'instance' masks one mask "
        "per detected object; 'panoptic' also labels road, sidewalk, vegetation and sky."
    ),
    input_schema=arguments_schema(
        {
            "detection_run_id": DETECTION_RUN_ID,
            "mode": {"type": "string", "enum": list(MODE_CODES)},
        }
    ),
    output_schema=result_schema(
        {
            "segmentation_run_id": STRING,
            "mode": STRING,
            "masks_generated": INTEGER,
            "stuff_classes": {"type": "array", "items": STRING},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    detection = parse_detection_run(ctx, args["detection_run_id"])
    mode = args["mode"]
    masks = len(kept_objects(ctx, detection))
    stuff = STUFF_CLASSES if mode == "panoptic" else []
    return {
        "segmentation_run_id": f"SG-{detection.run_id[3:]}-{MODE_CODES[mode]}",
        "mode": mode,
        "masks_generated": masks,
        "stuff_classes": stuff,
    }
