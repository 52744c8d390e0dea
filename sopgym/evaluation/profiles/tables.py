"""The report's tables of the papers' own definitions, each beside our strict figure.

Built from an evaluation (``sopgym eval`` / ``sopgym report``): ``paper`` holds each profile's
figures (overall and per agent / model), ``per_task`` each episode's verdicts, ``two_stage``
our TELLER view. A table appears only when a profile applies to the run.
"""

from __future__ import annotations

from sopgym.evaluation.profiles import sopbench, teller
from sopgym.evaluation.report import Cell, Table, num, pct
from sopgym.types import JSON

SOPBENCH_TITLE = (
    "SOP-Bench's definitions beside ours (theirs: containment match, crash-only ECR with "
    "infrastructure failures counted, headline = per-SOP % weighted by tasks)"
)
DIFFERS_TITLE = "Tasks the papers' definitions judge differently from ours"
SOPBENCH_COLUMNS = [
    "SOP", "tasks (ours: scored)", "ECR ours", "ECR SOP-Bench", "C-TSR ours", "C-TSR SOP-Bench",
    "TSR ours", "TSR SOP-Bench",
]  # fmt: skip
TABLE_2_COLUMNS = [
    "agent / model", "scenario", "tasks", "Acc. TELLER", "decision acc. ours", "tool P TELLER",
    "tool P ours", "tool R TELLER", "tool R ours", "tool F1 TELLER", "tool F1 ours",
    "tasks judged differently",
]  # fmt: skip
TABLE_5_COLUMNS = [
    "agent / model", "scenario", "episodes", "calls", "Blank % TELLER", "blank ours",
    "Valid. % TELLER (of episodes)", "Valid. % of calls", "validation ours",
    "Type % TELLER (of episodes)", "Type % of calls", "type ours", "total error % TELLER",
]  # fmt: skip
POOLED = "pooled over episodes (not the paper's all)"


def paper_tables(result: JSON) -> list[Table]:
    """Every table the run's profiles call for (none when no profile applies)."""
    paper = result.get("paper") or {}
    out: list[Table] = []
    if paper.get(sopbench.NAME):
        out.append(sopbench_table(paper[sopbench.NAME], result["domains"]))
    if any((m.get("paper") or {}).get(teller.NAME) for m in result["agents"].values()):
        out += teller_tables(result)
    if out:  # "paper" also holds the family tables (sop_maze, tod_procbench): not profiles
        out.append(differing_table(result["per_task"]))
    return out


def sopbench_table(found: JSON, domains: JSON) -> Table:
    rows: list[list[Cell]] = []
    for name, theirs in found["per_sop"].items():
        ours = domains.get(name) or {}
        rows.append([
            name, f"{theirs['tasks']} ({ours.get('scored', 0)})",
            pct(ours.get("ecr")), pct(theirs["ecr"]),
            pct(ours.get("c_tsr")), pct(theirs["c_tsr"]),
            pct(ours.get("tsr")), pct(theirs["tsr"]),
        ])  # fmt: skip
    mean = found["weighted_average"]
    rows.append(["Weighted Average (the paper's: per-SOP % weighted by tasks)", "", "",
                 pct(mean["ecr"]), "", pct(mean["c_tsr"]), "", pct(mean["tsr"])])  # fmt: skip
    if plain := found.get("unweighted_mean"):  # (evaluations stored before it had none)
        rows.append(["unweighted mean of per-SOP % (SOP-Bench's code)", "", "",
                     pct(plain["ecr"]), "", pct(plain["c_tsr"]), "",
                     pct(plain["tsr"])])  # fmt: skip
    pooled = found["pooled"]
    rows.append(["pooled over tasks", str(pooled["tasks"]), "", pct(pooled["ecr"]), "",
                 pct(pooled["c_tsr"]), "", pct(pooled["tsr"])])  # fmt: skip
    title = f"{SOPBENCH_TITLE}; {found['differs']} task(s) judged differently"
    if found["empty_expected_tasks"]:
        title += f"; {found['empty_expected_tasks']} with an empty expected output"
    return Table(title, SOPBENCH_COLUMNS, rows)


