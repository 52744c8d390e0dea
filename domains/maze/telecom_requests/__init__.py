"""SOP-Maze-style scenario `maze/telecom_requests` (graph and wording in ../scenarios.py)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("telecom_requests")
