"""SOP-Maze-style scenario `maze/device_repair` (graph and wording in ../scenarios.py)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("device_repair")
