"""A real model on a fixed small matrix: what the harness lets it do, before and after.

The matrix (3-5 tasks a cell, the same tasks every time: each domain's first ``--limit``):

==========  ==================================  =======  ==============================
family      domain                              agent    what it asks of the model
==========  ==================================  =======  ==============================
maze        maze/insurance_claim                fc       answer-only (enum answers)
tod         tod/compliance                      fc       answer-only
tool use    patient_intake                      react    SOP-Bench-style tool calls
tool use    patient_intake                      fc       the same, function calling
flagging    content_flagging                    react    tool calls (issue 48's domain)
flagging    content_flagging                    fc       the same, function calling
banking     banking/account_management          fc       a TELLER-style scenario
graph       banking/account_management_graph    fc       one-shot dependency graph
==========  ==================================  =======  ==============================

Each cell is ``sopgym run DOMAIN --agent A --limit N --workers 1 --model openai:<name>
--base-url URL`` (one worker: the server serves one request at a time), read back from the
run's results.jsonl into one table row:

* TSR; the family score (the family's own scorer: SOP-Maze's graded ``answer_schema``, the
  TOD rules, the graph's node/edge score, ...; named in the row); tool calls made; tool F1;
* first-step time on the first task, first-step time on the later tasks (a shared prompt
  prefix is served from the server's cache there), and the time of later steps;
* the server's generation speed where it reports timings (llama-server), and output tokens
  over whole call latency (named for what it is);
* the harness's share of episode wall time (all that is not waiting on the model);
* answers that repeat the prompt's example, answers given without their tags;
* how the tasks ended (error classes).

Any OpenAI-compatible server will do (llama-server, vLLM, the scripted model server). It is
not a CI test; ``tests/test_bench_real_model.py`` holds the table's logic to a scripted run.
``--python`` runs another checkout's sopgym (the "before" of a comparison). See
docs/local-models.md.

    python bench/bench_real_model.py --base-url http://127.0.0.1:8080/v1 \\
        --model qwen2.5-coder-1.5b --limit 3 --task-timeout 600 --label after
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import orjson

from sopgym.agents.metrics import exception_class
from sopgym.agents.prompts import example_answer
from sopgym.core.registry import load_domain
from sopgym.types import JSON


@dataclass(frozen=True)
class Cell:
    family: str
    domain: str
    agent: str

    @property
    def key(self) -> str:
        return f"{self.family}:{self.agent}"


MATRIX = (
    Cell("maze", "maze/insurance_claim", "fc"),
    Cell("tod", "tod/compliance", "fc"),
    Cell("tool use", "patient_intake", "react"),
    Cell("tool use", "patient_intake", "fc"),
    Cell("flagging", "content_flagging", "react"),
    Cell("flagging", "content_flagging", "fc"),
    Cell("banking", "banking/account_management", "fc"),
    Cell("graph", "banking/account_management_graph", "fc"),
)
# scorers every family has: the family score is the first scorer of a row not among them
GENERIC_SCORERS = frozenset({"output_fields", "schema_valid", "tool_calls", "errors", "order"})


def run_cell(args: argparse.Namespace, cell: Cell, folder: Path) -> JSON:
    run_id = f"{cell.family.replace(' ', '_')}-{cell.agent}"
    command = [
        args.python, "-m", "sopgym", "run", cell.domain,
        "--agent", cell.agent,
        "--model", f"openai:{args.model}",
        "--base-url", args.base_url,
        "--limit", str(args.limit),
        "--workers", "1",
        "--task-timeout", str(args.task_timeout),
        "--runs-dir", str(folder),
        "--run-id", run_id,
        *(["--capture-messages"] if args.capture_messages else ["--no-trace"]),
        *[part for option in args.run_option for part in option.split()],
    ]  # fmt: skip
    environment = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "local")}
    started = time.perf_counter()
    # run from outside any checkout, so ``-m sopgym`` imports the chosen python's install
    done = subprocess.run(
        command, capture_output=True, text=True, env=environment, cwd=folder, check=False
    )
    wall = time.perf_counter() - started
    results = folder / run_id / "results.jsonl"
    if not results.exists():
        raise SystemExit(f"{cell.key}: no results ({done.returncode}): {done.stderr[-2000:]}")
    rows = [orjson.loads(line) for line in results.read_bytes().splitlines()]
    row = {"family": cell.family, "domain": cell.domain, "agent": cell.agent,
           **figures(rows, wall)}  # fmt: skip
    if args.capture_messages:  # why each unsuccessful task ended, in the model's own words
        replies = model_replies(folder / run_id / "traces")
        failed = [r for r in rows if not (r.get("score") or {}).get("success")]
        row["replies"] = {
            r["task_id"]: [text[:EXCERPT] for text in replies.get(r.get("episode_id") or "", [])]
            for r in failed
        }
    return row


EXCERPT = 240  # characters of each model reply kept for a failed task


def model_replies(traces: Path) -> dict[str, list[str]]:
    """Each episode's model replies in order, from the ``chat`` spans a run with
    ``--capture-messages`` records (``gen_ai.output.messages``): text parts as written, tool
    calls as ``name(arguments)``."""
    spans = []
    for path in sorted(traces.glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            for resource in orjson.loads(line).get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    spans += scope.get("spans", [])
    by_episode: dict[str, list[tuple[int, str]]] = {}
    for span in spans:
        attributes = {a["key"]: a["value"] for a in span.get("attributes", [])}
        output = attributes.get("gen_ai.output.messages", {}).get("stringValue")
        episode = attributes.get("gen_ai.conversation.id", {}).get("stringValue")
        if output is None or episode is None:
            continue
        parts = [p for m in orjson.loads(output) for p in m.get("parts", [])]
        text = " ".join(
            p.get("content", "") if p.get("type") == "text"
            else f"{p.get('name')}({orjson.dumps(p.get('arguments')).decode()})"
            for p in parts
        )  # fmt: skip
        started = int(span.get("startTimeUnixNano") or 0)
        by_episode.setdefault(episode, []).append((started, text))
    return {e: [text for _, text in sorted(turns)] for e, turns in by_episode.items()}


def family_score(row: JSON) -> tuple[str, float] | None:
    """The row's family score: its first scorer that not every family has (SOP-Maze's graded
    ``answer_schema``, the TOD rules, ...), else the output fields' score."""
    scores = (row.get("score") or {}).get("scores") or {}
    for name, result in scores.items():
        if name not in GENERIC_SCORERS and isinstance(result.get("value"), int | float):
            return name, float(result["value"])
    fields = scores.get("output_fields") or {}
    if isinstance(fields.get("value"), int | float):
        return "output_fields", float(fields["value"])
    return None


