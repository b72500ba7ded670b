"""The image runs every command the README documents (no Docker here, so statically): each top-level package the
`placement-stream` console script can import, at start or inside a command, and each package a README
`python -m` command runs, is copied by the Dockerfile and installed by pyproject.toml's package list."""

from __future__ import annotations

import ast
import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
README = (ROOT / "README.md").read_text()


def _copied() -> set[str]:
    """The checkout folders the Dockerfile copies into the image."""
    copied: set[str] = set()
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            copied |= {source.rstrip("/") for source in line.split()[1:-1]}
    return copied


def _installed(package: str) -> bool:
    patterns = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    return any(fnmatch(package, pattern) for pattern in patterns)


def _module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path) -> set[str]:
    """Every module a file names in an import, wherever the import stands (commands import lazily)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}  # a name may be a submodule
    return names


def _packages_reached(start: str) -> set[str]:
    """The checkout's top-level packages that module `start` imports, directly or through others."""
    seen: set[str] = set()
    pending = [start]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        for depth in range(1, len(parts)):  # importing a.b.c runs a/__init__.py and a/b/__init__.py
            pending.append(".".join(parts[:depth]))
        path = _module_file(name)
        if path is not None:
            pending.extend(_imports(path))
    return {name.split(".")[0] for name in seen if _module_file(name) is not None}


def _readme_modules() -> set[str]:
    """The modules of the README's `python -m` commands that belong to the installed distribution."""
    modules = set(re.findall(r"python -m ([a-z_][a-z_.]*[a-z_])", README))
    return {module for module in modules if _installed(module.split(".")[0])}


def test_the_console_script_and_the_readme_commands_are_found() -> None:
    script = PYPROJECT["project"]["scripts"]["placement-stream"]
    module, _, function = script.partition(":")
    assert _module_file(module) is not None and function == "main"
    assert {"placement-stream run", "placement-stream demo", "placement-stream apply"} <= set(
        re.findall(r"placement-stream [a-z-]+", README)
    )
    assert "deployers.ocm" in _readme_modules()


def test_every_package_a_documented_command_imports_is_in_the_image() -> None:
    module = PYPROJECT["project"]["scripts"]["placement-stream"].partition(":")[0]
    needed = _packages_reached(module)
    for readme_module in _readme_modules():
        needed |= _packages_reached(readme_module)
    assert {"streams", "cli", "connection", "advisors", "deployers", "localbroker"} <= needed  # the walk works
    assert needed - _copied() == set(), "COPY these folders in the Dockerfile"
    assert {package for package in needed if not _installed(package)} == set(), "add them to packages.find"
