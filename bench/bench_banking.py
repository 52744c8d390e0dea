"""The banking scenarios' costs: the per-episode database copy, a writing tool call through
the gateway, the memory of the five tool services, and the prompt a large catalog makes.

  * copy: the median time to give an episode its own in-memory copy of a scenario database
    (SQLite's backup API), in process, per scenario;
  * write: the median client-side time of a tool call that writes (an approval, a
    write-back) through the real gateway to the real loans service on loopback, over one
    keep-alive ``http.client`` connection (which spends ~0.2 ms of its own per call, see
    bench_gateway.py);
  * memory: the resident set size (VmRSS) of the five tool services together, each serving
    its data and a handful of open episodes;
  * prompt: the fc agent's first request for an episode of each scenario shown its whole
    catalog (the SOP's tools, 45 financial distractors and the back-office tools: the paper's
    274-284), through the gateway's catalog: tools, characters and about four characters a
    token.

  * retrieval: the same prompt with fc's tool retrieval (``--retrieval bm25:30
    embedding:30``), per scenario and SOP variant (clean, abstract): tools and ~tokens
    offered, the share of tasks whose gold tools were all offered, the narrowing's median
    time; and scripted fc runs on loans over the whole catalog with and without it (TSR,
    tool F1, wall time of the run).

    python bench/bench_banking.py [--copies 500] [--writes 300] [--retrieval bm25:30 ...]
                                  [--prompt-tasks 40] [--run-tasks 20] [--skip-served]
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import orjson

from sopgym.agents.prompts import case_message, system_prompt
from sopgym.agents.retrieval import RetrievalSpec, ToolRetriever
from sopgym.client import GatewayClient
from sopgym.core import dataset
from sopgym.core.registry import load_domain
from sopgym.core.tasks import Task
from sopgym.domains.banking._engine.database import store_factory
from sopgym.domains.banking._engine.pack import SCENARIO_NAMES, scenario_of
from sopgym.gateway.catalog import Catalog, ServiceEntry
from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command
from sopgym.types import JSON

WRITING_STAGES = ("approval", "write")


def copy_medians(copies: int) -> dict[str, float]:
    """Median milliseconds of one episode's database copy, per scenario."""
    medians = {}
    for name in SCENARIO_NAMES:
        data = dataset.load(load_domain(f"banking/{name}"))
        open_store = store_factory(scenario_of(name))
        open_store(data.tables, data.tasks[0])  # builds the scenario database once
        times = []
        for index in range(copies):
            task: Task = data.tasks[index % len(data.tasks)]
            started = time.perf_counter()
            open_store(data.tables, task)
            times.append((time.perf_counter() - started) * 1000)
        medians[name] = statistics.median(times)
    return medians


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def served(writes: int, folder: Path) -> tuple[list[float], dict[str, int]]:
    """Write-call latencies through the gateway (loans), and each service's RSS in KiB."""
    names = [f"banking/{n}" for n in SCENARIO_NAMES]
    for name in names:
        dataset.load(load_domain(name))  # generated before any service starts
    with ProcessGroup() as group:
        urls = {}
        processes = {}
        for name in names:
            url = f"http://127.0.0.1:{free_port()}"
            processes[name] = group.start(
                name.replace("/", "-"),
                sopgym_command("serve-tools", name, "--port", url.rsplit(":", 1)[1]),
                folder / f"{name.replace('/', '-')}.log",
                ready_url=f"{url}/readyz",
            )
            urls[name] = url
        for process in processes.values():
            process.wait_ready()
        gateway = f"http://127.0.0.1:{free_port()}"
        group.start(
            "gateway",
            sopgym_command(
                "gateway",
                "--port",
                gateway.rsplit(":", 1)[1],
                *[a for n, u in urls.items() for a in ("--service", f"{n}={u}")],
            ),
            folder / "gateway.log",
            env={"SOPGYM_ADMIN_TOKEN": "bench"},
            ready_url=f"{gateway}/readyz",
        ).wait_ready()
        client = GatewayClient(gateway, retries=0)
        host, port = gateway.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port))
        scenario = scenario_of("loans")
        writing = {a.name for a in scenario.apis if a.stage in WRITING_STAGES}
        data = dataset.load(load_domain("banking/loans"))
        latencies: list[float] = []
        index = 0
        while len(latencies) < writes:
            gold = data.gold[data.tasks[index % len(data.tasks)].id]
            index += 1
            episode = client.open(gold.task_id, "banking/loans")
            headers = {"content-type": "application/json",
                       "authorization": f"Bearer {episode.token}"}  # fmt: skip
            for call in gold.calls:
                body = orjson.dumps(call.arguments)
                started = time.perf_counter()
                connection.request("POST", f"/v1/episodes/{episode.id}/tools/{call.name}",
                                   body, headers)  # fmt: skip
                response = connection.getresponse()
                reply = response.read()
                elapsed = (time.perf_counter() - started) * 1000
                if response.status != 200:
                    raise RuntimeError(f"{gold.task_id} {call.name}: {reply!r}")
                if call.name in writing:
                    latencies.append(elapsed)
            episode.finish(gold.outputs)
        for name in names[1:]:  # a few open episodes at every other service too
            first = dataset.load(load_domain(name)).tasks[:5]
            for task in first:
                client.open(task.id, name)
        rss = {name: _rss_kib(process.popen.pid) for name, process in processes.items()}
        client.close()
        connection.close()
    return latencies, rss


