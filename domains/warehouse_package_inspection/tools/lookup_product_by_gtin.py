"""Item-master lookup by GTIN: which product a decoded barcode identifies, if any."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.warehouse_package_inspection.tools._common import GTIN, NULLABLE_STRING

PRODUCT_FIELDS = ("product_id", "description", "category", "unit_of_measure")


@tool(
    name="lookup_product_by_gtin",
    description=(
        "Find the product registered in the item master under a 13-digit GTIN. Returns "
        "product_found false when no product carries that GTIN."
    ),
    input_schema=arguments_schema({"gtin": GTIN}),
    output_schema=result_schema(
        {
            "gtin": {"type": "string"},
            "product_found": {"type": "boolean"},
            **dict.fromkeys(PRODUCT_FIELDS, NULLABLE_STRING),
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    product = ctx.tables.row("products", "gtin", args["gtin"])
    if product is None:
        return {"gtin": args["gtin"], "product_found": False, **dict.fromkeys(PRODUCT_FIELDS)}
    return {
        "gtin": args["gtin"],
        "product_found": True,
        **{k: product[k] for k in PRODUCT_FIELDS},
    }
