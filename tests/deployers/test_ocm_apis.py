"""The two PlacementDecision APIs the OCM deployer writes: the same pages, each API's names, labels and fields."""

from __future__ import annotations

from typing import Any

import pytest

from deployers.ocm.apis import (
    DECISION_INDEX_LABEL,
    DECISION_KEY_LABEL,
    OCM_DECISIONS,
    SCHEDULER_NAME,
    InventoryDecisions,
    decision_api,
)
from deployers.ocm.plan import Page

GROUP = "cluster.open-cluster-management.io/decision-group-name"


def document(*pages: tuple[str, list[str]]) -> dict[str, Any]:
    """The deployer's document of one decision: pages as the event publishes them (labels: their group)."""
    return {
        "pages": [
            {
                "metadata": {"name": f"web-decision-{k}", "labels": {GROUP: group}},
                "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
            }
            for k, (group, clusters) in enumerate(pages, start=1)
        ],
        "status": {},
    }


def test_ocm_pages_are_the_published_ones() -> None:
    pages = OCM_DECISIONS.pages(document(("canary", ["a"]), ("", ["b", "c"])), "web")
    assert pages == [
        Page("web-decision-1", {GROUP: "canary"}, ("a",)),
        Page("web-decision-2", {GROUP: ""}, ("b", "c")),
    ]


def test_inventory_slices_carry_the_decision_key_and_the_page_position() -> None:
    pages = InventoryDecisions().pages(document(("canary", ["a"]), ("", ["b", "c"])), "web")
    assert pages == [
        Page("web-decision-1", {DECISION_KEY_LABEL: "web", DECISION_INDEX_LABEL: "0"}, ("a",)),
        Page("web-decision-2", {DECISION_KEY_LABEL: "web", DECISION_INDEX_LABEL: "1"}, ("b", "c")),
    ]


def test_a_new_inventory_slice_is_valid_without_clusters() -> None:
    """`decisions` is required by the CRD; a page is created empty and its clusters written next."""
    body = InventoryDecisions().new_page({"name": "web-decision-1"})
    assert body["apiVersion"] == "multicluster.x-k8s.io/v1alpha1"
    assert (body["decisions"], body["schedulerName"]) == ([], SCHEDULER_NAME)


@pytest.mark.parametrize(
    ("configured", "references", "read"),
    [
        (None, [{"name": "a"}, {"name": "b"}], ("a", "b")),
        ("fleet", [{"name": "a", "namespace": "fleet"}], ("a",)),
        ("fleet", [{"name": "a"}], ("/a",)),  # the decision's namespace: not the configured one
        (None, [{"name": "a", "namespace": "fleet"}], ("fleet/a",)),
    ],
)
def test_an_inventory_slice_names_a_cluster_only_in_the_configured_namespace(
    configured: str | None, references: list[dict[str, str]], read: tuple[str, ...]
) -> None:
    body = {"decisions": [{"clusterProfileRef": ref} for ref in references]}
    assert InventoryDecisions(configured).clusters(body) == read


def test_ocm_pages_read_their_clusters_from_the_status() -> None:
    assert OCM_DECISIONS.clusters({"status": {"decisions": [{"clusterName": "a"}, {"clusterName": "b"}]}}) == (
        "a",
        "b",
    )
    assert OCM_DECISIONS.clusters({}) == ()


def test_apis_by_name() -> None:
    assert decision_api("ocm") is OCM_DECISIONS
    inventory = decision_api("cluster-inventory", "fleet")
    assert isinstance(inventory, InventoryDecisions) and inventory.profile_namespace == "fleet"
