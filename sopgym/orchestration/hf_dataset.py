"""A run as a Hugging Face dataset folder (``sopgym export RUN --format hf``): the results as
one parquet file under ``data/`` and a dataset card, ``README.md``, whose YAML front matter
names that file as the ``train`` split of the ``default`` configuration (the layout the Hub's
dataset viewer and ``datasets.load_dataset(FOLDER)`` read). The rows are ``sopgym export``'s
flat table (one per episode: task and trial); the card says what the run was (domains,
agent, model, trials, provenance), its TSR with its interval per domain and overall, and what
each column group holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from sopgym.core.jsonio import write_atomic
from sopgym.core.untrusted import markdown_text
from sopgym.evaluation.stats import interval_text, tsr_intervals
from sopgym.types import JSON

DATA_FILE = "data/train-00000-of-00001.parquet"  # the Hub's name for a split's only shard

# what each group of columns holds (the card's table; prefixes end with a dot)
COLUMNS = {
    "task_id, trial, domain, agent, model, episode_id": "the episode",
    "status, error, infra_error, faults": "how it ended (infra_error: the infrastructure failed "
    "it; such an episode is not scored)",
    "success, completed": "the verdict: every gating scorer passed; a final answer was given",
    "tool_calls, gold_tool_calls, tool_precision, tool_recall, tool_f1, order_violations": (
        "the tool calls against the reference policy's"
    ),
    "llm_calls, input_tokens, output_tokens, elapsed_s": "cost",
    "score.<scorer>": "each scorer's value (empty where it does not apply)",
    "errors.<kind>": "how many calls the gateway refused, per kind",
    "output.<field>, gold.<field>, field_ok.<field>": "each answer field given, expected, "
    "and whether it matched",
}


def write_hf_dataset(frame: Any, rows: list[JSON], config: JSON, run_id: str, target: Path) -> Path:
    """Write the folder ``target`` (created; files in it replaced): ``frame`` (pandas, the
    flat export of ``rows``) as the parquet split and the card made from ``rows`` and
    ``config``."""
    data = target / DATA_FILE
    data.parent.mkdir(parents=True, exist_ok=True)
    # owner-only, as every file that carries the gold (the rows hold gold.<field>)
    write_atomic(data, frame.to_parquet(None, index=False))
    card = dataset_card(rows, config, run_id, len(frame.columns))
    write_atomic(target / "README.md", card.encode())
    return target


def dataset_card(rows: list[JSON], config: JSON, run_id: str, columns: int) -> str:
    """The dataset card: YAML front matter (configs, size, tags) and what the data is."""
    domains = list(config.get("domains") or sorted({r["domain"] for r in rows}))
    front = {
        "configs": [
            {"config_name": "default", "data_files": [{"split": "train", "path": DATA_FILE}]}
        ],
        "pretty_name": f"sopgym run {run_id}",
        "size_categories": [_size_category(len(rows))],
        "tags": ["sopgym", "agent-evaluation", "tool-use", *domains],
    }
    intervals = tsr_intervals(rows)
    lines = [
        "---",
        # YAML holds JSON: each value in JSON's notation needs no YAML writer
        *(f"{key}: {orjson.dumps(value).decode()}" for key, value in front.items()),
        "---",
        "",
        f"# sopgym run {markdown_text(run_id)}",
        "",
        f"The results of one sopgym run: {len(rows)} episodes ({columns} columns), one row "
        "per task and trial, in `" + DATA_FILE + "` (the `train` split).",
        "",
        "## The run",
        "",
        # what the run's config names is the user's (or a file's) text, shown as typed: a model
        # name such as <img onerror=...> must not run where the card is rendered
        f"- domains: {', '.join(map(markdown_text, domains))}",
        f"- agent: {markdown_text(config.get('agent'))}; "
        f"model: {markdown_text(config.get('model'))}",
        f"- trials per task: {markdown_text(config.get('trials') or 1)}; "
        f"created: {markdown_text(config.get('created'))}",
    ]
    provenance = config.get("provenance") or {}
    if provenance:
        dirty = " (with local changes)" if provenance.get("git_dirty") else ""
        lines.append(
            f"- sopgym {markdown_text(provenance.get('sopgym_version'))}, commit "
            f"{markdown_text(provenance.get('git_commit'))}{dirty}"
        )
    lines += ["", "## Results", "", f"- all: {interval_text(intervals['overall'])}"]
    lines += [f"- {markdown_text(d)}: {interval_text(i)}" for d, i in intervals["domains"].items()]
    lines += ["", "## Columns", "", "| columns | what they hold |", "| --- | --- |"]
    lines += [f"| `{names}` | {what} |" for names, what in COLUMNS.items()]
    lines += [
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        'episodes = load_dataset("path/to/this/folder", split="train")',
        "```",
        "",
    ]
    return "\n".join(lines)


def _size_category(count: int) -> str:
    """The Hub's size bucket for ``count`` rows."""
    for bound, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if count < bound:
            return name
    return "100K<n<1M"
