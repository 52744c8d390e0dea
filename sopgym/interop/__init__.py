"""sopgym run from other harnesses: an Inspect AI task and model provider
(:mod:`.inspect_task`, :mod:`.inspect_model`, registered through the ``inspect_ai`` entry
point by :mod:`.inspect_registry`). Each module imports its harness only when loaded."""
