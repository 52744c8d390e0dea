"""Schema fragments shared by the patient-intake tools.

Every tool is called for one patient and some take the policy number or dates of the intake
form; defining their shapes once keeps the contracts of the tools consistent.
"""

from __future__ import annotations

from sopgym.core.tools import JSON

PATIENT_ID: JSON = {"type": "string", "pattern": "^P[0-9]{9}$"}
POLICY_NUMBER: JSON = {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{6}$"}
DATE: JSON = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
