"""What Arize Phoenix makes of our traces: a documented check, not a test (Phoenix is a large
optional install: ``pip install arize-phoenix``).

Starts Phoenix on loopback (its own working folder in a temporary directory), sends it a stored
trace store over OTLP/HTTP (protobuf, as any exporter would; default: the stored run written
under the latest GenAI conventions, ``tests/fixtures/traced_run_latest``), then asks Phoenix's
GraphQL API how it classified each span (its span kind: agent, tool, chain, unknown ...) and
which annotations it shows, and prints the counts. Phoenix does not read our
``gen_ai.evaluation.result`` span events as evaluations, so the check sends each one to its
annotation API (:mod:`sopgym.observability.phoenix`) and counts the spans that show them. With
``--screenshot PATH`` it photographs one trace's page in Phoenix (Playwright driving Debian's
chromium, headless): the agent → tool tree with the root's annotations. Phoenix listens on
127.0.0.1 only and is stopped at the end (``--deadline`` bounds the whole check).

    python bench/check_phoenix.py [--store PATH] [--port 46071] [--screenshot PNG]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import orjson

from sopgym.observability.otlp import json_to_request, read_spans
from sopgym.observability.phoenix import span_annotations

STORE = Path(__file__).parent.parent / "tests" / "fixtures" / "traced_run_latest" / "traces"
EVALUATION_EVENT = "gen_ai.evaluation.result"
QUERY = """{ projects { edges { node { id name spans(first: 500) { edges { node {
  name spanKind parentId context { traceId }
  spanAnnotations { name score label } events { name } } } } } } } }"""
CHROMIUM = "/usr/bin/chromium"
# Phoenix's OTLP/gRPC receiver binds every interface ("[::]:PORT") whatever PHOENIX_HOST says,
# and has no switch to turn it off; this launcher rebinds it to loopback before Phoenix starts
LOOPBACK_LAUNCHER = """
import runpy
import grpc.aio

_server = grpc.aio.server


def _loopback_server(*args, **kwargs):
    server = _server(*args, **kwargs)
    bind = server.add_insecure_port
    server.add_insecure_port = lambda address: bind(address.replace("[::]", "127.0.0.1"))
    return server


grpc.aio.server = _loopback_server
runpy.run_module("phoenix.server.main", run_name="__main__")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=STORE, help="a folder of OTLP JSON lines")
    parser.add_argument("--port", type=int, default=46071)
    parser.add_argument("--screenshot", type=Path, default=None, help="a PNG of one trace")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds for it all")
    args = parser.parse_args()
    deadline = time.monotonic() + args.deadline
    work = tempfile.mkdtemp(prefix="phoenix-")
    env = {**os.environ, "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(args.port),
           "PHOENIX_GRPC_PORT": str(args.port + 1), "PHOENIX_WORKING_DIR": work}  # fmt: skip
    log = Path(work) / "phoenix.log"
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-c", LOOPBACK_LAUNCHER, "serve"],
                                  env=env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    base = f"http://127.0.0.1:{args.port}"
    try:
        _wait(base, log, deadline)
        print(f"Phoenix listens on: {' '.join(_listening(server.pid))}")
        sent = 0
        for path in sorted(args.store.glob("*.jsonl")):
            for line in path.read_bytes().splitlines():
                # OTLP JSON's ids are hex (protobuf's own JSON parser would read them as
                # base64: Phoenix then held other ids than the store's)
                request = json_to_request(orjson.loads(line))
                answer = httpx.post(f"{base}/v1/traces", content=request.SerializeToString(),
                                    headers={"content-type": "application/x-protobuf"},
                                    timeout=30)  # fmt: skip
                answer.raise_for_status()
                sent += len(request.resource_spans)
        annotations = span_annotations(read_spans(sorted(args.store.glob("*.jsonl"))).spans)
        _annotate(base, annotations, deadline)
        found = httpx.post(f"{base}/graphql", json={"query": QUERY}, timeout=30).json()
        print(f"sent {len(annotations)} annotations ({EVALUATION_EVENT} events)")
        for project in found["data"]["projects"]["edges"]:
            spans = [edge["node"] for edge in project["node"]["spans"]["edges"]]
            kinds = Counter((s["name"].split(" ")[0], s["spanKind"]) for s in spans)
            annotated = sum(bool(s["spanAnnotations"]) for s in spans)
            print(f"project {project['node']['name']}: {len(spans)} spans")
            for (name, kind), count in kinds.most_common():
                print(f"  {name:<16} -> {kind:<8} {count}")
            names = [event["name"] for span in spans for event in span["events"]]
            print(f"  spans with annotations: {annotated}")
            print(f"  gen_ai.evaluation.result events: {names.count(EVALUATION_EVENT)}")
            annotated_traces = [s["context"]["traceId"] for s in spans if s["spanAnnotations"]]
            if args.screenshot and annotated_traces:
                url = f"{base}/projects/{project['node']['id']}/traces/{annotated_traces[0]}"
                _screenshot(url, args.screenshot, deadline)
                print(f"  screenshot of {url}: {args.screenshot}")
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(work, ignore_errors=True)  # Phoenix's database and log


def _listening(pid: int) -> list[str]:
    """The addresses the process ``pid`` listens on (TCP, from ``ss``)."""
    found = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=False)
    return sorted(line.split()[3] for line in found.stdout.splitlines() if f"pid={pid}," in line)


def _annotate(base: str, annotations: list[dict], deadline: float) -> None:
    """Send the annotations once Phoenix has stored their spans (it ingests in the
    background; with ``sync`` it answers 404 for a span it does not hold yet)."""
    while True:
        answer = httpx.post(f"{base}/v1/span_annotations", params={"sync": "true"},
                            json={"data": annotations}, timeout=60)  # fmt: skip
        if answer.status_code != 404 or time.monotonic() > deadline:
            if answer.is_error:
                raise SystemExit(f"Phoenix refused the annotations: {answer.text[:500]}")
            return
        time.sleep(1)


def _screenshot(url: str, target: Path, deadline: float) -> None:
    """One trace's page in Phoenix's UI, with its annotations shown, as a PNG."""
    from playwright.sync_api import sync_playwright

    left_ms = max(1000.0, (deadline - time.monotonic()) * 1000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url, timeout=left_ms)
            page.get_by_text("invoke_agent").first.wait_for(timeout=min(left_ms, 60_000))
            page.wait_for_load_state("networkidle", timeout=min(left_ms, 30_000))
            # the root span's details open beside the tree; unfold its annotations so every
            # scorer shows with its score or label
            heading = page.get_by_role("button", name=re.compile("^Annotations"))
            heading.first.wait_for(timeout=min(left_ms, 30_000))
            heading.first.click()
            page.get_by_text("output_fields").first.wait_for(timeout=min(left_ms, 30_000))
            target.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(target))
        finally:
            browser.close()


def _wait(base: str, log: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"Phoenix did not start; its log:\n{log.read_text()[-2000:]}")


if __name__ == "__main__":
    main()
