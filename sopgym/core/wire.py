"""Names both ends of a gateway door must agree on, in one module that neither end owns: the
MCP door's finishing tool, prompt and resource URIs. The client imports them from here, never
from the server module (a client must not depend on the gateway's server code)."""

MCP = "mcp"
FINISH_TOOL = "finish_episode"
OPEN_TOOL = "open_episode"  # 2026-07-28: at the task's URL, opens an episode, gives its URL
EPISODE_PATH = "_episode/"  # under the door: /mcp/_episode/<episode id>/<token>
TASK_PROMPT = "task"
SOP_URI = "sopgym://episode/sop"
TASK_URI = "sopgym://episode/task"
