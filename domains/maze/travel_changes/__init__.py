"""SOP-Maze-style scenario `maze/travel_changes` (graph and wording in ../scenarios.py)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("travel_changes")
