"""Hardening (issue 36, point 1): on one machine, an agent worker cannot learn the stack's
secrets or the answers from where it runs. The embedded stack hands the service secret and the
admin token to its servers on a pipe (never in their environment), servers turn themselves
non-dumpable, workers start in an empty folder of their own, and the gold is owner-only. A
worker-side probe (a process started as the runner starts workers) finds none of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import orjson

from sopgym.core.dataset import data_path
from sopgym.core.registry import load_domain
from sopgym.orchestration.runner import worker_folder
from sopgym.orchestration.stack import embedded_stack
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "tod/live"  # a dialogue domain with tools: the user simulator is started too

PROBE = """
import os, sys, json
found = {"cwd": sorted(os.listdir(".")), "environ": {}}
for pid in sys.argv[1:]:
    try:
        found["environ"][pid] = open(f"/proc/{pid}/environ", "rb").read().decode("latin-1")
    except OSError as error:
        found["environ"][pid] = f"unreadable: {error}"
print(json.dumps(found))
"""


def test_a_worker_side_probe_finds_no_secret_and_no_folder_of_answers(tmp_path: Path) -> None:
    domain_data(DOMAIN)
    with embedded_stack([DOMAIN], tmp_path / "logs", DATA_ROOT) as stack:
        servers = {c.name: c.popen.pid for c in stack.group.children}
        assert {"gateway", "user-sim", "tools-tod/live"} <= set(servers), servers
        probe = stack.group.start(
            "probe",
            [sys.executable, "-c", PROBE, *map(str, servers.values())],
            tmp_path / "logs" / "probe.log",
            env=stack.env,  # what the runner gives its workers
            pipes=True,
            cwd=worker_folder(),
        )
        out, _ = probe.popen.communicate(timeout=30)
        found = orjson.loads(out)
        assert found["cwd"] == []  # not the runner's folder, with its runs/
        for name, environ in zip(servers, found["environ"].values(), strict=True):
            assert stack.service_secret not in environ, name
            assert stack.admin_token not in environ, name
        # the user simulator, as the tool services, answers the gateway only
        user_sim = httpx.post(f"{stack.user_sim_url}/v1/reply", json={}, timeout=10)
        assert user_sim.status_code == 401 and user_sim.json()["error"]["code"] == "unauthorized"
    gold = data_path(load_domain(DOMAIN), DATA_ROOT) / "gold.jsonl"
    assert gold.stat().st_mode & 0o077 == 0


def test_a_server_holding_a_secret_is_not_dumpable() -> None:
    check = (
        "import ctypes; from sopgym.core.access import handed_secret; "
        "assert handed_secret('SOPGYM_SERVICE_SECRET') == 's3cret'; "
        "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"  # PR_GET_DUMPABLE
    )
    from sopgym.core.access import hand_over

    env, fd = hand_over({"SOPGYM_SERVICE_SECRET": "s3cret"})
    try:
        done = subprocess.run(
            [sys.executable, "-c", check], env={**_env(), **env}, pass_fds=(fd,),
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        import os

        os.close(fd)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "SOPGYM_SERVICE_SECRET"}
