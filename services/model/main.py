"""The scripted model server's entry point: what ``sopgym model-server`` (and the model image)
starts. OpenAI Chat Completions, Anthropic Messages and Bedrock Converse endpoints over the
scripted model, offline; :func:`serve_model` is the same server for a Python caller."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def serve_model(
    domains: Sequence[str] = (),
    host: str = "127.0.0.1",
    port: int = 8200,
    profile: str = "perfect",
    injection_log: Path | None = None,
    data_root: Path | None = None,
) -> None:
    """Serve the scripted model for ``domains``' tasks (names, families or globs; empty: every
    domain) until stopped. ``profile`` is the error profile of requests whose model name
    names none. An unknown profile or domain is a usage error, raised before anything starts."""
    from sopgym.core.registry import select_domains
    from sopgym.observability.asgi import traced
    from sopgym.observability.tracing import setup_tracing
    from sopgym.services.model.app import create_app
    from sopgym.services.model.profiles import parse_profile
    from sopgym.serving import serve

    parse_profile(profile)
    names = select_domains(domains) if domains else None
    setup_tracing("sopgym-model")
    app = create_app(names, data_root, profile, injection_log)
    _allow_open_files()
    serve(traced(app, "sopgym.model"), host, port, BACKLOG, app.state.pacer.stop)


# A load test holds thousands of calls open at once, each a connection waiting out its
# simulated latency: a burst of that many connects must not overflow the accept queue (the
# kernel caps it at net.core.somaxconn, 4096 on current Linux), nor the connections the
# process's soft open-file limit (often 1024).
BACKLOG = 16384


def _allow_open_files() -> None:
    """Raise the soft open-file limit to the hard one (no privilege needed)."""
    import contextlib
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        with contextlib.suppress(ValueError, OSError):  # refused: keep the one we have
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
