"""The current decision per subject, as a deployer must keep it from the decisions topic.

The decisions topic is compacted and keyed by subject, so the last record of a key is the current answer:
a re-decision replaces the earlier one whole (every page, every group), a `deleted: true` event or a tombstone
(null value) removes it. Records are validated as the processor writes them; an unreadable one is skipped with a
warning, never applied halfway. Applications are not kept: all applications of a YuniKorn partition share one key,
so their decisions are events to act on as they come, not a table.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from topics.codec import decode_event, dump_model
from topics.errors import ContractError
from topics.names import TopicRole
from topics.placement import PlacementDecided
from topics.placementrule import PlacementRuleDecided

__all__ = ["Change", "DecisionTable", "clusters_of", "document_of", "kept_subject"]

_LOG = logging.getLogger("deployers")
KEPT_KINDS = ("Placement", "PlacementRule")


@dataclass(frozen=True, slots=True)
class Change:
    """A subject whose current decision changed; `document` None means it has none any more."""

    subject: str
    document: dict[str, Any] | None


def kept_subject(key: bytes | None) -> str | None:
    """The subject key of a Placement or PlacementRule record, None for anything else (applications, bad keys)."""
    if key is None:
        return None
    text = key.decode(errors="replace")
    parts = text.split("/")
    if len(parts) != 3 or parts[0] not in KEPT_KINDS:
        return None
    if any(not part or part.startswith(".") for part in parts[1:]):  # never a path outside the output directory
        return None
    return text


def document_of(data: BaseModel) -> dict[str, Any] | None:
    """What a deployer applies for one decision: a Placement's PlacementDecision pages as a Kubernetes List, or a
    hybrid rule's decisions as its status; None for a deleted subject or another event type."""
    if isinstance(data, PlacementDecided):
        if data.deleted:
            return None
        return {"apiVersion": "v1", "kind": "List", "items": [dict(page) for page in data.placement_decisions]}
    if isinstance(data, PlacementRuleDecided):
        if data.deleted:
            return None
        wire = dump_model(data)
        return {
            "apiVersion": "core.hybridapp.io/v1alpha1",
            "kind": "PlacementRule",
            "metadata": {"name": data.name, "namespace": data.namespace},
            "status": {"decisions": wire.get("decisions", [])},
        }
    return None


def clusters_of(document: dict[str, Any] | None) -> list[str]:
    """The names a document places onto: every page's clusters, or a rule's decisions (for the change log)."""
    if document is None:
        return []
    if document.get("kind") == "List":
        return [d["clusterName"] for page in document["items"] for d in page["status"]["decisions"]]
    return [str(ref.get("name", "")) for ref in document["status"]["decisions"]]


class DecisionTable:
    """Subject key -> the document of its current decision."""

    def __init__(self, document: Callable[[BaseModel], dict[str, Any] | None] = document_of) -> None:
        self.current: dict[str, dict[str, Any]] = {}
        self._document = document
        """What a deployer keeps of a decision (None: nothing, the subject has no decision any more)."""

    def apply(self, key: bytes | None, value: bytes | None) -> Change | None:
        """Apply one decisions record; the change it makes, or None when it changes nothing."""
        subject = kept_subject(key)
        if subject is None:
            return None
        if value is None:  # a tombstone: the subject is gone
            return Change(subject, None) if self.current.pop(subject, None) is not None else None
        try:
            event = decode_event(value, TopicRole.DECISIONS)
        except ContractError as exc:
            _LOG.warning("skipping an unreadable decision for %s: %s", subject, exc)
            return None
        if not isinstance(event.data, PlacementDecided | PlacementRuleDecided):
            return None
        document = self._document(event.data)
        if document is None:
            return Change(subject, None) if self.current.pop(subject, None) is not None else None
        if self.current.get(subject) == document:
            return None
        self.current[subject] = document
        return Change(subject, document)
