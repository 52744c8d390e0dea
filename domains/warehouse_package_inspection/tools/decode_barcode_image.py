"""Decode the EAN-13 barcode photographed on a package by reading its pixel columns."""

from PIL import Image

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.warehouse_package_inspection.symbology import MODULES, SymbolError, decode
from sopgym.domains.warehouse_package_inspection.tools._common import (
    IMAGE_ID,
    NULLABLE_STRING,
    open_image,
)

DARK_BELOW = 128  # a column whose mean grey level is under this reads as a bar


def column_bits(image: Image.Image) -> list[bool]:
    """Dark/light per pixel column, averaged over the middle band of rows (C-speed resize)."""
    width, height = image.size
    band = image.crop((0, height * 3 // 10, width, height * 7 // 10 + 1))
    means = band.resize((width, 1), Image.Resampling.BOX).tobytes()
    return [value < DARK_BELOW for value in means]


def read_modules(bits: list[bool]) -> tuple[str, int]:
    """The symbol's module string and module width, from its first to its last bar."""
    dark = [x for x, b in enumerate(bits) if b]
    if not dark:
        raise SymbolError("no bars found")
    first, last = dark[0], dark[-1]
    span = last - first + 1
    if span % MODULES:
        raise SymbolError(f"symbol width {span}px is not a whole number of modules")
    width = span // MODULES
    modules = "".join("1" if bits[first + m * width + width // 2] else "0" for m in range(MODULES))
    return modules, width


@tool(
    name="decode_barcode_image",
    description=(
        "Decode the EAN-13 barcode in a package's barcode image. Returns whether a valid "
        "symbol was read, the 13-digit GTIN it carries and, when it could not be read, why."
    ),
    input_schema=arguments_schema({"image_id": IMAGE_ID}),
    output_schema=result_schema(
        {
            "image_id": {"type": "string"},
            "decoded": {"type": "boolean"},
            "gtin": NULLABLE_STRING,
            "module_width_px": {"type": ["integer", "null"]},
            "failure_reason": NULLABLE_STRING,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    image = open_image(ctx, args["image_id"], "L")
    result: JSON = {"image_id": args["image_id"], "module_width_px": None}
    try:
        modules, width = read_modules(column_bits(image))
        result["module_width_px"] = width
        gtin = decode(modules)
    except SymbolError as error:
        return {**result, "decoded": False, "gtin": None, "failure_reason": str(error)}
    return {**result, "decoded": True, "gtin": gtin, "failure_reason": None}
