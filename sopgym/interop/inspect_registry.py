"""What the ``inspect_ai`` entry point loads (pyproject.toml): importing registers the task
``sopgym/sopgym_task`` and the model provider ``sopgym`` (``--model sopgym/scripted``)."""

from sopgym.interop.inspect_model import ScriptedModelAPI
from sopgym.interop.inspect_task import sopgym_task

__all__ = ["ScriptedModelAPI", "sopgym_task"]
