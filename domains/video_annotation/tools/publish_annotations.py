"""Write a clip's annotation files to the released or rework area of the annotation bucket."""

import hashlib
import re

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.video_annotation.tools._common import (
    DETECTION_RUN_ID,
    INTEGER,
    SEGMENTATION_RUN_ID,
    STRING,
    VIDEO_ID,
    kept_objects,
    parse_detection_run,
    parse_segmentation_run,
)

_PREFIX = r"s3://av-annotation/(released|rework)/[A-Z]{3}-[A-Z]{3}/(VID-[0-9]{6})/"
DETECTION_PATH = f"^{_PREFIX}detections\\.json$"
SEGMENTATION_PATH = f"^{_PREFIX}segmentation\\.json$"


def _refuse(message: str, field: str) -> ToolError:
    return ToolError("invalid_value", message, field)


@tool(
    name="publish_annotations",
    description=(
        "Write the detection file (and, when a segmentation run is given, the segmentation "
        "file) of a reviewed clip to the paths given, and register them in the manifest."
    ),
    input_schema=arguments_schema(
        {
            "video_id": VIDEO_ID,
            "detection_run_id": DETECTION_RUN_ID,
            "review_id": {"type": "string", "pattern": "^RV-VID-[0-9]{6}-(STD|EXP)$"},
            "detection_path": {"type": "string", "pattern": DETECTION_PATH},
            "segmentation_run_id": SEGMENTATION_RUN_ID,
            "segmentation_path": {"type": "string", "pattern": SEGMENTATION_PATH},
        },
        required=["video_id", "detection_run_id", "review_id", "detection_path"],
    ),
    output_schema=result_schema(
        {
            "manifest_id": STRING,
            "storage_area": STRING,
            "objects_written": INTEGER,
            "masks_written": INTEGER,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    detection = parse_detection_run(ctx, args["detection_run_id"])
    video_id = args["video_id"]
    path_match = re.fullmatch(DETECTION_PATH[1:-1], args["detection_path"])
    assert path_match is not None  # the input schema's pattern
    area, path_video = path_match.groups()
    if video_id != detection.video["video_id"]:
        raise _refuse("detection_run_id belongs to another video", "detection_run_id")
    if path_video != video_id or args["review_id"][3:13] != video_id:
        raise _refuse("detection_path and review_id must name the same video", "detection_path")
    objects = len(kept_objects(ctx, detection))
    masks = 0
    if ("segmentation_run_id" in args) != ("segmentation_path" in args):
        raise _refuse(
            "give segmentation_run_id and segmentation_path together", "segmentation_path"
        )
    if "segmentation_path" in args:
        base, _ = parse_segmentation_run(ctx, args["segmentation_run_id"])
        expected = args["detection_path"].removesuffix("detections.json") + "segmentation.json"
        if base.run_id != detection.run_id or args["segmentation_path"] != expected:
            raise _refuse(
                "segmentation run or path does not match the detection", "segmentation_path"
            )
        masks = objects
    digest = hashlib.sha256(f"{args['detection_path']}|{args['review_id']}".encode()).hexdigest()
    return {
        "manifest_id": f"MF-{digest[:10].upper()}",
        "storage_area": area,
        "objects_written": objects,
        "masks_written": masks,
    }
