"""What a small real model does, played by the scripted model in-process, and the agents
coping with it (issue 37: Qwen2.5-Coder-1.5B on llama-server).

Each habit is a behaviour of the scripted model's profile (``services/model/behaviours.py``):
it writes tool calls as fenced JSON or Hermes tags, copies the ReAct prompt's example round,
writes number-like enum values bare, has a reply cut at the length limit, repeats successful
calls, echoes the prompt after its action. The model runs in-process (the server's own
``behaviours.play``) behind a LangChain-shaped chat, the tools are the domain's real tools,
called in-process; no server, no network. One test per point of the issue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import jsonschema
import orjson
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_openai.chat_models.base import _convert_dict_to_message, _convert_message_to_dict

from sopgym.agents import make_agent
from sopgym.agents.base import AgentContext
from sopgym.agents.graph import GraphAgent, NoFinalAnswer, answer_without_tools, openai_tool
from sopgym.agents.llm import LLM
from sopgym.agents.metrics import WorkerMetrics, episode_facts
from sopgym.agents.models import PlainChatCompletions, parse_model_spec
from sopgym.agents.prompts import answer_contract, case_message, example_answer, system_prompt
from sopgym.agents.textcalls import read_text_calls
from sopgym.client import ToolResult
from sopgym.core.answers import ReactAction, parse_react
from sopgym.core.dataset import DomainData
from sopgym.core.errors import ToolError
from sopgym.core.tasks import Task
from sopgym.evaluation.llm_usage import figures
from sopgym.gateway.catalog import Catalog, ServiceEntry
from sopgym.observability.metrics import Metrics
from sopgym.runs.records import WorkerReport
from sopgym.services.model import behaviours
from sopgym.services.model.engine import ScriptedModel
from sopgym.services.model.profiles import parse_profile
from sopgym.services.model.replies import cut_at_stop
from tests.helpers import domain_data
from tests.test_agents_e2e import _rows, _run, _summary
from tests.test_agents_graph import ANSWER, FakeEpisode, _agent, _call, _solve

TOOL_USE = "patient_intake"
ANSWER_ONLY = "maze/insurance_claim"  # its "step" enum is strings that look like numbers
GRAPH = "banking/account_management_graph"


class ScriptedChat:
    """The scripted model in-process, as a chat model: LangChain messages in, the Chat
    Completions body the OpenAI client would send, the server's reply, an AIMessage out."""

    def __init__(
        self,
        model: ScriptedModel,
        name: str,
        tools: list[dict] | None = None,
        tool_choice: str | None = None,
    ) -> None:
        self.model, self.name, self.tools, self.tool_choice = model, name, tools, tool_choice
        self.bodies: list[dict] = []
        self.replies: list[dict] = []

    def bind_tools(self, tools: list[dict], tool_choice: str | None = None) -> ScriptedChat:
        bound = ScriptedChat(self.model, self.name, tools, tool_choice)
        bound.bodies, bound.replies = self.bodies, self.replies  # one log per episode
        return bound

    def invoke(self, messages: list[BaseMessage], **kwargs: Any) -> AIMessage:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": [_convert_message_to_dict(m) for m in messages],
        }
        if self.tools:
            body["tools"] = self.tools
        if self.tool_choice:
            body["tool_choice"] = self.tool_choice
        if kwargs.get("stop"):
            body["stop"] = kwargs["stop"]
        reply = behaviours.play(self.model, body)
        self.bodies.append(body)
        self.replies.append(reply)
        choice = reply["choices"][0]
        message = _convert_dict_to_message(choice["message"])
        assert isinstance(message, AIMessage)
        usage = reply["usage"]
        message.response_metadata = {"finish_reason": choice["finish_reason"]}
        message.usage_metadata = {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
        }
        return message

    def texts(self) -> list[str]:
        return [r["choices"][0]["message"]["content"] or "" for r in self.replies]


