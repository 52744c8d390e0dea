"""Answer-only and one-shot task kinds, repeated trials, seeds and run provenance, through real
processes on loopback (the small test packs in ``tests/testpacks``: ``triage`` is answer-only,
``apigraph`` one-shot).

* An answer-only task runs with an empty catalog and no tool service process at all.
* A graph task takes exactly one model call, whatever the agent; the scripted model reads the
  signatures in the prompt, so its answer follows them when they change.
* ``--trials`` runs every task K times; pass^k and pass@k in the summary equal what the
  results rows give when counted here; the same seed replays the same draws (also across a
  resume), another seed draws differently.
* ``config.json`` records seed, trials, version, commit and data fingerprints.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from importlib import metadata
from math import comb
from pathlib import Path
from typing import Any

import orjson
import pytest
from langchain_core.messages import AIMessage, BaseMessage

from sopgym.agents import make_agent
from sopgym.agents.base import AgentContext
from sopgym.agents.graph import NoFinalAnswer
from sopgym.agents.llm import LLM
from sopgym.agents.models import ModelSpec, parse_model_spec
from sopgym.agents.oneshot import OneShotSolver, one_shot_solver
from sopgym.agents.prompts import case_message, tool_free_prompt
from sopgym.agents.worker import parse_job
from sopgym.client import GatewayClient
from sopgym.core.answers import extract_final_answer
from sopgym.core.registry import DOMAIN_PACKAGES_ENV, load_domain
from sopgym.core.tasks import Task
from sopgym.evaluation.trials import TrialOutcome, pass_at_k, pass_hat_k, trial_metrics
from sopgym.gateway.catalog import Catalog, ServiceEntry
from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command
from sopgym.services.model.engine import ScriptedModel
from sopgym.services.model.profiles import parse_profile
from tests.helpers import DATA_ROOT, domain_data
from tests.test_agents_graph import ANSWER, FakeChat, FakeEpisode

PACKS = "tests.testpacks"
NOISY = "scripted:wrong_final=0.4"


@pytest.fixture(autouse=True)
def _test_packs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test packs are found here and in every child process (they inherit the env)."""
    monkeypatch.setenv(DOMAIN_PACKAGES_ENV, PACKS)


def _run(runs: Path, run_id: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "sopgym", "run", "--runs-dir", str(runs), "--run-id",
               run_id, "--data-root", str(DATA_ROOT), "--workers", "2", *args]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _rows(run: Path) -> list[dict]:
    return [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]


def _summary(run: Path) -> dict:
    return orjson.loads((run / "summary.json").read_bytes())


# ---- answer-only ----
@pytest.mark.parametrize("agent", ["fc", "react"])
def test_answer_only_tasks_run_with_no_tool_service(agent: str, tmp_path: Path) -> None:
    tasks = domain_data("triage").tasks
    _run(tmp_path, "r", "triage", "--agent", agent, "--no-trace")
    summary = _summary(tmp_path / "r")
    assert (summary["tasks"], summary["tsr"], summary["errors"]) == (len(tasks), 1.0, {})
    logs = sorted(p.name for p in (tmp_path / "r" / "logs").iterdir())
    assert not [name for name in logs if name.startswith("tools-")], logs  # no tool service
    assert "gateway.log" in logs and "model.log" in logs
    for row in _rows(tmp_path / "r"):
        assert row["trajectory"]["catalog"] == [] and row["trajectory"]["calls"] == []
        assert [c["purpose"] for c in row["llm_calls"]] == ["answer"]


class SeenChat(FakeChat):
    """A fake chat model that also records the keyword arguments of each call."""

    def __init__(self, replies: list) -> None:
        super().__init__(replies)
        self.kwargs: list[dict] = []

    def invoke(self, messages: list[BaseMessage], **kwargs) -> AIMessage:
        self.kwargs.append(kwargs)
        return super().invoke(messages, **kwargs)


def _tool_free(replies: list, spec: ModelSpec | None = None) -> tuple[LLM, SeenChat, Any]:
    chat = SeenChat(replies)
    episode = FakeEpisode([])
    episode.tools = []
    return LLM(spec or parse_model_spec("scripted"), chat, retries=0, backoff=0.0), chat, episode