def copies_example(row: JSON) -> bool:
    """Whether the row's answer repeats the prompt's example answer (``agents.prompts``'s,
    whose values only show the form) in all its fields but at most one, in a form of three
    fields or more: a model copying the form instead of deciding the case (seen with the 1.5B
    on banking). The agents send back an exact copy once and flag it ``copied_example``; a
    form of one or two fields is left out (its example is little more than the first allowed
    values)."""
    outputs = row.get("outputs")
    if not isinstance(outputs, dict) or not outputs:
        return False
    example = example_answer(load_domain(row["domain"]).output_schema) or {}
    same = sum(name in outputs and outputs[name] == value for name, value in example.items())
    return len(example) >= 3 and same >= len(example) - 1


def _mean(values: list[float]) -> float | None:
    return round(statistics.mean(values), 3) if values else None


def figures(rows: list[JSON], wall_s: float) -> JSON:
    """One table row's figures from a run's results rows (in the order the tasks ran)."""
    calls = [c for r in rows for c in r.get("llm_calls") or ()]
    answered = [c for c in calls if not c.get("error")]
    model_s = sum(float(c.get("latency_s") or 0) for c in calls)
    episode_s = sum(float(r.get("elapsed_s") or 0) for r in rows)
    errors: Counter[str] = Counter()
    for row in rows:
        errors.update((row.get("score") or {}).get("errors") or {})
        if row.get("status") != "finished":
            errors[f"{row.get('status')}:{exception_class(row.get('error')) or 'error'}"] += 1
    scored = [r for r in rows if r.get("status") != "infra_error"]
    f1 = [r["score"]["tool_f1"] for r in scored if r["score"].get("tool_f1") is not None]
    family = [s for s in (family_score(r) for r in scored) if s is not None]
    firsts = [
        float(r["llm_calls"][0].get("latency_s") or 0) for r in rows if r.get("llm_calls")
    ]
    later = [float(c.get("latency_s") or 0) for r in rows for c in (r.get("llm_calls") or ())[1:]]
    later_firsts = [r["llm_calls"][0] for r in rows[1:] if r.get("llm_calls")]
    processed = [c for c in later_firsts if c.get("prompt_tokens_processed") is not None]
    timed = [c for c in answered if c.get("generation_s")]
    generation_s = sum(float(c["generation_s"]) for c in timed)
    answered_s = sum(float(c.get("latency_s") or 0) for c in answered)
    return {
        "tasks": len(rows),
        "tsr": round(sum(r["score"]["success"] for r in scored) / len(scored), 3)
        if scored
        else None,
        "family_scorer": family[0][0] if family else None,
        "family_score": _mean([value for _, value in family]),
        "tool_calls": sum(int(r["score"].get("calls") or 0) for r in rows),
        "tool_f1": _mean(f1),
        "answered_without_tools": sum(bool(r["score"].get("answered_without_tools")) for r in rows),
        "model_calls": len(calls),
        "first_step_s_task1": round(firsts[0], 2) if firsts else None,
        "first_step_s_later_tasks": _mean(firsts[1:]),
        "later_step_s": _mean(later),
        # the server's own count (load does not change it): of the later tasks' first
        # prompts, how many tokens it processed rather than took from its prefix cache
        "first_step_prompt_processed_later": _mean(
            [float(c["prompt_tokens_processed"]) for c in processed]
        ),
        "first_step_prompt_tokens_later": _mean(
            [float(c.get("input_tokens") or 0) for c in processed]
        ),
        "example_copied": sum(copies_example(r) for r in rows),
        # answers taken as the object alone, tags left off (the agents flag them)
        "untagged_answers": sum(r.get("untagged_answer") is True for r in rows),
        "generation_tokens_per_s": round(
            sum(int(c.get("generated_tokens") or 0) for c in timed) / generation_s, 2
        )
        if generation_s
        else None,
        "output_tokens_per_s_of_latency": round(
            sum(int(c.get("output_tokens") or 0) for c in answered) / answered_s, 2
        )
        if answered_s
        else None,
        "harness_share": round(1 - model_s / episode_s, 3) if episode_s else None,
        "episode_s": round(episode_s, 1),
        "run_wall_s": round(wall_s, 1),
        "errors": dict(sorted(errors.items())),
    }


