"""Applying one global-table record (cluster status or taints) to the inventory."""

from __future__ import annotations

from datetime import datetime

from engine.errors import RoutingError
from engine.inventory import Inventory, InventoryChange
from engine.runtime.records import InputRecord
from engine.runtime.routing import inventory_key, inventory_record_key, named_by_inventory_key, shown
from topics.codec import decode_event

__all__ = ["apply_inventory_record"]


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