class LocalEpisode:
    """A task's episode with the domain's real tools, called in-process (stateless domains)."""

    id, token = "ep-local", "tok"

    def __init__(self, data: DomainData, task: Task) -> None:
        self.data, self.task = data, task
        self.sop = data.domain.sop()
        self.input_schema = data.domain.input_schema
        self.output_schema = data.domain.output_schema
        self.tools = [t.spec.rendered() for t in data.domain.tools]
        self.calls: list[tuple[str, Any]] = []

    def call(self, name: str, arguments: Any, call_id: str | None = None) -> ToolResult:
        self.calls.append((name, arguments))
        ctx = self.data.domain.context(self.data.tables, self.data.files_dir, self.task)
        tool = self.data.domain.tool_map().get(name)
        try:
            if tool is None:
                raise ToolError("unknown_tool", f"no tool named {name}")
            return ToolResult(200, {"result": tool(arguments, ctx)})
        except ToolError as refused:
            return ToolResult(404 if refused.code == "unknown_tool" else 422, refused.to_body())


def _scripted_agent(
    name: str, data: DomainData, profile: str, **options: Any
) -> tuple[GraphAgent, ScriptedChat]:
    agent = make_agent(name, model="scripted", base_url="http://127.0.0.1:9/v1", **options)
    assert isinstance(agent, GraphAgent)
    chat = ScriptedChat(ScriptedModel([data], parse_profile("perfect")), f"scripted:{profile}")
    agent.llm = LLM(parse_model_spec("scripted"), chat, retries=0, backoff=0.0)
    return agent, chat


def _work(
    name: str, domain: str, profile: str, index: int = 0, **options: Any
) -> tuple[dict, AgentContext, LocalEpisode, ScriptedChat, Task]:
    data = domain_data(domain)
    task = data.tasks[index]
    agent, chat = _scripted_agent(name, data, profile, **options)
    episode = LocalEpisode(data, task)
    context = AgentContext()
    final = agent.solve(task, episode, context)  # type: ignore[arg-type]
    return final, context, episode, chat, task


def _gold(domain: str, task: Task) -> dict:
    return domain_data(domain).gold[task.id].outputs


# ---- 1. the answer's form: every constraint as the scorer checks it, and an example ----
def test_bare_enums_model_answers_in_the_schemas_types() -> None:
    """The model writes what the prompt shows: an enum rendered ``1 | 2`` is written as a
    number, and a right answer is schema-invalid; rendered as JSON values it stays a string."""
    data = domain_data(ANSWER_ONLY)
    for index in range(3):
        task = data.tasks[index]
        agent, _ = _scripted_agent("fc", data, "bare_enums=1")
        episode = LocalEpisode(data, task)
        episode.tools = []  # answer-only: no tools
        final = agent.solve(task, episode, AgentContext())  # type: ignore[arg-type]
        jsonschema.validate(final, data.domain.output_schema)
        assert final["step"] == _gold(ANSWER_ONLY, task)["step"]


