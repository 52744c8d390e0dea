"""Every image role imports what it runs from its own requirements (issue 47): the agents
image stopped at its build's import check because sopgym.cli reached numpy, which only pandas
had brought in. tests/role_imports.py reads each role's import closure statically; these
tests run it on the tree as it is, and on trees with a planted import."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sopgym.orchestration import images
from tests import role_imports
from tests.role_imports import Source, installed_source, role_problems

PLANTED_IN = "sopgym.orchestration.shards"  # agent-worker --shard: a module the agents image runs


def _planting(line: str, module: str = PLANTED_IN) -> role_imports.SourceReader:
    """The installed tree, with ``line`` appended to ``module``'s source."""

    def read(name: str) -> Source | None:
        source = installed_source(name)
        if name != module or source is None:
            return source
        return Source(source.text + "\n" + line + "\n", source.path, source.is_package)

    return read


@pytest.mark.parametrize("role", sorted(images.ROLES))
def test_each_role_imports_what_it_runs_from_its_own_requirement_file(role: str) -> None:
    assert role_problems(role) == []


def test_a_planted_import_the_agents_requirements_lack_fails_the_agents_role_only() -> None:
    read = _planting("import pandas")
    problems = role_problems("agents", read)
    assert problems == [
        "agents: sopgym.orchestration.shards imports pandas "
        "(from pandas), which compose/requirements/agents.txt does not install"
    ]
    assert role_problems("observability", read) == []  # its image installs pandas


def test_a_dependency_brought_in_only_by_another_requirement_is_found_with_its_chain() -> None:
    # numpy arrives with pandas (the observability image) but with nothing the agents install
    read = _planting("from numpy import zeros", "sopgym.evaluation.stats")
    problems = role_problems("agents", read)
    assert len(problems) == 1
    assert problems[0].startswith("agents: sopgym.cli -> ")
    assert problems[0].endswith(
        " -> sopgym.evaluation.stats imports numpy (from numpy), which "
        "compose/requirements/agents.txt does not install"
    )
    assert role_problems("observability", read) == []


def test_importing_a_module_the_agents_image_prunes_fails() -> None:
    read = _planting("from sopgym.domains.patient_intake import generator")
    problems = role_problems("agents", read)
    assert any(
        p.endswith("sopgym.domains.patient_intake.generator: the agents image prunes "
                   "sopgym.domains.patient_intake.generator (images.PRUNE)")
        for p in problems
    ), problems  # fmt: skip


@pytest.mark.parametrize(
    "planted",
    [
        "def later() -> None:\n    import pandas",  # runs when called, not on import
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pandas",
        "try:\n    import pandas\nexcept ImportError:\n    pandas = None",
    ],
)
def test_imports_an_import_does_not_run_are_not_counted(planted: str) -> None:
    assert role_problems("agents", _planting(planted)) == []


def test_the_role_is_held_to_its_requirement_file_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "requirements"
    shutil.copytree(role_imports.REQUIREMENTS, folder)
    agents = folder / "agents.txt"
    kept = [line for line in agents.read_text().splitlines(True) if "langgraph" not in line]
    agents.write_text("".join(kept))
    problems = role_problems("agents", requirements_folder=folder)
    assert problems and all("imports langgraph" in p for p in problems), problems