def full_catalog(name: str) -> tuple[Catalog, int]:
    """A gateway catalog of one scenario pack, and the ``--distractors`` that shows it whole."""
    domain = load_domain(name)
    entry = ServiceEntry(
        domain=name, url="http://127.0.0.1:1", host="127.0.0.1", port=1,
        tools={t.name: t.spec.rendered() for t in domain.tools},
        distractors={t.name: t.spec.rendered() for t in domain.distractors},
        stateful=domain.stateful,
    )  # fmt: skip
    return Catalog([entry]), len(domain.distractors)


def prompt_size(
    name: str, retriever: ToolRetriever | None = None, variant: str = "clean", tasks: int = 1
) -> dict[str, float]:
    """The fc agent's first request for episodes of ``name`` shown the whole catalog, narrowed
    by ``retriever`` when given (as fc offers it): the mean over the first ``tasks`` tasks of
    tools offered, characters and ~tokens; the share of tasks whose gold tools were all
    offered; the median milliseconds of one narrowing."""
    catalog, distractors = full_catalog(name)
    domain = load_domain(name)
    data = dataset.load(domain)
    sop = domain.sop(variant)
    sizes, kept_all, narrowing = [], 0, []
    for task in data.tasks[:tasks]:
        routes, _ = catalog.episode_tools(name, task.id, distractors)
        specs = [catalog.spec(ref, shown) for shown, ref in routes.items()]
        user = case_message(sop, task.inputs)
        if retriever is not None:
            started = time.perf_counter()
            specs = retriever.narrow(user, specs)
            narrowing.append((time.perf_counter() - started) * 1000)
        offered = {s["name"] for s in specs}
        kept_all += {c.name for c in data.gold[task.id].calls} <= offered
        tools_chars = len(orjson.dumps([s["openai"] for s in specs]))
        total = len(system_prompt(domain.output_schema)) + len(user) + tools_chars
        sizes.append((len(specs), tools_chars, len(user), total))
    n = len(sizes)
    return {
        "tools": sum(s[0] for s in sizes) / n,
        "tools_chars": sum(s[1] for s in sizes) / n,
        "sop_and_case_chars": sum(s[2] for s in sizes) / n,
        "total_chars": sum(s[3] for s in sizes) / n,
        "approx_tokens": sum(s[3] for s in sizes) / n / 4,
        "gold_tools_kept": kept_all / n,
        "narrowing_ms": statistics.median(narrowing) if narrowing else 0.0,
    }


