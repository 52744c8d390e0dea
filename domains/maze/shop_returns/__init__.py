"""SOP-Maze-style scenario `maze/shop_returns` (graph and wording in ../scenarios.py)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("shop_returns")
