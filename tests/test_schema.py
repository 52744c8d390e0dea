"""Argument validation: JSON Schema verdicts mapped onto sopgym's error codes."""

from __future__ import annotations

from typing import Any

import pytest

from sopgym.core.errors import ToolError
from sopgym.core.schema import ArgumentValidator

SCHEMA = {
    "type": "object",
    "properties": {
        "patient_id": {"type": "string", "pattern": "^P[0-9]{3}$"},
        "visits": {"type": "integer", "minimum": 0},
        "address": {
            "type": "object",
            "properties": {"zip": {"type": "string", "minLength": 5}},
            "required": ["zip"],
            "additionalProperties": False,
        },
    },
    "required": ["patient_id"],
    "additionalProperties": False,
}
VALIDATOR = ArgumentValidator(SCHEMA)


def refusal(arguments: Any) -> tuple[str, str | None]:
    with pytest.raises(ToolError) as caught:
        VALIDATOR.validate(arguments)
    return caught.value.code, caught.value.field


def test_valid_arguments_pass() -> None:
    VALIDATOR.validate({"patient_id": "P123", "visits": 2, "address": {"zip": "02108"}})
    VALIDATOR.validate({"patient_id": "P123", "visits": 2.0})  # 2.0 is an integer in JSON


@pytest.mark.parametrize(
    ("arguments", "code", "field"),
    [
        ({}, "missing_argument", "patient_id"),
        ({"patient_id": "P123", "extra": 1}, "unexpected_argument", "extra"),
        ({"patient_id": 123}, "type_mismatch", "patient_id"),
        ({"patient_id": "P123", "visits": True}, "type_mismatch", "visits"),
        ({"patient_id": "X1"}, "invalid_value", "patient_id"),
        ({"patient_id": "P123", "visits": -1}, "invalid_value", "visits"),
        ({"patient_id": "P123", "address": {}}, "missing_argument", "address.zip"),
        ({"patient_id": "P123", "address": {"zip": "1"}}, "invalid_value", "address.zip"),
        ({"patient_id": "P123", "address": {"zip": "02108", "x": 1}}, "unexpected_argument",
         "address.x"),
        # several problems: the most fundamental one is reported
        ({"visits": "many", "extra": 1}, "missing_argument", "patient_id"),
        ({"patient_id": 5, "extra": 1}, "unexpected_argument", "extra"),
        ({"patient_id": 5, "visits": -1}, "type_mismatch", "patient_id"),
    ],
)
def test_each_problem_maps_to_its_code_and_field(
    arguments: dict[str, Any], code: str, field: str
) -> None:
    assert refusal(arguments) == (code, field)


def test_messages_name_the_argument() -> None:
    with pytest.raises(ToolError) as caught:
        VALIDATOR.validate({"patient_id": "P123", "visits": -1})
    assert caught.value.message.startswith("argument 'visits': ")


@pytest.mark.parametrize("arguments", [[1, 2], "text", None, {1: "non-string key"}])
def test_non_objects_are_an_invalid_request(arguments: Any) -> None:
    assert refusal(arguments)[0] == "invalid_request"


def test_an_invalid_schema_is_refused_at_construction() -> None:
    from jsonschema.exceptions import SchemaError

    with pytest.raises(SchemaError):
        ArgumentValidator({"type": "object", "properties": {"x": {"type": "no-such-type"}}})
