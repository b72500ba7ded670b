"""The files `-f PATH` names, as `kubectl apply -f` reads them: a file, a directory's manifests, or stdin."""

from __future__ import annotations

import sys
from pathlib import Path

from topics.objects.documents import DocumentError

__all__ = ["MANIFEST_SUFFIXES", "manifest_files"]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
"""The files a directory contributes, as kubectl reads them."""


def manifest_files(path: str, *, recursive: bool = False) -> list[tuple[str, bytes]]:
    """Name and content of each file `-f PATH` names: the file, a directory's manifests (sorted), or stdin.

    Raises:
        DocumentError: the path cannot be read.
    """
    if path == "-":
        return [("<stdin>", sys.stdin.buffer.read())]
    root = Path(path)
    if root.is_dir():
        pattern = "**/*" if recursive else "*"
        found = sorted(p for p in root.glob(pattern) if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
        return [(str(p), p.read_bytes()) for p in found]
    try:
        return [(path, root.read_bytes())]
    except OSError as exc:
        raise DocumentError(f"{path}: {exc.strerror or exc}") from exc
