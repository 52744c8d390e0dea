"""Schema fragments and file access shared by the inspection tools."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, UnidentifiedImageError

from sopgym.core.errors import ToolError
from sopgym.core.tools import ToolContext, not_found

PO_NUMBER = {"type": "string", "pattern": "^PO-[0-9]{7}$"}
IMAGE_ID = {
    "type": "string",
    "pattern": "^[a-z]{2,4}_[0-9]{6}\\.png$",
    "description": "File name of an inspection image, as given on the receiving record.",
}
GTIN = {"type": "string", "pattern": "^[0-9]{13}$"}
LOCATION_CODE = {"type": "string", "pattern": "^RCV-[0-9]{4}$"}
WAREHOUSE_CODE = {"type": "string", "pattern": "^[A-Z]{3}[0-9]$"}
VENDOR_ID = {"type": "string", "pattern": "^V-[0-9]{5}$"}
UNIT_COST = {"type": "number", "minimum": 0.01, "maximum": 100000}
NULLABLE_STRING = {"type": ["string", "null"]}


def open_image(ctx: ToolContext, image_id: str, mode: str) -> Image.Image:
    """Load an inspection image from the dataset's files; the id is a bare file name."""
    path = Path(ctx.files_dir or ".") / image_id
    if not path.is_file():
        raise not_found("image", "image_id", image_id)
    try:
        with Image.open(path) as image:
            return image.convert(mode)
    except UnidentifiedImageError as error:
        raise ToolError(
            "invalid_value", f"{image_id!r} is not a readable image", "image_id"
        ) from error
