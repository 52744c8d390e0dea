"""The ReAct agent, for models without native tool calling: the catalog is described in the
prompt, the model writes Thought / Action / Action Input, and each tool result comes back as
an Observation. A reply that cannot be read is answered with an observation saying why,
never with a crash."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from sopgym.agents.graph import GraphAgent, Run, State, ToolRequest, run_of, text_of
from sopgym.agents.prompts import observation, system_prompt, tools_catalog_text
from sopgym.core.answers import (
    ReactAction,
    ReactFinal,
    parse_react,
    without_invented_observation,
)

STOP = ["\nObservation:"]  # the model must not write the tool's result itself


class ReActAgent(GraphAgent):
    name = "react"
    native_tools = False

    def system_text(self, run: Run) -> str:
        return system_prompt(run.episode.output_schema, tools_catalog_text(run.specs))

    def build(self, graph: StateGraph) -> StateGraph:
        graph.add_node("model", self._model)
        graph.add_node("tools", self.tools_node)
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", _after_model, ["tools", "model", END])
        graph.add_edge("tools", "model")
        return graph

    def _model(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        run = run_of(config)
        text = without_invented_observation(text_of(run.ask(state["messages"], stop=STOP)))
        turn = AIMessage(text)
        step = parse_react(text, run.fields)
        if isinstance(step, ReactAction):
            request = ToolRequest(f"react_{run.steps}", step.tool, step.arguments)
            return {"messages": [turn], "pending": [request]}
        if isinstance(step, ReactFinal):
            update = self.conclude(state, step.text, run)
            return {**update, "messages": [turn, *update.get("messages", [])]}
        run.watch_reply(text)
        return {"messages": [turn, HumanMessage(observation(step.message)), *run.take_notes()]}


def _after_model(state: State) -> str:
    if state.get("final") is not None:
        return END
    return "tools" if state.get("pending") else "model"
