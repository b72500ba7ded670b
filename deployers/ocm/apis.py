"""The PlacementDecision APIs the OCM deployer writes: OCM's own and SIG-Multicluster's vendor-neutral one.

Both hold a decision as pages (slices) of at most 100 clusters, named `<placement>-decision-<k>` here, owned by the
Placement and found again by one label naming it; they differ in where the clusters go and in their labels:

- OCM (`cluster.open-cluster-management.io/v1beta1`): `status.decisions[].clusterName`, written through the status
  subresource; the pages' labels are the ones the decision event publishes (placement, decision group name and
  index).
- cluster-inventory-api (`multicluster.x-k8s.io/v1alpha1`): a top-level `decisions[].clusterProfileRef` (the
  ClusterProfile named as the cluster, in the decision's namespace unless one is given), `schedulerName`, the
  label `multicluster.x-k8s.io/decision-key` (the Placement's name) on every slice and
  `multicluster.x-k8s.io/decision-index` (the page's position from 0, which keeps the decision groups' order).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from lightkube import AsyncClient
from lightkube.generic_resource import create_namespaced_resource

from deployers.ocm.decision import PLACEMENT_LABEL, pages_of
from deployers.ocm.plan import Page

__all__ = [
    "DECISION_APIS",
    "DECISION_INDEX_LABEL",
    "DECISION_KEY_LABEL",
    "OCM_DECISIONS",
    "SCHEDULER_NAME",
    "DecisionApi",
    "InventoryDecisions",
    "OcmDecisions",
    "decision_api",
]

OCM_VERSION = "cluster.open-cluster-management.io/v1beta1"
INVENTORY_VERSION = "multicluster.x-k8s.io/v1alpha1"
DECISION_KEY_LABEL = "multicluster.x-k8s.io/decision-key"
DECISION_INDEX_LABEL = "multicluster.x-k8s.io/decision-index"
SCHEDULER_NAME = "placement-stream"


class DecisionApi(ABC):
    """How one PlacementDecision API holds a Placement's pages."""

    name: ClassVar[str]
    api_version: ClassVar[str]
    resource: ClassVar[Any]
    placement_label: ClassVar[str]
    """The label whose value is the Placement's name on every page: how its pages are listed."""

    @abstractmethod
    def pages(self, document: Mapping[str, Any], placement: str) -> list[Page]:
        """The pages to hold, in order, from the deployer's document of one decision."""
        raise NotImplementedError

    @abstractmethod
    def clusters(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        """The clusters a page as read holds, in order."""
        raise NotImplementedError

    @abstractmethod
    def new_page(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """A page to create with no cluster yet."""
        raise NotImplementedError

    @abstractmethod
    async def write_clusters(self, client: AsyncClient, body: dict[str, Any], clusters: tuple[str, ...]) -> Any:
        """Replace the page's clusters (against the resourceVersion in `body`); the page as written."""
        raise NotImplementedError


class OcmDecisions(DecisionApi):
    name = "ocm"
    api_version = OCM_VERSION
    resource = create_namespaced_resource(
        "cluster.open-cluster-management.io", "v1beta1", "PlacementDecision", "placementdecisions"
    )
    placement_label = PLACEMENT_LABEL

    def pages(self, document: Mapping[str, Any], placement: str) -> list[Page]:
        return pages_of(document)

    def clusters(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(d["clusterName"] for d in (body.get("status") or {}).get("decisions") or [])

    def new_page(self, metadata: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": "PlacementDecision", "metadata": metadata}

    async def write_clusters(self, client: AsyncClient, body: dict[str, Any], clusters: tuple[str, ...]) -> Any:
        body["status"] = {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]}
        return await client.replace(self.resource.Status.from_dict(body))


class InventoryDecisions(DecisionApi):
    name = "cluster-inventory"
    api_version = INVENTORY_VERSION
    resource = create_namespaced_resource(
        "multicluster.x-k8s.io", "v1alpha1", "PlacementDecision", "placementdecisions"
    )
    placement_label = DECISION_KEY_LABEL

    def __init__(self, profile_namespace: str | None = None) -> None:
        """`profile_namespace`: where the ClusterProfiles live; None leaves the reference's namespace out, which the
        API reads as the decision's own namespace."""
        self.profile_namespace = profile_namespace

    def pages(self, document: Mapping[str, Any], placement: str) -> list[Page]:
        return [
            Page(page.name, {DECISION_KEY_LABEL: placement, DECISION_INDEX_LABEL: str(index)}, page.clusters)
            for index, page in enumerate(pages_of(document))
        ]

    def clusters(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        """A reference to a ClusterProfile in another namespace than the configured one is not that cluster (a
        name with a `/`, which no cluster has), so the page is written again."""
        found = []
        for decision in body.get("decisions") or []:
            ref = decision["clusterProfileRef"]
            same = ref.get("namespace") == self.profile_namespace
            found.append(ref["name"] if same else f"{ref.get('namespace') or ''}/{ref['name']}")
        return tuple(found)

    def new_page(self, metadata: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": "PlacementDecision",
            "metadata": metadata,
            "decisions": [],
            "schedulerName": SCHEDULER_NAME,
        }

    async def write_clusters(self, client: AsyncClient, body: dict[str, Any], clusters: tuple[str, ...]) -> Any:
        namespace = {"namespace": self.profile_namespace} if self.profile_namespace else {}
        body["decisions"] = [{"clusterProfileRef": {"name": c, **namespace}} for c in clusters]
        body["schedulerName"] = SCHEDULER_NAME
        return await client.replace(self.resource.from_dict(body))


OCM_DECISIONS = OcmDecisions()
DECISION_APIS = ("ocm", "cluster-inventory")


def decision_api(name: str, profile_namespace: str | None = None) -> DecisionApi:
    """The API of that name (one of DECISION_APIS)."""
    return OCM_DECISIONS if name == "ocm" else InventoryDecisions(profile_namespace)
