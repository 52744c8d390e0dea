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
    serve(traced(app, "sopgym.model"), host, port)
