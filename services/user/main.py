"""The user simulator's entry point: what ``sopgym user-sim`` (and the user image) starts.
The simulated users of dialogue domains (``POST /v1/reply``), played by each domain's rules or
by a language model; :func:`serve_users` is the same server for a Python caller."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def serve_users(
    domains: Sequence[str] = (),
    host: str = "127.0.0.1",
    port: int = 8300,
    seed: int | None = None,
    model: str | None = None,
    base_url: str | None = None,
    data_root: Path | None = None,
) -> None:
    """Serve the users of ``domains`` (empty: every dialogue domain) until stopped. ``seed``
    drives the rule-based users' choices (None: each domain's own); ``model`` (a model spec,
    with ``base_url`` for an OpenAI-compatible endpoint) plays them instead. An unknown or
    non-dialogue domain, or a model that cannot be used, is a usage error raised before
    anything starts."""
    from sopgym.core.access import service_secret
    from sopgym.core.exceptions import UsageError
    from sopgym.core.registry import domain_names, load_domain
    from sopgym.observability.asgi import traced
    from sopgym.observability.tracing import setup_tracing
    from sopgym.services.model.profiles import check_model_spec
    from sopgym.services.user.app import create_app
    from sopgym.services.user.simulator import NotADialogueDomain
    from sopgym.serving import serve

    names = list(domains) or [n for n in domain_names() if load_domain(n).user is not None]
    if not names:
        raise UsageError("no dialogue domain to simulate users for")
    for name in names:  # before anything starts: the simulator would refuse it later
        if load_domain(name).user is None:
            raise NotADialogueDomain(f"domain {name!r} has no simulated user")
    user_model = None
    if model is not None:
        from sopgym.services.user.llm_user import LLMUser

        check_model_spec(model)
        user_model = LLMUser(model, base_url)
    setup_tracing("sopgym-user-sim")
    app = create_app(names, data_root, seed, user_model, service_secret())
    serve(traced(app, "sopgym.user"), host, port)
