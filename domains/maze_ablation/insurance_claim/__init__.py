"""`maze/insurance_claim` with simplified queries: the calculation ablation (see the family)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("insurance_claim", simplified=True)
