"""``sopgym collector``: the observability command (the evaluation commands live in
:mod:`sopgym.cli.evaluate`)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from sopgym.cli.validation import HOST, port_option


@click.command("collector")
@HOST
@port_option(4318)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="Trace store folder (a run's is runs/<id>/traces).",
)
@click.option("--forward", multiple=True, help="Also relay every request to this OTLP URL.")
def collector(host: str, port: int, out_dir: Path, forward: tuple[str, ...]) -> None:
    """Receive OTLP/HTTP traces (POST /v1/traces) and store them as OTLP JSON lines."""
    from sopgym.observability.collector import serve

    try:  # a store that cannot be written is an error now, not at the first span
        out_dir.mkdir(parents=True, exist_ok=True)
        if not os.access(out_dir, os.W_OK | os.X_OK):
            raise PermissionError(f"{out_dir} is not writable")
    except OSError as error:
        raise click.BadParameter(str(error), param_hint="--out") from None
    serve(out_dir, host, port, list(forward))


OBSERVABILITY_COMMANDS = [collector]
