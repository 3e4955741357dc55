"""The instances shipped with the package (the sources' worked examples)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path


def _root() -> Path:
    return Path(str(resources.files("instances")))


def shipped() -> list[dict]:
    """Name, path, description and problems of every shipped instance."""
    out = []
    for p in sorted(_root().glob("*.json")):
        data = json.loads(p.read_text())
        out.append({
            "name": p.stem,
            "path": str(p),
            "description": data.get("description") or "",
            "problems": data.get("meta", {}).get("problems", []),
        })
    return out


def shipped_path(name: str) -> Path | None:
    """Path of a shipped instance given its name (with or without .json or an instances/ prefix)."""
    stem = Path(name).name
    if stem.endswith(".json"):
        stem = stem[:-5]
    p = _root() / f"{stem}.json"
    return p if p.exists() else None
