"""Schema fragments and lookups shared by the seller-email tools.

The catalogue tools all take a seller and a product; defining the id formats and the
ownership check once keeps their contracts and their refusals identical.
"""

from __future__ import annotations

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, not_found, require_row

SELLER_ID = {"type": "string", "pattern": "^S[0-9]{6}$", "description": "Seller id, e.g. S100042"}
PRODUCT_ID = {
    "type": "string",
    "pattern": "^B0[0-9A-Z]{8}$",
    "description": "Ten-character product id as quoted by the seller, e.g. B07XK2M9QP",
}


def owned_record(ctx: ToolContext, table: str, seller_id: str, product_id: str) -> JSON:
    """A product's record in ``table``, only for the seller who owns the listing.

    Pricing and inventory data are confidential to the listing's owner: the SOP consults
    them only after the product was verified, so any other request is refused.
    """
    require_row(ctx, "sellers", "seller_id", seller_id)
    listing = ctx.tables.row("listings", "product_id", product_id)
    record = ctx.tables.row(table, "product_id", product_id)
    if listing is None or record is None:
        raise not_found("product", "product_id", product_id)
    if listing["seller_id"] != seller_id:
        raise ToolError(
            "forbidden", f"product {product_id} is not listed by seller {seller_id}", "product_id"
        )
    return record
