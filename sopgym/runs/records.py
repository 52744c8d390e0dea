"""The typed records that cross sopgym's process boundaries and live in its run folders (the
bottom of the run-folder layer, :mod:`sopgym.runs`: nothing here imports a package above it).

Inspect AI's typed ``EvalSample``/``EvalLog`` is the model: every record is a
:class:`msgspec.Struct` whose JSON is byte-for-byte what the dict it replaced wrote, so run
folders written before still read (a reader ignores keys it does not know).

* :class:`RunConfig`: what ``sopgym run`` runs; ``runs/<id>/config.json`` (its fields, then
  ``created``, ``task_count`` and ``provenance``), the ``config`` of ``summary.json``, and
  the argument of ``sopgym.run`` (importable from here, or as ``sopgym.RunConfig``).
* :class:`Job`: one episode for an agent worker, built once for every driver (``sopgym
  run``, shard mode, the load test); on the wire it is the JSON line on the worker's stdin
  (:meth:`Job.to_json`, read by :func:`sopgym.agents.worker.parse_job`).
* :class:`WorkerReport`: the worker's answer, one JSON line per job on its stdout; in shard
  mode the ``report`` of each line of ``runs/<id>/shards/shard-*.jsonl``. An agent's error
  crosses as its text (``error``, which result rows keep) and as a typed
  :class:`~sopgym.core.exceptions.ErrorRecord` (``error_record``: the exception's branch and
  class, :attr:`WorkerReport.error_type`): the episode metrics and the runner's check for a
  dead model endpoint take the class from it, not from the text.
* :class:`ResultRow`: one scored episode, a line of ``runs/<id>/results.jsonl``.
* :class:`RunSummary`: a run's figures, ``runs/<id>/summary.json``
  (:meth:`RunSummary.to_json`); what ``sopgym.run`` and ``sopgym.score`` return (with
  ``run_dir``, which the file does not hold).

A results row is valid JSON of the wrong shape when it lacks ``task_id``, carries a ``score``
missing fields, or holds a value of the wrong type: every reader (``sopgym run --resume`` and
``--repair``, ``show``, ``report``, ``eval`` of an untraced run, the viewer) reads rows through
:func:`read_results`, which checks each against :class:`ResultRow` and raises
:class:`~sopgym.core.jsonio.CorruptRow` naming the file and line (``--repair`` drops such
rows: their tasks run again). A row recorded twice for one task and trial, or one for a task
the run did not select (:class:`RowCheck` given the run's planned attempts), is refused the
same way instead of being silently kept or ignored. :class:`ResultRow` types the fields every
reader relies on; the rest pass through untouched.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import orjson
from msgspec import UNSET, UnsetType

from sopgym.core.exceptions import DataError, ErrorRecord
from sopgym.core.jsonio import read_jsonl_prefix
from sopgym.core.tasks import Task
from sopgym.types import JSON

T = TypeVar("T")

# The run folder's format: written as ``format_version`` in config.json and summary.json.
# Folders written before the key existed read as format 0 (their files are the same shapes).
FORMAT_VERSION = 1


@dataclasses.dataclass
class TaskScore:
    """One episode's score, the ``score`` of a results row (computed by
    :func:`sopgym.evaluation.scoring.score_episode`)."""

    task_id: str
    domain: str
    completed: bool
    success: bool
    fields: dict[str, bool] = dataclasses.field(default_factory=dict)
    # None: not applicable, the task has no reference calls (an imported benchmark)
    tool_precision: float | None = 0.0
    tool_recall: float | None = 0.0
    tool_f1: float | None = 0.0
    calls: int = 0
    gold_calls: int | None = 0
    errors: dict[str, int] = dataclasses.field(default_factory=dict)
    order_violations: int = 0
    # every scorer's result by name: {"value", "metrics", "explanation", "gates"}
    scores: dict[str, JSON] = dataclasses.field(default_factory=dict)
    infra_error: str | None = None  # the cause, when the infrastructure failed the episode
    faults: int = 0  # calls answered by an injected fault (retried by the agent)
    answered_without_tools: bool = False  # the model answered before any tool call
    # gating scorers that apply but could not judge (no final state of an episode played
    # elsewhere): such an episode is never a success; ``undecided`` when it passed every
    # gate that could be judged (it might be one), and counted apart in the summary
    unjudged: list[str] = dataclasses.field(default_factory=list)
    undecided: bool = False
    # the papers' own verdicts on the same episode, per profile (sopgym.evaluation.profiles)
    paper: dict[str, JSON] = dataclasses.field(default_factory=dict)

    def to_json(self) -> JSON:
        return dataclasses.asdict(self)


def given(value: T | UnsetType) -> T | None:
    """An optional record field's value, None where the record does not carry it."""
    return None if isinstance(value, UnsetType) else value


