"""The ReAct agent, for models without native tool calling: the catalog is described in the
prompt, the model writes Thought / Action / Action Input, and each tool result comes back as
an Observation. A reply that cannot be read is answered with an observation saying why,
never with a crash; a reply that is only the answer's object, without its ``Final Answer:``,
is the answer (flagged ``untagged_answer``, as under fc)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from sopgym.agents.graph import GraphAgent, Run, State, ToolRequest, run_of, text_of, was_cut
from sopgym.agents.prompts import CUT_NOTE, observation, system_prompt, tools_catalog_text
from sopgym.core.answers import (
    ReactAction,
    ReactFinal,
    parse_react,
    untagged_final_answer,
    without_invented_observation,
)

# The model must not write the tool's result itself, and should stop once its action is
# written: "Observation:" anywhere (at the start of a reply, on a line of its own, or right
# after the Action Input's JSON) ends generation, and so does an echo of the prompt's
# instructions, whose first sentence after the example round names the Observation too.
STOP = ["Observation:"]


class ReActAgent(GraphAgent):
    name = "react"
    native_tools = False

    def system_text(self, run: Run) -> str:
        specs = run.specs
        return system_prompt(run.episode.output_schema, tools_catalog_text(specs), specs)

    def build(self, graph: StateGraph) -> StateGraph:
        graph.add_node("model", self._model)
        graph.add_node("tools", self.tools_node)
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", _after_model, ["tools", "model", END])
        graph.add_edge("tools", "model")
        return graph

    def _model(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        run = run_of(config)
        reply = run.ask(state["messages"], stop=STOP)
        text = without_invented_observation(text_of(reply))
        turn = AIMessage(text)
        step = parse_react(text, run.fields)
        if isinstance(step, ReactAction):
            # an Action naming no tool of the list still goes to the gateway (the trajectory
            # records what the model asked for); its observation adds the tools' names
            request = ToolRequest(f"react_{run.steps}", step.tool, step.arguments)
            return {"messages": [turn], "pending": [request]}
        if isinstance(step, ReactFinal) or untagged_final_answer(text, run.fields) is not None:
            # an answer after 'Final Answer:', or its object alone without the marker: both
            # read by the reader every agent shares (the latter flagged untagged_answer)
            said = step.text if isinstance(step, ReactFinal) else text
            update = self.conclude(state, said, run, reply)
            return {**update, "messages": [turn, *update.get("messages", [])]}
        run.watch_reply(text)
        message = f"{CUT_NOTE} {step.message}" if was_cut(reply) else step.message
        return {"messages": [turn, HumanMessage(observation(message)), *run.take_notes()]}


def _after_model(state: State) -> str:
    if state.get("final") is not None:
        return END
    return "tools" if state.get("pending") else "model"