COLUMNS = (
    ("family", "family"), ("agent", "agent"), ("tasks", "tasks"), ("TSR", "tsr"),
    ("family score", "family_score"), ("tool calls", "tool_calls"), ("tool F1", "tool_f1"),
    ("1st step s (task 1)", "first_step_s_task1"),
    ("1st step s (later tasks)", "first_step_s_later_tasks"),
    ("1st step prompt tokens processed (later tasks)", "first_step_prompt_processed_later"),
    ("later steps s", "later_step_s"),
    ("gen tok/s", "generation_tokens_per_s"),
    ("out tok/s of latency", "output_tokens_per_s_of_latency"),
    ("harness share", "harness_share"), ("answers = the example", "example_copied"),
    ("answers without tags", "untagged_answers"),
    ("how the tasks ended", "errors"),
)  # fmt: skip


def _cell(key: str, row: JSON) -> str:
    value = row.get(key)
    if key == "family_score" and value is not None:
        return f"{value:g} ({row.get('family_scorer')})"
    if key == "first_step_prompt_processed_later" and value is not None:
        return f"{value:,.0f} of {row.get('first_step_prompt_tokens_later') or 0:,.0f}"
    if key == "errors":
        return ", ".join(f"{k} {v}" for k, v in value.items()) if value else "-"
    if value is None:
        return "n/a"
    return f"{value:g}" if isinstance(value, float) else str(value)


def table(rows: list[JSON], label: str = "") -> str:
    """The rows as a Markdown table (a ``version`` column when ``label`` is given)."""
    columns = list(COLUMNS)
    if label:
        columns.insert(2, ("version", "version"))
        rows = [{**row, "version": label} for row in rows]
    head = "| " + " | ".join(name for name, _ in columns) + " |"
    rule = "|" + "---|" * len(columns)
    body = ["| " + " | ".join(_cell(key, row) for _, key in columns) + " |" for row in rows]
    return "\n".join([head, rule, *body])


