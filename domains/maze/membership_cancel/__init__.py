"""SOP-Maze-style scenario `maze/membership_cancel` (graph and wording in ../scenarios.py)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("membership_cancel")
