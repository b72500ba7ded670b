"""Load the mypyc build of the engine's hot modules (scripts/build_native.py) in place of their Python sources.

The build is used whole or not at all: compiled modules call each other directly, so one edited source makes
every compiled module suspect. It is used only when the manifest names this interpreter's extension suffix and
every compiled source still has its recorded hash; otherwise the Python sources run, with one warning.
PLACEMENT_NATIVE=0 runs the Python sources on purpose (the test suite runs the engine tests both ways).
This module reads files at import only; it is never compiled itself.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import os
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["ACTIVE", "install", "source_digest"]

_log = logging.getLogger(__name__)
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
_BUILD = _PACKAGE_ROOT / "engine" / "_native"

ACTIVE = False
"""Whether the compiled modules are the ones imported."""


class _NativeFinder(importlib.abc.MetaPathFinder):
    """Finds the compiled modules (and the library they share) in the build directory, before the sources."""

    def __init__(self, files: dict[str, Path]) -> None:
        self._files = files

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        file = self._files.get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


def source_digest(path: Path) -> str:
    """What the manifest records of a compiled source (scripts/build_native.py writes it with this too)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _compiled_files() -> dict[str, Path] | None:
    """Module name -> compiled file, when a build exists and matches the sources; None otherwise."""
    try:
        built = json.loads((_BUILD / "manifest.json").read_text())
        built_for, group, modules = built["ext_suffix"], built["group"], dict(built["modules"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        _log.warning("engine native build unreadable (%r): running the Python sources", exc)
        return None
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if built_for != suffix:
        _log.warning("engine native build is for %s, not %s: running the Python sources", built_for, suffix)
        return None
    files = {f"{group}__mypyc": _BUILD / f"{group}__mypyc{suffix}"}
    for source, digest in modules.items():
        path = _PACKAGE_ROOT / source
        if not path.is_file() or source_digest(path) != digest:
            _log.warning(
                "engine native build is older than %s: running the Python sources (scripts/build_native.py "
                "rebuilds it)",
                source,
            )
            return None
        module = source.removesuffix(".py")
        files[module.replace("/", ".")] = _BUILD / f"{module}{suffix}"
    if not all(file.is_file() for file in files.values()):
        _log.warning("engine native build is incomplete: running the Python sources")
        return None
    return files


def install() -> bool:
    """Put the compiled modules ahead of the sources, once; returns whether they are."""
    global ACTIVE  # noqa: PLW0603  (set once, at the engine package's import)
    if ACTIVE or os.environ.get("PLACEMENT_NATIVE", "1") == "0":
        return ACTIVE
    files = _compiled_files()
    if files is not None:
        sys.meta_path.insert(0, _NativeFinder(files))
        ACTIVE = True
    return ACTIVE
