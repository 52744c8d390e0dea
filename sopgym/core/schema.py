"""JSON Schema validation of tool arguments, mapped onto sopgym's error codes.

Validation sits on every tool call's path, so it runs on jsonschema-rs (a compiled Draft
2020-12 validator, about 1 µs a call against about 65 µs for the pure-Python ``jsonschema``).
The schema itself is still checked against the metaschema with ``jsonschema`` at start-up,
which is what the domain-pack and import tooling report schema problems with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator

from sopgym.core.errors import ToolError

# A schema error's kind decides the code. Order matters when several errors are present:
# the most fundamental problem (a missing or unknown argument) is reported first.
_CODE_BY_KIND = {
    "Required": "missing_argument",
    "AdditionalProperties": "unexpected_argument",
    "Type": "type_mismatch",
}
_PRIORITY = {
    "missing_argument": 0,
    "unexpected_argument": 1,
    "type_mismatch": 2,
    "invalid_value": 3,
}


class ArgumentValidator:
    """A compiled validator for one tool's input schema."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        Draft202012Validator.check_schema(schema)
        self._validator = jsonschema_rs.Draft202012Validator(dict(schema))

    def validate(self, arguments: Any) -> None:
        """Raise :class:`ToolError` for the most fundamental problem with ``arguments``."""
        if not isinstance(arguments, dict):
            raise ToolError("invalid_request", "tool arguments must be a JSON object")
        try:
            if self._validator.is_valid(arguments):
                return
            errors = [_to_tool_error(e) for e in self._validator.iter_errors(arguments)]
        except ValueError as error:  # not JSON data (a non-string key), or past its depth limit
            raise ToolError("invalid_request", f"tool arguments not checkable: {error}") from None
        raise min(errors, key=lambda e: _PRIORITY[e.code])


def _to_tool_error(error: jsonschema_rs.ValidationError) -> ToolError:
    kind = error.kind
    code = _CODE_BY_KIND.get(type(kind).__name__, "invalid_value")
    path = [str(p) for p in error.instance_path]
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
        missing = str(kind.property)
        return ToolError(code, f"missing required argument '{missing}'", ".".join([*path, missing]))
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
        name = sorted(kind.unexpected)[0]
        return ToolError(code, f"unexpected argument '{name}'", ".".join([*path, name]))
    field = ".".join(path) or None
    where = f"argument '{field}'" if field else "arguments"
    return ToolError(code, f"{where}: {error.message}", field)