@pytest.mark.parametrize("name", ["fc", "react", "plan"])
def test_every_agent_just_answers_an_empty_catalog(name: str) -> None:
    agent: Any = make_agent(name, model="scripted", base_url="http://127.0.0.1:9/v1")
    agent.llm, chat, episode = _tool_free([AIMessage("I need a moment."), AIMessage(ANSWER)])
    context = AgentContext(seed=5)
    answer = agent.solve(Task("t-1", "fake", {"id": "R1"}, "json_answer"), episode, context)
    assert answer == {"status": "ok"}
    assert chat.tools is None  # no tools bound, none described, no plan asked for
    system = chat.seen[0][0].content
    assert "no tools" in system and "Action Input:" not in system
    assert "final_answer" in chat.seen[1][-1].content  # the unreadable reply got a reminder
    assert [u["purpose"] for u in context.usage] == ["answer", "answer"]
    assert [k.get("seed") for k in chat.kwargs] == [5, 5]  # the trial's seed goes along


def test_the_one_shot_solver_makes_exactly_one_call() -> None:
    llm, chat, episode = _tool_free([AIMessage("no answer here"), AIMessage(ANSWER)])
    with pytest.raises(NoFinalAnswer):
        OneShotSolver(llm).solve(Task("t-1", "fake", {}, "graph"), episode, AgentContext())
    assert len(chat.seen) == 1
    for spec, sent in [
        (ModelSpec("openai", "m", "http://127.0.0.1:9/v1"), [{"seed": 5}]),  # compatible API
        (ModelSpec("openai", "m"), [{}]),  # OpenAI's own: some models take no seed
        (ModelSpec("anthropic", "claude"), [{}]),  # no sampling seed at all
    ]:
        llm, chat, episode = _tool_free([AIMessage(ANSWER)], spec)
        context = AgentContext(seed=5)
        assert OneShotSolver(llm).solve(Task("t-1", "fake", {}, "graph"), episode, context)
        assert chat.kwargs == sent, spec
    oracle = make_agent("oracle")
    assert one_shot_solver(oracle) is oracle  # no model: the oracle replays the gold


def test_the_gateway_serves_a_tool_free_domain_itself(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = sopgym_command("gateway", "--port", str(port), "--local-domain", "triage",
                          "--data-root", str(DATA_ROOT))  # fmt: skip
    with ProcessGroup() as group:
        group.start("gateway", argv, tmp_path / "gw.log", ready_url=f"{url}/readyz").wait_ready()
        client = GatewayClient(url)
        listed = client.tasks("triage")
        assert [t["id"] for t in listed] == [t.id for t in domain_data("triage").tasks]
        assert all(t["kind"] == "json_answer" for t in listed)
        episode = client.open(listed[0]["id"], "triage", distractors=3, sop_variant="noisy")
        assert episode.tools == []  # no distractors either: there is nothing to distract from
        assert "rev. 3" in episode.sop and episode.output_schema["required"] == [
            "queue",
            "sla_hours_left",
        ]
        refused = episode.call("lookup_ticket", {})
        assert refused.status == 404 and refused.body["error"]["code"] == "unknown_tool"
        episode.finish({"queue": "urgent", "sla_hours_left": 3})
        record = client.record(episode.id, episode.token)
        assert record["outputs"] == {"queue": "urgent", "sla_hours_left": 3}
        client.close()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ([], 2, "give at least one --service or --local-domain"),
        (["--local-domain", "patient_intake"], 1, "domain patient_intake has tools"),
        (["--local-domain", "nowhere"], 2, "unknown domain 'nowhere'"),
    ],
)
def test_gateway_refuses_what_it_cannot_serve(args: list[str], code: int, message: str) -> None:
    argv = sopgym_command("gateway", "--port", str(free_port()), "--data-root", str(DATA_ROOT),
                          *args)  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert result.returncode == code, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


