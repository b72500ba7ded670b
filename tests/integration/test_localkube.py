"""The local Kubernetes API server of the tests: OCM's CRDs are served, objects are stored and read back."""

from __future__ import annotations

from pathlib import Path

import pytest
from kube_support import RESOURCES, create, kube_client, managed_cluster, placement
from lightkube import ApiError

pytestmark = pytest.mark.integration


async def test_a_managed_cluster_and_a_placement_are_stored_and_read_back(kubeconfig: Path) -> None:
    async with kube_client(kubeconfig) as client:
        await create(client, "ManagedCluster", managed_cluster("lk-east", region="us-east"))
        await create(client, "Placement", placement("lk-web", "lk-apps", handed_over=True, clusters=2))
        cluster = (await client.get(RESOURCES["ManagedCluster"], "lk-east")).to_dict()
        got = (await client.get(RESOURCES["Placement"], "lk-web", namespace="lk-apps")).to_dict()
    assert cluster["metadata"]["labels"] == {"region": "us-east"}
    assert cluster["spec"]["hubAcceptsClient"] is True
    assert got["spec"]["numberOfClusters"] == 2
    assert got["metadata"]["annotations"] == {
        "cluster.open-cluster-management.io/experimental-scheduling-disable": "true"
    }
    assert got["metadata"]["resourceVersion"]


async def test_the_crd_schemas_are_enforced(kubeconfig: Path) -> None:
    async with kube_client(kubeconfig) as client:
        bad = placement("lk-bad", "lk-apps", handed_over=True)
        bad["spec"]["numberOfClusters"] = "two"
        with pytest.raises(ApiError) as refused:
            await create(client, "Placement", bad)
    assert refused.value.status.code == 422
