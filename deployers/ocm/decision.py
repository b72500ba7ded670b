"""What the OCM deployer keeps per Placement from the decisions topic: its pages and its status fields.

The document is plain JSON (the pages as the event publishes them, upstream's names and labels included, and the
three status fields the deployer owns), so `deployers.state.DecisionTable` keeps it and compares it as it keeps
the example deployer's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from deployers.ocm.plan import Page
from topics.codec import dump_model
from topics.placement import PlacementDecided

__all__ = ["PLACEMENT_LABEL", "STATUS_FIELDS", "ocm_document", "pages_of"]

PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
STATUS_FIELDS = ("numberOfSelectedClusters", "decisionGroups", "conditions")
"""The Placement status fields the deployer writes (upstream's controller writes the same ones)."""


def ocm_document(data: BaseModel) -> dict[str, Any] | None:
    """A Placement's pages and status fields; None for a deleted Placement or any other event."""
    if not isinstance(data, PlacementDecided) or data.deleted:
        return None
    wire = dump_model(data)
    return {
        "pages": [dict(page) for page in data.placement_decisions],
        "status": {field: wire.get(field, [] if field != "numberOfSelectedClusters" else 0) for field in STATUS_FIELDS},
    }


def pages_of(document: Mapping[str, Any]) -> list[Page]:
    """The published pages, in the event's order (upstream's `-decision-1`, `-decision-2`, ...)."""
    return [
        Page(
            page["metadata"]["name"],
            dict(page["metadata"].get("labels") or {}),
            tuple(d["clusterName"] for d in page["status"]["decisions"]),
        )
        for page in document["pages"]
    ]
