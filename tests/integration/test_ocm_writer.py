"""The OCM deployer's writer on the real API server: conflicts, hands off, clean-up (no Kafka needed)."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import pytest
from kube_support import create, delete, kube_client
from lightkube import AsyncClient

from cli.watch.kinds import HANDOVER_ANNOTATION
from deployers.ocm.apis import DECISION_INDEX_LABEL, DECISION_KEY_LABEL, SCHEDULER_NAME, InventoryDecisions
from deployers.ocm.decision import PLACEMENT_LABEL
from deployers.ocm.writer import DECISION, PLACEMENT, VERSION, PlacementWriter

pytestmark = pytest.mark.integration

INVENTORY = InventoryDecisions()
GROUP_NAME = "cluster.open-cluster-management.io/decision-group-name"
GROUP_INDEX = "cluster.open-cluster-management.io/decision-group-index"


def document(name: str, ns: str, *pages: list[str]) -> dict[str, Any]:
    """A decision as the deployer keeps it: pages as the event publishes them, and the status fields."""
    labels = {PLACEMENT_LABEL: name, GROUP_NAME: "", GROUP_INDEX: "0"}
    return {
        "pages": [
            {
                "apiVersion": VERSION,
                "kind": "PlacementDecision",
                "metadata": {"name": f"{name}-decision-{k}", "namespace": ns, "labels": labels},
                "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
            }
            for k, clusters in enumerate(pages, start=1)
        ],
        "status": {
            "numberOfSelectedClusters": sum(len(p) for p in pages),
            "decisionGroups": [
                {
                    "decisionGroupIndex": 0,
                    "decisionGroupName": "",
                    "decisions": [f"{name}-decision-{k}" for k in range(1, len(pages) + 1)],
                    "clusterCount": sum(len(p) for p in pages),
                }
            ],
            "conditions": [
                {
                    "type": "PlacementSatisfied",
                    "status": "True",
                    "reason": "AllDecisionsScheduled",
                    "message": "All cluster decisions scheduled",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        },
    }


async def pages(client: AsyncClient, ns: str, name: str) -> dict[str, list[str]]:
    listed = [p.to_dict() async for p in client.list(DECISION, namespace=ns, labels={PLACEMENT_LABEL: name})]
    return {
        p["metadata"]["name"]: [d["clusterName"] for d in (p.get("status") or {}).get("decisions", [])] for p in listed
    }


async def a_placement(client: AsyncClient, ns: str, name: str, *, handed_over: bool = True) -> None:
    annotations = {HANDOVER_ANNOTATION: "true"} if handed_over else {}
    meta = {"name": name, "namespace": ns, "annotations": annotations}
    await create(client, "Placement", {"metadata": meta, "spec": {}})


class InterruptedWriter(PlacementWriter):
    """A writer that, after its first reading, has someone else change a page (a real write on the real server),
    so its own next write of that page is refused with 409."""

    def __init__(self, client: AsyncClient, other: AsyncClient, page: str, ns: str) -> None:
        super().__init__(client)
        self.other, self.page, self.ns, self.readings = other, page, ns, 0

    async def _observe(self, namespace: str, name: str) -> Any:
        observed = await super()._observe(namespace, name)
        self.readings += 1
        if self.readings == 1:
            body = (await self.other.get(DECISION, self.page, namespace=self.ns)).to_dict()
            body["metadata"]["labels"]["team"] = "someone-else"
            await self.other.replace(DECISION.from_dict(body))
        return observed


async def test_a_conflict_is_retried_from_a_new_reading(kubeconfig: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "deployers.ocm")
    ns = f"ns{uuid.uuid4().hex[:8]}"
    async with kube_client(kubeconfig) as client, kube_client(kubeconfig) as other:
        await a_placement(client, ns, "web")
        await PlacementWriter(client).converge(ns, "web", document("web", ns, ["a", "b"]))
        writer = InterruptedWriter(client, other, "web-decision-1", ns)
        done = await writer.converge(ns, "web", document("web", ns, ["a", "c"]))
        assert writer.readings == 2 and "conflict" in caplog.text
        assert done == ["wrote web-decision-1: a, c"]
        assert await pages(client, ns, "web") == {"web-decision-1": ["a", "c"]}
        page = (await client.get(DECISION, "web-decision-1", namespace=ns)).to_dict()
        assert page["metadata"]["labels"]["team"] == "someone-else"  # the other writer's label is kept


async def test_a_placement_not_handed_over_is_never_written(kubeconfig: Path) -> None:
    ns = f"ns{uuid.uuid4().hex[:8]}"
    async with kube_client(kubeconfig) as client:
        await a_placement(client, ns, "upstream", handed_over=False)
        assert await PlacementWriter(client).converge(ns, "upstream", document("upstream", ns, ["a"])) == []
        assert await pages(client, ns, "upstream") == {}
        assert "status" not in (await client.get(PLACEMENT, "upstream", namespace=ns)).to_dict()


async def test_pages_stay_while_the_placement_exists_and_go_with_it(kubeconfig: Path) -> None:
    """A deleted decision of a Placement still there (handed back to upstream) leaves its pages for upstream's
    controller; once the Placement is gone they are deleted (no garbage collector runs here)."""
    ns = f"ns{uuid.uuid4().hex[:8]}"
    async with kube_client(kubeconfig) as client:
        await a_placement(client, ns, "web")
        writer = PlacementWriter(client)
        await writer.converge(ns, "web", document("web", ns, ["a"], ["b"]))
        assert await writer.converge(ns, "web", None) == []
        assert await pages(client, ns, "web") == {"web-decision-1": ["a"], "web-decision-2": ["b"]}
        await delete(client, "Placement", "web", ns)
        assert await writer.converge(ns, "web", None) == ["deleted web-decision-1", "deleted web-decision-2"]
        assert await pages(client, ns, "web") == {}


async def slices(client: AsyncClient, ns: str, name: str) -> dict[str, tuple[dict[str, str], list[str], str]]:
    """SIG-Multicluster's slices of one Placement: name -> labels, ClusterProfile names, scheduler."""
    listed = client.list(INVENTORY.resource, namespace=ns, labels={DECISION_KEY_LABEL: name})
    return {
        p["metadata"]["name"]: (
            p["metadata"]["labels"],
            [d["clusterProfileRef"]["name"] for d in p["decisions"]],
            p.get("schedulerName", ""),
        )
        for p in [item.to_dict() async for item in listed]
    }