def scripted_run(name: str, variant: str, retrieval: str | None, limit: int, folder: Path) -> JSON:
    """``sopgym run`` of the fc agent on the scripted model over the whole catalog: TSR, tool
    F1 and wall seconds (the run's own stack: services, gateway, model server, workers)."""
    run_id = f"{name.replace('/', '-')}-{variant}-{retrieval or 'all'}".replace(":", "-")
    distractors = len(load_domain(name).distractors)
    command = sopgym_command(
        "run", name, "--agent", "fc", "--sop", variant, "--distractors", str(distractors),
        "--limit", str(limit), "--no-trace", "--runs-dir", str(folder), "--run-id", run_id,
        *(("--tool-retrieval", retrieval) if retrieval else ()),
    )  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    seconds = time.perf_counter() - started
    summary = orjson.loads((folder / run_id / "summary.json").read_bytes())
    return {"tsr": summary["tsr"], "tool_f1": summary["tool_f1"], "seconds": seconds}


def served_figures(args: argparse.Namespace) -> None:
    copies = copy_medians(args.copies)
    for name, median in copies.items():
        print(f"copy      {name:<20} median {median:.3f} ms ({args.copies} copies)")
    with tempfile.TemporaryDirectory(prefix="bench-banking-") as folder:
        latencies, rss = served(args.writes, Path(folder))
    print(
        f"write     banking/loans via gateway median {statistics.median(latencies):.3f} ms, "
        f"p90 {statistics.quantiles(latencies, n=10)[-1]:.3f} ms ({len(latencies)} calls)"
    )
    for name, kib in rss.items():
        print(f"rss       {name:<28} {kib / 1024:.1f} MiB")
    print(f"rss       five services together       {sum(rss.values()) / 1024:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=500)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument(
        "--retrieval",
        nargs="*",
        default=["bm25:30"],
        help="fc retrieval specs to measure (embedding needs the extra)",
    )
    parser.add_argument("--prompt-tasks", type=int, default=40)
    parser.add_argument(
        "--run-tasks",
        type=int,
        default=20,
        help="tasks of each scripted fc run on loans (0: no runs)",
    )
    parser.add_argument(
        "--skip-served", action="store_true", help="leave out the copy, write and memory figures"
    )
    args = parser.parse_args()
    if not args.skip_served:
        served_figures(args)
    for name in SCENARIO_NAMES:
        size = prompt_size(f"banking/{name}")
        print(
            f"prompt    {name:<20} {size['tools']:.0f} tools: {size['total_chars']:.0f} chars "
            f"(tools {size['tools_chars']:.0f}, SOP and case {size['sop_and_case_chars']:.0f})"
            f", ~{size['approx_tokens']:.0f} tokens"
        )
    methods = [None, *(RetrievalSpec.parse(m) for m in args.retrieval)]
    for name, variant, spec in itertools.product(SCENARIO_NAMES, ("clean", "abstract"), methods):
        retriever = ToolRetriever(spec) if spec else None
        size = prompt_size(f"banking/{name}", retriever, variant, args.prompt_tasks)
        label = f"{spec.method}:{spec.top_k}" if spec else "whole"
        print(
            f"retrieval {name:<20} {variant:<8} {label:<13} {size['tools']:.0f} tools "
            f"~{size['approx_tokens']:.0f} tokens, gold tools all offered in "
            f"{size['gold_tools_kept']:.0%} of {args.prompt_tasks} tasks, narrowing "
            f"{size['narrowing_ms']:.1f} ms"
        )
    if args.run_tasks:
        with tempfile.TemporaryDirectory(prefix="bench-banking-runs-") as folder:
            for variant, retrieval in itertools.product(("clean", "abstract"),
                                                        [None, *args.retrieval]):  # fmt: skip
                found = scripted_run("banking/loans", variant, retrieval, args.run_tasks,
                                     Path(folder))  # fmt: skip
                print(
                    f"run       banking/loans fc scripted {variant:<8} "
                    f"{retrieval or 'whole':<13} TSR {found['tsr']:.1%} tool F1 "
                    f"{found['tool_f1']:.3f} in {found['seconds']:.1f} s "
                    f"({args.run_tasks} tasks)"
                )


if __name__ == "__main__":
    main()
