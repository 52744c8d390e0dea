"""The three SOP texts of a scenario, written from its data so that they can never disagree
with the reference policy: ``clean`` (explicit steps, tools and thresholds), ``noisy`` (the
same with documentation noise that changes no outcome) and ``abstract`` (paper §3.4: goals
instead of tool steps, thresholds only in the business context, exception scenarios without
explicit branching).

``python -m sopgym.domains.banking._engine.pack`` rewrites the packs' ``sop*.md``; a test
checks that the committed files are what this module writes.
"""

from __future__ import annotations

from pathlib import Path

from sopgym.domains.banking._engine.spec import Check, Scenario

VARIANTS = {"clean": "sop.md", "noisy": "sop_noisy.md", "abstract": "sop_abstract.md"}


def _condition(check: Check) -> str:
    if check.rejects in ("true", "false"):
        return f"`{check.field}` is {check.rejects}"
    word = "below" if check.rejects == "below" else "above"
    return f"`{check.field}` is {word} {check.threshold:g}"


def _pricing_rules(scenario: Scenario) -> list[str]:
    pricing = scenario.pricing
    if pricing is None:
        return []
    premiums = ", ".join(f"band {band}: +{premium:g}" for band, premium in pricing.premiums)
    monthly = (
        f"the annuity payment over `{pricing.term_field}` months, with the monthly rate "
        "`rate / 12`: `amount * r / (1 - (1 + r) ** -months)`"
        if pricing.term_field
        else "one month's interest: `amount * rate / 12`"
    )
    return [
        f"The `{pricing.rate_output}` is `{pricing.base_rate}` plus the premium of the "
        f"`{pricing.band}` ({premiums}), rounded to 4 decimals.",
        f"The `{pricing.monthly_output}` is {monthly}, rounded to 2 decimals.",
        f"A rejection reports `{pricing.rate_output}` and `{pricing.monthly_output}` as 0.",
    ]


def _answer(scenario: Scenario) -> str:
    names = ", ".join(f"`{f}`" for f in scenario.output_fields)
    return (
        f"Finish with one JSON object holding {names}. `decision` is `approve`, "
        "`counter_offer` or `reject`; `approval_level` is the highest level that approved, or "
        "`none` for a rejection."
        + (" `reason_code` is the write-back's reason." if scenario.pricing else "")
    )


def _tiers(scenario: Scenario) -> str:
    parts = [f"{level} up to {authority:,}" for level, authority in scenario.tiers[:-1]]
    return ", ".join(parts) + f", {scenario.levels[-1]} above"


def clean(scenario: Scenario) -> str:
    key = "`application_id`"
    fetch, approval, write = scenario.fetch, scenario.approval, scenario.write
    screens = ", ".join(f"`{a.name}`" for a in scenario.stage("screen"))
    offers = ", ".join(f"`{a.name}`" for a in scenario.stage("offer"))
    lines = [
        f"# {scenario.title}: standard operating procedure",
        "",
        scenario.context,
        "",
        f"You are given one {scenario.entity} by its {key}. Every API takes {key}; every "
        "other field an API takes must be the value that the record or an earlier API "
        "returned (an API refuses values that do not match the records).",
        "",
        f"1. Fetch the record with `{fetch.name}`.",
        f"2. Screen the application: call {screens}.",
        "3. Exception paths, in this order; the first that applies rejects the application "
        "(skip steps 4 to 6, grant 0, approval level `none`):",
    ]
    lines += [f"   - if {_condition(c)} ({c.text}): reason `{c.reason}`." for c in scenario.checks]
    lines += [
        f"4. Make the offer: call {offers}.",
        f"5. If `{scenario.request_field}` is at most `{scenario.limit_field}`, the decision "
        f"is `approve` for the requested amount (reason `within_limit`); otherwise it is "
        f"`counter_offer` for exactly `{scenario.limit_field}` (reason `above_limit`).",
        f"6. Approval chain: the granted amount needs the lowest level whose authority covers "
        f"it ({_tiers(scenario)}). Call `{approval.name}` once per level, from "
        f"`{scenario.levels[0]}` up to that level, each with `level` and the granted "
        "`amount`.",
        f"7. Write back with `{write.name}` exactly once: `status` (the decision), "
        "`reason_code`, `granted_amount`, `level` (the approval level, `none` when rejected)"
        + (", `rate`, `monthly_amount`" if scenario.pricing else "")
        + " and every screening result from step 2.",
        *[f"   {rule}" for rule in _pricing_rules(scenario)],
        "",
        _answer(scenario),
        "",
    ]
    return "\n".join(lines)