SCHEMA = {
    "type": "object",
    "properties": {
        "step": {"enum": ["1", "2", "9.2"], "description": "the next step"},
        "flag": {"type": "boolean"},
        "count": {"type": "integer", "minimum": 1, "maximum": 5},
        "when": {"type": "string", "format": "date"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "note": {"type": ["string", "null"]},
    },
    "required": ["step", "flag", "count", "when", "code", "tags", "note"],
    "additionalProperties": False,
}


def test_the_contract_renders_each_constraint_and_a_valid_example() -> None:
    text = answer_contract(SCHEMA)
    assert 'step: "1" | "2" | "9.2"' in text
    assert "count: integer from 1 to 5" in text
    assert "when: string, a date (YYYY-MM-DD)" in text
    assert 'code: string matching ^[A-Z]{3}$' in text
    assert 'tags: array of ("a" | "b")' in text
    assert "note: string | null" in text
    example = example_answer(SCHEMA)
    assert example is not None
    jsonschema.validate(example, SCHEMA)
    assert orjson.dumps(example).decode() in text


@pytest.mark.parametrize("domain", [TOOL_USE, ANSWER_ONLY, "tod/compliance", GRAPH])
def test_each_domains_example_answer_is_valid_against_its_schema(domain: str) -> None:
    schema = domain_data(domain).domain.output_schema
    example = example_answer(schema)
    assert example is not None
    jsonschema.validate(example, schema)


# ---- 2. ReAct: a concrete example round, unknown actions, invented observations, stops ----
def test_react_model_copying_the_format_makes_a_real_call() -> None:
    """Its first reply is the prompt's example round copied: with placeholder text that is no
    call at all; with the concrete example it is a call to a catalog tool."""
    final, _, episode, chat, task = _work("react", TOOL_USE, "copies_format=1")
    names = {t["name"] for t in episode.tools}
    first = parse_react(chat.texts()[0])
    assert isinstance(first, ReactAction) and first.tool in names, chat.texts()[0]
    assert all(isinstance(a, dict) for _, a in episode.calls)
    assert final == _gold(TOOL_USE, task)


def test_react_refuses_an_action_that_is_no_tool_with_the_tool_names() -> None:
    replies = [
        AIMessage("Thought: start\nAction: the\nAction Input: {}"),
        AIMessage(f"Thought: done\nFinal Answer: {ANSWER}"),
    ]
    agent, chat = _agent("react", replies)
    unknown = {"error": {"code": "unknown_tool", "message": "no tool 'the'", "field": None}}
    _solve(agent, FakeEpisode([ToolResult(404, unknown)]))
    shown = str(chat.seen[1][-1].content)
    assert "'the' is not one of your tools" in shown and "lookup" in shown


def test_react_stops_generation_when_the_action_is_written() -> None:
    """The model echoes the prompt after its action: the stop sequences end the reply at the
    Action Input's JSON, so no tokens go to the echo (nor to an invented observation)."""
    final, _context, _, chat, task = _work("react", TOOL_USE, "echoes_format=1")
    assert final == _gold(TOOL_USE, task)
    actions = [t for t in chat.texts() if "Action Input:" in t]
    assert actions
    for text in actions:
        assert text.rstrip().endswith("}"), text
    assert all("Observation:" in body["stop"] for body in chat.bodies)


def test_a_reply_that_opens_with_an_observation_is_cut_there() -> None:
    """The stop sequences end a reply at an invented observation, at its start or mid-line
    (the server stops generating there, as the scripted model does)."""
    from sopgym.agents.react import STOP

    opens = 'Observation: {"found": 1}\nThought: next\nAction: lookup\nAction Input: {}'
    assert cut_at_stop(opens, STOP) == ""
    inline = 'Thought: x\nAction: lookup\nAction Input: {"id": "R1"} Observation: {"found": 1}'
    assert cut_at_stop(inline, STOP).rstrip().endswith('{"id": "R1"}')


# ---- 3. fc: tool calls written as text ----
@pytest.mark.parametrize("habit", ["fenced_calls", "hermes_calls"])
def test_fc_reads_tool_calls_written_as_text(habit: str) -> None:
    final, context, episode, chat, task = _work("fc", TOOL_USE, f"{habit}=1")
    assert final == _gold(TOOL_USE, task)
    assert episode.calls and not context.answered_without_tools
    # the transcript shows the model its calls in native form (a tool message answers each)
    last = chat.bodies[-1]["messages"]
    assert any(m.get("tool_calls") for m in last if m["role"] == "assistant")


OFFERED = ["get_patient", "check_insurance"]


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ('```json\n{"name": "get_patient", "arguments": {"id": "P1"}}\n```', "fenced JSON"),
        ('<tool_call>\n{"name": "get_patient", "arguments": {"id": "P1"}}\n</tool_call>', "Hermes"),
        ('[TOOL_CALLS] [{"name": "get_patient", "arguments": {"id": "P1"}}]', "Mistral"),
        ('<|python_tag|>{"name": "get_patient", "parameters": {"id": "P1"}}', "Llama 3.1"),
        ('{"name": "get_patient", "parameters": {"id": "P1"}}', "Llama 3.2 JSON"),
        ('<function=get_patient>{"id": "P1"}</function>', "Llama 3.1 custom / Functionary"),
        ('{"type": "function", "function": {"name": "get_patient", "arguments": "{\\"id\\": '
         '\\"P1\\"}"}}', "OpenAI-shaped"),
        ('functools[{"name": "get_patient", "arguments": {"id": "P1"}}]', "Phi-4-mini"),
    ],
)
def test_text_call_forms(text: str, family: str) -> None:
    calls = read_text_calls(text, OFFERED)
    assert [(c.name, c.arguments) for c in calls] == [("get_patient", {"id": "P1"})], family


