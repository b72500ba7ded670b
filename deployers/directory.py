"""A directory of YAML files, one per subject, each replaced atomically and written only when it changes.

`Placement/<ns>/<name>` is `placements/<ns>/<name>.yaml`, `PlacementRule/<ns>/<name>` is
`placementrules/<ns>/<name>.yaml`. A reader (a person, `kubectl apply -f`, a GitOps agent) sees either the old
file or the new one, never a torn write; writing the same decision again leaves the file untouched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from deployers.state import clusters_of, kept_subject

__all__ = ["DecisionDirectory", "render"]

_FOLDERS = {"Placement": "placements", "PlacementRule": "placementrules"}


def render(document: Mapping[str, Any]) -> bytes:
    """Stable YAML bytes: the same document always gives the same file."""
    return yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False).encode()


def _describe(old: list[str], new: list[str]) -> str:
    added = [c for c in new if c not in old]
    removed = [c for c in old if c not in new]
    delta = " ".join([*(f"+{c}" for c in added), *(f"-{c}" for c in removed)])
    return f"{', '.join(new) or 'nothing'}" + (f" ({delta})" if delta else "")


class DecisionDirectory:
    """The files of the current decisions under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path_of(self, subject: str) -> Path:
        """The file of a subject key (checked by `kept_subject`)."""
        kind, namespace, name = subject.split("/")
        return self.root / _FOLDERS[kind] / namespace / f"{name}.yaml"

    def subject_of(self, path: Path) -> str | None:
        """The subject key a file stands for, None for files this deployer does not own."""
        relative = path.relative_to(self.root).parts
        kinds = {folder: kind for kind, folder in _FOLDERS.items()}
        if len(relative) != 3 or relative[0] not in kinds or not relative[2].endswith(".yaml"):
            return None
        return kept_subject(f"{kinds[relative[0]]}/{relative[1]}/{relative[2].removesuffix('.yaml')}".encode())

    def _old_clusters(self, path: Path) -> list[str]:
        try:
            loaded = yaml.safe_load(path.read_bytes())
            return clusters_of(loaded) if isinstance(loaded, dict) else []
        except (OSError, yaml.YAMLError, KeyError, TypeError):
            return []

    def write(self, subject: str, document: Mapping[str, Any] | None) -> str | None:
        """Make the subject's file say `document` (None: remove it); what changed, or None when nothing did."""
        path = self.path_of(subject)
        if document is None:
            if not path.exists():
                return None
            old = self._old_clusters(path)
            path.unlink()
            return f"removed {path.relative_to(self.root)} (was {', '.join(old) or 'nothing'})"
        content = render(document)
        try:
            if path.read_bytes() == content:
                return None
        except FileNotFoundError:
            pass
        old = self._old_clusters(path) if path.exists() else []
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_bytes(content)
        os.replace(temporary, path)
        return f"wrote {path.relative_to(self.root)}: {_describe(old, clusters_of(dict(document)))}"

    def reconcile(self, current: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """Make the directory hold exactly `current` (after a restart: subjects deleted meanwhile lose their file);
        the changes made, in subject order."""
        changes = []
        owned = sorted(p for folder in _FOLDERS.values() for p in (self.root / folder).glob("*/*.yaml"))
        for path in owned:
            subject = self.subject_of(path)
            if subject is not None and subject not in current:
                changes.append(f"{subject}: {self.write(subject, None)}")
        for subject in sorted(current):
            change = self.write(subject, current[subject])
            if change is not None:
                changes.append(f"{subject}: {change}")
        return changes