# fc's system message before issue 48: one sentence on calling, then the answer's form with
# its example (the only example it showed); kept to measure the prompts against each other
_CALL_SENTENCE_BEFORE = (
    "Call tools through the function-calling interface, one step at a time, and wait for each "
    "result before deciding the next step."
)
_FIRST_REPLY_SENTENCE = (
    "Your first reply is a tool call, never the final answer: the answer's values come from "
    "the tools' results."
)


def prompt_variants(output_schema: JSON, tools: list[JSON]) -> dict[str, str]:
    """fc's system message as it was, with the issue's one added sentence, and as it is (an
    example call in the ``<tool_call>`` form before the answer's form)."""
    from sopgym.agents.prompts import _ROLE, answer_contract, system_prompt

    contract = answer_contract(output_schema)
    after = system_prompt(output_schema, tools=tools)
    calling = after.split("\n\n")[1]  # the paragraph with the example call
    without_example = contract.split("\nThe form, for example")[0]
    return {
        "answer example only (before)": f"{_ROLE}\n\n{_CALL_SENTENCE_BEFORE}\n\n{contract}",
        "+ first reply is a call": (
            f"{_ROLE}\n\n{_CALL_SENTENCE_BEFORE} {_FIRST_REPLY_SENTENCE}\n\n{contract}"
        ),
        "example call first (after)": after,
        "example call and no answer example": f"{_ROLE}\n\n{calling}\n\n{without_example}",
        "answer's form before the example call": f"{_ROLE}\n\n{contract}\n\n{calling}",
    }


def first_reply_kind(message: JSON, offered: list[str], fields: list[str]) -> str:
    """What a model's first reply to fc's opening is: a native call, a call written as text,
    an answer in its tags, the answer's object without them, or none of these."""
    from sopgym.agents.textcalls import read_text_calls
    from sopgym.core.answers import declared_final_answer, untagged_final_answer

    text = message.get("content") or ""
    if message.get("tool_calls"):
        return "native call"
    if read_text_calls(text, offered):
        return "text call"
    if declared_final_answer(text, fields) is not None:
        return "tagged answer"
    if untagged_final_answer(text, fields) is not None:
        return "untagged answer"
    return "other"


# a --probe-tool-choice value ending so also sends the call's JSON schema as response format
CALL_FORMAT = "+format"


def probe_first_replies(args: argparse.Namespace, domains: list[str]) -> list[JSON]:
    """fc's first model turn only (system message, case, the domain's tools), under each
    prompt variant, on the first ``--limit`` tasks of each domain: one request a task and
    variant, so prompts are compared on a slow server in minutes, not whole episodes. The
    tools are the domain's own in its catalog order (a run's episode adds its distractors)."""
    import httpx

    from sopgym.agents.graph import openai_tool
    from sopgym.agents.llm import call_format
    from sopgym.agents.prompts import case_message
    from sopgym.core import dataset

    out = []
    with httpx.Client(timeout=args.task_timeout) as http:
        for name in domains:
            data = dataset.load(load_domain(name))
            tools = [t.spec.rendered() for t in data.domain.tools]
            offered = [t["name"] for t in tools]
            fields = list(data.domain.output_schema.get("properties", {}))
            variants = prompt_variants(data.domain.output_schema, tools)
            chosen = [(v, s) for v, s in variants.items()
                      if not args.probe_variants or v in args.probe_variants.split(",")]
            choices = [c.strip() for c in args.probe_tool_choice.split(",") if c.strip()]
            for (variant, system), tool_choice in itertools.product(chosen, choices):
                kinds: Counter[str] = Counter()
                excerpts = []
                for task in data.tasks[: args.limit]:
                    body = {
                        "model": args.model,
                        "messages": [
                            {"role": "system", "content": system},
                            {"role": "user",
                             "content": case_message(data.domain.sop(), task.inputs)},
                        ],
                        "tools": [openai_tool(t) for t in tools],
                        "tool_choice": tool_choice.removesuffix(CALL_FORMAT),
                        "temperature": 0,
                        "max_tokens": args.probe_max_tokens,
                    }  # fmt: skip
                    if tool_choice.endswith(CALL_FORMAT):  # what a forced fc turn sends
                        body["response_format"] = call_format(body["tools"])
                    reply = http.post(f"{args.base_url}/chat/completions", json=body)
                    reply.raise_for_status()
                    message = reply.json()["choices"][0]["message"]
                    kind = first_reply_kind(message, offered, fields)
                    kinds[kind] += 1
                    shown = message.get("content") or orjson.dumps(message.get("tool_calls"))
                    excerpts.append(f"{task.id}: {kind}: {str(shown)[:160]!r}")
                row = {"domain": name, "variant": variant, "tool_choice": tool_choice,
                       "tasks": sum(kinds.values()),
                       "kinds": dict(sorted(kinds.items())), "excerpts": excerpts}  # fmt: skip
                print(orjson.dumps(row).decode(), file=sys.stderr, flush=True)
                out.append(row)
    return out


