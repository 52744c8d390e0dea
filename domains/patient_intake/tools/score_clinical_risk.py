"""Clinical risk points: age, surgical history, chronic conditions and the lifestyle level."""

from datetime import date

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, arguments_schema, tool
from sopgym.domains.patient_intake.tools._common import DATE, PATIENT_ID

LIFESTYLE_POINTS = {"low": 0, "moderate": 2, "high": 4}


def age_on(birth: date, day: date) -> int:
    return day.year - birth.year - ((day.month, day.day) < (birth.month, birth.day))


def _date(args: JSON, key: str) -> date:
    try:
        return date.fromisoformat(args[key])
    except ValueError as error:
        raise ToolError(
            "invalid_value", f"argument '{key}' is not a YYYY-MM-DD date", key
        ) from error


@tool(
    name="score_clinical_risk",
    description=(
        "Compute clinical risk points from the patient's age on the visit date, number of past "
        "surgeries, chronic conditions and the lifestyle risk level already determined."
    ),
    input_schema=arguments_schema(
        {
            "patient_id": PATIENT_ID,
            "date_of_birth": DATE,
            "visit_date": DATE,
            "past_surgeries": {"type": "integer", "minimum": 0, "maximum": 50},
            "chronic_conditions": {"type": "array", "items": {"type": "string"}},
            "lifestyle_risk_level": {"type": "string", "enum": list(LIFESTYLE_POINTS)},
        }
    ),
    output_schema={
        "type": "object",
        "properties": {
            "age_years": {"type": "integer"},
            "age_points": {"type": "integer"},
            "surgery_points": {"type": "integer"},
            "condition_points": {"type": "integer"},
            "lifestyle_points": {"type": "integer"},
            "total_points": {"type": "integer"},
        },
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    age = age_on(_date(args, "date_of_birth"), _date(args, "visit_date"))
    if age < 0:
        raise ToolError("invalid_value", "date_of_birth is after visit_date", "date_of_birth")
    points = {
        "age_points": 2 if age >= 65 else 1 if age >= 45 else 0,
        "surgery_points": min(args["past_surgeries"], 3),
        "condition_points": 2 * len({c.strip().lower() for c in args["chronic_conditions"]}),
        "lifestyle_points": LIFESTYLE_POINTS[args["lifestyle_risk_level"]],
    }
    return {"age_years": age, **points, "total_points": sum(points.values())}
