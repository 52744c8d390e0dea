"""Scoring outputs produced elsewhere (``sopgym score``): answers and trajectories another
harness wrote become a normal run folder, scored by the one
:func:`~sopgym.evaluation.scoring.score_episode`.

A *reader* (:class:`ResponseReader`, one kind of the plug-in registry, :data:`READER_PLUGINS`:
a registered name, an entry point of ``sopgym.readers`` or ``module:Reader``) turns a
file or a folder into :class:`Response` items (one per task and trial) and
:class:`Unreadable` items (a line or record it could not read, with where and why). Our own
format is ``jsonl`` (:class:`JsonlReader`); SOP-Maze's published ``model_response`` files
are ``sopmaze`` (:mod:`sopgym.evaluation.maze_responses`); another format is one more reader
passed to :func:`register_reader`. With no format named, the files decide
(:func:`detect_format`).

Each response becomes the :class:`~sopgym.core.trajectory.Trajectory` the gateway would have
recorded for the same answers: the final answer (an object, or text read as the family's reply
protocol says, :data:`TEXT_PROTOCOLS`), the supplied tool calls and dialogue turns. No service
held the episode's state, so a state scorer cannot judge it: the trajectory says so
(``state_observed`` false), the scorer reports ``unjudged`` and the episode is never a success
on it (the summary counts such episodes as ``undecided``).

Nothing is dropped silently: responses for unknown tasks, repeated responses, tasks nobody
answered and responses that cannot be read are counted and listed in the summary's
``responses`` block; a task without a response counts as unanswered (incomplete) in the figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from sopgym.core.answers import extract_final_answer
from sopgym.core.exceptions import UsageError
from sopgym.core.jsonio import MAX_INPUT_DEPTH, json_depth, read_input
from sopgym.core.plugins import NotAPlugin, Plugins
from sopgym.core.tasks import Gold, Task
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation.scorers.base import TASK_SCHEMA
from sopgym.types import JSON

EXTERNAL_AGENT = "external"  # the agent name of a run scored from outputs made elsewhere
# Trials a scored run may hold (sopgym run's --trials range): a response's trial index plans
# that many episodes of every task, so one "trial": 1000000000 must not plan a billion
MAX_TRIALS = 1000
LISTED = 50  # problems listed by name in the summary (all are counted)


@dataclass
class Response:
    """One task's (and trial's) response as a reader found it."""

    task_id: str
    where: str  # file and line or record, for the listing of problems
    trial: int = 0
    domain: str | None = None  # when the source says which domain (else looked up by task id)
    answer: JSON | str | None = None  # the final answer: an object, or the reply's text
    calls: list[JSON] | None = None  # the tool-call trajectory, when the harness gave one
    messages: list[JSON] | None = None  # dialogue turns: {"role": "agent"|"user", "content"}
    llm_calls: list[JSON] = field(default_factory=list)  # usage records, as our agents write
    elapsed_s: float | None = None
    # formats that name no task id but a record's place (SOP-Maze's published files): the
    # index into ``domain``'s tasks in their order; ``task_id`` is then only for the listings
    position: int | None = None


@dataclass
class Unreadable:
    """A line or record a reader could not make a response of."""

    where: str
    why: str


class ResponseReader(Protocol):
    """A format of responses: ``read`` yields one item per response found under ``path`` (a
    file or a folder), never raising for a bad line or record (an :class:`Unreadable` says
    which and why); an unreadable ``path`` itself is an :class:`OSError`."""

    name: str
    help: str

    def read(self, path: Path) -> Iterator[Response | Unreadable]: ...


class ScoreRefused(UsageError, ValueError):
    """The user's mistake (an unknown format, an unreadable path, a folder that exists): one
    line, nothing written."""


def _reader(spec: str, loaded: Any) -> ResponseReader:
    """A reader of a loaded object: a reader, or a class of them (made with no arguments)."""
    if isinstance(loaded, type):
        try:
            loaded = loaded()
        except TypeError as error:
            raise NotAPlugin(f"{loaded.__name__}() cannot be made: {error}") from None
    if not callable(getattr(loaded, "read", None)):
        raise NotAPlugin("not a reader: it has no read(path)")
    return loaded


# The formats ``--format`` takes: ours register here, a package under ``sopgym.readers``, or
# ``module:Reader`` (a class, made with no arguments, or an instance)
READER_PLUGINS: Plugins[ResponseReader] = Plugins(
    "format", "sopgym.readers", _reader, ScoreRefused
)
READERS: dict[str, ResponseReader] = READER_PLUGINS.registered


def register_reader(reader: ResponseReader) -> None:
    READER_PLUGINS.register(reader.name, reader)


# How a text answer is read, by family (the domain name's part before "/"): our agents' reply
# protocol by default; a family whose paper scores replies more leniently registers its reader.
TextProtocol = Callable[[str, JSON], "JSON | None"]


def our_reply_protocol(text: str, schema: JSON) -> JSON | None:
    """The answer object in a reply, read as our agents read their model's replies."""
    return extract_final_answer(text, list(schema.get("properties", {})))


