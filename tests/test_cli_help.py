"""`sopgym --help` lists the commands in sections (issue 44, point 4): what a user runs first,
the data commands, then the entry points of the services, each command once and none left out."""

from __future__ import annotations

import re

from click.testing import CliRunner

from sopgym.cli import main

SECTIONS = [
    "Run and inspect results",
    "Domains and data",
    "Serve the stack (containers, clusters, load tests)",
]


def _help_sections(text: str) -> dict[str, list[str]]:
    """The help's sections ("Title:" at the margin) with the command names listed under each."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        heading = re.fullmatch(r"(\S.*):", line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
        elif current is not None and (row := re.match(r"  (\S+)", line)):
            current.append(row.group(1))
    return sections


def test_help_lists_every_command_once_in_its_section() -> None:
    result = CliRunner().invoke(main, ["--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    sections = _help_sections(result.output)
    assert [title for title in sections if title in SECTIONS] == SECTIONS
    assert "Other commands" not in sections, "a command was added to the group without a section"
    listed = [name for title in SECTIONS for name in sections[title]]
    assert sorted(listed) == sorted(main.commands)  # each command once
    assert sections[SECTIONS[0]][0] == "run"  # the main job first
    services = set(sections[SECTIONS[2]])
    assert {"agent-worker", "collector", "gateway", "merge", "model-server", "serve-tools",
            "user-sim", "loadtest-gather", "run-service", "merge-leases"} <= services
    assert not services & {"run", "score", "show", "report", "compare", "view", "list"}


def test_a_command_without_a_section_is_still_listed() -> None:
    import click

    from sopgym.cli import SectionedGroup

    @click.group(cls=SectionedGroup)
    def group() -> None:
        """A group."""

    @click.command("stray")
    def stray() -> None:
        """Added without a section."""

    @click.command("placed")
    def placed() -> None:
        """Added in a section."""

    assert isinstance(group, SectionedGroup)
    group.add_section("Placed", [placed])
    group.add_command(stray)
    sections = _help_sections(CliRunner().invoke(group, ["--help"]).output)
    assert sections["Placed"] == ["placed"]
    assert sections["Other commands"] == ["stray"]
