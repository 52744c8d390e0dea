"""The scenario's APIs as tools over the episode's database.

Reads check every field they are given against the records (a value the agent made up or
copied wrong is a 422 ``invalid_value`` naming the field) and return what the API reveals.
The approval API appends to the approval chain; the write-back records the decision. Both
write in one transaction, so a refused write leaves nothing behind.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sopgym.core.errors import ToolError
from sopgym.core.tools import Tool, ToolContext, arguments_schema, not_found, result_schema, tool
from sopgym.domains.banking._engine import fields
from sopgym.domains.banking._engine.database import EpisodeDatabase
from sopgym.domains.banking._engine.spec import DECISIONS, KEY, Api, Scenario
from sopgym.types import JSON

_NUMBER = {"type": "number", "minimum": 0}
_AMOUNT = {"type": "integer", "minimum": 0}
NOTE = "note"  # the write-back's optional free text; the SOP never asks for one


def key_schema(scenario: Scenario) -> JSON:
    return {"type": "string", "pattern": f"^{scenario.id_prefix}-[0-9]{{5}}$"}


def control_schemas(scenario: Scenario, api: Api) -> JSON:
    """The arguments an approval or a write-back takes besides record fields."""
    level = {"type": "string", "enum": scenario.levels}
    if api.stage == "approval":
        return {"level": level, "amount": _AMOUNT}
    if api.stage == "write":
        reasons = sorted({c.reason for c in scenario.checks} | {"within_limit", "above_limit"})
        controls: JSON = {
            "status": {"type": "string", "enum": list(DECISIONS)},
            "reason_code": {"type": "string", "enum": reasons},
            "granted_amount": _AMOUNT,
            "level": {"type": "string", "enum": ["none", *scenario.levels]},
        }
        if scenario.pricing:
            controls |= {"rate": _NUMBER, "monthly_amount": _NUMBER}
        return controls | {NOTE: {"type": "string", "maxLength": 500}}
    return {}


def parameters(scenario: Scenario, api: Api) -> JSON:
    properties: JSON = {KEY: key_schema(scenario)}
    properties |= control_schemas(scenario, api)
    properties |= {name: fields.schema(name) for name in api.inputs}
    return properties


def database(ctx: ToolContext) -> EpisodeDatabase:
    if not isinstance(ctx.store, EpisodeDatabase):
        raise TypeError("banking tools act on an episode's database")
    return ctx.store


def build_tools(scenario: Scenario) -> list[Tool]:
    return [_make(scenario, api) for api in scenario.apis]


def _make(scenario: Scenario, api: Api) -> Tool:
    returns = scenario.returns(api)
    outputs: JSON = {KEY: {"type": "string"}} | {f: fields.schema(f) for f in returns}
    if api.stage == "approval":
        outputs = {"approval_id": {"type": "string"}, "chain_length": {"type": "integer"}}
    elif api.stage == "write":
        outputs = {KEY: {"type": "string"}, "recorded_status": {"type": "string"},
                   "log_entry": {"type": "integer"}}  # fmt: skip
    run = {"approval": _approve, "write": _write_back}.get(api.stage, _read)

    def implementation(args: JSON, ctx: ToolContext) -> JSON:
        db = database(ctx)
        with db.lock:
            record = db.application(args[KEY])
            if record is None:
                raise not_found(scenario.entity, KEY, args[KEY])
            _check_inputs(scenario, api, args, {**record, **db.facts(args[KEY])})
            return run(scenario, api, args, db)

    arguments = parameters(scenario, api)
    required = [name for name in arguments if name != NOTE]
    spec = tool(api.name, api.description, arguments_schema(arguments, required=required),
                result_schema(outputs))  # fmt: skip
    return spec(implementation)


def _check_inputs(scenario: Scenario, api: Api, args: JSON, known: JSON) -> None:
    if api.stage == "write":
        return  # the write-back records what it is given; the final state judges it
    for name in api.inputs:
        expected = known[name]
        given = args[name]
        same = (abs(given - expected) < 1e-9 if fields.kind(name) == "ratio"
                else given == expected)  # fmt: skip
        if not same or isinstance(given, bool) != isinstance(expected, bool):
            raise ToolError(
                "invalid_value",
                f"{name} does not match the records of {scenario.entity} {args[KEY]}",
                name,
            )


def _read(scenario: Scenario, api: Api, args: JSON, db: EpisodeDatabase) -> JSON:
    source = (db.application(args[KEY]) or {}) if api.stage == "fetch" else db.facts(args[KEY])
    return {KEY: args[KEY]} | {f: source[f] for f in scenario.returns(api)}


def _approve(scenario: Scenario, api: Api, args: JSON, db: EpisodeDatabase) -> JSON:
    """Approvals go up the chain one level at a time, and never above the limit."""
    key, level = args[KEY], args["level"]
    record = db.application(key) or {}
    if record["status"] != "pending":
        raise ToolError("invalid_value", f"{key} is decided already ({record['status']})", KEY)
    chain = [r["level"] for r in _chain(db, key)]
    rank = scenario.levels.index(level)
    if level in chain:
        raise ToolError("invalid_value", f"{level} has approved {key} already", "level")
    if chain != scenario.levels[:rank]:
        raise ToolError(
            "invalid_value",
            f"{level} approval needs the levels below it first ({', '.join(chain) or 'none'} "
            "so far)",
            "level",
        )
    approval_id = f"APR-{key}-{rank + 1}"
    _transaction(db, [(
        "INSERT INTO approvals (approval_id, application_id, level, rank, amount) "
        "VALUES (?, ?, ?, ?, ?)", (approval_id, key, level, rank + 1, args["amount"]))],
        "amount")  # fmt: skip
    return {"approval_id": approval_id, "chain_length": rank + 1}


def _write_back(scenario: Scenario, api: Api, args: JSON, db: EpisodeDatabase) -> JSON:
    """Record the decision and the screening results on the application, and log it. The
    log entry goes first: a granted amount over the limit fails the update's CHECK and takes
    the entry back with it."""
    key, status, level = args[KEY], args["status"], args["level"]
    record = db.application(key) or {}
    if record["status"] != "pending":
        raise ToolError("invalid_value", f"{key} is decided already ({record['status']})", KEY)
    if status == "reject":
        if args["granted_amount"] != 0 or level != "none":
            raise ToolError("invalid_value", "a rejection grants nothing and needs no "
                            "approval level", "granted_amount")  # fmt: skip
    else:
        if level not in [r["level"] for r in _chain(db, key)]:
            raise ToolError("invalid_value", f"no {level} approval recorded for {key}", "level")
    written = {f: args[f] for f in api.inputs if f in scenario.recorded}
    written |= {"status": status, "reason_code": args["reason_code"],
                "granted_amount": args["granted_amount"], "approval_level": level}  # fmt: skip
    if scenario.pricing:
        written |= {"rate": args["rate"], "monthly_amount": args["monthly_amount"]}
    if NOTE in args:
        written["decision_note"] = args[NOTE]
    assignments = ", ".join(f"{c} = ?" for c in written)
    entry = _transaction(db, [
        ("INSERT INTO decision_log (application_id, status) VALUES (?, ?)", (key, status)),
        (f"UPDATE applications SET {assignments} WHERE {KEY} = ?",
         (*written.values(), key)),
    ], "granted_amount")  # fmt: skip
    return {KEY: key, "recorded_status": status, "log_entry": entry}


def _chain(db: EpisodeDatabase, key: str) -> list[JSON]:
    return [dict(zip(("level", "amount"), r, strict=True)) for r in db.conn.execute(
        f"SELECT level, amount FROM approvals WHERE {KEY} = ? ORDER BY rank", (key,))]  # fmt: skip


def _transaction(
    db: EpisodeDatabase, statements: list[tuple[str, tuple[Any, ...]]], field: str
) -> int:
    """Run ``statements`` all or none; a constraint SQLite refuses (the schema's limit
    checks) is a 422 on ``field``. Answers the row id the first statement inserted."""
    conn = db.conn
    conn.execute("BEGIN")
    try:
        row_ids = [conn.execute(sql, params).lastrowid for sql, params in statements]
        conn.execute("COMMIT")
    except BaseException as error:
        conn.execute("ROLLBACK")  # whatever went wrong, nothing of it stays
        if isinstance(error, sqlite3.IntegrityError):
            message = f"refused by the database: {error}"
            raise ToolError("invalid_value", message, field) from None
        raise
    return int(row_ids[0] or 0)
