"""Lifestyle points per the SOP's scoring table (section 4)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, tool
from sopgym.domains.patient_intake.tools._common import PATIENT_ID

SMOKING = {"Never": 0, "Former": 1, "Current": 3}
ALCOHOL = {"None": 0, "Occasional": 0, "Moderate": 1, "Heavy": 3}
EXERCISE = {"None": 2, "1-2 times": 1, "3-4 times": 0, "5+ times": 0}


@tool(
    name="score_lifestyle",
    description=(
        "Compute lifestyle risk points from smoking status, alcohol consumption and weekly "
        "exercise frequency. Returns the points per factor and their total."
    ),
    input_schema=arguments_schema(
        {
            "patient_id": PATIENT_ID,
            "smoking_status": {"type": "string", "enum": list(SMOKING)},
            "alcohol_consumption": {"type": "string", "enum": list(ALCOHOL)},
            "exercise_frequency": {"type": "string", "enum": list(EXERCISE)},
        }
    ),
    output_schema={
        "type": "object",
        "properties": {
            "smoking_points": {"type": "integer"},
            "alcohol_points": {"type": "integer"},
            "exercise_points": {"type": "integer"},
            "total_points": {"type": "integer"},
        },
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    points = {
        "smoking_points": SMOKING[args["smoking_status"]],
        "alcohol_points": ALCOHOL[args["alcohol_consumption"]],
        "exercise_points": EXERCISE[args["exercise_frequency"]],
    }
    return {**points, "total_points": sum(points.values())}
