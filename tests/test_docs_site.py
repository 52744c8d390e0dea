"""The documentation site (issue 44, point 5): `mkdocs build --strict` over docs/ succeeds, and
fails on a broken link, a missing anchor or a page the nav does not reach (each planted in a
copy of the docs); every link of the README resolves, anchors included."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# [text](target) outside code spans and fenced blocks: the links a Markdown renderer follows
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "--config-file", str(project / "mkdocs.yml"), "--site-dir", str(site)],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site_dir = tmp_path_factory.mktemp("site")
    result = _build(ROOT, site_dir)
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}{result.stderr}"
    return site_dir


def _nav_pages(entries: object) -> list[str]:
    """Every page file the nav names, however deep its sections nest."""
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in _nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in _nav_pages(value)]
    return []


def test_site_builds_strictly_with_every_page_in_the_nav(site: Path) -> None:
    pages = sorted(path.name for path in (ROOT / "docs").glob("*.md"))
    nav = _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    assert sorted(nav) == pages  # each page once, none left out
    for page in pages:
        stem = Path(page).stem
        assert (site / ("" if stem == "index" else stem) / "index.html").is_file(), page


@pytest.mark.parametrize(
    ("page", "planted", "expected"),
    [
        ("house.md", "\n[a page](no-such-page.md)\n", "no-such-page.md"),
        ("house.md", "\n[a section](commands.md#no-such-heading)\n", "no-such-heading"),
        ("orphan.md", "# A page no nav entry reaches\n", "orphan.md"),
    ],
    ids=["missing-page", "missing-anchor", "page-not-in-nav"],
)
def test_a_planted_mistake_fails_the_build(
    tmp_path: Path, page: str, planted: str, expected: str
) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    with (tmp_path / "docs" / page).open("a", encoding="utf-8") as handle:
        handle.write(planted)
    result = _build(tmp_path, tmp_path / "site")
    assert result.returncode != 0
    assert expected in result.stdout + result.stderr


def _github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_readme_link_resolves(site: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", readme, flags=re.S)  # links in code blocks are not links
    prose = re.sub(r"`[^`\n]*`", "", prose)
    targets = LINK.findall(prose)
    assert targets, "the README links to its docs"
    own_anchors = {_github_anchor(line.lstrip("#")) for line in readme.splitlines()
                   if line.startswith("#")}  # fmt: skip
    broken = []
    for target in targets:
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        if not path:
            if anchor not in own_anchors:
                broken.append(target)
            continue
        if not (ROOT / path).exists():
            broken.append(target)
            continue
        if anchor and path.startswith("docs/") and path.endswith(".md"):
            page = Path(path).relative_to("docs").with_suffix("")
            html = site / ("" if page.name == "index" else page) / "index.html"
            if f'id="{anchor}"' not in html.read_text(encoding="utf-8"):
                broken.append(target)
    assert not broken, f"README links that do not resolve: {broken}"
