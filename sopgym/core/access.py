"""The shared secret that proves a request to a tool service came from the gateway.

Agents reach tools only through the gateway, which checks each episode's bearer token and
records every call; a tool service reachable on the network would otherwise take a call from
anyone, with any ``x-sopgym-episode`` header, acting on an episode's state behind the
gateway's back. So the stack that starts both (the embedded stack, compose) hands them one
secret by environment; the gateway sends it on every request it makes to a service, and a
service given a secret refuses any tool call or episode request without it.
"""

from __future__ import annotations

import contextlib
import ctypes
import hmac
import os
import secrets
import sys
from pathlib import Path

import orjson

from sopgym.core.errors import ToolError

SERVICE_SECRET_ENV = "SOPGYM_SERVICE_SECRET"
ADMIN_TOKEN_ENV = "SOPGYM_ADMIN_TOKEN"  # the gateway's admin token, handed to it by its starter
SECRET_HEADER = b"x-sopgym-gateway-secret"


def service_secret() -> str | None:
    """The stack's secret as this server was handed it (:func:`handed_secret`)."""
    return handed_secret(SERVICE_SECRET_ENV)


def new_secret() -> str:
    """A fresh secret, for one run's stack."""
    return secrets.token_urlsafe(32)


def secret_line(secret: str | None) -> bytes:
    """The ready-encoded header line the gateway adds to its requests (empty without one)."""
    return SECRET_HEADER + b": " + secret.encode() + b"\r\n" if secret else b""


def check_secret(expected: str | None, given: bytes | None) -> None:
    """Refuse a request whose secret is missing (401) or wrong (403), in constant time; a
    service started without a secret (tests, direct use) takes every request."""
    if not expected:
        return
    if given is None:
        raise ToolError("unauthorized", "tool services answer only the gateway: missing secret")
    if not hmac.compare_digest(given, expected.encode()):
        raise ToolError("forbidden", "tool services answer only the gateway: wrong secret")


# ---- handing secrets to a child process without its environment ----
# A process's environment is readable by any process of the same user (/proc/<pid>/environ),
# agent workers included. So the embedded stack hands its secrets to each server on a pipe:
# the parent writes them as JSON before the child starts and the child reads them once; the
# environment carries only the pipe's descriptor number. Compose and k8s set them in the
# environment of containers no agent shares (docs/reliability.md).
HANDED_SECRETS_FD_ENV = "SOPGYM_SECRETS_FD"
_handed: dict[str, str] | None = None


def hand_over(secrets_by_name: dict[str, str]) -> tuple[dict[str, str], int]:
    """A pipe holding ``secrets_by_name`` for a child: the environment that names its read end
    and that descriptor (to pass to the child, then close here)."""
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as pipe:  # a few hundred bytes: within the pipe's buffer
        pipe.write(orjson.dumps(secrets_by_name))
    return {HANDED_SECRETS_FD_ENV: str(read_end)}, read_end


def handed_secret(name: str) -> str | None:
    """The secret ``name`` this process was handed on a pipe, else its environment's (compose,
    k8s, direct use). A process that holds one turns itself non-dumpable
    (:func:`make_undumpable`), so that other processes of its user cannot read its memory."""
    global _handed
    if _handed is None:
        _handed = {}
        fd = os.environ.pop(HANDED_SECRETS_FD_ENV, None)
        if fd is not None and fd.isdigit():
            with contextlib.suppress(OSError, orjson.JSONDecodeError):
                with os.fdopen(int(fd), "rb") as pipe:
                    data = orjson.loads(pipe.read())
                if isinstance(data, dict):
                    _handed = {k: v for k, v in data.items() if isinstance(v, str)}
    value = _handed.get(name) or os.environ.get(name) or None
    if value:
        make_undumpable()
    return value


def make_undumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)``: the kernel then refuses ptrace and
    /proc/<pid>/{mem,environ} of this process to every process without ``CAP_SYS_PTRACE``
    (other processes of the same user, root ones that dropped their capabilities), and writes
    no core dump. Whether it took (Linux only). An ``execve`` turns it back on: each program
    sets it for itself."""
    if not sys.platform.startswith("linux"):
        return False
    return _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0


def drop_privileges() -> dict[str, bool]:
    """For a process that runs untrusted code (an agent worker): non-dumpable (a sibling cannot
    read it), ``no_new_privs`` and no capability left, the bounding set emptied too, so even
    as root it cannot trace or read the memory of a non-dumpable process (the runner, the
    servers holding secrets, its sibling workers), remount, ``setns`` or raise a hard limit.
    What held, by name (Linux only; each false elsewhere)."""
    return {
        "undumpable": make_undumpable(),
        "no_new_privs": forbid_new_privileges(),
        "no_capabilities": drop_capabilities(),
    }


def forbid_new_privileges() -> bool:
    """``no_new_privs``: no program run from here gains a privilege (setuid bits, file caps)."""
    if not sys.platform.startswith("linux"):
        return False
    return _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0


def drop_capabilities() -> bool:
    """No capability left, the bounding set emptied too (a root process's next program gets
    none either): whether every set reads zero."""
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    with contextlib.suppress(OSError, ValueError):  # dropping from the bounding set needs root
        last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
        for capability in range(last + 1):
            libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    sets = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable (two words each): none
    libc.capset(header, sets)
    return set(capabilities().values()) == {0}


def capabilities() -> dict[str, int]:
    """This process's capability sets by /proc/self/status's names (``CapEff``, ``CapBnd``...)."""
    found = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Cap"):
                name, value = line.split(":")
                found[name] = int(value, 16)
    return found


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 4, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
