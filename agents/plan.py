"""The plan-and-execute agent: derive a step plan from the SOP, carry it out step by step with
native tool calls, and re-plan the remaining steps whenever a step fails.

The plan lives in the graph state, not in the conversation: each executor turn sees the
conversation so far plus the current plan with its done/open marks.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from sopgym.agents.base import JSON
from sopgym.agents.graph import (
    GraphAgent,
    Run,
    State,
    ToolOutcome,
    after_answer,
    native_requests,
    run_of,
    text_of,
)
from sopgym.agents.prompts import PLAN_TAG, execute_request, plan_request, system_prompt
from sopgym.core.jsontext import LooseJSONError, parse_array

_PLAN_BLOCK = re.compile(rf"<{PLAN_TAG}>(.*?)(?:</{PLAN_TAG}>|$)", re.DOTALL | re.IGNORECASE)


class PlanExecuteAgent(GraphAgent):
    name = "plan"
    native_tools = True

    def system_text(self, run: Run) -> str:
        return system_prompt(run.episode.output_schema)

    def build(self, graph: StateGraph) -> StateGraph:
        graph.add_node("plan", self._plan)
        graph.add_node("execute", self._execute)
        graph.add_node("tools", self._tools)
        graph.add_node("replan", self._replan)
        graph.add_node("answer", self._answer)
        graph.add_edge(START, "plan")
        graph.add_edge("plan", "execute")
        graph.add_conditional_edges(
            "execute", lambda s: "tools" if s.get("pending") else "answer", ["tools", "answer"]
        )
        graph.add_conditional_edges("tools", self._after_tools, ["replan", "execute"])
        graph.add_edge("replan", "execute")
        graph.add_conditional_edges("answer", after_answer("execute"), ["execute", END])
        return graph

    def _plan(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        run = run_of(config)
        ask = [*state["messages"], HumanMessage(plan_request())]
        plan = read_plan(text_of(run.ask(ask, purpose="plan")))
        return {"plan": plan or [], "done": []}

    def _execute(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        run = run_of(config)
        turn = HumanMessage(execute_request(state.get("plan", []), set(state.get("done", []))))
        reply = run.ask([*state["messages"], turn], tools=True)
        return {"messages": [reply], "pending": native_requests(reply)}

    def _tools(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        update = self.tools_node(state, config)
        plan, done = state.get("plan", []), set(state.get("done", []))
        for outcome in update["outcomes"]:
            if outcome.ok:
                step = next(
                    (
                        i
                        for i, s in enumerate(plan)
                        if i not in done and s.get("tool") == outcome.request.name
                    ),
                    None,
                )
                if step is not None:
                    done.add(step)
        return {**update, "done": sorted(done)}

    def _after_tools(self, state: State) -> str:
        failed = any(not o.ok for o in state.get("outcomes", []))
        return (
            "replan" if failed and state.get("replans", 0) < self.limits.max_replans else "execute"
        )

    def _replan(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        run = run_of(config)
        failure = next(o for o in state.get("outcomes", []) if not o.ok)
        ask = [
            *state["messages"],
            HumanMessage(plan_request(describe_failure(failure), state.get("plan", []))),
        ]
        plan = read_plan(text_of(run.ask(ask, purpose="replan")))
        update: dict[str, Any] = {"replans": state.get("replans", 0) + 1}
        if plan is not None:  # an unreadable revision keeps the old plan
            update.update(plan=plan, done=[])
        return update

    def _answer(self, state: State, config: RunnableConfig) -> dict[str, Any]:
        return self.conclude(state, text_of(state["messages"][-1]), run_of(config))


def read_plan(text: str) -> list[JSON] | None:
    """The plan in a reply (tagged or not) as ``[{"tool", "goal"}, ...]``; ``None`` if none."""
    match = _PLAN_BLOCK.search(text)
    try:
        items = parse_array(match.group(1) if match else text)
    except LooseJSONError:
        return None
    plan = []
    for item in items:
        if isinstance(item, dict):
            tool = item.get("tool") or item.get("action")
            goal = item.get("goal") or item.get("description") or item.get("step") or ""
            plan.append({"tool": tool if isinstance(tool, str) else None, "goal": str(goal)})
        else:
            plan.append({"tool": None, "goal": str(item)})
    return plan


def describe_failure(outcome: ToolOutcome) -> str:
    request = outcome.request
    arguments = orjson.dumps(request.arguments).decode()
    return f"{request.name} called with {arguments} answered: {outcome.text}"
