"""Candidate generation from the inventory (hybrid spec B1–B7).

The pool is chosen by `deployerType` (ManagedClusters, Deployers, or the kind a Deployer places onto), then
filtered by `targetLabels` and `targets`. The result is sorted so every instance derives the same list.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from engine.cluster.matching.selectors import SelectorError, compile_label_selector, matches
from engine.errors import EngineError
from engine.hybrid.identity import Ref, sort_refs
from engine.inventory import Inventory
from topics.base import KubeObject
from topics.inventory import Deployer
from topics.placementrule import PlacementRuleSpec, targets_match

__all__ = [
    "DEPLOYER",
    "LOCAL_CLUSTER",
    "MANAGED_CLUSTER",
    "CandidateError",
    "Pool",
    "generate",
    "pool_kind",
]

_LOG = logging.getLogger(__name__)

MANAGED_CLUSTER = "ManagedCluster"
DEPLOYER = "Deployer"
LOCAL_CLUSTER = "local-cluster"


class CandidateError(EngineError, ValueError):
    """Candidates cannot be generated (an invalid selector, B4); the rule keeps its state."""


@dataclass(frozen=True, slots=True)
class Pool:
    """Fresh candidates in key order and the kind they were drawn from (empty when there is no pool)."""

    candidates: tuple[Ref, ...]
    kind: str


def _first_deployer(spec: PlacementRuleSpec, inventory: Inventory) -> Deployer | None:
    """The first Deployer of the rule's type by key (B3; upstream takes an arbitrary one)."""
    found = [
        (f"{ns}/{name}", obj)
        for (ns, name), obj in inventory.objects(DEPLOYER).items()
        if isinstance(obj, Deployer) and obj.spec.type == spec.deployer_type
    ]
    if not found:
        return None
    return min(found, key=lambda item: item[0])[1]


def _source(spec: PlacementRuleSpec, inventory: Inventory) -> tuple[str, bool]:
    """The pool's kind and whether only Deployers of the rule's type belong to it (B2, B3)."""
    if spec.deployer_type is None:
        return MANAGED_CLUSTER, False
    deployer = _first_deployer(spec, inventory)
    if deployer is None:
        return "", False
    if deployer.spec.placement_target is not None:
        return deployer.spec.placement_target.kind, False
    return DEPLOYER, True


def pool_kind(spec: PlacementRuleSpec, inventory: Inventory) -> str:
    """The kind the rule draws candidates from; empty when no Deployer has its type."""
    return _source(spec, inventory)[0]


def generate(spec: PlacementRuleSpec, inventory: Inventory) -> Pool:
    """The fresh candidate list of a rule; raises CandidateError when `targetLabels` is invalid."""
    try:
        selector = compile_label_selector(spec.target_labels)
    except SelectorError as exc:
        raise CandidateError(f"invalid targetLabels: {exc}") from exc
    kind, same_type_only = _source(spec, inventory)
    if not kind:
        _LOG.error("no Deployer has type %r: the candidate pool is empty", spec.deployer_type)
        return Pool((), "")
    targets = spec.targets or []
    picked: list[Ref] = []
    for (namespace, name), obj in inventory.objects(kind).items():
        if same_type_only and (not isinstance(obj, Deployer) or obj.spec.type != spec.deployer_type):
            continue
        if kind == MANAGED_CLUSTER and name == LOCAL_CLUSTER:
            continue
        if not matches(selector, _labels(obj)) or not targets_match(targets, namespace, name):
            continue
        picked.append(Ref(kind, namespace, name, str(getattr(obj, "api_version", "") or "")))
    return Pool(sort_refs(picked), kind)


def _labels(obj: KubeObject) -> dict[str, str]:
    meta = getattr(obj, "metadata", None)
    labels = getattr(meta, "labels", None)
    return dict(labels) if labels else {}
