"""Dangerous goods tools, one module each, in SOP order."""

from sopgym.domains.dangerous_goods.tools import (
    file_hazard_classification,
    get_disposal_guidelines,
    get_handling_guidelines,
    get_safety_data_sheet,
    get_transport_requirements,
)
from sopgym.domains.dangerous_goods.tools.distractors import DISTRACTORS

TOOLS = [
    get_safety_data_sheet.run,
    get_handling_guidelines.run,
    get_transport_requirements.run,
    get_disposal_guidelines.run,
    file_hazard_classification.run,
]

__all__ = ["DISTRACTORS", "TOOLS"]
