"""A user's installed plug-in package, for real: a ``.dist-info`` folder in a folder on
``sys.path``, which ``importlib.metadata`` finds as it finds any installed distribution."""

from __future__ import annotations

from pathlib import Path


def write_distribution(folder: Path, name: str, groups: dict[str, dict[str, str]]) -> Path:
    """``folder/<name>-0.1.dist-info`` declaring ``groups`` (group -> entry name -> value)."""
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    sections = [
        f"[{group}]\n" + "".join(f"{entry} = {value}\n" for entry, value in entries.items())
        for group, entries in groups.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(sections))
    return info
