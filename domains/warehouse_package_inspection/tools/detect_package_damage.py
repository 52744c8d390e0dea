"""Measure dark damage marks (water stains, crush marks) on a package photo."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.warehouse_package_inspection.tools._common import IMAGE_ID, open_image

DARK_BELOW = 60  # luminance; carton, tape and label print are all well above it


@tool(
    name="detect_package_damage",
    description=(
        "Analyse a package photo for dark damage marks. Returns the number of dark pixels, "
        "their share of the photo in percent (2 decimals) and the bounding box around them."
    ),
    input_schema=arguments_schema({"image_id": IMAGE_ID}),
    output_schema=result_schema(
        {
            "image_id": {"type": "string"},
            "width_px": {"type": "integer"},
            "height_px": {"type": "integer"},
            "dark_pixel_count": {"type": "integer"},
            "dark_area_percent": {"type": "number"},
            "dark_region_bbox": {
                "type": ["array", "null"],
                "items": {"type": "integer"},
                "minItems": 4,
                "maxItems": 4,
            },
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    grey = open_image(ctx, args["image_id"], "L")
    mask = grey.point(lambda v: 255 if v < DARK_BELOW else 0)
    dark = mask.histogram()[255]
    width, height = grey.size
    bbox = mask.getbbox()
    return {
        "image_id": args["image_id"],
        "width_px": width,
        "height_px": height,
        "dark_pixel_count": dark,
        "dark_area_percent": round(100 * dark / (width * height), 2),
        "dark_region_bbox": list(bbox) if bbox else None,
    }
