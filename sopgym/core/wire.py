"""Names both ends of a gateway door must agree on, in one module that neither end owns: the
MCP door's finishing tool, prompt and resource URIs. The client imports them from here, never
from the server module (a client must not depend on the gateway's server code)."""

MCP = "mcp"
FINISH_TOOL = "finish_episode"
TASK_PROMPT = "task"
SOP_URI = "sopgym://episode/sop"
TASK_URI = "sopgym://episode/task"
