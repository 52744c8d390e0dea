"""The ``sopgym`` command line. Every server and worker is a subcommand, so containers and
the embedded runner start exactly the same entry points.

A package of thin command modules (``run``, ``score``, ``domains``, ``serve``, ``env``, ``workers``)
wired into one group here; the logic a Python caller needs too lives under them (``sopgym.run``,
``sopgym.score``, ``sopgym.evaluate``)."""

from __future__ import annotations

import click

from sopgym.cli.domains import field_distribution, list_domains
from sopgym.cli.env import env_serve
from sopgym.cli.run import run as run_command
from sopgym.cli.score import score as score_command
from sopgym.cli.serve import gateway, serve_tools
from sopgym.cli.workers import agent_worker, model_server, user_sim
from sopgym.domain_cli import domain_group
from sopgym.evaluation.cli import EVALUATION_COMMANDS
from sopgym.generation.cli import generate_command
from sopgym.importers.cli import audit_group, import_group
from sopgym.observability.cli import OBSERVABILITY_COMMANDS
from sopgym.orchestration.leases_cli import LEASE_COMMANDS
from sopgym.orchestration.runs_cli import RUNS_COMMANDS
from sopgym.orchestration.scaleout import SCALEOUT_COMMANDS
from sopgym.viewer.cli import view_command

# The commands are bound under other names than their modules: ``sopgym.cli.run`` stays the
# module (what a monkeypatch or ``import sopgym.cli.run`` expects), not the command.
__all__ = ["field_distribution", "main"]


@click.group()
@click.version_option(package_name="sopgym")
def main() -> None:
    """sopgym: run LLM agents through SOPs against real HTTP tool services."""


main.add_command(import_group)  # sopgym import sop-bench ...
main.add_command(audit_group)  # sopgym audit sop-bench ...
main.add_command(generate_command)  # sopgym generate "<business task>" ...
# sopgym collector / eval / report / compare
for _command in [*OBSERVABILITY_COMMANDS, *EVALUATION_COMMANDS]:
    main.add_command(_command)
for _command in SCALEOUT_COMMANDS:  # sopgym merge / loadtest
    main.add_command(_command)
for _command in LEASE_COMMANDS:  # sopgym run-service / merge-leases
    main.add_command(_command)
main.add_command(view_command)  # sopgym view: the run viewer
main.add_command(domain_group)  # sopgym domain show NAME
for _command in RUNS_COMMANDS:  # sopgym runs / show / export
    main.add_command(_command)
# sopgym list / run / score and the entry points of every service and worker
for _command in [list_domains, run_command, score_command, serve_tools, gateway, env_serve,
                 agent_worker, model_server, user_sim]:  # fmt: skip
    main.add_command(_command)
