"""The MCP agent: the function-calling agent, working its episodes only through the gateway's
MCP door (:mod:`sopgym.client.over_mcp`), as an off-the-shelf MCP client would. ``sopgym run --agent
mcp`` therefore exercises the door end to end: the catalog, the SOP and task resources, tool
calls and refusals, the user messages of a dialogue and the ``finish_episode`` tool."""

from __future__ import annotations

from sopgym.agents.fc import FunctionCallingAgent


class McpAgent(FunctionCallingAgent):
    name = "mcp"
    transport = "mcp"  # the worker reaches the gateway through its MCP door for this agent
