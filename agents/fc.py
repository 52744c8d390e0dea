"""The function-calling agent: the model sees the episode's tools natively and loops
model -> tools -> model until it answers without calling a tool."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from sopgym.agents.graph import (
    GraphAgent,
    Run,
    State,
    after_answer,
    native_requests,
    run_of,
    text_of,
)
from sopgym.agents.prompts import system_prompt


class FunctionCallingAgent(GraphAgent):
    name = "fc"
    native_tools = True

    def system_text(self, run: Run) -> str:
        return system_prompt(run.episode.output_schema)

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
        reply = run_of(config).ask(state["messages"], tools=True)
        return {"messages": [reply], "pending": native_requests(reply)}

    def _answer(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        return self.conclude(state, text_of(state["messages"][-1]), run_of(config))


def _after_model(state: State) -> str:
    return "tools" if state.get("pending") else "answer"