class RunConfig(msgspec.Struct):
    """What a run runs: ``config.json``'s keys in this order (every one written, defaults
    too), then the runner's ``created``, ``task_count`` and ``provenance``."""

    domains: list[str]
    agent: str = "oracle"
    model: str = "scripted"
    workers: int = 2
    distractors: int = 0
    sop_variant: str = "clean"
    limit: int | None = None
    task_timeout: float = 300.0
    agent_options: JSON = msgspec.field(default_factory=dict)
    base_url: str | None = None  # the model endpoint (scripted: the stack's model server)
    trace: bool = True  # export spans to the run's trace store (runs/<id>/traces/)
    capture_messages: bool = False  # the model's messages on its chat spans (opt-in: size)
    transport: str = "http"  # how the agent workers reach the gateway: http or grpc
    trials: int = 1  # times every task runs
    seed: int = 0  # drives every random draw of the run (model mistakes, distractors, faults)
    faults: str | None = None  # the gateway's fault injection spec (sopgym.gateway.faults)
    service_groups: int = 1  # tool-service processes the run's domains share
    # the task selection (sopgym.orchestration.selection), kept so that a resume takes the same
    task_ids: list[str] | None = None  # --tasks
    match: str | None = None  # --match: a glob over task ids
    sample: int | None = None  # --sample: this many per domain, drawn with the run's seed
    prices: str | None = None  # a price table file: the summary's LLM cost estimate
    # episodes in flight at once, spread over the `workers` processes (None: one per worker,
    # as runs recorded before episodes shared a process)
    concurrency: int | None = None

    @property
    def in_flight(self) -> int:
        """How many episodes the run keeps in flight."""
        return self.concurrency if self.concurrency is not None else self.workers

    def to_json(self) -> JSON:
        """The config's JSON object: every field, in order (as ``config.json`` holds it);
        ``concurrency`` only when set, so a run recorded before it reads back byte for byte."""
        data: JSON = msgspec.to_builtins(self)
        if data["concurrency"] is None:
            del data["concurrency"]
        return data

    @classmethod
    def field_names(cls) -> frozenset[str]:
        return frozenset(f.name for f in msgspec.structs.fields(cls))

    @classmethod
    def from_json(cls, data: JSON) -> RunConfig:
        """The config in ``data``, ignoring the keys that are not fields (``created``, a
        shard's settings, a newer version's); :class:`TypeError` when a field is missing or
        of the wrong type."""
        known = cls.field_names()
        try:
            return msgspec.convert({k: v for k, v in data.items() if k in known}, cls)
        except msgspec.ValidationError as error:
            raise TypeError(str(error)) from None

    @classmethod
    def read(cls, path: Path) -> RunConfig:
        """A run folder's ``config.json``; :class:`ValueError` saying why if it is not one."""
        try:
            data = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as error:
            raise ValueError(f"{path} is not JSON: {error}") from None
        if not isinstance(data, dict) or not isinstance(data.get("domains"), list):
            raise ValueError(f"{path} is not a run config (no list of domains)")
        try:
            return cls.from_json(data)
        except TypeError as error:
            raise ValueError(f"{path} is not a run config: {error}") from None


def trial_seed(seed: int, trial: int) -> int:
    """The seed of one trial: the run's own for the first, one derived from it for each
    other, so trials draw differently and the same run seed replays them all."""
    if trial == 0:
        return seed
    digest = hashlib.blake2b(f"{seed}|trial|{trial}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big")


