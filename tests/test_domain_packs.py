"""Rules every domain pack must obey, checked for every registered domain.

These guard, by construction, against the defects found in published SOP benchmarks: labels
reachable from inputs or tool outputs, tools returning None, non-deterministic tools, tools in
the specs that nothing can call, labels that contradict the data, uncovered branches.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from sopgym.core.dataset import derive_gold
from sopgym.core.domain import leaked_fields
from sopgym.core.registry import domain_names, load_domain
from sopgym.core.tables import Tables
from sopgym.core.trajectory import CallRecord
from sopgym.evaluation.scorers.calls import order_violations
from tests.helpers import domain_data

DOMAINS = domain_names()


@pytest.mark.parametrize("name", DOMAINS)
def test_generation_is_deterministic(name: str, tmp_path: Path) -> None:
    domain = load_domain(name)
    first = domain.generate(domain.seed, tmp_path / "a")
    second = domain.generate(domain.seed, tmp_path / "b")
    assert [t.to_json() for t in first.tasks] == [t.to_json() for t in second.tasks]
    assert first.tables.keys() == second.tables.keys()
    for table in first.tables:
        assert first.tables[table].equals(second.tables[table]), table


@pytest.mark.parametrize("name", DOMAINS)
def test_gold_is_reproduced_by_the_policy(name: str) -> None:
    data = domain_data(name)
    for task in data.tasks[:50]:
        user = data.gold[task.id].user  # a dialogue task's private user profile
        again = derive_gold(data.domain, data.tables, data.files_dir, task, user)
        assert again.to_json() == data.gold[task.id].to_json()


@pytest.mark.parametrize("name", DOMAINS)
def test_tasks_are_unique_and_inputs_valid(name: str) -> None:
    data = domain_data(name)
    ids = [t.id for t in data.tasks]
    assert len(ids) == len(set(ids))
    validator = Draft202012Validator(data.domain.input_schema)
    for task in data.tasks:
        assert task.domain == name
        assert not list(validator.iter_errors(task.inputs)), task.id


@pytest.mark.parametrize("name", DOMAINS)
def test_inputs_never_contain_an_output_field(name: str) -> None:
    data = domain_data(name)
    assert not set(data.domain.input_fields) & set(data.domain.output_fields)
    for task in data.tasks:
        assert not leaked_fields(data.domain, [task.inputs, *task.conversation]), task.id


@pytest.mark.parametrize("name", DOMAINS)
def test_gold_outputs_match_the_output_schema(name: str) -> None:
    data = domain_data(name)
    validator = Draft202012Validator(data.domain.output_schema)
    for gold in data.gold.values():
        errors = [e.message for e in validator.iter_errors(gold.outputs)]
        assert not errors, (gold.task_id, errors)
        assert set(gold.outputs) == set(data.domain.output_fields), gold.task_id


@pytest.mark.parametrize("name", DOMAINS)
def test_tool_results_are_objects_without_labels_and_deterministic(name: str) -> None:
    data = domain_data(name)
    tools = data.domain.tool_map()
    tasks = {t.id: t for t in data.tasks}
    validators = {n: Draft202012Validator(t.spec.output_schema) for n, t in tools.items()}
    for gold in data.gold.values():
        # the same calls from the same (stateful domains: the task's initial) state
        ctx, again = (data.domain.context(data.tables, data.files_dir, tasks[gold.task_id])
                      for _ in range(2))  # fmt: skip
        for call in gold.calls:
            first = tools[call.name](dict(call.arguments), ctx)
            second = tools[call.name](dict(call.arguments), again)
            assert isinstance(first, dict) and first == second, (gold.task_id, call.name)
            assert not leaked_fields(data.domain, [first]), (gold.task_id, call.name)
            assert not list(validators[call.name].iter_errors(first)), (gold.task_id, call.name)


@pytest.mark.parametrize("name", DOMAINS)
def test_every_sop_tool_is_needed_by_some_task(name: str) -> None:
    data = domain_data(name)
    used = {c.name for g in data.gold.values() for c in g.calls}
    assert {t.name for t in data.domain.tools} <= used
    assert not used & {t.name for t in data.domain.distractors}


@pytest.mark.parametrize("name", DOMAINS)
def test_gold_calls_respect_the_dependency_graph(name: str) -> None:
    data = domain_data(name)
    known = {t.name for t in data.domain.tools}
    for tool, needs in data.domain.dependencies.items():
        assert tool in known and set(needs) <= known, (tool, needs)
    for gold in data.gold.values():
        calls = [CallRecord(c.name, c.arguments, 200) for c in gold.calls]
        assert not order_violations(calls, data.domain.dependencies), gold.task_id


@pytest.mark.parametrize("name", DOMAINS)
def test_every_label_value_is_covered_three_times(name: str) -> None:
    data = domain_data(name)
    for field, schema in data.domain.output_schema["properties"].items():
        if "enum" not in schema:
            continue
        counts = Counter(g.outputs[field] for g in data.gold.values())
        for value in schema["enum"]:
            assert counts[value] >= 3, (field, value, counts)


@pytest.mark.parametrize("name", DOMAINS)
def test_sop_variants_exist_and_differ(name: str) -> None:
    domain = load_domain(name)
    clean, noisy = domain.sop("clean"), domain.sop("noisy")
    assert len(clean) > 500 and len(noisy) > len(clean)
    for field in domain.output_fields:
        assert field in clean, f"the SOP never names output field {field}"


@pytest.mark.parametrize("name", DOMAINS)
def test_key_columns_are_unique(name: str) -> None:
    data = domain_data(name)
    fresh = Tables({n: data.tables.frame(n) for n in data.tables.names})
    fresh.index_all(data.domain.index_keys)  # raises DuplicateKeyError on a repeated key


def test_the_suite_has_at_least_sop_benchs_task_count() -> None:
    builtin = [n for n in DOMAINS if "/" not in n]
    assert sum(len(domain_data(n).tasks) for n in builtin) >= 1811  # SOP-Bench's total
