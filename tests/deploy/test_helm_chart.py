"""deploy/helm/placement-stream renders with the real `helm template` (scripts/tools.sh builds Helm once into the
cache), every manifest validates against the Kubernetes API schemas (kubernetes-validate, strict: unknown fields
are errors) and the ServiceMonitor against the Prometheus operator's CRD schema, and the pods it describes are
what the processor needs: static member ids, probes it answers, settings it accepts, secrets as files."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate
import pytest
import yaml
from deploy_support import CHART, ROOT, NodeCheck, helm_template, render

from streams.http import HealthServer, http_get
from streams.metrics import Metrics
from streams.queueconfig import check_config
from streams.settings import KafkaSettings, Settings, TopicNames, load_settings

VALUES = {
    "defaults": [],
    "strimzi-scram": ["-f", str(CHART / "ci" / "strimzi-scram-values.yaml")],
    "mtls": ["-f", str(CHART / "ci" / "mtls-values.yaml")],
}
_FLOOR = (1, 25)  # the chart's kubeVersion
KUBERNETES_VERSIONS = (
    min(
        (v for v in kubernetes_validate.utils.all_versions() if tuple(map(int, v.split(".")[:2])) >= _FLOOR),
        key=lambda v: tuple(map(int, v.split("."))),
    ),
    kubernetes_validate.utils.latest_version(),
)
"""The oldest Kubernetes the chart supports (or the oldest the package has schemas of, if it dropped that one) and
the newest."""
POD = "placement-placement-stream-0"


@pytest.fixture(scope="module")
def rendered(helm: Path) -> dict[str, list[dict[str, Any]]]:
    return {name: render(helm, *arguments) for name, arguments in VALUES.items()}


def _one(documents: list[dict[str, Any]], kind: str, suffix: str = "") -> dict[str, Any]:
    (found,) = [d for d in documents if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    return found


def _container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    (container,) = _one(documents, "StatefulSet")["spec"]["template"]["spec"]["containers"]
    return container


def _environment(documents: list[dict[str, Any]]) -> dict[str, str]:
    """The container's variables as the pod `POD` sees them (the downward API filled in)."""
    env = {}
    for item in _container(documents)["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            assert item["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}, item
            env[item["name"]] = POD
    # `$(NAME)` of a variable defined before, as Kubernetes expands it
    return {name: re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), value) for name, value in env.items()}


def _kubernetes_errors(document: dict[str, Any], version: str) -> list[str]:
    try:
        kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'/'.join(map(str, exc.absolute_path))}: {exc.message}"]
    return []


def _settings_variables() -> set[str]:
    """Every PLACEMENT_* variable the settings read."""
    names = set()
    for field, info in Settings.model_fields.items():
        if info.annotation in (KafkaSettings, TopicNames):
            names |= {f"PLACEMENT_{field.upper()}__{inner.upper()}" for inner in info.annotation.model_fields}
        else:
            names.add(f"PLACEMENT_{field.upper()}")
    return names


@pytest.mark.parametrize("values", list(VALUES))
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_follows_the_kubernetes_schemas(
    rendered: dict[str, list[dict[str, Any]]], node_check: NodeCheck, values: str, version: str
) -> None:
    documents = rendered[values]
    custom = [d for d in documents if d["apiVersion"].startswith("monitoring.coreos.com/")]
    builtin = [d for d in documents if d not in custom]
    assert {d["kind"] for d in builtin} >= {"StatefulSet", "Service", "ServiceAccount"}
    assert [(d["kind"], _kubernetes_errors(d, version)) for d in builtin] == [(d["kind"], []) for d in builtin]
    if custom:
        assert [a["errors"] for a in node_check(resources=custom)["resources"]] == [[]] * len(custom)


