"""Received versus expected units of a PO line, where expected excludes cancelled units."""

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.warehouse_package_inspection.tools._common import PO_NUMBER


@tool(
    name="calculate_quantity_variance",
    description=(
        "Compare the units received with the units still expected on a purchase-order line "
        "(ordered minus cancelled). Returns the variance in units and as a signed percentage "
        "of the expected quantity (null when nothing is expected)."
    ),
    input_schema=arguments_schema(
        {
            "po_number": PO_NUMBER,
            "received_quantity": {"type": "integer", "minimum": 0, "maximum": 100000},
        }
    ),
    output_schema=result_schema(
        {
            "po_number": {"type": "string"},
            "ordered_quantity": {"type": "integer"},
            "cancelled_quantity": {"type": "integer"},
            "expected_quantity": {"type": "integer"},
            "received_quantity": {"type": "integer"},
            "variance_units": {"type": "integer"},
            "variance_percent": {"type": ["number", "null"]},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    line = require_row(ctx, "purchase_orders", "po_number", args["po_number"], "purchase order")
    expected = line["ordered_quantity"] - line["cancelled_quantity"]
    if expected < 0:  # a data defect, never produced by the generator
        raise ToolError("invalid_value", "cancelled quantity exceeds ordered", "po_number")
    received = args["received_quantity"]
    variance = received - expected
    return {
        "po_number": args["po_number"],
        "ordered_quantity": line["ordered_quantity"],
        "cancelled_quantity": line["cancelled_quantity"],
        "expected_quantity": expected,
        "received_quantity": received,
        "variance_units": variance,
        "variance_percent": round(100 * variance / expected, 2) if expected else None,
    }
