"""Importers: published benchmarks that users already hold, served and scored by sopgym.

SOP-Bench (``sopbench/<name>``), SOP-Maze (``sopmaze/<name>``, one per published file:
:mod:`.sopmaze`) and ABCD (``abcd/<name>``: :mod:`.abcd`); the packs ``sopgym generate`` writes
(``generated/<name>``) are registered the same way. Nothing here copies the user's
files: the import registry remembers where each benchmark folder lives, and every process that
needs it (the runner, the tool service, the audit) reads the folder in place.
"""

from sopgym.core.imported import ABCD_PREFIX, GENERATED_PREFIX, MAZE_PREFIX, PREFIX, PREFIXES

__all__ = ["ABCD_PREFIX", "GENERATED_PREFIX", "MAZE_PREFIX", "PREFIX", "PREFIXES"]
