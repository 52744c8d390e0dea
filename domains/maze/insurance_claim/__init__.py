"""SOP-Maze-style scenario `maze/insurance_claim` (graph and wording in ../scenarios.py)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("insurance_claim")