class Job(msgspec.Struct, frozen=True):
    """One episode for an agent worker: the task's inputs (those of its SOP variant, see
    :meth:`Task.inputs_for`), never where its gold lives. Built here once, so no driver can
    drop a key another sends: a shard's job carries the trial and its seed exactly as a local
    run's does, and a seeded sharded run replays like a local one.

    ``replay`` is the oracle's alone (:func:`sopgym.agents.oracle.replay_of`);
    ``traceparent`` makes the worker's spans children of the driver's task span.
    """

    task: JSON
    run_id: str
    trial: int = 0
    seed: int = 0  # the run's seed; the job carries the trial's own (trial_seed)
    distractors: int = 0
    sop_variant: str = "clean"
    replay: JSON | None = None
    traceparent: str | None = None
    job_id: str | None = None  # the driver's name for the job (reports echo it)

    def to_json(self) -> JSON:
        """The job line's object (keys absent rather than null where a worker needs none)."""
        job: JSON = {
            "task": Task.from_json(self.task).as_given(self.sop_variant),
            "distractors": self.distractors,
            "sop_variant": self.sop_variant,
            "run_id": self.run_id,
            "trial": self.trial,
            "seed": trial_seed(self.seed, self.trial),
        }
        if self.traceparent:
            job["traceparent"] = self.traceparent
        if self.replay is not None:
            job["replay"] = self.replay
        if self.job_id is not None:
            job["job_id"] = self.job_id
        return job


class WorkerReport(msgspec.Struct, kw_only=True):
    """An agent worker's answer to one job (its keys in this order; the unset ones absent).

    ``status`` is ``finished``, ``failed`` (the agent's doing) or ``infra_error`` (a service,
    the gateway or the model endpoint failed it). ``token`` (the episode's, to read its record)
    and ``replica`` (the gateway replica holding it) are the driver's, ``error_record`` and
    ``traceback`` come with an exception, ``trace_flushed`` when the worker exports spans,
    ``record_error`` when a shard could not read the episode's record. A line the worker could
    not read as a job is answered ``{"task_id": null, "status": "failed", "error": ...}``,
    which reads as a report with the defaults. The runner builds reports too, for tasks no
    worker answered (a worker that died or timed out, an endpoint found down).
    """

    task_id: str | None
    domain: str | None = None
    trial: int = 0
    episode_id: str | None = None
    status: str = "failed"
    error: str | None = None  # the human text (result rows keep it): "ClassName: message"
    token: str | UnsetType = UNSET
    replica: str | UnsetType = UNSET
    error_record: ErrorRecord | UnsetType = UNSET  # the same error, typed
    traceback: str | UnsetType = UNSET
    elapsed_s: float | None = None
    llm_calls: list[dict[str, Any]] = msgspec.field(default_factory=list)
    answered_without_tools: bool = False
    copied_example: bool | UnsetType = UNSET  # set (True) only when it happened
    untagged_answer: bool | UnsetType = UNSET  # the answer came without its tags (True only)
    tool_choice_refused: bool | UnsetType = UNSET  # the endpoint refused tool_choice (True only)
    trace_flushed: bool | UnsetType = UNSET  # None in a result row: not traced
    record_error: str | UnsetType = UNSET
    # the driver's name for the job, echoed: a report is taken only for a job still awaited
    job_id: str | UnsetType = UNSET
    claimed_infra: bool | UnsetType = UNSET  # the agent raised an infrastructure error itself

    @property
    def error_type(self) -> str | None:
        """The class of the exception that ended the episode (``ModelUnreachable``,
        ``InfraError`` ...), from the typed record; None without one."""
        if isinstance(self.error_record, UnsetType):
            return None
        return self.error_record["type"]

    def to_json(self) -> JSON:
        """The report's JSON object, as a worker writes it (unset keys absent)."""
        data: JSON = msgspec.to_builtins(self)
        return data

    @classmethod
    def from_json(cls, data: object) -> WorkerReport:
        """A report read back (a worker's line, a shard file's ``report``); a
        :class:`msgspec.ValidationError` names the key of the wrong type."""
        return msgspec.convert(data, cls)


