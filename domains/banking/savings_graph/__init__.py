"""Stage 1 of the savings scenario: its API dependency graph, one shot."""

from pathlib import Path

from sopgym.domains.banking._engine.graph import build_graph_pack
from sopgym.domains.banking._engine.pack import scenario_of

DOMAIN = build_graph_pack(scenario_of("savings"), Path(__file__).parent)
