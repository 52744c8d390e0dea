"""What Arize Phoenix makes of our traces: a documented check, not a test (Phoenix is a large
optional install: ``pip install arize-phoenix``).

Starts Phoenix on loopback (its own working folder in a temporary directory), sends it a stored
trace store over OTLP/HTTP (protobuf, as any exporter would; default: the stored run written
under the latest GenAI conventions, ``tests/fixtures/traced_run_latest``), then asks Phoenix's
GraphQL API how it classified each span (its span kind: agent, tool, chain, unknown ...) and
which annotations it shows, and prints the counts.

    python bench/check_phoenix.py [--store PATH] [--port 46071]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

STORE = Path(__file__).parent.parent / "tests" / "fixtures" / "traced_run_latest" / "traces"
EVALUATION_EVENT = "gen_ai.evaluation.result"
QUERY = """{ projects { edges { node { name spans(first: 500) { edges { node {
  name spanKind parentId spanAnnotations { name score label } events { name } } } } } } } }"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=STORE, help="a folder of OTLP JSON lines")
    parser.add_argument("--port", type=int, default=46071)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="phoenix-")
    env = {**os.environ, "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(args.port),
           "PHOENIX_GRPC_PORT": str(args.port + 1), "PHOENIX_WORKING_DIR": work}  # fmt: skip
    log = Path(work) / "phoenix.log"
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"],
                                  env=env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    base = f"http://127.0.0.1:{args.port}"
    try:
        _wait(base, log)
        sent = 0
        for path in sorted(args.store.glob("*.jsonl")):
            for line in path.read_bytes().splitlines():
                request = json_format.Parse(line, ExportTraceServiceRequest())
                answer = httpx.post(f"{base}/v1/traces", content=request.SerializeToString(),
                                    headers={"content-type": "application/x-protobuf"},
                                    timeout=30)  # fmt: skip
                answer.raise_for_status()
                sent += len(request.resource_spans)
        time.sleep(5)  # Phoenix ingests in the background
        found = httpx.post(f"{base}/graphql", json={"query": QUERY}, timeout=30).json()
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
    finally:
        server.terminate()
        server.wait(30)


def _wait(base: str, log: Path) -> None:
    for _ in range(240):
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"Phoenix did not start; its log:\n{log.read_text()[-2000:]}")


if __name__ == "__main__":
    main()
