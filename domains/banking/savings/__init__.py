"""Fixed-term savings deposits (TELLER-style): identity, sanctions and source-of-funds
screening, AML risk, a product cap on the accepted deposit, and a three-level approval chain."""

from pathlib import Path

from sopgym.domains.banking._engine.pack import build_pack
from sopgym.domains.banking.savings.scenario import SCENARIO

DOMAIN = build_pack(SCENARIO, Path(__file__).parent)
