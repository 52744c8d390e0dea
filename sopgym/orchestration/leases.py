"""Work as leases: a run's episodes handed to agent workers a few at a time, for a short while.

The run service (:mod:`sopgym.orchestration.run_service`) owns one :class:`LeaseStore`, a
SQLite file on its own volume. Every (task, trial) of the run is an *attempt*; a worker asks
for as many attempts as it has free episode slots and gets each under a *lease* that lapses
``lease_s`` seconds later unless the worker renews it (all its leases in one request). A worker
that dies (SIGKILL, a lost node) stops renewing, its leases lapse, and the next worker to ask
gets those attempts. A worker that stops on SIGTERM (an eviction, a scale-down) gives its
leases back at once.

A result is accepted once per attempt: the first result stands, whichever lease it came under
(a worker whose lease lapsed may still finish its episode), and a later one is counted as a
duplicate and dropped; the same lease's result sent again (its answer lost in a restart of
the service) is a resend, neither a new result nor a duplicate. An attempt whose leases lapse
``max_lapses`` times (it kills every worker that takes it) is recorded as an infrastructure
error instead of looping forever.

Everything is committed before the service answers, so the service restarted (a new pod on
the same volume) carries on with the same leases, results and counts.

Exit statuses of ``sopgym agent-worker --leases`` (the agents' Job's ``podFailurePolicy``
reads them): :data:`EXIT_DONE` once every attempt has a result, :data:`EXIT_USAGE` for a
worker the run refuses (fails the Job at once), :data:`EXIT_INFRA` when the run service, the
gateway or the model stay unreachable (counts against the retry budget) and 143 on SIGTERM
(leases given back; an eviction is no failure).
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson

from sopgym.core.exceptions import UsageError
from sopgym.types import JSON

EXIT_DONE = 0  # every attempt of the run has its result
EXIT_USAGE = 2  # the run refuses this worker (another agent or model): retrying cannot help
EXIT_INFRA = 3  # the run service, gateway or model stayed unreachable: a new pod may do better
LEASE_S = 30.0  # how long a lease lasts unless renewed
MAX_LAPSES = 3  # leases of one attempt that may lapse before it is recorded as infra_error
LEASE_FILE = "leases.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
    task_id TEXT NOT NULL, trial INTEGER NOT NULL, position INTEGER NOT NULL,
    lease TEXT, holder TEXT, expires REAL, lapses INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, trial)
);
CREATE INDEX IF NOT EXISTS attempts_free ON attempts (done, position);
CREATE TABLE IF NOT EXISTS results (
    task_id TEXT NOT NULL, trial INTEGER NOT NULL, lease TEXT NOT NULL, worker TEXT NOT NULL,
    line BLOB NOT NULL, accepted REAL NOT NULL,
    PRIMARY KEY (task_id, trial)
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class LeaseRefused(UsageError, ValueError):
    """A request the run service cannot honour as asked (an unknown lease, a result for
    another attempt than its lease's, a worker of another agent): answered 409, one line."""


@dataclass(frozen=True)
class Lease:
    """An attempt handed to a worker: its lease id (the job's ``job_id``), task and trial."""

    lease: str
    task_id: str
    trial: int


@dataclass(frozen=True)
class Progress:
    """Where a run stands: attempts planned, with a result, leased now, waiting."""

    planned: int
    done: int
    leased: int
    free: int
    duplicates: int  # results dropped: their attempt already had one
    resends: int  # a lease's result sent again (its answer lost): not a new result
    lapsed: int  # leases that lapsed (their worker gone) and went to another worker
    given_back: int  # leases a stopping worker gave back
    held_by: dict[str, int]  # live leases per worker

    @property
    def finished(self) -> bool:
        return self.planned > 0 and self.done == self.planned

    def to_json(self) -> JSON:
        return {**vars(self), "held_by": dict(self.held_by), "finished": self.finished}


class LeaseStore:
    """The run's attempts, leases and results in one SQLite file (WAL, fully synchronous:
    a result acknowledged is on disk). Safe to call from many threads."""

    def __init__(self, path: Path, lease_s: float = LEASE_S, max_lapses: int = MAX_LAPSES) -> None:
        self.path, self.lease_s, self.max_lapses = path, lease_s, max_lapses
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _count(self, db: sqlite3.Connection, name: str, by: int = 1) -> None:
        db.execute(
            "INSERT INTO counters VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + ?",
            (name, by, by),
        )

    # ---- the plan ----
    def plan(self, settings: JSON, attempts: list[tuple[str, int]]) -> None:
        """Record the run's settings and attempts, once: a restarted service finds them and
        keeps every lease and result; settings that differ from the stored ones are refused
        (:class:`LeaseRefused`, naming the first that differs)."""
        with self._write() as db:
            row = db.execute("SELECT value FROM settings WHERE key = 'run'").fetchone()
            if row is not None:
                stored = orjson.loads(row[0])
                for key in sorted(set(stored) | set(settings)):
                    if stored.get(key) != settings.get(key):
                        raise LeaseRefused(
                            f"{key} {settings.get(key)!r} contradicts the run's stored "
                            f"{stored.get(key)!r} ({self.path})"
                        )
                return
            db.execute("INSERT INTO settings VALUES ('run', ?)", (orjson.dumps(settings),))
            db.executemany(
                "INSERT INTO attempts (task_id, trial, position) VALUES (?, ?, ?)",
                [(task_id, trial, n) for n, (task_id, trial) in enumerate(attempts)],
            )

    def settings(self) -> JSON:
        with self._lock:
            row = self._db.execute("SELECT value FROM settings WHERE key = 'run'").fetchone()
        return orjson.loads(row[0]) if row else {}

    # ---- leases ----
    def lease(
        self, worker: str, want: int, give_up: Callable[[str, int, int], JSON]
    ) -> list[Lease]:
        """Up to ``want`` attempts for ``worker``: free ones first in the run's order, then
        those whose lease lapsed. An attempt whose leases lapsed ``max_lapses`` times gets
        ``give_up(task_id, trial, lapses)`` as its result line, in the same transaction."""
        now = time.time()
        given: list[Lease] = []
        with self._write() as db:
            while len(given) < want:
                rows = db.execute(
                    "SELECT task_id, trial, lease, lapses FROM attempts WHERE done = 0 AND "
                    "(lease IS NULL OR expires < ?) ORDER BY position LIMIT ?",
                    (now, want - len(given)),
                ).fetchall()
                if not rows:
                    break
                for task_id, trial, previous, lapses in rows:
                    if previous is not None:  # its worker stopped renewing: gone
                        lapses += 1
                        self._count(db, "lapsed")
                    if lapses >= self.max_lapses:
                        db.execute(
                            "UPDATE attempts SET done = 1, lapses = ?, lease = NULL, "
                            "holder = NULL WHERE task_id = ? AND trial = ?",
                            (lapses, task_id, trial),
                        )
                        line = give_up(task_id, trial, lapses)
                        db.execute(
                            "INSERT INTO results VALUES (?, ?, 'lapsed', 'run-service', ?, ?)",
                            (task_id, trial, orjson.dumps(line), now),
                        )
                        continue
                    lease = secrets.token_hex(8)
                    db.execute(
                        "UPDATE attempts SET lease = ?, holder = ?, expires = ?, lapses = ? "
                        "WHERE task_id = ? AND trial = ?",
                        (lease, worker, now + self.lease_s, lapses, task_id, trial),
                    )
                    given.append(Lease(lease, task_id, trial))
        return given

    def renew(self, worker: str, leases: list[str]) -> list[str]:
        """Extend ``worker``'s ``leases``; returns those it no longer holds: lapsed and taken
        by another worker (one already answered, its result in, is not lost)."""
        expires = time.time() + self.lease_s
        lost = []
        with self._write() as db:
            for lease in leases:
                updated = db.execute(
                    "UPDATE attempts SET expires = ? WHERE lease = ? AND holder = ? AND done = 0",
                    (expires, lease, worker),
                ).rowcount
                answered = not updated and db.execute(
                    "SELECT 1 FROM results WHERE lease = ?", (lease,)
                ).fetchone()
                if not updated and not answered:
                    lost.append(lease)
        return lost

    def give_back(self, worker: str, leases: list[str]) -> int:
        """A stopping worker's leases, free at once for the next worker (no lapse counted)."""
        with self._write() as db:
            freed = sum(
                db.execute(
                    "UPDATE attempts SET lease = NULL, holder = NULL, expires = NULL "
                    "WHERE lease = ? AND holder = ? AND done = 0",
                    (lease, worker),
                ).rowcount
                for lease in leases
            )
            self._count(db, "given_back", freed)
        return freed

    # ---- results ----
    def accept(self, worker: str, lease: str, task_id: str, trial: int, line: JSON) -> str:
        """Record an attempt's result: ``accepted`` (the first), ``resent`` (this lease's
        result again) or ``duplicate`` (another lease's came first: dropped, counted).
        :class:`LeaseRefused` for a lease the run never gave, or a result for another attempt
        than its lease's."""
        with self._write() as db:
            owner = db.execute(
                "SELECT task_id, trial FROM attempts WHERE lease = ?", (lease,)
            ).fetchone()
            first = db.execute(
                "SELECT lease FROM results WHERE task_id = ? AND trial = ?", (task_id, trial)
            ).fetchone()
            if owner is None and first is None:
                if not db.execute(
                    "SELECT 1 FROM attempts WHERE task_id = ? AND trial = ?", (task_id, trial)
                ).fetchone():
                    raise LeaseRefused(f"task {task_id!r} trial {trial} is not in this run")
                # a lapsed lease, re-leased since: its result is still the attempt's first
            elif owner is not None and tuple(owner) != (task_id, trial):
                raise LeaseRefused(
                    f"lease {lease} is for task {owner[0]!r} trial {owner[1]}, "
                    f"not task {task_id!r} trial {trial}"
                )
            if first is not None:
                outcome = "resent" if first[0] == lease else "duplicate"
                self._count(db, outcome + "s")
                return outcome
            db.execute(
                "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?)",
                (task_id, trial, lease, worker, orjson.dumps(line), time.time()),
            )
            db.execute(
                "UPDATE attempts SET done = 1, lease = NULL, holder = NULL "
                "WHERE task_id = ? AND trial = ?",
                (task_id, trial),
            )
        return "accepted"

    def results(self) -> dict[tuple[str, int], JSON]:
        """Every accepted result line by (task id, trial)."""
        with self._lock:
            rows = self._db.execute("SELECT task_id, trial, line FROM results").fetchall()
        return {(task_id, trial): orjson.loads(line) for task_id, trial, line in rows}

    def progress(self) -> Progress:
        with self._lock:
            return self._progress(self._db, time.time())

    def _progress(self, db: sqlite3.Connection, now: float) -> Progress:
        planned, done = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(done), 0) FROM attempts"
        ).fetchone()
        leased = db.execute(
            "SELECT COUNT(*) FROM attempts WHERE done = 0 AND lease IS NOT NULL AND expires >= ?",
            (now,),
        ).fetchone()[0]
        counters = dict(db.execute("SELECT name, value FROM counters").fetchall())
        held_by = dict(
            db.execute(
                "SELECT holder, COUNT(*) FROM attempts WHERE done = 0 AND lease IS NOT NULL "
                "AND expires >= ? GROUP BY holder ORDER BY holder",
                (now,),
            ).fetchall()
        )
        return Progress(
            planned=planned,
            done=done,
            leased=leased,
            free=planned - done - leased,
            duplicates=counters.get("duplicates", 0),
            resends=counters.get("resents", 0),
            lapsed=counters.get("lapsed", 0),
            given_back=counters.get("given_back", 0),
            held_by=held_by,
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()
