"""Imports between the top-level packages go one way (docs/architecture.md, Layering): each package imports only
the packages listed for it here, at module level or inside a function. ruff's banned-api rule (TID251) refuses the
same imports as they are written, for topics/, engine/, connection/, streams/, advisors/ and deployers/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BELOW: dict[str, frozenset[str]] = {
    "topics": frozenset(),
    "engine": frozenset({"topics"}),
    "connection": frozenset({"topics"}),
    "streams": frozenset({"topics", "engine", "connection"}),
    "advisors": frozenset({"topics", "connection"}),
    "deployers": frozenset({"topics", "connection"}),
    "localbroker": frozenset({"topics"}),
    "localkube": frozenset({"localbroker"}),
    "cli": frozenset({"topics", "engine", "connection", "streams", "advisors", "deployers", "localbroker"}),
    "benchmarks": frozenset(
        {"topics", "engine", "connection", "streams", "cli", "advisors", "deployers", "localbroker", "tests"}
    ),
}
"""Each top-level package and the project's packages it may import."""


def _imported(path: Path) -> set[str]:
    """The project's top-level packages a module imports, wherever in the module the import stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.partition(".")[0])
    return found & (BELOW.keys() | {"tests"})


def test_every_top_level_package_has_its_layer() -> None:
    """`tests` is a package too (its mirrored folders import their helpers by full name); it may import all."""
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")}
    assert packages == set(BELOW) | {"tests"}


@pytest.mark.parametrize("package", sorted(BELOW))
def test_a_package_imports_only_the_layers_below_it(package: str) -> None:
    upward = {
        f"{path.relative_to(ROOT)} imports {', '.join(sorted(wrong))}"
        for path in sorted((ROOT / package).rglob("*.py"))
        if (wrong := _imported(path) - BELOW[package] - {package})
    }
    assert not upward, sorted(upward)


def _constructor_parameters(node: ast.ClassDef) -> int | None:
    """Parameters of a class's `__init__`, or fields of a dataclass; None for neither."""
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            return len(item.args.args) - 1 + len(item.args.kwonlyargs)
    if any("dataclass" in ast.unparse(d) for d in node.decorator_list):
        return sum(1 for i in node.body if isinstance(i, ast.AnnAssign) and "ClassVar" not in ast.unparse(i.annotation))
    return None


PRODUCT = ("topics", "engine", "connection", "streams", "cli", "advisors", "deployers", "localbroker", "localkube")


def test_shell_constructors_take_at_most_eight_parameters_and_functions_sixty_lines() -> None:
    """The service's collaborators come in one context (docs/architecture.md, One batch through the shell): a
    constructor that needs more names a missing grouping. Functions of the product stay under 60 lines."""
    wide, long = [], []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ClassDef) and package == "streams":
                    count = _constructor_parameters(node)
                    if count is not None and count > 8:
                        wide.append(f"{path.relative_to(ROOT)}: {node.name} takes {count}")
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                    lines = node.end_lineno - node.lineno + 1
                    if lines > 60:
                        long.append(f"{path.relative_to(ROOT)}: {node.name} has {lines} lines")
    assert not wide and not long, wide + long
