"""Callable tools that look relevant to receiving inspection but that the SOP never asks for."""

from sopgym.core.tools import JSON, Tool, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.warehouse_package_inspection.tools._common import (
    IMAGE_ID,
    UNIT_COST,
    VENDOR_ID,
    WAREHOUSE_CODE,
    open_image,
)

PRODUCT_ID = {"type": "string", "pattern": "^SKU-[0-9]{6}$"}
EXAMPLE_PRODUCT = "SKU-300000"
EXAMPLE_VENDOR = "V-10000"
EXAMPLE_IMAGE = "pkg_000000.png"


def _record_lookup(
    name: str,
    description: str,
    table: str,
    key: str,
    key_schema: JSON,
    example: str,
    fields: tuple[str, ...],
) -> Tool:
    """A tool that returns ``fields`` of the ``table`` record whose ``key`` is given."""

    @tool(
        name=name,
        description=description,
        input_schema=arguments_schema({key: key_schema}, examples=[{key: example}]),
    )
    def run(args: JSON, ctx: ToolContext) -> JSON:
        record = require_row(ctx, table, key, args[key])
        return {field: record[field] for field in fields}

    return run


lookup_product_by_sku = _record_lookup(
    "lookup_product_by_sku",
    "Item-master record of a product id: description, category and case pack.",
    "products",
    "product_id",
    PRODUCT_ID,
    EXAMPLE_PRODUCT,
    ("product_id", "description", "category", "case_pack"),
)
get_vendor_scorecard = _record_lookup(
    "get_vendor_scorecard",
    "Quarterly vendor performance scorecard: on-time and fill-rate percentages.",
    "vendors",
    "vendor_id",
    VENDOR_ID,
    EXAMPLE_VENDOR,
    ("vendor_id", "vendor_name", "on_time_percent", "fill_rate_percent"),
)


@tool(
    name="measure_package_dimensions",
    description="Estimate a carton's outline in pixels from a package photo (for cubing).",
    input_schema=arguments_schema({"image_id": IMAGE_ID}, examples=[{"image_id": EXAMPLE_IMAGE}]),
)
def measure_package_dimensions(args: JSON, ctx: ToolContext) -> JSON:
    grey = open_image(ctx, args["image_id"], "L")
    # anything clearly darker than the floor counts as carton
    bbox = grey.point(lambda v: 255 if v < 200 else 0).getbbox() or (0, 0, 0, 0)
    return {
        "image_id": args["image_id"],
        "outline_width_px": bbox[2] - bbox[0],
        "outline_height_px": bbox[3] - bbox[1],
    }


@tool(
    name="estimate_transfer_freight",
    description="Estimate the freight cost of moving a pallet between two warehouses.",
    input_schema=arguments_schema(
        {
            "from_warehouse": WAREHOUSE_CODE,
            "to_warehouse": WAREHOUSE_CODE,
            "weight_kg": {"type": "number", "minimum": 0.1, "maximum": 2000},
        },
        examples=[{"from_warehouse": "ATL2", "to_warehouse": "DFW1", "weight_kg": 120.0}],
    ),
)
def estimate_transfer_freight(args: JSON, ctx: ToolContext) -> JSON:
    same = args["from_warehouse"] == args["to_warehouse"]
    cost = 0.0 if same else round(85 + 0.42 * args["weight_kg"], 2)
    return {"estimated_freight_usd": cost, "transit_days": 0 if same else 2}


@tool(
    name="calculate_restocking_fee",
    description="Customer-return restocking fee (15% of goods value, minimum $5) for a return.",
    input_schema=arguments_schema(
        {"unit_cost": UNIT_COST, "quantity": {"type": "integer", "minimum": 1, "maximum": 100000}},
        examples=[{"unit_cost": 19.99, "quantity": 4}],
    ),
)
def calculate_restocking_fee(args: JSON, ctx: ToolContext) -> JSON:
    fee = max(5.0, 0.15 * args["unit_cost"] * args["quantity"])
    return {"restocking_fee_usd": round(fee, 2)}


DISTRACTORS = [
    lookup_product_by_sku,
    get_vendor_scorecard,
    measure_package_dimensions,
    estimate_transfer_freight,
    calculate_restocking_fee,
]
