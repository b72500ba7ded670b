"""The one registry of subject engines, in the order the runtime consults them."""

from __future__ import annotations

from typing import Any

from engine.cluster import ClusterPlacementEngine
from engine.core import SubjectEngine
from engine.hybrid import HybridPlacementEngine
from engine.queue import QueueEngine

__all__ = ["SUBJECT_ENGINES", "build_engines"]

SUBJECT_ENGINES: tuple[type[SubjectEngine[Any]], ...] = (QueueEngine, ClusterPlacementEngine, HybridPlacementEngine)


def build_engines() -> list[SubjectEngine[Any]]:
    """Fresh engine instances (each keeps its own indexes)."""
    return [engine() for engine in SUBJECT_ENGINES]
