"""Callable tools that look relevant to intake but that the SOP never asks for."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.patient_intake.tools._common import PATIENT_ID


@tool(
    name="check_insurance_eligibility_legacy",
    description="Legacy eligibility screen kept for the billing team; returns a coarse flag.",
    input_schema=arguments_schema(
        {"patient_id": PATIENT_ID, "policy_number": {"type": "string"}},
        examples=[{"patient_id": "P100000000", "policy_number": "AET-100000"}],
    ),
)
def check_insurance_eligibility_legacy(args: JSON, ctx: ToolContext) -> JSON:
    return {
        "screen_passed": ctx.tables.row("policies", "policy_number", args["policy_number"])
        is not None,
        "note": "legacy screen: does not check status or coverage dates",
    }


@tool(
    name="list_patient_allergies",
    description="List the allergies recorded in the patient's chart.",
    input_schema=arguments_schema(
        {"patient_id": PATIENT_ID}, examples=[{"patient_id": "P100000000"}]
    ),
)
def list_patient_allergies(args: JSON, ctx: ToolContext) -> JSON:
    patient = require_row(ctx, "patients", "patient_id", args["patient_id"])
    return {"allergies": patient["allergies"]}


@tool(
    name="estimate_visit_copay",
    description="Estimate the copay for an office visit under a policy.",
    input_schema=arguments_schema(
        {
            "policy_number": {"type": "string"},
            "visit_type": {"type": "string", "enum": ["primary", "specialist", "urgent"]},
        },
        examples=[{"policy_number": "AET-100000", "visit_type": "primary"}],
    ),
)
def estimate_visit_copay(args: JSON, ctx: ToolContext) -> JSON:
    base = {"primary": 25, "specialist": 50, "urgent": 75}[args["visit_type"]]
    return {"estimated_copay_usd": base, "currency": "USD"}


DISTRACTORS = [check_insurance_eligibility_legacy, list_patient_allergies, estimate_visit_copay]
