"""The deploy manifests sent to a real API server with server-side dry run (`dryRun=All`: validated, defaulted and
admitted as a create would be, then not stored): the KafkaTopics and KafkaUsers `placement-stream manifests
strimzi` renders, against Strimzi's CRDs (tests/deploy/crds/), and the chart's ServiceMonitor and
PrometheusRule, against the Prometheus operator's (fetched by localkube), all installed into the local API
server. Each is accepted and none is stored; a broken one of each kind is refused. The chart's built-in kinds
(StatefulSet, Service, ...) cannot be sent: the local API server serves CustomResourceDefinitions only."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from deploy_support import render, strimzi_manifests
from lightkube import ApiError, Client, KubeConfig
from lightkube.generic_resource import create_namespaced_resource

from localkube.crds import PROMETHEUS_OPERATOR, ensure_crds, install_crds, load_crds

pytestmark = pytest.mark.integration

STRIMZI_CRDS = Path(__file__).with_name("crds") / "strimzi-1.2.0"
NAMESPACE = "placement"
CHART_MONITORING = ["--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true"]


@pytest.fixture(scope="module")
def client(kubeconfig: Path) -> Iterator[Client]:
    """A client of the session's API server with Strimzi's and the Prometheus operator's CRDs installed."""
    install_crds(kubeconfig, load_crds([*sorted(STRIMZI_CRDS.glob("*.yaml")), *ensure_crds(PROMETHEUS_OPERATOR)]))
    client = Client(config=KubeConfig.from_file(kubeconfig))
    try:
        yield client
    finally:
        client.close()


def resource_of(body: dict[str, Any]) -> Any:
    group, version = body["apiVersion"].split("/")
    kind = body["kind"]
    return create_namespaced_resource(group, version, kind, f"{kind.lower()}s")


def dry_run(client: Client, body: dict[str, Any]) -> dict[str, Any]:
    """Create with `dryRun=All`; the object as the server would have stored it (refusals raise ApiError)."""
    created = client.create(resource_of(body).from_dict(body), namespace=NAMESPACE, dry_run=True)
    answer: dict[str, Any] = created.to_dict()
    return answer


def stored(client: Client, body: dict[str, Any]) -> bool:
    try:
        client.get(resource_of(body), body["metadata"]["name"], namespace=NAMESPACE)
    except ApiError as exc:
        if exc.status.code == 404:
            return False
        raise
    return True


def pruned(sent: Any, kept: Any, at: str = "") -> list[str]:
    """The fields sent that the server dropped or changed (a structural schema silently prunes unknown fields, so an
    accepted manifest could still lose a misspelt one); fields the server added (defaults) do not count."""
    if isinstance(sent, dict) and isinstance(kept, dict):
        return [p for key, value in sent.items() for p in pruned(value, kept.get(key), f"{at}.{key}")]
    if isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        return [p for index, pair in enumerate(zip(sent, kept, strict=True)) for p in pruned(*pair, f"{at}.{index}")]
    return [] if sent == kept else [at]


def strimzi(tmp_path: Path) -> list[dict[str, Any]]:
    kinds = strimzi_manifests(tmp_path, "--advisor", "veto", "--inventory-advisor", "cpu")
    return [*kinds["KafkaTopic"], *kinds["KafkaUser"]]


def monitoring(helm: Path) -> list[dict[str, Any]]:
    return [d for d in render(helm, *CHART_MONITORING) if d["kind"] in {"ServiceMonitor", "PrometheusRule"}]


def test_the_strimzi_manifests_pass_a_server_side_dry_run(client: Client, tmp_path: Path) -> None:
    manifests = strimzi(tmp_path)
    assert {m["kind"] for m in manifests} == {"KafkaTopic", "KafkaUser"}
    for body in manifests:
        answer = dry_run(client, body)
        assert pruned(body["spec"], answer["spec"]) == [], body["metadata"]["name"]
        assert not stored(client, body), "a dry run stores nothing"


def test_the_charts_service_monitor_and_prometheus_rule_pass_a_server_side_dry_run(client: Client, helm: Path) -> None:
    manifests = monitoring(helm)
    assert sorted(m["kind"] for m in manifests) == ["PrometheusRule", "ServiceMonitor"]
    for body in manifests:
        answer = dry_run(client, body)
        assert pruned(body["spec"], answer["spec"]) == [], body["kind"]
        assert not stored(client, body)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = body
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[last] = value

    return change


BROKEN = {
    "KafkaTopic": ("spec.partitions", "six"),
    "KafkaUser": ("spec.authentication.type", "password-less"),
    "ServiceMonitor": ("spec.endpoints", {"port": "metrics"}),
    "PrometheusRule": ("spec.groups", "alerts"),
}
"""One field per kind made wrong: a string for a count, a value outside an enum, an object for a list."""


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_manifest_is_refused(client: Client, tmp_path: Path, helm: Path, kind: str) -> None:
    source = strimzi(tmp_path) if kind.startswith("Kafka") else monitoring(helm)
    body = copy.deepcopy(next(m for m in source if m["kind"] == kind))
    path, value = BROKEN[kind]
    _set(path, value)(body)
    with pytest.raises(ApiError) as refused:
        dry_run(client, body)
    assert refused.value.status.code == 422, refused.value.status.message
    assert path.split(".")[-1] in str(refused.value.status.message)


def test_the_charts_built_in_kinds_cannot_be_dry_run_here(client: Client, helm: Path) -> None:
    """What the docs say: a StatefulSet is refused because no apps/v1 is served, not because it is wrong."""
    (statefulset,) = [d for d in render(helm) if d["kind"] == "StatefulSet"]
    with pytest.raises(httpx2.HTTPStatusError) as refused:  # a plain 404 page, not a Kubernetes Status
        dry_run(client, statefulset)
    assert refused.value.response.status_code == 404
