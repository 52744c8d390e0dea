"""The scenario database and each episode's own copy of it (stdlib ``sqlite3``).

The generated tables are loaded once per process into an in-memory SQLite database; every
episode gets a private in-memory copy made with SQLite's backup API when it opens, so
concurrent episodes never see each other's writes. Writes run in transactions, and the
schema's constraints (a granted amount above the application's limit, an approval level given
twice) make SQLite refuse them whole. The final state is a JSON snapshot of the tables that
are scored: the task's application, any other application that changed, and the approvals
and decisions logged.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Callable
from typing import Any

from sopgym.core.tables import Tables
from sopgym.core.tasks import Task
from sopgym.domains.banking._engine import fields
from sopgym.domains.banking._engine.spec import KEY, Scenario
from sopgym.types import JSON

WRITTEN = ("status", "reason_code", "granted_amount", "approval_level", "rate", "monthly_amount",
           "decision_note")  # fmt: skip
_WRITTEN_TYPES = {"granted_amount": "INTEGER", "rate": "REAL", "monthly_amount": "REAL"}


def schema_sql(scenario: Scenario) -> str:
    """Applications carry the given fields, the limit the CHECK enforces, and the columns the
    write-back fills; facts hold what the APIs reveal."""
    given = ", ".join(f"{f} {fields.sql_type(f)} NOT NULL" for f in scenario.given)
    screened = ", ".join(f"{f} {fields.sql_type(f)}" for f in scenario.recorded)
    written = ", ".join(f"{c} {_WRITTEN_TYPES.get(c, 'TEXT')}" for c in WRITTEN[1:])
    obtained = ", ".join(f"{f} {fields.sql_type(f)} NOT NULL" for f in scenario.obtained)
    return f"""
    CREATE TABLE applications (
        {KEY} TEXT PRIMARY KEY, {given}, limit_amount INTEGER NOT NULL, {screened},
        status TEXT NOT NULL DEFAULT 'pending', {written},
        CHECK (granted_amount IS NULL OR (granted_amount >= 0
                                          AND granted_amount <= limit_amount)));
    CREATE TABLE facts ({KEY} TEXT PRIMARY KEY REFERENCES applications, {obtained});
    CREATE TABLE approvals (
        approval_id TEXT PRIMARY KEY, {KEY} TEXT NOT NULL REFERENCES applications,
        level TEXT NOT NULL, rank INTEGER NOT NULL, amount INTEGER NOT NULL CHECK (amount >= 0),
        UNIQUE ({KEY}, level));
    CREATE TRIGGER approvals_within_limit BEFORE INSERT ON approvals
    WHEN NEW.amount > (SELECT limit_amount FROM applications WHERE {KEY} = NEW.{KEY})
    BEGIN SELECT RAISE(ABORT, 'the amount exceeds the application''s limit'); END;
    CREATE TABLE decision_log (
        entry INTEGER PRIMARY KEY, {KEY} TEXT NOT NULL REFERENCES applications,
        status TEXT NOT NULL);
    """


def rows(conn: sqlite3.Connection, sql: str, *params: Any) -> list[JSON]:
    cursor = conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [{n: fields.from_sql(n, v) for n, v in zip(names, row, strict=True)}
            for row in cursor.fetchall()]  # fmt: skip


class ScenarioDatabase:
    """The scenario's pristine database in this process, the source of every copy."""

    def __init__(self, scenario: Scenario, tables: Tables) -> None:
        self.scenario = scenario
        self._source = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()  # one backup from the source at a time
        self._source.executescript(schema_sql(scenario))
        for table in ("applications", "facts"):
            frame = tables.frame(table)
            columns = list(frame.columns)
            marks = ", ".join("?" * len(columns))
            values = [tuple(_plain(v) for v in row) for row in frame.itertuples(index=False)]
            self._source.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", values
            )
        self._source.commit()
        self.originals = {r[KEY]: r for r in rows(self._source, "SELECT * FROM applications")}

    def copy(self, application_id: str) -> EpisodeDatabase:
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        with self._lock:
            self._source.backup(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        return EpisodeDatabase(conn, self, application_id)


class EpisodeDatabase:
    """One episode's database (a :class:`sopgym.core.tools.EpisodeStore`)."""

    def __init__(self, conn: sqlite3.Connection, source: ScenarioDatabase, task_key: str) -> None:
        self.conn = conn
        self.scenario = source.scenario
        self._source = source
        self._task_key = task_key
        self.lock = threading.Lock()  # an episode's calls may arrive on several threads

    def application(self, application_id: str) -> JSON | None:
        found = rows(self.conn, f"SELECT * FROM applications WHERE {KEY} = ?", application_id)
        return found[0] if found else None

    def facts(self, application_id: str) -> JSON:
        (found,) = rows(self.conn, f"SELECT * FROM facts WHERE {KEY} = ?", application_id)
        return found

    def snapshot(self) -> JSON:
        every = rows(self.conn, f"SELECT * FROM applications ORDER BY {KEY}")
        own = [r for r in every if r[KEY] == self._task_key]
        originals = self._source.originals
        changed = [r[KEY] for r in every
                   if r[KEY] != self._task_key and r != originals.get(r[KEY])]
        return {
            "application": own[0] if own else None,
            "other_applications_changed": changed,
            "approvals": rows(self.conn, "SELECT * FROM approvals ORDER BY rank, approval_id"),
            "decision_log": rows(self.conn, "SELECT * FROM decision_log ORDER BY entry"),
        }


def _plain(value: Any) -> Any:
    """numpy scalars from the frames as Python values sqlite3 can bind."""
    return value.item() if hasattr(value, "item") else value


_SOURCES: weakref.WeakKeyDictionary[Tables, ScenarioDatabase] = weakref.WeakKeyDictionary()
_SOURCES_LOCK = threading.Lock()


def store_factory(scenario: Scenario) -> Callable[[Tables, Task], EpisodeDatabase]:
    """``DomainPack.episode_store``: the scenario database is built from the tables on first
    use (per ``Tables`` object, so each loaded dataset has its own) and copied per episode."""

    def open_store(tables: Tables, task: Task) -> EpisodeDatabase:
        with _SOURCES_LOCK:
            source = _SOURCES.get(tables)
            if source is None:
                source = _SOURCES[tables] = ScenarioDatabase(scenario, tables)
        return source.copy(task.inputs[KEY])

    return open_store