def test_text_calls_name_an_offered_tool_and_never_are_the_answer() -> None:
    assert read_text_calls('{"name": "delete_all", "arguments": {}}', OFFERED) == []
    assert read_text_calls('<final_answer>{"name": "x"}</final_answer>', OFFERED) == []
    two = '<tool_call>{"name": "get_patient", "arguments": {}}</tool_call>\n' * 2
    assert len(read_text_calls(two, OFFERED)) == 2
    # fc: a call-shaped reply is a call, never taken for the answer
    fenced = AIMessage('```json\n{"name": "lookup", "arguments": {"id": "R1"}}\n```')
    agent, _ = _agent("fc", [fenced, AIMessage(ANSWER)])
    episode = FakeEpisode([])
    final, context = _solve(agent, episode)
    assert episode.calls == [("lookup", {"id": "R1"})] and not context.answered_without_tools
    assert final == {"status": "ok"}
    agent, _ = _agent("fc", [fenced, AIMessage(ANSWER)], text_tool_calls=0)
    episode = FakeEpisode([])
    _, context = _solve(agent, episode)  # off: the block is no call, the model "answered"
    assert episode.calls == [] and context.answered_without_tools


# ---- 4. identical successful calls ----
def test_a_model_repeating_a_successful_call_is_told_and_moves_on() -> None:
    final, _, episode, chat, task = _work("fc", TOOL_USE, "repeats_success=1", max_steps=30)
    assert final == _gold(TOOL_USE, task)
    told = [
        str(m["content"])
        for body in chat.bodies
        for m in body["messages"]
        if m["role"] == "user" and "times in a row" in str(m["content"])
    ]
    assert told and all("error" not in t for t in told), told
    assert len(episode.calls) == 2 * len(domain_data(TOOL_USE).gold[task.id].calls)


# ---- 5. a reply cut at the length limit ----
def test_a_cut_reply_is_said_so_and_a_one_shot_task_gets_one_reminder() -> None:
    data = domain_data(GRAPH)
    task = data.tasks[0]
    chat = ScriptedChat(ScriptedModel([data], parse_profile("perfect")), "scripted:truncates=1")
    llm = LLM(parse_model_spec("scripted"), chat, retries=0, backoff=0.0)
    episode = LocalEpisode(data, task)
    episode.tools = []
    final = answer_without_tools(llm, task, episode, AgentContext(), reminders=0)  # type: ignore[arg-type]
    assert final == _gold(GRAPH, task)
    assert len(chat.replies) == 2 and chat.replies[0]["choices"][0]["finish_reason"] == "length"
    reminder = chat.bodies[1]["messages"][-1]["content"]
    assert "cut off" in reminder, reminder
    # a model cut every time: the error says so
    cut = AIMessage('<final_answer>{"status": "o', response_metadata={"finish_reason": "length"})
    agent, _ = _agent("fc", [cut, cut, cut, cut, cut])
    with pytest.raises(NoFinalAnswer, match="cut at the length limit"):
        _solve(agent, FakeEpisode([]))


# ---- 6. feedback that fits the situation ----
def test_after_the_use_the_tools_turn_a_tool_less_reply_is_not_told_to_answer() -> None:
    guess = AIMessage('The result is:\n```json\n{"status": "bad"}\n```')
    agent, chat = _agent("fc", [guess, AIMessage("Let me think."), _call("lookup", {"id": "R1"}),
                                AIMessage(ANSWER)], corrective_turns=1)  # fmt: skip
    final, _ = _solve(agent, FakeEpisode([]))
    assert final == {"status": "ok"}
    after = str(chat.seen[2][-1].content)
    assert "final answer now" not in after.lower() and "tool" in after, after


