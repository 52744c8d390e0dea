"""The ``sopgym`` command line. Every server and worker is a subcommand, so containers and
the embedded runner start exactly the same entry points.

Every command lives in a thin module of this package, wired into one group here; the logic a
Python caller needs too lives below it (``sopgym.run``, ``sopgym.score``, ``sopgym.evaluate``)."""

from __future__ import annotations

from typing import Any

import click

from sopgym.cli.collector import collector as collector_command
from sopgym.cli.domain import domain_group
from sopgym.cli.domains import field_distribution, list_domains
from sopgym.cli.env import env_serve
from sopgym.cli.evaluate import compare_command, eval_command, report_command
from sopgym.cli.generate import generate_command
from sopgym.cli.imports import audit_group, import_group
from sopgym.cli.leases import merge_leases_command, run_service_command
from sopgym.cli.run import run as run_command
from sopgym.cli.runs import export_command, runs_command, show_command
from sopgym.cli.scaleout import loadtest_command, loadtest_gather_command, merge_command
from sopgym.cli.score import score as score_command
from sopgym.cli.serve import gateway, serve_tools
from sopgym.cli.view import view_command
from sopgym.cli.workers import agent_worker, model_server, user_sim

# The commands are bound under other names than their modules: ``sopgym.cli.run`` stays the
# module (what a monkeypatch or ``import sopgym.cli.run`` expects), not the command.
__all__ = ["field_distribution", "main"]


class SectionedGroup(click.Group):
    """A click group whose help lists its commands in named sections, in the order they were
    declared, so a user's commands are not lost among the entry points of the services.

    A command added with plain ``add_command`` (no section) is still listed, under "Other
    commands": help never hides a command (tests/test_cli_help.py wants none there)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections: dict[str, list[str]] = {}

    def add_section(self, title: str, commands: list[click.Command]) -> None:
        """Add ``commands`` to the group, listed in help under ``title`` in this order."""
        names = self.sections.setdefault(title, [])
        for command in commands:
            self.add_command(command)
            assert command.name is not None  # click names every command it decorates
            names.append(command.name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listed = {name for names in self.sections.values() for name in names}
        unsectioned = [name for name in self.list_commands(ctx) if name not in listed]
        sections = list(self.sections.items())
        if unsectioned:
            sections.append(("Other commands", unsectioned))
        # the short help's length, from the longest name of all sections, as click's own listing
        limit = formatter.width - 6 - max(len(name) for _, names in sections for name in names)
        for title, names in sections:
            rows = []
            for name in names:
                command = self.get_command(ctx, name)
                if command is not None and not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


@click.group(cls=SectionedGroup)
@click.version_option(package_name="sopgym")
def main() -> None:
    """sopgym: run LLM agents through SOPs against real HTTP tool services."""


# Each command is placed in one section of `sopgym --help`.
assert isinstance(main, SectionedGroup)
main.add_section("Run and inspect results", [
    run_command, score_command, runs_command, show_command, export_command,
    eval_command, report_command, compare_command, view_command,
])  # fmt: skip
main.add_section("Domains and data", [
    list_domains, domain_group, import_group, audit_group, generate_command,
])  # fmt: skip
main.add_section("Serve the stack (containers, clusters, load tests)", [
    serve_tools, gateway, env_serve, agent_worker, model_server, user_sim, collector_command,
    merge_command, run_service_command, merge_leases_command, loadtest_command,
    loadtest_gather_command,
])  # fmt: skip
