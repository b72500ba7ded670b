"""One batch's outputs and bookkeeping, with the deterministic event ids its outputs carry."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from engine.runtime.records import InputRecord, OutputRecord

__all__ = ["Batch"]

_ID_NAMESPACE = uuid.UUID("6f1c0f4e-3b5a-4f7e-9d62-2b8f4c1a7e55")


class Batch:
    """Outputs and bookkeeping of one batch. `seed` names the batch's inputs, so the same inputs always get the
    same event ids (replay is byte-for-byte repeatable, and a deployer can dedupe by id)."""

    def __init__(self, seed: str) -> None:
        self.seed = hashlib.sha256(seed.encode()).hexdigest()
        self._id_prefix = hashlib.sha1(_ID_NAMESPACE.bytes + f"{self.seed}/".encode(), usedforsecurity=False)
        """uuid5's hash over the namespace and the name's batch part, continued per event: a re-decision of
        thousands of placements numbers thousands of events."""
        self.outputs: list[OutputRecord] = []
        self.dirty: set[str] = set()
        self.touched: set[str] = set()
        self.before: dict[str, Any] = {}
        """Subject key -> its state when the batch first touched it: what a failed decision reverts to."""
        self.causes: dict[str, list[InputRecord]] = {}
        """Subject key -> the records of this batch applied to it: what a failed decision dead-letters."""
        self.events = 0

    def next_id(self) -> str:
        """uuid5(namespace, "<seed>/<n>"), numbered by event, not by output record, so where changelog entries
        fall does not move the ids."""
        digest = self._id_prefix.copy()
        digest.update(str(self.events).encode())
        self.events += 1
        return str(uuid.UUID(bytes=digest.digest()[:16], version=5))

    def hand_over(self) -> list[OutputRecord]:
        """The outputs added since the last hand-over; the batch keeps none of them."""
        new, self.outputs = self.outputs, []
        return new
