"""SOP-Maze-style scenario `maze/account_recovery` (graph and wording in ../scenarios.py)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("account_recovery")