# ---- one-shot graph tasks ----
def test_graph_tasks_take_one_model_call_and_score_full(tmp_path: Path) -> None:
    data = domain_data("apigraph")
    _run(tmp_path, "g", "apigraph", "--agent", "plan", "--no-trace")
    summary = _summary(tmp_path / "g")
    assert (summary["tasks"], summary["tsr"]) == (len(data.tasks), 1.0), summary
    for row in _rows(tmp_path / "g"):
        assert [c["purpose"] for c in row["llm_calls"]] == ["answer"]  # no loop, no plan
        assert row["trajectory"]["catalog"] == []
        gold = data.gold[row["task_id"]].outputs
        # edges are ordered pairs: checked here as such, whatever the scorer's normalisation
        assert {tuple(e) for e in row["outputs"]["edges"]} == {tuple(e) for e in gold["edges"]}
        assert row["outputs"]["nodes"] == gold["nodes"]


def _graph_answer(model: ScriptedModel, apis: list[dict]) -> dict:
    domain = load_domain("apigraph")
    inputs = {"context": "A small service.", "apis": apis}
    messages = [
        {"role": "system", "content": tool_free_prompt(domain.output_schema)},
        {"role": "user", "content": case_message(domain.sop(), inputs)},
    ]
    body = {"model": "scripted", "messages": messages}
    reply = model.respond(body)["choices"][0]["message"]["content"]
    answer = extract_final_answer(reply, ["nodes", "edges"])
    assert answer is not None, reply
    return answer


def test_the_scripted_graph_answer_follows_the_signatures_in_the_prompt() -> None:
    model = ScriptedModel([domain_data("apigraph")], parse_profile("perfect"))
    apis = [
        {"name": "open_cart", "inputs": ["api_key"], "outputs": ["cart_id"]},
        {"name": "create_order", "inputs": ["cart_id"], "outputs": ["order_id"]},
        {"name": "issue_invoice", "inputs": ["locale"], "outputs": ["invoice_id"]},
    ]
    first = _graph_answer(model, apis)
    assert first == {
        "nodes": ["open_cart", "create_order", "issue_invoice"],
        "edges": [["open_cart", "create_order"]],
    }
    apis[2]["inputs"] = ["order_id", "cart_id"]  # the invoice now needs the order and the cart
    second = _graph_answer(model, apis)
    assert second["edges"] == [
        ["create_order", "issue_invoice"],
        ["open_cart", "create_order"],
        ["open_cart", "issue_invoice"],
    ]
    apis[1]["inputs"] = ["basket_id"]  # nothing returns a basket: the order stands alone
    assert _graph_answer(model, apis)["edges"] == [
        ["create_order", "issue_invoice"],
        ["open_cart", "issue_invoice"],
    ]


# ---- trials, seeds, resume, provenance ----
def test_pass_k_formulas() -> None:
    assert pass_hat_k(3, 3, 3) == 1.0 and pass_hat_k(3, 2, 3) == 0.0
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)
    assert pass_at_k(3, 1, 2) == pytest.approx(2 / 3) and pass_at_k(3, 0, 1) == 0.0
    outcomes = [TrialOutcome("a", "d", t, s) for t, s in enumerate([True, True, False])]
    outcomes += [TrialOutcome("b", "d", t, s) for t, s in enumerate([False, True, False])]
    metrics = trial_metrics(outcomes, 3)
    assert metrics["pass_hat_k"]["1"] == pytest.approx(0.5)
    assert metrics["pass_hat_k"]["2"] == pytest.approx((1 / 3 + 0) / 2)
    assert metrics["pass_at_k"]["3"] == 1.0
    assert metrics["trial_tsr"] == [0.5, 1.0, 0.0]
    assert (metrics["tsr_min"], metrics["tsr_max"]) == (0.0, 1.0)


def _outcomes(run: Path) -> dict[tuple[str, int], tuple[bool, dict]]:
    return {(r["task_id"], r["trial"]): (r["score"]["success"], r["outputs"]) for r in _rows(run)}