def test_repeat_warnings_fit_what_was_repeated() -> None:
    error = {"error": {"code": "missing_argument", "message": "missing 'id'", "field": "id"}}
    same = _call("lookup", {})
    agent, chat = _agent("fc", [same, same, AIMessage(ANSWER)], max_repeats=3)
    _solve(agent, FakeEpisode([ToolResult(422, error), ToolResult(422, error)]))
    warning = str(chat.seen[2][-1].content)
    assert "made the same failing call to lookup 2 times" in warning and "error" in warning
    unusable = AIMessage("Hmm.")
    agent, chat = _agent("react", [unusable, unusable, AIMessage(f"Final Answer: {ANSWER}")])
    _solve(agent, FakeEpisode([]))
    warning = str(chat.seen[2][-1].content)
    assert "error" not in warning.split("Observation:")[-1] and "wrote" not in warning, warning


# ---- 7. one tool order per domain and seed ----
def _service(domain: str, tools: list[str], distractors: list[str]) -> ServiceEntry:
    def spec(name: str) -> dict:
        return {"name": name, "description": name, "input_schema": {"type": "object"}}

    return ServiceEntry(domain, "http://x", "x", 1, {t: spec(t) for t in tools},
                        {d: spec(d) for d in distractors})  # fmt: skip


def test_tool_order_is_shared_by_the_tasks_of_a_domain_and_seed() -> None:
    own = [f"step_{i}" for i in range(6)]
    catalog = Catalog([_service("d", own, ["x_1", "x_2", "x_3"])])
    orders = {tuple(catalog.episode_tools("d", f"task-{i}", 3)[0]) for i in range(20)}
    assert len(orders) == 1  # one shared prefix for llama-server's cache
    (order,) = orders
    assert order[0] not in own or order[: len(own)] != tuple(own)  # needed tools not first
    seeded = {tuple(catalog.episode_tools("d", f"task-{i}", 3, seed=7)[0]) for i in range(20)}
    assert len(seeded) == 1 and seeded != orders


# ---- 8. generation speed from the server's own timings ----
def test_generation_speed_comes_from_the_servers_timings() -> None:
    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={
            "id": "x", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "hi"}}],
            "usage": {"prompt_tokens": 2000, "completion_tokens": 40, "total_tokens": 2040},
            "timings": {"prompt_n": 2000, "prompt_ms": 10000.0, "predicted_n": 40,
                        "predicted_ms": 2500.0, "predicted_per_second": 16.0},
        })  # fmt: skip

    llm = LLM.from_spec("openai:m", "http://127.0.0.1:9/v1", retries=0)
    transport = httpx.MockTransport(server)
    http = httpx.Client(transport=transport)
    llm.chat.client = PlainChatCompletions(llm.chat.root_client, http, transport)
    context = AgentContext()
    from sopgym.agents.llm import invoke_model

    invoke_model(llm, [HumanMessage("hello")], context)
    record = context.usage[0]
    assert record["generation_s"] == 2.5 and record["generated_tokens"] == 40
    assert record["prompt_s"] == 10.0
    summary = figures(context.usage)
    assert summary["generation_tokens_per_s"] == 16.0  # the server's own figure
    # the other figure is output tokens over the whole latency, named so
    assert "output_tokens_per_s_of_latency" in summary
    metrics = Metrics("test", otel=False)
    WorkerMetrics(metrics, "fc", "m").observe(
        episode_facts(WorkerReport(task_id="t", status="finished", llm_calls=context.usage))
    )
    text = metrics.exposition().decode()
    assert 'sopgym_agent_llm_generation_seconds_total{model="m"} 2.5' in text
    assert 'sopgym_agent_llm_timed_generated_tokens_total{model="m"} 40' in text


def test_the_system_prompt_is_the_same_for_every_task_of_a_domain() -> None:
    data = domain_data(TOOL_USE)
    tools = [t.spec.rendered() for t in data.domain.tools]
    from sopgym.agents.prompts import tools_catalog_text

    first = system_prompt(data.domain.output_schema, tools_catalog_text(tools), tools)
    assert first == system_prompt(data.domain.output_schema, tools_catalog_text(tools), tools)
    assert "Action: " + tools[0]["name"] in first  # the example round uses a real tool


