"""The gateway over real HTTP: episodes, authorisation, routing, recording and refusals."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from sopgym.client import GatewayClient
from sopgym.gateway.catalog import DiscoveryError, discover
from sopgym.orchestration.processes import free_port
from sopgym.orchestration.stack import Stack, embedded_stack
from tests.helpers import DATA_ROOT, domain_data, task_id

DOMAIN = "patient_intake"
ARGS = {"patient_id": "P100000000", "smoking_status": "Current",
        "alcohol_consumption": "Heavy", "exercise_frequency": "None"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    domain_data("patient_intake")
    logs = tmp_path_factory.mktemp("logs")
    with embedded_stack(["patient_intake"], logs, DATA_ROOT, distractors=0) as running:
        yield running


@pytest.fixture
def client(stack: Stack) -> Iterator[GatewayClient]:
    gateway = GatewayClient(stack.gateway_url, retries=0)
    yield gateway
    gateway.close()


def test_episode_catalog_and_recorded_calls(stack: Stack, client: GatewayClient) -> None:
    episode = client.open(task_id(DOMAIN, 1), DOMAIN)
    assert sorted(t["name"] for t in episode.tools) == sorted(
        t.name for t in domain_data("patient_intake").domain.tools)
    assert "validate_insurance" in episode.sop and episode.output_schema["properties"]
    ok = episode.call("score_lifestyle", ARGS)
    assert ok.status == 200 and ok.content["total_points"] == 8
    bad_type = episode.call("score_lifestyle", {**ARGS, "patient_id": 7})
    missing = episode.call("score_lifestyle", {"patient_id": "P100000000"})
    invented = episode.call("summon_doctor", {"patient_id": "P100000000"})
    assert (bad_type.status, bad_type.body["error"]["code"]) == (422, "type_mismatch")
    assert (missing.status, missing.body["error"]["code"]) == (422, "missing_argument")
    assert (invented.status, invented.body["error"]["code"]) == (404, "unknown_tool")
    episode.finish({"insurance_status": "valid"})
    record = client.record(episode.id, stack.admin_token)
    assert [c["name"] for c in record["calls"]] == [
        "score_lifestyle", "score_lifestyle", "score_lifestyle", "summon_doctor"]
    assert [c["error_code"] for c in record["calls"]] == [
        None, "type_mismatch", "missing_argument", "unknown_tool"]
    assert record["calls"][3]["in_catalog"] is False
    assert record["finished"] and record["outputs"] == {"insurance_status": "valid"}


def test_tokens_are_required_and_scoped(stack: Stack, client: GatewayClient) -> None:
    mine, other = client.open(task_id(DOMAIN, 2), DOMAIN), client.open(task_id(DOMAIN, 3), DOMAIN)
    url = f"{stack.gateway_url}/v1/episodes/{mine.id}/tools/score_lifestyle"
    assert httpx.post(url, json=ARGS).status_code == 401
    forbidden = httpx.post(url, json=ARGS, headers={"authorization": f"Bearer {other.token}"})
    assert (forbidden.status_code, forbidden.json()["error"]["code"]) == (403, "forbidden")
    # the admin token may read records but not act in an episode
    admin = {"authorization": f"Bearer {stack.admin_token}"}
    assert httpx.post(url, json=ARGS, headers=admin).status_code == 403
    assert httpx.get(f"{stack.gateway_url}/v1/episodes/{mine.id}", headers=admin).status_code \
        == 200


def test_refusals_are_structured(stack: Stack, client: GatewayClient) -> None:
    base = stack.gateway_url
    unknown = httpx.post(f"{base}/v1/episodes", json={"task_id": "x", "domain": "nope"})
    assert (unknown.status_code, unknown.json()["error"]["field"]) == (422, "domain")
    garbage = httpx.post(f"{base}/v1/episodes", content=b"{oops")
    assert (garbage.status_code, garbage.json()["error"]["code"]) == (400, "invalid_json")
    missing = httpx.post(f"{base}/v1/episodes/ep-missing/finish", json={"outputs": {}},
                         headers={"authorization": "Bearer x"})
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "unknown_episode")
    episode = client.open(task_id(DOMAIN, 4), DOMAIN)
    headers = {"authorization": f"Bearer {episode.token}"}
    not_json = httpx.post(f"{base}/v1/episodes/{episode.id}/tools/score_lifestyle",
                          content=b"{bad", headers=headers)
    assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_json")
    bad_outputs = httpx.post(f"{base}/v1/episodes/{episode.id}/finish", json={"outputs": [1]},
                             headers=headers)
    assert bad_outputs.status_code == 422
    episode.finish({})
    again = httpx.post(f"{base}/v1/episodes/{episode.id}/finish", json={"outputs": {}},
                       headers=headers)
    assert (again.status_code, again.json()["error"]["code"]) == (409, "episode_closed")
    late = episode.call("score_lifestyle", ARGS)
    assert (late.status, late.body["error"]["code"]) == (409, "episode_closed")
    assert httpx.get(f"{base}/nowhere").status_code == 404


def test_distractors_are_real_callable_tools(stack: Stack, client: GatewayClient) -> None:
    episode = client.open(task_id(DOMAIN, 5), DOMAIN, distractors=3)
    own = {t.name for t in domain_data("patient_intake").domain.tools}
    extra = [t["name"] for t in episode.tools if t["name"] not in own]
    assert len(extra) == 3
    result = episode.call("estimate_visit_copay",
                          {"policy_number": "AET-100000", "visit_type": "urgent"})
    assert result.ok
    record = client.record(episode.id, stack.admin_token)
    assert record["calls"][0]["distractor"] is True
    # the same task always gets the same catalog, in the same order
    assert [t["name"] for t in client.open(task_id(DOMAIN, 5), DOMAIN, distractors=3).tools] == [
        t["name"] for t in episode.tools]


def test_gateway_log_has_no_tracebacks(stack: Stack) -> None:
    assert "Traceback" not in Path(stack.logs / "gateway.log").read_text()


def test_discovery_names_a_missing_or_foreign_tool_service() -> None:
    heard: list[tuple[str, str, str]] = []
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(DiscoveryError, match=f"patient_intake at {dead} not ready in time"):
        discover({"patient_intake": dead}, wait_s=0.3, on_wait=lambda *a: heard.append(a))
    assert len(heard) == 1 and heard[0][:2] == ("patient_intake", dead)

    class NotATool(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    foreign = ThreadingHTTPServer(("127.0.0.1", 0), NotATool)
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{foreign.server_port}"
        started = time.monotonic()
        with pytest.raises(DiscoveryError, match="as no sopgym tool service does"):
            discover({"patient_intake": url}, wait_s=30)
        assert time.monotonic() - started < 5, "a foreign answer is final: no waiting it out"
    finally:
        foreign.shutdown()
