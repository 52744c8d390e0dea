"""SOP-Maze-style scenario `maze/utility_services` (graph and wording in ../scenarios.py)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("utility_services")