def test_trials_with_a_noisy_model_are_seeded_and_resumable(tmp_path: Path) -> None:
    tasks = [t.id for t in domain_data("triage").tasks]
    args = ("triage", "--agent", "fc", "--model", NOISY, "--trials", "3")
    printed = _run(tmp_path, "s7", *args, "--seed", "7").stdout
    assert "pass^3" in printed and "pass@3" in printed, printed  # the console's pass^k table
    run = tmp_path / "s7"
    rows = _rows(run)
    assert sorted((r["task_id"], r["trial"]) for r in rows) == sorted(
        (t, trial) for t in tasks for trial in range(3)
    )
    # pass^k / pass@k counted here from the rows, against the summary
    successes = {t: sum(r["score"]["success"] for r in rows if r["task_id"] == t) for t in tasks}
    summary = _summary(run)
    trials = summary["trials"]
    for k in (1, 2, 3):
        hat = sum(comb(c, k) / comb(3, k) for c in successes.values()) / len(tasks)
        at = sum(1 - comb(3 - c, k) / comb(3, k) for c in successes.values()) / len(tasks)
        assert trials["pass_hat_k"][str(k)] == pytest.approx(hat)
        assert trials["pass_at_k"][str(k)] == pytest.approx(at)
        assert trials["domains"]["triage"]["pass_hat_k"][str(k)] == pytest.approx(hat)
    assert summary["tsr"] == pytest.approx(trials["pass_hat_k"]["1"])
    assert trials["pass_hat_k"]["3"] < trials["pass_hat_k"]["1"]  # trials drew differently
    per_trial = [
        sum(r["score"]["success"] for r in rows if r["trial"] == t) / len(tasks) for t in range(3)
    ]
    assert trials["trial_tsr"] == pytest.approx(per_trial)
    # every task's root span (the runner's) and its agent span say which trial it was
    traces = b"".join(p.read_bytes() for p in (run / "traces").glob("*.jsonl"))
    found = re.findall(rb'"sopgym\.trial","value":\{"intValue":"(\d)"\}', traces)
    spans_per_task = 2
    assert sorted(found) == sorted(
        str(t).encode() for t in range(3) for _ in tasks for _ in range(spans_per_task)
    )

    # provenance
    config = orjson.loads((run / "config.json").read_bytes())
    assert (config["seed"], config["trials"]) == (7, 3)
    provenance = config["provenance"]
    assert provenance["sopgym_version"] == metadata.version("sopgym")
    assert provenance["fingerprints"] == {"triage": load_domain("triage").fingerprint()}
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).parent) if shutil.which("git") else None  # fmt: skip
    expected = head.stdout.strip() if head is not None and head.returncode == 0 else None
    assert provenance["git_commit"] == expected

    # resume: keep trial 0 and part of trial 1; the rest re-runs under the same seed and
    # draws exactly what the uninterrupted run drew
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    shutil.copy(run / "config.json", resumed / "config.json")
    kept = [r for r in rows if r["trial"] == 0 or (r["trial"] == 1 and r["task_id"] < tasks[4])]
    (resumed / "results.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in kept))
    result = _run(tmp_path, "resumed", "--resume", "resumed")  # --run-id may only repeat it
    assert f"({3 * len(tasks) - len(kept)} to run)" in result.stderr, result.stderr
    assert _outcomes(resumed) == _outcomes(run)
    assert _summary(resumed)["trials"] == trials

    # another seed, other draws
    _run(tmp_path, "s8", *args, "--seed", "8", "--no-trace")
    assert _outcomes(tmp_path / "s8") != _outcomes(run)


def test_the_run_seed_salts_the_distractor_draw() -> None:
    spec = {"type": "object"}
    service = ServiceEntry(
        "shop", "http://127.0.0.1:9", "127.0.0.1", 9, {"buy": {"name": "buy"}},
        {f"d{i}": {"name": f"d{i}", "input_schema": spec} for i in range(12)}, {"clean": "SOP"},
    )  # fmt: skip

    catalog = Catalog([service])

    def drawn(seed: int) -> list[list[str]]:
        return [list(catalog.episode_tools("shop", f"t{i}", 3, seed)[0]) for i in range(5)]

    assert drawn(0) == drawn(0) and drawn(5) == drawn(5)  # deterministic per task
    assert drawn(5) != drawn(0) and drawn(6) != drawn(5)
    assert all(len(names) == 4 and "buy" in names for names in drawn(5))


def test_a_job_with_a_bad_trial_or_seed_is_refused() -> None:
    task = '{"id": "t", "domain": "d"}'
    for bad in ('"trial": "1"', '"seed": 1.5', '"trial": true'):
        with pytest.raises(ValueError, match="must be an integer"):
            parse_job(f'{{"task": {task}, {bad}}}')
    assert parse_job(f'{{"task": {task}, "trial": 2, "seed": 9}}')["trial"] == 2
