"""Environments for reinforcement learning: sopgym's tasks as Gymnasium environments
(:class:`SopgymEnv`), and the same over HTTP for remote trainers (:mod:`.server`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sopgym.client import connect
from sopgym.core import dataset
from sopgym.core.registry import load_domain
from sopgym.env.environment import ACTION_TYPES, JsonSpace, SopgymEnv

__all__ = ["ACTION_TYPES", "JsonSpace", "SopgymEnv", "make_env"]


def make_env(
    gateway: str,
    domain: str,
    data_root: Path | None = None,
    transport: str = "http",
    **options: Any,
) -> SopgymEnv:
    """An environment over ``domain``'s tasks (its data generated under ``data_root`` if it
    is not there yet) through the gateway at ``gateway`` over ``transport`` (http or grpc: the
    reward reads the episode's record with its token, which MCP episodes do not carry);
    ``options`` go to SopgymEnv."""
    data = dataset.load(load_domain(domain), data_root)
    return SopgymEnv(connect(gateway, transport), data, **options)
