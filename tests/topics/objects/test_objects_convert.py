"""`apply` conversion: each kind's topic, key and type; YuniKorn's pod rules; errors that name the field."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from topics.names import TopicRole
from topics.objects.convert import CONVERTERS, ApplyContext, ConversionError, NotApplicable, convert, resource_converter

NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
OCM = "cluster.open-cluster-management.io"
S, C, T = TopicRole.SUBMISSIONS, TopicRole.CLUSTER_STATUS, TopicRole.TAINTS
SET, BIND, SCORES = f"managedclusterset.{OCM}", "managedclustersetbinding", "addonplacementscore"


def ctx(*, delete: bool = False, namespace: str = "default") -> ApplyContext:
    return ApplyContext(namespace=namespace, time=NOW, delete=delete)


def obj(api_version: str, kind: str, name: str, namespace: str | None = None, **rest: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **rest}


CLUSTER = obj(f"{OCM}/v1", "ManagedCluster", "cluster1", status={"allocatable": {"cpu": "8"}})
CLUSTER_SET = obj(f"{OCM}/v1beta2", "ManagedClusterSet", "prod")
BINDING = obj(f"{OCM}/v1beta2", "ManagedClusterSetBinding", "prod", "apps", spec={"clusterSet": "prod"})
SCORE = obj(
    f"{OCM}/v1alpha1", "AddOnPlacementScore", "usage", "cluster1", status={"scores": [{"name": "a", "value": 1}]}
)
PLACEMENT = obj(f"{OCM}/v1beta1", "Placement", "web", "apps", spec={"numberOfClusters": 2})
RULE = obj("core.hybridapp.io/v1alpha1", "PlacementRule", "db", "apps", spec={"replicas": 1})
DEPLOYER = obj("core.hybridapp.io/v1alpha1", "Deployer", "kubevirt", "apps", spec={"type": "kubevirt"})
TAINTS = {
    "kind": "ClusterTaints",
    "metadata": {"name": "cluster3"},
    "spec": {"taints": [{"key": "m", "effect": "NoSelect"}]},
}
POD = obj("v1", "Pod", "sleep", "team", metadata=None) | {
    "metadata": {"name": "sleep", "namespace": "team", "labels": {"applicationId": "app-1"}},
    "spec": {"schedulerName": "yunikorn"},
}


@pytest.mark.parametrize(
    ("document", "delete", "role", "key", "wire_type", "label"),
    [
        (CLUSTER, False, C, "ManagedCluster/cluster1", "managedcluster.applied.v1", f"managedcluster.{OCM}/cluster1"),
        (CLUSTER, True, C, "ManagedCluster/cluster1", None, f"managedcluster.{OCM}/cluster1"),
        (CLUSTER_SET, False, C, "ManagedClusterSet/prod", "managedclusterset.applied.v1", f"{SET}/prod"),
        (BINDING, False, C, "ManagedClusterSetBinding/apps/prod", f"{BIND}.applied.v1", f"{BIND}.{OCM}/prod"),
        (SCORE, False, C, "AddOnPlacementScore/cluster1/usage", f"{SCORES}.applied.v1", f"{SCORES}.{OCM}/usage"),
        (DEPLOYER, True, C, "Deployer/apps/kubevirt", None, "deployer.core.hybridapp.io/kubevirt"),
        (PLACEMENT, False, S, "Placement/apps/web", "placement.applied.v1", f"placement.{OCM}/web"),
        (PLACEMENT, True, S, "Placement/apps/web", "placement.deleted.v1", f"placement.{OCM}/web"),
        (RULE, False, S, "PlacementRule/apps/db", "placementrule.applied.v1", "placementrule.core.hybridapp.io/db"),
        (RULE, True, S, "PlacementRule/apps/db", "placementrule.deleted.v1", "placementrule.core.hybridapp.io/db"),
        (TAINTS, False, T, "cluster3", "cluster.taints.updated.v1", "clustertaints/cluster3"),
        (TAINTS, True, T, "cluster3", None, "clustertaints/cluster3"),
        (POD, False, S, "Application/default", "application.submitted.v1", "pod/sleep"),
        (POD, True, S, "Application/default", "application.completed.v1", "pod/sleep"),
    ],
)  # fmt: skip
def test_each_kind_becomes_its_event_on_its_topic_with_its_key(
    document: dict[str, Any], delete: bool, role: TopicRole, key: str, wire_type: str | None, label: str
) -> None:
    [record] = convert(document, ctx(delete=delete))
    assert (record.role, record.key, record.label) == (role, key, label)
    if wire_type is None:
        assert record.value is None, "a delete on a compacted topic is a tombstone"
        return
    assert record.value is not None
    assert (record.value["type"], record.value["subject"], record.value["time"]) == (
        wire_type,
        key,
        "2026-11-23T10:00:00Z",
    )


def test_a_namespaced_object_without_namespace_gets_the_command_lines_and_sends_it() -> None:
    document = obj(f"{OCM}/v1beta1", "Placement", "web", spec={})
    [record] = convert(document, ctx(namespace="team-a"))
    assert record.key == "Placement/team-a/web"
    assert record.value is not None and record.value["data"]["metadata"]["namespace"] == "team-a"


def test_converting_twice_gives_the_same_record_and_another_time_another_id() -> None:
    first, again = convert(PLACEMENT, ctx()), convert(PLACEMENT, ctx())
    later = convert(PLACEMENT, ApplyContext(namespace="default", time=datetime(2026, 11, 24, tzinfo=UTC)))
    assert first == again
    assert first[0].value is not None and later[0].value is not None
    assert first[0].value["id"] != later[0].value["id"]


def test_a_resource_kind_is_sent_only_when_named() -> None:
    vm = obj("kubevirt.io/v1", "VirtualMachine", "vm1", "apps")
    with pytest.raises(ConversionError, match="'VirtualMachine' is not in the contract"):
        convert(vm, ctx())
    [record] = convert(vm, ctx(), {**CONVERTERS, "VirtualMachine": resource_converter("VirtualMachine")})
    assert record.value is not None
    assert (record.key, record.value["type"]) == ("VirtualMachine/apps/vm1", "resource.applied.v1")


def pod(
    labels: dict[str, str],
    annotations: dict[str, str],
    *,
    namespace: str | None = "team",
    scheduler: str | None = "yunikorn",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "labels": labels, "annotations": annotations}
    if namespace is not None:
        meta["namespace"] = namespace
    spec = {} if scheduler is None else {"schedulerName": scheduler}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


APP, QUEUE, USER = "yunikorn.apache.org/app-id", "yunikorn.apache.org/queue", "yunikorn.apache.org/user.info"


def placement_with(**spec: Any) -> dict[str, Any]:
    return obj(f"{OCM}/v1beta1", "Placement", "web", "apps", spec=spec)


@pytest.mark.parametrize(
    ("document", "app_id", "queue", "user", "groups", "namespace_tag"),
    [
        # application id: canonical label, then annotation, then applicationId, then spark-app-selector, else generated
        (pod({APP: "a", "applicationId": "b"}, {APP: "c"}), "a", "", "nobody", [], "team"),
        (pod({"applicationId": "b"}, {APP: "c"}), "c", "", "nobody", [], "team"),
        (pod({"applicationId": "b", "spark-app-selector": "s"}, {}), "b", "", "nobody", [], "team"),
        (pod({"spark-app-selector": "s"}, {}), "s", "", "nobody", [], "team"),
        (pod({}, {}), "yunikorn-team-autogen", "", "nobody", [], "team"),
        (pod({}, {}, namespace=None), "yunikorn-default-autogen", "", "nobody", [], "default"),
        # queue: canonical label, then annotation, then the queue label
        (pod({"applicationId": "a", QUEUE: "root.x", "queue": "z"}, {QUEUE: "root.y"}), "a", "root.x", "nobody", [], "team"),  # noqa: E501
        (pod({"applicationId": "a", "queue": "root.z"}, {QUEUE: "root.y"}), "a", "root.y", "nobody", [], "team"),
        (pod({"applicationId": "a", "queue": "root.z"}, {}), "a", "root.z", "nobody", [], "team"),
        # user info: JSON annotation; broken or empty user falls back to nobody
        (pod({"applicationId": "a"}, {USER: '{"user": "alice", "groups": ["dev", "x"]}'}), "a", "", "alice", ["dev", "x"], "team"),  # noqa: E501
        (pod({"applicationId": "a"}, {USER: '{"user": "", "groups": ["dev"]}'}), "a", "", "nobody", ["dev"], "team"),
        (pod({"applicationId": "a"}, {USER: "not json"}), "a", "", "nobody", [], "team"),
        # without schedulerName the admission controller would route a pod that names its application
        (pod({"applicationId": "a"}, {}, scheduler=None), "a", "", "nobody", [], "team"),
    ],
)  # fmt: skip
def test_pods_become_submissions_by_the_shims_rules(
    document: dict[str, Any], app_id: str, queue: str, user: str, groups: list[str], namespace_tag: str
) -> None:
    [record] = convert(document, ctx())
    assert record.value is not None
    assert record.value["data"] == {
        "applicationId": app_id,
        "partition": "default",
        "user": user,
        "groups": groups,
        "queue": queue,
        "tags": {"namespace": namespace_tag},
    }


@pytest.mark.parametrize(
    ("kind", "api_version", "template_path"),
    [
        ("Deployment", "apps/v1", ("spec", "template")),
        ("Job", "batch/v1", ("spec", "template")),
        ("CronJob", "batch/v1", ("spec", "jobTemplate", "spec", "template")),
        ("StatefulSet", "apps/v1", ("spec", "template")),
    ],
)
def test_a_workloads_pod_template_is_submitted_in_the_workloads_namespace(
    kind: str, api_version: str, template_path: tuple[str, ...]
) -> None:
    template: dict[str, Any] = {
        "metadata": {"labels": {"applicationId": "w", "queue": "root.q"}},
        "spec": {"schedulerName": "yunikorn"},
    }
    for step in reversed(template_path):
        template = {step: template}
    document = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "ops"}, **template}
    [record] = convert(document, ctx())
    assert record.value is not None
    data = record.value["data"]
    assert (data["applicationId"], data["queue"], data["tags"]) == ("w", "root.q", {"namespace": "ops"})
    assert record.label == f"{kind.lower()}.{api_version.split('/', maxsplit=1)[0]}/w"


@pytest.mark.parametrize(
    ("document", "error", "message"),
    [
        ([1, 2], ConversionError, "expected a Kubernetes object"),
        ({"metadata": {"name": "x"}}, ConversionError, "kind: required"),
        ({"kind": "Widget", "metadata": {"name": "x"}}, ConversionError, "'Widget' is not in the contract"),
        ({"kind": "Placement", "spec": {}}, ConversionError, "metadata.name: required"),
        (obj("apps.open-cluster-management.io/v1", "PlacementRule", "r", "apps"), ConversionError, "core.hybridapp.io"),
        (placement_with(numberOfClusters="two"), ConversionError, "spec.numberOfClusters"),
        (placement_with(prioritizerPolicy={"configurations": [{"weight": 2**31}]}), ConversionError, "weight"),
        (obj(f"{OCM}/v1beta2", "ManagedClusterSetBinding", "b", "apps", spec={}), ConversionError, "spec.clusterSet"),
        ({"partitions": [{"name": "default"}]}, NotApplicable, "queue configuration"),
        (pod({"applicationId": "a"}, {}, scheduler="default-scheduler"), NotApplicable, "'default-scheduler'"),
        (pod({}, {}, scheduler=None), NotApplicable, "no schedulerName and no application id"),
    ],
)  # fmt: skip
def test_a_document_that_cannot_be_sent_says_why(document: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as raised:
        convert(document, ctx())
    assert raised.type is error
