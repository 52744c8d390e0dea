"""Importers: published benchmarks that users already hold, served and scored by sopgym.

SOP-Bench (``sopbench/<name>`` domains) and SOP-Maze (``sopmaze/<name>``, one per published
file: :mod:`.sopmaze`). Nothing here copies the user's files: the
import registry remembers where each benchmark folder lives, and every process that needs it
(the runner, the tool service, the audit) reads the folder in place.
"""

PREFIX = "sopbench/"
MAZE_PREFIX = "sopmaze/"
PREFIXES = (PREFIX, MAZE_PREFIX)  # every imported domain's name starts with one of these
