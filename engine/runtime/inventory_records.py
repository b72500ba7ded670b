"""Applying one global-table record (cluster status or taints) to the inventory."""

from __future__ import annotations

from datetime import datetime

from engine.errors import RoutingError
from engine.inventory import Inventory, InventoryChange, ObjectKey
from engine.inventory.store import TAINTS_KIND
from engine.runtime.records import InputRecord
from engine.runtime.routing import inventory_key, shown
from topics.codec import decode_event
from topics.names import TopicRole

__all__ = ["apply_inventory_record"]


def apply_inventory_record(inventory: Inventory, record: InputRecord, now: datetime) -> list[InventoryChange]:
    """Apply the record at its event time (else its record time, else `now`); returns what changed.

    The taints table is keyed by the cluster name alone, so its tombstones name no object kind.

    Raises:
        PlacementStreamError: the record cannot be read, or its key is not the object it carries.
    """
    at = record.timestamp or now
    if record.key is None:
        raise RoutingError("inventory records need a key")
    key_text = record.key.decode()
    if record.value is None:
        if record.topic is TopicRole.TAINTS:
            return inventory.delete(ObjectKey(TAINTS_KIND, "", key_text), at)
        return inventory.delete(ObjectKey.parse(key_text), at)
    event = decode_event(record.value, record.topic)
    named = inventory_key(event)
    expected = named.name if record.topic is TopicRole.TAINTS else named.record_key()
    if key_text != expected:
        raise RoutingError(f"record key {shown(key_text)} does not match the object it carries ({shown(expected)})")
    at = event.time or at
    if event.kind.name.endswith(".deleted"):
        return inventory.delete(named, at)
    return inventory.apply(event.data, at)  # type: ignore[arg-type]
