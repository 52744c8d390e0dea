"""A Gymnasium environment over a domain's tasks, played through the gateway.

Each ``reset`` opens a fresh gateway episode of one task (the one named in ``options``, else one
drawn with the env's seeded generator) and observes what an agent is given: the SOP, the task
input, the tool catalog and the answer's schema. Each ``step`` takes one action, a JSON object:

* ``{"type": "tool", "name": ..., "arguments": {...}}``: one tool call, recorded by the gateway
  like any agent's (a refusal is observed, not raised);
* ``{"type": "message", "content": ...}``: a message to a dialogue task's simulated user;
* ``{"type": "finish", "outputs": {...}}``: the final answer, which ends the episode.

The reward is the episode's score, computed once it ends by the domain's scorers
(:func:`~sopgym.evaluation.scoring.score_episode`) over the gateway's own record of the
episode: 1.0 for a success, 0.0 otherwise, the whole score in ``info["score"]``. Nothing but
the final reward comes from the scorers. ``refusal_penalty`` is an optional *shaped* reward,
off by default: each refused action costs that much when it happens (a training aid, not a
score). An episode that reaches ``max_steps`` actions without finishing is truncated: the
gateway episode is finished with no outputs and the reward is the score of that (0.0).

With ``record_tokens`` (``sopgym env-serve --record-tokens``; docs/tokens.md) an action may
carry ``"tokens"``: the model turn that produced it, as the trainer's server returned it
(``prompt_token_ids``, ``completion_token_ids``, ``completion_logprobs``). The step's info
answers it as recorded (``info["tokens"]``, with its ``turn`` index and ``extends_previous``),
and the step that ends the episode answers all of them (``info["token_turns"]``). Off, the key
is ignored, as any unknown action key is.

Observations and actions are JSON objects (:class:`JsonSpace`); the episode's id, which names
its record and its trace, is :attr:`SopgymEnv.episode_id`, not part of the observation, so
that seeded resets observe the same thing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, SupportsFloat

import gymnasium
import orjson

from sopgym.client import Episode, ToolResult
from sopgym.client.transports import GatewayClientProtocol
from sopgym.core.dataset import DomainData
from sopgym.core.errors import ToolError
from sopgym.core.tasks import Task
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scoring import score_episode
from sopgym.runs.records import token_turn
from sopgym.types import JSON

if TYPE_CHECKING:  # the recorder is handed in; the environment never starts one
    from sopgym.orchestration.recorder import RunRecorder

ACTION_TYPES = ("tool", "message", "finish")
DEFAULT_MAX_STEPS = 64


class JsonSpace(gymnasium.Space[JSON]):
    """JSON objects. Sampling draws an action (``sample_action`` given) or an empty object."""

    def __init__(self, sample_action: Any = None) -> None:
        super().__init__(shape=None, dtype=None)
        self._sample_action = sample_action

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        if not isinstance(x, dict):
            return False
        try:
            orjson.dumps(x)
        except TypeError:
            return False
        return True

    def sample(self, mask: Any = None, probability: Any = None) -> JSON:
        return self._sample_action(self.np_random) if self._sample_action else {}


class SopgymEnv(gymnasium.Env[JSON, JSON]):
    """Episodes of ``data``'s tasks through ``client`` (any transport's gateway client)."""

    metadata = {"render_modes": []}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        client: GatewayClientProtocol,
        data: DomainData,
        *,
        distractors: int | None = None,
        sop_variant: str = "clean",
        max_steps: int = DEFAULT_MAX_STEPS,
        refusal_penalty: float = 0.0,
        recorder: RunRecorder | None = None,
        record_tokens: bool = False,
    ) -> None:
        self.client, self.data = client, data
        self.recorder = recorder  # each ended episode into a run folder (env-serve --run-dir)
        self.tasks = {task.id: task for task in data.tasks}
        self.distractors, self.sop_variant = distractors, sop_variant
        self.max_steps, self.refusal_penalty = max_steps, refusal_penalty
        self.observation_space = JsonSpace()
        self.action_space = JsonSpace(self._random_action)
        self.task: Task | None = None
        self.episode: Episode | None = None
        self.steps = 0
        self.score: JSON | None = None
        self.record_tokens = record_tokens
        self.token_turns: list[JSON] = []  # this episode's, with record_tokens

    @property
    def episode_id(self) -> str | None:
        return self.episode.id if self.episode is not None else None

    @property
    def done(self) -> bool:
        return self.score is not None

    # ---- the Gymnasium API ----
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[JSON, dict[str, Any]]:
        super().reset(seed=seed)
        self._abandon()
        task_id = (options or {}).get("task_id")
        if task_id is None:
            task_id = sorted(self.tasks)[int(self.np_random.integers(len(self.tasks)))]
        if task_id not in self.tasks:
            raise ToolError("invalid_value", f"no task {task_id!r} in {self.data.domain.name}")
        self.task = self.tasks[task_id]
        self.episode = self.client.open(
            task_id,
            self.task.domain,
            distractors=self.distractors,
            sop_variant=self.sop_variant,
            meta={"agent": "env"},
        )
        self.steps, self.score, self.token_turns = 0, None, []
        observation: JSON = {
            "task_id": task_id,
            "kind": self.task.kind,
            "sop": self.episode.sop,
            "inputs": self.task.inputs_for(self.sop_variant),
            "conversation": self.task.conversation,
            "tools": self.episode.tools,
            "input_schema": self.episode.input_schema,
            "output_schema": self.episode.output_schema,
        }
        return orjson.loads(orjson.dumps(observation)), {"task_id": task_id}

    def step(self, action: JSON) -> tuple[JSON, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.episode is None or self.task is None or self.done:
            raise RuntimeError("step() needs an open episode: call reset() first")
        turn = self._token_turn(action)  # a malformed one is refused before the action runs
        self.steps += 1
        kind = action.get("type") if isinstance(action, dict) else None
        if kind == "finish":
            outputs = action.get("outputs")
            return self._with_turn(
                turn, self._end({"type": "finish"}, outputs if isinstance(outputs, dict) else {})
            )
        if kind == "tool":
            result = self.episode.call(str(action.get("name", "")), action.get("arguments", {}))
        elif kind == "message":
            result = self.episode.message(action.get("content"))
        else:
            refused = ToolError(
                "invalid_request", f"an action's type is one of {', '.join(ACTION_TYPES)}", "type"
            )
            result = ToolResult(refused.status, refused.to_body())
        observation = {"type": kind, "status": result.status, "ok": result.ok,
                       "content": result.content}  # fmt: skip
        reward = 0.0 if result.ok else -self.refusal_penalty
        if self.steps >= self.max_steps:
            _, _, _, _, info = self._end(observation, {})
            return self._with_turn(turn, (observation, reward, False, True, info))
        return self._with_turn(turn, (observation, reward, False, False, {"status": result.status}))

    def close(self) -> None:
        self._abandon()

    # ---- helpers ----
    def _token_turn(self, action: Any) -> JSON | None:
        """The action's ``tokens`` as recorded (None when not recording or not given); a
        :class:`ToolError` naming the key when it is not a turn's token record."""
        tokens = action.get("tokens") if self.record_tokens and isinstance(action, dict) else None
        if tokens is None:
            return None
        if not isinstance(tokens, dict):
            raise ToolError("invalid_value", "tokens must be a JSON object", "action.tokens")
        for key, kind in (("prompt_token_ids", int), ("completion_token_ids", int),
                          ("completion_logprobs", float)):  # fmt: skip
            value = tokens.get(key)
            if value is not None and not (
                isinstance(value, list)
                and all(isinstance(v, kind | int) and not isinstance(v, bool) for v in value)
            ):
                raise ToolError("invalid_value", f"tokens.{key} must be an array of "
                                f"{kind.__name__}s", f"action.tokens.{key}")  # fmt: skip
        ids, logprobs = tokens.get("completion_token_ids"), tokens.get("completion_logprobs")
        if ids is not None and logprobs is not None and len(ids) != len(logprobs):
            raise ToolError(
                "invalid_value",
                "tokens.completion_logprobs must have one logprob per completion token id",
                "action.tokens.completion_logprobs",
            )
        previous = self.token_turns[-1] if self.token_turns else None
        turn = token_turn(tokens.get("prompt_token_ids"), ids, logprobs, previous)
        return {"turn": len(self.token_turns), **turn}

    def _with_turn(
        self, turn: JSON | None, step: tuple[JSON, SupportsFloat, bool, bool, dict[str, Any]]
    ) -> tuple[JSON, SupportsFloat, bool, bool, dict[str, Any]]:
        """``step`` with the action's token turn in its info (and, at the episode's end, the
        whole episode's turns)."""
        if turn is None and not (self.token_turns and (step[2] or step[3])):
            return step
        observation, reward, terminated, truncated, info = step
        info = dict(info)
        if turn is not None:
            self.token_turns.append(turn)
            info["tokens"] = turn
        if terminated or truncated:
            info["token_turns"] = self.token_turns
        return observation, reward, terminated, truncated, info

    def _end(
        self, observation: JSON, outputs: JSON
    ) -> tuple[JSON, float, bool, bool, dict[str, Any]]:
        """Finish the gateway episode and score its record with the domain's scorers."""
        assert self.episode is not None and self.task is not None
        self.episode.finish(outputs)
        record = self.client.record(self.episode.id, self.episode.token)
        score = score_episode(
            self.data.domain, self.task, Trajectory.from_json(record), self.data.gold[self.task.id]
        ).to_json()
        self.score = score
        if self.recorder is not None:
            self.recorder.record_trajectory(record)
        reward = 1.0 if score["success"] else 0.0
        return {**observation, "status": 200, "ok": True}, reward, True, False, {"score": score}

    def _abandon(self) -> None:
        """An episode left unfinished by a new reset (or close) is finished without outputs,
        so the gateway and its services release it."""
        if self.episode is not None and not self.done:
            self.episode.finish({})
            self.score = {}

    def _random_action(self, rng: Any) -> JSON:
        """A uniformly random action: a catalog tool with no arguments, a message, or an
        empty final answer (what a random policy can do without knowing the task)."""
        names = [t["name"] for t in self.episode.tools] if self.episode is not None else []
        choice = int(rng.integers(3))
        if choice == 0 and names:
            return {"type": "tool", "name": names[int(rng.integers(len(names)))], "arguments": {}}
        if choice == 1:
            return {"type": "message", "content": "hello"}
        return {"type": "finish", "outputs": {}}
