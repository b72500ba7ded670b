"""OCM Placement (v1beta1) in, `placement.decided` out.

The spec is kept as upstream JSON; the cluster engine reads and defaults it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from topics.base import EventData, KubeObject
from topics.k8s import Condition, ObjectMeta

__all__ = ["Placement", "PlacementDecided"]


class Placement(KubeObject):
    """`cluster.open-cluster-management.io/v1beta1` Placement."""

    api_version: str = "cluster.open-cluster-management.io/v1beta1"
    kind: str = "Placement"
    metadata: ObjectMeta
    spec: dict[str, Any] = Field(default_factory=dict)


class PlacementDecided(EventData):
    """The whole decision of one placement: every page, every group, status and scores."""

    namespace: str
    name: str
    generation: int = 0
    evaluation_time: datetime | None = None
    placement_decisions: list[dict[str, Any]] = Field(default_factory=list)
    decision_groups: list[dict[str, Any]] = Field(default_factory=list)
    number_of_selected_clusters: int = 0
    conditions: list[Condition] = Field(default_factory=list)
    scores: dict[str, int] = Field(default_factory=dict)
    warning: dict[str, str] | None = None
    deleted: bool = False
