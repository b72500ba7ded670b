"""The cluster engine's sub-packages import one way only, so each can be read without those above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import engine.cluster

ROOT = Path(engine.cluster.__file__).parent
LAYERS = ("matching", "fleet", "pipeline", "tracking", "explain")
"""Bottom first: a sub-package may import only those before it (and itself)."""


def _imported_subpackages(package: str) -> set[str]:
    found: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module]
                if isinstance(node, ast.ImportFrom) and node.module
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                parts = name.split(".")
                if parts[:2] == ["engine", "cluster"] and len(parts) > 2:
                    found.add(parts[2])
    return found - {package}


@pytest.mark.parametrize("package", LAYERS)
def test_cluster_subpackages_import_only_lower_layers(package: str) -> None:
    allowed = set(LAYERS[: LAYERS.index(package)])
    assert _imported_subpackages(package) <= allowed


def test_cluster_layers_cover_every_subpackage() -> None:
    """A new sub-package must take its place in the order."""
    found = {path.name for path in ROOT.iterdir() if (path / "__init__.py").exists()}
    assert found == set(LAYERS)
