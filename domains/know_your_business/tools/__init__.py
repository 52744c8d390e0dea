"""Know-your-business tools, one module each, in SOP order."""

from sopgym.domains.know_your_business.tools import (
    check_business_licenses,
    get_jurisdiction_risk,
    get_ownership_structure,
    lookup_business_registry,
    record_kyb_decision,
    request_missing_information,
    screen_sanctions,
    verify_tax_identity,
)
from sopgym.domains.know_your_business.tools.distractors import DISTRACTORS

TOOLS = [
    lookup_business_registry.run,
    verify_tax_identity.run,
    check_business_licenses.run,
    get_ownership_structure.run,
    screen_sanctions.run,
    get_jurisdiction_risk.run,
    request_missing_information.run,
    record_kyb_decision.run,
]

__all__ = ["DISTRACTORS", "TOOLS"]
