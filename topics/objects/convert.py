"""Kubernetes documents to contract records: one converter per kind, in an explicit registry.

Conversion is pure (no I/O): the same document, namespace and time give the same records, so `--dry-run` output
is stable and replays like the records `apply` publishes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from topics.codec import decode_event
from topics.errors import ContractError
from topics.events import EVENT_KINDS, versioned
from topics.names import TopicRole
from topics.objects.yunikorn import SCHEDULER_NAME, WORKLOAD_TEMPLATES, pod_of, submission_of

__all__ = [
    "APPLY_SOURCE",
    "CONVERTERS",
    "ApplyContext",
    "ConversionError",
    "Converter",
    "NotApplicable",
    "Outgoing",
    "convert",
    "resource_converter",
]

APPLY_SOURCE = "/placement-stream/apply"
OCM = "cluster.open-cluster-management.io"
HYBRID = "core.hybridapp.io"


class ConversionError(ValueError):
    """The document cannot become a valid record; the message names the field and the problem."""


class NotApplicable(ConversionError):
    """The document is fine but has nothing to publish (e.g. a pod YuniKorn does not schedule)."""


@dataclass(frozen=True, slots=True)
class ApplyContext:
    """What every conversion needs besides the document."""

    namespace: str
    """For namespaced objects that do not name one, as `kubectl -n`."""
    time: datetime
    delete: bool = False
    source: str = APPLY_SOURCE


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One record to publish: topic role, key and value (a CloudEvent, or None for a tombstone)."""

    role: TopicRole
    key: str
    value: dict[str, Any] | None
    label: str
    """How the report names the object, as kubectl does: `placement.cluster.open-cluster-management.io/web`."""
    note: str = ""


Converter = Callable[[dict[str, Any], ApplyContext], list[Outgoing]]


def _group(body: Mapping[str, Any], default: str) -> str:
    api_version = body.get("apiVersion")
    if not isinstance(api_version, str) or not api_version:
        return default
    return api_version.rpartition("/")[0]


def _label(kind: str, group: str, name: str) -> str:
    return f"{kind.lower()}.{group}/{name}" if group else f"{kind.lower()}/{name}"


def _name(body: Mapping[str, Any]) -> str:
    meta = body.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise ConversionError("metadata.name: required")
    if "/" in name:
        raise ConversionError(f"metadata.name: {name!r} may not contain '/'")
    return name


def _namespace(body: Mapping[str, Any], ctx: ApplyContext) -> str:
    meta = body.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    if namespace is None or namespace == "":
        return ctx.namespace
    if not isinstance(namespace, str) or "/" in namespace:
        raise ConversionError(f"metadata.namespace: {namespace!r} is not a namespace name")
    return namespace


def _event(kind_name: str, key: str, data: Any, ctx: ApplyContext) -> dict[str, Any]:
    """A CloudEvent whose id is a digest of what it says, so converting a document twice gives the same record."""
    kind = EVENT_KINDS[kind_name]
    wire_type = versioned(kind.name)
    time = ctx.time.isoformat().replace("+00:00", "Z")
    digest = hashlib.sha256(orjson.dumps([wire_type, key, time, data], option=orjson.OPT_SORT_KEYS)).hexdigest()
    value = {
        "specversion": "1.0",
        "id": f"apply-{digest[:32]}",
        "source": ctx.source,
        "type": wire_type,
        "time": time,
        "subject": key,
        "datacontenttype": "application/json",
        "data": data,
    }
    try:  # the processor's own check, so what apply accepts is never dead-lettered for its shape
        decode_event(orjson.dumps(value), kind.topic)
    except (ContractError, orjson.JSONEncodeError) as exc:
        raise ConversionError(str(exc)) from exc
    return value


