"""Per-partition runtime state: what the active configuration does not say (dynamic and draining queues,
active applications), plus a snapshot of the configured queues that hold something, so a reload can tell
which of them the new file dropped (spec N3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from engine.errors import InvalidStateError, QueueConfigError
from engine.queue.acl import NO_ACCESS, Acl, parse_acl
from engine.queue.persistent import PersistentMap

__all__ = [
    "ActiveApplication",
    "PartitionState",
    "QueueRecord",
    "dump_application",
    "dump_partition_meta",
    "dump_partition_state",
    "load_application",
    "load_partition_meta",
    "load_partition_state",
]

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


def dump_application(app: ActiveApplication) -> dict[str, Any]:
    """One application's changelog entry."""
    return {"queue": app.queue, "rule": app.rule, "created": app.created, "fingerprint": app.fingerprint}


def dump_partition_meta(state: PartitionState) -> dict[str, Any]:
    """Everything but the applications (the queue records), keys sorted so equal states dump equally."""
    return {
        "queues": {path: _dump_record(state.queues[path]) for path in sorted(state.queues)},
        "configuredInUse": {
            path: _dump_record(state.configured_in_use[path]) for path in sorted(state.configured_in_use)
        },
    }


def dump_partition_state(state: PartitionState) -> dict[str, Any]:
    """The whole state as JSON, keys sorted so equal states dump equally."""
    meta = dump_partition_meta(state)
    applications = {app_id: dump_application(app) for app_id, app in sorted(state.applications.items())}
    return {"queues": meta["queues"], "applications": applications, "configuredInUse": meta["configuredInUse"]}


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


def load_application(raw: Any, app_id: str) -> ActiveApplication:
    """Rebuild `dump_application` output.

    Raises:
        InvalidStateError: the value does not have the dumped shape.
    """
    item = _expect(raw, dict, f"applications[{app_id}]")
    return ActiveApplication(
        queue=_expect(item.get("queue"), str, "queue"),
        rule=_expect(item.get("rule"), str, "rule"),
        created=_expect(item.get("created"), bool, "created"),
        fingerprint=_expect(item.get("fingerprint"), str, "fingerprint"),
    )


def load_partition_meta(raw: Any, state: PartitionState) -> PartitionState:
    """`state` with the queue records of `dump_partition_meta` output (its applications stay).

    Raises:
        InvalidStateError: the value does not have the dumped shape.
    """
    _expect(raw, Mapping, "state")
    return PartitionState(
        queues=MappingProxyType(_load_records(raw.get("queues", {}), "queues")),
        applications=state.applications,
        configured_in_use=MappingProxyType(_load_records(raw.get("configuredInUse", {}), "configuredInUse")),
    )


def load_partition_state(raw: Mapping[str, Any]) -> PartitionState:
    """Rebuild `dump_partition_state` output.

    Raises:
        InvalidStateError: the value does not have the dumped shape.
    """
    state = load_partition_meta(raw, PartitionState())
    applications = {
        _expect(app_id, str, "application id"): load_application(item, app_id)
        for app_id, item in _expect(raw.get("applications", {}), dict, "applications").items()
    }
    return replace(state, applications=PersistentMap(applications))
