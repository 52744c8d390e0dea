"""Patient intake tools, one module each, in SOP order."""

from sopgym.domains.patient_intake.tools import (
    check_prescription_benefits,
    register_patient,
    score_clinical_risk,
    score_lifestyle,
    validate_insurance,
    verify_pharmacy,
)
from sopgym.domains.patient_intake.tools.distractors import DISTRACTORS

TOOLS = [
    validate_insurance.run,
    check_prescription_benefits.run,
    score_lifestyle.run,
    score_clinical_risk.run,
    verify_pharmacy.run,
    register_patient.run,
]

__all__ = ["DISTRACTORS", "TOOLS"]