def test_kinds_follow_the_values(rendered: dict[str, list[dict[str, Any]]]) -> None:
    kinds = {name: sorted(d["kind"] for d in documents) for name, documents in rendered.items()}
    common = ["Service", "Service", "ServiceAccount", "StatefulSet"]
    assert kinds["defaults"] == sorted([*common, "ConfigMap", "PodDisruptionBudget"])
    monitoring = ["PrometheusRule", "ServiceMonitor"]
    assert kinds["strimzi-scram"] == sorted([*common, "ConfigMap", "PodDisruptionBudget", *monitoring])
    assert kinds["mtls"] == sorted(common)  # YuniKorn's ConfigMap, no budget


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "template", "spec", "containers", 0, "ports", 0, "containerPort"), "http"),
        (("spec", "template", "spec", "containers", 0, "livenessprobe"), {}),
        (("spec", "podManagementPolicy"), ["Parallel"]),
    ],
    ids=["port-not-a-number", "misspelt-field", "policy-not-a-string"],
)
def test_the_schema_check_catches_broken_manifests(
    rendered: dict[str, list[dict[str, Any]]], path: tuple[Any, ...], value: object
) -> None:
    """Not vacuous: each edit makes the API server refuse the StatefulSet."""
    broken: Any = copy.deepcopy(_one(rendered["defaults"], "StatefulSet"))
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert _kubernetes_errors(broken, KUBERNETES_VERSIONS[-1])


