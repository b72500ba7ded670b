"""`placement-stream manifests strimzi`: KafkaTopics shaped as the processor creates its topics and KafkaUsers holding
exactly the ACLs of docs/security.md, valid against Strimzi's CRD schemas (the compiled validators of
@kubernetes-models/strimzi-kafka-operator, tests/deploy/node/package.json)."""

from __future__ import annotations

import copy
import html
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import ROOT, NodeCheck, strimzi_manifests

from streams.cli import main
from streams.manifests import API_VERSIONS
from streams.settings import TopicNames
from topics.names import TOPIC_SPECS, TopicRole

STRIMZI_DIR = ROOT / "deploy" / "strimzi"
Acl = tuple[str, str, str, str]  # resource type, name, pattern, operation (Kafka's words, as docs/security.md)


def _users(kinds: dict[str, list[dict[str, Any]]]) -> dict[str, set[Acl]]:
    """Each KafkaUser's rules expanded back to one ACL per operation."""
    kafka_types = {"topic": "Topic", "group": "Group", "transactionalId": "TransactionalId", "cluster": "Cluster"}
    found: dict[str, set[Acl]] = {}
    for user in kinds["KafkaUser"]:
        acls = found.setdefault(user["metadata"]["name"], set())
        for rule in user["spec"]["authorization"]["acls"]:
            resource = rule["resource"]
            pattern = {"literal": "LITERAL", "prefix": "PREFIXED"}[resource.get("patternType", "literal")]
            for operation in rule["operations"]:
                acls.add((kafka_types[resource["type"]], resource.get("name", ""), pattern, operation))
    return found


def _documented(section: str, **names: str) -> list[tuple[Acl, str]]:
    """The rows of one principal's ACL table in docs/security.md, with `<name>` placeholders filled in."""
    text = (ROOT / "docs" / "security.md").read_text()
    block = text.split(f"### {section}\n", 1)[1].split("\n#", 1)[0]
    rows = []
    for line in block.splitlines():
        cells = [html.unescape(c.strip()) for c in line.strip("|").split("|")]
        if len(cells) != 4 or cells[0] not in ("Topic", "Group", "TransactionalId", "Cluster"):
            continue
        resource, name, operation, why = cells
        pattern = "PREFIXED" if name.endswith(" (prefixed)") else "LITERAL"
        name = re.sub(r"<([^>]+)>", lambda m: names[m.group(1).replace(" ", "_")], name.removesuffix(" (prefixed)"))
        rows.append(((resource, name, pattern, operation), why))
    assert rows, f"no ACL rows under ### {section}"
    return rows


def test_users_hold_exactly_the_documented_acls(tmp_path: Path) -> None:
    """docs/security.md's tables, the grants the secured-broker tests give, and the KafkaUsers agree."""
    users = _users(strimzi_manifests(tmp_path, "--advisor", "veto", "--inventory-advisor", "cpu"))
    advisor_rows = _documented("Advisor", name="NAME")
    expected = {
        "placement": {acl for acl, _ in _documented("Processor")},
        "placement-submitter": {acl for acl, _ in _documented("Submitter")},
        "placement-deployer": {acl for acl, _ in _documented("Deployer", its_group="placement-deployer")},
        "advisor-veto": {
            (t, n.replace("NAME", "veto"), p, o) for (t, n, p, o), why in advisor_rows if "cpu_priority" not in why
        },
        "advisor-cpu": {(t, n.replace("NAME", "cpu"), p, o) for (t, n, p, o), _ in advisor_rows},
    }
    assert users == expected
    assert not any(operation == "Create" for acls in users.values() for *_, operation in acls)  # KafkaTopics create