TEXT_PROTOCOLS: dict[str, TextProtocol] = {}


def text_protocol(domain: str) -> TextProtocol:
    return TEXT_PROTOCOLS.get(domain.partition("/")[0], our_reply_protocol)


def files_under(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """``path`` itself, or the files with one of ``suffixes`` under the folder ``path``."""
    if path.is_dir():
        # not only regular files: a FIFO or device of such a name is refused when read (never
        # skipped in silence, never read until it ends)
        return sorted(p for p in path.rglob("*") if not p.is_dir() and p.name.endswith(suffixes))
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    return [path]


class JsonlReader:
    """Our own format: one JSON object per line, ``{"task_id", "trial"?, "domain"?, "answer"
    (an object, or the reply's text), "calls"? [{"name", "arguments", "result"?,
    "error_code"?, "status"?}], "messages"?, "usage"? {"input_tokens", "output_tokens"},
    "model"?, "elapsed_s"?}``."""

    name = "jsonl"
    help = "one JSON object per line: task_id, trial, answer, calls, messages, usage"

    def read(self, path: Path) -> Iterator[Response | Unreadable]:
        for file in files_under(path, (".jsonl",)):
            for number, line in enumerate(read_input(file).splitlines(), 1):
                if line.strip():
                    yield self.response(line, f"{file.name}:{number}")

    def response(self, line: bytes, where: str) -> Response | Unreadable:
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            return Unreadable(where, f"not JSON: {error}")
        if not isinstance(data, dict):
            return Unreadable(where, "not a JSON object")
        if line.count(b"[") + line.count(b"{") > MAX_INPUT_DEPTH and (
            json_depth(data) > MAX_INPUT_DEPTH
        ):  # the scorers walk answers recursively
            return Unreadable(where, f"nested deeper than {MAX_INPUT_DEPTH} levels")
        problem = _shape_problem(data)
        if problem:
            return Unreadable(where, problem)
        usage = data.get("usage")
        llm_calls = list(data.get("llm_calls") or [])
        if isinstance(usage, dict):
            llm_calls.append({
                "model": data.get("model"),
                "purpose": "external",
                "input_tokens": usage.get("input_tokens", 0),
                "output_tokens": usage.get("output_tokens", 0),
                "latency_s": usage.get("latency_s", 0.0),
                "error": None,
            })  # fmt: skip
        return Response(
            task_id=data["task_id"],
            where=where,
            trial=data.get("trial") or 0,
            domain=data.get("domain"),
            answer=data.get("answer"),
            calls=data.get("calls"),
            messages=data.get("messages"),
            llm_calls=llm_calls,
            elapsed_s=data.get("elapsed_s"),
        )


def _shape_problem(data: JSON) -> str | None:
    """Why a record is not a response of our format (None: it is one)."""
    if not isinstance(data.get("task_id"), str):
        return '"task_id" must be a string'
    trial = data.get("trial", 0)
    if trial is not None and (isinstance(trial, bool) or not isinstance(trial, int) or trial < 0):
        return '"trial" must be a non-negative integer'
    if data.get("domain") is not None and not isinstance(data["domain"], str):
        return '"domain" must be a string'
    if data.get("answer") is not None and not isinstance(data["answer"], dict | str):
        return '"answer" must be an object or text'
    calls = data.get("calls")
    if calls is not None and not (isinstance(calls, list) and all(map(_is_call, calls))):
        return (
            '"calls" must be a list of objects with a string "name" (and, if given, an integer '
            '"status" and a string "error_code")'
        )
    messages = data.get("messages")
    if messages is not None and not (
        isinstance(messages, list)
        and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and "content" in m
            for m in messages
        )
    ):
        return '"messages" must be a list of objects with a string "role" and a "content"'
    for key in ("usage", "elapsed_s", "llm_calls"):
        kind = {"usage": dict, "elapsed_s": int | float, "llm_calls": list}[key]
        if data.get(key) is not None and not isinstance(data[key], kind):
            return f'"{key}" has the wrong type'
    return None


def _is_call(call: Any) -> bool:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return False
    status, code = call.get("status"), call.get("error_code")
    return (status is None or (isinstance(status, int) and not isinstance(status, bool))) and (
        code is None or isinstance(code, str)
    )


register_reader(JsonlReader())