@pytest.mark.parametrize("agent", ["fc", "react"])
def test_the_small_local_preset_is_solved_by_both_tool_agents(agent: str) -> None:
    """All the habits at once (``scripted:small_local``): the tool-use task still ends right."""
    for index in range(3):
        final, context, episode, _, task = _work(agent, TOOL_USE, "small_local", index)
        assert final == _gold(TOOL_USE, task) and episode.calls
        assert not context.answered_without_tools


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["fc", "react"])
def test_a_whole_run_on_the_small_local_model(agent: str, tmp_path: Path) -> None:
    """Through the real stack (model server over HTTP, gateway, workers, scorer): the small
    model's habits cost neither the task nor a flag, and a native-tools agent's text calls
    are recorded as calls."""
    args = ["--agent", agent, "--model", "scripted:small_local", "--limit", "4", "--no-trace"]
    result = _run(tmp_path, *args, "--max-steps", "30")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = _summary(tmp_path)
    assert summary["tsr"] == 1.0 and not summary.get("answered_without_tools"), summary
    assert all(row["score"]["calls"] > 0 for row in _rows(tmp_path))


# ---- the example answer is a form, not an answer (the matrix of 2026-11-27) ----
class TwoFieldEpisode(FakeEpisode):
    def __init__(self, results: list[ToolResult]) -> None:
        super().__init__(results)
        self.output_schema = {
            "properties": {"status": {"enum": ["ok", "bad"]}, "level": {"enum": ["low", "high"]}}
        }


def test_an_answer_equal_to_the_example_is_sent_back_once_and_flagged() -> None:
    """A 1.5B model answered patient intake with the prompt's example answer after one call;
    the task's gold held the same values, so it scored a success it had not worked out."""
    episode = TwoFieldEpisode([])
    example = example_answer(episode.output_schema)
    assert example == {"status": "ok", "level": "low"}
    copied = AIMessage(f"<final_answer>{orjson.dumps(example).decode()}</final_answer>")
    decided = AIMessage('<final_answer>{"status": "bad", "level": "high"}</final_answer>')
    agent, chat = _agent("fc", [_call("lookup", {"id": "R1"}), copied, decided])
    final, context = _solve(agent, episode)
    assert final == {"status": "bad", "level": "high"} and context.copied_example
    assert "only shows the form" in str(chat.seen[2][-1].content)
    # the same answer again stands (it may be the case's), still flagged
    agent, chat = _agent("fc", [_call("lookup", {"id": "R1"}), copied, copied])
    final, context = _solve(agent, TwoFieldEpisode([]))
    assert final == example and context.copied_example and len(chat.seen) == 3
    # a one-field answer is just the first allowed value: never questioned
    agent, chat = _agent("fc", [_call("lookup", {"id": "R1"}), AIMessage(ANSWER)])
    final, context = _solve(agent, FakeEpisode([]))
    assert final == {"status": "ok"} and not context.copied_example and len(chat.seen) == 2


# ---- issue 48: fc answered first, then answered without the tags ----
def test_fc_prompt_shows_a_call_before_the_answers_form() -> None:
    """The example of a step (the first offered tool, in the ``<tool_call>`` form) comes
    before the answer's example, and the first reply is said to be a call."""
    data = domain_data(TOOL_USE)
    tools = [t.spec.rendered() for t in data.domain.tools]
    prompt = system_prompt(data.domain.output_schema, tools=tools)
    call = prompt.index(f'<tool_call>\n{{"name":"{tools[0]["name"]}"')
    assert call < prompt.index("<final_answer>{"), prompt
    assert "Your first reply is a tool call" in prompt
    planned = system_prompt(data.domain.output_schema, tools=tools, opens_with_call=False)
    assert "first reply" not in planned and "<tool_call>" in planned


