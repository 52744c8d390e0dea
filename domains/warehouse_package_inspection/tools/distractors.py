"""Callable tools that look relevant to receiving inspection but that the SOP never asks for."""

from sopgym.core.tools import JSON, ToolContext, not_found, tool
from sopgym.domains.warehouse_package_inspection.tools._common import (
    IMAGE_ID,
    UNIT_COST,
    VENDOR_ID,
    WAREHOUSE_CODE,
    object_schema,
    open_image,
)

PRODUCT_ID = {"type": "string", "pattern": "^SKU-[0-9]{6}$"}
EXAMPLE_PRODUCT = "SKU-300000"
EXAMPLE_VENDOR = "V-10000"
EXAMPLE_IMAGE = "pkg_000000.png"


@tool(
    name="lookup_product_by_sku",
    description="Item-master record of a product id: description, category and case pack.",
    input_schema=object_schema({"product_id": PRODUCT_ID}, [{"product_id": EXAMPLE_PRODUCT}]),
)
def lookup_product_by_sku(args: JSON, ctx: ToolContext) -> JSON:
    product = ctx.tables.row("products", "product_id", args["product_id"])
    if product is None:
        raise not_found("product", "product_id", args["product_id"])
    return {
        "product_id": product["product_id"],
        "description": product["description"],
        "category": product["category"],
        "case_pack": product["case_pack"],
    }


@tool(
    name="get_vendor_scorecard",
    description="Quarterly vendor performance scorecard: on-time and fill-rate percentages.",
    input_schema=object_schema({"vendor_id": VENDOR_ID}, [{"vendor_id": EXAMPLE_VENDOR}]),
)
def get_vendor_scorecard(args: JSON, ctx: ToolContext) -> JSON:
    vendor = ctx.tables.row("vendors", "vendor_id", args["vendor_id"])
    if vendor is None:
        raise not_found("vendor", "vendor_id", args["vendor_id"])
    return {
        "vendor_id": vendor["vendor_id"],
        "vendor_name": vendor["vendor_name"],
        "on_time_percent": vendor["on_time_percent"],
        "fill_rate_percent": vendor["fill_rate_percent"],
    }


@tool(
    name="measure_package_dimensions",
    description="Estimate a carton's outline in pixels from a package photo (for cubing).",
    input_schema=object_schema({"image_id": IMAGE_ID}, [{"image_id": EXAMPLE_IMAGE}]),
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
    input_schema=object_schema(
        {
            "from_warehouse": WAREHOUSE_CODE,
            "to_warehouse": WAREHOUSE_CODE,
            "weight_kg": {"type": "number", "minimum": 0.1, "maximum": 2000},
        },
        [{"from_warehouse": "ATL2", "to_warehouse": "DFW1", "weight_kg": 120.0}],
    ),
)
def estimate_transfer_freight(args: JSON, ctx: ToolContext) -> JSON:
    same = args["from_warehouse"] == args["to_warehouse"]
    cost = 0.0 if same else round(85 + 0.42 * args["weight_kg"], 2)
    return {"estimated_freight_usd": cost, "transit_days": 0 if same else 2}


@tool(
    name="calculate_restocking_fee",
    description="Customer-return restocking fee (15% of goods value, minimum $5) for a return.",
    input_schema=object_schema(
        {"unit_cost": UNIT_COST, "quantity": {"type": "integer", "minimum": 1, "maximum": 100000}},
        [{"unit_cost": 19.99, "quantity": 4}],
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