def detect_format(path: Path) -> str:
    """The format of the responses at ``path`` when none is named: the first reader whose
    optional ``detects(path)`` says so (SOP-Maze's files with ``model_response``), else
    ``jsonl``."""
    for reader in READERS.values():
        detects = getattr(reader, "detects", None)
        if detects is not None and detects(path):
            return reader.name
    return JsonlReader.name


# ---- scoring ----
@dataclass
class Tally:
    """What became of the responses: the summary's ``responses`` block."""

    source: str
    format: str
    read: int = 0
    scored: int = 0
    unknown: list[str] = field(default_factory=list)  # no such task in the domains
    not_selected: list[str] = field(default_factory=list)  # a task outside the selection
    ambiguous: list[str] = field(default_factory=list)  # an id several domains have
    duplicates: list[str] = field(default_factory=list)  # a second response, not scored
    unreadable: list[str] = field(default_factory=list)  # a line, record or answer
    no_trajectory: list[str] = field(default_factory=list)  # tool tasks scored with no calls
    missing: list[str] = field(default_factory=list)  # (task, trial) nobody answered

    def to_json(self) -> JSON:
        summary: JSON = {"source": self.source, "format": self.format, "read": self.read,
                         "scored": self.scored}  # fmt: skip
        for name in ("unknown", "not_selected", "ambiguous", "duplicates", "unreadable",
                     "no_trajectory", "missing"):  # fmt: skip
            items: list[str] = getattr(self, name)
            summary[name] = len(items)
            summary[f"{name}_listed"] = items[:LISTED]
        return summary


class Located:
    """The selected tasks and every task of the domains, by id (and by domain and id)."""

    def __init__(self, all_tasks: dict[str, list[Task]], selected: list[Task]) -> None:
        self.all_tasks = all_tasks
        self.selected = {(t.domain, t.id) for t in selected}
        self.domains_of: dict[str, list[str]] = {}
        self.tasks: dict[tuple[str, str], Task] = {}
        for domain, tasks in all_tasks.items():
            for task in tasks:
                self.domains_of.setdefault(task.id, []).append(domain)
                self.tasks[domain, task.id] = task

    def find(self, response: Response) -> tuple[Task | None, str | None]:
        """The response's task, or which problem list it goes to."""
        if response.position is not None:
            if response.domain is not None and response.domain not in self.all_tasks:
                return None, "not_selected"  # a reader names only a domain that exists
            tasks = self.all_tasks.get(response.domain or "", [])
            if not 0 <= response.position < len(tasks):
                return None, "unknown"
            return self._selected(tasks[response.position])
        domains = self.domains_of.get(response.task_id, [])
        if response.domain is not None:
            domains = [d for d in domains if d == response.domain]
        if not domains:
            return None, "unknown"
        if len(domains) > 1:
            return None, "ambiguous"
        return self._selected(self.tasks[domains[0], response.task_id])

    def _selected(self, task: Task) -> tuple[Task | None, str | None]:
        if (task.domain, task.id) not in self.selected:
            return None, "not_selected"
        return task, None


def trajectory_of(
    response: Response, task: Task, gold: Gold, domain: Any
) -> tuple[Trajectory, str | None]:
    """The trajectory the gateway would have recorded for ``response``, and why its answer
    could not be read (None: it could, or none was given)."""
    catalog = [tool.name for tool in domain.tools]
    calls = [_call(c, catalog) for c in response.calls or []]
    answer, problem = response.answer, None
    reply = answer if isinstance(answer, str) else None
    if isinstance(answer, str):
        own = gold.decisions.get(TASK_SCHEMA)
        schema = own if isinstance(own, dict) else domain.output_schema
        answer = text_protocol(task.domain)(answer, schema)
        if answer is None:
            problem = "no answer object in the reply's text"
    elif answer is None:
        problem = "no answer given"
    trajectory = Trajectory(
        task_id=task.id,
        episode_id=f"{EXTERNAL_AGENT}:{response.where}",
        calls=calls,
        finished=answer is not None,
        outputs=answer,
        catalog=catalog,
        messages=list(response.messages or []),
        state_observed=False,
        reply=reply,
    )
    return trajectory, problem


def _call(data: JSON, catalog: list[str]) -> CallRecord:
    error = data.get("error_code")
    return CallRecord(
        name=data["name"],
        arguments=data.get("arguments", {}),
        status=int(data.get("status") or (200 if error is None else 400)),
        error_code=error,
        error_field=data.get("error_field"),
        result=data.get("result"),
        in_catalog=data["name"] in catalog,
    )


# The readers shipped beside ours register themselves (they build on this module's names)
from sopgym.evaluation import maze_responses as _maze_responses  # noqa: E402, F401