@pytest.mark.parametrize("agent", ["fc", "plan"])
def test_a_model_that_answers_first_calls_tools_from_the_first_reply(agent: str) -> None:
    """``answers_first`` answers (a guess, in the tags) for as long as the prompt's first
    example is the answer's; with the example call first it works through the tools."""
    for index in range(3):
        final, context, episode, chat, task = _work(agent, TOOL_USE, "answers_first=1", index)
        assert final == _gold(TOOL_USE, task) and episode.calls
        assert not context.answered_without_tools, chat.texts()[:2]
    # the same model given no example call (text calls off), and not forced to call, guesses
    # through the corrective turn
    final, context, episode, _, task = _work(
        "fc", TOOL_USE, "answers_first=1", text_tool_calls=0, tool_choice="auto"
    )
    assert not episode.calls and context.answered_without_tools


@pytest.mark.parametrize("agent", ["fc", "plan"])
def test_an_answer_written_without_its_tags_is_the_answer_and_flagged(agent: str) -> None:
    """``untagged_answers`` writes the answer as a fenced object, no tags: it completes, with
    the values the tools gave, flagged ``untagged_answer``."""
    for index in range(3):
        final, context, episode, chat, task = _work(agent, TOOL_USE, "untagged_answers=1", index)
        assert chat.texts()[-1].startswith("```json") and "final_answer" not in chat.texts()[-1]
        assert final == _gold(TOOL_USE, task) and context.untagged_answer and episode.calls
    final, context, *_ = _work("fc", TOOL_USE, "perfect")
    assert not context.untagged_answer


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"status": "bad", "level": "high"}\n```',
        '{"status": "bad", "level": "high"}',
        '<answer>{"status": "bad", "level": "high"}</answer>',
        '<final-answer>\n```json\n{"status": "bad", "level": "high"}\n```\n</final-answer>',
        '<FinalAnswer>{"status": "bad", "level": "high"}',
        '```\n{"final_answer": {"status": "bad", "level": "high"}}\n```',
    ],
)
def test_the_answers_object_alone_is_the_answer_in_any_wrapping(text: str) -> None:
    agent, _ = _agent("fc", [_call("lookup", {"id": "R1"}), AIMessage(text)])
    final, context = _solve(agent, TwoFieldEpisode([]))
    assert final == {"status": "bad", "level": "high"} and context.untagged_answer


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('```json\n{"status": "bad"}\n```', "lacks the field(s): level"),
        ('{"status": "bad", "level": "high", "why": "x"}', "Not fields of the answer: why"),
        ('Done.\n```json\n{"status": "bad", "level": "high"}\n```', "not inside <final_answer>"),
        ('{"name": "fetch_record", "arguments": {"id": "R1"}}', "'fetch_record' is not one of"),
        ('I will use lookup on {"tool": "lookup", "id": "R1"}', "not written as a call"),
        ("Let me think about the case.", "neither a tool call nor a final answer"),
    ],
)
def test_a_reply_that_is_neither_is_told_what_it_lacks(text: str, said: str) -> None:
    decided = AIMessage('<final_answer>{"status": "bad", "level": "high"}</final_answer>')
    agent, chat = _agent("fc", [_call("lookup", {"id": "R1"}), AIMessage(text), decided])
    final, context = _solve(agent, TwoFieldEpisode([]))
    assert final == {"status": "bad", "level": "high"} and not context.untagged_answer
    told = str(chat.seen[2][-1].content)
    assert said in told, told


def test_answer_shaped_replies_never_end_repeated_action() -> None:
    """The issue's episode: three fenced answers in a row ended ``RepeatedAction``; the first
    is the answer now. The same object beside prose, three times, is warned with the reason."""
    fenced = AIMessage('```json\n{"status": "bad", "level": "high"}\n```')
    agent, _ = _agent("fc", [_call("lookup", {"id": "R1"}), fenced, fenced, fenced])
    final, _ = _solve(agent, TwoFieldEpisode([]))
    assert final == {"status": "bad", "level": "high"}
    prose = AIMessage('Answer:\n```json\n{"status": "bad", "level": "high"}\n```')
    decided = AIMessage('<final_answer>{"status": "bad", "level": "high"}</final_answer>')
    agent, chat = _agent("fc", [_call("lookup", {"id": "R1"}), prose, prose, decided])
    _solve(agent, TwoFieldEpisode([]))
    warning = str(chat.seen[3][-1].content)
    assert "2 times in a row" in warning and "not inside <final_answer>" in warning, warning


@pytest.mark.parametrize("agent", ["fc", "plan"])
def test_a_forced_first_turn_makes_a_model_that_answers_first_call_tools(agent: str) -> None:
    """``answers_unforced`` guesses the answer, in the tags, until it has made a call, whatever
    the prompt (the 1.5B on content flagging, issue 48). The default ``required-first`` asks
    the server for a call on the episode's first tool turn: the model calls, then follows the
    procedure to the gold. Left to ``auto`` it guesses through the corrective turn."""
    for index in range(3):
        final, context, episode, chat, task = _work(agent, TOOL_USE, "answers_unforced=1", index)
        assert final == _gold(TOOL_USE, task) and episode.calls, chat.texts()[:2]
        assert not context.answered_without_tools
        choices = [b.get("tool_choice") for b in chat.bodies if b.get("tools")]
        assert choices[0] == "required" and set(choices[1:]) == {None}, choices
    final, context, episode, chat, task = _work(
        agent, TOOL_USE, "answers_unforced=1", tool_choice="auto"
    )
    assert not episode.calls and context.answered_without_tools
    assert all("tool_choice" not in b for b in chat.bodies)


def test_the_scripted_model_answers_a_required_tool_choice_with_a_call() -> None:
    """As a grammar-constrained server does: a reply that would be an answer, or a call
    written as text, is a native call when the body says ``tool_choice: "required"``."""
    data = domain_data(TOOL_USE)
    model = ScriptedModel([data], parse_profile("perfect"))
    task = data.tasks[0]
    tools = [openai_tool(t.spec.rendered()) for t in data.domain.tools]
    body = {
        "model": "scripted:answers_unforced=1,fenced_calls=1",
        "messages": [
            {"role": "system", "content": system_prompt(data.domain.output_schema, tools=[])},
            {"role": "user", "content": case_message(data.domain.sop(), task.inputs)},
        ],
        "tools": tools,
    }
    unforced = behaviours.play(model, body)["choices"][0]["message"]
    assert not unforced.get("tool_calls") and "<final_answer>" in unforced["content"]
    forced = behaviours.play(model, {**body, "tool_choice": "required"})["choices"][0]["message"]
    assert forced["tool_calls"], forced
    named = {"type": "function", "function": {"name": tools[-1]["function"]["name"]}}
    picked = behaviours.play(model, {**body, "tool_choice": named})["choices"][0]["message"]
    assert picked["tool_calls"][0]["function"]["name"] == tools[-1]["function"]["name"]


def test_react_takes_an_answer_written_without_its_marker_and_flags_it() -> None:
    """``untagged_answers`` under ReAct: the final answer as its fenced object alone, with no
    ``Final Answer:``, is the answer (flagged), read by the reader fc uses, never a loop of
    unreadable replies ending ``RepeatedAction``."""
    for index in range(3):
        final, context, episode, chat, task = _work("react", TOOL_USE, "untagged_answers=1", index)
        assert chat.texts()[-1].startswith("```json") and "Final Answer" not in chat.texts()[-1]
        assert final == _gold(TOOL_USE, task) and context.untagged_answer and episode.calls
    final, context, *_ = _work("react", TOOL_USE, "perfect")
    assert not context.untagged_answer


@pytest.mark.slow
def test_an_untagged_answer_is_flagged_on_the_results_row(tmp_path: Path) -> None:
    """Through the real stack: the answer given without its tags completes the task, and the
    row says so (``untagged_answer``), as it says ``copied_example``."""
    args = ["--agent", "fc", "--model", "scripted:untagged_answers=1", "--limit", "2"]
    result = _run(tmp_path, *args, "--no-trace")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = _rows(tmp_path)
    assert len(rows) == 2 and all(r["score"]["success"] for r in rows), rows
    assert all(r.get("untagged_answer") is True for r in rows)
