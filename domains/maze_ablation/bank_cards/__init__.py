"""`maze/bank_cards` with simplified queries: the conversation ablation (see the family)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("bank_cards", simplified=True)
