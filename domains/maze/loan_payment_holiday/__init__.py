"""SOP-Maze-style scenario `maze/loan_payment_holiday` (graph and wording in ../scenarios.py)."""

from sopgym.domains.maze.pack import scenario_pack

DOMAIN = scenario_pack("loan_payment_holiday")
