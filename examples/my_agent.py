"""A complete sopgym agent in thirty lines: ``sopgym run patient_intake --agent
examples.my_agent:MyAgent``. It needs no model: it calls each tool whose required arguments
it can fill from the case and from what earlier tools returned, then answers each output field
with the value a tool returned under that name. (docs/own-agent.md explains the interface.)"""

from typing import Any

from sopgym.agents.base import AgentContext
from sopgym.client import Episode
from sopgym.core.tasks import Task


class MyAgent:
    name = "my-agent"  # how traces and the episodes' records name it
    uses_model = False  # True: the run starts its model and passes model= and base_url=

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> dict[str, Any]:
        known = dict(task.inputs)  # what the agent knows: the case, then every tool result
        pending = list(episode.tools)  # {"name", "description", "input_schema"} each
        while ready := [t for t in pending if self.fillable(t["input_schema"], known)]:
            for tool in ready:
                pending.remove(tool)
                wanted = tool["input_schema"].get("properties", {})
                result = episode.call(tool["name"], {k: known[k] for k in wanted if k in known})
                if result.ok and isinstance(result.content, dict):
                    known.update(result.content)
        fields = episode.output_schema.get("properties", {})
        return {name: known[name] for name in fields if name in known}

    @staticmethod
    def fillable(schema: dict[str, Any], known: dict[str, Any]) -> bool:
        return all(name in known for name in schema.get("required", []))
