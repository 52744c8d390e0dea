"""SOP-Maze-style scenario `maze/bank_cards` (graph and wording in ../scenarios.py)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("bank_cards")
