"""Pricing-system check of a requested price against the product's price rules."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, tool
from sopgym.domains.email_intent.tools._common import PRODUCT_ID, SELLER_ID, owned_record


@tool(
    name="check_pricing_rules",
    description=(
        "Step 3a of seller e-mail handling (pricing requests). Compare a requested price "
        "with the product's pricing data: current price, minimum allowed price (price floor) "
        "and the marketplace reference price, and the requested price's deviation from the "
        "reference in percent (one decimal). Only for the listing's own seller."
    ),
    input_schema=arguments_schema(
        {
            "seller_id": SELLER_ID,
            "product_id": PRODUCT_ID,
            "requested_price": {"type": "number", "exclusiveMinimum": 0, "maximum": 1_000_000},
        }
    ),
    output_schema={
        "type": "object",
        "properties": {
            "current_price": {"type": "number"},
            "minimum_allowed_price": {"type": "number"},
            "reference_price": {"type": "number"},
            "requested_price": {"type": "number"},
            "deviation_from_reference_percent": {"type": "number"},
            "currency": {"const": "USD"},
        },
        "required": [
            "current_price",
            "minimum_allowed_price",
            "reference_price",
            "deviation_from_reference_percent",
        ],
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    prices = owned_record(ctx, "pricing", args["seller_id"], args["product_id"])
    reference, requested = prices["reference_price"], args["requested_price"]
    deviation = round((requested - reference) / reference * 100, 1)
    return {
        "current_price": prices["current_price"],
        "minimum_allowed_price": prices["minimum_allowed_price"],
        "reference_price": reference,
        "requested_price": requested,
        "deviation_from_reference_percent": deviation,
        "currency": "USD",
    }
