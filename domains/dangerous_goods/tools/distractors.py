"""Callable tools that sound useful for classification but that the SOP never asks for."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.dangerous_goods.tools._common import PRODUCT_ID, TRANSPORT_MODE, UN_NUMBER

_EXAMPLE_PRODUCT = "PRD-400000"
_SURCHARGE_PER_KG = {"road": 0.4, "sea": 0.25, "air": 1.8}


@tool(
    name="get_sds_summary_legacy",
    description=(
        "Legacy one-line SDS summary from the retired chemical inventory; kept for the "
        "purchasing team. Gives a coarse hazard label only."
    ),
    input_schema=arguments_schema(
        {"product_id": PRODUCT_ID}, examples=[{"product_id": _EXAMPLE_PRODUCT}]
    ),
)
def get_sds_summary_legacy(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "products", "product_id", args["product_id"])
    return {
        "product_id": args["product_id"],
        "legacy_label": "regulated chemical",
        "note": "legacy summary: carries no severity scores and is not maintained",
    }


@tool(
    name="lookup_un_number",
    description="Search the UN dangerous goods list by (part of) a proper shipping name.",
    input_schema=arguments_schema(
        {"shipping_name": {"type": "string", "minLength": 3, "maxLength": 120}},
        examples=[{"shipping_name": "acetone"}],
    ),
)
def lookup_un_number(args: JSON, ctx: ToolContext) -> JSON:
    wanted = args["shipping_name"].strip().casefold()
    frame = ctx.tables.frame("transport_requirements")
    hits = frame[frame["proper_shipping_name"].str.casefold().str.contains(wanted, regex=False)]
    return {
        "matches": [
            {"un_number": r["un_number"], "proper_shipping_name": r["proper_shipping_name"]}
            for r in hits.sort_values("un_number").to_dict("records")
        ]
    }


@tool(
    name="estimate_freight_surcharge",
    description="Estimate the dangerous-goods freight surcharge for a shipment.",
    input_schema=arguments_schema(
        {
            "un_number": UN_NUMBER,
            "transport_mode": TRANSPORT_MODE,
            "weight_kg": {"type": "number", "minimum": 0.1, "maximum": 100000},
        },
        examples=[{"un_number": "UN1993", "transport_mode": "road", "weight_kg": 250}],
    ),
)
def estimate_freight_surcharge(args: JSON, ctx: ToolContext) -> JSON:
    amount = round(args["weight_kg"] * _SURCHARGE_PER_KG[args["transport_mode"]], 2)
    return {"surcharge_eur": amount, "currency": "EUR", "basis": "per kg, indicative only"}


@tool(
    name="get_supplier_emergency_contact",
    description="Return the supplier's 24-hour emergency telephone number for a product.",
    input_schema=arguments_schema(
        {"product_id": PRODUCT_ID}, examples=[{"product_id": _EXAMPLE_PRODUCT}]
    ),
)
def get_supplier_emergency_contact(args: JSON, ctx: ToolContext) -> JSON:
    product = require_row(ctx, "products", "product_id", args["product_id"])
    return {"supplier": product["supplier"], "emergency_phone": product["emergency_phone"]}


DISTRACTORS = [
    get_sds_summary_legacy,
    lookup_un_number,
    estimate_freight_surcharge,
    get_supplier_emergency_contact,
]
