"""The refusal check the domain tests share: a tool call that must fail with a given error."""

from __future__ import annotations

from typing import Any

import pytest

from sopgym.core.domain import DomainPack
from sopgym.core.errors import ToolError
from sopgym.core.tools import ToolContext


def assert_refused(
    domain: DomainPack,
    ctx: ToolContext,
    tool: str,
    arguments: dict[str, Any],
    code: str,
    field: str | None = None,
) -> None:
    """Calling ``tool`` with ``arguments`` is refused with ``code`` (and ``field``, if given)."""
    with pytest.raises(ToolError) as caught:
        domain.tool_map()[tool](arguments, ctx)
    error = caught.value
    assert error.code == code, (tool, error)
    if field is not None:
        assert error.field == field, (tool, error)
