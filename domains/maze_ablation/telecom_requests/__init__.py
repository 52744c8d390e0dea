"""`maze/telecom_requests` with simplified queries: the route ablation (see the family)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("telecom_requests", simplified=True)
