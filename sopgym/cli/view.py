"""``sopgym view [RUN ...]``: serve the run viewer on 127.0.0.1 and open it in the browser."""

from __future__ import annotations

import os
import socket
import threading
import webbrowser
from pathlib import Path

import click

from sopgym.terminal import console

JAEGER_UI_ENV = "SOPGYM_JAEGER_UI"


def _sources(runs: tuple[str, ...], runs_dir: Path) -> list[Path]:
    """Each RUN as given: a run folder, a folder of runs, or a run id under --runs-dir."""
    if not runs:
        return [runs_dir]
    found = []
    for run in runs:
        path = Path(run)
        if not path.exists() and (runs_dir / run).exists():
            path = runs_dir / run
        if not path.is_dir():
            raise click.BadParameter(f"{run!r} is neither a folder nor a run under {runs_dir}")
        found.append(path)
    return found


@click.command("view")
@click.argument("runs", nargs=-1)
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="The runs folder (served when no RUN is given; where run ids are looked up).",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, help="Port (default: a free one)."
)
@click.option("--no-open", is_flag=True, help="Do not open the browser; print the address only.")
@click.option(
    "--jaeger-ui",
    default=lambda: os.environ.get(JAEGER_UI_ENV),
    help=f"Jaeger UI base URL: task pages link their trace there (default: ${JAEGER_UI_ENV}).",
)
def view_command(
    runs: tuple[str, ...], runs_dir: Path, port: int, no_open: bool, jaeger_ui: str | None
) -> None:
    """Browse runs in a local web app: runs, a run's tasks, one task's steps, two runs
    compared. RUN: run folders, folders of runs, or run ids (default: the runs folder)."""
    import uvicorn

    from sopgym.viewer.app import create_app
    from sopgym.viewer.catalog import RunCatalog

    app = create_app(RunCatalog(_sources(runs, runs_dir)), jaeger_ui)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))  # bound here: the address is known before serving
        listener.listen(128)  # and listening: a browser opened at once waits, never refused
    except OSError as error:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {error}") from None
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    console.print(f"sopgym view: {url} (Ctrl-C stops it)")
    if not no_open:
        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    server.run(sockets=[listener])
