"""The one exception tree (sopgym.core.exceptions): every exception class any sopgym module
defines derives from SopgymError, so a new one cannot escape the tree unnoticed."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from collections.abc import Iterator

import orjson
import pytest

from sopgym.core.errors import ToolError, UnknownDomainError
from sopgym.core.exceptions import (
    AgentError,
    DataError,
    InfrastructureError,
    SopgymError,
    UsageError,
    error_record,
)
from sopgym.core.outcomes import InfraFailure

# the packages setup.py maps from the repository's top-level folders (sopgym.proto is generated)
ROOTS = ("sopgym", "sopgym.agents", "sopgym.domains", "sopgym.gateway", "sopgym.observability",
         "sopgym.services")


def _modules() -> Iterator[types.ModuleType]:
    for root in ROOTS:
        package = importlib.import_module(root)
        yield package
        for info in pkgutil.walk_packages(package.__path__, f"{root}."):
            if info.name.endswith("__main__"):  # runs the CLI on import
                continue
            yield importlib.import_module(info.name)


def escaped(module: types.ModuleType) -> list[str]:
    """The exception classes ``module`` defines outside the tree."""
    return [
        f"{module.__name__}.{name}"
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
        and not issubclass(value, SopgymError)
    ]


def _defined(module: types.ModuleType) -> list[type]:
    return [
        value for value in vars(module).values()
        if inspect.isclass(value) and issubclass(value, SopgymError)
        and value.__module__ == module.__name__
    ]


def test_every_exception_class_derives_from_the_root() -> None:
    modules = list(_modules())
    outside = [name for module in modules for name in escaped(module)]
    assert outside == [], f"exception classes outside sopgym.core.exceptions' tree: {outside}"
    # the walk really reached the modules that define errors (not a vacuous pass)
    found = {cls.__name__ for module in modules for cls in _defined(module)}
    assert {"ToolError", "RunFolderError", "StepLimitExceeded", "UpstreamError",
            "TraceFormatError", "ProfileError", "SymbolError"} <= found
    assert len(found) >= 50


def test_the_walk_catches_a_class_outside_the_tree() -> None:
    module = types.ModuleType("sopgym.fake")

    class Stray(ValueError):
        pass

    class Inside(DataError, ValueError):
        pass

    for cls in (Stray, Inside):
        cls.__module__ = module.__name__
        setattr(module, cls.__name__, cls)
    assert escaped(module) == ["sopgym.fake.Stray"]


@pytest.mark.parametrize(
    ("module", "name", "branch", "standard"),
    [
        ("sopgym.orchestration.runs", "RunFolderError", UsageError, ValueError),
        ("sopgym.evaluation.llm_usage", "PriceTableError", UsageError, ValueError),
        ("sopgym.core.jsonio", "CorruptRow", DataError, ValueError),
        ("sopgym.gateway.upstream", "UpstreamError", InfrastructureError, ConnectionError),
        ("sopgym.core.isolated", "IsolatedTimeout", InfrastructureError, TimeoutError),
        ("sopgym.agents.graph", "StepLimitExceeded", AgentError, RuntimeError),
    ],
)
def test_branches_keep_the_standard_bases(
    module: str, name: str, branch: type, standard: type
) -> None:
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, branch) and issubclass(cls, standard)


def test_infra_failures_are_never_agent_errors() -> None:
    from sopgym.agents.llm import ModelUnreachable
    from sopgym.client import InfraError

    for cls in (InfraFailure, ModelUnreachable, InfraError):
        assert issubclass(cls, InfrastructureError)
    assert issubclass(UnknownDomainError, UsageError) and issubclass(UnknownDomainError, KeyError)
    assert issubclass(ToolError, SopgymError)


def test_error_record_names_the_branch() -> None:
    from sopgym.agents.graph import StepLimitExceeded

    assert error_record(StepLimitExceeded("12 steps")) == {
        "kind": "agent", "type": "StepLimitExceeded", "message": "12 steps"
    }
    assert error_record(InfraFailure("gateway down"))["kind"] == "infrastructure"
    assert error_record(KeyError("x"))["kind"] == "unexpected"
    assert error_record(ToolError("not_found", "no such row"))["message"] == "no such row"


def test_a_worker_report_carries_its_error_as_a_typed_record() -> None:
    """The worker's report names the failure's class and branch in a record; the metrics read
    that record instead of parsing the class name out of the message."""
    from sopgym.agents.graph import StepLimitExceeded
    from sopgym.agents.metrics import episode_facts
    from sopgym.agents.worker import _run_episode
    from sopgym.core.tasks import Task
    from sopgym.runs.records import WorkerReport

    class Episode:
        id, token, replica = "e1", "t", "http://gw"
        tools = ()

    class Client:
        base_url = "http://gw"

        def open(self, *args: object, **kwargs: object) -> Episode:
            return Episode()

    class Agent:
        name = "stuck"

        def solve(self, *args: object) -> None:
            raise StepLimitExceeded("12: steps")

    task = Task(id="t1", domain="d", inputs={})
    report = _run_episode(Agent(), Client(), {}, task, 5.0)  # type: ignore[arg-type]
    assert report.error_record == {
        "kind": "agent", "type": "StepLimitExceeded", "message": "12: steps"
    }
    # across the pipe: the line the worker writes reads back as the same typed record
    line = WorkerReport.from_json(orjson.loads(orjson.dumps(report.to_json())))
    assert line == report and line.error_type == "StepLimitExceeded"
    line.error = "garbled"  # the record, not the text, names the class
    assert episode_facts(line).error == "StepLimitExceeded"
