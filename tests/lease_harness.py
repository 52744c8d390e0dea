"""The Kubernetes Job controller's contract, played with real agent worker processes.

No cluster runs here, so :class:`JobController` does what the Job controller does for the
agents' Job of ``k8s/base/run.yaml`` (a plain parallel Job: ``parallelism``, no
``completions``), reading that Job's own ``backoffLimit`` and ``podFailurePolicy``:

* it keeps ``parallelism`` pods running, and lowering it deletes the newest pods (SIGTERM);
* a pod that exits is judged by the policy's rules in order (``DisruptionTarget``: the pod
  was evicted; ``onExitCodes``): ``Ignore`` (not counted), ``FailJob`` (the Job fails, every
  pod is stopped), ``Count`` (or no rule matched: counted against ``backoffLimit``) and the
  pod is replaced unless the Job has failed;
* once a pod has succeeded no new pod starts, and the Job is complete when every pod is gone.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from sopgym.orchestration.processes import ManagedProcess

RUN_MANIFEST = Path(__file__).resolve().parents[1] / "k8s" / "base" / "run.yaml"


def agents_job() -> dict:
    """The agents' Job as the base declares it."""
    docs = [d for d in yaml.safe_load_all(RUN_MANIFEST.read_text()) if d]
    (job,) = [d for d in docs if d["kind"] == "Job" and d["metadata"]["name"] == "agent-workers"]
    return job


def pod_failure_action(spec: dict, code: int | None, disrupted: bool) -> str:
    """What the Job controller does with a pod that ended: ``Succeeded``, or the action of the
    first ``podFailurePolicy`` rule it matches (``Count`` when none does)."""
    if code == 0:
        return "Succeeded"
    for rule in spec["podFailurePolicy"]["rules"]:
        conditions = {c["type"] for c in rule.get("onPodConditions", [])}
        if "DisruptionTarget" in conditions and disrupted:
            return str(rule["action"])
        codes = rule.get("onExitCodes")
        if codes and (code in codes["values"]) == (codes["operator"] == "In"):
            return str(rule["action"])
    return "Count"


@dataclass
class Pod:
    name: str
    process: ManagedProcess
    disrupted: bool = False  # evicted: the DisruptionTarget condition
    deleted: bool = False  # removed by the controller itself (parallelism lowered)


@dataclass
class JobController:
    spawn: Callable[[str], ManagedProcess]
    parallelism: int
    spec: dict = field(default_factory=lambda: agents_job()["spec"])
    pods: list[Pod] = field(default_factory=list)
    exits: list[tuple[str, int | None, str]] = field(default_factory=list)  # name, code, action
    failures: int = 0
    succeeded: int = 0
    failed: str | None = None
    made: int = 0  # pods started

    def reconcile(self) -> None:
        """One pass of the controller: judge the pods that exited, then start or delete pods
        to match ``parallelism``."""
        for pod in [p for p in self.pods if p.process.popen.poll() is not None]:
            self.pods.remove(pod)
            code = pod.process.popen.returncode
            judged = pod_failure_action(self.spec, code, pod.disrupted)
            action = "Deleted" if pod.deleted else judged
            self.exits.append((pod.name, code, action))
            if action == "Succeeded":
                self.succeeded += 1
            elif action == "FailJob":
                self.failed = f"pod {pod.name} exited {code}: FailJob"
            elif action == "Count":
                self.failures += 1
                if self.failures > self.spec["backoffLimit"]:
                    self.failed = f"backoffLimit {self.spec['backoffLimit']} exceeded"
        if self.failed is not None:
            for pod in self.pods:
                pod.deleted = True
                pod.process.stop(grace=5.0)
            return
        live = [p for p in self.pods if not p.deleted]
        while len(live) > self.parallelism:  # scaled down: the newest pods go
            pod = live.pop()
            pod.deleted = True
            os.killpg(pod.process.popen.pid, signal.SIGTERM)
        while self.succeeded == 0 and len(live) < self.parallelism:
            self.made += 1
            name = f"agent-workers-{self.made}"
            pod = Pod(name, self.spawn(name))
            self.pods.append(pod)
            live.append(pod)

    @property
    def complete(self) -> bool:
        return self.failed is None and self.succeeded > 0 and not self.pods

    def live(self) -> list[Pod]:
        return [p for p in self.pods if not p.deleted and p.process.popen.poll() is None]

    def evict(self, pod: Pod) -> None:
        """A node drain or preemption: the pod gets DisruptionTarget, then SIGTERM."""
        pod.disrupted = True
        os.killpg(pod.process.popen.pid, signal.SIGTERM)

    def kill(self, pod: Pod) -> None:
        """A lost node or the OOM killer: SIGKILL, no condition, nothing given back."""
        os.killpg(pod.process.popen.pid, signal.SIGKILL)

    def run_until_done(self, timeout: float, step: Callable[[], None] | None = None) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.reconcile()
            if self.complete or self.failed is not None:
                return
            if step is not None:
                step()
            time.sleep(0.1)
        raise TimeoutError(f"the Job did not end within {timeout:.0f}s: {self.exits}")
