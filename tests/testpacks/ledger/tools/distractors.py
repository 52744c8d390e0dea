"""A callable tool the ledger SOP never needs."""

from sopgym.core.tools import ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.types import JSON


@tool(
    name="get_fx_rate",
    description="Units of a currency per euro, for quoting foreign payments.",
    input_schema=arguments_schema(
        {"currency": {"type": "string", "enum": ["EUR", "GBP", "JPY"]}},
        examples=[{"currency": "GBP"}],
    ),
    output_schema=result_schema({"currency": {"type": "string"}, "per_unit": {"type": "number"}}),
)
def get_fx_rate(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "rates", "currency", args["currency"])
    return {"currency": row["currency"], "per_unit": row["per_unit"]}


DISTRACTORS = [get_fx_rate]