@pytest.mark.parametrize("values", list(VALUES))
def test_the_pods_environment_is_settings_the_processor_accepts(
    rendered: dict[str, list[dict[str, Any]]], values: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every variable the chart sets is one the settings read, and together they load without error."""
    env = _environment(rendered[values])
    assert sorted(n for n in env if n not in _settings_variables()) == []
    monkeypatch.chdir(tmp_path)  # no .env
    for name in [n for n in os.environ if n.startswith("PLACEMENT_") or n == "KAFKA_BOOTSTRAP_SERVERS"]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    assert settings.kafka.group_instance_id == POD  # static membership by pod name
    assert settings.http_host == "0.0.0.0"
    assert settings.queue_config is not None


def test_statefulset_pods_are_static_members_named_by_the_headless_service(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    documents = rendered["defaults"]
    statefulset = _one(documents, "StatefulSet")
    headless = _one(documents, "Service", "-headless")
    assert statefulset["spec"]["serviceName"] == headless["metadata"]["name"]
    assert headless["spec"]["clusterIP"] == "None"
    (member,) = [e for e in _container(documents)["env"] if e["name"] == "PLACEMENT_KAFKA__GROUP_INSTANCE_ID"]
    assert member["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert f"{statefulset['metadata']['name']}-0" == POD


def test_each_pod_advertises_its_stable_name_for_the_other_replicas(rendered: dict[str, list[dict[str, Any]]]) -> None:
    documents = rendered["defaults"]
    headless = _one(documents, "Service", "-headless")["metadata"]["name"]
    port = _container(documents)["ports"][0]["containerPort"]
    advertised = _environment(documents)["PLACEMENT_ADVERTISED_URL"]
    assert advertised == f"http://{POD}.{headless}.placement.svc:{port}"
    assert Settings(advertised_url=advertised).advertised() == advertised


async def test_probes_ask_paths_the_processor_answers(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """The probes name /livez and /readyz on the port the processor listens on, and its HTTP server answers them
    (here alive and not ready: 200 and 503, where an unknown path is 404)."""
    container = _container(rendered["defaults"])
    (port,) = container["ports"]
    assert _environment(rendered["defaults"])["PLACEMENT_HTTP_PORT"] == str(port["containerPort"])
    server = HealthServer(Metrics(), alive=lambda: True, ready=lambda: False)
    bound = await server.start("127.0.0.1", 0)
    try:
        answers = {}
        for probe in ("livenessProbe", "readinessProbe"):
            get = container[probe]["httpGet"]
            assert get["port"] == port["name"]
            url = f"http://127.0.0.1:{bound}{get['path']}"
            answers[probe] = (await asyncio.to_thread(http_get, url, 5.0))[0]
    finally:
        await server.stop()
    assert answers == {"livenessProbe": 200, "readinessProbe": 503}


def test_runs_as_the_images_unprivileged_user_on_a_read_only_root(rendered: dict[str, list[dict[str, Any]]]) -> None:
    (user,) = re.findall(r"^USER (\d+):(\d+)$", (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    pod = _one(rendered["defaults"], "StatefulSet")["spec"]["template"]["spec"]
    assert (str(pod["securityContext"]["runAsUser"]), str(pod["securityContext"]["runAsGroup"])) == user
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False
    container = _container(rendered["defaults"])["securityContext"]
    assert container["readOnlyRootFilesystem"] is True
    assert container["allowPrivilegeEscalation"] is False
    assert container["capabilities"]["drop"] == ["ALL"]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            "strimzi-scram",
            {
                "PLACEMENT_KAFKA__SASL_PASSWORD_FILE": ("placement", "password"),
                "PLACEMENT_KAFKA__SSL_CA_FILE": ("my-cluster-cluster-ca-cert", "ca.crt"),
                "PLACEMENT_EXPLAIN_TOKEN_FILE": ("placement-explain", "token"),
            },
        ),
        (
            "mtls",
            {
                "PLACEMENT_KAFKA__SSL_CA_FILE": ("my-cluster-cluster-ca-cert", "ca.crt"),
                "PLACEMENT_KAFKA__SSL_CERT_FILE": ("placement", "user.crt"),
                "PLACEMENT_KAFKA__SSL_KEY_FILE": ("placement", "user.key"),
            },
        ),
        ("defaults", {}),
    ],
)
def test_secrets_are_files_where_the_settings_look(
    rendered: dict[str, list[dict[str, Any]]], values: str, expected: dict[str, tuple[str, str]]
) -> None:
    """Each *_FILE variable names a file of the projected secrets volume that holds that Secret's key; no secret
    value is in the environment."""
    documents = rendered[values]
    env = _environment(documents)
    assert {n for n in env if n.endswith("_FILE")} == set(expected)
    assert not [n for n in env if re.search("PASSWORD$|TOKEN$", n)]
    mounts = {m["name"]: m for m in _container(documents)["volumeMounts"]}
    volumes = {v["name"]: v for v in _one(documents, "StatefulSet")["spec"]["template"]["spec"]["volumes"]}
    if not expected:
        assert "secrets" not in mounts and "secrets" not in volumes
        return
    assert mounts["secrets"]["readOnly"] is True
    files = {
        item["path"]: (source["secret"]["name"], item["key"])
        for source in volumes["secrets"]["projected"]["sources"]
        for item in source["secret"]["items"]
    }
    for variable, secret in expected.items():
        path = PurePosixPath(env[variable])
        assert str(path.parent) == mounts["secrets"]["mountPath"]
        assert files[path.name] == secret


@pytest.mark.parametrize(
    ("values", "config_map"), [("defaults", "placement-placement-stream-queues"), ("mtls", "yunikorn-configs")]
)
def test_queue_configuration_is_mounted_where_the_setting_points(
    rendered: dict[str, list[dict[str, Any]]], values: str, config_map: str
) -> None:
    documents = rendered[values]
    path = PurePosixPath(_environment(documents)["PLACEMENT_QUEUE_CONFIG"])
    (mount,) = [m for m in _container(documents)["volumeMounts"] if m["mountPath"] == str(path.parent)]
    (volume,) = [
        v for v in _one(documents, "StatefulSet")["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]
    ]
    assert volume["configMap"]["name"] == config_map
    assert volume["configMap"]["items"] == [{"key": "queues.yaml", "path": path.name}]


def test_default_queue_configuration_is_valid(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the chart ships passes the processor's own check (`placement-stream check-config`)."""
    queues = tmp_path / "queues.yaml"
    queues.write_text(_one(rendered["defaults"], "ConfigMap")["data"]["queues.yaml"])
    assert check_config(queues) == 0, capsys.readouterr().err
    assert yaml.safe_load(queues.read_text())["partitions"][0]["name"] == "default"


def test_selectors_find_the_pods_and_the_service_monitor_the_metrics_port(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    documents = rendered["strimzi-scram"]
    statefulset = _one(documents, "StatefulSet")
    pod_labels = statefulset["spec"]["template"]["metadata"]["labels"]
    selectors = [
        statefulset["spec"]["selector"]["matchLabels"],
        _one(documents, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
    ]
    selectors += [service["spec"]["selector"] for service in documents if service["kind"] == "Service"]
    assert all(selector.items() <= pod_labels.items() for selector in selectors)
    metrics = _one(documents, "Service", "-metrics")
    monitor = _one(documents, "ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= metrics["metadata"]["labels"].items()
    assert (
        not monitor["spec"]["selector"]["matchLabels"].items()
        <= _one(documents, "Service", "-headless")["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in metrics["spec"]["ports"]} and endpoint["path"] == "/metrics"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert _one(documents, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--set", "env.PLACEMENT_KAFKA__GROUP_ID=other"], "env.PLACEMENT_KAFKA__GROUP_ID: the chart sets it"),
        (["--set", "env.PLACEMENT_KAFKA__SASL_PASSWORD=hunter2"], "secrets go in `secrets`"),
        (["--set", "secrets.saslpassword.secretName=placement"], "additional properties 'saslpassword' not allowed"),
        (["--set", "replicaCount=three"], "/replicaCount': got string, want integer"),
        (["--set", "kafka.securityProtocol=SASL_TLS"], "/kafka/securityProtocol"),
        (["--set", "queueConfig.queues="], "queueConfig.queues: a YuniKorn queue configuration"),
    ],
    ids=[
        "env-overrides-the-chart",
        "secret-in-env",
        "misspelt-secret",
        "replicas-not-a-number",
        "unknown-protocol",
        "no-queues",
    ],
)
def test_values_the_chart_cannot_honour_are_refused(helm: Path, arguments: list[str], message: str) -> None:
    """By the chart's values.schema.json or its templates, with a message naming the value."""
    done = helm_template(helm, *arguments)
    assert done.returncode != 0
    assert message in done.stderr


def test_templates_read_only_values_that_exist() -> None:
    """A misspelt `.Values.x.y` renders as empty; every path the templates read is in values.yaml."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    read = set()
    for template in (CHART / "templates").iterdir():
        read |= set(re.findall(r"\.Values\.([A-Za-z][\w.]*)", template.read_text()))
    missing = []
    for path in sorted(read):
        node: Any = values
        for key in path.split("."):
            if not isinstance(node, dict) or key not in node:
                missing.append(path)
                break
            node = node[key]
    assert missing == []


def test_prometheus_rule_holds_the_alerts_file(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """The chart's PrometheusRule is deploy/prometheus/alerts.yaml (its files/alerts.yaml links there), not a copy
    that can drift; its schema check is in test_every_manifest_follows_the_kubernetes_schemas."""
    rule = _one(rendered["strimzi-scram"], "PrometheusRule")
    assert rule["spec"] == yaml.safe_load((ROOT / "deploy" / "prometheus" / "alerts.yaml").read_text())
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"


@pytest.mark.parametrize("values", list(VALUES))
def test_helm_lint_finds_nothing(helm: Path, values: str) -> None:
    """Helm's own checks, warnings counted as failures (--strict)."""
    done = subprocess.run(
        [str(helm), "lint", "--strict", str(CHART), *VALUES[values]], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout


def test_values_schema_names_every_value() -> None:
    """values.schema.json refuses unknown keys, so it must list every key values.yaml has (two levels down)."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    missing = [key for key in values if key not in schema["properties"]]
    for key, value in values.items():
        inner = schema["properties"].get(key, {}).get("properties")
        if isinstance(value, dict) and inner is not None:
            missing += [f"{key}.{k}" for k in value if k not in inner]
    assert missing == []


def test_chart_and_the_committed_strimzi_resources_agree(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """Installed as deploy/README.md says, the processor logs in as the KafkaUser made for it (whose Secret, named
    after it, holds the password), in the group its ACLs name, on topics with the chart's partition count."""
    strimzi = ROOT / "deploy" / "strimzi"
    users = {u["metadata"]["name"]: u for u in yaml.safe_load_all((strimzi / "kafka-users.yaml").read_text())}
    topics = list(yaml.safe_load_all((strimzi / "kafka-topics.yaml").read_text()))
    documents = rendered["strimzi-scram"]
    env = _environment(documents)
    processor = users[env["PLACEMENT_KAFKA__SASL_USERNAME"]]
    assert processor["metadata"]["labels"]["placement-stream/principal"] == "processor"
    groups = [
        a["resource"]["name"] for a in processor["spec"]["authorization"]["acls"] if a["resource"]["type"] == "group"
    ]
    assert groups == [env["PLACEMENT_KAFKA__GROUP_ID"]]
    volumes = _one(documents, "StatefulSet")["spec"]["template"]["spec"]["volumes"]
    (secrets,) = [v["projected"]["sources"] for v in volumes if v["name"] == "secrets"]
    password = PurePosixPath(env["PLACEMENT_KAFKA__SASL_PASSWORD_FILE"]).name
    (source,) = [s["secret"] for s in secrets if s["secret"]["items"][0]["path"] == password]
    assert (source["name"], source["items"][0]["key"]) == (processor["metadata"]["name"], "password")
    assert max(t["spec"]["partitions"] for t in topics) == int(env["PLACEMENT_KAFKA__TASK_PARTITIONS"])