def probe_table(rows: list[JSON]) -> str:
    lines = [
        "| domain | prompt | tool_choice | tasks | first replies |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        kinds = ", ".join(f"{k} {v}" for k, v in row["kinds"].items())
        lines.append(f"| {row['domain']} | {row['variant']} | {row['tool_choice']} "
                     f"| {row['tasks']} | {kinds} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base-url", required=True, help="the server's OpenAI base URL (.../v1)")
    parser.add_argument("--model", default="local", help="the model name the server expects")
    parser.add_argument(
        "--cells",
        default="",
        help="only these cells, as family:agent, comma-separated (default: the whole matrix)",
    )
    parser.add_argument("--limit", type=int, default=3, help="tasks per cell (3-5)")
    parser.add_argument("--task-timeout", type=float, default=600.0)
    parser.add_argument("--python", default=sys.executable, help="the sopgym to run")
    parser.add_argument("--run-option", action="append", default=[], help="extra run flags")
    parser.add_argument("--label", default="", help="a name for these figures (before/after)")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures (JSON)")
    parser.add_argument("--runs-dir", type=Path, default=None, help="keep the runs here")
    parser.add_argument(
        "--no-capture-messages",
        dest="capture_messages",
        action="store_false",
        help="run the cells with --no-trace instead of keeping each model turn's messages "
        "(--capture-messages: their trace, under --runs-dir, says why each task failed)",
    )
    parser.add_argument(
        "--probe-first-reply",
        default="",
        help="instead of the matrix: fc's first reply under each prompt variant, on these "
        "domains (comma-separated)",
    )
    parser.add_argument("--probe-max-tokens", type=int, default=384)
    parser.add_argument(
        "--probe-variants", default="", help="only these variants (names, comma-separated)"
    )
    parser.add_argument(
        "--probe-tool-choice",
        default="auto",
        help="the tool_choice values each variant is probed with (comma-separated: auto, "
        f"required, none; required{CALL_FORMAT}: with the call's JSON schema as response format, "
        "as a forced fc turn sends it to an OpenAI-compatible endpoint)",
    )
    args = parser.parse_args()
    if args.probe_first_reply:
        domains = [d.strip() for d in args.probe_first_reply.split(",") if d.strip()]
        probed = probe_first_replies(args, domains)
        if args.out:
            args.out.write_bytes(orjson.dumps({"label": args.label, "model": args.model,
                                               "probe": probed}, option=orjson.OPT_INDENT_2))
        print(probe_table(probed))
        return
    wanted = {c.strip() for c in args.cells.split(",") if c.strip()}
    cells = [c for c in MATRIX if not wanted or c.key in wanted]
    unknown = wanted - {c.key for c in MATRIX}
    if unknown:
        raise SystemExit(f"unknown cells {sorted(unknown)}: use {[c.key for c in MATRIX]}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-real-model-") as scratch:
        # absolute: each run's command works in this folder, where a relative path would nest
        folder = (args.runs_dir or Path(scratch)).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        for cell in cells:
            rows.append(run_cell(args, cell, folder))
            print(f"{args.label} {cell.key}: {rows[-1]}", file=sys.stderr, flush=True)
            if args.out:  # written as it goes: a long run keeps what it measured
                report = {"label": args.label, "model": args.model, "rows": rows}
                args.out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print(table(rows, args.label))


if __name__ == "__main__":
    main()