def token_turn(
    prompt_ids: Any, completion_ids: Any, logprobs: Any, previous: dict[str, Any] | None
) -> dict[str, Any]:
    """One model turn's tokens as sopgym records them (docs/tokens.md): the prompt's token ids
    (the server's chat template over the request, generation prompt included), the
    completion's (the sampled tokens, end-of-turn included when sampled) and its per-token
    logprobs, each None where the server gave none (never guessed), and ``extends_previous``:
    whether this prompt begins with the ``previous`` turn's prompt and completion (None for a
    first turn or when either side has no ids; False where the template re-rendered history,
    so the turns cannot be joined into one sequence)."""
    extends = None
    if previous is not None and isinstance(prompt_ids, list):
        before = (previous.get("prompt_token_ids") or []) + (
            previous.get("completion_token_ids") or []
        )
        extends = prompt_ids[: len(before)] == before if before else None
    return {
        "prompt_token_ids": prompt_ids if isinstance(prompt_ids, list) else None,
        "completion_token_ids": completion_ids if isinstance(completion_ids, list) else None,
        "completion_logprobs": logprobs if isinstance(logprobs, list) else None,
        "extends_previous": extends,
    }


def take_token_turns(report: WorkerReport) -> list[dict[str, Any]]:
    """``runs/<id>/tokens.jsonl``'s lines for ``report``: one per model call that recorded its
    tokens (``--record-tokens``; docs/tokens.md), each taken out of its ``llm_calls`` record,
    so the result row keeps the calls' figures without the token arrays. ``turn`` is the
    call's index in the row's ``llm_calls``. Empty (and ``report`` untouched) when no call
    recorded tokens."""
    turns = []
    for index, call in enumerate(report.llm_calls):
        tokens = call.pop("tokens", None)
        if isinstance(tokens, dict):
            turns.append({"task_id": report.task_id, "trial": report.trial,
                          "episode_id": report.episode_id, "turn": index,
                          "purpose": call.get("purpose"), "model": call.get("model"),
                          **tokens})  # fmt: skip
    return turns


class RunSummary(msgspec.Struct, kw_only=True):
    """A run's figures, ``summary.json``'s keys in this order: the run, its config, the
    scores' aggregate (:func:`sopgym.evaluation.scoring.summarize`) and the run-level blocks.
    The keys at the end are set only by the command that adds them (``sopgym merge``:
    the shards'; ``sopgym score``: ``responses``); ``run_dir`` is the API's, never written."""

    run_id: str
    config: RunConfig
    # the folder format it was written in (sopgym.runs.folder stamps it; 0: before the key)
    format_version: int = 0
    # sopgym.evaluation.scoring.aggregate over every episode (task x trial)
    tasks: int
    scored: int
    infra_errors: int
    completed: int
    correct: int
    ecr: float
    c_tsr: float
    tsr: float
    tool_precision: float | None
    tool_recall: float | None
    tool_f1: float | None
    errors: dict[str, int]
    order_violations: int
    answered_without_tools: int
    undecided: int
    tsr_if_undecided_pass: float
    scores: dict[str, float | None]
    paper: dict[str, Any]
    robustness: dict[str, Any]
    domains: dict[str, dict[str, Any]]  # the same aggregate, per domain
    infra_failed: list[dict[str, Any]]  # {task_id, domain, trial, cause} per episode
    trace_loss: int  # episodes whose spans the trace receiver did not confirm
    missing: list[str]  # tasks with an episode never recorded
    trials: dict[str, Any]  # pass^k / pass@k
    tsr_intervals: dict[str, Any]
    llm: dict[str, Any]
    # sopgym merge
    unfinished_shards: list[int] | UnsetType = UNSET
    unfinished_shard_states: dict[str, str] | UnsetType = UNSET
    unknown_task_rows: int | UnsetType = UNSET
    duplicate_task_rows: int | UnsetType = UNSET
    # sopgym score
    responses: dict[str, Any] | UnsetType = UNSET
    # the run's folder (sopgym.run, sopgym.score): not in summary.json
    run_dir: str | UnsetType = UNSET

    def to_json(self) -> JSON:
        """``summary.json``'s object: the set fields in order, ``run_dir`` left out; the
        figure blocks as they were computed."""
        data: JSON = {}
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name == "run_dir" or isinstance(value, UnsetType):
                continue
            if name == "format_version" and not value:  # not stamped: as before the key
                continue
            data[name] = value.to_json() if isinstance(value, RunConfig) else value
        return data

    @classmethod
    def read(cls, path: Path) -> RunSummary:
        """A ``summary.json`` written by this version (keys it does not know are ignored)."""
        return msgspec.json.decode(path.read_bytes(), type=cls)


