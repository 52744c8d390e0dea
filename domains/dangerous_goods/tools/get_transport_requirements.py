"""Step 4 of the SOP: transport requirements of a UN number for one mode of transport.

Severity differs per mode (air is usually the strictest); a mode that was never assessed for
the UN number has no score.
"""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.dangerous_goods.tools._common import (
    NULLABLE_TEXT,
    SEVERITY,
    TRANSPORT_MODE,
    UN_NUMBER,
    severity,
)


@tool(
    name="get_transport_requirements",
    description=(
        "Retrieve the transport requirements for a UN number and a mode of transport (road, "
        "sea or air): proper shipping name, UN hazard class/division, packing group and the "
        "transport severity score for that mode (1-5, null when the mode was not assessed)."
    ),
    input_schema=arguments_schema({"un_number": UN_NUMBER, "transport_mode": TRANSPORT_MODE}),
    output_schema=result_schema(
        {
            "requirement_found": {"type": "boolean"},
            "un_number": {"type": "string"},
            "transport_mode": {"type": "string"},
            "proper_shipping_name": NULLABLE_TEXT,
            "un_class_division": NULLABLE_TEXT,
            "packing_group": NULLABLE_TEXT,
            "transport_severity_score": SEVERITY,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    requirement = ctx.tables.row("transport_requirements", "un_number", args["un_number"])
    base = {"un_number": args["un_number"], "transport_mode": args["transport_mode"]}
    if requirement is None:
        return {
            "requirement_found": False,
            **base,
            "proper_shipping_name": None,
            "un_class_division": None,
            "packing_group": None,
            "transport_severity_score": None,
        }
    return {
        "requirement_found": True,
        **base,
        "proper_shipping_name": requirement["proper_shipping_name"],
        "un_class_division": requirement["un_class_division"],
        "packing_group": requirement["packing_group"],
        "transport_severity_score": severity(requirement[f"{args['transport_mode']}_score"]),
    }
