"""Ledger tools in SOP order: one read tool and two that write the episode's state."""

from tests.testpacks.ledger.tools._common import ACCOUNT_ID
from tests.testpacks.ledger.tools.accounts import get_account, place_hold, transfer_funds
from tests.testpacks.ledger.tools.distractors import DISTRACTORS

TOOLS = [get_account, transfer_funds, place_hold]

__all__ = ["ACCOUNT_ID", "DISTRACTORS", "TOOLS"]