class ResultRow(msgspec.Struct, kw_only=True):
    """One recorded episode as readers rely on it (other keys are kept, not typed here)."""

    task_id: str
    domain: str
    trial: int = 0
    status: str | None = None
    error: str | None = None
    score: TaskScore
    llm_calls: list[dict[str, Any]] | None = None


_SCORE_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskScore))


def result_row_problem(row: dict[str, Any]) -> str | None:
    """Why ``row`` is not a :class:`ResultRow` (msgspec's words, with the JSON path), or
    None when it is one."""
    try:
        msgspec.convert(row, ResultRow)
    except msgspec.ValidationError as error:
        return f"not a result row: {error}"
    unknown = sorted(set(row["score"]) - _SCORE_FIELDS)
    if unknown:  # a score of another version: its figures cannot be read as ours
        return f"not a result row: unknown score field(s) {', '.join(unknown)} - at `$.score`"
    if row["score"]["task_id"] != row["task_id"] or row["score"]["domain"] != row["domain"]:
        return "not a result row: its score is another task's"
    return None


class RowCheck:
    """Checks rows in file order: each is a :class:`ResultRow`, no (domain, task, trial) is
    recorded twice, and, given ``planned`` (the run's attempts), each belongs to the run."""

    def __init__(self, planned: Iterable[tuple[str, str, int]] | None = None) -> None:
        self.planned = set(planned) if planned is not None else None
        self.seen: set[tuple[str, str, int]] = set()

    def __call__(self, row: dict[str, Any]) -> str | None:
        problem = result_row_problem(row)
        if problem is not None:
            return problem
        key = (row["domain"], row["task_id"], row.get("trial") or 0)
        if key in self.seen:
            return f"task {key[1]} trial {key[2]} is recorded twice (the first row is kept)"
        if self.planned is not None and key not in self.planned:
            return f"task {key[0]}/{key[1]} trial {key[2]} is not one of this run's"
        self.seen.add(key)
        return None


def read_results(
    path: Path,
    repair: bool = False,
    drop_corrupt: bool = False,
    planned: Iterable[tuple[str, str, int]] | None = None,
) -> list[dict[str, Any]]:
    """A results.jsonl's rows, each checked by a fresh :class:`RowCheck` (``planned``: the
    run's (domain, task, trial) attempts, when the reader knows them); the first row that
    fails raises :class:`~sopgym.core.jsonio.CorruptRow` naming file and line, or with
    ``drop_corrupt`` every such row is removed from the file."""
    return read_jsonl_prefix(path, repair, drop_corrupt, check=RowCheck(planned))


class UnreadableConfig(DataError, ValueError):
    """A run folder's ``config.json`` that cannot be read as one: names the file and why."""


def read_config_object(path: Path) -> dict[str, Any]:
    """A run's ``config.json`` as a JSON object with a list of domain names, or
    :class:`UnreadableConfig` saying why not (a truncated file, another shape)."""
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise UnreadableConfig(f"{path} is not JSON: {error}") from None
    domains = data.get("domains") if isinstance(data, dict) else None
    if not isinstance(domains, list) or not all(isinstance(d, str) for d in domains):
        raise UnreadableConfig(f"{path} is not a run config (no list of domain names)")
    return data
