"""Inventory objects published on the cluster-status and taints topics (upstream API field names)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from topics.base import EventData, KubeObject
from topics.k8s import Condition, Int32, LabelSelector, ObjectMeta

__all__ = [
    "AddOnPlacementScore",
    "AddOnPlacementScoreItem",
    "AddOnPlacementScoreStatus",
    "ClusterClaim",
    "ClusterSetSelector",
    "ClusterTaintsUpdated",
    "Deployer",
    "DeployerSpec",
    "InventoryResource",
    "ManagedCluster",
    "ManagedClusterSet",
    "ManagedClusterSetBinding",
    "ManagedClusterSetBindingSpec",
    "ManagedClusterSetSpec",
    "ManagedClusterSpec",
    "ManagedClusterStatus",
    "PlacementTarget",
    "Taint",
]

Quantity = str | int | float


class Taint(KubeObject):
    """A cluster taint; `timeAdded` may be absent, then the first event carrying it dates it."""

    key: str
    value: str = ""
    effect: str
    time_added: datetime | None = None


class ClusterClaim(KubeObject):
    """One `status.clusterClaims` entry."""

    name: str
    value: str = ""


class ManagedClusterSpec(KubeObject):
    """The spec fields the engines read."""

    taints: list[Taint] = Field(default_factory=list)


class ManagedClusterStatus(KubeObject):
    """The status fields the engines read."""

    allocatable: dict[str, Quantity] = Field(default_factory=dict)
    capacity: dict[str, Quantity] = Field(default_factory=dict)
    cluster_claims: list[ClusterClaim] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)


class ManagedCluster(KubeObject):
    """`cluster.open-cluster-management.io/v1` ManagedCluster (cluster-scoped)."""

    api_version: str = "cluster.open-cluster-management.io/v1"
    kind: str = "ManagedCluster"
    metadata: ObjectMeta
    spec: ManagedClusterSpec = Field(default_factory=ManagedClusterSpec)
    status: ManagedClusterStatus = Field(default_factory=ManagedClusterStatus)


class ClusterSetSelector(KubeObject):
    """How a set chooses its clusters: the exclusive set label (default) or a label selector."""

    selector_type: str = ""
    label_selector: LabelSelector | None = None


class ManagedClusterSetSpec(KubeObject):
    """ManagedClusterSet spec."""

    cluster_selector: ClusterSetSelector = Field(default_factory=ClusterSetSelector)


class ManagedClusterSet(KubeObject):
    """`cluster.open-cluster-management.io/v1beta2` ManagedClusterSet (cluster-scoped)."""

    api_version: str = "cluster.open-cluster-management.io/v1beta2"
    kind: str = "ManagedClusterSet"
    metadata: ObjectMeta
    spec: ManagedClusterSetSpec = Field(default_factory=ManagedClusterSetSpec)


class ManagedClusterSetBindingSpec(KubeObject):
    """Names the set bound into the binding's namespace."""

    cluster_set: str


class ManagedClusterSetBinding(KubeObject):
    """ManagedClusterSetBinding: makes a set usable by placements of one namespace."""

    api_version: str = "cluster.open-cluster-management.io/v1beta2"
    kind: str = "ManagedClusterSetBinding"
    metadata: ObjectMeta
    spec: ManagedClusterSetBindingSpec


class AddOnPlacementScoreItem(KubeObject):
    """One named score."""

    name: str
    value: Int32


class AddOnPlacementScoreStatus(KubeObject):
    """Scores and their expiry."""

    scores: list[AddOnPlacementScoreItem] = Field(default_factory=list)
    valid_until: datetime | None = None
    conditions: list[Condition] = Field(default_factory=list)


class AddOnPlacementScore(KubeObject):
    """`cluster.open-cluster-management.io/v1alpha1` AddOnPlacementScore; namespace = cluster name."""

    api_version: str = "cluster.open-cluster-management.io/v1alpha1"
    kind: str = "AddOnPlacementScore"
    metadata: ObjectMeta
    status: AddOnPlacementScoreStatus = Field(default_factory=AddOnPlacementScoreStatus)


class PlacementTarget(KubeObject):
    """The kind of object a Deployer places onto (e.g. VirtualMachine)."""

    group: str = ""
    version: str = ""
    kind: str


class DeployerSpec(KubeObject):
    """Deployer spec."""

    type: str
    placement_target: PlacementTarget | None = None


class Deployer(KubeObject):
    """`core.hybridapp.io/v1alpha1` Deployer."""

    api_version: str = "core.hybridapp.io/v1alpha1"
    kind: str = "Deployer"
    metadata: ObjectMeta
    spec: DeployerSpec


class InventoryResource(KubeObject):
    """Any other inventory kind a Deployer may target; carries its own apiVersion and kind."""

    api_version: str
    kind: str = Field(min_length=1)
    metadata: ObjectMeta
    spec: dict[str, Any] = Field(default_factory=dict)


class ClusterTaintsUpdated(EventData):
    """The full taint set of one cluster, replacing what was known before."""

    cluster: str = Field(min_length=1)
    taints: list[Taint] = Field(default_factory=list)
