"""The kinds `watch` follows, and which of their objects it takes.

Each is a kind `apply -f` converts (`topics.objects.convert.CONVERTERS`); the API version is the one upstream
serves. A Placement is taken only when it is handed over to an external scheduler with upstream's annotation,
so upstream's controller and the processor never both decide it (unless `--all-placements`).
"""

from __future__ import annotations

from dataclasses import dataclass

from connection.kubernetes import HANDOVER_ANNOTATION, handed_over
from topics.objects.convert import HYBRID, OCM

__all__ = ["HANDOVER_ANNOTATION", "OCM_KINDS", "PLACEMENT_RULE", "POD", "WatchedKind", "handed_over", "watched_kinds"]


@dataclass(frozen=True, slots=True)
class WatchedKind:
    """One kind as the API server serves it."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


OCM_KINDS = (
    WatchedKind("ManagedClusterSet", OCM, "v1beta2", "managedclustersets", namespaced=False),
    WatchedKind("ManagedClusterSetBinding", OCM, "v1beta2", "managedclustersetbindings", namespaced=True),
    WatchedKind("ManagedCluster", OCM, "v1", "managedclusters", namespaced=False),
    WatchedKind("AddOnPlacementScore", OCM, "v1alpha1", "addonplacementscores", namespaced=True),
    WatchedKind("Placement", OCM, "v1beta1", "placements", namespaced=True),
)
"""Inventory first: at a first start the processor then meets the clusters before the placements."""
PLACEMENT_RULE = WatchedKind("PlacementRule", HYBRID, "v1alpha1", "placementrules", namespaced=True)
"""Followed only when the API server serves it (its CRD is installed)."""
POD = WatchedKind("Pod", "", "v1", "pods", namespaced=True)
"""YuniKorn submissions, only with `--pods`."""


def watched_kinds(*, pods: bool) -> tuple[WatchedKind, ...]:
    return (*OCM_KINDS, PLACEMENT_RULE, *((POD,) if pods else ()))
