"""The run-folder layer, beneath orchestration and evaluation: the typed records a run folder
holds (:mod:`sopgym.runs.records`) and the :class:`~sopgym.runs.folder.RunFolder` every writer
of a run folder writes through (``sopgym run``, ``sopgym score``, the episode recorder).

It imports only :mod:`sopgym.core` and the shared types; ``tests/test_import_layers.py`` holds
it to that."""
