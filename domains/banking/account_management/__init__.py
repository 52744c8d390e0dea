"""Overdraft facilities on current accounts (TELLER-style account management): customer
and account screening, a priced facility limit and a three-level approval chain."""

from pathlib import Path

from sopgym.domains.banking._engine.pack import build_pack
from sopgym.domains.banking.account_management.scenario import SCENARIO

DOMAIN = build_pack(SCENARIO, Path(__file__).parent)
