"""docs/architecture.md stays true to the tree: every module of the product packages is named there, by its
file name or, inside a sub-package, through the sub-package (`apply/`), so a newcomer finds where each piece lives."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "topics",
    "engine",
    "connection",
    "streams",
    "cli",
    "localbroker",
    "localkube",
    "advisors",
    "deployers",
    "benchmarks",
)
DOC = (ROOT / "docs" / "architecture.md").read_text()


def _modules() -> list[Path]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name in ("__init__.py", "__main__.py"):
                continue  # package markers
            found.append(path.relative_to(ROOT))
    return found


@pytest.mark.parametrize("module", _modules(), ids=str)
def test_every_module_is_named_in_the_architecture_page(module: Path) -> None:
    parent = module.parent
    names = {f"`{module.name}`", f"`{module.stem}`"}
    if len(module.parts) > 2:  # a module of a sub-package may be named through it; a package's own, never
        names |= {f"`{parent.name}/`", f"`{parent.as_posix()}/`"}
    assert any(name in DOC for name in names), f"{module} is not named in docs/architecture.md"
