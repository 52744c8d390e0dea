"""Stage 1 (paper §4.1): reconstruct a scenario's API dependency graph in one shot.

Each task gives the business context and API signatures (the scenario's APIs, in shuffled
order, among some of the financial distractors); the answer is the directed graph in which B
depends on A exactly when B takes a field that A returns. The gold applies that rule to the
signatures shown: the scenario's APIs form the paper's graph, and the distractors, whose
fields no scenario shares, are isolated nodes. One graph pack per scenario
(``banking/<scenario>_graph``) puts stage 1 next to stage 2 in a run's report.

The last tasks are TELLER's own setting: every signature of the scenario's catalog (~280) and a
``workflow_key`` (the key the scenario's APIs take): the answer is the workflow's graph alone,
the APIs that take the key and those linked to them by dependencies, which is the scenario's
APIs and their edges (the paper's graph); the back-office distractors, linked only among
themselves, are left out (:func:`sopgym.core.depgraph.workflow_graph`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from sopgym.core.depgraph import workflow_graph
from sopgym.core.domain import DomainPack, GeneratedData, PolicyRun
from sopgym.core.tasks import Solution, Task
from sopgym.core.tools import Tool
from sopgym.domains.banking._engine.distractors import FINANCIAL_DISTRACTORS
from sopgym.domains.banking._engine.generator import USER_DATA_VARIANT
from sopgym.domains.banking._engine.sop import GRAPH_VARIANTS
from sopgym.domains.banking._engine.spec import KEY, Scenario
from sopgym.domains.banking._engine.tools import parameters
from sopgym.types import JSON

# distractors shown per task, rotating: the bare graph, a few, the whole financial catalog
DISTRACTOR_COUNTS = (0, 10, 45)
TASKS_PER_COUNT = 4
# every distractor of the scenario's catalog (TELLER's setting, ~280 signatures); the
# back-office tools take fields other back-office tools return, so the dependency rule links
# them (5,388 edges among loans' distractors) where the paper's graph has the scenario's APIs
# only: these tasks name the workflow's key, and their graph is the workflow alone
WHOLE_CATALOG = -1
CATALOG_TASKS = 2
_NAMES: JSON = {"type": "array", "items": {"type": "string", "minLength": 1}}


def signature(scenario: Scenario, name: str) -> JSON:
    api = scenario.api_map[name]
    return {
        "name": name,
        "description": api.description,
        "inputs": list(parameters(scenario, api)),
        "outputs": list(scenario.returns(api)),
    }


def distractor_signature(item: Tool) -> JSON:
    outputs = item.spec.output_schema.get("properties", {})
    return {
        "name": item.name,
        "description": item.spec.description,
        "inputs": list(item.spec.input_schema["properties"]),
        "outputs": list(outputs),
    }


def shown_apis(scenario: Scenario, count: int, rng: random.Random) -> list[JSON]:
    """The signatures one stage-1 task shows, shuffled: the scenario's APIs with ``count``
    financial distractors drawn, or with every distractor of its catalog (``WHOLE_CATALOG``)."""
    from sopgym.domains.banking._engine.pack import distractors  # (the pack imports this one)

    apis = [signature(scenario, api.name) for api in scenario.apis]
    if count == WHOLE_CATALOG:
        apis += [distractor_signature(d) for d in distractors(scenario)]
    else:
        apis += [distractor_signature(d) for d in rng.sample(FINANCIAL_DISTRACTORS, count)]
    rng.shuffle(apis)
    return apis


def make_graph_generator(scenario: Scenario) -> Callable[[int, Path], GeneratedData]:
    def generate(seed: int, files_dir: Path) -> GeneratedData:
        rng = random.Random(f"{seed}|{scenario.name}")
        tasks = []
        rotating = len(DISTRACTOR_COUNTS) * TASKS_PER_COUNT
        for index in range(rotating + CATALOG_TASKS):
            if index < rotating:
                count = DISTRACTOR_COUNTS[index % len(DISTRACTOR_COUNTS)]
                inputs = {"context": scenario.context, "apis": shown_apis(scenario, count, rng)}
            else:  # TELLER's setting: the whole catalog, the workflow's graph alone
                apis = shown_apis(scenario, WHOLE_CATALOG, rng)
                inputs = {"context": scenario.context, "apis": apis, "workflow_key": KEY}
            task_id = f"{scenario.name}_graph-{index:03d}"
            tasks.append(Task(task_id, f"banking/{scenario.name}_graph", inputs, kind="graph"))
        return GeneratedData(tables={}, tasks=tasks)

    return generate


def solve_graph(task: Task, run: PolicyRun) -> Solution:
    apis = task.inputs["apis"]
    signatures = [(a["name"], tuple(a["inputs"]), tuple(a["outputs"])) for a in apis]
    nodes, edges = workflow_graph(signatures, task.inputs.get("workflow_key"))
    linked = {name for edge in edges for name in edge}
    isolated = sorted(name for name in nodes if name not in linked)
    left_out = len(apis) - len(nodes)  # the catalog outside the workflow
    return Solution({"nodes": nodes, "edges": [list(e) for e in edges]},
                    {"isolated": isolated, "left_out": left_out})  # fmt: skip


GRAPH_INPUT: JSON = {
    "type": "object",
    "properties": {
        "context": {"type": "string", "minLength": 1},
        "apis": {"type": "array", "minItems": 2, "items": {
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1},
                           "description": {"type": "string"}, "inputs": _NAMES,
                           "outputs": _NAMES},
            "required": ["name", "inputs", "outputs"], "additionalProperties": False}},
        "workflow_key": {"type": "string", "minLength": 1, "description":
                         "when given, answer the workflow alone: the APIs taking this field "
                         "and those linked to them"},
    },
    "required": ["context", "apis"],
    "additionalProperties": False,
}  # fmt: skip
GRAPH_OUTPUT: JSON = {
    "type": "object",
    "properties": {
        "nodes": {**_NAMES, "description": "every API name (with a workflow_key: the "
                  "workflow's)"},
        "edges": {"type": "array", "description": "[from, to]: `to` takes a field `from` returns",
                  "items": {"type": "array", "items": {"type": "string"}, "minItems": 2,
                            "maxItems": 2}},
    },
    "required": ["nodes", "edges"],
    "additionalProperties": False,
}  # fmt: skip


def build_graph_pack(scenario: Scenario, folder: Path) -> DomainPack:
    return DomainPack(
        name=f"banking/{scenario.name}_graph",
        title=f"{scenario.title}: API dependency graph (stage 1)",
        folder=folder,
        tools=[],
        generate=make_graph_generator(scenario),
        solve=solve_graph,
        kind="graph",
        input_schema=GRAPH_INPUT,
        output_schema=GRAPH_OUTPUT,
        # stage 1 has no user data: the user-data setting shows the abstract SOP, so that
        # `sopgym run banking --sop abstract_user_data` runs both stages in the paper's setting
        sop_files={**GRAPH_VARIANTS, USER_DATA_VARIANT: GRAPH_VARIANTS["abstract"]},
        source_folders=[Path(__file__).parent],
    )