@pytest.mark.parametrize("api_version", [v.rpartition("/")[2] for v in API_VERSIONS])
@pytest.mark.parametrize("authentication", ["scram-sha-512", "tls"])
def test_resources_follow_strimzi_schemas(
    tmp_path: Path, node_check: NodeCheck, api_version: str, authentication: str
) -> None:
    kinds = strimzi_manifests(
        tmp_path, "--api-version", api_version, "--authentication", authentication, "--advisor", "veto", "-n", "kafka"
    )
    resources = kinds["KafkaTopic"] + kinds["KafkaUser"]
    answer = node_check(resources=resources)
    assert [r["errors"] for r in answer["resources"]] == [[] for _ in resources]
    assert {r["model"].rsplit("/", 3)[-2] for r in answer["resources"]} == {api_version}  # checked as that version
    assert {r["metadata"]["namespace"] for r in resources} == {"kafka"}


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("KafkaTopic", ("spec", "partitions"), "three"),
        ("KafkaTopic", ("spec", "replicas"), 0),
        ("KafkaUser", ("spec", "authentication", "type"), "scram-sha-256"),
        ("KafkaUser", ("spec", "authorization", "acls", 0, "operations"), ["Read", "Fly"]),
        ("KafkaUser", ("spec", "authorization", "acls", 0, "resource", "patternType"), "prefixed"),
    ],
    ids=["partitions-not-a-number", "no-replicas", "unknown-authentication", "unknown-operation", "bad-pattern"],
)
def test_the_schema_check_catches_broken_resources(
    tmp_path: Path, node_check: NodeCheck, kind: str, path: tuple[Any, ...], value: object
) -> None:
    """The check is not vacuous: each of these edits makes Strimzi refuse the resource."""
    resource: Any = copy.deepcopy(strimzi_manifests(tmp_path)[kind][0])
    target = resource
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    (answer,) = node_check(resources=[resource])["resources"]
    assert answer["errors"]


def test_an_unknown_api_version_is_an_error_not_a_pass(tmp_path: Path, node_check: NodeCheck) -> None:
    topic = strimzi_manifests(tmp_path)["KafkaTopic"][0] | {"apiVersion": "kafka.strimzi.io/v9"}
    (answer,) = node_check(resources=[topic])["resources"]
    assert answer["errors"] == ["no schema for kafka.strimzi.io/v9 KafkaTopic"]


def test_topics_have_the_shape_the_processor_creates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Names follow PLACEMENT_TOPICS__*, co-partitioned topics get the task partitions, the others one; configs as
    topics/names.py says. A name that is no Kubernetes object name keeps its own in spec.topicName."""
    monkeypatch.setenv("PLACEMENT_TOPICS__DECISIONS", "Team_Decisions")
    monkeypatch.setenv("PLACEMENT_KAFKA__TASK_PARTITIONS", "12")
    topics = strimzi_manifests(tmp_path, "--replicas", "3")["KafkaTopic"]
    names = TopicNames(decisions="Team_Decisions")
    by_role = {TopicRole(t["metadata"]["labels"]["placement-stream/topic-role"]): t for t in topics}
    assert set(by_role) == set(TopicRole)
    for role, spec in TOPIC_SPECS.items():
        topic = by_role[role]
        assert topic["spec"].get("topicName", topic["metadata"]["name"]) == names.name(role)
        assert topic["spec"]["partitions"] == (12 if spec.co_partitioned else 1)
        assert topic["spec"]["replicas"] == 3
        assert topic["spec"]["config"]["cleanup.policy"] == spec.cleanup_policy
        assert int(topic["spec"]["config"].get("max.message.bytes", 0)) == (spec.max_message_bytes or 0)
        assert topic["metadata"]["labels"]["strimzi.io/cluster"] == "my-cluster"
    decisions = by_role[TopicRole.DECISIONS]["metadata"]["name"]
    assert re.fullmatch(r"team-decisions-[0-9a-f]{10}", decisions)


def test_group_and_transactional_ids_follow_the_group_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLACEMENT_KAFKA__GROUP_ID", "placement-eu")
    users = _users(strimzi_manifests(tmp_path))
    assert ("Group", "placement-eu", "LITERAL", "Read") in users["placement-eu"]
    assert ("TransactionalId", "placement-eu-tasks-", "PREFIXED", "Write") in users["placement-eu"]
    assert ("Group", "placement-eu-deployer", "LITERAL", "Read") in users["placement-eu-deployer"]


def test_stdout_holds_every_resource_and_bad_counts_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "strimzi"]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in documents] == ["KafkaTopic"] * len(TopicRole) + ["KafkaUser"] * 3
    assert main(["manifests", "strimzi", "--partitions", "0"]) == 2
    assert "--partitions must be at least 1" in capsys.readouterr().err


def test_the_committed_manifests_are_what_the_documented_command_prints(tmp_path: Path) -> None:
    """deploy/strimzi/README.md names the command that made the files beside it; running it again gives them."""
    readme = (STRIMZI_DIR / "README.md").read_text()
    (command,) = re.findall(r"^placement-stream (manifests strimzi --out deploy/strimzi\b.*)$", readme, re.MULTILINE)
    arguments = [tmp_path.as_posix() if a == "deploy/strimzi" else a for a in shlex.split(command)]
    assert main(arguments) == 0
    for made in sorted(tmp_path.glob("*.yaml")):
        assert (STRIMZI_DIR / made.name).read_text() == made.read_text(), f"deploy/strimzi/{made.name} is stale"
