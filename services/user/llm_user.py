"""A simulated user played by a language model, through the agents' model layer.

The model gets a persona prompt built from the task's private profile and the conversation
with the roles turned around (its own turns are the user's); it ends the conversation by
writing :data:`DONE_MARKER`, which is removed from the reply.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from sopgym.agents.base import AgentContext
from sopgym.agents.graph import text_of
from sopgym.agents.llm import LLM, DeadlineExceeded, ModelCallError, invoke_model
from sopgym.agents.prompts import pretty
from sopgym.core.dialogue import USER, UserTurn
from sopgym.core.errors import ToolError
from sopgym.types import JSON

DONE_MARKER = "###DONE###"


def persona_prompt(profile: JSON) -> str:
    return (
        "You are role-playing a customer who contacted a support agent. Stay in character: "
        "write only what the customer says, briefly and plainly.\n"
        f"Your situation and the facts you know:\n{pretty(profile)}\n"
        "Give a fact only when the agent asks for it, and never invent one you were not "
        "given. When the agent has told you the outcome of your request and you have nothing "
        f"more to ask, say goodbye and end that reply with {DONE_MARKER}."
    )


class LLMUser:
    def __init__(self, spec: str, base_url: str | None = None, timeout: float = 60.0) -> None:
        self.llm = LLM.from_spec(spec, base_url, temperature=0.0, request_timeout=timeout)

    def reply(self, profile: JSON, conversation: list[JSON]) -> UserTurn:
        messages: list[BaseMessage] = [SystemMessage(persona_prompt(profile))]
        for turn in conversation:  # the model speaks as the user
            role = AIMessage if turn["role"] == USER else HumanMessage
            messages.append(role(turn["content"]))
        try:
            said = invoke_model(self.llm, messages, AgentContext(), purpose="user")
        except (ModelCallError, DeadlineExceeded) as error:
            raise ToolError("upstream_unavailable", f"the user's model failed: {error}") from None
        text = text_of(said)
        done = DONE_MARKER in text
        return UserTurn(text.replace(DONE_MARKER, "").strip(), done)
