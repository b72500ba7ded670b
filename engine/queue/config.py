"""The queue configuration: load, validate and build every partition's rule set and queue tree.

`load_queue_config` is all-or-nothing: it either returns a complete immutable `QueueConfig` or raises
`QueueConfigError`, so a broken reload can never half-apply.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from engine.errors import QueueConfigError
from engine.queue.acl import Acl, parse_acl
from engine.queue.configmap import unwrap_configmap
from engine.queue.filters import build_filter
from engine.queue.names import ROOT, normalize_partition, parent_path
from engine.queue.rules import RULE_FACTORIES, PlacementRule, RecoveryRule, RuleOptions, RuleSpec
from engine.queue.state import QueueRecord
from engine.queue.validate import QueueSpec
from engine.queue.validator import check_child_template, validate_partition
from engine.queue.yamlschema import read_config_document

__all__ = ["ConfiguredQueue", "PartitionConfig", "QueueConfig", "build_rule", "load_queue_config"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConfiguredQueue:
    """A queue defined in the file, by lower-case path; `record` holds its properties as the state does."""

    path: str
    record: QueueRecord

    @property
    def parent(self) -> bool:
        """Whether the queue is a parent."""
        return self.record.parent

    @property
    def submit_acl(self) -> Acl:
        """The queue's own submit ACL."""
        return self.record.submit_acl

    @property
    def admin_acl(self) -> Acl:
        """The queue's own admin ACL."""
        return self.record.admin_acl


@dataclass(frozen=True, slots=True)
class PartitionConfig:
    """One partition: its rule chain (ending with recovery) and its configured queues."""

    name: str
    rules: tuple[PlacementRule, ...]
    queues: Mapping[str, ConfiguredQueue]
    children: Mapping[str, frozenset[str]]
    """Configured child paths by parent path."""

    def describe_rules(self) -> str:
        """The effective rule list for the activation log line."""
        return "; ".join(f"#{index} {rule.describe()}" for index, rule in enumerate(self.rules))


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """A complete, valid configuration file."""

    path: str
    sha256: str
    partitions: Mapping[str, PartitionConfig]
    """By canonical (lower-case) partition name."""
    source: str = ""
    """Where in the file the configuration was read: empty for a plain file, else the ConfigMap and key."""

    def partition(self, name: str) -> PartitionConfig | None:
        """A partition by name; an empty name and any case of `default` mean `default`."""
        return self.partitions.get(normalize_partition(name))


def build_rule(spec: RuleSpec) -> PlacementRule:
    """Build one configured rule with its parents.

    Raises:
        QueueConfigError: an unknown or internal rule name, or bad rule parameters.
    """
    name = spec.name.lower()
    if name == RecoveryRule.NAME:
        raise QueueConfigError("recovery rule cannot be part of the config, failing placement rule config")
    factory = RULE_FACTORIES.get(name)
    if factory is None:
        raise QueueConfigError(f"unknown rule name specified {spec.name}, failing placement rule config")
    options = RuleOptions(
        create=spec.create,
        filter=build_filter(spec.filter_type, spec.filter_users, spec.filter_groups),
        parent=None if spec.parent is None else build_rule(spec.parent),
    )
    return factory(spec, options)


def _collect_queues(spec: QueueSpec, path: str, into: dict[str, ConfiguredQueue]) -> None:
    """Create the configured queues, parents before children, as upstream does once the file is validated."""
    record = QueueRecord(spec.is_parent, parse_acl(spec.submit_acl), parse_acl(spec.admin_acl))
    check_child_template(spec)
    into[path] = ConfiguredQueue(path, record)
    for child in spec.children:
        _collect_queues(child, f"{path}.{child.name.lower()}", into)


def _build_partition(name: str, raw: Mapping[str, Any], root: QueueSpec, rule_specs: list[RuleSpec]) -> PartitionConfig:
    if root.name != ROOT:
        # the validator accepts a top-level root in any case, but only `root` itself can be created
        raise QueueConfigError("partition cannot be created without root queue")
    queues: dict[str, ConfiguredQueue] = {}
    _collect_queues(root, ROOT, queues)
    configured = [build_rule(spec) for spec in rule_specs] or [build_rule(RuleSpec("provided"))]
    children: dict[str, set[str]] = {}
    for path in queues:
        parent = parent_path(path)
        if parent is not None:
            children.setdefault(parent, set()).add(path)
    resolver = (raw.get("usergroupresolver") or {}).get("type", "")
    if resolver:
        _LOG.warning(
            "partition %s: user group resolver %r is not supported, groups come from submissions", name, resolver
        )
    return PartitionConfig(
        name=name,
        rules=(*configured, RecoveryRule()),
        queues=MappingProxyType(queues),
        children=MappingProxyType({key: frozenset(value) for key, value in children.items()}),
    )


def _read_partitions(text: str) -> dict[str, PartitionConfig]:
    """Validate every partition in file order, then build them all: nothing is built from a refused file."""
    document = read_config_document(text)
    raw_partitions = [item or {} for item in document.get("partitions") or ()]
    if not raw_partitions:
        raise QueueConfigError("no partitions defined")
    seen: set[str] = set()
    validated: list[tuple[str, Mapping[str, Any], QueueSpec, list[RuleSpec]]] = []
    for raw in raw_partitions:
        written: str = raw.get("name", "")
        name = normalize_partition(written)
        if name in seen:
            shown = "default" if name == "default" else written
            raise QueueConfigError(f"duplicate partition name found with name {shown}")
        seen.add(name)
        root, rule_specs = validate_partition(raw)
        validated.append((name, raw, root, rule_specs))
    return {name: _build_partition(name, raw, root, specs) for name, raw, root, specs in validated}


def load_queue_config(text: str, path: str) -> QueueConfig:
    """Parse, validate and build a whole configuration file, or the `queues.yaml` entry of a ConfigMap.

    Args:
        text: the file content.
        path: the file name, kept for events and logs.

    Raises:
        QueueConfigError: with the error only; callers prefix `invalid queue configuration <file>: `. Errors
            inside a ConfigMap entry start with the ConfigMap and key, as their line numbers count from there.
    """
    source = unwrap_configmap(text)
    try:
        partitions = _read_partitions(source.text)
    except QueueConfigError as exc:
        if source.where:
            raise QueueConfigError(f"{source.where}: {exc}") from exc
        raise
    for partition in partitions.values():
        _LOG.info("queue configuration %s partition %s rules: %s", path, partition.name, partition.describe_rules())
    return QueueConfig(
        path=path,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        partitions=MappingProxyType(partitions),
        source=source.where,
    )
