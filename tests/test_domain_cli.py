"""``sopgym domain show`` and the kind column of ``sopgym list``, through the real command
line and the real domain packs."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from sopgym.cli import main as cli
from tests.helpers import DATA_ROOT, domain_data


def test_domain_show_prints_the_sop_tools_fields_and_an_example_task() -> None:
    data = domain_data("patient_intake")
    result = CliRunner().invoke(cli, ["domain", "show", "patient_intake", "--data-root",
                                      str(DATA_ROOT)])  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.stdout
    sop = (data.domain.folder / "sop.md").read_text().splitlines()
    assert next(line for line in sop if line.strip()) in out  # the SOP as text
    for tool in data.domain.tools:
        assert tool.name in out
    assert "patient_id*: string" in out  # an argument, required, with its type
    for field in data.domain.output_fields:
        assert field in out
    first = data.tasks[0]
    assert f"example task {first.id}" in out
    assert str(data.gold[first.id].outputs[data.domain.output_fields[0]]) in out


def test_domain_show_refuses_an_unknown_domain_or_variant() -> None:
    result = CliRunner().invoke(cli, ["domain", "show", "no_such_domain"])
    assert result.exit_code == 2 and "no_such_domain" in result.output
    result = CliRunner().invoke(cli, ["domain", "show", "patient_intake", "--sop", "fancy"])
    assert result.exit_code == 2 and "no SOP variant 'fancy'" in result.output


def test_list_names_each_domains_kind_and_says_when_it_generates(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["list", "patient_intake", "banking/loans", "banking/loans_graph", "--data-root",
              str(DATA_ROOT)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    kinds = {line.split("│")[1].strip(): line.split("│")[2].strip()
             for line in result.stdout.splitlines() if line.startswith("│")}  # fmt: skip
    assert kinds == {"patient_intake": "tool use", "banking/loans": "stateful",
                     "banking/loans_graph": "graph"}  # fmt: skip
    fresh = CliRunner().invoke(cli, ["list", "patient_intake", "--data-root", str(tmp_path)])
    assert fresh.exit_code == 0, fresh.output
    assert "generating the patient_intake dataset (first use; cached after)" in fresh.stderr
