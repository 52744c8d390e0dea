"""One-shot tasks (:data:`sopgym.core.tasks.ONE_SHOT_KINDS`): one model call, no agent loop.

Whatever model-using agent a run names, a one-shot task is answered by a single structured
call through that agent's own model layer (:mod:`sopgym.agents.llm`: retries, usage records,
the ``chat`` span), and the answer is submitted through the task's gateway episode like any
other, so recording, tracing and scoring do not change. An agent without a model (the oracle)
keeps its own way of answering.
"""

from __future__ import annotations

from sopgym.agents.base import Agent, AgentContext
from sopgym.agents.graph import answer_without_tools
from sopgym.agents.llm import LLM
from sopgym.client import Episode
from sopgym.core.tasks import Task
from sopgym.types import JSON


class OneShotSolver:
    name = "oneshot"
    concurrent_safe = True  # one call on the shared model layer, nothing kept

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        return answer_without_tools(self.llm, task, episode, context, reminders=0)


def one_shot_solver(agent: Agent) -> Agent:
    """The one-shot solver on ``agent``'s model, or ``agent`` itself when it has none."""
    llm = getattr(agent, "llm", None)
    return OneShotSolver(llm) if isinstance(llm, LLM) else agent
