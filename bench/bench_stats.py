"""Does ``sopgym compare`` call a difference real only when it is? A/A and A/B on the scripted
model's seeded ``noisy`` error profile.

A/A: pairs of runs with the same config and different seeds (``scripted:noisy,seed=N``); the
paired test (:func:`sopgym.evaluation.stats.paired_comparison`) should flag fewer than 5% of
them. A/B: run B's profile makes the answer wrong more often (``wrong_final`` raised from 8% to
``--injected``), a known injected drop in TSR; the test should find it, in B's disfavour.

Episodes are played in-process, not through the HTTP stack (hundreds of full runs do not fit
a shared machine): the scripted model's own playbook
(:class:`sopgym.services.model.script.Playbook`, the code the model server runs) picks every
move, including every drawn mistake, from its error profile and seed; each call is answered by
the domain's real tool on the episode's context (a refusal as the gateway records it); the
episode is scored by :func:`sopgym.evaluation.scoring.score_episode`, the runner's and the
evaluator's scorer. What the agent frameworks and HTTP add (parsing, retries, transport) is not
in these episodes; the statistics see the same kind of rows as in a run.

    python bench/bench_stats.py [--comparisons 100] [--ab 50] [--tasks 30]
        [--domains patient_intake,dangerous_goods,customer_service,know_your_business]
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from typing import Any

from sopgym.core import dataset
from sopgym.core.dataset import DomainData
from sopgym.core.errors import ToolError
from sopgym.core.registry import load_domain
from sopgym.core.tasks import Task
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation.scoring import score_episode
from sopgym.evaluation.stats import paired_comparison, tsr_intervals
from sopgym.services.model.conversation import MadeCall
from sopgym.services.model.profiles import parse_profile
from sopgym.services.model.script import Playbook
from sopgym.types import JSON

MAX_MOVES = 60  # a runaway episode ends unfinished, as an agent's step limit ends it


def play(data: DomainData, book: Playbook, profile: Any, task: Task) -> JSON:
    """One episode of ``task``: the scripted model's moves, the real tools' answers; its
    result row (domain, task id, score)."""
    ctx = data.domain.context(data.tables, data.files_dir, task)
    tools = data.domain.tool_map()
    made: list[MadeCall] = []
    calls: list[CallRecord] = []
    move = book.play(profile, task, made)
    while move.call is not None and len(made) < MAX_MOVES:
        name, arguments = move.call.name, move.call.arguments
        tool = tools.get(name)
        try:
            if tool is None:
                raise ToolError("unknown_tool", f"no tool named {name!r}")
            result = tool(dict(arguments), ctx)
        except ToolError as refused:
            made.append(MadeCall(name, arguments, False, refused.to_body()))
            calls.append(CallRecord(name, arguments, refused.status, refused.code, refused.field,
                                    in_catalog=tool is not None))  # fmt: skip
        else:
            made.append(MadeCall(name, arguments, True, result))
            calls.append(CallRecord(name, arguments, 200, result=result))
        move = book.play(profile, task, made)
    trajectory = Trajectory(
        task.id,
        f"{task.id}-episode",
        calls,
        finished=move.final is not None,
        outputs=move.final,
        catalog=sorted(tools),
        final_state=ctx.final_state() if data.domain.stateful else None,
    )
    score = score_episode(data.domain, task, trajectory, data.gold[task.id])
    return {"domain": data.domain.name, "task_id": task.id, "score": vars(score)}


class Runs:
    """Runs of the scripted model over fixed tasks, one per (profile, seed), cached."""

    def __init__(self, domains: list[str], tasks: int) -> None:
        self.data = [dataset.load(load_domain(name)) for name in domains]
        self.books = {d.domain.name: Playbook(d, set()) for d in self.data}
        self.tasks = tasks
        self.episodes = 0

    def run(self, profile_text: str) -> list[JSON]:
        profile = parse_profile(profile_text)
        rows = []
        for data in self.data:
            book = self.books[data.domain.name]
            for task in data.tasks[: self.tasks]:
                rows.append(play(data, book, profile, task))
        self.episodes += len(rows)
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--comparisons", type=int, default=100, help="A/A comparisons")
    parser.add_argument("--ab", type=int, default=50, help="A/B comparisons")
    parser.add_argument("--tasks", type=int, default=30, help="tasks per domain")
    parser.add_argument("--injected", type=float, default=0.25,
                        help="run B's wrong_final rate (the noisy profile's is 0.08)")  # fmt: skip
    parser.add_argument(
        "--domains",
        default="patient_intake,dangerous_goods,customer_service,know_your_business",
    )
    args = parser.parse_args()
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # figures as they come, into a log too
    runs = Runs(args.domains.split(","), args.tasks)
    started = time.perf_counter()

    flagged, differences, floors = 0, [], []
    for i in range(args.comparisons):
        found = paired_comparison(runs.run(f"noisy,seed={2 * i + 1}"),
                                  runs.run(f"noisy,seed={2 * i + 2}"))  # fmt: skip
        overall = found["overall"]
        flagged += overall["significant"]
        differences.append(overall["difference"])
        floors.append(overall["noise_floor"])
    example = runs.run("noisy,seed=1")
    interval = tsr_intervals(example)["overall"]
    print(f"episodes: {interval['episodes']} per run ({args.tasks} tasks x "
          f"{len(runs.data)} domains: {args.domains}); TSR of seed 1: "
          f"{interval['tsr']:.1%} (95% CI {interval['low']:.1%}-{interval['high']:.1%}), "
          f"noise floor {interval['noise_floor'] * 100:.1f} points")  # fmt: skip
    print(f"A/A: {flagged} of {args.comparisons} comparisons flagged significant "
          f"({flagged / args.comparisons:.1%}; target < 5%); |B - A| mean "
          f"{sum(abs(d) for d in differences) / len(differences) * 100:.1f} points, max "
          f"{max(abs(d) for d in differences) * 100:.1f}; paired noise floor mean "
          f"{sum(floors) / len(floors) * 100:.1f} points")  # fmt: skip

    found_worse, ab_differences = 0, []
    for i in range(args.ab):
        seed = 1000 + i
        found = paired_comparison(
            runs.run(f"noisy,seed={seed}"),
            runs.run(f"noisy,wrong_final={args.injected},seed={seed + 500}"),
        )
        overall = found["overall"]
        found_worse += overall["significant"] and overall["difference"] < 0
        ab_differences.append(overall["difference"])
    mean = sum(ab_differences) / len(ab_differences)
    print(f"A/B (B: wrong_final {args.injected:.0%} instead of 8%): the drop found in "
          f"{found_worse} of {args.ab} comparisons ({found_worse / args.ab:.0%}); B - A mean "
          f"{mean * 100:+.1f} points")  # fmt: skip
    print(f"example sentence: {found['sentence']}")
    print(f"{runs.episodes} episodes in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
