"""Reading input records: a global-table record (cluster status or taints) applied to the inventory, and a
subject record checked against the engine its key names. Both raise on what cannot be read or routed; the
runtime dead-letters the record."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from engine.core import SubjectEngine
from engine.errors import RoutingError
from engine.inventory import Inventory, InventoryChange
from engine.runtime.records import InputRecord
from engine.runtime.routing import inventory_key, inventory_record_key, named_by_inventory_key, shown
from topics.codec import DecodedEvent, decode_event

__all__ = ["apply_inventory_record", "read_subject_record"]


def apply_inventory_record(inventory: Inventory, record: InputRecord, now: datetime) -> list[InventoryChange]:
    """Apply the record at its event time (else its record time, else `now`); returns what changed.

    Raises:
        PlacementStreamError: the record cannot be read, or its key is not the object it carries.
    """
    at = record.timestamp or now
    if record.key is None:
        raise RoutingError("inventory records need a key")
    key_text = record.key.decode()
    if record.value is None:
        return inventory.delete(named_by_inventory_key(record.topic, key_text), at)
    event = decode_event(record.value, record.topic)
    named = inventory_key(event)
    expected = inventory_record_key(record.topic, named)
    if key_text != expected:
        raise RoutingError(f"record key {shown(key_text)} does not match the object it carries ({shown(expected)})")
    at = event.time or at
    if event.kind.name.endswith(".deleted"):
        return inventory.delete(named, at)
    return inventory.apply(event.data, at)  # type: ignore[arg-type]


def read_subject_record(
    record: InputRecord, engine_for: Callable[[str], SubjectEngine[Any]]
) -> tuple[str, DecodedEvent | None]:
    """The subject key and event of a subject record (None: a tombstone).

    Raises:
        PlacementStreamError: no key, an unknown subject kind, an event its engine does not take, or a key that
            is not the subject the event names.
    """
    if record.key is None:
        raise RoutingError("subject records need the subject key as record key")
    key = record.key.decode()
    engine = engine_for(key)
    if record.value is None:
        return key, None
    event = decode_event(record.value, record.topic)
    if event.kind.name not in engine.EVENTS:
        raise RoutingError(f"{event.envelope.type} cannot be sent for subject {key}")
    named = engine.subject_of(event)
    if named is not None and named != key:
        raise RoutingError(f"record key {shown(key)} does not match the subject the event names ({shown(named)})")
    return key, event
