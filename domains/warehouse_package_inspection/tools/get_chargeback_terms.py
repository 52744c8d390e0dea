"""Chargeback matrix lookup: the vendor penalty terms for one discrepancy type and cost band."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.warehouse_package_inspection.tools._common import UNIT_COST

DISCREPANCY_TYPES = [
    "wrong_item",
    "unreadable_label",
    "overage",
    "underage",
    "cancelled_line",
    "severe_quantity_mismatch",
    "misdirected",
    "minor_damage",
    "severe_damage",
]
# Unit-cost bands of the matrix: (upper bound exclusive, band); the last band is open-ended.
COST_BANDS = [(20.0, "low_value"), (100.0, "standard_value"), (float("inf"), "high_value")]


def cost_band(unit_cost: float) -> str:
    return next(band for limit, band in COST_BANDS if unit_cost < limit)


@tool(
    name="get_chargeback_terms",
    description=(
        "Look up the vendor chargeback matrix for a discrepancy type at a unit cost. Returns "
        "the unit-cost band applied and that band's flat fee, percentage of goods value and "
        "maximum per discrepancy."
    ),
    input_schema=arguments_schema(
        {
            "discrepancy_type": {"type": "string", "enum": DISCREPANCY_TYPES},
            "unit_cost": UNIT_COST,
        }
    ),
    output_schema=result_schema(
        {
            "rule_id": {"type": "string"},
            "discrepancy_type": {"enum": DISCREPANCY_TYPES},
            "cost_band": {"enum": [band for _, band in COST_BANDS]},
            "flat_fee": {"type": "number"},
            "percent_of_value": {"type": "number"},
            "max_amount": {"type": "number"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    rule_id = f"{args['discrepancy_type']}/{cost_band(args['unit_cost'])}"
    terms = require_row(ctx, "chargeback_matrix", "rule_id", rule_id, "chargeback rule")
    return {
        k: terms[k]
        for k in (
            "rule_id",
            "discrepancy_type",
            "cost_band",
            "flat_fee",
            "percent_of_value",
            "max_amount",
        )
    }
