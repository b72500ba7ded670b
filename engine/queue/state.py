"""Per-partition runtime state: what the active configuration does not say (dynamic and draining queues,
active applications), plus a snapshot of the configured queues that hold something, so a reload can tell
which of them the new file dropped (spec N3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from engine.errors import InvalidStateError, QueueConfigError
from engine.queue.acl import NO_ACCESS, Acl, parse_acl
from engine.queue.persistent import PersistentMap

__all__ = ["ActiveApplication", "PartitionState", "QueueRecord", "dump_partition_state", "load_partition_state"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class QueueRecord:
    """A queue's placement-relevant properties, independent of where they came from."""

    parent: bool
    submit_acl: Acl = NO_ACCESS
    admin_acl: Acl = NO_ACCESS
    draining: bool = False
    """Formerly configured and missing from the active file (N3); False for dynamic queues."""


@dataclass(frozen=True, slots=True)
class ActiveApplication:
    """An accepted application and the result it got, so a re-delivered submission re-emits it."""

    queue: str
    rule: str
    created: bool
    fingerprint: str


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Immutable; every change builds a new object with new mappings."""

    queues: Mapping[str, QueueRecord] = field(default_factory=lambda: _EMPTY)
    """Dynamic and draining queues by lower-case path."""
    applications: Mapping[str, ActiveApplication] = field(default_factory=lambda: _EMPTY)
    configured_in_use: Mapping[str, QueueRecord] = field(default_factory=lambda: _EMPTY)
    """Configured queues (as last configured) that hold applications or queues of this state."""


def _dump_record(record: QueueRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"parent": record.parent}
    if record.submit_acl.raw:
        out["submitAcl"] = record.submit_acl.raw
    if record.admin_acl.raw:
        out["adminAcl"] = record.admin_acl.raw
    if record.draining:
        out["draining"] = True
    return out


def dump_partition_state(state: PartitionState) -> dict[str, Any]:
    """JSON-ready form, keys sorted so equal states dump equally."""
    return {
        "queues": {path: _dump_record(state.queues[path]) for path in sorted(state.queues)},
        "applications": {
            app_id: {"queue": app.queue, "rule": app.rule, "created": app.created, "fingerprint": app.fingerprint}
            for app_id, app in sorted(state.applications.items())
        },
        "configuredInUse": {
            path: _dump_record(state.configured_in_use[path]) for path in sorted(state.configured_in_use)
        },
    }


def _expect(value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind):
        raise InvalidStateError(f"{what} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def _load_records(raw: Any, what: str) -> dict[str, QueueRecord]:
    records: dict[str, QueueRecord] = {}
    for path, raw_item in _expect(raw, dict, what).items():
        item = _expect(raw_item, dict, f"{what}[{path}]")
        try:
            records[_expect(path, str, what)] = QueueRecord(
                parent=_expect(item.get("parent"), bool, f"{what}[{path}].parent"),
                submit_acl=parse_acl(_expect(item.get("submitAcl", ""), str, "submitAcl")),
                admin_acl=parse_acl(_expect(item.get("adminAcl", ""), str, "adminAcl")),
                draining=_expect(item.get("draining", False), bool, f"{what}[{path}].draining"),
            )
        except QueueConfigError as exc:
            raise InvalidStateError(f"{what}[{path}]: {exc}") from exc
    return records


def load_partition_state(raw: Mapping[str, Any]) -> PartitionState:
    """Rebuild `dump_partition_state` output.

    Raises:
        InvalidStateError: the value does not have the dumped shape.
    """
    _expect(raw, Mapping, "state")
    applications: dict[str, ActiveApplication] = {}
    for app_id, raw_item in _expect(raw.get("applications", {}), dict, "applications").items():
        item = _expect(raw_item, dict, f"applications[{app_id}]")
        applications[_expect(app_id, str, "application id")] = ActiveApplication(
            queue=_expect(item.get("queue"), str, "queue"),
            rule=_expect(item.get("rule"), str, "rule"),
            created=_expect(item.get("created"), bool, "created"),
            fingerprint=_expect(item.get("fingerprint"), str, "fingerprint"),
        )
    return PartitionState(
        queues=MappingProxyType(_load_records(raw.get("queues", {}), "queues")),
        applications=PersistentMap(applications),
        configured_in_use=MappingProxyType(_load_records(raw.get("configuredInUse", {}), "configuredInUse")),
    )
