"""YuniKorn's Kubernetes shim rules: which application a pod belongs to, and the queue, user and tags it asks for.

The shim reads the application id from, in order, the label `yunikorn.apache.org/app-id`, the annotation of the
same name, the label `applicationId` and Spark's `spark-app-selector` label; without any it generates
`yunikorn-<namespace>-autogen`. The queue comes from the label `yunikorn.apache.org/queue`, then the annotation,
then the label `queue`; none leaves it to the placement rules. The user and groups are the JSON annotation
`yunikorn.apache.org/user.info` (`{"user": ..., "groups": [...]}`), `nobody` when absent, unreadable or empty.
Every application is tagged with its namespace (`default` when the pod has none), which the `tag` placement rule
reads, and belongs to the `default` partition.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = [
    "DEFAULT_USER",
    "SCHEDULER_NAME",
    "WORKLOAD_TEMPLATES",
    "YuniKornPod",
    "pod_of",
    "submission_of",
]

SCHEDULER_NAME = "yunikorn"
DEFAULT_USER = "nobody"
DEFAULT_NAMESPACE = "default"
DEFAULT_PARTITION = "default"
_DOMAIN = "yunikorn.apache.org/"
_APP_ID_LABELS_AFTER_ANNOTATION = ("applicationId", "spark-app-selector")
_USER_INFO = _DOMAIN + "user.info"
_UNIQUE_AUTOGEN = "-uniqueautogen"

WORKLOAD_TEMPLATES: dict[str, tuple[str, ...]] = {
    "Pod": (),
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
"""Where each workload kind keeps the pod it creates (a Pod is its own)."""


class YuniKornPod:
    """The parts of a pod (or a workload's pod template) the shim reads."""

    def __init__(
        self, namespace: str, labels: dict[str, str], annotations: dict[str, str], spec: dict[str, Any], uid: str = ""
    ) -> None:
        self.namespace = namespace or DEFAULT_NAMESPACE
        self.uid = uid
        self.labels = labels
        self.annotations = annotations
        self.spec = spec

    @property
    def scheduler_name(self) -> str:
        """`spec.schedulerName`, empty when unset."""
        value = self.spec.get("schedulerName")
        return value if isinstance(value, str) else ""

    @property
    def application_id(self) -> str:
        """The shim's application id: explicit labels and annotation first, a generated id otherwise."""
        app_id = (
            self.labels.get(_DOMAIN + "app-id")
            or self.annotations.get(_DOMAIN + "app-id")
            or next((self.labels[k] for k in _APP_ID_LABELS_AFTER_ANNOTATION if self.labels.get(k)), "")
        )
        if app_id.endswith(_UNIQUE_AUTOGEN) and self.uid:  # the admission controller's stand-in for the pod uid
            app_id = f"{app_id.removesuffix(_UNIQUE_AUTOGEN)}-{self.uid}"
        return app_id or f"yunikorn-{self.namespace}-autogen"[:63]

    @property
    def names_an_application(self) -> bool:
        """Whether a label or annotation names the application (what YuniKorn's admission controller leaves)."""
        return bool(
            self.labels.get(_DOMAIN + "app-id")
            or self.annotations.get(_DOMAIN + "app-id")
            or any(self.labels.get(k) for k in _APP_ID_LABELS_AFTER_ANNOTATION)
        )

    @property
    def queue(self) -> str:
        """The requested queue; empty leaves it to the placement rules."""
        return (
            self.labels.get(_DOMAIN + "queue")
            or self.annotations.get(_DOMAIN + "queue")
            or self.labels.get("queue", "")
        )

    @property
    def user(self) -> tuple[str, list[str]]:
        """User and groups from the user-info annotation; `nobody` without groups when it is absent or broken."""
        raw = self.annotations.get(_USER_INFO)
        if not raw:
            return DEFAULT_USER, []
        try:
            info = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return DEFAULT_USER, []
        if not isinstance(info, dict):
            return DEFAULT_USER, []
        user = info.get("user") if isinstance(info.get("user"), str) else ""
        groups = info.get("groups")
        group_list = [g for g in groups if isinstance(g, str)] if isinstance(groups, list) else []
        return user or DEFAULT_USER, group_list


def _dig(body: Any, path: tuple[str, ...]) -> Any:
    for step in path:
        body = body.get(step) if isinstance(body, dict) else None
    return body


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def pod_of(body: dict[str, Any], kind: str, namespace: str) -> YuniKornPod | None:
    """The pod a Pod or workload document describes; None when the workload has no pod template.

    A template's pods live in the workload's namespace.
    """
    template = _dig(body, WORKLOAD_TEMPLATES[kind]) if WORKLOAD_TEMPLATES[kind] else body
    if not isinstance(template, dict):
        return None
    meta = template.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    spec = template.get("spec")
    uid = meta.get("uid")
    return YuniKornPod(
        namespace,
        _strings(meta.get("labels")),
        _strings(meta.get("annotations")),
        spec if isinstance(spec, dict) else {},
        uid if isinstance(uid, str) else "",
    )


def submission_of(pod: YuniKornPod) -> dict[str, Any]:
    """`application.submitted` data for the pod's application."""
    user, groups = pod.user
    return {
        "applicationId": pod.application_id,
        "partition": DEFAULT_PARTITION,
        "user": user,
        "groups": groups,
        "queue": pod.queue,
        "tags": {"namespace": pod.namespace},
    }
