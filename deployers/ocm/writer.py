"""Writing one Placement's decision into the API server: its pages, then its status.

The pages are those of one PlacementDecision API (`apis.py`): OCM's, or SIG-Multicluster's. Every write is made
from what was just read: pages are replaced with the resourceVersion read, so a page changed meanwhile by someone
else is refused (409) and the whole Placement is observed and planned again (`plan.plan_pages` reaches the same
end from any state). Only what differs is written. A Placement without the hand-over annotation is never written,
nor are its pages.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lightkube import ApiError, AsyncClient
from lightkube.generic_resource import create_namespaced_resource
from lightkube.types import PatchType

from connection.kubernetes import handed_over
from deployers.ocm.apis import OCM_DECISIONS, DecisionApi
from deployers.ocm.decision import STATUS_FIELDS
from deployers.ocm.plan import CurrentPage, Step, StepKind, plan_pages

__all__ = ["CONFLICT_ATTEMPTS", "DECISION", "PLACEMENT", "VERSION", "PlacementWriter", "owned_pages", "status_code"]

OCM = "cluster.open-cluster-management.io"
VERSION = f"{OCM}/v1beta1"
PLACEMENT: Any = create_namespaced_resource(OCM, "v1beta1", "Placement", "placements")
DECISION: Any = OCM_DECISIONS.resource
CONFLICT_ATTEMPTS = 10
_CONFLICT, _NOT_FOUND = 409, 404
_log = logging.getLogger("deployers.ocm")


@dataclass(slots=True)
class _Observed:
    placement: dict[str, Any] | None
    pages: dict[str, dict[str, Any]]
    """Name -> the page object as read (its resourceVersion is what the next write of it is made against)."""


def _owner(placement: Mapping[str, Any]) -> dict[str, Any]:
    meta = placement["metadata"]
    return {"apiVersion": VERSION, "kind": "Placement", "name": meta["name"], "uid": meta["uid"], "controller": True}


def _current(body: Mapping[str, Any], uid: str | None, clusters: tuple[str, ...]) -> CurrentPage:
    meta = body["metadata"]
    owners = meta.get("ownerReferences") or []
    return CurrentPage(
        meta["name"],
        dict(meta.get("labels") or {}),
        clusters,
        owned=uid is not None and any(o.get("uid") == uid and o.get("controller") for o in owners),
    )


def owned_pages(pages: Mapping[str, Mapping[str, Any]], placement: str) -> list[str]:
    """The pages whose controller owner is a Placement of that name (whatever its uid): those a deleted Placement
    leaves behind when no garbage collector runs."""
    return sorted(
        name
        for name, body in pages.items()
        if any(
            o.get("kind") == "Placement" and o.get("name") == placement and o.get("controller")
            for o in body["metadata"].get("ownerReferences") or []
        )
    )


def status_code(exc: ApiError) -> int | None:
    return exc.status.code if exc.status is not None else None


class PlacementWriter:
    """Makes the API server hold one Placement's decision, as pages of one PlacementDecision API."""

    def __init__(self, client: AsyncClient, api: DecisionApi = OCM_DECISIONS) -> None:
        self._client = client
        self.api = api

    async def _observe(self, namespace: str, name: str) -> _Observed:
        try:
            placement = (await self._client.get(PLACEMENT, name, namespace=namespace)).to_dict()
        except ApiError as exc:
            if status_code(exc) != _NOT_FOUND:
                raise
            placement = None
        listed = self._client.list(self.api.resource, namespace=namespace, labels={self.api.placement_label: name})
        pages = {page["metadata"]["name"]: page for page in [item.to_dict() async for item in listed]}
        return _Observed(placement, pages)

    async def converge(self, namespace: str, name: str, document: Mapping[str, Any] | None) -> list[str]:
        """Write the decision (None: the Placement has none any more); what was written. A conflict is retried
        from a new reading, at most CONFLICT_ATTEMPTS times (then the last 409 is raised)."""
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            observed = await self._observe(namespace, name)
            try:
                return await self._write(namespace, name, document, observed)
            except ApiError as exc:
                if status_code(exc) != _CONFLICT or attempt == CONFLICT_ATTEMPTS:
                    raise
                _log.info("Placement/%s/%s: conflict (%s); reading again", namespace, name, exc.status.message)
        raise AssertionError("unreachable")

    async def _write(
        self, namespace: str, name: str, document: Mapping[str, Any] | None, observed: _Observed
    ) -> list[str]:
        placement = observed.placement
        if document is None:
            if placement is not None:  # handed back to upstream, or recreated and about to be decided again
                return []
            return [await self._delete(namespace, page) for page in owned_pages(observed.pages, name)]
        if placement is None or not handed_over(placement):
            return []
        uid = placement["metadata"]["uid"]
        current = {n: _current(body, uid, self.api.clusters(body)) for n, body in observed.pages.items()}
        done = []
        for step in plan_pages(current, self.api.pages(document, name)):
            done.append(await self._step(namespace, step, observed.pages, _owner(placement)))
        status = await self._status(namespace, name, placement, document["status"])
        return done + status

    async def _step(self, namespace: str, step: Step, pages: dict[str, dict[str, Any]], owner: dict[str, Any]) -> str:
        page = step.page
        if step.kind is StepKind.DELETE:
            return await self._delete(namespace, page.name)
        if step.kind is StepKind.CREATE:
            meta = {"name": page.name, "namespace": namespace, "labels": dict(page.labels), "ownerReferences": [owner]}
            created = await self._client.create(self.api.resource.from_dict(self.api.new_page(meta)))
            pages[page.name] = created.to_dict()
            return f"created {page.name}"
        body = pages[page.name]
        if step.kind is StepKind.METADATA:
            meta = body["metadata"]
            others = [o for o in meta.get("ownerReferences") or [] if not o.get("controller")]
            meta.update(labels={**(meta.get("labels") or {}), **page.labels}, ownerReferences=[owner, *others])
            pages[page.name] = (await self._client.replace(self.api.resource.from_dict(body))).to_dict()
            return f"labelled {page.name}"
        pages[page.name] = (await self.api.write_clusters(self._client, body, page.clusters)).to_dict()
        return f"wrote {page.name}: {', '.join(page.clusters) or 'nothing'}"

    async def _delete(self, namespace: str, name: str) -> str:
        try:
            await self._client.delete(self.api.resource, name, namespace=namespace)
        except ApiError as exc:
            if status_code(exc) != _NOT_FOUND:
                raise
        return f"deleted {name}"

    async def _status(
        self, namespace: str, name: str, placement: Mapping[str, Any], wanted: Mapping[str, Any]
    ) -> list[str]:
        have = placement.get("status") or {}
        if all(have.get(field) == wanted.get(field) for field in STATUS_FIELDS):
            return []
        patch = {"status": {field: wanted.get(field) for field in STATUS_FIELDS}}
        await self._client.patch(PLACEMENT.Status, name, patch, namespace=namespace, patch_type=PatchType.MERGE)
        return [f"status: {wanted.get('numberOfSelectedClusters')} selected"]
