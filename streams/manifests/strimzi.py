"""Strimzi `KafkaTopic` and `KafkaUser` resources: the service's topics as it would create them, and each principal
with exactly the ACLs the start check and the secured-broker tests use (`streams/kafka/access.py`).

With these applied, an administrator owns the topics and the processor needs no Create ACL (docs/security.md).
The grant tables are not restated here: every ACL comes from the same functions the ACL tests grant from.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from streams.kafka.access import Grant, advisor_grants, deployer_grants, processor_grants, submitter_grants
from streams.kafka.admin import new_topics
from streams.manifests import API_VERSIONS
from streams.settings import Settings

__all__ = ["ClientUsers", "Principal", "StrimziOptions", "principals", "topics", "users"]

PART_OF = {"app.kubernetes.io/part-of": "placement-stream"}

_RESOURCE_TYPES = {"Topic": "topic", "Group": "group", "TransactionalId": "transactionalId", "Cluster": "cluster"}
_PATTERNS = {"LITERAL": "literal", "PREFIXED": "prefix"}
_OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_OBJECT_NAME_MAX = 253


@dataclass(frozen=True, slots=True)
class ClientUsers:
    """The users of the processor's clients beyond the service: advisors and the deployer."""

    advisors: tuple[str, ...] = ()
    """Advisor names (as in the rules' `spec.advisors`); each gets a user `advisor-<name>` in group `advisor-<name>`."""
    inventory_advisors: tuple[str, ...] = ()
    """Advisors that also follow cluster status, as the example `cpu_priority` does."""
    deployer_group: str | None = None
    """The deployer's consumer group; default `<group>-deployer`."""


@dataclass(frozen=True, slots=True)
class StrimziOptions:
    """What the settings do not say: which Strimzi `Kafka` cluster, where, and how users authenticate."""

    cluster: str = "my-cluster"
    """The `Kafka` resource's name: the `strimzi.io/cluster` label the topic and user operators select by."""
    namespace: str | None = None
    api_version: str = API_VERSIONS[0]
    authentication: Literal["scram-sha-512", "tls", "tls-external"] = "scram-sha-512"
    partitions: int | None = None
    """Partitions of the co-partitioned topics; default `PLACEMENT_KAFKA__TASK_PARTITIONS`."""
    replicas: int | None = None
    """Replicas of every topic; default `PLACEMENT_KAFKA__REPLICATION_FACTOR`."""
    clients: ClientUsers = ClientUsers()


@dataclass(frozen=True, slots=True)
class Principal:
    """One Kafka user and its ACLs: the `KafkaUser`'s name is the principal (`User:<name>`, or `User:CN=<name>`
    with TLS client certificates, which Strimzi's ACLs follow)."""

    name: str
    role: str
    grants: tuple[Grant, ...]


def principals(settings: Settings, options: StrimziOptions) -> list[Principal]:
    """Processor, submitter, deployer and the named advisors, with their documented grants. The processor gets
    no Create: the `KafkaTopic`s create its topics."""
    group = settings.kafka.group_id
    deployer_group = options.clients.deployer_group or f"{group}-deployer"
    found = [
        Principal(group, "processor", tuple(processor_grants(settings))),
        Principal(f"{group}-submitter", "submitter", tuple(submitter_grants(settings))),
        Principal(f"{group}-deployer", "deployer", tuple(deployer_grants(settings, deployer_group))),
    ]
    for name in dict.fromkeys((*options.clients.advisors, *options.clients.inventory_advisors)):
        follows = name in options.clients.inventory_advisors
        grants = advisor_grants(settings, f"advisor-{name}", reads_cluster_status=follows)
        found.append(Principal(f"advisor-{name}", "advisor", tuple(grants)))
    return found


def topics(settings: Settings, options: StrimziOptions) -> list[dict[str, Any]]:
    """One `KafkaTopic` per topic, with the partitions and configs the processor creates it with (`new_topics`)."""
    kafka = settings.kafka.model_copy(
        update={
            "task_partitions": options.partitions or settings.kafka.task_partitions,
            "replication_factor": options.replicas or settings.kafka.replication_factor,
        }
    )
    roles = settings.topics.roles()
    resources = []
    for topic in new_topics(settings.model_copy(update={"kafka": kafka})):
        spec: dict[str, Any] = {"partitions": topic.num_partitions, "replicas": topic.replication_factor}
        object_name = object_name_of(topic.name)
        if object_name != topic.name:
            spec = {"topicName": topic.name, **spec}
        labels = {"placement-stream/topic-role": roles[topic.name].value}
        resources.append(_resource(options, "KafkaTopic", object_name, labels, {**spec, "config": topic.topic_configs}))
    return resources


def users(settings: Settings, options: StrimziOptions) -> list[dict[str, Any]]:
    """One `KafkaUser` per principal, its `simple` authorization listing each resource once."""
    resources = []
    for principal in principals(settings, options):
        spec = {
            "authentication": {"type": options.authentication},
            "authorization": {"type": "simple", "acls": acl_rules(principal.grants)},
        }
        labels = {"placement-stream/principal": principal.role}
        resources.append(_resource(options, "KafkaUser", principal.name, labels, spec))
    return resources


def acl_rules(grants: Iterable[Grant]) -> list[dict[str, Any]]:
    """Strimzi ACL rules: the grants on one resource become one rule with their operations, in table order."""
    rules: dict[tuple[str, str, str], list[str]] = {}
    for grant in grants:
        rules.setdefault((grant.resource_type, grant.name, grant.pattern), []).append(grant.operation)
    found = []
    for (resource_type, name, pattern), operations in rules.items():
        resource: dict[str, str] = {"type": _RESOURCE_TYPES[resource_type]}
        if resource_type != "Cluster":
            resource |= {"name": name, "patternType": _PATTERNS[pattern]}
        found.append({"resource": resource, "operations": operations, "host": "*"})
    return found


def object_name_of(topic: str) -> str:
    """A Kubernetes object name for a topic: the topic's own name when it is one (the default names are), else a
    lower-cased name of letters, digits and dashes with a hash of the original, so two topics never share one."""
    if len(topic) <= _OBJECT_NAME_MAX and _OBJECT_NAME.fullmatch(topic):
        return topic
    cleaned = re.sub(r"[^a-z0-9]+", "-", topic.lower()).strip("-")[:200].strip("-") or "topic"
    return f"{cleaned}-{hashlib.sha256(topic.encode()).hexdigest()[:10]}"


def _resource(
    options: StrimziOptions, kind: str, name: str, labels: dict[str, str], spec: dict[str, Any]
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if options.namespace:
        metadata["namespace"] = options.namespace
    metadata["labels"] = {"strimzi.io/cluster": options.cluster, **PART_OF, **labels}
    return {"apiVersion": options.api_version, "kind": kind, "metadata": metadata, "spec": spec}