def teller_tables(result: JSON) -> list[Table]:
    """TELLER's Tables 2 (stage 2), 5 and 4, each column the paper's beside ours."""
    ours_by_agent = (result.get("two_stage") or {}).get("by_agent") or {}
    table_2: list[list[Cell]] = []
    table_5: list[list[Cell]] = []
    accuracy: dict[str, tuple[float, float | None]] = {}
    for agent_model, figures in result["agents"].items():
        found = (figures.get("paper") or {}).get(teller.NAME) or {}
        theirs_all = dict(found.get("scenarios") or {})
        if found.get("pooled"):  # (evaluations stored before it had none)
            theirs_all[POOLED] = found["pooled"]
        for scenario, theirs in theirs_all.items():
            ours = ((ours_by_agent.get(agent_model) or {}).get(scenario) or {}).get("stage_2")
            ours = ours or {}
            table_2.append([
                agent_model, scenario, str(theirs["tasks"]),
                pct(theirs["acc"]), pct(ours.get("decision_accuracy")),
                num(theirs["tool_precision"]), num(ours.get("tool_precision")),
                num(theirs["tool_recall"]), num(ours.get("tool_recall")),
                num(theirs["tool_f1"]), num(ours.get("tool_f1")),
                str(theirs["differs"]),
            ])  # fmt: skip
            if scenario != POOLED:  # Table 5's all: over every episode already
                table_5.append([
                    agent_model, scenario, str(theirs["tasks"]), str(theirs["calls"]),
                    f"{theirs['blank_pct']:.1f}", str(ours.get("blank", "n/a")),
                    f"{theirs['validation_pct']:.1f}", _pct(theirs, "validation_per_call_pct"),
                    str(ours.get("validation", "n/a")),
                    f"{theirs['type_pct']:.1f}", _pct(theirs, "type_per_call_pct"),
                    str(ours.get("type", "n/a")), _pct(theirs, "total_error_pct"),
                ])  # fmt: skip
            if scenario not in (teller.ALL, POOLED):
                accuracy.setdefault(scenario, (theirs["acc"], ours.get("decision_accuracy")))
    table_4: list[list[Cell]] = []
    for scenario, graph in teller.graph_properties(sorted(accuracy)).items():
        theirs_acc, ours_acc = accuracy[scenario]
        table_4.append([scenario, str(graph["nodes"]), str(graph["edges"]),
                        num(graph["density"]), pct(theirs_acc), pct(ours_acc)])  # fmt: skip
    return [
        Table(
            "TELLER Table 2, stage 2, the paper's definitions beside ours (Acc.: every outcome "
            "field vs ours: decision only; tool P/R: set of APIs vs ours: calls one for one; "
            "all: the mean of the scenario rows, as the paper's)",
            TABLE_2_COLUMNS,
            table_2,
        ),
        Table(
            "TELLER Table 5, tool-call errors: the paper's % of episodes (Blank: no call; "
            "Valid., Type: at least one such call; Type = run-time type mismatch past the "
            "schema; total = their sum, as the paper's) beside the % of calls and our counts "
            "(type = schema type refusal)",
            TABLE_5_COLUMNS,
            table_5,
        ),
        Table(
            "TELLER Table 4, API graph properties and execution accuracy per scenario "
            "(density = E / (N (N - 1)); the first agent / model's accuracy)",
            ["scenario", "nodes", "edges", "density", "Acc. TELLER", "decision acc. ours"],
            table_4,
        ),
    ]


def _pct(found: JSON, key: str) -> str:
    """A percentage an older stored evaluation may lack."""
    value = found.get(key)
    return "n/a" if value is None else f"{value:.1f}"


def differing_table(per_task: list[JSON]) -> Table:
    """One row per task and profile whose verdict differs from ours: what each side says."""
    rows: list[list[Cell]] = []
    for row in per_task:
        score = row["score"]
        for name, found in (score.get("paper") or {}).items():
            if not found.get("differs"):
                continue
            ours = "success" if score["success"] else (
                "failed" if score["completed"] else "not completed")  # fmt: skip
            rows.append([row["task_id"], row["domain"], str(row.get("trial", 0)), name, ours,
                         _theirs(name, found), ", ".join(found["differs"]),
                         str(found.get("why") or "")])  # fmt: skip
    return Table(
        DIFFERS_TITLE,
        ["task", "domain", "trial", "profile", "ours", "theirs", "differs in", "why (theirs)"],
        rows,
    )


def _theirs(name: str, found: JSON) -> str:
    if name == sopbench.NAME:
        if found["correct"]:
            return "correct"
        return "completed, wrong" if found["completed"] else "not completed"
    return (
        f"Acc. {'yes' if found['acc'] else 'no'}, P {num(found['tool_precision'], 2)}, "
        f"R {num(found['tool_recall'], 2)}, type errors {found['type']}"
    )


def paper_lines(result: JSON) -> list[str]:
    """The papers' headline figures in a line each, for the terminal summary."""
    paper = result.get("paper") or {}
    lines = []
    found = paper.get(sopbench.NAME)
    if found:
        mean = found["weighted_average"]
        lines.append(
            f"SOP-Bench's definitions: ECR {pct(mean['ecr'])}, C-TSR {pct(mean['c_tsr'])}, "
            f"TSR {pct(mean['tsr'])} (Weighted Average: {len(found['per_sop'])} per-SOP "
            f"figures weighted by tasks; ours "
            f"TSR {pct(result['tsr'])}); {found['differs']} task(s) judged differently"
        )
    found = paper.get(teller.NAME)
    if found:
        every = found["scenarios"][teller.ALL]
        lines.append(
            f"TELLER's definitions (stage 2): Acc. {pct(every['acc'])}, tool P "
            f"{num(every['tool_precision'])} R {num(every['tool_recall'])} (sets of APIs), "
            f"Blank {every['blank_pct']:.1f}% Valid. {every['validation_pct']:.1f}% Type "
            f"{every['type_pct']:.1f}% of episodes; {every['differs']} task(s) judged "
            f"differently"
        )
    return lines
