"""Fund investment orders (TELLER-style): identity, sanctions, knowledge and concentration
screening, suitability, an investable maximum, and a three-level approval chain."""

from pathlib import Path

from sopgym.domains.banking._engine.pack import build_pack
from sopgym.domains.banking.investments.scenario import SCENARIO

DOMAIN = build_pack(SCENARIO, Path(__file__).parent)