async def test_the_cluster_inventory_api_gets_the_same_pages_as_slices(kubeconfig: Path) -> None:
    """The vendor-neutral PlacementDecision (multicluster.x-k8s.io/v1alpha1, its CRD installed by localkube): one
    slice per page, the Placement's name as decision key, the page's position as decision index, ClusterProfiles
    named as the clusters; a cluster moving between pages is never on none, and the slices go with the
    Placement."""
    ns = f"ns{uuid.uuid4().hex[:8]}"
    key = {DECISION_KEY_LABEL: "web"}
    async with kube_client(kubeconfig) as client:
        await a_placement(client, ns, "web")
        writer = PlacementWriter(client, InventoryDecisions())
        await writer.converge(ns, "web", document("web", ns, ["a", "b"], ["c"]))
        assert await slices(client, ns, "web") == {
            "web-decision-1": ({**key, DECISION_INDEX_LABEL: "0"}, ["a", "b"], SCHEDULER_NAME),
            "web-decision-2": ({**key, DECISION_INDEX_LABEL: "1"}, ["c"], SCHEDULER_NAME),
        }
        body = (await client.get(INVENTORY.resource, "web-decision-1", namespace=ns)).to_dict()
        assert body["apiVersion"] == "multicluster.x-k8s.io/v1alpha1"
        assert body["decisions"][0] == {"clusterProfileRef": {"name": "a"}}  # the decision's namespace
        placement = (await client.get(PLACEMENT, "web", namespace=ns)).to_dict()
        assert [(o["kind"], o["uid"]) for o in body["metadata"]["ownerReferences"]] == [
            ("Placement", placement["metadata"]["uid"])
        ]
        assert placement["status"]["numberOfSelectedClusters"] == 3  # the Placement's status as with OCM's pages
        assert await pages(client, ns, "web") == {}, "OCM's PlacementDecisions are not written"

        done = await writer.converge(ns, "web", document("web", ns, ["a"], ["b", "c"]))
        assert done == ["wrote web-decision-2: b, c", "wrote web-decision-1: a"]  # b joins page 2 before leaving 1
        other = PlacementWriter(client, InventoryDecisions("fleet"))
        await other.converge(ns, "web", document("web", ns, ["a"]))
        got = (await client.get(INVENTORY.resource, "web-decision-1", namespace=ns)).to_dict()
        assert got["decisions"] == [{"clusterProfileRef": {"name": "a", "namespace": "fleet"}}]
        assert list(await slices(client, ns, "web")) == ["web-decision-1"]

        await delete(client, "Placement", "web", ns)
        assert await writer.converge(ns, "web", None) == ["deleted web-decision-1"]
        assert await slices(client, ns, "web") == {}
