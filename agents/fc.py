"""The function-calling agent: the model sees the episode's tools natively and loops
model -> tools -> model until it answers without calling a tool.

Calls a model writes as text instead (fenced JSON, Hermes ``<tool_call>`` tags and the other
forms of :mod:`sopgym.agents.textcalls`) are read as calls when they name an offered tool
(``text_tool_calls``, on by default; ``--agent-option text_tool_calls=0`` turns it off).

With ``tool_retrieval`` (``METHOD[:K]``, :mod:`sopgym.agents.retrieval`; off by default) the
model is offered only the K tools that score best for the SOP and the task, so a catalog of
hundreds of tools does not fill its prompt; every tool of the episode stays callable.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from sopgym.agents.base import JSON
from sopgym.agents.graph import (
    GraphAgent,
    Run,
    State,
    after_answer,
    reply_requests,
    run_of,
    text_of,
)
from sopgym.agents.prompts import case_message
from sopgym.agents.retrieval import RetrievalSpec, ToolRetriever
from sopgym.core.answers import MESSAGE_ACTION


class FunctionCallingAgent(GraphAgent):
    name = "fc"
    native_tools = True

    def __init__(self, tool_retrieval: str | None = None, **options: Any) -> None:
        spec = RetrievalSpec.parse(tool_retrieval) if tool_retrieval else None
        self.retriever = ToolRetriever(spec) if spec else None
        super().__init__(**options)

    def system_text(self, run: Run) -> str:
        return self.native_system_text(run)

    def offered(self, run: Run) -> list[JSON]:
        """The episode's tools, narrowed by retrieval when it is on (a dialogue's message
        action is always offered)."""
        if self.retriever is None:
            return run.specs
        tools = [s for s in run.specs if s["name"] != MESSAGE_ACTION]
        actions = [s for s in run.specs if s["name"] == MESSAGE_ACTION]
        query = case_message(run.episode.sop, run.task.inputs, run.task.conversation)
        return [*self.retriever.narrow(query, tools), *actions]

    def build(self, graph: StateGraph) -> StateGraph:
        graph.add_node("model", self._model)
        graph.add_node("tools", self.tools_node)
        graph.add_node("answer", self._answer)
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", _after_model, ["tools", "answer"])
        graph.add_edge("tools", "model")
        graph.add_conditional_edges("answer", after_answer("model"), ["model", END])
        return graph

    def _model(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        run = run_of(config)
        reply = run.ask(state["messages"], tools=True)
        turn, pending = reply_requests(reply, run, self.text_tool_calls)
        return {"messages": [turn], "pending": pending}

    def _answer(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        reply = state["messages"][-1]
        return self.conclude(state, text_of(reply), run_of(config), reply)


def _after_model(state: State) -> str:
    return "tools" if state.get("pending") else "answer"
