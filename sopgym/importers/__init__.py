"""Importers: published benchmarks that users already hold, served and scored by sopgym.

SOP-Bench (``sopbench/<name>`` domains) and ABCD (``abcd/<name>``) are read. Nothing here
copies the user's files: the import registry remembers where each benchmark folder lives,
and every process that needs it (the runner, the tool service, the audit) reads the folder
in place.
"""

PREFIX = "sopbench/"
ABCD_PREFIX = "abcd/"
PREFIXES = (PREFIX, ABCD_PREFIX)  # every imported name starts with one of these
