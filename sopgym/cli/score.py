"""``sopgym score``: responses produced elsewhere, scored into a run folder."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from sopgym.cli.common import (
    fail,
)
from sopgym.cli.summary import print_summary
from sopgym.cli.validation import (
    DATA_ROOT,
    id_list,
    run_name,
)
from sopgym.core.registry import (
    UnknownDomainError,
)
from sopgym.core.untrusted import printable
from sopgym.terminal import console


@click.command("score")
@click.argument("domains", nargs=-1, required=True)
@click.option(
    "--responses",
    required=True,
    type=click.Path(path_type=Path),
    help="A file of responses, or a folder of such files.",
)
@click.option(
    "--format", "reader", default=None,
    help="How the responses are written: jsonl, sopmaze, an installed reader's name or "
    "module:Class for your own reader (docs/own-outputs.md); default: sopmaze for SOP-Maze's "
    "files with model_response, else jsonl.",
)  # fmt: skip
@click.option("--model", default="unknown", show_default=True, help="Who wrote the responses.")
@click.option(
    "--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
    help="The folder that holds run folders.",
)  # fmt: skip
@click.option("--run-id", default=None, callback=run_name, help="Name of the run folder.")
@click.option("--tasks", "task_ids", default=None, callback=id_list, help="Only these task ids.")
@click.option("--match", default=None, help="Only tasks whose id matches this glob.")
@click.option("--sample", type=click.IntRange(1), default=None, help="N tasks per domain.")
@click.option("--limit", type=click.IntRange(1), default=None, help="First N tasks per domain.")
@click.option("--seed", default=0, show_default=True, help="The --sample draw's seed.")
@DATA_ROOT
def score(
    domains: tuple[str, ...], responses: Path, reader: str | None, model: str, runs_dir: Path,
    run_id: str | None, task_ids: list[str] | None, match: str | None, sample: int | None,
    limit: int | None, seed: int, data_root: Path | None,
) -> None:  # fmt: skip
    """Score responses produced elsewhere against DOMAINS' tasks (names, a family, a glob):
    a normal run folder that report, view, show, export and compare read. Tasks the selection
    holds and no response answers count as unanswered."""
    from sopgym.evaluation.external import ScoreRefused
    from sopgym.orchestration import api
    from sopgym.orchestration.runner import new_run_id
    from sopgym.orchestration.selection import SelectionError
    from sopgym.runs.records import given

    run_id = run_id or new_run_id()
    run_dir = runs_dir / run_id
    try:
        summary = api.score(responses, list(domains), reader=reader, model=model,
                            runs_dir=runs_dir, run_id=run_id, task_ids=task_ids, match=match,
                            sample=sample, limit=limit, seed=seed, data_root=data_root)  # fmt: skip
    except UnknownDomainError as error:
        raise click.UsageError(str(error)) from None
    except (ScoreRefused, SelectionError) as error:
        fail(str(error))
    except OSError as error:
        fail(f"cannot use run folder {run_dir}: {error.strerror or error}")
    print_summary(summary.to_json())
    tally = given(summary.responses) or {}
    problems = ("unknown", "not_selected", "ambiguous", "duplicates", "unreadable", "missing",
                "no_trajectory")  # fmt: skip
    console.print(f"responses: {tally['read']} read, {tally['scored']} scored, "
                  + ", ".join(f"{tally[k]} {k.replace('_', ' ')}" for k in problems))  # fmt: skip
    if summary.undecided:
        console.print(f"undecided: {summary.undecided} episode(s) passed every gate that "
                      "could be judged, not the final state (no service held it): TSR "
                      f"{summary.tsr:.1%}, {summary.tsr_if_undecided_pass:.1%} had they "
                      "passed it")  # fmt: skip
    for name in problems:
        for item in tally[f"{name}_listed"][:5]:
            console.print(f"  {name.replace('_', ' ')}: {escape(printable(item))}", soft_wrap=True)
    console.print(f"results: {run_dir / 'results.jsonl'}\nsummary: {run_dir / 'summary.json'}")
