"""Helpers for tests on the real API server: OCM objects created, changed and deleted with lightkube."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from kafka_support import KafkaWorld
from lightkube import AsyncClient, KubeConfig
from lightkube.generic_resource import create_global_resource, create_namespaced_resource

from cli.watch.command import WatchOptions, watch_forever
from cli.watch.kinds import HANDOVER_ANNOTATION, OCM_KINDS
from connection.kubernetes import kube_config

OCM = "cluster.open-cluster-management.io"
RESOURCES: dict[str, Any] = {
    kind.kind: (create_namespaced_resource if kind.namespaced else create_global_resource)(
        kind.group, kind.version, kind.kind, kind.plural
    )
    for kind in OCM_KINDS
}
NAMESPACED = {kind.kind for kind in OCM_KINDS if kind.namespaced}


@asynccontextmanager
async def kube_client(kubeconfig: Path) -> AsyncIterator[AsyncClient]:
    client = AsyncClient(config=KubeConfig.from_file(kubeconfig))
    try:
        yield client
    finally:
        await client.close()


def obj(kind: str, body: dict[str, Any]) -> Any:
    """A lightkube object of one OCM kind from its JSON."""
    version = next(k.api_version for k in OCM_KINDS if k.kind == kind)
    return RESOURCES[kind].from_dict({"apiVersion": version, "kind": kind, **body})


async def create(client: AsyncClient, kind: str, body: dict[str, Any]) -> Any:
    return await client.create(obj(kind, body))


async def delete(client: AsyncClient, kind: str, name: str, namespace: str | None = None) -> None:
    if kind in NAMESPACED:
        await client.delete(RESOURCES[kind], name, namespace=namespace)
    else:
        await client.delete(RESOURCES[kind], name)


async def replace(client: AsyncClient, kind: str, name: str, change: Any, namespace: str | None = None) -> Any:
    """Read, change (a function of the object's dict), write back."""
    resource = RESOURCES[kind]
    current = (await client.get(resource, name, namespace=namespace)) if namespace else await client.get(resource, name)
    body = current.to_dict()
    change(body)
    return await client.replace(resource.from_dict(body))


def managed_cluster(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"hubAcceptsClient": True}}


def placement(name: str, namespace: str, *, handed_over: bool, clusters: int = 1) -> dict[str, Any]:
    annotations = {HANDOVER_ANNOTATION: "true"} if handed_over else {}
    meta = {"name": name, "namespace": namespace, "annotations": annotations}
    return {"metadata": meta, "spec": {"numberOfClusters": clusters}}


@asynccontextmanager
async def watching(world: KafkaWorld, kubeconfig: Path, state: Path) -> AsyncIterator[None]:
    """`watch` in this event loop until the block ends."""
    stop = asyncio.Event()
    config, options = kube_config(kubeconfig, None), WatchOptions(state)
    task = asyncio.create_task(watch_forever(config, world.settings(), options, stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
