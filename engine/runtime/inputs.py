"""Reading input records: a global-table record (cluster status or taints) applied to the inventory, and a
subject record checked against the engine its key names. Both raise on what cannot be read or routed; the
runtime dead-letters the record."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from engine.core import SubjectEngine
from engine.errors import MisplacedRecordError, RoutingError
from engine.inventory import Inventory, InventoryChange
from engine.runtime.records import InputRecord
from engine.runtime.routing import inventory_key, inventory_record_key, named_by_inventory_key, shown
from topics.codec import DecodedEvent, decode_event, loads
from topics.interning import Interning

__all__ = ["FIX_PARTITIONER", "apply_inventory_record", "check_partition", "producer_of", "read_subject_record"]

FIX_PARTITIONER = (
    "its producer does not partition by murmur2 of the key: set partitioner=murmur2_random on librdkafka clients"
    " (confluent-kafka, kcat), a murmur2 partitioner on others (see the README on producing)"
)
"""What a misplaced record's dead letter tells the operator to change."""


def apply_inventory_record(inventory: Inventory, record: InputRecord, now: datetime) -> list[InventoryChange]:
    """Apply the record at its event time (else its record time, else `now`), but never later than `now`: a
    producer's clock ahead of the processor's would date an undated taint in the future and keep its toleration
    from expiring (P7); upstream dates it by the hub's clock. Replay's `now` is the latest event time, so there
    it is always the event time. Returns what changed.

    Raises:
        PlacementStreamError: the record cannot be read, or its key is not the object it carries.
    """
    at = min(record.timestamp or now, now)
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
    at = min(event.time or at, now)
    if event.kind.name.endswith(".deleted"):
        return inventory.delete(named, at)
    return inventory.apply(event.data, at)  # type: ignore[arg-type]


def read_subject_record(
    record: InputRecord,
    engine_for: Callable[[str], SubjectEngine[Any]],
    task_of: Callable[[str], int] | None = None,
    interning: Interning | None = None,
) -> tuple[str, DecodedEvent | None]:
    """The subject key and event of a subject record (None: a tombstone); with `task_of`, only from the partition
    that owns the key (`check_partition`); decoded with the runtime's pools (`interning`).

    Raises:
        PlacementStreamError: no key, an unknown subject kind, a record on another task's partition, an event its
            engine does not take, or a key that is not the subject the event names.
    """
    if record.key is None:
        raise RoutingError("subject records need the subject key as record key")
    key = record.key.decode()
    engine = engine_for(key)
    if task_of is not None:
        check_partition(record, key, task_of(key))
    if record.value is None:
        return key, None
    event = decode_event(record.value, record.topic, interning)
    if event.kind.name not in engine.EVENTS:
        raise RoutingError(f"{event.envelope.type} cannot be sent for subject {key}")
    named = engine.subject_of(event)
    if named is not None and named != key:
        raise RoutingError(f"record key {shown(key)} does not match the subject the event names ({shown(named)})")
    return key, event


def check_partition(record: InputRecord, key: str, expected: int) -> None:
    """Refuse a subject record that arrived off its key's partition (P3): the task reading it does not own the
    subject, and applying it would decide the subject in two tasks.

    Raises:
        MisplacedRecordError: the arrival partition is not `expected`; the message names both and the fix.
    """
    if record.partition == expected:
        return
    topic = record.topic_name or record.topic.value
    raise MisplacedRecordError(
        f"record key {shown(key)} belongs on partition {expected} of {topic} (murmur2 of the key, as Kafka's Java"
        f" client partitions) but arrived on partition {record.partition}: {FIX_PARTITIONER}",
        expected=expected,
        arrived=record.partition,
    )


_PRODUCER_CHARS = 200
"""A producer's name as a log line quotes it: a hostile `source` cannot flood the log."""


def producer_of(value: bytes | None) -> str:
    """The CloudEvents `source` of a record value, cut short; empty for a tombstone or a value without one. It is
    the only name of its producer a record carries to a consumer."""
    if value is None:
        return ""
    try:
        envelope = loads(value)
    except Exception:  # an unreadable value names no producer
        return ""
    source = envelope.get("source") if isinstance(envelope, dict) else None
    return source[:_PRODUCER_CHARS] if isinstance(source, str) else ""
