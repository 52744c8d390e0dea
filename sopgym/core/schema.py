"""JSON Schema validation of tool arguments, mapped onto sopgym's error codes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from sopgym.core.errors import ToolError

# A schema error's keyword decides the code. Order matters when several errors are present:
# the most fundamental problem (a missing or unknown argument) is reported first.
_CODE_BY_KEYWORD = {
    "required": "missing_argument",
    "additionalProperties": "unexpected_argument",
    "type": "type_mismatch",
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
        self._validator = Draft202012Validator(schema)
        self._properties = set(schema.get("properties", {}))

    def validate(self, arguments: Any) -> None:
        """Raise :class:`ToolError` for the most fundamental problem with ``arguments``."""
        if not isinstance(arguments, dict):
            raise ToolError("invalid_request", "tool arguments must be a JSON object")
        errors = list(self._validator.iter_errors(arguments))
        if errors:
            raise min((_to_tool_error(e) for e in errors), key=lambda e: _PRIORITY[e.code])


def _to_tool_error(error: ValidationError) -> ToolError:
    code = _CODE_BY_KEYWORD.get(str(error.validator), "invalid_value")
    path = [str(p) for p in error.absolute_path]
    if code == "missing_argument":
        missing = _quoted_name(error.message)
        return ToolError(code, f"missing required argument '{missing}'", ".".join([*path, missing]))
    if code == "unexpected_argument":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        name = extra[0] if extra else "?"
        return ToolError(code, f"unexpected argument '{name}'", ".".join([*path, name]))
    field = ".".join(path) or None
    where = f"argument '{field}'" if field else "arguments"
    return ToolError(code, f"{where}: {error.message}", field)


def _quoted_name(message: str) -> str:
    # jsonschema phrases it as "'name' is a required property"
    return message.split("'")[1] if message.count("'") >= 2 else message
