"""The name prefixes of imported domains (``sopbench/<name>``, ...). The registry in core
tells an imported domain from a pack by them, so they live in core; :mod:`sopgym.importers`
re-exports them."""

PREFIX = "sopbench/"
MAZE_PREFIX = "sopmaze/"
ABCD_PREFIX = "abcd/"
GENERATED_PREFIX = "generated/"  # packs written by `sopgym generate` (sopgym.generation)
# every imported domain's name starts with one
PREFIXES = (PREFIX, MAZE_PREFIX, ABCD_PREFIX, GENERATED_PREFIX)

# the run's seed, handed to an imported benchmark's tool service: its tools' random draws
# follow it (sopgym.importers.bridge); the stack sets it without importing the bridge (pandas)
TOOL_SEED_ENV = "SOPGYM_TOOL_SEED"
