"""Loan applications (TELLER-style): screening, exception paths, pricing, a three-level
approval chain and the write-back, on the episode's own database."""

from pathlib import Path

from sopgym.domains.banking._engine.pack import build_pack
from sopgym.domains.banking.loans.scenario import SCENARIO

DOMAIN = build_pack(SCENARIO, Path(__file__).parent)
