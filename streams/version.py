"""The running release's version: pyproject's `version`, as the installed package's metadata records it."""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["DISTRIBUTION", "VERSION", "package_version"]

DISTRIBUTION = "placement-stream"


def package_version() -> str:
    """The installed distribution's version; from a checkout that was never installed, its pyproject.toml's."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        try:
            return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "0+unknown"


VERSION = package_version()
"""Read once at import: logs and metrics carry it."""
