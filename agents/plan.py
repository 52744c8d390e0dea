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
    reply_requests,
    run_of,
    text_of,
)
from sopgym.agents.prompts import PLAN_TAG, execute_request, plan_request
from sopgym.core.jsontext import LooseJSONError, parse_array

_PLAN_BLOCK = re.compile(rf"<{PLAN_TAG}>(.*?)(?:</{PLAN_TAG}>|$)", re.DOTALL | re.IGNORECASE)
# XML-ish steps: <step>...</step>, <step tool="x">...</step>, with <tool>/<goal> inside or not
_XML_STEP = re.compile(r"<step\b([^>]*)>(.*?)</step\s*>", re.DOTALL | re.IGNORECASE)
_XML_FIELD = re.compile(r"<(tool|action|goal|description)>(.*?)</\1\s*>", re.DOTALL | re.I)
_XML_ATTRIBUTE = re.compile(r"""(tool|action)\s*=\s*["']([^"']*)["']""", re.IGNORECASE)
# a numbered or bulleted list: "1. lookup_patient: find the record", "- Step 2) call `x` ..."
_LIST_ITEM = re.compile(r"^\s*(?:[-*]\s*)?(?:step\s*)?\d+\s*[.):]\s*(.+)$", re.I | re.M)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
UNREADABLE_PLAN = (
    "Your plan could not be read (give it as a JSON array, a numbered list, or <step> tags). "
    "Carry on without one: follow the SOP step by step."
)


class PlanState(State, total=False):
    outcomes: list[ToolOutcome]  # the last tool turn's, for the re-plan decision
    plan: list[JSON]
    done: list[int]  # indexes of the plan's steps carried out
    replans: int


class PlanExecuteAgent(GraphAgent):
    name = "plan"
    native_tools = True
    state_schema = PlanState

    def system_text(self, run: Run) -> str:
        return self.native_system_text(run, opens_with_call=False)  # its first reply: a plan

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

    def _plan(self, state: PlanState, config: RunnableConfig) -> dict[str, Any]:
        run = run_of(config)
        ask = [*state["messages"], HumanMessage(plan_request())]
        plan = read_plan(text_of(run.ask(ask, purpose="plan")), _tool_names(run))
        if plan is None:  # said, so the model knows it works without a plan
            return {"plan": [], "done": [], "messages": [HumanMessage(UNREADABLE_PLAN)]}
        return {"plan": plan, "done": []}

    def _execute(self, state: PlanState, config: RunnableConfig) -> dict[str, Any]:
        run = run_of(config)
        turn = HumanMessage(execute_request(state.get("plan", []), set(state.get("done", []))))
        reply = run.ask([*state["messages"], turn], tools=True)
        message, pending = reply_requests(reply, run, self.text_tool_calls)
        return {"messages": [message], "pending": pending}

    def _tools(self, state: PlanState, config: RunnableConfig) -> dict[str, Any]:
        outcomes, update = self.tool_turn(state, run_of(config))
        plan, done = state.get("plan", []), set(state.get("done", []))
        for outcome in outcomes:
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
        return {**update, "outcomes": outcomes, "done": sorted(done)}

    def _after_tools(self, state: PlanState) -> str:
        failed = any(not o.ok for o in state.get("outcomes", []))
        return (
            "replan" if failed and state.get("replans", 0) < self.limits.max_replans else "execute"
        )

    def _replan(self, state: PlanState, config: RunnableConfig) -> dict[str, Any]:
        run = run_of(config)
        failure = next(o for o in state.get("outcomes", []) if not o.ok)
        ask = [
            *state["messages"],
            HumanMessage(plan_request(describe_failure(failure), state.get("plan", []))),
        ]
        plan = read_plan(text_of(run.ask(ask, purpose="replan")), _tool_names(run))
        update: dict[str, Any] = {"replans": state.get("replans", 0) + 1}
        if plan is not None:  # an unreadable revision keeps the old plan
            update.update(plan=plan, done=[])
        return update

    def _answer(self, state: PlanState, config: RunnableConfig) -> dict[str, Any]:
        return self.conclude(state, text_of(state["messages"][-1]), run_of(config))


def _tool_names(run: Run) -> list[str]:
    return [spec["name"] for spec in run.specs]


def read_plan(text: str, tools: list[str] | None = None) -> list[JSON] | None:
    """The plan in a reply (tagged or not) as ``[{"tool", "goal"}, ...]``; ``None`` if none.

    Models write plans in a few shapes: a JSON array (or ``{"steps": [...]}``), ``<step>``
    elements, or a numbered list. In the last two the tool is named by an attribute or field,
    else by the first word of the step that is one of ``tools``.
    """
    match = _PLAN_BLOCK.search(text)
    body = match.group(1) if match else text
    try:
        items = parse_array(body)
    except LooseJSONError:
        return _xml_plan(body, tools or []) or _list_plan(body, tools or [])
    plan = []
    for item in items:
        if isinstance(item, dict):
            tool = item.get("tool") or item.get("action")
            goal = item.get("goal") or item.get("description") or item.get("step") or ""
            plan.append({"tool": tool if isinstance(tool, str) else None, "goal": str(goal)})
        else:
            plan.append({"tool": None, "goal": str(item)})
    return plan


def _xml_plan(text: str, tools: list[str]) -> list[JSON] | None:
    plan = []
    for attributes, inner in _XML_STEP.findall(text):
        fields = {k.lower(): v.strip() for k, v in _XML_FIELD.findall(inner)}
        named = _XML_ATTRIBUTE.search(attributes)
        tool = fields.get("tool") or fields.get("action") or (named.group(2) if named else None)
        goal = fields.get("goal") or fields.get("description") or _XML_FIELD.sub("", inner)
        plan.append({"tool": tool or _tool_in(inner, tools), "goal": goal.strip()})
    return plan or None


def _list_plan(text: str, tools: list[str]) -> list[JSON] | None:
    items = [item.strip() for item in _LIST_ITEM.findall(text)]
    return [{"tool": _tool_in(item, tools), "goal": item} for item in items] or None


def _tool_in(text: str, tools: list[str]) -> str | None:
    known = set(tools)
    return next((word for word in _WORD.findall(text) if word in known), None)


def describe_failure(outcome: ToolOutcome) -> str:
    request = outcome.request
    arguments = orjson.dumps(request.arguments).decode()
    return f"{request.name} called with {arguments} answered: {outcome.text}"
