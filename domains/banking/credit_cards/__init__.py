"""Credit card applications (TELLER-style): identity, credit file and fraud screening, a
credit line sized by affordability, and a three-level approval chain."""

from pathlib import Path

from sopgym.domains.banking._engine.pack import build_pack
from sopgym.domains.banking.credit_cards.scenario import SCENARIO

DOMAIN = build_pack(SCENARIO, Path(__file__).parent)