_NOISE = [
    "> Note: this procedure was migrated from the 2019 operations wiki; section numbers in "
    "older emails may differ.",
    "> Reminder: the quarterly conduct-risk training is due by the end of the month.",
    "> Desk staff sometimes call the record fetch 'pulling the file'. It is the same step.",
    "> The legacy mainframe screens were retired; the APIs below replace them one for one.",
]


def noisy(scenario: Scenario) -> str:
    lines = clean(scenario).split("\n")
    out: list[str] = []
    for index, line in enumerate(lines):
        out.append(line)
        if line.startswith(("1.", "3.", "5.", "7.")):
            out += ["", _NOISE[index % len(_NOISE)], ""]
    return "\n".join(out)


def abstract(scenario: Scenario) -> str:
    thresholds = "; ".join(
        f"{c.text}: an application where {_condition(c)} is not acceptable (reason "
        f"`{c.reason}`)" for c in scenario.checks
    )
    lines = [
        f"# {scenario.title}: procedure (abstract)",
        "",
        "## Business context",
        "",
        scenario.context,
        "",
        f"Risk appetite, in order of precedence: {thresholds}. The bank never grants more "
        f"than `{scenario.limit_field}`; an application asking for more may be offered that "
        f"amount instead. Approval authority: {_tiers(scenario)}; each level signs only "
        "after every level beneath it has signed.",
        *_pricing_rules(scenario),
        "",
        "## Goals",
        "",
        f"- Know the {scenario.entity} and everything the bank's systems hold about its "
        "applicant before deciding.",
        "- Decide within the risk appetite; a case outside it is declined with the reason "
        "that comes first.",
        "- Every grant carries the approvals its amount needs.",
        "- The application record ends up holding the decision, its reason, the amount, the "
        "approval level and the screening results, recorded once.",
        "",
        "Exceptional situations (the applicant is outside the risk appetite, the request "
        "exceeds what may be granted) are part of the job: handle them as the business "
        "context requires.",
        "",
        _answer(scenario),
        "",
    ]
    return "\n".join(lines)


def graph_clean(scenario: Scenario) -> str:
    return "\n".join([
        f"# {scenario.title}: API dependency graph",
        "",
        "You are given the business context and the signatures of APIs: the fields each takes "
        "(`inputs`) and returns (`outputs`). There are no tools: answer from the signatures.",
        "",
        "1. `nodes` lists every API name given, distractors included.",
        "2. `edges` lists `[A, B]` for every two different APIs where B takes a field that A "
        "returns (the same field name): B depends on A, so A must be called first.",
        "3. A field no API returns (an id the caller supplies, a choice such as `level`) "
        "creates no edge.",
        "4. When the question names a `workflow_key`, answer the workflow alone: `nodes` "
        "lists the APIs that take that field and every API linked to them by rule 2, "
        "directly or through others, in either direction; leave every other API out, and "
        "its edges with it.",
        "",
        "Answer with one JSON object holding `nodes` and `edges`.",
        "",
    ])


def graph_noisy(scenario: Scenario) -> str:
    text = graph_clean(scenario)
    return text.replace("1. ", f"{_NOISE[0]}\n\n1. ", 1)


def graph_abstract(scenario: Scenario) -> str:
    return "\n".join([
        f"# {scenario.title}: API dependency graph (abstract)",
        "",
        "Map how the APIs below depend on each other: which must have run before another "
        "can be called, judged only by the data each needs and provides. Every API given "
        "belongs in the map, whether or not it takes part in the workflow, unless the "
        "question names a workflow key: then map the workflow alone, the APIs that take "
        "that key and those tied to them by their data, and leave the rest of the catalog "
        "out.",
        "",
        "Answer with one JSON object holding `nodes` (API names) and `edges` (`[A, B]` "
        "pairs: B needs A first).",
        "",
    ])


RENDER = {"clean": clean, "noisy": noisy, "abstract": abstract}
GRAPH_RENDER = {"clean": graph_clean, "noisy": graph_noisy, "abstract": graph_abstract}
GRAPH_VARIANTS = {"clean": "sop_graph.md", "noisy": "sop_graph_noisy.md",
                  "abstract": "sop_graph_abstract.md"}  # fmt: skip


def write_all(folder: Path, scenario: Scenario) -> None:
    """The scenario pack's SOP texts into ``folder``, its graph pack's into ``folder``'s
    ``<name>_graph`` sibling."""
    for variant, filename in VARIANTS.items():
        (folder / filename).write_text(RENDER[variant](scenario))
    graph_folder = folder.parent / f"{scenario.name}_graph"
    for variant, filename in GRAPH_VARIANTS.items():
        (graph_folder / filename).write_text(GRAPH_RENDER[variant](scenario))