def _with_namespace(body: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """The object as sent: the namespace filled in when the document left it to the command line."""
    if namespace is None:
        return body
    meta = dict(body.get("metadata") or {})
    meta["namespace"] = namespace
    return {**body, "metadata": meta}


@dataclass(frozen=True, slots=True)
class ObjectConverter:
    """A contract object kind: `<stem>.applied` with the object, `<stem>.deleted` (or a tombstone) to delete.

    On the compacted cluster-status topic a delete is a tombstone, which also lets compaction drop the key; on
    the submissions topic it is a `.deleted` event naming the object.
    """

    kind: str
    stem: str
    group: str
    namespaced: bool
    key_prefix: str = ""

    def __call__(self, body: dict[str, Any], ctx: ApplyContext) -> list[Outgoing]:
        group = _group(body, self.group)
        if group != self.group:
            raise ConversionError(
                f"apiVersion: {self.kind} of group {group!r} is not in the contract (only {self.group})"
            )
        name = _name(body)
        namespace = _namespace(body, ctx) if self.namespaced else None
        prefix = self.key_prefix or self.kind
        key = f"{prefix}/{namespace}/{name}" if namespace is not None else f"{prefix}/{name}"
        label = _label(self.kind, group, name)
        role = EVENT_KINDS[f"{self.stem}.applied"].topic
        if not ctx.delete:
            data = _with_namespace(body, namespace)
            return [Outgoing(role, key, _event(f"{self.stem}.applied", key, data, ctx), label)]
        if role is TopicRole.CLUSTER_STATUS:
            return [Outgoing(role, key, None, label)]
        meta = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
        gone = {"kind": self.kind, "metadata": meta}
        if isinstance(body.get("apiVersion"), str):
            gone = {"apiVersion": body["apiVersion"], **gone}
        return [Outgoing(role, key, _event(f"{self.stem}.deleted", key, gone, ctx), label)]


def _taints(body: dict[str, Any], ctx: ApplyContext) -> list[Outgoing]:
    """`kind: ClusterTaints`, `metadata.name` = the cluster, `spec.taints` = its full taint set (the
    `cluster.taints.updated` event as a document); deleting it clears the set with a tombstone."""
    cluster = _name(body)
    label = _label("ClusterTaints", _group(body, ""), cluster)
    if ctx.delete:
        return [Outgoing(TopicRole.TAINTS, cluster, None, label)]
    spec = body.get("spec")
    data = {"cluster": cluster, "taints": (spec.get("taints") if isinstance(spec, dict) else None) or []}
    return [Outgoing(TopicRole.TAINTS, cluster, _event("cluster.taints.updated", cluster, data, ctx), label)]


_WORKLOAD_GROUPS = {"Pod": "", "Job": "batch", "CronJob": "batch"}


def _workload(kind: str) -> Converter:
    expected = _WORKLOAD_GROUPS.get(kind, "apps")

    def convert_workload(body: dict[str, Any], ctx: ApplyContext) -> list[Outgoing]:
        """A pod, or a workload's pod template, as YuniKorn's shim sees it: one application submission (or its
        completion when deleted), keyed by the application's partition."""
        group = _group(body, expected)
        if group != expected:
            raise ConversionError(f"apiVersion: {kind} of group {group!r} is not a Kubernetes workload")
        name = _name(body)
        pod = pod_of(body, kind, _namespace(body, ctx))
        if pod is None:
            raise ConversionError(f"{'.'.join(WORKLOAD_TEMPLATES[kind])}: {kind} has no pod template")
        scheduler = pod.scheduler_name
        if scheduler != SCHEDULER_NAME and (scheduler or not pod.names_an_application):
            why = f"spec.schedulerName is {scheduler!r}" if scheduler else "no schedulerName and no application id"
            raise NotApplicable(f"not scheduled by YuniKorn ({why}); nothing sent")
        submitted = submission_of(pod)
        key = f"Application/{submitted['partition']}"
        label = _label(kind, group, name)
        note = f"application {submitted['applicationId']}"
        if ctx.delete:
            data = {"applicationId": submitted["applicationId"], "partition": submitted["partition"]}
            return [Outgoing(TopicRole.SUBMISSIONS, key, _event("application.completed", key, data, ctx), label, note)]
        value = _event("application.submitted", key, submitted, ctx)
        return [Outgoing(TopicRole.SUBMISSIONS, key, value, label, note)]

    return convert_workload


def resource_converter(kind: str) -> Converter:
    """Any other inventory kind (a Deployer's placement target, e.g. VirtualMachine): `resource.applied` with the
    object, key `<Kind>/<namespace>/<name>`; only for kinds the user names, so a stray manifest is not sent."""

    def convert_resource(body: dict[str, Any], ctx: ApplyContext) -> list[Outgoing]:
        name, namespace = _name(body), _namespace(body, ctx)
        key = f"{kind}/{namespace}/{name}"
        label = _label(kind, _group(body, ""), name)
        if ctx.delete:
            return [Outgoing(TopicRole.CLUSTER_STATUS, key, None, label)]
        value = _event("resource.applied", key, _with_namespace(body, namespace), ctx)
        return [Outgoing(TopicRole.CLUSTER_STATUS, key, value, label)]

    return convert_resource


CONVERTERS: dict[str, Converter] = {
    "ManagedCluster": ObjectConverter("ManagedCluster", "managedcluster", OCM, namespaced=False),
    "ManagedClusterSet": ObjectConverter("ManagedClusterSet", "managedclusterset", OCM, namespaced=False),
    "ManagedClusterSetBinding": ObjectConverter("ManagedClusterSetBinding", "managedclustersetbinding", OCM, True),
    "AddOnPlacementScore": ObjectConverter("AddOnPlacementScore", "addonplacementscore", OCM, namespaced=True),
    "Placement": ObjectConverter("Placement", "placement", OCM, namespaced=True),
    "Deployer": ObjectConverter("Deployer", "deployer", HYBRID, namespaced=True),
    "PlacementRule": ObjectConverter("PlacementRule", "placementrule", HYBRID, namespaced=True),
    "ClusterTaints": _taints,
    **{kind: _workload(kind) for kind in WORKLOAD_TEMPLATES},
}
"""Every kind `apply` knows, by `kind`; `resource_converter` adds the inventory kinds given on the command line."""


def convert(body: Any, ctx: ApplyContext, converters: Mapping[str, Converter] = CONVERTERS) -> list[Outgoing]:
    """The records of one document.

    Raises:
        NotApplicable: nothing to send for this document.
        ConversionError: the document is not a valid object of a known kind; the message says which field.
    """
    if not isinstance(body, dict):
        raise ConversionError(f"expected a Kubernetes object, got {type(body).__name__}")
    kind = body.get("kind")
    if not isinstance(kind, str) or not kind:
        if "partitions" in body:
            raise NotApplicable("a YuniKorn queue configuration: give it to the processor (--queue-config)")
        raise ConversionError("kind: required")
    converter = converters.get(kind)
    if converter is None:
        known = ", ".join(sorted(converters))
        raise ConversionError(f"kind: {kind!r} is not in the contract (known: {known}; see --resource-kind)")
    return converter(body, ctx)
