"""TELLER's stage 1 in the paper's setting: the whole catalog's signatures in one prompt.

The paper gives the model every API signature of a scenario's catalog, distractors included
(about 280), and asks for the dependency graph; every fourth task of our graph packs does the
same (the scenario's APIs plus every distractor its catalog serves, financial and back office,
shuffled). This script builds that question and the one-shot prompt our agents send for it
(the system prompt and the SOP and case turn: ``agents/graph.py``, ``answer_without_tools``),
and prints its size per scenario and SOP variant: characters, ~tokens at four characters a
token, and cl100k tokens where tiktoken's encoding is at hand (it is downloaded on first use;
offline it is skipped).

    python bench/bench_teller_stage1.py [--variants clean,abstract]
"""

from __future__ import annotations

import argparse
import importlib
import random
from typing import Any

from sopgym.agents.prompts import case_message, tool_free_prompt
from sopgym.core.registry import load_domain
from sopgym.domains.banking._engine.graph import WHOLE_CATALOG, shown_apis
from sopgym.domains.banking._engine.spec import Scenario
from sopgym.types import JSON

SCENARIOS = ("loans", "account_management", "credit_cards", "savings", "investments")

CHARS_PER_TOKEN = 4  # the project's rough rule (docs/banking.md, "Catalogs")


def whole_catalog_question(name: str, seed: int = 7) -> JSON:
    """The stage-1 task input with every signature of the scenario's catalog, shuffled (as
    the graph pack's whole-catalog tasks are made)."""
    scenario = _scenario(name)
    apis = shown_apis(scenario, WHOLE_CATALOG, random.Random(f"{seed}|{name}"))
    return {"context": scenario.context, "apis": apis}


def _scenario(name: str) -> Scenario:
    module = importlib.import_module(f"sopgym.domains.banking.{name}.scenario")
    return module.SCENARIO


def prompt_text(name: str, variant: str) -> tuple[int, str]:
    """The number of signatures, and the prompt the one-shot agent sends for them."""
    graph = load_domain(f"banking/{name}_graph")
    question = whole_catalog_question(name)
    system = tool_free_prompt(graph.output_schema)
    return len(question["apis"]), system + "\n" + case_message(graph.sop(variant), question)


def _encoder() -> Any:
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # not installed, or its encoding file cannot be fetched offline
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="clean,abstract")
    args = parser.parse_args()
    encoder = _encoder()
    for name in SCENARIOS:
        for variant in args.variants.split(","):
            count, text = prompt_text(name, variant)
            exact = f", {len(encoder.encode(text)):,} cl100k tokens" if encoder else ""
            print(
                f"stage1 {name:<20} {variant:<9} {count} signatures: {len(text):,} chars, "
                f"~{len(text) // CHARS_PER_TOKEN:,} tokens{exact}"
            )


if __name__ == "__main__":
    main()
