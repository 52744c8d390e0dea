"""Catalogue lookup of the product a seller wrote about: owner, status and restrictions."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.email_intent.tools._common import PRODUCT_ID, SELLER_ID

LISTING_FIELDS = ("title", "category", "listing_status", "status_reason", "brand_gated")


@tool(
    name="get_product_listing",
    description=(
        "Step 2 of seller e-mail handling. Look a product id up in the catalogue: whether "
        "the listing exists, the seller who owns it, its title and category, its listing "
        "status (active or inactive) with the reason when inactive, and whether the "
        "category is brand-gated (content changes need brand approval)."
    ),
    input_schema=arguments_schema({"seller_id": SELLER_ID, "product_id": PRODUCT_ID}),
    output_schema=result_schema(
        {
            "listing_found": {"type": "boolean"},
            "owner_seller_id": {"type": ["string", "null"]},
            "title": {"type": ["string", "null"]},
            "category": {"type": ["string", "null"]},
            "listing_status": {"enum": ["active", "inactive", None]},
            "status_reason": {"enum": ["out_of_stock", "policy_violation", None]},
            "brand_gated": {"type": ["boolean", "null"]},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "sellers", "seller_id", args["seller_id"])
    listing = ctx.tables.row("listings", "product_id", args["product_id"])
    if listing is None:
        return {"listing_found": False, "owner_seller_id": None, **dict.fromkeys(LISTING_FIELDS)}
    return {
        "listing_found": True,
        "owner_seller_id": listing["seller_id"],
        **{k: listing[k] for k in LISTING_FIELDS},
    }
