"""Purchase-order lookup: what was ordered, from whom, at what cost and for which site."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.warehouse_package_inspection.tools._common import PO_NUMBER

PO_FIELDS = (
    "po_number",
    "vendor_id",
    "product_id",
    "line_status",
    "ordered_quantity",
    "cancelled_quantity",
    "unit_cost",
    "ship_to_warehouse",
    "order_date",
)


@tool(
    name="get_purchase_order_line",
    description=(
        "Retrieve the purchase-order line a shipment was received against: vendor, the "
        "confirmed product id, ordered and cancelled quantities, the agreed unit cost and the "
        "warehouse the goods were ordered for."
    ),
    input_schema=arguments_schema({"po_number": PO_NUMBER}),
    output_schema=result_schema(
        {
            "po_number": {"type": "string"},
            "vendor_id": {"type": "string"},
            "product_id": {"type": "string"},
            "line_status": {"enum": ["open", "partially_cancelled", "cancelled"]},
            "ordered_quantity": {"type": "integer"},
            "cancelled_quantity": {"type": "integer"},
            "unit_cost": {"type": "number"},
            "ship_to_warehouse": {"type": "string"},
            "order_date": {"type": "string", "format": "date"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    line = require_row(ctx, "purchase_orders", "po_number", args["po_number"], "purchase order")
    return {k: line[k] for k in PO_FIELDS}
