"""The seller e-mail SOP's four tools, in the order the SOP introduces them, and distractors."""

from sopgym.domains.email_intent.tools import (
    check_pricing_rules,
    extract_email_features,
    get_inventory_status,
    get_product_listing,
)
from sopgym.domains.email_intent.tools.distractors import DISTRACTORS

TOOLS = [
    extract_email_features.run,
    get_product_listing.run,
    check_pricing_rules.run,
    get_inventory_status.run,
]

__all__ = ["DISTRACTORS", "TOOLS"]
