"""Patient intake: register a new patient after insurance, benefit, risk and pharmacy checks."""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.domains.patient_intake.generator import generate
from sopgym.domains.patient_intake.policy import solve
from sopgym.domains.patient_intake.tools import DISTRACTORS, TOOLS

_TEXT = {"type": "string", "minLength": 1}

DOMAIN = DomainPack(
    name="patient_intake",
    title="Patient intake and registration (healthcare)",
    folder=Path(__file__).parent,
    paper_profiles=("sopbench",),  # SOP-Bench-style: its paper re-reads every episode
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={
        "patients": "patient_id",
        "policies": "policy_number",
        "rx_plans": "rx_member_id",
        "pharmacies": "phone",
    },
    input_schema={
        "type": "object",
        "properties": {
            "patient_id": _TEXT,
            "patient_name": _TEXT,
            "date_of_birth": _TEXT,
            "visit_date": _TEXT,
            "insurance_provider": _TEXT,
            "policy_number": _TEXT,
            "rx_member_id": _TEXT,
            "smoking_status": _TEXT,
            "alcohol_consumption": _TEXT,
            "exercise_frequency": _TEXT,
            "past_surgeries": {"type": "integer"},
            "chronic_conditions": {"type": "array", "items": {"type": "string"}},
            "pharmacy_name": _TEXT,
            "pharmacy_address": _TEXT,
            "pharmacy_phone": _TEXT,
        },
        "required": [
            "patient_id",
            "patient_name",
            "date_of_birth",
            "visit_date",
            "insurance_provider",
            "policy_number",
            "smoking_status",
            "alcohol_consumption",
            "exercise_frequency",
            "past_surgeries",
            "chronic_conditions",
        ],
    },
    output_schema={
        "type": "object",
        "properties": {
            "insurance_status": {"enum": ["valid", "invalid"]},
            "prescription_coverage": {"enum": ["full", "partial", "none", "not_checked"]},
            "lifestyle_risk": {"enum": ["low", "moderate", "high"]},
            "overall_risk": {"enum": ["low", "medium", "high"]},
            "pharmacy_status": {"enum": ["in_network", "out_of_network", "not_provided"]},
            "registration_status": {"enum": ["success", "failure"]},
        },
        "required": [
            "insurance_status",
            "prescription_coverage",
            "lifestyle_risk",
            "overall_risk",
            "pharmacy_status",
            "registration_status",
        ],
        "additionalProperties": False,
    },
    dependencies={
        "check_prescription_benefits": ["validate_insurance"],
        "score_clinical_risk": ["score_lifestyle"],
        "register_patient": ["validate_insurance", "score_lifestyle", "score_clinical_risk"],
    },
)
